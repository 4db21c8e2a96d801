"""Stage 3 of RaMem: validity-aware retrieval.

Without a grounded frame: hybrid content retrieval (dense from Chroma + client-side BM25, fused
by reciprocal rank). With one: the context-consistent candidates come first (Chroma ``where``
filters on the episodic metadata, and the same conditions as a mask over BM25, ranked by content
relevance inside the filter), then the content candidates, de-duplicated. Nothing relevant is
dropped: content candidates always fill the list after the valid ones.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ramem_core.errors import InvalidInputError
from ramem_core.protocols import Embedder
from ramem_core.store.chroma import ChromaStore
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
        candidates: candidates taken from each list (dense, BM25) before fusion.
        rrf_k: the reciprocal-rank-fusion constant.
        dense: use dense (embedding) retrieval.
        lexical: use BM25.
        context_ranking: put context-consistent candidates first when the frame is grounded.
        session_context: let a memory's session span stand in for an unknown event time.
        context_share: share of the K slots the context-consistent candidates may take first.
        anchor_min_similarity: cosine needed to accept a memory as a relation's anchor event.
        contextual_dense: where dense ranking inside a frame's filter runs: ``"snapshot"``
            (exact dot products over the filtered vectors, fast) or ``"chroma"`` (a Chroma
            query with the ``where`` filter; local Chroma scans metadata, which is slow at
            scale). Both select the same memories.
        exact_limit: with ``"snapshot"``, filters selecting at most this many memories are
            ranked exactly; wider ones keep the filter's members among the ``8 * candidates``
            nearest memories of the whole namespace.
        episode_weight: episodic reinstatement: each candidate's score gains this share of
            the summed scores of the ``episode_depth`` best candidates of its session, so
            memories of the episode that matches the question as a whole rank above a lone
            look-alike from another episode (0 turns it off; needs ``session_context``).
    """

    candidates: int = 50
    rrf_k: int = 60
    dense: bool = True
    lexical: bool = True
    context_ranking: bool = True
    session_context: bool = True
    context_share: float = 1.0
    anchor_min_similarity: float = 0.35
    contextual_dense: Literal["snapshot", "chroma"] = "snapshot"
    exact_limit: int = 20_000
    episode_weight: float = 0.75
    episode_depth: int = 2

    def __post_init__(self) -> None:
        if not (self.dense or self.lexical):
            msg = "retrieval needs dense or lexical retrieval switched on"
            raise InvalidInputError(msg)
        if not 0.0 <= self.context_share <= 1.0:
            msg = f"context_share must be within [0, 1], got {self.context_share}"
            raise InvalidInputError(msg)


@dataclass(frozen=True, slots=True)
class Conditions:
    """The grounded part of a frame, as conditions a memory can satisfy.

    A memory is time-valid for a window when its event time lies inside the window or, when its
    event time is unknown and session context is on, when its session span overlaps it.
    """

    windows: tuple[tuple[str, TimeSpan], ...] = ()
    participants: tuple[str, ...] = ()
    session_context: bool = True

    @classmethod
    def of(cls, frame: RecallFrame, session_context: bool = True) -> Conditions:
        """The conditions of ``frame``'s grounded constraints."""
        windows = tuple((t.text, t.window) for t in frame.grounded_times if t.window is not None)
        return cls(windows, frame.participants, session_context)

    def __bool__(self) -> bool:
        return bool(self.windows or self.participants)

    def where(self) -> dict[str, Any] | None:
        """The conditions as a Chroma ``where`` filter."""
        clauses: list[dict[str, Any]] = []
        if self.windows:
            options: list[dict[str, Any]] = []
            for _, w in self.windows:
                start, end = to_epoch(w.start), to_epoch(w.end)
                options.append(
                    {
                        "$and": [
                            {"has_event": True},
                            {"event_start": {"$gte": start}},
                            {"event_end": {"$lte": end}},
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
                timely |= ev.known & (ev.start >= start) & (ev.end <= end)
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
                if w.contains(ctx.event_time):
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


CONTENT_ONLY = RetrievalConfig(context_ranking=False, episode_weight=0.0)
"""Content-only retrieval (dense + BM25, no episodic context): the baseline RaMem improves on."""


def _any(options: list[dict[str, Any]]) -> dict[str, Any]:
    return options[0] if len(options) == 1 else {"$or": options}


@dataclass(slots=True)
class _Candidate:
    position: int
    dense: float | None = None
    lexical: float | None = None
    score: float = 0.0


def fuse(
    dense: Sequence[tuple[int, float]], lexical: Sequence[tuple[int, float]], rrf_k: int
) -> list[_Candidate]:
    """Reciprocal-rank fusion of a dense and a lexical list of (position, score) pairs."""
    merged: dict[int, _Candidate] = {}
    for rank, (position, score) in enumerate(dense):
        cand = merged.setdefault(position, _Candidate(position))
        cand.dense = score
        cand.score += 1.0 / (rrf_k + rank + 1)
    for rank, (position, score) in enumerate(lexical):
        cand = merged.setdefault(position, _Candidate(position))
        cand.lexical = score
        cand.score += 1.0 / (rrf_k + rank + 1)
    # stable sort: ties keep the dense list's order
    return sorted(merged.values(), key=lambda c: -c.score)


class Retriever:
    """Validity-aware retrieval over a :class:`ChromaStore`.

    Keeps one :class:`Snapshot` per namespace. It is rebuilt after this process writes
    (:meth:`invalidate`) and when the namespace's size in Chroma changed, which is checked at
    most every ``refresh_seconds`` (writes by other processes show up within that time).
    """

    def __init__(
        self,
        store: ChromaStore,
        embedder: Embedder,
        config: RetrievalConfig | None = None,
        *,
        refresh_seconds: float = 1.0,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config or RetrievalConfig()
        self.refresh_seconds = refresh_seconds
        self._snapshots: dict[str, tuple[float, Snapshot]] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ snapshots

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

        Rebuilding from Chroma after every live turn would cost seconds at 10k memories; this
        re-indexes BM25 in memory instead. ``vectors`` maps the ids of new (or re-embedded)
        units to their vectors; units without one keep the vector the snapshot holds.
        """
        with self._lock:
            cached = self._snapshots.get(namespace)
        if cached is None or not units:
            return  # nothing cached: the next snapshot() loads from Chroma anyway
        checked, snap = cached
        changed = {u.id: u for u in units}
        fresh = dict(vectors or {})
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
        )
        with self._lock:
            self._snapshots[namespace] = (checked, merged)

    def snapshot(self, namespace: str) -> Snapshot:
        """The namespace's snapshot, rebuilt from Chroma when it is stale."""
        now = time.monotonic()
        with self._lock:
            cached = self._snapshots.get(namespace)
        if cached is not None:
            checked, snap = cached
            if now - checked < self.refresh_seconds or self.store.count(namespace) == len(snap):
                if now - checked >= self.refresh_seconds:
                    with self._lock:
                        self._snapshots[namespace] = (now, snap)
                return snap
        units, vectors = self.store.load(namespace)
        snap = Snapshot(units, vectors)
        with self._lock:
            self._snapshots[namespace] = (now, snap)
        return snap

    def time_range(self, namespace: str) -> TimeSpan | None:
        """Earliest to latest time the namespace's memories know (sessions and events)."""
        return self.snapshot(namespace).time_range

    def last_session_end(self, namespace: str) -> TimeSpan | None:
        """The end of the latest session: the default "now" of a query."""
        end = self.snapshot(namespace).last_session_end
        return TimeSpan.instant(end) if end is not None else None

    # ------------------------------------------------------------------ candidate lists

    def _dense(
        self,
        namespace: str,
        snap: Snapshot,
        vector: npt.NDArray[np.float32],
        n: int,
        nearest: Sequence[tuple[str, float]],
        conditions: Conditions | None,
        mask: Mask | None,
    ) -> list[tuple[int, float]]:
        if conditions is None or mask is None:
            return [(snap.position[i], s) for i, s in nearest[:n] if i in snap.position]
        if self.config.contextual_dense == "chroma" or snap.vectors is None:
            hits = self.store.query(namespace, vector, n, conditions.where())
            return [(snap.position[i], s) for i, s in hits if i in snap.position]
        rows = np.flatnonzero(mask)
        if len(rows) <= self.config.exact_limit:
            return snap.dense(vector, n, rows)  # exact inside a narrow filter
        # a wide filter: the nearest memories overall, kept where the filter holds
        kept = ((snap.position.get(i), s) for i, s in nearest)
        return [(p, s) for p, s in kept if p is not None and mask[p]][:n]

    def candidates(
        self,
        namespace: str,
        text: str,
        vector: npt.NDArray[np.float32],
        n: int,
        conditions: Conditions | None = None,
        nearest: Sequence[tuple[str, float]] | None = None,
    ) -> list[tuple[MemoryUnit, _Candidate]]:
        """Hybrid candidates for ``text``, inside ``conditions`` when given.

        ``nearest`` are the namespace's nearest memories to ``vector`` (id, cosine), best
        first, when the caller already has them (one HNSW query serves both lists).
        """
        snap = self.snapshot(namespace)
        if not len(snap):
            return []
        mask = conditions.mask(snap) if conditions else None
        if mask is not None and not mask.any():
            return []
        n = min(n, len(snap))
        dense: list[tuple[int, float]] = []
        lexical: list[tuple[int, float]] = []
        if self.config.dense:
            if nearest is None:
                nearest = self.store.query(namespace, vector, self._pool(n, snap))
            dense = self._dense(namespace, snap, vector, n, nearest, conditions, mask)
        if self.config.lexical:
            lexical = snap.lexical(text, n, mask)
        fused = [(snap.units[c.position], c) for c in fuse(dense, lexical, self.config.rrf_k)]
        return self._reinstate(fused)

    def _reinstate(
        self, candidates: list[tuple[MemoryUnit, _Candidate]]
    ) -> list[tuple[MemoryUnit, _Candidate]]:
        """Re-rank candidates by their episode's support (see ``episode_weight``)."""
        weight = self.config.episode_weight
        if weight <= 0.0 or not self.config.session_context or not candidates:
            return candidates
        support: dict[tuple[str, str], list[float]] = {}
        for unit, cand in candidates:
            key = (unit.context.conversation_id, unit.context.session_id)
            support.setdefault(key, []).append(cand.score)
        episode = {
            key: sum(sorted(scores, reverse=True)[: self.config.episode_depth])
            for key, scores in support.items()
        }
        for unit, cand in candidates:
            cand.score += weight * episode[(unit.context.conversation_id, unit.context.session_id)]
        return sorted(candidates, key=lambda pair: -pair[1].score)

    def _pool(self, n: int, snap: Snapshot) -> int:
        """How many nearest memories one HNSW query fetches: enough for a wide filter too."""
        return min(len(snap), 8 * n)

    def locate(self, namespace: str, phrase: str) -> TimeSpan | None:
        """When the event ``phrase`` ("the trip") happened, if memory names it unambiguously.

        Unambiguous means the best dense match is also among the best three BM25 matches and is
        similar enough; its event time (else its session span) is the answer.
        """
        snap = self.snapshot(namespace)
        if not len(snap):
            return None
        vector = self.embedder.embed([phrase])[0]
        nearest = self.store.query(namespace, vector, 1)
        dense = self._dense(namespace, snap, vector, 1, nearest, None, None)
        if not dense or dense[0][1] < self.config.anchor_min_similarity:
            return None
        if dense[0][0] not in {position for position, _ in snap.lexical(phrase, 3)}:
            return None
        best = snap.units[dense[0][0]]
        return best.context.event_time or best.context.session_span

    # ------------------------------------------------------------------ the final list

    def retrieve(self, namespace: str, frame: RecallFrame, k: int = 10) -> list[Evidence]:
        """The top ``k`` evidence for ``frame``: valid memories first, relevant ones after."""
        if k <= 0:
            msg = f"k must be positive, got {k}"
            raise InvalidInputError(msg)
        n = max(self.config.candidates, k)
        conditions = Conditions.of(frame, self.config.session_context)
        use_context = bool(conditions) and self.config.context_ranking
        # the need (time words and relation clause removed) drives ranking inside the filter
        texts = [frame.query] + ([frame.need] if use_context and frame.need != frame.query else [])
        vectors = self.embedder.embed(texts)
        vector, need_vector = vectors[0], vectors[-1]
        snap = self.snapshot(namespace)
        nearest = (
            self.store.query(namespace, vector, self._pool(n, snap) if use_context else n)
            if self.config.dense and len(snap)
            else []
        )
        content = self.candidates(namespace, frame.query, vector, n, nearest=nearest)

        chosen: list[tuple[MemoryUnit, _Candidate, bool]] = []
        seen: set[str] = set()
        if use_context:
            valid = self.candidates(namespace, frame.need, need_vector, n, conditions, nearest)
            for unit, cand in valid[: math.ceil(k * self.config.context_share)]:
                chosen.append((unit, cand, True))
                seen.add(unit.id)
        for unit, cand in content:
            if len(chosen) >= k:
                break
            if unit.id not in seen:
                chosen.append((unit, cand, False))
                seen.add(unit.id)
        return [
            Evidence(
                unit=unit,
                score=cand.score + (1.0 if contextual else 0.0),
                rank=rank,
                dense_score=cand.dense,
                lexical_score=cand.lexical,
                contextual=contextual,
                satisfied=conditions.satisfied(unit),
            )
            for rank, (unit, cand, contextual) in enumerate(chosen[:k], start=1)
        ]
