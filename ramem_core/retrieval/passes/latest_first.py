"""A question about now reads the latest statement of each changed state first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ramem_core.index.snapshot import Snapshot
from ramem_core.retrieval.passes.base import Facts, Picks
from ramem_core.retrieval.supersession import successors_for
from ramem_core.states import asks_plan


@dataclass(frozen=True, slots=True)
class LatestFirst:
    """For a question about now (not about an earlier value), or when or where a plan still
    ahead is (:func:`~ramem_core.states.asks_plan`, the later statement's date after the
    moment of asking), each statement of the first
    ``pool`` places that a later one likely replaced (the replacement model's order
    threshold: an order is no claim, :attr:`.base.Facts.ordering`) has its successor moved up
    to right before it, when the successor is among those places too and its state has begun
    by now.

    Args:
        pool: the places it reorders.
    """

    pool: int
    name: str = "latest-first"

    def __call__(self, facts: Facts, picks: Picks) -> Picks:
        frame, snap = facts.frame, facts.snap
        plan = not frame.asks_now and frame.now is not None and asks_plan(frame.query)
        if not (frame.asks_now or plan) or frame.asks_earlier:
            return picks
        pooled_rows = set(facts.pool)
        named = {
            row: kept
            for row, later in facts.ordering.items()
            if row in pooled_rows and (kept := [r for r in later if r in pooled_rows])
        }
        successor = successors_for(snap, named, frame.query, frame.now, facts.kinds)
        if plan:  # "When is the reunion?": only a plan still ahead is read as it stands now
            successor = {
                row: later
                for row, later in successor.items()
                if _ahead(snap, later, row, frame.now)
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


def _ahead(snap: Snapshot, later: int, earlier: int, now: datetime | None) -> bool:
    """The plan ``later`` restates lies (or ends) after ``now``: by its own date, else, when
    it names none ("The ski week is Banff now"), by the date of the plan it changes."""
    when = snap.units[later].context.event_time or snap.units[earlier].context.event_time
    return now is not None and when is not None and when.end > now
