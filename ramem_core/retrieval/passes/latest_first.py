"""A question about now reads the latest statement of each changed state first."""

from __future__ import annotations

from dataclasses import dataclass

from ramem_core.index.snapshot import Snapshot
from ramem_core.retrieval.kinds import Kinds
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
    by_default: bool = False
    name: str = "latest-first"

    def asks_now(self, facts: Facts) -> bool:
        """The question asks about now: in so many words, or (``by_default``) it asks about
        a kind of state, in the present tense, and says no time of its own ("When is the
        reunion?")."""
        if facts.frame.asks_now:
            return True
        frame = facts.frame
        if not self.by_default or frame.times or asks_past(frame.query):
            return False
        kinds = facts.kinds or Kinds.of_words(facts.snap, frame.query)
        return bool(kinds.asked)

    def __call__(self, facts: Facts, picks: Picks) -> Picks:
        frame, snap = facts.frame, facts.snap
        if frame.asks_earlier or not self.asks_now(facts):
            return picks
        named = chains(snap, facts.pool, None, self.kind_similarity, facts.kinds)
        successor = successors_for(snap, named, frame.query, frame.now, facts.kinds)
        if not frame.asks_now:  # now by default: only a thing the question names
            successor = named_by(snap, frame.query, successor)
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


def named_by(snap: Snapshot, query: str, successor: dict[int, int]) -> dict[int, int]:
    """The pairs of ``successor`` whose statements both name a thing ``query`` names (a
    term of its own words: "When is the reunion?" and two statements of the reunion)."""
    asked = set(snap.index.tokenize(query))
    counts = snap.index.own_counts
    return {a: b for a, b in successor.items() if asked & counts[a].keys() & counts[b].keys()}
