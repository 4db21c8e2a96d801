"""A question about now reads the latest statement of each changed state first."""

from __future__ import annotations

from dataclasses import dataclass

from ramem_core.retrieval.kinds import APPOINTMENT, Kinds
from ramem_core.retrieval.passes.base import Facts, Picks
from ramem_core.retrieval.supersession import chains, successors_for
from ramem_core.states import asks_past


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
    events_by_default: bool = False
    name: str = "latest-first"

    def __call__(self, facts: Facts, picks: Picks) -> Picks:
        frame, snap = facts.frame, facts.snap
        kinds = facts.kinds or Kinds.of_words(snap, frame.query)
        by_default = not frame.asks_now and self._asks_event(facts, kinds)
        if not (frame.asks_now or by_default) or frame.asks_earlier:
            return picks
        named = chains(snap, facts.pool, None, self.kind_similarity, kinds)
        successor = successors_for(snap, named, frame.query, frame.now, kinds)
        if by_default:  # only the event the question names, said again
            asked = set(snap.index.tokenize(frame.query))
            counts = snap.index.own_counts
            successor = {
                a: b
                for a, b in successor.items()
                if int(kinds.bits[a]) & int(kinds.bits[b]) & APPOINTMENT
                and asked & counts[a].keys() & counts[b].keys()
            }
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

    def _asks_event(self, facts: Facts, kinds: Kinds) -> bool:
        """With ``events_by_default``: a present-tense question about an appointment that
        says no time of its own ("When is the reunion?") asks about now."""
        frame = facts.frame
        if not self.events_by_default or frame.times or asks_past(frame.query):
            return False
        return bool(kinds.asked & APPOINTMENT)
