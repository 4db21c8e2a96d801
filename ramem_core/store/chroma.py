"""Chroma adapter: the only module of RaMem that imports ``chromadb``.

One collection per namespace (tenant). Episodic fields are metadata (see :mod:`.codec`);
vectors always come from RaMem's embedder, never from Chroma's default embedding function
(which downloads a model at first use and fails offline).
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from ramem_core.errors import (
    InvalidInputError,
    MemoryInUseError,
    RaMemError,
    StoreError,
    UncertainWriteError,
)
from ramem_core.protocols import Embedder
from ramem_core.store.codec import from_record, to_metadata
from ramem_core.types import MemoryUnit, Version
from ramem_core.validation import check_server

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

_NAMESPACE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,120}[A-Za-z0-9])?$")
SNAPSHOT_DIRECTORY = "ramem-snapshots"
"""Sub-directory of a memory directory holding its snapshot files (:mod:`.files`)."""
VERSION_ID = "~ramem-version~"
"""Id prefix of a namespace's write-version records, one per writer, kept in the namespace's
own collection so that a write and its announcement are one Chroma call (one transaction)."""
_VERSION_RECORD: dict[str, Any] = {"ramem_record": "version"}
"""The filter that finds version records: a string equality, which Chroma answers in constant
time (a boolean filter takes time in proportion to the whole server's records)."""
MAX_VERSION_RECORDS = 16
"""Version records a namespace keeps: a writer's first write to a namespace drops the oldest
beyond this many (every process that writes is a writer, every CLI run one), so reading the
version stays one small read however many writers have come and gone. A dropped record only
changes the version (readers reload once); its writer, if still alive, writes it again with
its next write."""
DEFAULT_TIMEOUT = (5.0, 60.0)
"""Seconds to connect to a Chroma server and to wait for each reply (a read of 100k memories
is many replies): a stalled server becomes a :class:`StoreError` instead of a hang."""
SYNC_THRESHOLD = 50
"""Records a collection's HNSW index takes in before Chroma writes it to disk (Chroma's own
default: 1000). Records not yet written live only in Chroma's log, which every process's first
touch of the collection replays and every write reads again: at 1000, a user of 600 memories
cost 40-80 ms on first touch and 30 ms per single upsert. Chosen by
``benchmarks/bench_sync.py`` (first touch, add_turn and ingest per threshold)."""
BATCH_SIZE = min(SYNC_THRESHOLD, 100)
"""Records Chroma keeps in its brute-force buffer before adding them to the HNSW index: its
default (100), or the sync threshold when that is smaller, as ``bench_sync.py`` measured."""
_SHARED_CLIENTS: dict[tuple[Any, ...], Any] = {}
"""The Chroma HTTP clients of this process, one per server, headers, tenant, database and
timeout (:meth:`ChromaStore.http`), closed when the process exits."""
_SHARED_LOCK = threading.Lock()
_BATCH = 2000  # ids per read or delete: below Chroma's max batch size on every backend
_OPEN_COLLECTIONS = 32  # collection handles kept open (each holds file descriptors locally)
Where = Mapping[str, Any]
log = logging.getLogger(__name__)


@contextmanager
def _failing(operation: str) -> Iterator[None]:
    """Raise whatever Chroma (or the network under it) raises inside as a :class:`StoreError`
    naming ``operation``; RaMem's own errors pass unchanged."""
    try:
        yield
    except RaMemError:
        raise
    except Exception as exc:
        msg = f"{operation} failed: {type(exc).__name__}: {exc}"
        raise StoreError(msg) from exc


_EPHEMERAL_LOCK = threading.Lock()
"""Held while an ephemeral store's database and client are made (:meth:`ChromaStore.ephemeral`)."""


def client_settings() -> Any:
    """The settings RaMem opens Chroma clients with (no telemetry, no reset)."""
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


def _embedding_function(embedder: Embedder) -> Any:
    """Chroma's EmbeddingFunction interface for RaMem's collections.

    RaMem always passes its own vectors, so the function only records the model's name in the
    collection's configuration and refuses to embed: a collection written through Chroma
    directly is never silently embedded with another model. It holds the name, not the
    embedder: Chroma keeps embedding functions alive in its caches, and a model held there
    would outlive the memory that opened it.
    """
    return _ramem_function_class()(embedder.name)


_FUNCTION_CLASS: Any = None


def _ramem_function_class() -> Any:
    """The one EmbeddingFunction class of RaMem (defined on first use: chromadb is heavy)."""
    global _FUNCTION_CLASS
    if _FUNCTION_CLASS is not None:
        return _FUNCTION_CLASS
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

    class RaMemEmbeddingFunction(EmbeddingFunction[Documents]):
        def __init__(self, model: str = "") -> None:
            self._model = model

        def __call__(self, input: Documents) -> Embeddings:  # noqa: A002 - Chroma's signature
            msg = "RaMem collections hold RaMem's vectors: write them through ramem_core"
            raise StoreError(msg)

        @staticmethod
        def name() -> str:
            return "ramem"

        def get_config(self) -> dict[str, Any]:
            return {"model": self._model}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> RaMemEmbeddingFunction:
            return RaMemEmbeddingFunction(str(config.get("model", "")))

        def default_space(self) -> Any:
            return "cosine"

        def supported_spaces(self) -> Any:
            return ["cosine", "l2", "ip"]

    from chromadb.utils.embedding_functions import register_embedding_function

    # registered by its name, so Chroma rebuilds it from a collection's configuration in any
    # process ("Could not reconstruct embedding function ramem" was warned on writes)
    register_embedding_function(RaMemEmbeddingFunction)  # type: ignore[no-untyped-call]
    _FUNCTION_CLASS = RaMemEmbeddingFunction
    return _FUNCTION_CLASS


def _sync_often(collection: Collection) -> None:
    """Move a collection made before :data:`SYNC_THRESHOLD` (or by another client) to it: one
    call, once per collection per process; its next write then stores the index. A server
    that refuses keeps the collection as it is (it works, only its first touch is slower)."""
    try:
        hnsw = (getattr(collection, "configuration", None) or {}).get("hnsw") or {}
        if hnsw.get("sync_threshold", SYNC_THRESHOLD) == SYNC_THRESHOLD:
            return
        collection.modify(
            configuration={"hnsw": {"sync_threshold": SYNC_THRESHOLD, "batch_size": BATCH_SIZE}}
        )
    except Exception as exc:  # an older server: keep its setting
        log.warning("keeping collection %s's index sync setting: %s", collection.name, exc)


LOCK_FILE = ".ramem.lock"
"""The file in a memory directory whose advisory lock :class:`_DirectoryLock` holds."""


def held_elsewhere(directory: Path) -> bool:
    """Another open file holds ``directory``'s lock (:class:`_DirectoryLock`): another process
    has the memory open. Read without importing Chroma (``ramem mcp`` relays at once).
    ``False`` where it cannot tell (no lock file yet, not POSIX)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock (documented)
        return False
    try:
        fd = os.open(directory / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # a shared lock taken here is let go with it
    return False


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
            try:
                fd = os.open(os.path.join(key, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:  # EMFILE: too many open files, EACCES, ...
                msg = f"cannot open the memory directory {key}: {exc.strerror or exc}"
                raise StoreError(msg) from exc
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
                raise MemoryInUseError(msg) from None
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


def _serving_process(directory: Path) -> int | None:
    """The id of another process that has ``directory``'s Chroma database open (a ``chroma
    run --path DIR`` server, say), or ``None`` (also where ``/proc`` cannot tell: not Linux).

    Chroma keeps a per-process index of what it wrote; a second process writing the same
    database beside a server corrupts what the server serves ("Error finding id")."""
    database = str((directory / "chroma.sqlite3").resolve())
    proc = Path("/proc")
    if not proc.is_dir() or not Path(database).exists():
        return None
    me = os.getpid()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            for fd in (entry / "fd").iterdir():
                if os.readlink(fd) == database:
                    return int(entry.name)
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return None


def _close_client(client: Any) -> None:
    """Close a Chroma client, and its HTTP connections (Chroma's close keeps them open)."""
    session = _session(client)
    client.close()
    if session is not None:
        session.close()


@atexit.register
def _close_shared_clients() -> None:
    with _SHARED_LOCK:
        for client in _SHARED_CLIENTS.values():
            with suppress(Exception):
                _close_client(client)
        _SHARED_CLIENTS.clear()


def _check_snapshot_dir(snapshot_dir: object) -> None:
    if snapshot_dir is not None and (
        not isinstance(snapshot_dir, str | os.PathLike) or not str(snapshot_dir)
    ):
        msg = f"snapshot_dir must be a directory's path, got {snapshot_dir!r}"
        raise InvalidInputError(msg)


def timeout_of(timeout: object) -> Any:
    """``timeout`` (seconds, or seconds to connect and to read) as an ``httpx.Timeout``."""
    import httpx

    pair = timeout if isinstance(timeout, tuple) else (timeout, timeout)
    if len(pair) != 2 or not all(
        isinstance(t, int | float) and not isinstance(t, bool) and 0 < t < float("inf")
        for t in pair
    ):
        msg = f"timeout must be positive seconds or a (connect, read) pair of them, got {timeout!r}"
        raise InvalidInputError(msg)
    connect, read = (float(t) for t in pair)
    return httpx.Timeout(read, connect=connect)


def _session(client: object) -> Any:
    """The ``httpx.Client`` of a Chroma HTTP client (``None`` for any other client)."""
    session = getattr(getattr(client, "_server", None), "_session", None)
    return session if callable(getattr(session, "close", None)) else None


def _chunks(ids: Sequence[str]) -> list[list[str]]:
    """``ids`` in lists of at most ``_BATCH``."""
    return [list(ids[i : i + _BATCH]) for i in range(0, len(ids), _BATCH)]


def _all(clauses: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _selection(
    ids: Sequence[str] | None, conversation_id: str | None, session_id: str | None
) -> dict[str, Any] | None:
    """The ``where`` filter of a plain-value selection (ids go to Chroma's ``ids``)."""
    clauses: list[dict[str, Any]] = []
    if conversation_id is not None:
        clauses.append({"conversation_id": conversation_id})
    if session_id is not None:
        clauses.append({"session_id": session_id})
    return _all(clauses)


def max_write_batch(store: ChromaStore) -> int:
    """Memories one write sends in a single Chroma call (the backend's maximum batch size):
    a call is one transaction, so an ingest of at most this many is all or nothing, even if
    the process is killed mid-write."""
    store._open()
    return int(store.client.get_max_batch_size())


def check_namespace(namespace: str) -> str:
    """Return ``namespace`` if it can name a collection, else raise InvalidInputError."""
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
        msg = (
            f"invalid namespace {namespace!r}: use 1-122 letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit"
        )
        raise InvalidInputError(msg)
    return namespace


class ChromaStore:
    """Memory units in Chroma collections, one per namespace (RaMem's :class:`Store`).

    Args:
        client: any Chroma client (persistent, ephemeral, HTTP or cloud).
        embedder: the embedder whose vectors the collections hold; its name and dimension are
            recorded in each collection and checked on open, so vectors of two models are
            never mixed.
        prefix: prefix of the collection names RaMem owns.
        owns_client: close ``client`` with the store.
        snapshot_dir: where snapshot files of this store may be kept (a local directory's
            store keeps them in ``DIR/ramem-snapshots``).
    """

    def __init__(
        self,
        client: ClientAPI,
        embedder: Embedder,
        *,
        prefix: str = "ramem",
        owns_client: bool = False,
        snapshot_dir: Path | None = None,
    ) -> None:
        _ramem_function_class()  # known to Chroma before any collection is opened
        self.client = client
        self.embedder = embedder
        self.prefix = prefix
        self.owns_client = owns_client
        self.snapshot_dir = snapshot_dir
        self.remote = False  # a Chroma server (http): every rebuild reads over the network
        self.closed = False
        self._directory_lock: str | None = None
        self._database: str | None = None  # an ephemeral store's own database
        self._collections: OrderedDict[str, Collection] = OrderedDict()
        self._synced: set[str] = set()  # namespaces whose collection has SYNC_THRESHOLD
        # freshness: each store instance is one writer with a sequence number per namespace
        self.writer = uuid.uuid4().hex
        self._sequences: dict[str, int] = {}
        self._write_lock = threading.Lock()  # a write and its sequence number go together
        self._unannounced: set[str] = set()  # namespaces whose last version write failed

    def close(self) -> None:
        """Release the store's files and connections (a no-op the second time).

        A client this store created (:meth:`persistent`, :meth:`http`) is closed; an ephemeral
        store's database is dropped (its client is shared by every in-process Chroma client, so
        it is only let go of). Any use after this raises :class:`StoreError`.
        """
        if self.closed:
            return
        self.closed = True
        self._collections.clear()
        if self._database is not None:
            import chromadb

            with suppress(Exception):  # an in-memory database: nothing is lost if this fails
                chromadb.AdminClient(client_settings()).delete_database(self._database)
        if self.owns_client and callable(getattr(self.client, "close", None)):
            _close_client(self.client)
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
        serving = _serving_process(Path(path))
        if serving is not None:
            _DirectoryLock.release(lock)
            msg = (
                f"the memory directory {Path(path).resolve()} is open in process {serving} "
                "(a Chroma server?); open it through that server with "
                "RaMem.open(host=..., port=...) instead"
            )
            raise StoreError(msg)
        try:
            client = chromadb.PersistentClient(path=str(path), settings=client_settings())
            client.list_collections()  # a damaged database fails here, not at first recall
        except Exception as exc:
            _DirectoryLock.release(lock)
            database = Path(path) / "chroma.sqlite3"
            msg = f"cannot open the Chroma database {database}: {exc}"
            raise StoreError(msg) from exc
        store = cls(
            client, embedder, owns_client=True, snapshot_dir=Path(path) / SNAPSHOT_DIRECTORY
        )
        store._directory_lock = lock
        return store

    @classmethod
    def ephemeral(cls, embedder: Embedder) -> ChromaStore:
        """An in-memory store of its own (Chroma ``EphemeralClient``). Chroma keeps one
        in-memory system per process, so each such store is a database of its own in it,
        dropped when the store closes: two ephemeral memories of one process (a notebook
        cell run twice, two agents) never see each other's memories."""
        import chromadb

        settings = client_settings()
        database = f"ramem-{uuid.uuid4().hex}"
        # Chroma sets its shared in-memory system up unlocked: threads opening the first
        # ephemeral stores at once would race there
        with _EPHEMERAL_LOCK, _failing("opening an in-memory store"):
            admin = chromadb.AdminClient(settings)
            admin.create_database(database)
            try:
                client = chromadb.EphemeralClient(settings=settings, database=database)
            except Exception:
                with suppress(Exception):
                    admin.delete_database(database)
                raise
        store = cls(client, embedder)
        store._database = database
        return store

    @classmethod
    def http(
        cls,
        host: str,
        port: int,
        embedder: Embedder,
        snapshot_dir: str | Path | None = None,
        *,
        ssl: bool = False,
        headers: Mapping[str, str] | None = None,
        tenant: str | None = None,
        database: str | None = None,
        timeout: float | tuple[float, float] = DEFAULT_TIMEOUT,
    ) -> ChromaStore:
        """A store on a Chroma server started with ``chroma run``; with ``snapshot_dir``, its
        snapshot files are kept there (a directory the server's workers may share).
        ``ssl``, ``headers`` (e.g. ``{"Authorization": "Bearer ..."}``), ``tenant`` and
        ``database`` go to Chroma's ``HttpClient`` as they are. ``timeout``: seconds to
        connect and to wait for each reply (one number: both; default
        :data:`DEFAULT_TIMEOUT`); a server that stalls longer is a :class:`StoreError`."""
        import chromadb
        import httpx
        from chromadb.config import DEFAULT_DATABASE, DEFAULT_TENANT

        check_server(host, port, ssl=ssl, headers=headers, tenant=tenant, database=database)
        _check_snapshot_dir(snapshot_dir)
        where = f"{'https' if ssl else 'http'}://{host}:{port}"
        limits = timeout_of(timeout)
        key = (
            where,
            tuple(sorted((headers or {}).items())),
            tenant or DEFAULT_TENANT,
            database or DEFAULT_DATABASE,
            (limits.connect, limits.read),
        )
        with _SHARED_LOCK:
            client = _SHARED_CLIENTS.get(key)
            if client is None:
                try:  # Chroma's client waits for ever: ask first, within the timeout
                    httpx.get(
                        f"{where}/api/v2/heartbeat", timeout=limits, headers=dict(headers or {})
                    )
                except httpx.TimeoutException as exc:
                    msg = (
                        f"the Chroma server at {where} did not answer within "
                        f"{limits.read:g} s: {exc}"
                    )
                    raise StoreError(msg) from exc
                except httpx.HTTPError as exc:
                    msg = f"cannot reach the Chroma server at {where}: {exc}"
                    raise StoreError(msg) from exc
                try:
                    client = chromadb.HttpClient(
                        host=host,
                        port=port,
                        ssl=ssl,
                        headers=dict(headers) if headers is not None else None,
                        settings=client_settings(),
                        tenant=tenant or DEFAULT_TENANT,
                        database=database or DEFAULT_DATABASE,
                    )
                except Exception as exc:  # chromadb raises plain exceptions when it is down
                    msg = f"cannot reach the Chroma server at {where}: {exc}"
                    raise StoreError(msg) from exc
                session = _session(client)
                if session is not None:
                    session.timeout = limits
                _SHARED_CLIENTS[key] = client
        # the client is shared by every store of this process on the same server, settings
        # and timeout, and lives until the process exits: each chromadb.HttpClient keeps
        # about 0.8 MB that its close() never gives back, so an open/close loop would grow
        store = cls.of_client(client, embedder, snapshot_dir=snapshot_dir, owns_client=False)
        store.remote = True
        return store

    @classmethod
    def of_client(
        cls,
        client: ClientAPI,
        embedder: Embedder,
        *,
        snapshot_dir: str | Path | None = None,
        owns_client: bool = False,
    ) -> ChromaStore:
        """A store on a ready Chroma client: an ``HttpClient`` behind TLS or with auth
        headers, a ``CloudClient``, any tenant and database. The client is the caller's
        (not closed with the store unless ``owns_client``). A client of a server reads over
        the network, so snapshot files of any size are kept in ``snapshot_dir`` if given."""
        if not callable(getattr(client, "get_or_create_collection", None)):
            msg = f"client must be a Chroma client (chromadb.HttpClient, ...), got {client!r}"
            raise InvalidInputError(msg)
        _check_snapshot_dir(snapshot_dir)
        directory = Path(snapshot_dir) if snapshot_dir is not None else None
        store = cls(client, embedder, owns_client=owns_client, snapshot_dir=directory)
        settings = getattr(client, "get_settings", lambda: None)()
        store.remote = "fastapi" in str(getattr(settings, "chroma_api_impl", "")).lower()
        return store

    # ------------------------------------------------------------------ collections

    def _name(self, namespace: str) -> str:
        return f"{self.prefix}_{check_namespace(namespace)}"

    def _open(self) -> None:
        if self.closed:
            raise StoreError("this memory store is closed; open it again to use it")

    def collection(self, namespace: str, *, create: bool = True) -> Collection:
        """The collection of ``namespace``, created on first use (``create=False``: raises
        chromadb's ``NotFoundError`` for an unknown namespace instead).

        Raises:
            StoreError: the namespace holds vectors of another embedder (name or dimension).
        """
        self._open()
        collection = self._collections.get(namespace)
        if collection is None:
            collection = self._opened(namespace, create)
        else:
            self._collections.move_to_end(namespace)
        if create and namespace not in self._synced:  # a write's: moved to SYNC_THRESHOLD
            _sync_often(collection)
            self._synced.add(namespace)
        return collection

    def _opened(self, namespace: str, create: bool) -> Collection:
        """:meth:`collection` for a namespace with no open handle: opened (or created),
        checked against this store's embedder, and kept among the open handles."""
        name = self._name(namespace)
        from chromadb.errors import NotFoundError

        try:
            if create:
                collection = self.client.get_or_create_collection(
                    name,
                    embedding_function=_embedding_function(self.embedder),
                    metadata={
                        "hnsw:space": "cosine",
                        "hnsw:sync_threshold": SYNC_THRESHOLD,
                        "hnsw:batch_size": BATCH_SIZE,
                        "ramem_embedder": self.embedder.name,
                        "ramem_dimension": self.embedder.dimension,
                    },
                )
            else:
                collection = self.client.get_collection(
                    name, embedding_function=_embedding_function(self.embedder)
                )
        except NotFoundError:
            raise
        except Exception as exc:
            msg = f"cannot open collection {name!r}: {exc}"
            raise StoreError(msg) from exc
        metadata = collection.metadata or {}
        stored = metadata.get("ramem_embedder")
        dimension = metadata.get("ramem_dimension")
        if (stored is not None and stored != self.embedder.name) or (
            dimension is not None and dimension != self.embedder.dimension
        ):
            msg = (
                f"namespace {namespace!r} holds {dimension}-dimensional vectors of {stored!r}, "
                f"not {self.embedder.dimension}-dimensional ones of {self.embedder.name!r}; "
                "open it with the same embedder or use another namespace"
            )
            raise StoreError(msg)
        self._collections[namespace] = collection
        while len(self._collections) > _OPEN_COLLECTIONS:  # handles hold file descriptors
            evicted, _ = self._collections.popitem(last=False)
            self._synced.discard(evicted)
        return collection

    def _existing(self, namespace: str) -> Collection | None:
        """The collection of ``namespace`` if it exists; reads never create one."""
        from chromadb.errors import NotFoundError

        try:
            return self.collection(namespace, create=False)
        except NotFoundError:
            self._open()  # closed meanwhile (an ephemeral store's database dropped): say so
            return None
        except ValueError as exc:  # older Chroma clients raise ValueError for a missing one
            if "does not exist" in str(exc):
                return None
            raise StoreError(f"opening namespace {namespace!r} failed: {exc}") from exc

    def has_namespace(self, namespace: str) -> bool:
        """True when ``namespace`` exists in this store (it may still be empty)."""
        return self._existing(check_namespace(namespace)) is not None

    # ------------------------------------------------------------------ freshness

    def version(self, namespace: str) -> Version:
        """The namespace's write version: every writer's latest sequence number there.

        Each writer keeps one version record in the namespace's own collection (id
        :data:`VERSION_ID` + writer, never read as a memory), written in the same Chroma call as
        the data it announces: one transaction, so a reader that holds the version holds the
        data, and a writer killed mid-write leaves neither. A delete writes it right after.
        """
        with _failing(f"reading the write version of namespace {namespace!r}"):
            collection = self._existing(namespace)
            if collection is None:
                return frozenset()
            result = collection.get(where=_VERSION_RECORD, include=["metadatas"])
            return frozenset(
                (str(m["writer"]), int(str(m["sequence"])))
                for m in result["metadatas"] or []
                if m is not None
            )

    def written(self, namespace: str) -> int:
        """This writer's sequence number in ``namespace`` after its last write there (0
        before any): what its version record there says."""
        return self._sequences.get(namespace, 0)

    def identity(self, namespace: str) -> str:
        """The id of the namespace's Chroma collection (``""`` for none): a collection made
        again after a drop, or another tenant's, has another."""
        with _failing(f"opening namespace {namespace!r}"):
            collection = self._existing(namespace)
        return "" if collection is None else str(collection.id)

    def _version_record(self, namespace: str, sequence: int) -> tuple[str, dict[str, Any]]:
        """This writer's version record of ``namespace`` at ``sequence``: id and metadata
        (the caller records the number once the record is written), stamped with the wall
        time it was written at (:meth:`compact` drops the oldest)."""
        metadata = {
            **_VERSION_RECORD,
            "writer": self.writer,
            "sequence": sequence,
            "written": time.time(),
        }
        return f"{VERSION_ID}{self.writer}", metadata

    def _unit_vector(self) -> npt.NDArray[np.float32]:
        vector = np.zeros((1, self.embedder.dimension), dtype=np.float32)
        vector[0, 0] = 1.0  # a version record's vector: never queried, any unit vector
        return vector

    def _bump(self, namespace: str) -> None:
        """Announce a write that carried no version record (a delete); raises whatever Chroma
        raises. Call with the write lock held."""
        self._unannounced.add(namespace)
        sequence = self._sequences.get(namespace, 0) + 1
        record, metadata = self._version_record(namespace, sequence)
        self.collection(namespace).upsert(
            ids=[record], embeddings=self._unit_vector(), documents=[""], metadatas=[metadata]
        )
        self._sequences[namespace] = sequence
        self._unannounced.discard(namespace)

    def namespaces(self) -> list[str]:
        """Namespaces that have a collection in this store."""
        self._open()
        with _failing("listing the namespaces"):
            listed = self.client.list_collections()
        names = [c if isinstance(c, str) else c.name for c in listed]
        start = f"{self.prefix}_"
        return sorted(n[len(start) :] for n in names if n.startswith(start))

    def drop(self, namespace: str) -> None:
        """Delete the namespace and every memory in it."""
        name = self._name(namespace)
        with self._write_lock, _failing(f"dropping namespace {namespace!r}"):
            self._collections.pop(namespace, None)
            if namespace in self.namespaces():
                # the version records go with the collection: readers see an empty version,
                # unlike any they hold, and this writer's next records keep counting up
                self.client.delete_collection(name)

    def _announce(self, namespace: str, what: str) -> None:
        try:
            self._bump(namespace)
        except Exception as exc:
            msg = (
                f"{what} in namespace {namespace!r} is stored, but announcing it to other "
                f"workers failed ({exc}); the next write to the namespace announces it"
            )
            raise StoreError(msg) from exc

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

        Up to :func:`max_write_batch` - 1 memories (5,460 on Chroma 1.x) go in one Chroma
        call, one transaction: all or nothing even if the process is killed. A larger call is split
        into such batches; the last one carries this writer's version record (the write's
        announcement, :meth:`version`). If one fails, the units this call added are deleted
        again (the namespace is as it was except for replaced units that
        had identical ids) and :class:`StoreError` is raised, so a retry stores them once. A
        kill between batches leaves the earlier ones: running the same ingest again completes
        it (ids are deterministic).

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
        with _failing(f"writing {len(units)} memories to namespace {namespace!r}"):
            collection = self.collection(namespace)
            ids = [u.id for u in units]
            existing = set() if new_ids else set(self.existing_ids(namespace, ids))
            step = max_write_batch(self) - 1  # room for the version record
        with self._write_lock:
            first = self._sequences.get(namespace, 0) + 1
            batches = list(range(0, len(units), step))
            try:
                for number, begin in enumerate(batches):
                    batch = units[begin : begin + step]
                    # every call carries the version record: a writer killed between the
                    # calls of a split write leaves a version no snapshot file holds
                    record, announcement = self._version_record(namespace, first + number)
                    rows = np.vstack([vectors[begin : begin + step], self._unit_vector()])
                    collection.upsert(
                        ids=[*(u.id for u in batch), record],
                        documents=[*(u.content for u in batch), ""],
                        embeddings=rows,
                        metadatas=[*(to_metadata(u) for u in batch), announcement],
                    )
            except Exception as exc:
                self._failed_write(namespace, collection, units, existing, first, batches, exc)
            self._sequences[namespace] = first + len(batches) - 1
            self._unannounced.discard(namespace)
            if first == 1:  # this writer's first write here: its record is new
                self.compact(namespace)
        return len(set(ids) - existing)

    def compact(self, namespace: str, keep: int = MAX_VERSION_RECORDS) -> int:
        """Drop the oldest version records of ``namespace`` beyond ``keep`` (never this
        writer's); returns how many went. A failure is logged, not raised: compaction only
        keeps :meth:`version` fast."""
        try:
            collection = self.collection(namespace)
            found = collection.get(where=_VERSION_RECORD, include=["metadatas"])
            records = [
                (float(str((m or {}).get("written", 0))), i)
                for i, m in zip(found["ids"], found["metadatas"] or [], strict=True)
                if i != f"{VERSION_ID}{self.writer}"
            ]
            stale = [i for _, i in sorted(records, reverse=True)[max(keep - 1, 0) :]]
            for chunk in _chunks(stale):
                collection.delete(ids=chunk)
        except Exception as exc:
            log.warning("compacting the version records of %r failed: %s", namespace, exc)
            return 0
        return len(stale)

    def _failed_write(
        self,
        namespace: str,
        collection: Collection,
        units: Sequence[MemoryUnit],
        existing: set[str],
        first: int,
        batches: list[int],
        exc: Exception,
    ) -> None:
        """Reconcile a write whose call raised (call with the write lock held): read back
        this writer's version record to learn how many of the calls were stored. All of
        them: the write succeeded (a connection lost after the commit). Some: those are
        undone and the undo announced. Unknown (the store cannot be read): the writer's
        sequence moves past every number the write may have used, and
        :class:`UncertainWriteError` says the memories may have been stored."""
        last = first + len(batches) - 1
        ids = tuple(u.id for u in units)
        what = f"writing {len(units)} memories to namespace {namespace!r}"
        try:
            stored = dict(self.version(namespace)).get(self.writer, 0)
        except Exception as again:
            self._sequences[namespace] = last  # never reuse a number the store may hold
            self._unannounced.add(namespace)
            msg = (
                f"{what} failed ({exc}) and the store could not be asked what it kept "
                f"({again}): the memories may have been stored; a retry stores them once"
            )
            raise UncertainWriteError(msg, ids=ids) from exc
        if stored >= last:
            log.warning("%s reported a failure (%s), but the store holds all of it", what, exc)
            return
        step = len(units) if len(batches) == 1 else batches[1]
        kept = max(0, stored - first + 1) * step  # the calls the store committed
        self._sequences[namespace] = max(stored, first - 1)
        undone = "nothing of it was kept"
        if kept:
            try:
                for chunk in _chunks([u.id for u in units[:kept] if u.id not in existing]):
                    collection.delete(ids=chunk)
                self._bump(namespace)
                undone = "the part that was stored is undone"
            except Exception as again:
                msg = (
                    f"{what} failed ({exc}) and undoing the part that was stored failed too "
                    f"({again}): some memories may be stored; a retry stores them once"
                )
                raise UncertainWriteError(msg, ids=ids) from exc
        raise StoreError(f"{what} failed: {exc}; {undone}") from exc

    def delete(
        self,
        namespace: str,
        *,
        ids: Sequence[str] | None = None,
        conversation_id: str | None = None,
        session_id: str | None = None,
        where: Where | None = None,
    ) -> int:
        """Delete the memories that match every selection given; returns how many were
        deleted. ``where`` is a Chroma filter (this adapter's own extra)."""
        where = _all([dict(c) for c in (where, _selection(ids, conversation_id, session_id)) if c])
        if ids is None and where is None:
            msg = "delete needs ids, a conversation id or a session id"
            raise InvalidInputError(msg)
        what = f"deleting memories from namespace {namespace!r}"
        with _failing(what):
            collection = self._existing(namespace)
            if collection is None:
                return 0
            if ids is not None:
                found = self.existing_ids(namespace, ids, where=where)
            else:
                found = collection.get(where=where, include=[])["ids"]  # type: ignore[arg-type]
            found = [i for i in found if not i.startswith(VERSION_ID)]  # never a version record
        with self._write_lock:
            try:
                for chunk in _chunks(found):
                    collection.delete(ids=chunk)
            except Exception as exc:
                self._unannounced.add(namespace)  # some may be gone: the next write announces
                with suppress(Exception):
                    self._bump(namespace)
                raise StoreError(f"{what} failed: {type(exc).__name__}: {exc}") from exc
            if found or namespace in self._unannounced:
                self._announce(namespace, f"deleting {len(found)} memories")
        return len(found)

    # ------------------------------------------------------------------ reads

    def count(self, namespace: str) -> int:
        """Number of memories in ``namespace`` (0 for an unknown one, which is not created)."""
        with _failing(f"counting the memories of namespace {namespace!r}"):
            collection = self._existing(namespace)
            if collection is None:
                return 0
            records = collection.get(where=_VERSION_RECORD, include=[])["ids"]
            return int(collection.count()) - len(records)

    def counted(self, namespace: str, version: Version) -> int:
        """:meth:`count`, the namespace's version just read as ``version``: its version
        records (one per writer, :meth:`version`) are those the count leaves out, so they are
        not read again. Right only while those records stand: a writer's first record
        written since counts as a memory, and a compaction since (:meth:`compact`, which may
        drop several) as memories gone. Call it right after reading the version."""
        with _failing(f"counting the memories of namespace {namespace!r}"):
            collection = self._existing(namespace)
            if collection is None:
                return 0
            return int(collection.count()) - len(version)

    def existing_ids(
        self, namespace: str, ids: Sequence[str], *, where: Where | None = None
    ) -> list[str]:
        """The ids among ``ids`` that are stored (and match ``where``); nothing is decoded."""
        with _failing(f"reading ids of namespace {namespace!r}"):
            collection = self._existing(namespace)
            if collection is None:
                return []
            found: list[str] = []
            for chunk in _chunks(ids):  # SQLite caps the number of variables in one statement
                kwargs: dict[str, Any] = {"ids": chunk, "include": []}
                if where is not None:
                    kwargs["where"] = where
                found.extend(collection.get(**kwargs)["ids"])
            return found

    def get(
        self,
        namespace: str,
        *,
        ids: Sequence[str] | None = None,
        conversation_id: str | None = None,
        session_id: str | None = None,
        where: Where | None = None,
    ) -> list[MemoryUnit]:
        """The memories that match every selection given (all of them when none is);
        ``where`` is a Chroma filter (this adapter's own extra)."""
        where = _all([dict(c) for c in (where, _selection(None, conversation_id, session_id)) if c])
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
        with _failing(f"reading the memories of namespace {namespace!r}"):
            return self._read(namespace, ids=ids, where=where, vectors=vectors)

    def _read(
        self,
        namespace: str,
        *,
        ids: Sequence[str] | None,
        where: Where | None,
        vectors: bool,
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
            memories = [not i.startswith(VERSION_ID) for i in result["ids"]]
            units.extend(
                from_record(i, d or "", m or {})
                for i, d, m, memory in zip(
                    result["ids"], documents, metadatas, memories, strict=True
                )
                if memory
            )
            if vectors and any(memories):
                rows.append(np.asarray(result["embeddings"], dtype=np.float32)[memories])
            if len(result["ids"]) < _BATCH:
                break
            offset += _BATCH
        matrix = np.concatenate(rows) if rows else np.zeros((0, dim), dtype=np.float32)
        return units, matrix
