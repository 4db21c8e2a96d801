"""The snapshots of one memory's namespaces, and the one owner of their freshness.

Every read of a namespace and every write to it goes through :class:`Freshness`: a write
is the store's write, then the cached snapshot updated in place (write-through); a read
returns a snapshot that holds every write this cache made and, within ``refresh_seconds``,
every write of anybody else. Each snapshot carries the store's write version it holds, so the
cache knows exactly which writes it has: a snapshot is only ever replaced by a newer one, this
cache's own writes are folded in only onto the snapshot that holds every earlier write, and
anything else reloads from the store, which stays the single source of truth.

Snapshot files (:mod:`.files`) are loaded, written and removed here too: a file is used only
when it holds the current write version, the same index settings and as many memories as the
store.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from ramem_core.errors import InvalidInputError
from ramem_core.index.episodic import EpisodicKeys
from ramem_core.index.files import Loaded, Signature, SnapshotFiles
from ramem_core.index.snapshot import DamagedUnitError, Snapshot
from ramem_core.protocols import Store
from ramem_core.types import MemoryUnit, Version, newer_or_equal

log = logging.getLogger(__name__)

R = TypeVar("R")

DEFAULT_CACHE_BYTES = 1 << 30
"""1 GiB of snapshots per worker: about 80,000 memories of the default embedder at
:data:`~ramem_core.index.snapshot.PER_MEMORY_BYTES` each (e.g. 130 users of 600 memories)."""


@dataclass(slots=True)
class _Cached:
    checked: float  # when the version was last compared with the store's (monotonic clock)
    snap: Snapshot
    version: Version  # the store's version whose every write the snapshot holds
    saved: bool = False  # a snapshot file holds (or is being written with) this snapshot
    held: int = 0  # bytes it holds beyond its estimate (a loaded file's data)

    @property
    def nbytes(self) -> int:
        return max(self.snap.nbytes, self.held)


@functools.cache
def _empty_snapshot() -> Snapshot:
    """What a namespace nothing was stored in reads as (shared: a snapshot never changes)."""
    return Snapshot([], None)


def _own(version: Version, writer: str) -> int:
    return dict(version).get(writer, 0)


def _others(version: Version, writer: str) -> Version:
    return frozenset(entry for entry in version if entry[0] != writer)


def _written(store: Store, namespace: str) -> int:
    """The store's :meth:`Store.written`; for a store made before it, read off the version
    (one round trip more)."""
    written = getattr(store, "written", None)
    if callable(written):
        return int(written(namespace))
    return _own(store.version(namespace), store.writer)


def _counted(store: Store, namespace: str, version: Version) -> int:
    """The store's :meth:`Store.counted`; for a store made before it, :meth:`Store.count`."""
    counted = getattr(store, "counted", None)
    if callable(counted):
        return int(counted(namespace, version))
    return store.count(namespace)


class _FileLoad:
    """A namespace's snapshot file loaded on a thread of its own (any version it holds:
    :meth:`Freshness._from_file` compares)."""

    def __init__(self, owner: Freshness, namespace: str) -> None:
        self._loaded: Loaded | None = None
        self._thread: threading.Thread | None = None
        files = owner.files
        if files is None or not files.path(namespace).exists():
            return
        signature = owner._signature()

        def load() -> None:
            self._loaded = files.load_sized(namespace, None, signature, None)

        self._thread = threading.Thread(target=load, name="ramem-file-load", daemon=True)
        self._thread.start()

    def result(self) -> Loaded | None:
        if self._thread is not None:
            self._thread.join()
        return self._loaded


def _restored(snap: Snapshot, unit: MemoryUnit, vector: npt.NDArray[np.float32]) -> bool:
    """True when ``snap`` holds ``unit`` with the same context and vector: a write of it
    changed at most its payload (a moved expiry), which :meth:`Snapshot.updated` folds in
    without building the index again (an edited content it refuses: rebuilt then)."""
    row = snap.position.get(unit.id)
    if row is None or snap.vectors is None:
        return False
    return snap.units[row].context == unit.context and bool(
        np.array_equal(snap.vectors[row], vector)
    )


class Freshness:
    """Snapshots of a store's namespaces, kept fresh, within ``cache_bytes`` (most recently
    used namespaces.

    Args:
        store: the source of truth.
        keys: the episodic keys the snapshots' indexes build.
        files: snapshot files to load from and save to (a local directory's), or ``None``.
        refresh_seconds: how long a snapshot is served before the store's write version is
            compared again (another writer's write is seen within this time).
        cache_bytes: how much memory the snapshots may take (:attr:`Snapshot.nbytes`); the
            least recently used are dropped beyond it (the latest one is always kept).
    """

    def __init__(
        self,
        store: Store,
        keys: EpisodicKeys,
        *,
        files: SnapshotFiles | None = None,
        refresh_seconds: float = 1.0,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        if isinstance(cache_bytes, bool) or not isinstance(cache_bytes, int) or cache_bytes < 1:
            msg = f"cache_bytes must be a positive integer, got {cache_bytes!r}"
            raise InvalidInputError(msg)
        if (
            isinstance(refresh_seconds, bool)
            or not isinstance(refresh_seconds, int | float)
            or not 0 <= refresh_seconds < float("inf")
        ):
            msg = (
                f"refresh_seconds must be a finite number of seconds >= 0, got {refresh_seconds!r}"
            )
            raise InvalidInputError(msg)
        self.store = store
        self.keys = keys
        self.files = files
        self.refresh_seconds = refresh_seconds
        self.cache_bytes = cache_bytes
        self._snapshots: OrderedDict[str, _Cached] = OrderedDict()
        self._written: dict[str, int] = {}  # namespace -> this writer's last sequence there
        self._forgotten = 0  # counts invalidations: a load that straddles one is not cached
        self._lock = threading.Lock()
        self._file_writers: list[threading.Thread] = []

    @property
    def cached(self) -> list[str]:
        """The namespaces whose snapshots are held, least recently used first."""
        with self._lock:
            return list(self._snapshots)

    # ------------------------------------------------------------------ reads

    def get(self, namespace: str, *, fresh: bool = False) -> Snapshot:
        """The namespace's snapshot: every write of this cache, and every other writer's
        write older than ``refresh_seconds`` (``fresh``: every write so far, as before a live
        turn is placed after another writer's)."""
        now = time.monotonic()
        writer = self.store.writer
        with self._lock:
            forgotten = self._forgotten
            cached = self._snapshots.get(namespace)
            if cached is not None:
                self._snapshots.move_to_end(namespace)
                complete = _own(cached.version, writer) >= self._written.get(namespace, 0)
                if complete and not fresh and now - cached.checked < self.refresh_seconds:
                    return cached.snap
        # a first read loads the namespace's file while the store is asked its version (the
        # two wait on different things: a cold store's first answer, the file's decode)
        loading = _FileLoad(self, namespace) if cached is None else None
        version = self.store.version(namespace)  # first the version, then the data
        if cached is not None and version == cached.version:
            with self._lock:
                cached.checked = now
            return cached.snap
        loaded = self._from_file(namespace, version, loading)
        if loaded is not None:
            entry = _Cached(now, loaded[0], version, saved=True, held=loaded[1])
        else:
            units, vectors = self.store.load(namespace)
            entry = _Cached(now, Snapshot(units, vectors, self.keys), version)
            if self.files is not None and len(entry.snap) >= self.files.min_memories:
                self._save_in_background(namespace, entry.snap, version)
                entry.saved = True
        with self._lock:
            # a delete (or a failed write) since this load began: the load may hold what it
            # removed, so it serves this read (which began before) but is never cached
            if self._forgotten == forgotten:
                self._remember(namespace, entry)
        return entry.snap

    def prepare(self, namespace: str, written: int) -> None:
        """After a bulk write of ``written`` memories (an import, a conversation file): when
        snapshot files are kept for that many, and no snapshot of the namespace is held, build
        it now and write its file, so that the first recall, in this process or the next, reads
        the file instead of rebuilding the snapshot from the store (seconds per 10k memories)."""
        if self.files is None or written < max(self.files.min_memories, 1):
            return
        with self._lock:
            if namespace in self._snapshots:
                return  # the write was folded into it
        try:
            self.get(namespace)
        except Exception as exc:  # the write is stored: a failed build is the next read's
            log.warning("could not build the snapshot of %r after a write: %s", namespace, exc)

    def read(self, namespace: str, read: Callable[[Snapshot], R], *, fresh: bool = False) -> R:
        """``read`` of the namespace's snapshot: an empty one where nothing was ever stored
        (a new user's reads are empty, and a read never creates a namespace). A snapshot whose
        units do not decode (a damaged or hostile file) is refused, its file removed, and
        ``read`` runs again on a snapshot rebuilt from the store."""

        def snapshot() -> Snapshot:
            if not self.store.has_namespace(namespace):
                return _empty_snapshot()
            return self.get(namespace, fresh=fresh)

        for _ in range(2):  # a load that began before the file was removed may serve it once
            try:
                return read(snapshot())
            except DamagedUnitError as exc:
                self.refuse(namespace, exc)
        return read(snapshot())

    def refuse(self, namespace: str, reason: object) -> None:
        """Forget a snapshot found damaged while it was read (a unit of a snapshot file that
        does not decode) and remove its file: the next read rebuilds from the store."""
        log.warning("refusing the snapshot of %r, rebuilding from the store: %s", namespace, reason)
        if self.files is not None:  # first: a load that opens it after the forget is not kept
            self.files.remove(namespace)
        self.invalidate(namespace)

    def _from_file(
        self, namespace: str, version: Version, loading: _FileLoad | None = None
    ) -> Loaded | None:
        if self.files is None or not self.files.path(namespace).exists():
            if loading is not None:
                loading.result()
            return None
        # counted right after the version was read, before the file's load is used: a writer
        # that compacts version records meanwhile changes what the version just read leaves out
        stored = _counted(self.store, namespace, version)
        if loading is not None and self.store.version(namespace) != version:
            # a compaction between the two reads (the file's load overlaps them): the count
            # may leave out a memory; the snapshot is built from the store instead
            loading.result()
            return None
        identity = self.store.identity(namespace)
        if loading is None:
            loaded = self.files.load_sized(namespace, version, self._signature(), identity)
        else:
            loaded = loading.result()
            if loaded is not None and loaded.identity != identity:
                log.warning("refusing the snapshot file of %r: bound to another store", namespace)
                return None
        if loaded is None or loaded.version != version:
            return None  # another version: expected, not logged
        snap = loaded[0]
        if len(snap) != stored:
            # memories no version announces (written before every Chroma call carried its
            # version record, or through Chroma itself), or memories gone without a new
            # version (a delete killed before announcing itself): the file is not that store
            log.warning(
                "ignoring the snapshot file of %r: it holds %d memories, the store %d",
                namespace,
                len(snap),
                stored,
            )
            return None
        return loaded

    def _remember(self, namespace: str, entry: _Cached) -> None:
        """Cache ``entry`` unless a newer snapshot is held; drop the least recently used
        beyond the bound. (Call with the lock held.)"""
        held = self._snapshots.get(namespace)
        if held is not None and held.version != entry.version:
            if newer_or_equal(held.version, entry.version):
                return  # a slow load finished after a newer snapshot was cached: keep that
            if not newer_or_equal(entry.version, held.version):
                del self._snapshots[namespace]  # each holds writes the other lacks
                return
        self._snapshots[namespace] = entry
        self._snapshots.move_to_end(namespace)
        held_bytes = sum(c.nbytes for c in self._snapshots.values())
        while held_bytes > self.cache_bytes and len(self._snapshots) > 1:
            _, dropped = self._snapshots.popitem(last=False)
            held_bytes -= dropped.nbytes

    @property
    def nbytes(self) -> int:
        """The memory the held snapshots take (:attr:`Snapshot.nbytes`)."""
        with self._lock:
            return sum(c.nbytes for c in self._snapshots.values())

    # ------------------------------------------------------------------ writes

    def write(
        self,
        namespace: str,
        units: Sequence[MemoryUnit],
        vectors: npt.NDArray[np.float32],
        *,
        new_ids: bool = False,
        read_before: bool = False,
    ) -> int:
        """Store ``units`` with their ``vectors``, then fold them into the cached snapshot;
        returns how many were new (see :meth:`Store.upsert`). A failed write drops the
        cached snapshot: the store may hold some of it, and the next read reloads.

        ``read_before``: the caller read the namespace fresh, under the write lock, just
        before (a live turn), so the other writers' part of the version read then stands for
        this write's and is not read again. A foreign write in the milliseconds between is
        seen as any other foreign write: by the next fresh read, or after ``refresh_seconds``.
        """
        try:
            new = self.store.upsert(namespace, units, vectors, new_ids=new_ids)
        except BaseException:
            self.invalidate(namespace)
            raise
        if units:
            self._absorb(namespace, units, vectors, read_before)
        return new

    def _absorb(
        self,
        namespace: str,
        units: Sequence[MemoryUnit],
        vectors: npt.NDArray[np.float32],
        read_before: bool,
    ) -> None:
        """Fold what this cache just wrote into the cached snapshot, if that snapshot holds
        every earlier write (else drop it: the next read reloads).

        New units and new contexts of known units (a live session growing) update only the
        sessions they touch (:meth:`Snapshot.updated`); other changes rebuild the in-memory
        index from the snapshot's units (never a reload from the store)."""
        try:
            own = _written(self.store, namespace)  # this write's number: no round trip
            with self._lock:
                self._written[namespace] = max(self._written.get(namespace, 0), own)
            stored = None if read_before else self.store.version(namespace)
            self._fold(namespace, units, vectors, own, stored)
        except DamagedUnitError as exc:  # the write is stored: the next read rebuilds
            self.refuse(namespace, exc)
        except BaseException:  # the write is stored: never leave a snapshot without it
            self.invalidate(namespace)
            raise

    def _fold(
        self,
        namespace: str,
        units: Sequence[MemoryUnit],
        vectors: npt.NDArray[np.float32],
        own: int,
        stored: Version | None,
    ) -> None:
        """:meth:`_absorb`'s fold of a write numbered ``own`` (``stored``: the version read
        after it, or ``None`` when the fresh read before it stands for the others')."""
        writer = self.store.writer
        with self._lock:
            cached = self._snapshots.get(namespace)
        if cached is None:
            return
        others = _others(cached.version if stored is None else stored, writer)
        if others != _others(cached.version, writer) or _own(cached.version, writer) != own - 1:
            self.invalidate(namespace)  # it misses a write (another's, or a lost one of ours)
            return
        version = others | {(writer, own)}
        snap = cached.snap
        changed = {u.id: u for u in units}
        written = dict(zip((u.id for u in units), vectors, strict=True))
        # a unit written back as it is held (its payload aside) brings no new vector
        fresh = {i: v for i, v in written.items() if not _restored(snap, changed[i], v)}
        evolved = snap.updated(list(changed.values()), fresh)  # appends: only touched sessions
        if evolved is None:
            if snap.vectors is None:
                self.invalidate(namespace)
                return
            keep = [i for i, u in enumerate(snap.units) if u.id not in changed]
            added = list(changed.values())
            evolved = Snapshot(
                [snap.units[i] for i in keep] + added,
                np.vstack([snap.vectors[keep], np.asarray([written[u.id] for u in added])]),
                self.keys,
            )
        with self._lock:
            self._remember(namespace, _Cached(cached.checked, evolved, version, held=cached.held))

    def delete(
        self,
        namespace: str,
        *,
        ids: Sequence[str] | None = None,
        conversation_id: str | None = None,
        session_id: str | None = None,
    ) -> int:
        """Delete the memories that match every selection given; returns the count."""
        try:
            return self.store.delete(
                namespace, ids=ids, conversation_id=conversation_id, session_id=session_id
            )
        finally:
            self.invalidate(namespace)

    def drop(self, namespace: str) -> None:
        """Delete a namespace, its snapshot and its snapshot file."""
        try:
            self.store.drop(namespace)
        finally:
            self.invalidate(namespace)
            if self.files is not None:
                self.files.remove(namespace)

    def invalidate(self, namespace: str | None = None) -> None:
        """Forget the snapshot of ``namespace`` (of every namespace when ``None``)."""
        with self._lock:
            self._forgotten += 1
            if namespace is None:
                self._snapshots.clear()
            else:
                self._snapshots.pop(namespace, None)

    def reindex(self, namespace: str) -> tuple[int, bool]:
        """Build the namespace's snapshot from the store, whatever its file holds, and write
        its file (``ramem reindex``: after a file was lost, or to have the next process read
        one); returns how many memories it holds and whether a file was written."""
        if self.files is not None:
            self.files.remove(namespace)
        self.invalidate(namespace)
        with self._lock:
            forgotten = self._forgotten
        version = self.store.version(namespace)
        units, vectors = self.store.load(namespace)
        entry = _Cached(time.monotonic(), Snapshot(units, vectors, self.keys), version)
        written = False
        if self.files is not None and len(entry.snap):
            identity = self.store.identity(namespace)
            written = self.files.save(namespace, entry.snap, version, self._signature(), identity)
        entry.saved = written
        with self._lock:
            if self._forgotten == forgotten:  # a delete since may be in what was read
                self._remember(namespace, entry)
        return len(entry.snap), written

    # ------------------------------------------------------------------ files

    def _signature(self) -> Signature:
        return Signature(repr(self.keys), self.store.embedder.dimension)

    def _save_in_background(self, namespace: str, snap: Snapshot, version: Version) -> None:
        """Write a built snapshot's file beside the recall that built it (seconds at 100k)."""
        assert self.files is not None
        writer = threading.Thread(
            target=self.files.save,
            args=(namespace, snap, version, self._signature(), self.store.identity(namespace)),
            name=f"ramem-snapshot-file-{namespace}",
        )
        writer.start()
        with self._lock:
            self._file_writers = [w for w in self._file_writers if w.is_alive()] + [writer]

    def persist(self) -> int:
        """Write the snapshot file of every cached snapshot that has none yet (live writes
        since it was loaded), after waiting for the files being written since a build;
        returns how many this call wrote."""
        with self._lock:
            writers, self._file_writers = self._file_writers, []
        for writer in writers:
            writer.join()
        if self.files is None:
            return 0
        with self._lock:
            pending = [(ns, c) for ns, c in self._snapshots.items() if not c.saved and len(c.snap)]
        written = 0
        for namespace, cached in pending:
            identity = self.store.identity(namespace)
            if self.files.save(namespace, cached.snap, cached.version, self._signature(), identity):
                cached.saved = True
                written += 1
        return written

    def close(self) -> None:
        """Persist what is pending (while the store is open) and forget every snapshot."""
        if not self.store.closed:
            self.persist()
        self.invalidate()
