"""A question about now reads the latest statement of each changed state first."""

from __future__ import annotations

from dataclasses import dataclass

from ramem_core.retrieval.passes.base import Facts, Picks
from ramem_core.retrieval.supersession import chains, successors_for


@dataclass(frozen=True, slots=True)
class LatestFirst:
    """For a question about now (not about an earlier value), each statement of the first
    ``pool`` places that a later statement of a named kind of state supersedes (where one
    lives, works, an appointment: chains by similarity alone put a later statement that is
    not the evidence first too often) has its successor moved up to right before it, when
    the successor is among those places too and its state has begun by now.

    Args:
        kind_similarity: the cosine two statements of one kind of state need.
        pool: the places it reorders.
    """

    kind_similarity: float
    pool: int
    name: str = "latest-first"

    def __call__(self, facts: Facts, picks: Picks) -> Picks:
        frame, snap = facts.frame, facts.snap
        if not frame.asks_now or frame.asks_earlier:
            return picks
        named = chains(snap, facts.pool, None, self.kind_similarity, facts.kinds)
        successor = successors_for(snap, named, frame.query, frame.now, facts.kinds)
        if not successor:
            return picks
        by_row = {p.row: p for p in picks}
        pooled = {p.row for p in picks[: self.pool]}
        out: Picks = []
        placed: set[int] = set()
        for place, pick in enumerate(picks):
            if pick.row in placed:
                continue
            later = successor.get(pick.row)
            if place < self.pool and later in pooled and later not in placed:
                out.append(by_row[later])
                placed.add(later)
            out.append(pick)
            placed.add(pick.row)
        return out
