"""A value stated again on a later day is read from its latest day first."""

from __future__ import annotations

from dataclasses import dataclass

from ramem_core.retrieval.passes.base import Facts, Picks
from ramem_core.retrieval.supersession import asks_latest_value, restated


@dataclass(frozen=True, slots=True)
class LatestDayFirst:
    """For a question about a value now, or at no time in particular
    (:func:`~ramem_core.retrieval.supersession.asks_latest_value`), the relevant pool's
    statements that state it on two or more days
    (:func:`~ramem_core.retrieval.supersession.restated`) take the places they hold with
    those of the latest day first; every other memory keeps its place.

    Args:
        share: the share of the question's words (weighted by idf) a statement must hold.
    """

    share: float
    name: str = "latest-day-first"

    def __call__(self, facts: Facts, picks: Picks) -> Picks:
        if not asks_latest_value(facts.frame):
            return picks
        out = list(picks)
        for later, earlier in restated(facts.snap, facts.frame, facts.pool, self.share):
            members = set(later) | set(earlier)
            places = [i for i, p in enumerate(out) if p.row in members]
            late = set(later)
            ordered = [out[i] for i in places if out[i].row in late]
            ordered += [out[i] for i in places if out[i].row not in late]
            for place, pick in zip(places, ordered, strict=True):
                out[place] = pick
        return out
