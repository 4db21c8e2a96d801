"""The grounded part of a recall frame as conditions a memory can satisfy: time windows,
people, and a before/after relation's anchor side."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import numpy as np

from ramem_core.index.episodic import session_key
from ramem_core.index.snapshot import Mask, Snapshot
from ramem_core.temporal import describe
from ramem_core.types import MemoryUnit, RecallFrame, Relation, TimeSpan, to_epoch

BEFORE_AFTER = (Relation.BEFORE, Relation.AFTER)


def mostly_within(event: TimeSpan, window: TimeSpan) -> bool:
    """True when most of ``event`` lies in ``window``: its middle does, and it is no longer.

    "Last week" is a Monday-to-Sunday week, and "the week before 16 November" is not: an event
    known to the week counts for a week-long window it mostly overlaps. An event known only to
    the month or year does not count for a shorter window. Computed on epoch seconds, as the
    snapshot mask does (:meth:`Conditions.mask`)."""
    start, end = to_epoch(event.start), to_epoch(event.end)
    return bool(_mostly_within(start, end, to_epoch(window.start), to_epoch(window.end)))


def _mostly_within(start: Any, end: Any, first: int, last: int) -> Any:
    """:func:`mostly_within` on epoch seconds: ``start``/``end`` are ints or arrays of them."""
    length = end - start
    middle = start + length // 2
    return (middle >= first) & (middle <= last) & (length <= last - first)


@dataclass(frozen=True, slots=True)
class Conditions:
    """The grounded part of a frame, as conditions a memory can satisfy.

    A memory is time-valid for a window when its event time lies mostly inside the window
    (:func:`mostly_within`) or, when its event time is unknown and session context is on, when
    its session span overlaps it. ``windows`` (padded) select the memories that move ahead;
    ``exact`` (as grounded) are what :meth:`satisfied` says, so the explanation a model reads
    is true of the memory's own coordinates. "After X" means after X's event, or after X's
    session where a memory's event is unknown: a memory of the anchor's own session
    (``anchor_sessions``) with no event time is never said to lie in a before/after window
    (``relations``), and with ``strict`` the ranking keeps it out too
    (:attr:`RetrievalConfig.exclude_anchor`); one with an event time is judged by its event.
    """

    windows: tuple[tuple[str, TimeSpan], ...] = ()
    participants: tuple[str, ...] = ()
    session_context: bool = True
    exact: tuple[tuple[str, TimeSpan], ...] | None = None
    anchor_sessions: frozenset[tuple[str, str]] = frozenset()
    relations: frozenset[str] = frozenset()
    strict: bool = False

    @classmethod
    def of(
        cls,
        frame: RecallFrame,
        session_context: bool = True,
        padding: timedelta = timedelta(0),
        strict_relations: bool = False,
    ) -> Conditions:
        """The conditions of ``frame``'s grounded constraints, windows widened by ``padding``
        where they are :attr:`~ramem_core.types.TimeConstraint.padded` (with
        ``strict_relations``, never on a before/after relation's anchor side)."""
        windows, exact = [], []
        for t in frame.grounded_times:
            if t.window is None:
                continue
            pad = padding if t.padded else timedelta(0)
            after = strict_relations and t.relation is Relation.AFTER
            before = strict_relations and t.relation is Relation.BEFORE
            start = t.window.start - (timedelta(0) if after else pad)
            end = t.window.end + (timedelta(0) if before else pad)
            windows.append((t.text, TimeSpan(start, end, t.window.granularity)))
            exact.append((t.text, t.window))
        return cls(
            tuple(windows),
            frame.participants,
            session_context,
            tuple(exact),
            relations=frozenset(t.text for t in frame.grounded_times if t.relation in BEFORE_AFTER),
            strict=strict_relations,
        )

    def without_anchors(self, snapshot: Snapshot, frame: RecallFrame) -> Conditions:
        """These conditions with the sessions of ``frame``'s before/after anchor memories
        known (see the class)."""
        sessions = frozenset(
            session_key(snapshot.units[row]) for row in anchor_rows(snapshot, frame)
        )
        return replace(self, anchor_sessions=sessions) if sessions else self

    def __bool__(self) -> bool:
        return bool(self.windows or self.participants)

    def mask(self, snapshot: Snapshot) -> Mask:
        """The conditions over every memory of ``snapshot``."""
        ok = np.ones(len(snapshot), dtype=bool)
        if self.windows:
            timely = np.zeros(len(snapshot), dtype=bool)
            ev, se = snapshot.event, snapshot.session
            anchored = np.zeros(len(snapshot), dtype=bool)
            for key in self.anchor_sessions if self.strict else ():
                anchored[snapshot.session_rows(key)] = True
            for text, w in self.windows:
                start, end = to_epoch(w.start), to_epoch(w.end)
                timely |= ev.known & _mostly_within(ev.start, ev.end, start, end)
                if self.session_context:
                    said = ~ev.known & se.known & (se.start <= end) & (se.end >= start)
                    timely |= said & ~anchored if text in self.relations else said
            ok &= timely
        if self.participants:
            people = np.zeros(len(snapshot), dtype=bool)
            for name in self.participants:
                people |= snapshot.involving(name)
            ok &= people
        return ok

    def satisfied(self, unit: MemoryUnit) -> tuple[str, ...]:
        """Which conditions ``unit`` meets, in words ("why it is valid")."""
        met: list[str] = []
        ctx = unit.context
        anchored = (ctx.conversation_id, ctx.session_id) in self.anchor_sessions
        for text, w in self.windows if self.exact is None else self.exact:
            if ctx.event_time is not None:
                if mostly_within(ctx.event_time, w):
                    met.append(f"event {describe(ctx.event_time)} within {text!r}")
            elif (
                self.session_context
                and ctx.session_span is not None
                and ctx.session_span.overlaps(w)
                and not (anchored and text in self.relations)  # said in the anchor's episode
            ):
                met.append(f"said {describe(ctx.session_span)}, within {text!r}")
        lowered = {p.lower() for p in ctx.participants}
        met.extend(f"involves {p}" for p in self.participants if p.lower() in lowered)
        return tuple(met)


def anchor_rows(snapshot: Snapshot, frame: RecallFrame) -> dict[int, str]:
    """The rows of ``frame``'s before/after anchor memories found in ``snapshot``, each with
    the text of the first relation it anchors ("after the hospital visit")."""
    rows: dict[int, str] = {}
    for t in frame.grounded_times:
        if t.relation in BEFORE_AFTER and t.anchor_id is not None:
            row = snapshot.position.get(t.anchor_id)
            if row is not None:
                rows.setdefault(row, t.text)
    return rows


def on_anchor_side(unit: MemoryUnit, frame: RecallFrame) -> bool:
    """True when ``unit`` lies on the anchor's own side of one of ``frame``'s grounded
    before/after windows: its event (else its session) ends before an "after" window starts,
    or starts after a "before" window ends."""
    span = unit.context.event_time or unit.context.session_span
    if span is None:
        return False
    for t in frame.grounded_times:
        if t.window is None:
            continue
        if t.relation is Relation.AFTER and span.end < t.window.start:
            return True
        if t.relation is Relation.BEFORE and span.start > t.window.end:
            return True
    return False
