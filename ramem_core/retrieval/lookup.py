"""What stage 2 may ask of memory while it grounds a question: where an anchor event was
said, whether memory covers a span.

One :class:`SnapshotLookup` is made per question, over the snapshot the ranking will read and
the question's :class:`~ramem_core.retrieval.ranking.Probe`, and handed to the frame inducer
in its :class:`~ramem_core.protocols.FrameContext`: stage 2 never calls back into the facade
or the retriever.
"""

from __future__ import annotations

import numpy as np

from ramem_core.index import products
from ramem_core.index.snapshot import Snapshot
from ramem_core.protocols import Embedder
from ramem_core.retrieval.ranking import Probe
from ramem_core.types import MemoryUnit, TimeSpan

ANCHOR_CANDIDATES = 1000
"""A relation's anchor event is sought among the question's most similar memories (and the
phrase's best lexical matches), not in a second pass over every memory (see
:meth:`SnapshotLookup.locate`). Not tuned: the dev namespaces are below it."""


class SnapshotLookup:
    """The :class:`~ramem_core.protocols.MemoryLookup` of one snapshot for one question.

    Args:
        snap: the snapshot the question's ranking reads.
        embedder: embeds anchor phrases (with the question, in one call).
        probe: the question against ``snap``, or ``None`` (anchors are then sought among
            every memory).
        min_similarity: cosine needed to accept a memory as an anchor
            (:attr:`RetrievalConfig.anchor_min_similarity`).
    """

    def __init__(
        self,
        snap: Snapshot,
        embedder: Embedder,
        probe: Probe | None = None,
        *,
        min_similarity: float = 0.35,
    ) -> None:
        self.snap = snap
        self.embedder = embedder
        self.probe = probe
        self.min_similarity = min_similarity

    def covers(self, span: TimeSpan) -> bool:
        """True when some memory was said or happened within ``span``."""
        return self.snap.covers(span)

    def locate(self, phrase: str) -> MemoryUnit | None:
        """The memory that names the event ``phrase`` ("the trip"), if it does so unambiguously.

        Only statements are anchors, never recorded questions or replies. Unambiguous means
        the best dense match is also among the best three lexical matches and is similar
        enough. With a probe, the best dense match is sought among the
        :data:`ANCHOR_CANDIDATES` memories most similar to the question and the phrase's three
        best lexical matches (the question's cosines are computed once, for this and for its
        ranking). Without it, among every memory.
        """
        snap, probe = self.snap, self.probe
        if not len(snap) or snap.vectors is None:
            return None
        texts = [phrase] if probe is None else [phrase, probe.text]
        vector = self.embedder.embed(texts)[0]  # with the question: one embedder call
        # an anchor is something said first-hand: a recorded question ("what did I do after
        # moving to Lisbon?") or a reply names the event without placing it
        statements = ~snap.derived
        if not statements.any():
            return None
        lexical = np.where(statements, snap.index.lexical_scores(phrase), 0.0)
        if probe is None or len(snap) <= ANCHOR_CANDIDATES:
            rows = np.flatnonzero(statements)
        else:
            asked = np.where(statements, probe.cosines, -np.inf)
            near = np.argpartition(-asked, ANCHOR_CANDIDATES - 1)[:ANCHOR_CANDIDATES]
            named = np.argpartition(-lexical, 2)[:3]
            rows = np.union1d(near, named)
            rows = rows[statements[rows]]
        similarity = products.cosines_with(snap.vectors[rows], vector)
        best = int(rows[int(np.argmax(similarity))])
        if float(similarity.max()) < self.min_similarity:
            return None
        score = lexical[best]
        # its place in the stable lexical ranking, counted (a sort of every memory is slower)
        place = int(np.count_nonzero(lexical > score) + np.count_nonzero(lexical[:best] == score))
        if score <= 0 or place >= 3:
            return None
        return snap.unit(best)
