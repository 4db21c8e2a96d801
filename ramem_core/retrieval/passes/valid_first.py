"""Valid memories first: the frame's consistent memories of the relevant pool move ahead."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ramem_core.retrieval.passes.base import Facts, Pick, Picks


@dataclass(frozen=True, slots=True)
class ValidFirst:
    """The pool's memories that satisfy the frame's conditions (or hold a lasting state
    through its window, :class:`~.held.HeldThrough`) first, then the window's
    ``window_slots`` best from below the pool (a narrow window often holds evidence that
    shares few words with the question); every other memory keeps its order after them.

    Args:
        window_slots: how many of a window's memories below the pool join them.
    """

    window_slots: int
    name: str = "valid-first"

    def __call__(self, facts: Facts, picks: Picks) -> Picks:
        if not facts.conditions:
            return picks
        mask = facts.conditions.mask(facts.snap)
        by_row = {p.row: p for p in picks}
        valid = [row for row in facts.pool if mask[row] or by_row[row].held is not None]
        if facts.conditions.windows and self.window_slots:
            taken = set(facts.pool)
            best = facts.ranking.top(len(taken) + self.window_slots, among=mask)
            valid += [row for row in best if row not in taken][: self.window_slots]
        first = set(valid)
        moved = [replace(by_row.get(row) or Pick(row), valid=True) for row in valid]
        return moved + [p for p in picks if p.row not in first]
