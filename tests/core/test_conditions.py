"""Stage 3, the frame as conditions (:mod:`ramem_core.retrieval.conditions`): windows, masks,
people and anchor sides, and "why valid" labels true of each memory's own coordinates."""

from __future__ import annotations

from datetime import datetime

import pytest

from ramem_core import (
    Conversation,
    EpisodicContext,
    Granularity,
    MemoryUnit,
    RaMem,
    Recall,
    RetrievalConfig,
    TimeSpan,
)
from ramem_core.retrieval import (
    Conditions,
    mostly_within,
)
from ramem_core.testing import WordCounter
from tests.builders import conversation, session
from tests.conftest import back_from_lisbon, two_trips


def reference_select(memory: RaMem, conditions: Conditions) -> list[MemoryUnit]:
    """The memories that meet ``conditions``, read one by one off each memory's own
    coordinates (its whole session's span): what the vectorised mask must select."""
    snap = memory.snapshots.get(memory.namespace)
    out = []
    for row in range(len(snap)):
        ctx = snap.unit(row).context
        timely = not conditions.windows or any(
            mostly_within(ctx.event_time, w)
            if ctx.event_time is not None
            else conditions.session_context
            and ctx.session_span is not None
            and ctx.session_span.overlaps(w)
            for _, w in conditions.windows
        )
        people = {p.lower() for p in ctx.participants}
        named = not conditions.participants or any(
            p.lower() in people for p in conditions.participants
        )
        if timely and named:
            out.append(snap.unit(row))
    return out


@pytest.mark.parametrize(
    "query",
    [
        "What did Alice say in August?",
        "What did Ben say in March?",
        "Who talked about sardines in February?",
        "What did Alice do after the Lisbon holiday?",
    ],
)
def test_the_mask_selects_what_each_memorys_coordinates_meet(memory: RaMem, query: str) -> None:
    memory.add_conversation(two_trips())
    frame = memory.frame(query)
    conditions = Conditions.of(frame)
    assert conditions, f"expected a grounded frame for {query!r}: {frame}"
    index = memory.snapshots.get(memory.namespace)
    masked = {index.units[i].id for i in conditions.mask(index).nonzero()[0]}
    filtered = {u.id for u in reference_select(memory, conditions)}
    assert masked == filtered
    assert all(conditions.satisfied(u) for u in index.units if u.id in masked)


def test_an_event_counts_for_a_window_it_mostly_lies_in(memory: RaMem) -> None:
    said = TimeSpan(
        datetime(2023, 11, 16, 18, 0), datetime(2023, 11, 16, 19, 0), Granularity.INSTANT
    )

    def unit(uid: str, start: datetime, end: datetime, granularity: Granularity) -> MemoryUnit:
        event = TimeSpan(start, end.replace(hour=23, minute=59, second=59), granularity)
        context = EpisodicContext("S", "c", said, event, participants=("Ben",), speaker="Ben")
        return MemoryUnit(uid, f"Ben: trip {uid}", context)

    memory.add_units(
        [
            # Monday to Sunday, 6-12 November: most of it lies in 9-15 November (padded 7-17)
            unit("week", datetime(2023, 11, 6), datetime(2023, 11, 12), Granularity.WEEK),
            unit("day", datetime(2023, 11, 10), datetime(2023, 11, 10), Granularity.DAY),
            # the week before: only its Sunday lies in the padded window
            unit("early", datetime(2023, 10, 30), datetime(2023, 11, 5), Granularity.WEEK),
            # known to the month only: longer than the window, so no evidence of the week
            unit("month", datetime(2023, 11, 1), datetime(2023, 11, 30), Granularity.MONTH),
        ]
    )
    frame = memory.frame("Where was Ben the week before 16 November 2023?")
    conditions = Conditions.of(frame, padding=RetrievalConfig().window_padding)
    snap = memory.snapshots.get(memory.namespace)
    masked = {snap.units[i].id for i in conditions.mask(snap).nonzero()[0]}
    filtered = {u.id for u in reference_select(memory, conditions)}
    assert masked == filtered == {"week", "day"}
    timely = {u.id for u in snap.units if any("within" in m for m in conditions.satisfied(u))}
    assert timely == masked


def test_a_year_long_event_does_not_cover_every_week_of_its_year(memory: RaMem) -> None:
    def said(day: datetime) -> TimeSpan:
        return TimeSpan(day, day.replace(hour=23), Granularity.INSTANT)

    year = TimeSpan(datetime(2022, 1, 1), datetime(2022, 12, 31, 23, 59, 59), Granularity.YEAR)
    memory.add_units(
        [
            MemoryUnit(
                "a", "Ben: a quiet week", EpisodicContext("A", "c", said(datetime(2023, 11, 10)))
            ),
            MemoryUnit(
                "b",
                "Ben: I moved in 2022",
                EpisodicContext("B", "c", said(datetime(2023, 11, 16)), year),
            ),
        ]
    )
    # November 2022 lies in the 2022 event's year, but nothing is known to have happened in
    # its second week: only November 2023 holds a memory of that week
    [constraint] = memory.frame("What did Ben do in the second week of November?").times
    assert constraint.grounded
    assert constraint.window is not None
    assert constraint.window.start == datetime(2023, 11, 8)


def test_session_context_switch_changes_the_filter(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    frame = memory.frame("What did Ben say in March?")
    with_session = Conditions.of(frame, session_context=True)
    without = Conditions.of(frame, session_context=False)
    index = memory.snapshots.get(memory.namespace)
    assert with_session.mask(index).sum() > without.mask(index).sum()


def test_participants_constrain_only_when_they_tell_episodes_apart(memory: RaMem) -> None:
    visit = session(
        "S4",
        datetime(2023, 9, 2, 12, 0),
        "Carol: Hi both, I brought grilled sardines from the market.",
        "Alice: Thanks Carol, they smell great.",
    )
    trips = two_trips()
    memory.add_conversation(Conversation(trips.id, (*trips.sessions, visit), trips.participants))
    assert memory.frame("What did Alice say about sardines?").participants == ()
    frame = memory.frame("What did Carol bring?")
    assert frame.participants == ("Carol",)
    conditions = Conditions.of(frame)
    snap = memory.snapshots.get(memory.namespace)
    masked = {snap.units[i].id for i in conditions.mask(snap).nonzero()[0]}
    filtered = {u.id for u in reference_select(memory, conditions)}
    assert masked == filtered
    assert {snap.units[snap.position[i]].source_ids[0] for i in masked} == {"S4:1", "S4:2"}
    top, second, third = memory.recall("What did Carol bring?", k=3)
    assert {top.unit.source_ids[0], second.unit.source_ids[0]} == {"S4:1", "S4:2"}
    assert "involves Carol" in top.satisfied
    assert top.contextual
    assert not third.contextual
    assert top.score >= second.score > 1.0 > third.score  # scores fall with rank


def test_frame_windows_are_padded_by_two_days(memory: RaMem) -> None:
    # said late on 30 July: just outside "in August", inside it once padded by two days
    memory.add_conversation(
        Conversation(
            "c",
            (
                session("J", datetime(2023, 7, 30, 23, 0), "Ben: We booked the sailing trip."),
                session("S", datetime(2023, 12, 1), "Alice: Snow again."),
            ),
        )
    )
    frame = memory.frame("What did Ben book in August?")
    assert frame.grounded_times
    snap = memory.snapshots.get(memory.namespace)
    padded = Conditions.of(frame, padding=memory.retriever.config.window_padding)
    assert {snap.units[i].source_ids[0] for i in padded.mask(snap).nonzero()[0]} == {"J:1"}
    assert not Conditions.of(frame).mask(snap).any()
    filtered = reference_select(memory, padded)
    assert [u.source_ids[0] for u in filtered] == ["J:1"]  # one by one agrees
    [top] = memory.recall("What did Ben book in August?", k=1)
    assert top.contextual  # moved ahead by the padded window ...
    assert not [s for s in top.satisfied if "August" in s]  # ... never said to be in August


def _labels_hold(found: Recall) -> None:
    """Every "why valid" label is true of the memory's own coordinates and the exact
    (unpadded) windows of the frame."""
    windows = {t.text: t.window for t in found.frame.grounded_times if t.window is not None}
    for e in found:
        ctx = e.unit.context
        for label in e.satisfied:
            if label.startswith("involves "):
                continue
            text = label.split(" within ")[1].strip("'\"")
            window = windows[text]
            if label.startswith("event "):
                assert ctx.event_time is not None
                assert mostly_within(ctx.event_time, window), label
            else:
                assert ctx.event_time is None, label
                assert ctx.session_span is not None
                assert ctx.session_span.overlaps(window), label


@pytest.mark.parametrize(
    "query",
    [
        "What did Alice do after the Lisbon holiday?",
        "What did Ben eat before the trip to Lisbon?",
        "What did the doctor say in August?",
        "What happened in March?",
    ],
)
def test_why_valid_never_contradicts_the_coordinates(memory: RaMem, query: str) -> None:
    memory.add_conversation(two_trips())
    found = memory.recall(query)
    _labels_hold(found)
    anchors = {
        t.anchor_id for t in found.frame.grounded_times if t.relation is not None and t.anchor_id
    }
    if anchors:
        snap = memory.snapshots.get(memory.namespace)
        sessions = {snap.unit(snap.position[a]).context.session_id for a in anchors}
        for e in found:  # what the anchor's own episode said is not "after" or "before" it
            if e.unit.context.session_id in sessions and e.unit.context.event_time is None:
                assert not [s for s in e.satisfied if "within" in s], e


def test_strict_relations_keep_the_anchor_out_of_the_ranking(memory: RaMem) -> None:
    back_from_lisbon(memory)
    query = "What did Ben do after the Lisbon trip?"
    loose = memory.recall(query)
    assert [t.anchor_id for t in loose.frame.grounded_times if t.anchor_id]  # located
    _labels_hold(loose)
    assert {e.unit.source_ids[0] for e in loose if e.contextual} >= {"A:2"}  # padding
    anchor = next(e for e in loose if e.unit.source_ids[0] == "A:1")  # the trip: the anchor
    assert anchor.anchor == "after the Lisbon trip"
    assert not anchor.contextual
    assert all(e.satisfied == () for e in loose if e.unit.source_ids[0].startswith("A:"))
    config = RetrievalConfig(exclude_anchor=True)
    strict = RaMem(memory.store, counter=WordCounter(), config=config).recall(query)
    assert {e.unit.source_ids[0] for e in strict if e.contextual} == {"B:1"}
    assert strict[0].unit.source_ids == ("B:1",)


@pytest.mark.parametrize("exclude_anchor", [False, True])
def test_in_the_anchors_episode_a_later_event_is_judged_by_its_event(
    memory: RaMem, exclude_anchor: bool
) -> None:
    """ "After the trip" means after the trip's event: a plan told in the same session for a
    later week is after it; the session's small talk is not."""
    back = session(
        "A",
        datetime(2023, 5, 20, 19),  # said after the trip: its small talk overlaps "after"
        "Ben: I got back from the Lisbon trip last week.",
        "Alice: Welcome back! Tell me everything.",
        "Ben: I start a new job next week.",
    )
    later = session("B", datetime(2023, 6, 2), "Ben: I started a pottery class.")
    memory.add_conversation(conversation("c", back, later))
    config = RetrievalConfig(exclude_anchor=exclude_anchor)
    found = RaMem(memory.store, counter=WordCounter(), config=config).recall(
        "What did Ben do after the Lisbon trip?"
    )
    _labels_hold(found)
    by_turn = {e.unit.source_ids[0]: e for e in found}
    assert [s for s in by_turn["A:3"].satisfied if "within" in s]  # its event: a later week
    assert not by_turn["A:2"].satisfied  # said in the anchor's episode, no event of its own
    assert not by_turn["A:1"].satisfied  # the trip itself
    assert by_turn["A:3"].contextual
    assert by_turn["A:2"].contextual is not exclude_anchor  # strict: kept out of the ranking
