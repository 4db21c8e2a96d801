"""Off the anchor's side first: "after the trip" is not the trip."""

from __future__ import annotations

from dataclasses import dataclass

from ramem_core.retrieval.conditions import BEFORE_AFTER, on_anchor_side
from ramem_core.retrieval.passes.base import Facts, Picks


@dataclass(frozen=True, slots=True)
class AnchorSideFirst:
    """For a before/after question, the first ``slots`` places go to the best memories of
    the first ``pool`` that are not on the anchor's side
    (:func:`~ramem_core.retrieval.conditions.on_anchor_side`), when one of the first
    ``slots`` is; the others keep their order after them, and none leaves the pool.

    Args:
        pool: the places it reorders (the relevant pool, whatever k is).
        slots: the first places it fills.
    """

    pool: int
    slots: int
    name: str = "anchor-side-first"

    def __call__(self, facts: Facts, picks: Picks) -> Picks:
        frame, snap = facts.frame, facts.snap
        if not any(t.relation in BEFORE_AFTER for t in frame.grounded_times):
            return picks
        top = picks[: self.pool]
        side = [on_anchor_side(snap.unit(p.row), frame) for p in top]
        if not any(side[: self.slots]):
            return picks
        free = [i for i, s in enumerate(side) if not s][: self.slots]
        first = [top[i] for i in free]
        return first + [p for i, p in enumerate(top) if i not in free] + picks[self.pool :]
