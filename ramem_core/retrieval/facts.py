"""A question's facts before the list passes: its conditions and its rankings.

:func:`gather` makes the :class:`~ramem_core.retrieval.passes.Facts` of one question: the
frame as conditions, the content ranking (:mod:`.ranking`), re-ranked by the learned fusion
(:mod:`.fusion`) and merged with the rankings of the frame's parts, the list's candidates and
the relevant pool, and the chains of statements that later ones supersede
(:mod:`.supersession`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt

from ramem_core.index.bm25 import Scores
from ramem_core.index.snapshot import Snapshot
from ramem_core.protocols import Embedder
from ramem_core.retrieval.conditions import Conditions
from ramem_core.retrieval.config import RetrievalConfig
from ramem_core.retrieval.fusion import Fusion, fusion_features, reranked
from ramem_core.retrieval.kinds import Kinds, KindVectors
from ramem_core.retrieval.passes.base import Facts
from ramem_core.retrieval.ranking import Probe, Ranking, asks_when, content_ranking, ranks
from ramem_core.retrieval.supersession import chains
from ramem_core.states import asks_plan
from ramem_core.types import RecallFrame


def gather(
    snap: Snapshot,
    frame: RecallFrame,
    probe: Probe,
    k: int,
    config: RetrievalConfig,
    embedder: Embedder,
    kind_vectors: KindVectors | None = None,
) -> Facts:
    """The facts of ``frame``'s question against ``snap`` for a list of ``k``
    (``kind_vectors``: the kinds of state are read from vectors too)."""
    cfg = config
    conditions = Conditions.of(
        frame, cfg.session_context, cfg.window_padding, strict_relations=cfg.exclude_anchor
    ).without_anchors(snap, frame)
    yields = cfg.derived_last is not None and cfg.derived_yield and not frame.asks_dialogue
    yielding = yields and snap.vectors is not None and bool(snap.derived.any())
    ranking = content_ranking(snap, frame, probe, cfg, yielding=yielding)
    if cfg.fusion is not None:
        ranking = fused(snap, frame, ranking, probe.cosines, cfg)
    if frame.parts:
        ranking = with_parts(snap, frame, ranking, cfg, embedder, yielding=yielding)
    width = max(k, cfg.validity_pool)
    if yielding:  # the list holds `width` statements, the pool is made of statements
        stated = ranking.top(width, among=~snap.derived)
        said = ranking.top(width, among=snap.derived)
        order = sorted(stated + said, key=lambda row: (-ranking.fused[row], row))
        pool = stated[: cfg.validity_pool]
    else:
        order = ranking.top(width)
        pool = order[: cfg.validity_pool]
    chain: dict[int, list[int]] = {}
    ordering: dict[int, list[int]] = {}
    doubts: dict[int, list[int]] = {}
    kinds = None
    if cfg.supersession and cfg.context_ranking:  # read now, never stored
        candidates = [*ranking.top(cfg.state_candidates, among=~snap.derived), *order]
        if kind_vectors is not None:
            kinds = kind_vectors.of(snap, candidates, frame.query, probe.vector)
        read = kinds or Kinds.of_words(snap, frame.query)
        model = cfg.replacement if asks_state_at(frame) else cfg.replacement.without_reader()
        found = chains(snap, candidates, model, read)
        # what is reordered for "now" is a state of one kind (or of the kind asked and one
        # not read), or a pair at least order_any_kind likely: LoCoMo's and LongMemEval's
        # lists lost turn@1 to pairs that are no states (benchmarks/results/TUNING.md)
        chain, doubts = found.at(model.label), found.at(model.doubt)
        ordering = found.ordered(model.order, read.bits, read.asked, cfg.order_any_kind)
    return Facts(
        snap,
        frame,
        probe,
        conditions,
        ranking,
        tuple(order),
        tuple(pool),
        yielding,
        chain,
        kinds,
        ordering,
        doubts,
    )


def asks_state_at(frame: RecallFrame) -> bool:
    """The question asks what held at a time: now (or when or where a plan still ahead is),
    at a time it names, or before a change (the earlier value: "originally", "used to").
    Only then does the replacement model's pair reader read (an order for "now", a "held
    through" line and the label an earlier value is read by rest on it; its cost, a pass of
    a transformer over up to :data:`~ramem_core.replacement.READ_PAIRS` pairs, is paid only
    there); any other question weighs replacements by the features alone, at their own
    thresholds."""
    plan = frame.now is not None and asks_plan(frame.query)
    return frame.asks_now or plan or frame.asks_earlier or bool(frame.grounded_times)


def fusion_inputs(
    snap: Snapshot,
    frame: RecallFrame,
    ranking: Ranking,
    cosines: Scores,
    fusion: Fusion,
    config: RetrievalConfig,
) -> tuple[list[int], dict[str, npt.NDArray[np.float64]]]:
    """The rows ``fusion`` re-ranks in ``ranking`` and their features: statements only (it
    was fitted on them; questions and replies keep their places)."""
    rows = fusion.rows(ranking, ~snap.derived)
    when = asks_when(frame, config)
    return rows, fusion_features(ranking, rows, snap, cosines, when, config.rrf_k)


def fused(
    snap: Snapshot, frame: RecallFrame, ranking: Ranking, cosines: Scores, config: RetrievalConfig
) -> Ranking:
    """``ranking`` with the config's fusion's candidates re-ranked by their learned scores."""
    assert config.fusion is not None
    rows, features = fusion_inputs(snap, frame, ranking, cosines, config.fusion, config)
    return reranked(ranking, rows, config.fusion.scores(features))


def with_parts(
    snap: Snapshot,
    frame: RecallFrame,
    ranking: Ranking,
    config: RetrievalConfig,
    embedder: Embedder,
    *,
    yielding: bool,
) -> Ranking:
    """``ranking`` merged with the content ranking of each of ``frame``'s parts
    (:attr:`RecallFrame.parts`): a memory ranks by its best place in any of the rankings,
    ties by its reciprocal ranks summed, so the first places go to the question's best and
    each part's best alike. The fused score becomes its place counted from the end. Not tuned
    (no model is at hand to propose parts)."""
    cfg = config
    rankings = [ranking]
    vectors = embedder.embed(list(frame.parts))  # one call for every part
    for part, vector in zip(frame.parts, vectors, strict=True):
        probe = Probe(snap, part, embedder, vector)
        asked = replace(frame, query=part, need=part, parts=())
        sub = content_ranking(snap, asked, probe, cfg, yielding=yielding)
        if cfg.fusion is not None:
            sub = fused(snap, asked, sub, probe.cosines, cfg)
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
