"""A lasting state held through the asked time counts as valid then ("Where did I live in
April?": "I live in Lisbon", said in March, superseded in May)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ramem_core.retrieval.passes.base import Facts, Picks
from ramem_core.retrieval.supersession import held_through


@dataclass(frozen=True, slots=True)
class HeldThrough:
    """Marks the relevant pool's statements of a lasting state of the kind asked about that
    held during one of the frame's windows (from when it began or was said until its first
    successor of that kind, :func:`~ramem_core.retrieval.supersession.held_through`), with
    the reason in words; :class:`~.valid_first.ValidFirst` then counts them valid. A
    successor counts as soon as it may have replaced the state (the model's doubt
    threshold, :attr:`.base.Facts.doubts`): the line then says the state held until it *if*
    that statement changed it, never that it held past it."""

    name: str = "held-through"

    def __call__(self, facts: Facts, picks: Picks) -> Picks:
        held = held_through(
            facts.snap, facts.frame, facts.conditions, facts.pool, facts.doubts, facts.kinds
        )
        if not held:
            return picks
        return [replace(p, held=held[p.row]) if p.row in held else p for p in picks]
