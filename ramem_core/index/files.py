"""Snapshot files: a namespace's snapshot kept on disk, so a restarted worker does not rebuild.

Building a snapshot from Chroma costs reading every memory (documents, metadata, vectors) and
keying the episodic index: about 30 s for 100k memories on two cores. A snapshot file holds
the built snapshot in columnar form (:meth:`Snapshot.__getstate__`) and loads in about a
second; units are decoded only when a recall returns them.

A file is used only when it holds the namespace's current write version
(:meth:`~ramem_core.protocols.Store.version`) and was built with the same index settings, file
format and vector dimension, and (checked by :class:`~ramem_core.index.freshness.Freshness`)
holds as many memories as the store: a writer killed between the batches of a split write
leaves memories no version announces. Anything else (another writer wrote since, other keys, a
damaged or truncated file) falls back to the store, which stays the single source of truth.
Files are written whole and renamed into place, so a crash or a concurrent writer never leaves
half a file behind.

The file's arrays are mapped, not copied (:func:`_mapped`): opening a namespace reads its
header and tree, the OS pages in the arrays as they are read, and the workers of one machine
share those pages. The data is verified in blocks (:class:`Blocks`): a load hashes what it
reads whole (vectors, per-memory columns), a recall the blocks of the few units' contents and
metadata and the posting lists it reads (:class:`~ramem_core.index.shared.Texts` and the
lexical indexes read a piece at a time). A file is replaced by renaming a new one over it,
so a mapped file is never changed under a reader; a file truncated in place by someone who
can write the directory would end the worker that maps it (SIGBUS), which is one more reason
only the deployment's workers may write there (docs/deployment.md).

The directory may be shared by workers on several hosts (a Chroma server deployment), so a
file is data, never code: a NumPy ``.npz`` read with ``allow_pickle=False`` holding a JSON
tree of plain values, the numeric arrays it refers to (packed in one byte array, described by
dtype, shape and offset), and objects only of the snapshot's own classes
(:data:`CLASSES`), rebuilt from their states. A loaded snapshot is checked (lengths, shapes,
dtypes, index bounds) before use; a file that fails anything is refused with a logged reason
and the snapshot is rebuilt from the store.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import logging
import os
import stat
import struct
import tempfile
import threading
import time
import zipfile
from dataclasses import asdict, dataclass
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ramem_core.errors import InvalidInputError
from ramem_core.index.bm25 import FrozenDocs, LexicalIndex
from ramem_core.index.columns import MemoryColumns
from ramem_core.index.episodic import EpisodicIndex, EpisodicKeys
from ramem_core.index.shared import Texts
from ramem_core.index.snapshot import DamagedUnitError, Snapshot, StoredUnits
from ramem_core.types import Granularity, TimeSpan, Version

log = logging.getLogger(__name__)

FORMAT = 14
"""Raised whenever what a file holds changes shape; older files are then ignored (and the
snapshot rebuilt from the store). 6: per-memory facts as named columns
(:class:`~ramem_core.index.columns.MemoryColumns`), per-session turn counts and speakers,
open session documents. 7: what statements state, when said, their turn, as columns.
8: the header binds the store's identity of the namespace and a digest (and HMAC). 9: the
state a statement names (the LLM anchorer's "updates"), as a column. 10: no session
documents. 11: the speaker as a column. 12: speaker and state keys in every script (not only
ASCII letters). 13: the own words' counts are written once, as the own-words index's
documents. 14: the data verified in blocks (:class:`Blocks`); the units' text columns as
:class:`~ramem_core.index.shared.Texts`, read a unit at a time."""

BLOCK_BYTES = 1 << 20
"""A snapshot file's data is verified in blocks of this many bytes, each with its SHA-256 in
the header (a design limit, not tuned): a load verifies the blocks of what it reads whole
(the vectors, the per-memory columns), a recall the blocks of the few units and posting lists
it reads; a memory returned by a recall costs hashing at most a block or two (under a
millisecond each), and the header holds 32 bytes per MiB of data."""

MIN_MEMORIES = 2_000
"""In a local directory, snapshots of at least this many memories are written when built from
Chroma (smaller ones rebuild from the local database in well under a second, so their files
would only cost disk). A Chroma server's snapshot directory keeps every snapshot: each
rebuild there is a read over the network."""


DEFAULT_MAX_FILE_BYTES = 8 << 30
"""The largest snapshot file loaded (8 GiB, about 1.4 million memories at ~5.7 KB each,
``results/snapshot_bytes.json``); a larger one is refused. Files hold only uncompressed
members, so what a file decompresses to is never more than its own size."""
KEY_VARIABLE = "RAMEM_SNAPSHOT_KEY"
"""The environment variable holding the deployment key of a shared snapshot directory (when
no ``snapshot_key`` is passed): with a key, a file is loaded only if its HMAC-SHA256, made
with the same key, matches."""
STALE_TEMPORARY_SECONDS = 600
"""A ``.tmp`` file older than this in a snapshot directory is the remains of a killed writer
(a file is written in well under a minute) and is removed when a memory opens the directory."""


class RefusedFileError(ValueError):
    """A snapshot file that must not be used (the message says why)."""


@dataclass(frozen=True, slots=True)
class Signature:
    """What a snapshot was built with, besides the data: a file built otherwise is ignored."""

    keys: str  # repr of the EpisodicKeys
    dimension: int
    format: int = FORMAT


class Loaded(NamedTuple):
    """A snapshot loaded from its file: the bytes it holds on to (the file's), the write
    version it holds and the store identity of the namespace it is bound to."""

    snap: Snapshot
    size: int
    version: Version
    identity: str


class SnapshotFiles:
    """The snapshot files of one memory directory (one file per namespace).

    A file is untrusted input (the directory may be shared by workers on several hosts): it is
    opened only if it is a regular file of at most ``max_bytes`` with uncompressed members; it
    is bound to its namespace, the store's identity of that namespace (its Chroma
    collection) and the write version it holds; its contents must match the digest in its
    header; and with a ``key`` (or :data:`KEY_VARIABLE` set) the header must carry an HMAC
    made with that key. Anything else is refused with a logged reason, and the snapshot is
    rebuilt from the store.

    Args:
        directory: where the files are.
        min_memories: smaller snapshots are not written.
        key: the deployment key of a shared directory (bytes or text); default the value of
            :data:`KEY_VARIABLE`, else none (then anyone who can write the directory can make
            workers serve what they wrote: see docs/deployment.md).
        max_bytes: the largest file loaded (:data:`DEFAULT_MAX_FILE_BYTES`).
    """

    def __init__(
        self,
        directory: str | Path,
        min_memories: int = MIN_MEMORIES,
        *,
        key: bytes | str | None = None,
        max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        if not isinstance(directory, str | os.PathLike) or not str(directory):
            msg = f"a snapshot directory must be a non-empty path, got {directory!r}"
            raise InvalidInputError(msg)
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            msg = f"max_bytes must be a positive integer, got {max_bytes!r}"
            raise InvalidInputError(msg)
        if key is None:
            key = os.environ.get(KEY_VARIABLE) or None
        if key is not None and (not isinstance(key, bytes | str) or not key):
            msg = "the snapshot key must be non-empty bytes or text"
            raise InvalidInputError(msg)
        self.directory = Path(directory)
        self.min_memories = min_memories  # smaller snapshots are not written
        self.max_bytes = max_bytes
        self._key = key.encode("utf-8") if isinstance(key, str) else key

    @classmethod
    def of_store(
        cls,
        store: object,
        *,
        key: bytes | str | None = None,
        max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> SnapshotFiles | None:
        """Where a Chroma store's snapshot files are kept: a local directory's own
        ``ramem-snapshots`` (snapshots of :data:`MIN_MEMORIES` or more; a small one rebuilds
        faster than a file loads), a server's given ``snapshot_dir`` (every size: each
        rebuild is a network read), else none (any other store)."""
        directory = getattr(store, "snapshot_dir", None)
        if directory is None:
            return None
        remote = bool(getattr(store, "remote", False))
        files = cls(directory, 0 if remote else MIN_MEMORIES, key=key, max_bytes=max_bytes)
        files.clean()  # what killed writers left
        return files

    def clean(self, older_than: float = STALE_TEMPORARY_SECONDS) -> int:
        """Remove the ``.tmp`` files killed writers left (older than ``older_than`` seconds:
        a younger one may be another worker's file being written); returns how many."""
        removed = 0
        try:
            entries = list(self.directory.glob("*.tmp"))
        except OSError:
            return 0
        for entry in entries:
            try:
                if time.time() - entry.lstat().st_mtime > older_than:
                    entry.unlink()
                    removed += 1
            except OSError:
                continue
        return removed

    def path(self, namespace: str) -> Path:
        digest = hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:32]
        return self.directory / f"{digest}.snapshot"

    def load(
        self, namespace: str, version: Version, signature: Signature, identity: str = ""
    ) -> Snapshot | None:
        """The namespace's snapshot at ``version``, or ``None`` when no usable file holds it
        (a file that cannot be used is logged with the reason)."""
        loaded = self.load_sized(namespace, version, signature, identity)
        return None if loaded is None else loaded[0]

    def load_sized(
        self,
        namespace: str,
        version: Version | None,
        signature: Signature,
        identity: str | None = "",
    ) -> Loaded | None:
        """:meth:`load`, with the bytes the loaded snapshot holds on to (its file's data).

        ``version`` or ``identity`` ``None``: a file of any version or store identity is
        loaded, and :class:`Loaded` says which it holds (for a load that runs while the
        store is asked its version: the caller then compares)."""
        path = self.path(namespace)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:  # a symbolic link (ELOOP), no permission, ...
            log.warning("refusing the snapshot file %s, rebuilding: %s", path, exc)
            return None
        try:
            with os.fdopen(fd, "rb") as file:
                size = self._check_file(file)
                with np.load(file, allow_pickle=False) as data:
                    header = json.loads(bytes(data["header"]))
                    expected = _header(namespace, version or frozenset(), signature, identity or "")
                    if version is None:
                        del expected["version"]
                    if identity is None:
                        del expected["store"]
                    if not isinstance(header, dict):
                        raise RefusedFileError("its header is not an object")
                    for bound in ("namespace", "store"):  # never expected: a copied file
                        if bound in expected and header.get(bound) != expected[bound]:
                            raise RefusedFileError(f"it is bound to another {bound}")
                    if any(header.get(k) != v for k, v in expected.items()):
                        return None  # another version or settings: expected, not logged
                    held = frozenset((str(w), int(n)) for w, n in header["version"])
                    bound_to = str(header.get("store", ""))
                    tree_bytes = bytes(data["tree"])
                raw = _mapped(file, "data.npy", size)
            # the header's digest covers the tree and every block's digest; the blocks of
            # what a load reads whole are verified now (on both cores: hashlib lets go of the
            # GIL), the rest when a recall reads them (:class:`Blocks`)
            blocks = bytes.fromhex(str(header.get("blocks", "")))
            self._check_digest(header, _digest(tree_bytes, blocks))
            verifier = Blocks(raw, blocks)
            tree = json.loads(tree_bytes)
            snap = _Decoder(unpack(tree["arrays"], raw)).decode(tree["root"])
            if not isinstance(snap, Snapshot):
                raise TypeError(f"the file holds a {type(snap).__name__}, not a snapshot")
            check(snap, signature.dimension)
            verifier.verify_now(verifier.eager(snap.attach(verifier)))
        except Exception as exc:  # a damaged or hostile file is a cache miss, never an error
            log.warning("refusing the snapshot file %s, rebuilding: %s", path, exc)
            return None
        return Loaded(snap, size, held, bound_to)

    def _check_file(self, file: Any) -> int:
        """The size of an open file that may be read: a regular file within ``max_bytes``
        whose members are stored uncompressed (a small file cannot inflate)."""
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise RefusedFileError("not a regular file")
        if info.st_size > self.max_bytes:
            raise RefusedFileError(f"{info.st_size} bytes, more than the {self.max_bytes} allowed")
        with zipfile.ZipFile(file) as archive:
            for member in archive.infolist():
                if member.compress_type != zipfile.ZIP_STORED or (
                    member.file_size != member.compress_size
                ):
                    raise RefusedFileError(f"member {member.filename!r} is compressed")
        file.seek(0)
        return int(info.st_size)

    def _check_digest(self, header: dict[str, Any], digest: str) -> None:
        if not hmac.compare_digest(str(header.get("digest", "")), digest):
            raise RefusedFileError("its contents do not match the digest in its header")
        if self._key is not None:
            mac = _mac(self._key, header)
            if not hmac.compare_digest(str(header.get("mac", "")), mac):
                raise RefusedFileError("its HMAC does not match this deployment's key")

    def save(
        self,
        namespace: str,
        snap: Snapshot,
        version: Version,
        signature: Signature,
        identity: str = "",
    ) -> bool:
        """Write the snapshot (whole, then renamed into place); False when it cannot be."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        except OSError as exc:
            log.warning("cannot write snapshot files into %s: %s", self.directory, exc)
            return False
        try:
            encoder = _Encoder()
            tree = encoder.encode(snap)
            table, data = pack(encoder.arrays)
            tree_array = _bytes({"arrays": table, "root": tree})
            header = _header(namespace, version, signature, identity)
            blocks = _block_digests(data)
            header["blocks"] = blocks.hex()
            header["digest"] = _digest(tree_array.tobytes(), blocks)
            if self._key is not None:
                header["mac"] = _mac(self._key, header)
            with os.fdopen(fd, "wb") as file:
                np.savez(file, header=_bytes(header), tree=tree_array, data=data)
            os.replace(tmp, self.path(namespace))
            return True
        except Exception as exc:  # a full disk must not fail the recall that built it
            log.warning("cannot write the snapshot file of %r: %s", namespace, exc)
            Path(tmp).unlink(missing_ok=True)
            return False

    def remove(self, namespace: str) -> None:
        """Forget the namespace's file (after a drop)."""
        self.path(namespace).unlink(missing_ok=True)


def _mapped(file: Any, member: str, size: int) -> np.ndarray:
    """The byte array stored as ``member`` of the open npz ``file`` (``size`` bytes, members
    stored uncompressed, as :meth:`SnapshotFiles._check_file` made sure), mapped read-only
    from the file instead of copied out of it: the OS reads what is touched, and workers on
    one machine share the pages. Anything but a one-dimensional byte array lying inside the
    member raises :class:`RefusedFileError`."""
    with zipfile.ZipFile(file) as archive:
        info = archive.getinfo(member)
    file.seek(info.header_offset)
    local = file.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise RefusedFileError(f"member {member!r} has no local header")
    name_length, extra_length = struct.unpack("<HH", local[26:30])
    start = info.header_offset + 30 + name_length + extra_length
    file.seek(start)
    version = np.lib.format.read_magic(file)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(file)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(file)
    else:
        raise RefusedFileError(f"member {member!r} is an npy file of version {version}")
    offset = file.tell()
    if dtype != np.uint8 or len(shape) != 1 or fortran:
        raise RefusedFileError(f"member {member!r} is not a byte array")
    if offset + shape[0] > min(size, start + info.compress_size):
        raise RefusedFileError(f"member {member!r} runs past its end")
    if not shape[0]:
        return np.zeros(0, dtype=np.uint8)
    return np.memmap(file, dtype=np.uint8, mode="r", offset=offset, shape=shape)


def _header(
    namespace: str, version: Version, signature: Signature, identity: str
) -> dict[str, Any]:
    return {
        "namespace": namespace,
        "store": identity,
        "version": [list(v) for v in sorted(version)],
        "signature": asdict(signature),
    }


def _digest(tree: bytes, blocks: bytes) -> str:
    """The header's digest: SHA-256 over the tree and the data's block digests."""
    digest = hashlib.sha256(tree)
    digest.update(blocks)
    return digest.hexdigest()


def _block_digests(data: np.ndarray) -> bytes:
    """The SHA-256 of each :data:`BLOCK_BYTES` of ``data``, concatenated."""
    view = np.ascontiguousarray(data).view(np.uint8)
    return b"".join(
        hashlib.sha256(view[i : i + BLOCK_BYTES].data).digest()
        for i in range(0, len(view), BLOCK_BYTES)
    )


class Blocks:
    """A loaded file's data and its blocks' digests: verifies a piece of the data before it
    is read (a :data:`~ramem_core.index.shared.Check`), each block once.

    A load verifies the blocks of everything it reads whole (:meth:`eager`,
    :meth:`verify_now`); the structures read a piece at a time (the units' contents and
    metadata, posting lists, documents' counts) call this with each piece they read, and a
    piece whose block does not match raises :class:`~ramem_core.index.snapshot.DamagedUnitError`:
    the recall that read it is served again from a snapshot rebuilt from the store
    (:meth:`~ramem_core.index.freshness.Freshness.read`). A block is verified from the mapped
    file, which is replaced by renaming, never rewritten in place, so what was verified stays
    so.
    """

    def __init__(self, data: np.ndarray, digests: bytes) -> None:
        count = -(-len(data) // BLOCK_BYTES)
        if len(digests) != 32 * count:
            raise RefusedFileError("its block digests do not cover its data")
        self._data = data
        self._digests = digests
        self._done = np.zeros(count, dtype=bool)
        self._address = int(data.ctypes.data) if len(data) else 0

    def __call__(self, piece: np.ndarray) -> None:
        if not piece.nbytes:
            return
        start = int(piece.ctypes.data) - self._address
        end = start + int(piece.nbytes)
        if start < 0 or end > len(self._data) or not piece.flags.c_contiguous:
            raise DamagedUnitError("a piece read from a snapshot file lies outside its data")
        for block in range(start // BLOCK_BYTES, (end - 1) // BLOCK_BYTES + 1):
            if not self._done[block]:
                self._verify(block)

    def _verify(self, block: int) -> None:
        piece = self._data[block * BLOCK_BYTES : (block + 1) * BLOCK_BYTES]
        expected = self._digests[32 * block : 32 * block + 32]
        if not hmac.compare_digest(hashlib.sha256(piece.data).digest(), expected):
            msg = f"its contents do not match the digest in its header (data block {block})"
            raise DamagedUnitError(msg)
        self._done[block] = True

    def eager(self, lazy: list[np.ndarray]) -> list[int]:
        """The blocks not wholly inside the ``lazy`` arrays (views of the data): what a load
        must verify."""
        inside = np.zeros(len(self._done), dtype=bool)
        for array in lazy:
            if not array.nbytes:
                continue
            start = int(array.ctypes.data) - self._address
            end = min(start + int(array.nbytes), len(self._data))
            if start < 0 or end <= start:
                continue  # not of this file's data: nothing of it is skipped
            first = -(-start // BLOCK_BYTES)
            last = end // BLOCK_BYTES if end < len(self._data) else len(self._done)
            inside[first:last] = True
        return [int(b) for b in np.flatnonzero(~inside)]

    def verify_now(self, blocks: list[int], threads: int = 2) -> None:
        """Verify ``blocks`` on ``threads`` threads (hashlib lets go of the GIL); raises
        :class:`RefusedFileError` naming the first block that does not match."""
        parts = [blocks[i::threads] for i in range(threads)]
        failed: list[BaseException] = []

        def run(part: list[int]) -> None:
            try:
                for block in part:
                    self._verify(block)
            except BaseException as exc:  # any failure refuses the file
                failed.append(exc)

        workers = [threading.Thread(target=run, args=(p,)) for p in parts[1:] if p]
        for worker in workers:
            worker.start()
        run(parts[0])
        for worker in workers:
            worker.join()
        if failed:
            raise RefusedFileError(str(failed[0]))

    def verify_all(self) -> None:
        """Verify every block not verified yet (raises as :meth:`__call__`)."""
        for block in np.flatnonzero(~self._done).tolist():
            self._verify(block)


def _mac(key: bytes, header: dict[str, Any]) -> str:
    """The HMAC-SHA256 of everything in ``header`` but the MAC (which covers the digest)."""
    signed = json.dumps({k: v for k, v in header.items() if k != "mac"}, sort_keys=True)
    return hmac.new(key, signed.encode("utf-8"), hashlib.sha256).hexdigest()


def _bytes(tree: Any) -> np.ndarray:
    return np.frombuffer(json.dumps(tree, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)


# --------------------------------------------------------------------------- the format

CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        Snapshot,
        StoredUnits,
        MemoryColumns,
        EpisodicIndex,
        EpisodicKeys,
        LexicalIndex,
        FrozenDocs,
        TimeSpan,
    )
}
"""The only classes a snapshot file may hold objects of (rebuilt from their states)."""

ENUMS: dict[str, type[Enum]] = {"Granularity": Granularity}

_DTYPES = {"b", "i", "u", "f", "U"}  # bool, integers, floats, unicode: never objects
_PLAIN = (str, int, float, bool)
_TEXTS = 64  # lists of at least this many strings are stored as two arrays


def _counts(value: Any) -> bool:
    """True for a term-count dict: string keys, number values."""
    return type(value) is dict and all(
        type(k) is str and type(v) in (int, float) for k, v in value.items()
    )


class _Encoder:
    """A snapshot as a JSON tree plus the arrays it refers to (shared arrays stored once)."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self._seen: dict[int, int] = {}

    def encode(self, value: Any) -> Any:
        kind = type(value)
        if value is None or kind in (bool, int, float, str):
            return value
        if kind is np.ndarray:
            if value.dtype.kind not in _DTYPES:
                raise TypeError(f"cannot store an array of {value.dtype}")
            if id(value) not in self._seen:
                self._seen[id(value)] = len(self.arrays)
                self.arrays.append(value)
            return {"a": self._seen[id(value)]}
        if isinstance(value, np.generic):
            return self.encode(value.item())
        if isinstance(value, Enum):
            return {"e": kind.__name__, "v": value.value}
        if kind is datetime:
            return {"dt": value.isoformat()}
        if kind is Texts:
            blob, offsets = value.arrays
            if value.check is not None:  # a loaded file's: never copy damage into a new file
                value.check(blob)
            self.arrays += [blob, offsets]
            return {"X": [len(self.arrays) - 2, len(self.arrays) - 1]}
        if kind is list:
            if len(value) >= _TEXTS and all(type(v) is str for v in value):
                return self._texts(value)
            if len(value) >= _TEXTS and all(_counts(v) for v in value):
                return self._counts(value)
            return {"l": [self.encode(v) for v in value]}
        if kind is tuple:
            return {"t": [self.encode(v) for v in value]}
        if kind is frozenset:
            return {"f": [self.encode(v) for v in value]}
        if isinstance(value, dict):
            if all(type(k) is str for k in value):  # most of them: a JSON object
                return {"m": {k: self.encode(v) for k, v in value.items()}}
            return {"d": [[self.encode(k), self.encode(v)] for k, v in value.items()]}
        if CLASSES.get(kind.__name__) is kind:
            return {"o": kind.__name__, "s": self.encode(value.__getstate__())}
        raise TypeError(f"a snapshot file cannot hold a {kind.__name__}")

    def _counts(self, counts: list[dict[str, float]]) -> dict[str, Any]:
        """A long list of term-count dicts (one per memory) as columns: vocabulary, offsets,
        term ids, values."""
        vocabulary: dict[str, int] = {}
        ids: list[int] = []
        values: list[float] = []
        offsets = [0]
        for entry in counts:
            for term, value in entry.items():
                ids.append(vocabulary.setdefault(term, len(vocabulary)))
                values.append(value)
            offsets.append(len(ids))
        start = len(self.arrays)
        self.arrays += [
            np.asarray(offsets, dtype=np.int64),
            np.asarray(ids, dtype=np.int64),
            np.asarray(values, dtype=np.float64),
        ]
        return {"c": [self.encode(list(vocabulary)), start, start + 1, start + 2]}

    def _texts(self, texts: list[str]) -> dict[str, int]:
        """A long list of strings as the two arrays of :class:`Texts` (UTF-8 bytes, byte
        offsets), decoded whole at load (:meth:`Texts.all`: one ``bytes.decode`` and slices
        instead of a JSON string each)."""
        self.arrays += list(Texts.of(texts).arrays)
        return {"x": len(self.arrays) - 2, "o": len(self.arrays) - 1}


class _Decoder:
    """The inverse of :class:`_Encoder`, accepting nothing else."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        for name, array in arrays.items():
            if array.dtype.kind not in _DTYPES:
                raise TypeError(f"array {name} holds {array.dtype}")
        self.arrays = arrays

    def decode(self, node: Any) -> Any:
        if node is None or type(node) in (bool, int, float, str):
            return node
        if not isinstance(node, dict) or len(node) not in (1, 2):
            raise TypeError(f"unexpected node {str(node)[:80]}")
        if "a" in node:
            return self.arrays[f"a{int(node['a'])}"]
        if "c" in node:
            words, first, ids_at, values_at = node["c"]
            vocabulary = self.decode(words)
            offsets = self.arrays[f"a{int(first)}"].tolist()
            ids = self.arrays[f"a{int(ids_at)}"]
            if len(ids) and (ids.min() < 0 or ids.max() >= len(vocabulary)):
                raise ValueError("term ids outside the vocabulary")
            if offsets[0] != 0 or offsets[-1] != len(ids) or sorted(offsets) != offsets:
                raise ValueError("count offsets do not cut the terms")
            terms = [vocabulary[i] for i in ids.tolist()]
            values = self.arrays[f"a{int(values_at)}"].tolist()
            if len(values) != len(terms):
                raise ValueError("count values and terms differ in length")
            return [
                dict(zip(terms[a:b], values[a:b], strict=True))
                for a, b in itertools.pairwise(offsets)
            ]
        if "x" in node:  # a list of strings, read whole
            return self._texts(node["x"], node["o"]).all()
        if "X" in node:  # the units' text columns, read a string at a time
            return self._texts(*node["X"])
        if "l" in node:
            return [v if type(v) in _PLAIN else self.decode(v) for v in node["l"]]
        if "t" in node:
            return tuple(v if type(v) in _PLAIN else self.decode(v) for v in node["t"])
        if "m" in node:
            entries = node["m"]
            if not isinstance(entries, dict):
                raise TypeError("a mapping node must hold an object")
            return {k: v if type(v) in _PLAIN else self.decode(v) for k, v in entries.items()}
        if "f" in node:
            return frozenset(self.decode(v) for v in node["f"])
        if "d" in node:
            return {self.decode(k): self.decode(v) for k, v in node["d"]}
        if "dt" in node:
            return datetime.fromisoformat(str(node["dt"]))
        if "e" in node:
            return ENUMS[str(node["e"])](node["v"])
        if "o" in node:
            cls = CLASSES[str(node["o"])]
            obj: Any = object.__new__(cls)
            obj.__setstate__(self.decode(node["s"]))
            return obj
        raise TypeError(f"unexpected node {str(node)[:80]}")

    def _texts(self, blob_at: Any, offsets_at: Any) -> Texts:
        texts = Texts(self.arrays[f"a{int(blob_at)}"], self.arrays[f"a{int(offsets_at)}"])
        if not texts.consistent():
            raise ValueError("text offsets do not cut their bytes")
        return texts


def check(snap: Snapshot, dimension: int) -> None:
    """Raise ``ValueError`` naming the first inconsistency of a loaded snapshot (each class
    validates its own arrays: :meth:`Snapshot.validate`)."""
    snap.validate(dimension)


def pack(arrays: list[np.ndarray]) -> tuple[list[list[Any]], np.ndarray]:
    """``arrays`` as one byte array (each at an offset aligned to 8) and a table of
    ``[dtype, shape, offset]``: a file of one member reads in one go."""
    table: list[list[Any]] = []
    chunks: list[bytes] = []
    offset = 0
    for array in arrays:
        raw = np.ascontiguousarray(array).tobytes()
        table.append([array.dtype.str, list(array.shape), offset])
        padded = raw + b"\0" * (-len(raw) % 8)
        chunks.append(padded)
        offset += len(padded)
    return table, np.frombuffer(b"".join(chunks), dtype=np.uint8).copy()


def unpack(table: Any, data: np.ndarray) -> dict[str, np.ndarray]:
    """The arrays of :func:`pack` (views of ``data``), named ``a0``, ``a1``, ...; a table
    that describes anything but plain arrays inside ``data`` raises."""
    if not isinstance(table, list) or data.dtype != np.uint8 or data.ndim != 1:
        raise TypeError("not a packed array table")
    arrays = {}
    for i, (dtype_text, shape, offset) in enumerate(table):
        dtype = np.dtype(str(dtype_text))
        if dtype.kind not in _DTYPES or dtype.hasobject:
            raise TypeError(f"array {i} would hold {dtype}")
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape) or int(offset) < 0:
            raise ValueError(f"array {i} has a negative shape or offset")
        count = int(np.prod(shape, dtype=np.int64))
        end = int(offset) + count * dtype.itemsize
        if end > len(data):
            raise ValueError(f"array {i} runs past the file's data")
        arrays[f"a{i}"] = np.frombuffer(data, dtype, count, int(offset)).reshape(shape)
    return arrays


def through_file(value: Any) -> Any:
    """``value`` encoded as a snapshot file encodes it and decoded again (in memory): what a
    worker loading the file would get."""
    encoder = _Encoder()
    tree = json.loads(json.dumps(encoder.encode(value)))
    table, data = pack(encoder.arrays)
    return _Decoder(unpack(json.loads(json.dumps(table)), data)).decode(tree)
