"""The content ranking: every memory scored by its episodic keys, fused by reciprocal rank.

A dense ranking (``cos(turn) + cos(window)``) and a lexical one (BM25 of the episodic keys)
are fused by reciprocal rank, plus a bonus for memories said by a person the question names
(see :class:`~ramem_core.index.episodic.EpisodicKeys`). Nothing here knows about the recall
frame except the "says when" bonus, which the frame asks for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ramem_core.index.bm25 import Scores
from ramem_core.index.episodic import EpisodicKeys
from ramem_core.index.snapshot import Mask, Snapshot
from ramem_core.protocols import Embedder
from ramem_core.types import RecallFrame


class RankingSettings(Protocol):
    """What the content ranking reads of a config (a
    :class:`~ramem_core.retrieval.config.RetrievalConfig` is one): named here so that this
    module needs no import of the config, which imports the passes built on it."""

    @property
    def keys(self) -> EpisodicKeys: ...
    @property
    def rrf_k(self) -> int: ...
    @property
    def depth(self) -> int: ...
    @property
    def dense(self) -> bool: ...
    @property
    def lexical(self) -> bool: ...
    @property
    def context_ranking(self) -> bool: ...
    @property
    def time_weight(self) -> float: ...


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

    def __init__(
        self,
        snap: Snapshot,
        text: str,
        embedder: Embedder,
        vector: npt.NDArray[np.float32] | None = None,
    ) -> None:
        self.snap = snap
        self.text = text
        self.embedder = embedder
        self._vector: npt.NDArray[np.float32] | None = vector  # embedded already, if given
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


def rank(
    snap: Snapshot,
    text: str,
    vector: npt.NDArray[np.float32],
    config: RankingSettings,
    cosines: Scores | None = None,
    *,
    speakers: Sequence[str] = (),
    apart: Mask | None = None,
) -> Ranking:
    """Fused content ranking of every memory of ``snap``: the whole ranking formula.

    Reciprocal-rank fusion of the dense ranking (``cos(turn) + cos(window)``) and the lexical
    ranking (BM25 of the episodic keys, :class:`~ramem_core.index.episodic.EpisodicKeys`),
    plus a bonus for memories said by ``speakers`` (the people the question names,
    :attr:`RecallFrame.speakers`). ``cosines``: the memories' cosines with ``vector``, if
    computed already. ``apart``: rows ranked among themselves in every ranking (recorded
    questions and replies), so they take no rank from the others and the others' order is
    what it would be without them.
    """
    cfg, index = config, snap.index

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
    named = [name for name in speakers if name in index.speakers]
    if cfg.keys.speaker_weight > 0 and named:
        # said by a person the question names: as if ranked first in that person's list
        said = np.zeros(len(snap), dtype=np.float32)
        for name in named:
            said[index.speakers[name]] = 1.0
        parts["speaker"] = said
        fused += said * (cfg.keys.speaker_weight / (cfg.rrf_k + 1))
    return Ranking(fused, dense, lexical, parts)


def asks_when(frame: RecallFrame, config: RankingSettings) -> bool:
    """Whether memories that say when count for ``frame``: it asks when, and the time bonus
    (part of the frame) is on."""
    return frame.asks_when and config.context_ranking and config.time_weight > 0


def content_ranking(
    snap: Snapshot, frame: RecallFrame, probe: Probe, config: RankingSettings, *, yielding: bool
) -> Ranking:
    """The content ranking of ``frame``'s question, with the when-bonus; ``yielding``: recorded
    questions and replies are ranked apart."""
    ranking = rank(
        snap,
        frame.query,
        probe.vector,
        config,
        probe.cosines,
        speakers=frame.speakers,
        apart=snap.derived if yielding else None,
    )
    if asks_when(frame, config):
        bonus = np.where(snap.timed, config.time_weight / (config.rrf_k + 1), 0.0)
        ranking = replace(ranking, fused=ranking.fused + bonus.astype(np.float32))
    return ranking
