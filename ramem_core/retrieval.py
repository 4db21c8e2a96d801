"""Stage 3 of RaMem: validity-aware retrieval.

Content ranking (always): a dense and a lexical ranking over the memories' *episodic keys*
(:mod:`ramem_core.episodic`: neighbour turns, session date and the session's own rank
reinstate the episode where memories are found), fused by reciprocal rank; a learned fusion
(:class:`Fusion`) then re-ranks the best statements by the signals that fusion computed.

The recall frame only ever adds: when it is grounded, the memories that satisfy it (Chroma
``where`` filters on the episodic metadata, evaluated as the same mask over the snapshot) move
ahead *inside a relevant pool*, the top ``validity_pool`` of the content ranking. Relevant
memories outside the frame keep their order after them, so a wide or wrong window can reorder
the pool but never push a relevant memory out of it, and nothing is dropped. A question that
asks *when* gives memories that say when (an event or mentioned time) a small bonus.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from ramem_core.episodic import CONTENT_KEYS, EpisodicKeys, session_key
from ramem_core.errors import InvalidInputError
from ramem_core.ordinals import ORDINAL_WORDS, Ordinal, ordinals, same_kind
from ramem_core.protocols import Embedder
from ramem_core.store.bm25 import Scores
from ramem_core.store.snapshot import Mask, Snapshot
from ramem_core.temporal import describe
from ramem_core.types import (
    DEFAULT_K,
    Evidence,
    Kind,
    MemoryUnit,
    RecallFrame,
    Relation,
    TimeSpan,
    to_epoch,
)

FUSION_FEATURES = (
    "dense",
    "lexical",
    "session",
    "speaker",
    "own_dense",
    "own_lexical",
    "cosine",
    "dense_raw",
    "lexical_raw",
    "length",
    "own_dense_long",
    "own_lexical_long",
    "dense_long",
    "lexical_long",
    "timed",
    "place",
)
"""What a learned fusion reads of each candidate (:func:`fusion_features`)."""


@dataclass(frozen=True, slots=True)
class Fusion:
    """A learned re-ranking of the content ranking's best statements: each one's score is
    ``weights · fusion_features``; they take their places again in that order.

    Attributes:
        weights: one per :data:`FUSION_FEATURES`.
        candidates: how many of the content ranking's best statements are re-ranked.
        own_candidates: and how many of the best by their own content alone (own words and
            own vector), wherever the episodic keys put them: a long turn that says it all in
            a session about something else.
    """

    weights: tuple[float, ...]
    candidates: int = 50
    own_candidates: int = 0

    def __post_init__(self) -> None:
        if len(self.weights) != len(FUSION_FEATURES):
            msg = f"a fusion needs {len(FUSION_FEATURES)} weights, got {len(self.weights)}"
            raise InvalidInputError(msg)
        if self.candidates < 1 or self.own_candidates < 0:
            msg = f"a fusion needs candidates >= 1 and own_candidates >= 0: {self}"
            raise InvalidInputError(msg)

    def rows(self, ranking: Ranking, statements: Mask) -> list[int]:
        """The rows it re-ranks, in the content ranking's order."""
        rows = ranking.top(self.candidates, among=statements)
        own = [ranking.parts[p] for p in ("own_dense", "own_lexical") if p in ranking.parts]
        if self.own_candidates and own:
            alone = Ranking(np.where(statements, sum(own), -np.inf).astype(np.float32), None, None)
            extra = set(alone.top(self.own_candidates)) - set(rows)
            rows += sorted(extra, key=lambda row: (-ranking.fused[row], row))
            rows.sort(key=lambda row: (-ranking.fused[row], row))
        return rows


LEARNED_FUSION = Fusion(
    (
        0.7323,
        0.0927,
        -0.6486,
        2.3767,
        -0.9302,
        -1.4504,
        3.6495,
        3.7,
        4.8,
        2.1067,
        0.4982,
        1.4828,
        1.183,
        1.7557,
        1.1163,
        0.8199,
    ),
    own_candidates=20,
)
"""Fitted on the choose parts only (LoCoMo conv-26/30/41, LongMemEval_S dev30 + dev120 even
positions) by ``benchmarks/fit_fusion.py``: ``benchmarks/results/fit_fusion.json``."""


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Switches of the retrieval stage (the evaluation's ablations are settings of this).

    The tuned values were chosen on LoCoMo conv-26/30/41 and LongMemEval_S dev30 by
    ``benchmarks/tune_retrieval.py`` (grids in ``benchmarks/results/tune_retrieval.json``,
    history in ``benchmarks/results/TUNING.md``).

    Attributes:
        keys: the episodic keys memories are found by (:data:`CONTENT_KEYS` for none).
        rrf_k: the reciprocal-rank-fusion constant.
        depth: rows ranked exactly in each list; the rest share the tail rank.
        dense: use dense (embedding) retrieval.
        lexical: use BM25 (and the session documents).
        context_ranking: move frame-consistent memories ahead inside the relevant pool.
        session_context: let a memory's session span stand in for an unknown event time.
        validity_pool: how many of the content ranking's best memories form the relevant
            pool in which frame-consistent ones move ahead (grid ``validity_pool``).
        window_padding: a frame's time windows are widened by this much on each side for
            ranking (LongMemEval's reference implementation pads by two days).
        anchor_min_similarity: cosine needed to accept a memory as a relation's anchor event.
        time_weight: when the frame asks *when* (:attr:`RecallFrame.asks_when`), memories
            that say when (an event time or a mentioned time) gain
            ``time_weight / (rrf_k + 1)``; part of the frame, off with ``context_ranking``
            (grid ``time_weight``).
        window_slots: when the frame has a time window, this many of the window's best
            memories *below* the relevant pool join the frame-consistent ones ahead: the
            filtered search of the paper's stage 3, kept small so that a wide or wrong window
            cannot fill the list (grid ``window_slots``).
        anchor_side_slots: the first this many places of the list go to memories that are
            not on a before/after relation's anchor side (their event, else their session,
            ends before an "after" window opens or starts after a "before" window closes: the
            trip itself for "after the trip"), when the relevant pool holds such memories; the
            others keep their order after them, and none leaves the pool. 0 turns it off.
            Chosen on LoCoMo dev conv-26/30/41 (``benchmarks/results/tune_anchor_side.json``).
        exclude_anchor: keep a before/after relation's anchor out of the relation's window
            when ranking: no padding on the anchor's side, and the anchor memory's session
            is not inside ("after the trip" is not the trip). Off: on LoCoMo dev it cost
            R@10 0.777 -> 0.772 and D@1 0.268 -> 0.278 (``benchmarks/results/TUNING.md``).
            The "why valid" labels never count the padding or the anchor's session either
            way.
        derived_last: a question or an assistant's reply (:class:`~ramem_core.types.Kind`)
            never outranks a statement in the list that it restates or asks about: one whose
            vector's cosine with its own is at least this; it moves to just after that
            statement. ``None`` turns it off. Not tuned (bulk-ingested conversations hold
            statements only); 0.5 keeps a restatement or a question with its source, and
            leaves a reply about something else where it ranked.
        fusion: re-rank the content ranking's best memories by a learned fusion of its
            signals (:class:`Fusion`, :data:`LEARNED_FUSION`) before the validity stage;
            ``None``: the fixed fusion alone.
        ordinals: let memories that state ordinals ("my second tournament") ground a
            question about the Nth event of their kind ("his third tourney",
            :mod:`ramem_core.ordinals`); off, such a question has no time constraint.
        derived_yield: unless the frame asks about the dialogue with the agent
            (:attr:`RecallFrame.asks_dialogue`), such a reply moves after every statement of
            the list instead of just after its source, and so does every question: a
            restatement or a question adds no evidence, so it takes no top place from a
            statement that might be evidence (with ``derived_yield_all``, every reply too,
            restating or not). Measured on the agent path, LoCoMo dev conv-26/30/41
            (``benchmarks/results/bench_agent_path.json``).
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
    derived_last: float | None = 0.5
    derived_yield: bool = True
    derived_yield_all: bool = False
    anchor_side_slots: int = 3
    exclude_anchor: bool = False
    ordinals: bool = True
    fusion: Fusion | None = LEARNED_FUSION

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


_BEFORE_AFTER = (Relation.BEFORE, Relation.AFTER)


@dataclass(frozen=True, slots=True)
class Conditions:
    """The grounded part of a frame, as conditions a memory can satisfy.

    A memory is time-valid for a window when its event time lies mostly inside the window
    (:func:`mostly_within`) or, when its event time is unknown and session context is on, when
    its session span overlaps it. ``windows`` (padded) select the memories that move ahead;
    ``exact`` (as grounded) are what :meth:`satisfied` says, so the explanation a model reads
    is true of the memory's own coordinates. "After X" means after X's event, or after X's
    session where a memory's event is unknown: a memory of the anchor's own session
    (``anchor_sessions``) with no event time is never said to lie in a before/after window
    (``relations``), and with ``strict`` the ranking keeps it out too
    (:attr:`RetrievalConfig.exclude_anchor`); one with an event time is judged by its event.
    """

    windows: tuple[tuple[str, TimeSpan], ...] = ()
    participants: tuple[str, ...] = ()
    session_context: bool = True
    exact: tuple[tuple[str, TimeSpan], ...] | None = None
    anchor_sessions: frozenset[tuple[str, str]] = frozenset()
    relations: frozenset[str] = frozenset()
    strict: bool = False

    @classmethod
    def of(
        cls,
        frame: RecallFrame,
        session_context: bool = True,
        padding: timedelta = timedelta(0),
        strict_relations: bool = False,
    ) -> Conditions:
        """The conditions of ``frame``'s grounded constraints, windows widened by ``padding``
        where they are :attr:`~ramem_core.types.TimeConstraint.padded` (with
        ``strict_relations``, never on a before/after relation's anchor side)."""
        windows, exact = [], []
        for t in frame.grounded_times:
            if t.window is None:
                continue
            pad = padding if t.padded else timedelta(0)
            after = strict_relations and t.relation is Relation.AFTER
            before = strict_relations and t.relation is Relation.BEFORE
            start = t.window.start - (timedelta(0) if after else pad)
            end = t.window.end + (timedelta(0) if before else pad)
            windows.append((t.text, TimeSpan(start, end, t.window.granularity)))
            exact.append((t.text, t.window))
        return cls(
            tuple(windows),
            frame.participants,
            session_context,
            tuple(exact),
            relations=frozenset(
                t.text for t in frame.grounded_times if t.relation in _BEFORE_AFTER
            ),
            strict=strict_relations,
        )

    def without_anchors(self, snapshot: Snapshot, frame: RecallFrame) -> Conditions:
        """These conditions with the sessions of ``frame``'s before/after anchor memories
        known (see the class)."""
        sessions = frozenset(
            session_key(snapshot.units[snapshot.position[t.anchor_id]])
            for t in frame.grounded_times
            if t.relation in _BEFORE_AFTER
            and t.anchor_id is not None
            and t.anchor_id in snapshot.position
        )
        return replace(self, anchor_sessions=sessions) if sessions else self

    def __bool__(self) -> bool:
        return bool(self.windows or self.participants)

    def mask(self, snapshot: Snapshot) -> Mask:
        """The conditions over every memory of ``snapshot`` (what the Chroma adapter's
        :func:`~ramem_core.store.chroma.where_of` selects in the store)."""
        ok = np.ones(len(snapshot), dtype=bool)
        if self.windows:
            timely = np.zeros(len(snapshot), dtype=bool)
            ev, se = snapshot.event, snapshot.session
            anchored = np.zeros(len(snapshot), dtype=bool)
            for key in self.anchor_sessions if self.strict else ():
                anchored[snapshot.session_rows(key)] = True
            for text, w in self.windows:
                start, end = to_epoch(w.start), to_epoch(w.end)
                timely |= ev.known & _mostly_within(ev.start, ev.end, start, end)
                if self.session_context:
                    said = ~ev.known & se.known & (se.start <= end) & (se.end >= start)
                    timely |= said & ~anchored if text in self.relations else said
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
        anchored = (ctx.conversation_id, ctx.session_id) in self.anchor_sessions
        for text, w in self.windows if self.exact is None else self.exact:
            if ctx.event_time is not None:
                if mostly_within(ctx.event_time, w):
                    met.append(f"event {describe(ctx.event_time)} within {text!r}")
            elif (
                self.session_context
                and ctx.session_span is not None
                and ctx.session_span.overlaps(w)
                and not (anchored and text in self.relations)  # said in the anchor's episode
            ):
                met.append(f"said {describe(ctx.session_span)}, within {text!r}")
        lowered = {p.lower() for p in ctx.participants}
        met.extend(f"involves {p}" for p in self.participants if p.lower() in lowered)
        return tuple(met)


ANCHOR_CANDIDATES = 1000
"""A relation's anchor event is sought among the question's most similar memories (and the
phrase's best lexical matches), not in a second pass over every memory (see
:meth:`Retriever.locate`). Not tuned: the dev namespaces (300-700 memories) are below it; what
smaller values changed is in ``benchmarks/results/TUNING.md``."""


CONTENT_ONLY = RetrievalConfig(keys=CONTENT_KEYS, context_ranking=False, fusion=None)
"""Content-only retrieval (dense + BM25 on each memory's own content, no episodic context):
the baseline RaMem improves on."""


@dataclass(frozen=True, slots=True)
class Ranking:
    """Every memory's fused content score, the raw dense and lexical scores, and the parts it
    was fused from (``parts``: each signal's reciprocal rank ``1 / (rrf_k + 1 + rank)``, or
    its indicator, before its weight)."""

    fused: Scores
    dense: Scores | None
    lexical: Scores | None
    parts: Mapping[str, Scores] = field(default_factory=dict)

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


class Probe:
    """One question against one snapshot: its vector and its cosine with every memory, each
    computed once and shared by the frame's anchor search and the ranking."""

    __slots__ = ("_cosines", "_vector", "embedder", "snap", "text")

    def __init__(self, snap: Snapshot, text: str, embedder: Embedder) -> None:
        self.snap = snap
        self.text = text
        self.embedder = embedder
        self._vector: npt.NDArray[np.float32] | None = None
        self._cosines: Scores | None = None

    @property
    def vector(self) -> npt.NDArray[np.float32]:
        """The question's vector."""
        if self._vector is None:
            self._vector = self.embedder.embed([self.text])[0]
        return self._vector

    @property
    def cosines(self) -> Scores:
        """The question's cosine with every memory of the snapshot (one pass over the
        vectors)."""
        if self._cosines is None:
            self._cosines = self.snap.index.cosines(self.vector)
        return self._cosines


class Retriever:
    """Validity-aware retrieval over a :class:`Snapshot` it is handed (it holds no data).

    Args:
        embedder: embeds questions and anchor phrases (RaMem passes its embedder wrapped in
            :class:`~ramem_core.embedding.RecentQueries`, so a question asked again costs no
            second embedding).
        config: the retrieval switches.
    """

    def __init__(self, embedder: Embedder, config: RetrievalConfig | None = None) -> None:
        self.embedder = embedder
        self.config = config or RetrievalConfig()

    def probe(self, snap: Snapshot, text: str) -> Probe:
        """A question against ``snap`` whose vector and cosines are computed when first
        needed, once."""
        return Probe(snap, text, self.embedder)

    # ------------------------------------------------------------------ content ranking

    def rank(
        self,
        snap: Snapshot,
        text: str,
        vector: npt.NDArray[np.float32],
        cosines: Scores | None = None,
        *,
        speakers: Sequence[str] = (),
        apart: Mask | None = None,
    ) -> Ranking:
        """Fused content ranking of every memory of ``snap``: the whole ranking formula.

        Reciprocal-rank fusion of the dense ranking (``cos(turn) + cos(window)``) and the
        lexical ranking (BM25 of the episodic keys), plus each memory's share of its session's
        lexical rank, a bonus for memories said by ``speakers`` (the people the question
        names, :attr:`RecallFrame.speakers`) and the weighted ranks of its own content (see
        :class:`EpisodicKeys`). ``cosines``: the memories' cosines with ``vector``, if
        computed already. ``apart``: rows ranked among themselves in every ranking (recorded
        questions and replies), so they take no rank from the others and the others' order
        is what it would be without them.
        """
        cfg, index = self.config, snap.index

        def ranked(scores: Scores, *, positive: bool = True) -> npt.NDArray[np.int64]:
            if apart is None or not apart.any():
                return ranks(scores, cfg.depth, positive=positive)
            out = np.full(len(scores), cfg.depth, dtype=np.int64)
            blank = 0.0 if positive else -np.inf
            for group in (apart, ~apart):
                within = ranks(np.where(group, scores, blank), cfg.depth, positive=positive)
                out[group] = within[group]
            return out

        def reciprocal(rank: npt.NDArray[np.int64]) -> Scores:
            return np.asarray(1.0 / (cfg.rrf_k + 1 + rank), dtype=np.float32)

        fused = np.zeros(len(snap), dtype=np.float32)
        parts: dict[str, Scores] = {}
        dense = lexical = None
        if cosines is None:
            cosines = index.cosines(vector)  # the one pass over the vectors
        if cfg.dense:
            dense = index.dense_scores(vector, cosines)
            parts["dense"] = reciprocal(ranked(dense, positive=False))
            fused += parts["dense"]
        if cfg.lexical:
            lexical = index.lexical_scores(text)
            parts["lexical"] = reciprocal(ranked(lexical))
            fused += parts["lexical"]
            if cfg.keys.session_weight > 0 and len(snap):
                # each row's share of its session's rank: weight / (rrf_k + 1 + session rank)
                sessions = index.session_scores(text)
                groups = [np.ones(len(sessions), dtype=bool)]
                if apart is not None and apart.any():
                    # a session of recorded questions and replies only is ranked apart
                    stated = np.zeros(len(sessions), dtype=bool)
                    stated[index.session_of[~apart]] = True
                    groups = [stated, ~stated]
                share = np.zeros(len(sessions), dtype=np.float32)
                for group in groups:
                    order = np.argsort(-np.where(group, sessions, 0.0), kind="stable")
                    order = order[(sessions[order] > 0) & group[order]]
                    share[order] = 1.0 / (cfg.rrf_k + 1 + np.arange(len(order)))
                parts["session"] = share[index.session_of]
                fused += cfg.keys.session_weight * parts["session"]
        named = [name for name in speakers if name in index.speakers]
        if cfg.keys.speaker_weight > 0 and named:
            # said by a person the question names: as if ranked first in that person's list
            said = np.zeros(len(snap), dtype=np.float32)
            for name in named:
                said[index.speakers[name]] = 1.0
            parts["speaker"] = said
            fused += said * (cfg.keys.speaker_weight / (cfg.rrf_k + 1))
        if cfg.keys.own_weight > 0:
            # the memory's own content re-ranks the episodic candidates: beyond the top
            # ``depth`` every memory sits in the tail of the own rankings anyway
            rows = np.arange(len(snap))
            if len(rows) > cfg.depth:
                rows = np.argpartition(-fused, cfg.depth - 1)[: cfg.depth]
            own_dense, own_lexical = index.own_scores(text, cosines, rows)
            weight = cfg.keys.own_weight
            if cfg.dense and own_dense is not None:
                parts["own_dense"] = reciprocal(ranked(own_dense, positive=False))
                fused += weight * parts["own_dense"]
            if cfg.lexical and own_lexical is not None:
                parts["own_lexical"] = reciprocal(ranked(own_lexical))
                fused += weight * parts["own_lexical"]
        return Ranking(fused, dense, lexical, parts)

    def locate(self, snap: Snapshot, phrase: str, probe: Probe | None = None) -> MemoryUnit | None:
        """The memory that names the event ``phrase`` ("the trip"), if it does so unambiguously.

        Unambiguous means the best dense match is also among the best three lexical matches
        and is similar enough. With ``probe``, the question the phrase comes from, the best
        dense match is sought among the :data:`ANCHOR_CANDIDATES` memories most similar to
        the question and the phrase's three best lexical matches (the question's cosines are
        computed once, for this and for its ranking). Without it, among every memory.
        """
        if not len(snap) or snap.vectors is None:
            return None
        texts = [phrase] if probe is None else [phrase, probe.text]
        vector = self.embedder.embed(texts)[0]  # with the question: one embedder call
        lexical = snap.index.lexical_scores(phrase)
        if probe is None or len(snap) <= ANCHOR_CANDIDATES:
            rows = np.arange(len(snap))
        else:
            asked = probe.cosines
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

    def stated(
        self, snap: Snapshot, asked: Ordinal, speakers: Sequence[str] = ()
    ) -> list[tuple[Ordinal, MemoryUnit]]:
        """The statements of ``snap`` (said by ``speakers``, when given) that state an ordinal
        of ``asked``'s kind, with the ordinal each states; none when :attr:`RetrievalConfig.
        ordinals` is off. Only the memories whose words hold an ordinal are read."""
        if not self.config.ordinals or not len(snap):
            return []
        people = {name.lower() for name in speakers}
        found = []
        for row in np.flatnonzero(snap.index.said_scores(ORDINAL_WORDS) > 0):
            unit = snap.unit(int(row))
            if unit.context.kind is not Kind.STATEMENT:
                continue  # a question or a reply states nothing about the user's events
            if people and unit.context.speaker.lower() not in people:
                continue
            found += [(o, unit) for o in ordinals(unit.content) if same_kind(asked, o)]
        return found

    def _when(self, frame: RecallFrame) -> bool:
        """Whether memories that say when count for ``frame``: it asks when, and the time
        bonus (part of the frame) is on."""
        cfg = self.config
        return frame.asks_when and cfg.context_ranking and cfg.time_weight > 0

    def _content(self, snap: Snapshot, frame: RecallFrame, probe: Probe, yielding: bool) -> Ranking:
        """The content ranking of ``frame``'s question, with the when-bonus; ``yielding``:
        recorded questions and replies are ranked apart."""
        cfg = self.config
        ranking = self.rank(
            snap,
            frame.query,
            probe.vector,
            probe.cosines,
            speakers=frame.speakers,
            apart=snap.derived if yielding else None,
        )
        if self._when(frame):
            bonus = np.where(snap.timed, cfg.time_weight / (cfg.rrf_k + 1), 0.0)
            ranking = replace(ranking, fused=ranking.fused + bonus.astype(np.float32))
        return ranking

    def fusion_candidates(
        self, snap: Snapshot, frame: RecallFrame, fusion: Fusion
    ) -> tuple[list[int], npt.NDArray[np.float64]]:
        """The statements ``fusion`` would re-rank for ``frame`` (:meth:`Fusion.rows` of the
        fixed fusion's ranking) and their :data:`FUSION_FEATURES`: what a learned fusion is
        fitted on (``benchmarks/fit_fusion.py``)."""
        probe = self.probe(snap, frame.query)
        ranking = self._content(snap, frame, probe, bool(snap.derived.any()))
        return self._fusion_inputs(snap, frame, ranking, probe.cosines, fusion)

    def _fusion_inputs(
        self, snap: Snapshot, frame: RecallFrame, ranking: Ranking, cosines: Scores, fusion: Fusion
    ) -> tuple[list[int], npt.NDArray[np.float64]]:
        """The rows ``fusion`` re-ranks in ``ranking`` and their features: statements only
        (it was fitted on them; questions and replies keep their places)."""
        rows = fusion.rows(ranking, ~snap.derived)
        when = self._when(frame)
        return rows, fusion_features(ranking, rows, snap, cosines, when, self.config.rrf_k)

    # ------------------------------------------------------------------ the final list

    @staticmethod
    def _beyond_pool(ranking: Ranking, mask: Mask, pooled: Sequence[int], slots: int) -> list[int]:
        """The ``slots`` best frame-consistent memories that are not in the relevant pool."""
        taken = set(pooled)
        best = ranking.top(len(taken) + slots, among=mask)
        return [row for row in best if row not in taken][:slots]

    def retrieve(
        self, snap: Snapshot, frame: RecallFrame, k: int = DEFAULT_K, probe: Probe | None = None
    ) -> list[Evidence]:
        """The top ``k`` evidence of ``snap`` for ``frame``: valid memories first inside the
        relevant pool, then the other relevant ones in content order. ``probe``: the frame's
        question against ``snap``, if one was made for the frame already."""
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            msg = f"k must be a positive integer, got {k!r}"
            raise InvalidInputError(msg)
        cfg = self.config
        if not len(snap):
            return []
        if probe is None or probe.snap is not snap or probe.text != frame.query:
            probe = self.probe(snap, frame.query)
        conditions = Conditions.of(
            frame, cfg.session_context, cfg.window_padding, strict_relations=cfg.exclude_anchor
        )
        conditions = conditions.without_anchors(snap, frame)
        cosines = probe.cosines
        derived = cfg.derived_last is not None and snap.vectors is not None
        last = derived and cfg.derived_yield and not frame.asks_dialogue
        yielding = last and bool(snap.derived.any())
        ranking = self._content(snap, frame, probe, yielding)
        if cfg.fusion is not None:
            rows, features = self._fusion_inputs(snap, frame, ranking, cosines, cfg.fusion)
            ranking = _reranked(ranking, rows, features @ np.asarray(cfg.fusion.weights))
        width = max(k, cfg.validity_pool)
        if yielding:
            # questions and replies yield to statements: the list holds ``width`` statements
            # (recorded questions can crowd a pool) and the pool is made of statements
            stated = ranking.top(width, among=~snap.derived)
            said = ranking.top(width, among=snap.derived)
            order = sorted(stated + said, key=lambda row: (-ranking.fused[row], row))
            pool = stated[: cfg.validity_pool]
        else:
            order = ranking.top(width)
            pool = order[: cfg.validity_pool]
        valid: list[int] = []
        if conditions and cfg.context_ranking:
            mask = conditions.mask(snap)
            valid = [row for row in pool if mask[row]]
            if conditions.windows and cfg.window_slots:
                valid += self._beyond_pool(ranking, mask, pool, cfg.window_slots)
        first = set(valid)
        chosen = [(row, True) for row in valid]
        chosen += [(row, False) for row in order if row not in first]
        if cfg.derived_last is not None and derived:
            chosen = _after_their_sources(
                chosen, snap, cfg.derived_last, to_end=last, always=last and cfg.derived_yield_all
            )
        if cfg.anchor_side_slots and cfg.context_ranking:
            # over the relevant pool whatever k is: a longer list starts as a shorter one
            chosen = _anchor_side_free(
                chosen, cfg.validity_pool, cfg.anchor_side_slots, snap, frame
            )
        evidence = []
        ceiling = np.inf
        for rank, (row, contextual) in enumerate(chosen[:k], start=1):
            unit = snap.unit(row)
            lexical = float(ranking.lexical[row]) if ranking.lexical is not None else 0.0
            # a question or reply moved after its source takes at most the score before it
            score = min(float(ranking.fused[row]) + (1.0 if contextual else 0.0), ceiling)
            ceiling = score
            evidence.append(
                Evidence(
                    unit=unit,
                    score=score,
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


def on_anchor_side(unit: MemoryUnit, frame: RecallFrame) -> bool:
    """True when ``unit`` lies on the anchor's own side of one of ``frame``'s grounded
    before/after windows: its event (else its session) ends before an "after" window starts,
    or starts after a "before" window ends."""
    span = unit.context.event_time or unit.context.session_span
    if span is None:
        return False
    for t in frame.grounded_times:
        if t.window is None:
            continue
        if t.relation is Relation.AFTER and span.end < t.window.start:
            return True
        if t.relation is Relation.BEFORE and span.start > t.window.end:
            return True
    return False


def _anchor_side_free(
    chosen: list[tuple[int, bool]], pool: int, slots: int, snap: Snapshot, frame: RecallFrame
) -> list[tuple[int, bool]]:
    """``chosen`` with its first ``slots`` places given to the best memories of its first
    ``pool`` that are not on a before/after anchor's side (:func:`on_anchor_side`)."""
    if not any(t.relation in _BEFORE_AFTER for t in frame.grounded_times):
        return chosen
    top = chosen[:pool]
    side = [on_anchor_side(snap.unit(row), frame) for row, _ in top]
    if not any(side[:slots]):
        return chosen
    free = [i for i, s in enumerate(side) if not s][:slots]
    first = [top[i] for i in free]
    return first + [c for i, c in enumerate(top) if i not in free] + chosen[pool:]


def _after_their_sources(
    chosen: list[tuple[int, bool]],
    snap: Snapshot,
    threshold: float,
    *,
    to_end: bool = False,
    always: bool = False,
) -> list[tuple[int, bool]]:
    """``chosen`` with each question or reply moved to just after the lowest-placed statement
    of the list it restates or asks about (cosine at least ``threshold``), or with ``to_end``
    after every statement of the list (a question always: asking is not evidence of an event;
    with ``always`` every reply too); everything else keeps its order."""
    rows = np.asarray([row for row, _ in chosen], dtype=np.int64)
    derived = snap.derived[rows]
    if not derived.any() or snap.vectors is None:
        return chosen
    vectors = snap.vectors[rows]
    similar = (vectors[derived] @ vectors.T) >= threshold
    statements = ~derived
    keys: list[tuple[int, int, int]] = []
    d = 0
    for place in range(len(chosen)):
        if not derived[place]:
            keys.append((place, 0, place))
            continue
        sources = np.flatnonzero(similar[d] & statements)
        d += 1
        below = sources[sources > place]
        asked = snap.unit(int(rows[place])).context.kind is Kind.QUESTION
        if to_end and (len(sources) or asked or always):
            keys.append((len(chosen), 1, place))
        else:
            keys.append((int(below.max()) if len(below) else place, 1, place))
    return [chosen[place] for _, _, place in sorted(keys)]


def ranks(scores: Scores, depth: int, *, positive: bool = True) -> npt.NDArray[np.int64]:
    """0-based rank of every row by ``scores`` (best first) among the top ``depth`` rows (with a
    positive score when ``positive``, a finite one otherwise); every other row gets rank
    ``depth``: the tail of a full ranking, cut for speed (ties there change nothing)."""
    out = np.full(len(scores), depth, dtype=np.int64)
    rows = np.flatnonzero(scores > 0 if positive else np.isfinite(scores))
    if not len(rows):
        return out
    depth = min(depth, len(rows))
    top = rows[np.argpartition(-scores[rows], depth - 1)[:depth]]
    top = top[np.argsort(-scores[top], kind="stable")]
    out[top] = np.arange(len(top))
    return out


def fusion_features(
    ranking: Ranking,
    rows: Sequence[int],
    snap: Snapshot,
    cosines: Scores,
    asks_when: bool,
    rrf_k: int,
) -> npt.NDArray[np.float64]:
    """The :data:`FUSION_FEATURES` of the memories at ``rows`` (the content ranking's best,
    best first), one row each: every signal's reciprocal rank scaled to (0, 1], the raw
    cosines and BM25 (scaled by the candidates' best), the own words' count (log, scaled) and
    its products with the rank signals (long, self-contained memories may trust their own
    content more), whether the memory says when for a question asking when, and its place."""
    at = np.asarray(rows, dtype=np.int64)
    n, scale = len(at), float(rrf_k + 1)
    zero = np.zeros(n)

    def part(name: str, factor: float = scale) -> npt.NDArray[np.float64]:
        values = ranking.parts.get(name)
        return zero if values is None else np.asarray(values[at], dtype=np.float64) * factor

    lexical = zero if ranking.lexical is None else np.asarray(ranking.lexical[at], np.float64)
    dense_raw = zero if ranking.dense is None else np.asarray(ranking.dense[at], np.float64) / 2
    counts = snap.index.own_counts
    length = np.log1p([sum(counts[int(r)].values()) for r in at]) / np.log1p(100.0)
    own_dense, own_lexical = part("own_dense"), part("own_lexical")
    dense, lexical_rank = part("dense"), part("lexical")
    timed = np.asarray(snap.timed[at], dtype=np.float64) if asks_when else zero
    columns = [
        dense,
        lexical_rank,
        part("session"),
        part("speaker", 1.0),
        own_dense,
        own_lexical,
        np.asarray(cosines[at], dtype=np.float64),
        dense_raw,
        lexical / lexical.max() if n and lexical.max() > 0 else zero,
        length,
        own_dense * length,
        own_lexical * length,
        dense * length,
        lexical_rank * length,
        timed,
        scale / (scale + np.arange(n)),
    ]
    return np.stack(columns, axis=1) if n else np.zeros((0, len(columns)))


def _reranked(ranking: Ranking, rows: Sequence[int], learned: npt.NDArray[np.float64]) -> Ranking:
    """``ranking`` with the memories at ``rows`` reordered by their ``learned`` scores among
    their own fused scores: the places they held are theirs again, best learned first, and
    every other memory (a recorded question or reply, one below the candidates) keeps its
    place and score."""
    if len(rows) < 2:
        return ranking
    at = np.asarray(rows, dtype=np.int64)
    fused = ranking.fused.copy()
    fused[at[np.argsort(-learned, kind="stable")]] = np.sort(fused[at])[::-1]
    return replace(ranking, fused=fused)
