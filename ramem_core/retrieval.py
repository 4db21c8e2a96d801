"""Stage 3 of RaMem: validity-aware retrieval.

Content ranking (always): a dense and a lexical ranking over the memories' *episodic keys*
(:mod:`ramem_core.store.index`: neighbour turns, session date and the session's own rank
reinstate the episode where memories are found), fused by reciprocal rank.

The recall frame only ever adds: when it is grounded, the memories that satisfy it (Chroma
``where`` filters on the episodic metadata, evaluated as the same mask over the snapshot) move
ahead *inside a relevant pool*, the top ``validity_pool`` of the content ranking. Relevant
memories outside the frame keep their order after them, so a wide or wrong window can reorder
the pool but never push a relevant memory out of it, and nothing is dropped. A question that
asks *when* gives memories that say when (an event or mentioned time) a small bonus.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ramem_core.errors import InvalidInputError
from ramem_core.frames import asks_for_time
from ramem_core.protocols import Embedder
from ramem_core.store.chroma import ChromaStore, Version
from ramem_core.store.files import MIN_MEMORIES, Signature
from ramem_core.store.index import CONTENT_KEYS, EpisodicKeys, Scores, ranks
from ramem_core.store.snapshot import Mask, Snapshot
from ramem_core.temporal import describe
from ramem_core.types import (
    Evidence,
    MemoryUnit,
    RecallFrame,
    TimeSpan,
    to_epoch,
)


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Switches of the retrieval stage (the evaluation's ablations are settings of this).

    Attributes:
        keys: the episodic keys memories are found by (:data:`CONTENT_KEYS` for none).
        rrf_k: the reciprocal-rank-fusion constant.
        depth: rows ranked exactly in each list; the rest share the tail rank.
        dense: use dense (embedding) retrieval.
        lexical: use BM25 (and the session documents).
        context_ranking: move frame-consistent memories ahead inside the relevant pool.
        session_context: let a memory's session span stand in for an unknown event time.
        validity_pool: how many of the content ranking's best memories form the relevant
            pool in which frame-consistent ones move ahead. Chosen on LoCoMo dev conv-26/30/41
            and LongMemEval_S dev30 (``benchmarks/tune_retrieval.py``): flat, LoCoMo R@10
            0.789 / 0.787 / 0.779 / 0.779 / 0.776 for 10 / 20 / 30 / 50 / 100 and LongMemEval
            unchanged; 10 and 20 differ by one question, 20 has the better temporal R@10
            (0.944 vs 0.933).
        window_padding: a frame's time windows are widened by this much on each side
            (LongMemEval's reference implementation pads by two days).
        anchor_min_similarity: cosine needed to accept a memory as a relation's anchor event.
        time_weight: when the query asks *when* (:func:`~ramem_core.frames.asks_for_time`),
            memories that say when (an event time or a mentioned time) gain
            ``time_weight / (rrf_k + 1)``; part of the frame (off with ``context_ranking``).
            In LoCoMo conv-26/30/41, 76% of the evidence turns of temporal questions say when,
            against 10% of all turns. 0.5: LoCoMo R@5 0.695 / 0.704 / 0.709 / 0.704 for
            0 / 0.25 / 0.5 / 1 (temporal R@5 0.872 -> 0.933, D@1 0.300 -> 0.290); R@10 flat
            (0.784-0.787); LongMemEval dev30 unchanged.
        window_slots: when the frame has a time window, this many of the window's best
            memories *below* the relevant pool join the frame-consistent ones ahead (the
            filtered search of the paper's stage 3, kept small so that a wide or wrong window
            cannot fill the list). A narrow window ("last Saturday", "the second week of
            November") holds few memories, and its evidence often shares few words with the
            question. Chosen on LoCoMo dev conv-26/30/41 and LongMemEval_S dev30
            (``benchmarks/tune_retrieval.py --only window_slots``): LoCoMo R@5 0.701 / 0.707 /
            0.709 / 0.704 / 0.703 and R@10 0.784 / 0.787 / 0.787 / 0.784 / 0.779 for 0 / 1 /
            2 / 3 / 5 slots, D@1 0.292 -> 0.290; LongMemEval dev30 unchanged. Flat for 1-3;
            5 floods short lists with in-window small talk.
    """

    keys: EpisodicKeys = field(default_factory=EpisodicKeys)
    rrf_k: int = 60
    depth: int = 1000
    dense: bool = True
    lexical: bool = True
    context_ranking: bool = True
    session_context: bool = True
    validity_pool: int = 20
    window_padding: timedelta = timedelta(days=2)
    anchor_min_similarity: float = 0.35
    time_weight: float = 0.5
    window_slots: int = 2

    def __post_init__(self) -> None:
        if not (self.dense or self.lexical):
            msg = "retrieval needs dense or lexical retrieval switched on"
            raise InvalidInputError(msg)
        if self.time_weight < 0:
            msg = f"time_weight must not be negative, got {self.time_weight}"
            raise InvalidInputError(msg)
        if self.validity_pool < 1 or self.depth < 1 or self.rrf_k < 0 or self.window_slots < 0:
            msg = (
                "validity_pool and depth must be positive, rrf_k and window_slots non-negative:"
                f" {self}"
            )
            raise InvalidInputError(msg)
        if self.window_padding < timedelta(0):
            msg = f"window_padding must not be negative, got {self.window_padding}"
            raise InvalidInputError(msg)


def mostly_within(event: TimeSpan, window: TimeSpan) -> bool:
    """True when most of ``event`` lies in ``window``: its middle does, and it is no longer.

    "Last week" is a Monday-to-Sunday week, and "the week before 16 November" is not: an event
    known to the week counts for a week-long window it mostly overlaps. An event known only to
    the month or year does not count for a shorter window. Computed on epoch seconds, as the
    snapshot mask and the Chroma filter (``event_mid``, ``event_length``) do."""
    start, end = to_epoch(event.start), to_epoch(event.end)
    return bool(_mostly_within(start, end, to_epoch(window.start), to_epoch(window.end)))


def _mostly_within(start: Any, end: Any, first: int, last: int) -> Any:
    """:func:`mostly_within` on epoch seconds: ``start``/``end`` are ints or arrays of them."""
    length = end - start
    middle = start + length // 2
    return (middle >= first) & (middle <= last) & (length <= last - first)


@dataclass(frozen=True, slots=True)
class Conditions:
    """The grounded part of a frame, as conditions a memory can satisfy.

    A memory is time-valid for a window when its event time lies mostly inside the window
    (:func:`mostly_within`) or, when its event time is unknown and session context is on, when
    its session span overlaps it.
    """

    windows: tuple[tuple[str, TimeSpan], ...] = ()
    participants: tuple[str, ...] = ()
    session_context: bool = True

    @classmethod
    def of(
        cls,
        frame: RecallFrame,
        session_context: bool = True,
        padding: timedelta = timedelta(0),
    ) -> Conditions:
        """The conditions of ``frame``'s grounded constraints, windows widened by ``padding``."""
        windows = tuple(
            (
                t.text,
                TimeSpan(t.window.start - padding, t.window.end + padding, t.window.granularity),
            )
            for t in frame.grounded_times
            if t.window is not None
        )
        return cls(windows, frame.participants, session_context)

    def __bool__(self) -> bool:
        return bool(self.windows or self.participants)

    def where(self) -> dict[str, Any] | None:
        """The conditions as a Chroma ``where`` filter.

        It selects what :meth:`mask` selects, but for a live session's turns: the store holds
        each turn's span up to its own time (spans are never rewritten), while the mask, which
        recall uses, sees the session's whole span."""
        clauses: list[dict[str, Any]] = []
        if self.windows:
            options: list[dict[str, Any]] = []
            for _, w in self.windows:
                start, end = to_epoch(w.start), to_epoch(w.end)
                options.append(
                    {
                        "$and": [
                            {"has_event": True},
                            {"event_mid": {"$gte": start}},
                            {"event_mid": {"$lte": end}},
                            {"event_length": {"$lte": end - start}},
                        ]
                    }
                )
                if self.session_context:
                    options.append(
                        {
                            "$and": [
                                {"has_event": False},
                                {"has_session": True},
                                {"session_start": {"$lte": end}},
                                {"session_end": {"$gte": start}},
                            ]
                        }
                    )
            clauses.append(_any(options))
        if self.participants:
            clauses.append(_any([{"participants": {"$contains": p}} for p in self.participants]))
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def mask(self, snapshot: Snapshot) -> Mask:
        """The conditions over every memory of ``snapshot`` (the selection of :meth:`where`)."""
        ok = np.ones(len(snapshot), dtype=bool)
        if self.windows:
            timely = np.zeros(len(snapshot), dtype=bool)
            ev, se = snapshot.event, snapshot.session
            for _, w in self.windows:
                start, end = to_epoch(w.start), to_epoch(w.end)
                timely |= ev.known & _mostly_within(ev.start, ev.end, start, end)
                if self.session_context:
                    timely |= ~ev.known & se.known & (se.start <= end) & (se.end >= start)
            ok &= timely
        if self.participants:
            people = np.zeros(len(snapshot), dtype=bool)
            for name in self.participants:
                people |= snapshot.involving(name)
            ok &= people
        return ok

    def satisfied(self, unit: MemoryUnit) -> tuple[str, ...]:
        """Which conditions ``unit`` meets, in words ("why it is valid")."""
        met: list[str] = []
        ctx = unit.context
        for text, w in self.windows:
            if ctx.event_time is not None:
                if mostly_within(ctx.event_time, w):
                    met.append(f"event {describe(ctx.event_time)} within {text!r}")
            elif (
                self.session_context
                and ctx.session_span is not None
                and ctx.session_span.overlaps(w)
            ):
                met.append(f"said {describe(ctx.session_span)}, within {text!r}")
        lowered = {p.lower() for p in ctx.participants}
        met.extend(f"involves {p}" for p in self.participants if p.lower() in lowered)
        return tuple(met)


QUERY_VECTORS = 256
"""Recently embedded query texts kept with their vectors (a question asked again, and a
relation's question embedded with its anchor phrase, cost no second embedding)."""


Key = TypeVar("Key")
Value = TypeVar("Value")

QUERY_COSINES = 8
"""Recent questions' cosines against a snapshot's memories: a relation question's anchor
search computes them, and its retrieval reuses them (one pass over the vectors, not two)."""

ANCHOR_CANDIDATES = 1000
"""A relation's anchor event is sought among the question's most similar memories (and the
phrase's best lexical matches), not in a second pass over every memory (see
:meth:`Retriever.locate`). Not tuned: the dev namespaces (300-700 memories) are below it. With
it set to 100 on LoCoMo dev, R@10 was unchanged (0.774) and 43 anchors were located instead
of 40 (gold evidence in the relation's window for 36 vs 35); at 10, 46 (38)."""


CONTENT_ONLY = RetrievalConfig(keys=CONTENT_KEYS, context_ranking=False)
"""Content-only retrieval (dense + BM25 on each memory's own content, no episodic context):
the baseline RaMem improves on."""


def _put(cache: OrderedDict[Key, Value], key: Key, value: Value, bound: int) -> None:
    """Keep ``value`` as the newest entry of ``cache``; drop the oldest beyond ``bound``."""
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > bound:
        cache.popitem(last=False)


def _any(options: list[dict[str, Any]]) -> dict[str, Any]:
    return options[0] if len(options) == 1 else {"$or": options}


@dataclass(frozen=True, slots=True)
class Ranking:
    """Every memory's fused content score, and the parts it was fused from."""

    fused: Scores
    dense: Scores | None
    lexical: Scores | None

    def top(self, n: int, among: Mask | None = None) -> list[int]:
        """Rows of the ``n`` best memories with a finite score (of those ``among`` selects),
        best first."""
        finite = np.isfinite(self.fused)
        rows = np.flatnonzero(finite if among is None else finite & among)
        n = min(n, len(rows))
        if n <= 0:
            return []
        best = rows[np.argpartition(-self.fused[rows], n - 1)[:n]]
        return [int(r) for r in best[np.argsort(-self.fused[best], kind="stable")]]


@dataclass(slots=True)
class _Cached:
    checked: float  # when the version was last compared with the store's (monotonic clock)
    snap: Snapshot
    version: Version  # the store's version the snapshot holds all writes of
    saved: bool = False  # a snapshot file holds this snapshot


class Retriever:
    """Validity-aware retrieval over a :class:`ChromaStore`.

    Keeps one :class:`Snapshot` per namespace, for at most ``max_snapshots`` namespaces (the
    least recently used is dropped first). Consistency: a snapshot remembers the namespace's
    write version it was built from (:meth:`ChromaStore.version`); at most every
    ``refresh_seconds`` it is compared with the store's, and any write by another writer
    (another worker, process or server client: inserts, edits and deletes alike) makes it
    reload. This process's own writes are folded in at once (:meth:`absorb`). So another
    worker's write is served within ``refresh_seconds``, this process's at once.

    When the store has snapshot files (:attr:`ChromaStore.snapshot_files`, a local directory's
    store), a snapshot is loaded from its file when the file holds the current version, and
    written when it was built from Chroma (at least :data:`MIN_MEMORIES` memories; in a
    thread, beside the recall) and by :meth:`persist` (``RaMem.close``), so a restarted worker
    skips the rebuild.
    """

    def __init__(
        self,
        store: ChromaStore,
        embedder: Embedder,
        config: RetrievalConfig | None = None,
        *,
        refresh_seconds: float = 1.0,
        max_snapshots: int = 16,
    ) -> None:
        if max_snapshots < 1:
            msg = f"max_snapshots must be at least 1, got {max_snapshots}"
            raise InvalidInputError(msg)
        self.store = store
        self.embedder = embedder
        self.config = config or RetrievalConfig()
        self.refresh_seconds = refresh_seconds
        self.max_snapshots = max_snapshots
        self._snapshots: OrderedDict[str, _Cached] = OrderedDict()
        self._lock = threading.Lock()
        self._writers: list[threading.Thread] = []  # snapshot files being written
        self._vectors: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()  # queries
        self._cosines: OrderedDict[tuple[int, str], tuple[weakref.ref[Snapshot], Scores]] = (
            OrderedDict()
        )

    # ------------------------------------------------------------------ snapshots

    def _remember(self, namespace: str, cached: _Cached) -> None:
        """Cache a snapshot as the newest entry; drop the least recently used beyond the
        bound. (Call with the lock held.)"""
        _put(self._snapshots, namespace, cached, self.max_snapshots)

    def invalidate(self, namespace: str | None = None) -> None:
        """Forget the snapshot of ``namespace`` (of every namespace when ``None``)."""
        with self._lock:
            if namespace is None:
                self._snapshots.clear()
            else:
                self._snapshots.pop(namespace, None)

    def absorb(
        self,
        namespace: str,
        units: Sequence[MemoryUnit],
        vectors: Mapping[str, npt.NDArray[np.float32]] | None = None,
    ) -> None:
        """Fold memories this process just wrote into the cached snapshot.

        New units and new contexts of known units (a live session growing) update only the
        sessions they touch (:meth:`Snapshot.updated`); other changes rebuild the in-memory
        index (never a reload from Chroma). ``vectors`` maps the ids of new (or re-embedded)
        units to their vectors; units without one keep the vector the snapshot holds. When
        another writer wrote since the snapshot was built, it is dropped instead (the next
        read reloads it).
        """
        with self._lock:
            cached = self._snapshots.get(namespace)
        if cached is None or not units:
            return  # nothing cached: the next snapshot() loads from Chroma anyway
        version = self.store.version(namespace)
        mine = self.store.writer
        if {v for v in version if v[0] != mine} != {v for v in cached.version if v[0] != mine}:
            self.invalidate(namespace)  # someone else wrote too: reload rather than merge
            return
        snap = cached.snap
        changed = {u.id: u for u in units}
        fresh = dict(vectors or {})
        evolved = snap.updated(list(changed.values()), fresh)  # appends: only touched sessions
        if evolved is not None:
            with self._lock:
                self._remember(namespace, _Cached(cached.checked, evolved, version))
            return
        keep = [i for i, u in enumerate(snap.units) if u.id not in changed]
        if snap.vectors is None or any(
            u.id not in fresh and u.id not in snap.position for u in changed.values()
        ):
            self.invalidate(namespace)
            return
        added = list(changed.values())
        rows = [fresh[u.id] if u.id in fresh else snap.vectors[snap.position[u.id]] for u in added]
        merged = Snapshot(
            [snap.units[i] for i in keep] + added,
            np.vstack([snap.vectors[keep], np.asarray(rows, dtype=np.float32)]),
            self.config.keys,
        )
        with self._lock:
            self._remember(namespace, _Cached(cached.checked, merged, version))

    def snapshot(self, namespace: str) -> Snapshot:
        """The namespace's snapshot, rebuilt from Chroma when another writer changed it."""
        now = time.monotonic()
        with self._lock:
            cached = self._snapshots.get(namespace)
            if cached is not None:
                self._snapshots.move_to_end(namespace)
        if cached is not None and now - cached.checked < self.refresh_seconds:
            return cached.snap
        version = self.store.version(namespace)  # first the version, then the data
        if cached is not None and version == cached.version:
            with self._lock:
                cached.checked = now
            return cached.snap
        files, signature = self.store.snapshot_files, self._signature()
        snap = files.load(namespace, version, signature) if files is not None else None
        saved = snap is not None
        if snap is None:
            units, vectors = self.store.load(namespace)
            snap = Snapshot(units, vectors, self.config.keys)
            if files is not None and len(snap) >= MIN_MEMORIES:
                # written beside the recall that built it (seconds at 100k memories)
                writer = threading.Thread(
                    target=files.save,
                    args=(namespace, snap, version, signature),
                    name=f"ramem-snapshot-file-{namespace}",
                )
                writer.start()
                with self._lock:
                    self._writers = [w for w in self._writers if w.is_alive()] + [writer]
                saved = True  # persist() waits for it
        with self._lock:
            self._remember(namespace, _Cached(now, snap, version, saved))
        return snap

    def _signature(self) -> Signature:
        return Signature(repr(self.config.keys), self.embedder.dimension)

    def persist(self) -> int:
        """Write the snapshot file of every cached snapshot that has none yet (live writes
        since it was loaded), after waiting for the files being written since a build;
        returns how many this call wrote."""
        files = self.store.snapshot_files
        with self._lock:
            writers, self._writers = self._writers, []
        for writer in writers:  # files being written since a build: finish them first
            writer.join()
        if files is None:
            return 0
        with self._lock:
            pending = [(ns, c) for ns, c in self._snapshots.items() if not c.saved and len(c.snap)]
        written = 0
        for namespace, cached in pending:
            if files.save(namespace, cached.snap, cached.version, self._signature()):
                cached.saved = True
                written += 1
        return written

    def time_range(self, namespace: str) -> TimeSpan | None:
        """Earliest to latest time the namespace's memories know (sessions and events)."""
        return self.snapshot(namespace).time_range

    def last_session_end(self, namespace: str) -> TimeSpan | None:
        """The end of the latest session: the default "now" of a query."""
        end = self.snapshot(namespace).last_session_end
        return TimeSpan.instant(end) if end is not None else None

    # ------------------------------------------------------------------ content ranking

    def rank(
        self,
        snap: Snapshot,
        text: str,
        vector: npt.NDArray[np.float32],
        cosines: Scores | None = None,
    ) -> Ranking:
        """Fused content ranking of every memory of ``snap``.

        Reciprocal-rank fusion of the dense ranking (``cos(turn) + cos(window)``) and the
        lexical ranking (BM25 of the episodic keys), plus each memory's share of its session's
        lexical rank, a bonus when the query names its speaker and the weighted ranks of its
        own content (see :class:`EpisodicKeys`). ``cosines``: the memories' cosines with
        ``vector``, if computed already.
        """
        cfg, index = self.config, snap.index
        fused = np.zeros(len(snap), dtype=np.float32)
        dense = lexical = None
        if cosines is None:
            cosines = index.cosines(vector)  # the one pass over the vectors
        if cfg.dense:
            dense = index.dense_scores(vector, cosines)
            fused += 1.0 / (cfg.rrf_k + 1 + ranks(dense, cfg.depth, positive=False))
        if cfg.lexical:
            lexical = index.lexical_scores(text)
            fused += 1.0 / (cfg.rrf_k + 1 + ranks(lexical, cfg.depth))
            fused += index.session_bonus(text, cfg.rrf_k)
        speaker = index.speaker_bonus(text, cfg.rrf_k)
        if speaker is not None:
            fused += speaker
        if cfg.keys.own_weight > 0:
            # the memory's own content re-ranks the episodic candidates: beyond the top
            # ``depth`` every memory sits in the tail of the own rankings anyway
            rows = np.arange(len(snap))
            if len(rows) > cfg.depth:
                rows = np.argpartition(-fused, cfg.depth - 1)[: cfg.depth]
            own_dense, own_lexical = index.own_scores(text, cosines, rows)
            weight = cfg.keys.own_weight
            if cfg.dense and own_dense is not None:
                fused += weight / (cfg.rrf_k + 1 + ranks(own_dense, cfg.depth, positive=False))
            if cfg.lexical and own_lexical is not None:
                fused += weight / (cfg.rrf_k + 1 + ranks(own_lexical, cfg.depth))
        return Ranking(fused, dense, lexical)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Vectors of query texts, in one embedder call for those not embedded recently (a
        relation's anchor phrase and its question are embedded together)."""
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            fresh = self.embedder.embed(missing)
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    _put(self._vectors, text, vector, QUERY_VECTORS)
        with self._lock:
            found = [self._vectors.get(t) for t in texts]
            for text in texts:
                if text in self._vectors:
                    self._vectors.move_to_end(text)
        if any(v is None for v in found):  # evicted meanwhile by other threads: embed again
            return self.embedder.embed(list(texts))
        return np.asarray(found, dtype=np.float32)

    def forget_queries(self) -> None:
        """Drop the cached query vectors (a benchmark times questions as if first asked)."""
        with self._lock:
            self._vectors.clear()
            self._cosines.clear()

    def cosines(self, snap: Snapshot, text: str) -> Scores:
        """The cosine of ``text`` with every memory of ``snap``, kept for the next call with
        the same question and snapshot (a relation's anchor search, then its retrieval)."""
        key = (id(snap), text)
        with self._lock:
            hit = self._cosines.get(key)
            if hit is not None and hit[0]() is snap:
                self._cosines.move_to_end(key)
                return hit[1]
        found = snap.index.cosines(self.embed([text])[0])
        with self._lock:
            _put(self._cosines, key, (weakref.ref(snap), found), QUERY_COSINES)
        return found

    def locate(self, namespace: str, phrase: str, query: str | None = None) -> MemoryUnit | None:
        """The memory that names the event ``phrase`` ("the trip"), if it does so unambiguously.

        Unambiguous means the best dense match is also among the best three lexical matches
        and is similar enough. With ``query``, the question the phrase comes from, the best
        dense match is sought among the :data:`ANCHOR_CANDIDATES` memories most similar to
        the question and the phrase's three best lexical matches: the question's cosines are
        computed (and kept for its retrieval) and the phrase is compared with those memories
        only. Without it, with every memory.
        """
        snap = self.snapshot(namespace)
        if not len(snap) or snap.vectors is None:
            return None
        vector = self.embed([phrase] if query is None else [phrase, query])[0]
        lexical = snap.index.lexical_scores(phrase)
        if query is None or len(snap) <= ANCHOR_CANDIDATES:
            rows = np.arange(len(snap))
        else:
            asked = self.cosines(snap, query)
            near = np.argpartition(-asked, ANCHOR_CANDIDATES - 1)[:ANCHOR_CANDIDATES]
            named = np.argpartition(-lexical, 2)[:3]
            rows = np.union1d(near, named)
        similarity = snap.vectors[rows] @ vector
        best = int(rows[int(np.argmax(similarity))])
        if float(similarity.max()) < self.config.anchor_min_similarity:
            return None
        score = lexical[best]
        # its place in the stable lexical ranking, counted (a sort of every memory is slower)
        place = int(np.count_nonzero(lexical > score) + np.count_nonzero(lexical[:best] == score))
        if score <= 0 or place >= 3:
            return None
        return snap.unit(best)

    # ------------------------------------------------------------------ the final list

    @staticmethod
    def _beyond_pool(ranking: Ranking, mask: Mask, pooled: Sequence[int], slots: int) -> list[int]:
        """The ``slots`` best frame-consistent memories that are not in the relevant pool."""
        taken = set(pooled)
        best = ranking.top(len(taken) + slots, among=mask)
        return [row for row in best if row not in taken][:slots]

    def retrieve(self, namespace: str, frame: RecallFrame, k: int = 10) -> list[Evidence]:
        """The top ``k`` evidence for ``frame``: valid memories first inside the relevant pool,
        then the other relevant ones in content order."""
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            msg = f"k must be a positive integer, got {k!r}"
            raise InvalidInputError(msg)
        cfg = self.config
        snap = self.snapshot(namespace)
        if not len(snap):
            return []
        conditions = Conditions.of(frame, cfg.session_context, cfg.window_padding)
        vector = self.embed([frame.query])[0]
        cosines = self.cosines(snap, frame.query)
        ranking = self.rank(snap, frame.query, vector, cosines)
        if cfg.context_ranking and cfg.time_weight > 0 and asks_for_time(frame.query):
            bonus = np.where(snap.timed, cfg.time_weight / (cfg.rrf_k + 1), 0.0)
            ranking = Ranking(
                ranking.fused + bonus.astype(np.float32), ranking.dense, ranking.lexical
            )
        order = ranking.top(max(k, cfg.validity_pool))
        valid: list[int] = []
        if conditions and cfg.context_ranking:
            mask = conditions.mask(snap)
            valid = [row for row in order[: cfg.validity_pool] if mask[row]]
            if conditions.windows and cfg.window_slots:
                valid += self._beyond_pool(
                    ranking, mask, order[: cfg.validity_pool], cfg.window_slots
                )
        first = set(valid)
        chosen = [(row, True) for row in valid]
        chosen += [(row, False) for row in order if row not in first]
        evidence = []
        for rank, (row, contextual) in enumerate(chosen[:k], start=1):
            unit = snap.unit(row)
            lexical = float(ranking.lexical[row]) if ranking.lexical is not None else 0.0
            evidence.append(
                Evidence(
                    unit=unit,
                    score=float(ranking.fused[row]) + (1.0 if contextual else 0.0),
                    rank=rank,
                    dense_score=(
                        float(cosines[row]) if cfg.dense and snap.vectors is not None else None
                    ),
                    lexical_score=lexical if lexical > 0 else None,
                    contextual=contextual,
                    satisfied=conditions.satisfied(unit),
                )
            )
        return evidence
