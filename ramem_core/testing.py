"""Fakes shipped for users' tests and ours: no model, no network, deterministic."""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ramem_core.errors import InvalidInputError, StoreError
from ramem_core.protocols import Embedder
from ramem_core.replacement import Replacement
from ramem_core.types import MemoryUnit, TimeSpan, Version


class FakeLookup:
    """A :class:`~ramem_core.protocols.MemoryLookup` made of plain functions, for testing a
    frame inducer without a memory: by default nothing is located, every span is covered."""

    def __init__(
        self,
        locate: Callable[[str], MemoryUnit | None] = lambda _phrase: None,
        covers: Callable[[TimeSpan], bool] = lambda _span: True,
    ) -> None:
        self._locate, self._covers = locate, covers

    def locate(self, phrase: str) -> MemoryUnit | None:
        return self._locate(phrase)

    def covers(self, span: TimeSpan) -> bool:
        return self._covers(span)


class HashEmbedder:
    """A deterministic bag-of-words embedder: texts sharing words get similar vectors.

    A test fake only: it knows no synonyms. Words are lower-cased and hashed into
    ``dimension`` buckets; vectors are L2-normalised.
    """

    name = "hash-embedder"

    def __init__(self, dimension: int = 256) -> None:
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One unit vector per text."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                out[row, int.from_bytes(digest, "little") % self.dimension] += 1.0
            norm = np.linalg.norm(out[row])
            if norm == 0:
                out[row, 0] = 1.0
            else:
                out[row] /= norm
        return out


class FakeLLM:
    """An LLM that answers from a function of the prompt (default: a fixed reply).

    Records every prompt in ``prompts`` so tests can check what the generator saw.
    """

    def __init__(self, reply: str | Callable[[str], str] = "not mentioned") -> None:
        self._reply = reply
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        """Record ``prompt`` and return the canned reply."""
        self.prompts.append(prompt)
        return self._reply(prompt) if callable(self._reply) else self._reply


class WordCounter:
    """A token counter that counts whitespace-separated words (fast, for tests)."""

    def count(self, text: str) -> int:
        """Number of words in ``text``."""
        return len(text.split())


class InMemoryStore:
    """A :class:`~ramem_core.protocols.Store` in a dict: no Chroma, for tests of what sits
    above the store (like httpx's ``MockTransport``).

    It keeps the store contract that matters to RaMem: writes are all or nothing, every write
    raises this writer's number in the namespace's version *after* its data, and reads never
    create a namespace. Several instances can share one ``data`` dict to act as several
    workers on one database.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        data: dict[str, dict[str, tuple[MemoryUnit, npt.NDArray[np.float32]]]] | None = None,
        versions: dict[str, dict[str, int]] | None = None,
    ) -> None:
        self.embedder = embedder
        self.writer = uuid.uuid4().hex
        self.closed = False
        self.data = {} if data is None else data  # namespace -> id -> (unit, vector)
        self.versions = {} if versions is None else versions  # namespace -> writer -> number
        self.identities: dict[str, str] = {}  # namespace -> id, made when it is created
        self._lock = threading.Lock()

    def _open(self) -> None:
        if self.closed:
            raise StoreError("this memory store is closed; open it again to use it")

    def _bump(self, namespace: str) -> None:
        writers = self.versions.setdefault(namespace, {})
        writers[self.writer] = writers.get(self.writer, 0) + 1

    def upsert(
        self,
        namespace: str,
        units: Sequence[MemoryUnit],
        vectors: npt.NDArray[np.float32],
        *,
        new_ids: bool = False,
    ) -> int:
        """Insert or replace ``units``; returns how many were new."""
        self._open()
        if len(units) != len(vectors):
            msg = f"{len(units)} units but {len(vectors)} vectors"
            raise InvalidInputError(msg)
        with self._lock:
            rows = self.data.setdefault(namespace, {})
            self.identities.setdefault(namespace, uuid.uuid4().hex)
            new = sum(u.id not in rows for u in units)
            for unit, vector in zip(units, vectors, strict=True):
                rows[unit.id] = (unit, np.asarray(vector, dtype=np.float32))
            if units:
                self._bump(namespace)
        return new

    def _select(
        self,
        namespace: str,
        ids: Sequence[str] | None,
        conversation_id: str | None,
        session_id: str | None,
    ) -> list[str]:
        rows = self.data.get(namespace, {})
        wanted = rows if ids is None else [i for i in dict.fromkeys(ids) if i in rows]
        return [
            i
            for i in wanted
            if (conversation_id is None or rows[i][0].context.conversation_id == conversation_id)
            and (session_id is None or rows[i][0].context.session_id == session_id)
        ]

    def get(
        self,
        namespace: str,
        *,
        ids: Sequence[str] | None = None,
        conversation_id: str | None = None,
        session_id: str | None = None,
    ) -> list[MemoryUnit]:
        """The memories that match every selection given."""
        self._open()
        with self._lock:
            rows = self.data.get(namespace, {})
            return [rows[i][0] for i in self._select(namespace, ids, conversation_id, session_id)]

    def delete(
        self,
        namespace: str,
        *,
        ids: Sequence[str] | None = None,
        conversation_id: str | None = None,
        session_id: str | None = None,
    ) -> int:
        """Delete the memories that match every selection given; returns the count."""
        self._open()
        if ids is None and conversation_id is None and session_id is None:
            raise InvalidInputError("delete needs ids, a conversation id or a session id")
        with self._lock:
            found = self._select(namespace, ids, conversation_id, session_id)
            for i in found:
                del self.data[namespace][i]
            if found:
                self._bump(namespace)
        return len(found)

    def load(self, namespace: str) -> tuple[list[MemoryUnit], npt.NDArray[np.float32]]:
        """Every memory with its vector."""
        self._open()
        with self._lock:
            rows = list(self.data.get(namespace, {}).values())
        vectors = np.zeros((len(rows), self.embedder.dimension), dtype=np.float32)
        for row, (_, vector) in enumerate(rows):
            vectors[row] = vector
        return [unit for unit, _ in rows], vectors

    def count(self, namespace: str) -> int:
        """Number of memories in ``namespace``."""
        self._open()
        return len(self.data.get(namespace, {}))

    def version(self, namespace: str) -> Version:
        """Every writer's latest number in ``namespace``."""
        self._open()
        with self._lock:
            return frozenset(self.versions.get(namespace, {}).items())

    def counted(self, namespace: str, version: Version) -> int:
        """:meth:`count` (the version is kept apart from the memories here)."""
        return self.count(namespace)

    def written(self, namespace: str) -> int:
        """This writer's number in ``namespace`` (0 before its first write there)."""
        with self._lock:
            return self.versions.get(namespace, {}).get(self.writer, 0)

    def identity(self, namespace: str) -> str:
        """The namespace's id, made when it was created (``""`` for none)."""
        self._open()
        return self.identities.get(namespace, "") if namespace in self.data else ""

    def namespaces(self) -> list[str]:
        """The namespaces that exist."""
        self._open()
        return sorted(self.data)

    def has_namespace(self, namespace: str) -> bool:
        """True when ``namespace`` exists."""
        self._open()
        return namespace in self.data

    def drop(self, namespace: str) -> None:
        """Delete a namespace."""
        self._open()
        with self._lock:
            if self.data.pop(namespace, None) is not None:
                self.identities.pop(namespace, None)
                self._bump(namespace)

    def close(self) -> None:
        """Later use raises :class:`StoreError`."""
        self.closed = True


class StallingProxy:
    """A TCP proxy on 127.0.0.1 in front of ``port`` that can be told to stall: while
    :attr:`stalled` is set, it accepts connections and bytes and forwards nothing, as a
    stopped (SIGSTOP) server does. It counts the connections it was opened. A context manager.
    """

    def __init__(self, port: int) -> None:
        self.upstream = port
        self.stalled = threading.Event()
        self.connections = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._server.getsockname()[1])
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True, name="stalling-proxy").start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                client.close()
                continue
            self._sockets += [client, upstream]
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                while self.stalled.is_set() and not self._closed.is_set():
                    time.sleep(0.01)
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, target):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._closed.set()
        self._server.close()
        for end in self._sockets:
            with contextlib.suppress(OSError):
                end.close()

    def __enter__(self) -> StallingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def rewrite_snapshot_file(
    path: Path,
    change: Callable[[Any, dict[str, npt.NDArray[Any]]], None] | None = None,
    *,
    header_change: Callable[[dict[str, Any]], None] | None = None,
    digest: bool = True,
    target: Path | None = None,
) -> None:
    """Rewrite the snapshot file at ``path`` as someone who can write its directory would:
    its tree and arrays changed by ``change(tree, arrays)``, its header by
    ``header_change(header)``, written (to ``target`` if given) in the same format with the
    digest made again unless ``digest`` is false (for tests and benchmarks of hostile files)."""
    import io
    import json

    from ramem_core.index.files import _block_digests, _bytes, _digest, pack, unpack

    with np.load(io.BytesIO(path.read_bytes()), allow_pickle=False) as data:
        header = json.loads(bytes(data["header"]))
        whole, blob = json.loads(bytes(data["tree"])), data["data"]
    arrays = {k: np.array(v) for k, v in unpack(whole["arrays"], blob).items()}
    if change is not None:
        change(whole["root"], arrays)
    if header_change is not None:
        header_change(header)
    table, blob = pack([arrays[f"a{i}"] for i in range(len(arrays))])
    tree = _bytes({"arrays": table, "root": whole["root"]})
    if digest:
        blocks = _block_digests(blob)
        header["blocks"] = blocks.hex()
        header["digest"] = _digest(tree.tobytes(), blocks)
    with (target or path).open("wb") as file:
        np.savez(file, header=_bytes(header), tree=tree, data=blob)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_STOP_GRACE_S = 10.0
"""Seconds a stopped ``chroma run`` server gets to exit before it is killed."""


@contextmanager
def serve_chroma(path: Path, *, timeout: float = 60.0) -> Iterator[int]:
    """A ``chroma run`` server on a free local port serving the directory ``path``, stopped
    on exit; yields its port. Its output goes to ``path`` + ``.log``.

    Raises:
        FileNotFoundError: the ``chroma`` command is not installed.
        StoreError: the server exited, or did not accept connections within ``timeout``.
    """
    binary = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    if not Path(binary).exists():
        raise FileNotFoundError("the chroma CLI is not installed")
    port = free_port()
    log_path = path.with_name(path.name + ".log")
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [binary, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if proc.poll() is not None:
                        msg = f"chroma run exited: {log_path.read_text()[-2000:]}"
                        raise StoreError(msg) from None
                    if time.monotonic() > deadline:
                        msg = f"chroma run did not start within {timeout:g} s"
                        raise StoreError(msg) from None
                    time.sleep(0.2)
            yield port
        finally:
            # A graceful stop waits on open client connections; past a grace period, kill.
            proc.terminate()
            try:
                proc.wait(timeout=_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def replacement_of(
    weights: dict[str, float],
    bias: float,
    label: float = 0.9,
    order: float = 0.5,
    doubt: float = 0.2,
) -> Replacement:
    """A :class:`~ramem_core.replacement.Replacement` with the given feature ``weights`` (by
    name, the rest 0) and no vector weights: a model whose decisions tests can read off."""
    from ramem_core.replacement import FEATURES

    unknown = set(weights) - set(FEATURES)
    if unknown:
        msg = f"unknown features {sorted(unknown)}"
        raise ValueError(msg)
    w = np.array([weights.get(name, 0.0) for name in FEATURES], dtype=np.float64)
    empty = np.zeros(0, dtype=np.float64)
    return Replacement(w, empty, empty, bias, label, order, doubt)


class FakePairReader:
    """A :class:`~ramem_core.replacement.PairReader` for tests: a pair whose later statement
    holds one of ``replacing`` (case-folded) is read as a replacement (``high``), any other
    as none (``low``); it records the pairs it was asked."""

    def __init__(
        self, replacing: Sequence[str] = (), *, high: float = 0.999, low: float = 0.01
    ) -> None:
        self.replacing = tuple(w.casefold() for w in replacing)
        self.high, self.low = high, low
        self.asked: list[tuple[str, str]] = []

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float64]:
        self.asked.extend(pairs)
        return np.array(
            [
                self.high if any(w in later.casefold() for w in self.replacing) else self.low
                for _, later in pairs
            ],
            dtype=np.float64,
        )


_SAYS_OTHERWISE = (
    "later_question",
    "later_possibility",
    "later_plan",
    "later_past_story",
    "later_adds",
    "later_temporary",
    "later_still",
    "told_earlier",
    "owner_to_other",
    "owner_from_other",
)

SAME_KIND = replacement_of({"kind_shared": 10.0, **dict.fromkeys(_SAYS_OTHERWISE, -20.0)}, -5.0)
"""A replacement model for tests over fake vectors: a later statement of the same kind of
state (words or vectors) replaces the earlier one (probability 0.99, told), unless it is
said as a question, a possibility, a plan, a story, an addition, a temporary thing, a
confirmation, or about somebody else."""
