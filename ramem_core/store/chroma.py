"""Chroma adapter: the only module of RaMem that imports ``chromadb``.

One collection per namespace (tenant). Episodic fields are metadata (see :mod:`.codec`);
vectors always come from RaMem's embedder, never from Chroma's default embedding function
(which downloads a model at first use and fails offline).
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from ramem_core.errors import InvalidInputError, StoreError
from ramem_core.protocols import Embedder
from ramem_core.store.codec import from_record, to_metadata
from ramem_core.store.files import SnapshotFiles
from ramem_core.types import MemoryUnit

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

_NAMESPACE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,120}[A-Za-z0-9])?$")
SNAPSHOT_DIRECTORY = "ramem-snapshots"
"""Sub-directory of a memory directory holding its snapshot files (:mod:`.files`)."""
_BATCH = 2000  # ids per read or delete: below Chroma's max batch size on every backend
Where = Mapping[str, Any]
Version = frozenset[tuple[str, int]]
"""A namespace's write version: (writer, sequence number) of every store that wrote to it."""


def _settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


def _embedding_function(embedder: Embedder) -> Any:
    """Wrap RaMem's embedder in Chroma's EmbeddingFunction interface.

    Chroma calls ``build_from_config`` even while creating a collection; a config naming
    another model than the wrapped embedder's gives an embedder-less function whose use fails,
    so a collection is never silently embedded with the wrong model.
    """
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

    class RaMemEmbeddingFunction(EmbeddingFunction[Documents]):
        def __init__(self, wrapped: Embedder | None = None) -> None:
            self._embedder = wrapped

        def __call__(self, input: Documents) -> Embeddings:  # noqa: A002 - Chroma's signature
            if self._embedder is None:
                msg = "RaMem collections need RaMem's embedder: open them through ramem_core"
                raise StoreError(msg)
            return list(self._embedder.embed(list(input)))

        @staticmethod
        def name() -> str:
            return "ramem"

        def get_config(self) -> dict[str, Any]:
            return {"model": self._embedder.name if self._embedder else ""}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> RaMemEmbeddingFunction:
            same = config.get("model") == embedder.name
            return RaMemEmbeddingFunction(embedder if same else None)

        def default_space(self) -> Any:
            return "cosine"

        def supported_spaces(self) -> Any:
            return ["cosine", "l2", "ip"]

    return RaMemEmbeddingFunction(embedder)


class _DirectoryLock:
    """One process per local Chroma directory: an advisory lock, shared inside the process.

    Chroma's embedded mode keeps its index in memory per process; a second process on the
    same directory reads stale or missing segments ("Error finding id"). So the second
    process is refused at open, with a pointer to ``chroma run``. The OS releases the lock
    when the holder exits, so a crash leaves nothing to clean up.
    """

    _held: ClassVar[dict[str, tuple[int, int]]] = {}  # real path -> (fd, users here)
    _guard = threading.Lock()

    @classmethod
    def acquire(cls, path: Path) -> str:
        key = str(path.resolve())
        with cls._guard:
            if key in cls._held:
                fd, users = cls._held[key]
                cls._held[key] = (fd, users + 1)
                return key
            try:
                import fcntl
            except ImportError:  # not POSIX: no lock (documented)
                return key
            fd = os.open(os.path.join(key, ".ramem.lock"), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                os.close(fd)
                msg = (
                    f"the memory directory {key} is open in another process (pid {holder}); "
                    "several processes need a Chroma server: run `chroma run --path "
                    f"{key} --port 8000` and open it with RaMem.open(host='127.0.0.1', port=8000)"
                )
                raise StoreError(msg) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            cls._held[key] = (fd, 1)
            return key

    @classmethod
    def release(cls, key: str) -> None:
        with cls._guard:
            if key not in cls._held:
                return
            fd, users = cls._held[key]
            if users > 1:
                cls._held[key] = (fd, users - 1)
                return
            del cls._held[key]
            os.close(fd)  # closing the descriptor releases the lock


def _chunks(ids: Sequence[str]) -> list[list[str]]:
    """``ids`` in lists of at most ``_BATCH``."""
    return [list(ids[i : i + _BATCH]) for i in range(0, len(ids), _BATCH)]


def max_write_batch(store: ChromaStore) -> int:
    """Memories one write sends in a single Chroma call (the backend's maximum batch size):
    a call is one transaction, so an ingest of at most this many is all or nothing, even if
    the process is killed mid-write."""
    store._open()
    return int(store.client.get_max_batch_size())


def check_namespace(namespace: str) -> str:
    """Return ``namespace`` if it can name a collection, else raise InvalidInputError."""
    if not isinstance(namespace, str) or not _NAMESPACE.match(namespace):
        msg = (
            f"invalid namespace {namespace!r}: use 1-122 letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit"
        )
        raise InvalidInputError(msg)
    return namespace


class ChromaStore:
    """Memory units in Chroma collections, one per namespace.

    Args:
        client: any Chroma client (persistent, ephemeral or HTTP).
        embedder: the embedder whose vectors the collections hold; its name is recorded in each
            collection and checked on open, so vectors of two models are never mixed.
        prefix: prefix of the collection names RaMem owns.
    """

    def __init__(
        self,
        client: ClientAPI,
        embedder: Embedder,
        *,
        prefix: str = "ramem",
        owns_client: bool = False,
    ) -> None:
        self.client = client
        self.embedder = embedder
        self.prefix = prefix
        self.owns_client = owns_client
        self.closed = False
        self._directory_lock: str | None = None
        self._collections: dict[str, Collection] = {}
        # freshness: each store instance is one writer with its own sequence number
        self.writer = uuid.uuid4().hex
        self._sequence = 0
        self._versions: Collection | None = None
        self.snapshot_files: SnapshotFiles | None = None  # built snapshots kept on disk

    def close(self) -> None:
        """Release the store's files and connections (a no-op the second time).

        A client this store created (:meth:`persistent`, :meth:`http`) is closed; an ephemeral
        client is shared by every in-process Chroma client, so it is only let go of. Any use
        after this raises :class:`StoreError`.
        """
        if self.closed:
            return
        self.closed = True
        self._collections.clear()
        close = getattr(self.client, "close", None)
        if self.owns_client and callable(close):
            close()
        if self._directory_lock is not None:
            _DirectoryLock.release(self._directory_lock)
            self._directory_lock = None

    def __enter__(self) -> ChromaStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ constructors

    @classmethod
    def persistent(cls, path: str | Path, embedder: Embedder) -> ChromaStore:
        """A store in a local directory (Chroma ``PersistentClient``).

        One process at a time: another process that has the directory open makes this raise
        :class:`StoreError` (use a Chroma server, ``chroma run``, for several processes).
        """
        import chromadb

        if Path(path).exists() and not Path(path).is_dir():
            msg = f"{path} is a file, not a memory directory: pass a directory to open"
            raise StoreError(msg)
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = f"cannot create the memory directory {path}: {exc.strerror or exc}"
            raise StoreError(msg) from exc
        lock = _DirectoryLock.acquire(Path(path))
        try:
            client = chromadb.PersistentClient(path=str(path), settings=_settings())
        except Exception:
            _DirectoryLock.release(lock)
            raise
        store = cls(client, embedder, owns_client=True)
        store._directory_lock = lock
        store.snapshot_files = SnapshotFiles(Path(path) / SNAPSHOT_DIRECTORY)
        return store

    @classmethod
    def ephemeral(cls, embedder: Embedder) -> ChromaStore:
        """An in-memory store (Chroma ``EphemeralClient``); in-process clients share it."""
        import chromadb

        return cls(chromadb.EphemeralClient(settings=_settings()), embedder)

    @classmethod
    def http(cls, host: str, port: int, embedder: Embedder) -> ChromaStore:
        """A store on a Chroma server started with ``chroma run``."""
        import chromadb

        try:
            client = chromadb.HttpClient(host=host, port=port, settings=_settings())
        except Exception as exc:  # chromadb raises plain exceptions when the server is down
            msg = f"cannot reach the Chroma server at {host}:{port}: {exc}"
            raise StoreError(msg) from exc
        return cls(client, embedder, owns_client=True)

    # ------------------------------------------------------------------ collections

    def _name(self, namespace: str) -> str:
        return f"{self.prefix}_{check_namespace(namespace)}"

    def _open(self) -> None:
        if self.closed:
            raise StoreError("this memory store is closed; open it again to use it")

    def collection(self, namespace: str) -> Collection:
        """The collection of ``namespace``, created on first use."""
        self._open()
        cached = self._collections.get(namespace)
        if cached is not None:
            return cached
        name = self._name(namespace)
        try:
            collection = self.client.get_or_create_collection(
                name,
                embedding_function=_embedding_function(self.embedder),
                metadata={
                    "hnsw:space": "cosine",
                    "ramem_embedder": self.embedder.name,
                    "ramem_dimension": self.embedder.dimension,
                },
            )
        except Exception as exc:
            msg = f"cannot open collection {name!r}: {exc}"
            raise StoreError(msg) from exc
        stored = (collection.metadata or {}).get("ramem_embedder")
        if stored is not None and stored != self.embedder.name:
            msg = (
                f"namespace {namespace!r} holds vectors of {stored!r}, not of "
                f"{self.embedder.name!r}; open it with the same embedder or use another namespace"
            )
            raise StoreError(msg)
        self._collections[namespace] = collection
        return collection

    def _existing(self, namespace: str) -> Collection | None:
        """The collection of ``namespace`` if it exists; reads never create one."""
        if namespace in self._collections:
            return self._collections[namespace]
        if namespace not in self.namespaces():
            return None
        return self.collection(namespace)

    def has_namespace(self, namespace: str) -> bool:
        """True when ``namespace`` exists in this store (it may still be empty)."""
        return self._existing(check_namespace(namespace)) is not None

    # ------------------------------------------------------------------ freshness

    def _version_collection(self) -> Collection:
        self._open()
        if self._versions is None:
            # one collection for every namespace of the directory, whatever their embedders:
            # its records carry a fixed one-dimensional vector, never the embedder's
            self._versions = self.client.get_or_create_collection(
                f"{self.prefix}-write-versions",
                embedding_function=_embedding_function(self.embedder),
                metadata={"hnsw:space": "l2"},
            )
        return self._versions

    def version(self, namespace: str) -> Version:
        """The namespace's write version: every writer's latest sequence number.

        Every write (upsert, metadata update, delete, drop) raises its writer's number *after*
        the data is written, so a reader that reads the version first and the data second
        holds at least what the version announces.
        """
        result = self._version_collection().get(
            where={"namespace": namespace}, include=["metadatas"]
        )
        return frozenset(
            (str(m["writer"]), int(str(m["sequence"])))
            for m in result["metadatas"] or []
            if m is not None
        )

    def _bump(self, namespace: str) -> None:
        """Announce a write by this store to ``namespace``."""
        self._sequence += 1
        self._version_collection().upsert(
            ids=[f"{namespace}/{self.writer}"],
            embeddings=np.ones((1, 1), dtype=np.float32),
            metadatas=[{"namespace": namespace, "writer": self.writer, "sequence": self._sequence}],
        )

    def namespaces(self) -> list[str]:
        """Namespaces that have a collection in this store."""
        self._open()
        names = [c if isinstance(c, str) else c.name for c in self.client.list_collections()]
        start = f"{self.prefix}_"
        return sorted(n[len(start) :] for n in names if n.startswith(start))

    def drop(self, namespace: str) -> None:
        """Delete the namespace and every memory in it."""
        name = self._name(namespace)
        self._collections.pop(namespace, None)
        if namespace in self.namespaces():
            self.client.delete_collection(name)
            self._bump(namespace)
        if self.snapshot_files is not None:
            self.snapshot_files.remove(namespace)

    # ------------------------------------------------------------------ writes

    def upsert(
        self,
        namespace: str,
        units: Sequence[MemoryUnit],
        vectors: npt.NDArray[np.float32],
        *,
        new_ids: bool = False,
    ) -> int:
        """Insert or replace ``units`` (with their ``vectors``); all or nothing per call.

        Up to :func:`max_write_batch` memories (5,461 on Chroma 1.x) go in one Chroma call,
        one transaction: all or nothing even if the process is killed. A larger call is split
        into such batches; if one fails, the units this call added are deleted again (the
        namespace is as it was except for replaced units that had identical ids), but a kill
        between batches leaves the earlier ones: running the same ingest again completes it
        (ids are deterministic).

        Args:
            new_ids: the caller guarantees the ids are new (live turns: random ids), which
                saves looking them up.

        Returns:
            How many of ``units`` were not stored before.
        """
        if len(units) != len(vectors):
            msg = f"{len(units)} units but {len(vectors)} vectors"
            raise InvalidInputError(msg)
        if not units:
            return 0
        collection = self.collection(namespace)
        ids = [u.id for u in units]
        existing = set() if new_ids else set(self.existing_ids(namespace, ids))
        written: list[str] = []
        try:
            step = max_write_batch(self)
            for begin in range(0, len(units), step):
                batch = units[begin : begin + step]
                collection.upsert(
                    ids=[u.id for u in batch],
                    documents=[u.content for u in batch],
                    embeddings=vectors[begin : begin + step],
                    metadatas=[to_metadata(u) for u in batch],  # type: ignore[misc]
                )
                written.extend(u.id for u in batch)
        except Exception as exc:
            for chunk in _chunks([i for i in written if i not in existing]):
                collection.delete(ids=chunk)
            msg = f"writing {len(units)} memories to namespace {namespace!r} failed: {exc}"
            raise StoreError(msg) from exc
        self._bump(namespace)
        return len(set(ids) - existing)

    def delete(
        self, namespace: str, *, ids: Sequence[str] | None = None, where: Where | None = None
    ) -> int:
        """Delete memories by id or by a metadata filter; returns how many were deleted."""
        collection = self._existing(namespace)
        if collection is None:
            return 0
        if ids is not None:
            found = self.existing_ids(namespace, ids)
        elif where is not None:
            found = collection.get(where=where, include=[])["ids"]  # type: ignore[arg-type]
        else:
            msg = "delete needs ids or a where filter"
            raise InvalidInputError(msg)
        for chunk in _chunks(found):
            collection.delete(ids=chunk)
        if found:
            self._bump(namespace)
        return len(found)

    # ------------------------------------------------------------------ reads

    def count(self, namespace: str) -> int:
        """Number of memories in ``namespace`` (0 for an unknown one, which is not created)."""
        collection = self._existing(namespace)
        return 0 if collection is None else int(collection.count())

    def existing_ids(self, namespace: str, ids: Sequence[str]) -> list[str]:
        """The ids among ``ids`` that are stored."""
        collection = self._existing(namespace)
        if collection is None:
            return []
        found: list[str] = []
        for chunk in _chunks(ids):  # SQLite caps the number of variables in one statement
            found.extend(collection.get(ids=chunk, include=[])["ids"])
        return found

    def get(
        self, namespace: str, *, ids: Sequence[str] | None = None, where: Where | None = None
    ) -> list[MemoryUnit]:
        """Memories by id or filter (all of them when neither is given)."""
        if ids is None:
            return self._get(namespace, where=where)[0]
        return [
            u for chunk in _chunks(ids) for u in self._get(namespace, ids=chunk, where=where)[0]
        ]

    def load(self, namespace: str) -> tuple[list[MemoryUnit], npt.NDArray[np.float32]]:
        """Every memory of ``namespace`` with its vector (rows in the same order)."""
        units, vectors = self._get(namespace, vectors=True)
        return units, vectors

    def _get(
        self,
        namespace: str,
        *,
        ids: Sequence[str] | None = None,
        where: Where | None = None,
        vectors: bool = False,
    ) -> tuple[list[MemoryUnit], npt.NDArray[np.float32]]:
        dim = self.embedder.dimension
        collection = self._existing(namespace)
        if collection is None:
            return [], np.zeros((0, dim), dtype=np.float32)
        include = ["documents", "metadatas", *(["embeddings"] if vectors else [])]
        units: list[MemoryUnit] = []
        rows: list[npt.NDArray[np.float32]] = []
        offset = 0
        while True:  # page through: one huge get would hold everything twice in memory
            kwargs: dict[str, Any] = {"include": include, "limit": _BATCH, "offset": offset}
            if ids is not None:
                kwargs["ids"] = list(ids)
            if where is not None:
                kwargs["where"] = where
            result = collection.get(**kwargs)
            documents = result["documents"] or []
            metadatas = result["metadatas"] or []
            units.extend(
                from_record(i, d or "", m or {})
                for i, d, m in zip(result["ids"], documents, metadatas, strict=True)
            )
            if vectors and len(result["ids"]):
                rows.append(np.asarray(result["embeddings"], dtype=np.float32))
            if len(result["ids"]) < _BATCH:
                break
            offset += _BATCH
        matrix = np.concatenate(rows) if rows else np.zeros((0, dim), dtype=np.float32)
        return units, matrix

    def query(
        self, namespace: str, vector: npt.NDArray[np.float32], n: int, where: Where | None = None
    ) -> list[tuple[str, float]]:
        """Ids of the nearest memories to ``vector`` (inside ``where``), with cosine similarity."""
        if n <= 0:
            return []
        kwargs: dict[str, Any] = {
            "query_embeddings": [vector],
            "n_results": n,
            "include": ["distances"],
        }
        if where is not None:
            kwargs["where"] = where
        collection = self._existing(namespace)
        if collection is None:
            return []
        result = collection.query(**kwargs)
        distances = (result["distances"] or [[]])[0]
        return [(i, 1.0 - float(d)) for i, d in zip(result["ids"][0], distances, strict=True)]
