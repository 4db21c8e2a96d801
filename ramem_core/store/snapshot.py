"""A read-only snapshot of one namespace, derived from the Chroma collection.

Chroma stays the single source of truth; the snapshot is a cache rebuilt from it whenever the
namespace changed, so it survives restarts and never disagrees with the store for long. It holds
what recall needs on its hot path:

- client-side BM25 (bm25s): Chroma's hybrid ``Search`` API is not implemented for local Chroma;
- the episodic fields as arrays, so a recall frame selects the same memories as a Chroma
  ``where`` filter, as a boolean mask, in microseconds;
- the vectors, so dense ranking *inside* a frame's mask is an exact dot product. (Local Chroma
  evaluates metadata filters by scanning: 30-90 ms at 10k memories, growing linearly.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ramem_core.types import Granularity, MemoryUnit, TimeSpan, from_epoch, to_epoch

Mask = npt.NDArray[np.bool_]


def _stemmer() -> Any:
    try:
        import Stemmer
    except ImportError:  # PyStemmer is a dependency; stay usable without it
        return None
    return Stemmer.Stemmer("english")


@dataclass(frozen=True, slots=True)
class SpanArrays:
    """Epoch-second bounds of one episodic span field; ``known`` is False where unknown."""

    known: Mask
    start: npt.NDArray[np.int64]
    end: npt.NDArray[np.int64]


def _spans(units: Sequence[MemoryUnit], session: bool) -> SpanArrays:
    spans = [u.context.session_span if session else u.context.event_time for u in units]
    return SpanArrays(
        known=np.array([s is not None for s in spans], dtype=bool),
        start=np.array([to_epoch(s.start) if s else 0 for s in spans], dtype=np.int64),
        end=np.array([to_epoch(s.end) if s else 0 for s in spans], dtype=np.int64),
    )


def top_k(scores: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
    """Positions and scores of the ``k`` highest finite scores, best first."""
    k = min(k, int(np.isfinite(scores).sum()))
    if k <= 0:
        return []
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(int(i), float(scores[i])) for i in top]


class Snapshot:
    """Units, vectors, episodic arrays and a BM25 index of one namespace.

    Args:
        units: the namespace's memories (their order is the snapshot's order).
        vectors: one unit vector per memory, or ``None`` to skip in-mask dense search.
    """

    def __init__(
        self, units: Sequence[MemoryUnit], vectors: npt.NDArray[np.float32] | None = None
    ) -> None:
        import bm25s

        self.units = list(units)
        self.vectors = vectors
        self.position = {u.id: i for i, u in enumerate(self.units)}
        self.session = _spans(self.units, session=True)
        self.event = _spans(self.units, session=False)
        self.names = tuple(sorted({p for u in self.units for p in u.context.participants}))
        self.ubiquitous = self._ubiquitous()
        people: dict[str, list[int]] = {}
        for i, unit in enumerate(self.units):
            for name in {p.lower() for p in unit.context.participants}:
                people.setdefault(name, []).append(i)
        self._people = {name: np.array(rows, dtype=np.int64) for name, rows in people.items()}
        self.time_range = self._time_range()
        self.last_session_end = (
            from_epoch(int(self.session.end[self.session.known].max()))
            if self.session.known.any()
            else None
        )
        self._stemmer = _stemmer()
        self._bm25: bm25s.BM25 | None = None
        if self.units:
            tokens = bm25s.tokenize(
                [u.content for u in self.units], stemmer=self._stemmer, show_progress=False
            )
            self._bm25 = bm25s.BM25()
            self._bm25.index(tokens, show_progress=False)

    def __len__(self) -> int:
        return len(self.units)

    def _ubiquitous(self) -> frozenset[str]:
        """Speakers of every session: naming them cannot tell one episode from another."""
        speakers: dict[tuple[str, str], set[str]] = {}
        for unit in self.units:
            key = (unit.context.conversation_id, unit.context.session_id)
            names = {n.strip() for n in unit.context.speaker.split(",") if n.strip()}
            speakers.setdefault(key, set()).update(names)
        if len(speakers) < 2:
            return frozenset()
        return frozenset(set.intersection(*speakers.values()))

    def _time_range(self) -> TimeSpan | None:
        ses, ev = self.session, self.event
        starts = np.concatenate([ses.start[ses.known], ev.start[ev.known]])
        ends = np.concatenate([ses.end[ses.known], ev.end[ev.known]])
        if not len(starts):
            return None
        return TimeSpan(
            from_epoch(int(starts.min())), from_epoch(int(ends.max())), Granularity.INSTANT
        )

    def involving(self, name: str) -> Mask:
        """Memories whose participants include ``name`` (case-insensitive)."""
        mask = np.zeros(len(self.units), dtype=bool)
        rows = self._people.get(name.lower())
        if rows is not None:
            mask[rows] = True
        return mask

    def lexical(self, query: str, k: int, mask: Mask | None = None) -> list[tuple[int, float]]:
        """Top ``k`` (position, BM25 score) pairs scoring above 0, inside ``mask`` if given."""
        import bm25s

        if self._bm25 is None or k <= 0:
            return []
        tokens = bm25s.tokenize(
            [query], stemmer=self._stemmer, show_progress=False, allow_empty=True
        )
        vocab = {index: token for token, index in tokens.vocab.items()}
        words = [vocab[i] for i in tokens.ids[0]] if tokens.ids else []
        if not words:
            return []
        scores = np.asarray(self._bm25.get_scores(words), dtype=np.float32)
        rows = np.flatnonzero(scores > 0.0)  # usually a small share of the corpus
        if mask is not None:
            rows = rows[mask[rows]]
        return [(int(rows[i]), s) for i, s in top_k(scores[rows], k)]

    def dense(
        self, vector: npt.NDArray[np.float32], k: int, rows: npt.NDArray[np.int64]
    ) -> list[tuple[int, float]]:
        """Exact top ``k`` (position, cosine) pairs among the memories at ``rows``."""
        if self.vectors is None or k <= 0 or not len(rows):
            return []
        scores = self.vectors[rows] @ vector
        return [(int(rows[i]), s) for i, s in top_k(scores, k)]
