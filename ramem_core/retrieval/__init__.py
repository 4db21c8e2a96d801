"""Stage 3 of RaMem: validity-aware retrieval, read top-down.

:meth:`Retriever.recall` is the whole read path of one question against one snapshot:

1. :meth:`Retriever.probe` — the question's vector and its cosine with every memory, once.
2. The frame inducer (stage 2) grounds the question, handed a :class:`lookup.SnapshotLookup`
   of the same snapshot (anchors, ordinals, coverage); it never calls back.
3. :meth:`Retriever.retrieve` — the content ranking (:mod:`.ranking`), the learned fusion
   (:mod:`.fusion`), the frame as conditions (:mod:`.conditions`), then the list passes
   (:mod:`.policies`; the state passes of :mod:`.supersession`; last, the second round of
   :mod:`.members`), and the evidence with what each memory satisfied.

The recall frame only ever adds: frame-consistent memories move ahead *inside a relevant
pool*, the top ``validity_pool`` of the content ranking; relevant memories outside the frame
keep their order after them, and nothing is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from ramem_core.embedding import RecentQueries
from ramem_core.errors import InvalidInputError
from ramem_core.index.bm25 import Scores
from ramem_core.index.snapshot import Mask, Snapshot
from ramem_core.protocols import Embedder, FrameContext, FrameInducer
from ramem_core.retrieval import members, policies, supersession
from ramem_core.retrieval.conditions import Conditions, mostly_within, on_anchor_side
from ramem_core.retrieval.config import CONTENT_ONLY, RetrievalConfig
from ramem_core.retrieval.fusion import (
    FUSION_FEATURES,
    LEARNED_FUSION,
    Fusion,
    fusion_features,
    load_fusion,
    reranked,
)
from ramem_core.retrieval.lookup import ANCHOR_CANDIDATES, SnapshotLookup
from ramem_core.retrieval.ranking import Probe, Ranking, asks_when, content_ranking, rank, ranks
from ramem_core.types import DEFAULT_K, Evidence, Member, Recall, RecallFrame, TimeSpan

__all__ = [
    "ANCHOR_CANDIDATES",
    "CONTENT_ONLY",
    "FUSION_FEATURES",
    "LEARNED_FUSION",
    "Conditions",
    "Fusion",
    "Probe",
    "Ranking",
    "RetrievalConfig",
    "Retriever",
    "SnapshotLookup",
    "fusion_features",
    "load_fusion",
    "mostly_within",
    "on_anchor_side",
    "ranks",
]


def _with_held(satisfied: tuple[str, ...], held: str | None) -> tuple[str, ...]:
    """What a memory satisfies, with the lasting state it held through a window when its
    own times say nothing of that window."""
    if held is None or any("within" in s for s in satisfied):
        return satisfied
    return (*satisfied, held)


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
        # the second round's term vectors (the wrapped embedder: terms are not questions)
        inner = embedder.inner if isinstance(embedder, RecentQueries) else embedder
        round_ = self.config.members
        self.terms = members.TermVectors(inner, round_.inline_terms if round_ else None)

    # ------------------------------------------------------------------ one question

    def recall(
        self,
        snap: Snapshot,
        query: str,
        inducer: FrameInducer,
        k: int = DEFAULT_K,
        *,
        at: datetime | None = None,
    ) -> Recall:
        """The ``k`` best memories of ``snap`` for ``query`` with the frame they were chosen
        by: the question probed once, grounded by ``inducer`` (stage 2), then ranked."""
        probe = self.probe(snap, query)
        frame = self.frame(probe, inducer, at=at)
        return Recall(frame, tuple(self.retrieve(snap, frame, k, probe)))

    def probe(self, snap: Snapshot, text: str) -> Probe:
        """A question against ``snap`` whose vector and cosines are computed when first
        needed, once (for a question the second round runs for, embedded now with the kind
        it asks for, in one pass)."""
        kind = members.asked_kind(text) if self.config.members is not None else None
        if kind is None:
            return Probe(snap, text, self.embedder)
        return Probe(snap, text, self.embedder, self.embedder.embed([text, kind])[0])

    def frame(
        self, probe: Probe, inducer: FrameInducer, *, at: datetime | None = None
    ) -> RecallFrame:
        """Stage 2 for ``probe``'s question: ``inducer`` handed what it may know of the
        snapshot (:meth:`context`)."""
        return inducer.induce(probe.text, self.context(probe, at))

    def context(self, probe: Probe, at: datetime | None = None) -> FrameContext:
        """What a frame inducer may know of ``probe``'s snapshot: ``at`` (the query's checked
        time) else the end of its last session as now, its range (up to ``at`` when that is
        later: on a live agent what was said still holds at the moment of asking, so "Where
        did I live in June?" asked in August grounds though nothing was said since May),
        people, and a :class:`SnapshotLookup` over it for this question."""
        snap = probe.snap
        known = snap.time_range
        if known is not None and at is not None and at > known.end:
            known = TimeSpan(known.start, at, known.granularity)
        return FrameContext(
            now=at if at is not None else snap.last_session_end,
            memory_range=known,
            # a person who speaks in every session cannot tell one episode from another
            participants=tuple(n for n in snap.names if n not in snap.ubiquitous),
            speakers=tuple(snap.index.speakers),
            memory=self.lookup(snap, probe),
        )

    def lookup(self, snap: Snapshot, probe: Probe | None = None) -> SnapshotLookup:
        """What stage 2 may ask of ``snap`` (anchors sought near ``probe``'s question)."""
        cfg = self.config
        return SnapshotLookup(
            snap,
            self.embedder,
            probe,
            min_similarity=cfg.anchor_min_similarity,
            ordinals=cfg.ordinals,
        )

    # ------------------------------------------------------------------ the ranked list

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
        ).without_anchors(snap, frame)
        derived = cfg.derived_last is not None and snap.vectors is not None
        last = derived and cfg.derived_yield and not frame.asks_dialogue
        yielding = last and bool(snap.derived.any())

        ranking = content_ranking(snap, frame, probe, cfg, yielding=yielding)
        if cfg.fusion is not None:
            ranking = self._fused(snap, frame, ranking, probe.cosines, cfg.fusion)
        if frame.parts:
            ranking = self._with_parts(snap, frame, ranking, yielding=yielding)
        width = max(k, cfg.validity_pool)
        order, pool = policies.candidates(
            ranking, snap, width, cfg.validity_pool, yielding=yielding
        )
        successor: dict[int, int] = {}  # superseded -> its successor (labels)
        latest: dict[int, int] = {}  # the chains a question about now reads latest first
        held: dict[int, str] = {}
        restated: list[tuple[list[int], list[int]]] = []  # chains restating the value asked
        if cfg.supersession and cfg.context_ranking:
            # which candidates a later statement supersedes (read now, never stored)
            candidates = [*ranking.top(cfg.state_candidates, among=~snap.derived), *order]
            chain = supersession.chains(
                snap, candidates, cfg.state_similarity, cfg.state_kind_similarity
            )
            successor = supersession.successors_for(snap, chain, frame.query)
            held = supersession.held_through(snap, frame, conditions, pool, chain)
            if frame.asks_now and not frame.asks_earlier:
                # chains of a named kind of state (where one lives, works, an appointment);
                # chains by similarity alone put a later statement that is not the evidence
                # first too often (LongMemEval choose part, results/bench_updates.json)
                named = supersession.chains(snap, pool, None, cfg.state_kind_similarity)
                latest = supersession.successors_for(snap, named, frame.query, frame.now)
            # and the statements restating the value asked for, latest day first
            if cfg.restate_share is not None and supersession.asks_latest_value(frame):
                restated = supersession.restated(snap, frame, pool, cfg.restate_share)
        chosen = policies.valid_first(
            ranking,
            snap,
            conditions if cfg.context_ranking else Conditions(),
            order,
            pool,
            cfg.window_slots,
            held,
        )
        if cfg.derived_last is not None and derived:
            chosen = policies.after_their_sources(
                chosen, snap, cfg.derived_last, to_end=last, always=last and cfg.derived_yield_all
            )
        if latest:
            chosen = supersession.latest_first(chosen, cfg.validity_pool, latest)
        if restated:
            chosen = supersession.latest_day_first(chosen, restated)
        if cfg.anchor_side_slots and cfg.context_ranking:
            # over the relevant pool whatever k is: a longer list starts as a shorter one
            chosen = policies.anchor_side_free(
                chosen, cfg.validity_pool, cfg.anchor_side_slots, snap, frame
            )
        found: dict[int, Member] = {}
        if cfg.members is not None:
            # last: the state passes' first places stay; a longer list starts as a shorter one
            chosen, found = self._with_members(
                snap, frame, ranking, chosen, conditions, cfg.members
            )
        return self._evidence(
            chosen[:k], snap, ranking, probe.cosines, conditions, successor, held, found
        )

    def _with_members(
        self,
        snap: Snapshot,
        frame: RecallFrame,
        ranking: Ranking,
        chosen: policies.Chosen,
        conditions: Conditions,
        round_: members.SecondRound,
    ) -> tuple[policies.Chosen, dict[int, Member]]:
        """``chosen`` with the second round's finds (:mod:`.members`) after its first
        ``round_.start`` places, restricted by the frame's conditions as the first round was
        (when it has some and :attr:`RetrievalConfig.context_ranking` is on), and the member
        each find names."""
        restricted = bool(conditions) and self.config.context_ranking
        found = members.members(
            snap,
            frame.query,
            ranking,
            [row for row, _ in chosen[: round_.start + round_.slots]],
            conditions.mask(snap) if restricted else None,
            frame.speakers,
            self.terms,
            round_,
            self.embedder,  # the kind's vector is held: embedded with the question
        )
        return members.with_members(chosen, list(found), round_.start, restricted), found

    def fusion_candidates(
        self, snap: Snapshot, frame: RecallFrame, fusion: Fusion
    ) -> tuple[list[int], dict[str, npt.NDArray[np.float64]]]:
        """The statements ``fusion`` would re-rank for ``frame`` (:meth:`Fusion.rows` of the
        fixed fusion's ranking) and their :data:`FUSION_FEATURES` by name: what a learned
        fusion is fitted on (``benchmarks/fit_fusion.py``)."""
        probe = self.probe(snap, frame.query)
        ranking = content_ranking(
            snap, frame, probe, self.config, yielding=bool(snap.derived.any())
        )
        return self._fusion_inputs(snap, frame, ranking, probe.cosines, fusion)

    def _fusion_inputs(
        self, snap: Snapshot, frame: RecallFrame, ranking: Ranking, cosines: Scores, fusion: Fusion
    ) -> tuple[list[int], dict[str, npt.NDArray[np.float64]]]:
        """The rows ``fusion`` re-ranks in ``ranking`` and their features: statements only
        (it was fitted on them; questions and replies keep their places)."""
        rows = fusion.rows(ranking, ~snap.derived)
        when = asks_when(frame, self.config)
        return rows, fusion_features(ranking, rows, snap, cosines, when, self.config.rrf_k)

    def _with_parts(
        self, snap: Snapshot, frame: RecallFrame, ranking: Ranking, *, yielding: bool
    ) -> Ranking:
        """``ranking`` merged with the content ranking of each of ``frame``'s parts
        (:attr:`RecallFrame.parts`) in turn: a memory ranks by its best place in any of the
        rankings (the question's own and each part's), ties by its reciprocal ranks summed, so
        the first places go to the question's best and each part's best alike and a memory
        that answers several parts leads its tie (recorded questions and replies still yield
        to statements afterwards). The fused score becomes its place counted from the end.
        Not tuned (no model is at hand to propose parts)."""
        cfg = self.config
        rankings = [ranking]
        vectors = self.embedder.embed(list(frame.parts))  # one call for every part
        for part, vector in zip(frame.parts, vectors, strict=True):
            probe = Probe(snap, part, self.embedder, vector)
            asked = replace(frame, query=part, need=part, parts=())
            sub = content_ranking(snap, asked, probe, cfg, yielding=yielding)
            if cfg.fusion is not None:
                sub = self._fused(snap, asked, sub, probe.cosines, cfg.fusion)
            rankings.append(sub)
        n = len(ranking.fused)
        best = np.full(n, cfg.depth, dtype=np.int64)
        summed = np.zeros(n, dtype=np.float64)
        for each in rankings:
            place = ranks(each.fused, cfg.depth, positive=False)
            best = np.minimum(best, place)
            summed += 1.0 / (cfg.rrf_k + 1 + place)
        order = np.lexsort((-summed, best))  # by the best place, then the summed ranks
        merged = np.empty(n, dtype=np.float32)
        merged[order] = np.arange(n, 0, -1, dtype=np.float32)  # exact up to 2**24 memories
        return replace(ranking, fused=merged)

    def _fused(
        self, snap: Snapshot, frame: RecallFrame, ranking: Ranking, cosines: Scores, fusion: Fusion
    ) -> Ranking:
        """``ranking`` with ``fusion``'s candidates re-ranked by their learned scores."""
        rows, features = self._fusion_inputs(snap, frame, ranking, cosines, fusion)
        return reranked(ranking, rows, fusion.scores(features))

    def _evidence(
        self,
        chosen: policies.Chosen,
        snap: Snapshot,
        ranking: Ranking,
        cosines: Scores,
        conditions: Conditions,
        successor: Mapping[int, int],
        held: Mapping[int, str],
        found: Mapping[int, Member] | None = None,
    ) -> list[Evidence]:
        """The chosen rows as evidence: scores, the raw signals, why each is valid, for a
        superseded one by what, and for a find of the second round the member it names."""
        cfg = self.config
        evidence = []
        ceiling = np.inf
        for place, (row, contextual) in enumerate(chosen, start=1):
            unit = snap.unit(row)
            lexical = float(ranking.lexical[row]) if ranking.lexical is not None else 0.0
            # a question or reply moved after its source takes at most the score before it
            score = min(float(ranking.fused[row]) + (1.0 if contextual else 0.0), ceiling)
            ceiling = score
            evidence.append(
                Evidence(
                    unit=unit,
                    score=score,
                    rank=place,
                    dense_score=(
                        float(cosines[row]) if cfg.dense and snap.vectors is not None else None
                    ),
                    lexical_score=lexical if lexical > 0 else None,
                    contextual=contextual,
                    satisfied=_with_held(conditions.satisfied(unit), held.get(row)),
                    superseded=supersession.supersession(snap, row, successor),
                    member=(found or {}).get(row),
                )
            )
        return evidence

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
        """The content ranking of ``text`` under this retriever's config
        (:func:`~ramem_core.retrieval.ranking.rank`)."""
        return rank(snap, text, vector, self.config, cosines, speakers=speakers, apart=apart)
