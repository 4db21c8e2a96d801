"""Stage 3 of RaMem: validity-aware retrieval, read top-down.

:meth:`Retriever.recall` is the whole read path of one question against one snapshot:

1. :meth:`Retriever.probe` — the question's vector and its cosine with every memory, once.
2. The frame inducer (stage 2) grounds the question, handed a :class:`lookup.SnapshotLookup`
   of the same snapshot (anchors, coverage); it never calls back.
3. :meth:`Retriever.retrieve` — the question's facts (:mod:`.facts`: the frame as
   conditions, :mod:`.conditions`; the content ranking, :mod:`.ranking`, re-ranked by the
   learned fusion, :mod:`.fusion`), then the list passes the config assembles
   (:mod:`.passes`, one module each), and the evidence with what each memory satisfied
   (:mod:`.evidence`).

The recall frame only ever adds: frame-consistent memories move ahead *inside a relevant
pool*, the top ``validity_pool`` of the content ranking; relevant memories outside the frame
keep their order after them, and nothing is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from ramem_core.embedding import RecentQueries
from ramem_core.errors import InvalidInputError
from ramem_core.index.bm25 import Scores
from ramem_core.index.snapshot import Mask, Snapshot
from ramem_core.protocols import Embedder, FrameContext, FrameInducer
from ramem_core.retrieval.conditions import Conditions, mostly_within, on_anchor_side
from ramem_core.retrieval.config import CONTENT_ONLY, RetrievalConfig
from ramem_core.retrieval.evidence import evidence
from ramem_core.retrieval.facts import fusion_inputs, gather
from ramem_core.retrieval.fusion import (
    FUSION_FEATURES,
    LEARNED_FUSION,
    Fusion,
    fusion_features,
    load_fusion,
)
from ramem_core.retrieval.kinds import KindVectors
from ramem_core.retrieval.lookup import ANCHOR_CANDIDATES, SnapshotLookup
from ramem_core.retrieval.members import asked_kind
from ramem_core.retrieval.passes import ListPass, Pick, pipeline
from ramem_core.retrieval.ranking import Probe, Ranking, content_ranking, rank, ranks
from ramem_core.types import DEFAULT_K, Evidence, Recall, RecallFrame, TimeSpan

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
        # the second round's terms are embedded by the wrapped embedder: they are no questions
        inner = embedder.inner if isinstance(embedder, RecentQueries) else embedder
        self.passes = pipeline(self.config, inner)
        vectors = self.config.state_kind_vectors
        self.kind_vectors = (
            KindVectors(inner, vectors, self.config.lasting) if vectors is not None else None
        )

    def pass_named(self, name: str) -> ListPass:
        """The pass of :attr:`passes` called ``name`` (``KeyError`` if the config has none)."""
        for step in self.passes:
            if step.name == name:
                return step
        raise KeyError(name)

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
        kind = asked_kind(text) if self.config.members is not None else None
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
        )

    # ------------------------------------------------------------------ the ranked list

    def retrieve(
        self, snap: Snapshot, frame: RecallFrame, k: int = DEFAULT_K, probe: Probe | None = None
    ) -> list[Evidence]:
        """The top ``k`` evidence of ``snap`` for ``frame``: the question's facts
        (:func:`.facts.gather`), then each pass of :attr:`passes` in turn over the ranking's
        best. ``probe``: the frame's question against ``snap``, if one was made already."""
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            msg = f"k must be a positive integer, got {k!r}"
            raise InvalidInputError(msg)
        if not len(snap):
            return []
        if probe is None or probe.snap is not snap or probe.text != frame.query:
            probe = self.probe(snap, frame.query)
        facts = gather(snap, frame, probe, k, self.config, self.embedder, self.kind_vectors)
        picks = [Pick(row) for row in facts.order]
        for step in self.passes:
            picks = step(facts, picks)
        return evidence(picks[:k], facts, dense=self.config.dense)

    def fusion_candidates(
        self, snap: Snapshot, frame: RecallFrame, fusion: Fusion
    ) -> tuple[list[int], dict[str, npt.NDArray[np.float64]]]:
        """The statements ``fusion`` would re-rank for ``frame`` (:meth:`Fusion.rows` of the
        fixed fusion's ranking) and their :data:`FUSION_FEATURES` by name: what a learned
        fusion is fitted on (``benchmarks/audit_ranking.py``)."""
        probe = self.probe(snap, frame.query)
        ranking = content_ranking(
            snap, frame, probe, self.config, yielding=bool(snap.derived.any())
        )
        return fusion_inputs(snap, frame, ranking, probe.cosines, fusion, self.config)

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
