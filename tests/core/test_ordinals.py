"""Ordinal events: "the third X" is grounded by the ordinals memory states about X's kind."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import pytest

from ramem_core import (
    Conversation,
    EpisodicContext,
    FrameContext,
    Granularity,
    MemoryUnit,
    RaMem,
    Relation,
    RetrievalConfig,
    RuleFrameInducer,
    Session,
    TimeSpan,
    Turn,
)
from ramem_core.ordinals import Ordinal, ordinals, same_kind
from ramem_core.testing import FakeLookup

NOW = datetime(2023, 6, 30)
RANGE = TimeSpan(datetime(2023, 1, 1), NOW, Granularity.INSTANT)


@pytest.mark.parametrize(
    ("text", "number", "kind"),
    [
        ("When did Nate win his third tourney?", 3, ("tourney",)),
        ("I won my first video game tournament last week!", 1, ("video", "game", "tournament")),
        ("What is the name of Maria's second puppy?", 2, ("puppy",)),
        ("I finished the 2nd draft of the novel", 2, ("draft",)),
    ],
)
def test_an_ordinal_and_what_it_counts_are_read(
    text: str, number: int, kind: tuple[str, ...]
) -> None:
    [found] = ordinals(text)
    assert (found.number, found.kind) == (number, kind)


@pytest.mark.parametrize(
    "text",
    [
        "It was the first time I saw the sea.",  # a time, not an event of a kind
        "How long has Nate had his first two turtles?",  # a count
        "What did we do in the first half of May?",  # a part of a month
        "At first I did not like it.",  # no one's first anything
    ],
)
def test_phrases_that_count_no_event_are_not_ordinals(text: str) -> None:
    assert ordinals(text) == []


def test_kinds_are_compared_by_their_stems() -> None:
    [asked] = ordinals("When did Nate win his third tourney?")
    [same] = ordinals("I won my fourth video game tournament on Friday")
    [other] = ordinals("I finished my second screenplay")
    assert same_kind(asked, same)
    assert not same_kind(asked, other)


def _statement(uid: str, text: str, day: datetime, event: TimeSpan | None = None) -> MemoryUnit:
    said = TimeSpan(day, day.replace(hour=23), Granularity.INSTANT)
    return MemoryUnit(uid, text, EpisodicContext(uid, "c", said, event_time=event))


def _context(statements: Sequence[MemoryUnit]) -> FrameContext:
    def stated(asked: Ordinal, _people: Sequence[str]) -> list[tuple[Ordinal, MemoryUnit]]:
        return [(o, u) for u in statements for o in ordinals(u.content) if same_kind(asked, o)]

    return FrameContext(now=NOW, memory_range=RANGE, memory=FakeLookup(stated=stated))


LAST_WEEK = TimeSpan(datetime(2023, 2, 1), datetime(2023, 2, 5, 23), Granularity.WEEK)
SECOND = _statement("s2", "I won my second tournament last week!", datetime(2023, 2, 10), LAST_WEEK)
FOURTH = _statement("s4", "I won my fourth tournament!", datetime(2023, 4, 20))


def test_the_third_grounds_between_the_stated_second_and_fourth() -> None:
    frame = RuleFrameInducer().induce(
        "When did Ben win his third tournament?", _context([SECOND, FOURTH])
    )
    [t] = frame.grounded_times
    assert t.window is not None
    assert t.anchor_id is None
    assert not t.padded
    # after the session that stated the second, before the session that stated the fourth
    assert t.window.start > datetime(2023, 2, 10, 23)
    assert t.window.end < datetime(2023, 4, 20)


def test_the_third_grounds_on_the_memory_that_states_it() -> None:
    event = TimeSpan(datetime(2023, 3, 4), datetime(2023, 3, 5, 23), Granularity.DAY)
    third = _statement("s3", "I won my third tournament last weekend", datetime(2023, 3, 8), event)
    frame = RuleFrameInducer().induce(
        "When did Ben win his third tournament?", _context([SECOND, third, FOURTH])
    )
    [t] = frame.grounded_times
    assert t.anchor_id == "s3"
    assert t.window == TimeSpan(datetime(2023, 3, 4), datetime(2023, 3, 8, 23), Granularity.DAY)


def test_ordinals_stated_out_of_order_or_not_at_all_ground_nothing() -> None:
    late_first = _statement("x", "I won my first tournament!", datetime(2023, 3, 1))
    for statements in ([SECOND, late_first], []):
        frame = RuleFrameInducer().induce(
            "When did Ben win his third tournament?", _context(statements)
        )
        assert frame.grounded_times == ()
        assert [t.text for t in frame.times] == ["third tournament"]  # kept, not used


def test_after_the_nth_anchors_on_the_memory_that_states_it() -> None:
    frame = RuleFrameInducer().induce(
        "What did Ben buy after his second tournament?", _context([SECOND, FOURTH])
    )
    [t] = frame.grounded_times
    assert t.relation is Relation.AFTER
    assert t.anchor_id == "s2"
    assert t.window is not None
    assert t.window.start > datetime(2023, 2, 10, 23)


def _tournaments() -> Conversation:
    """Nate's tournaments: the first, second and fourth say which they are, the third does
    not; Alice's "third" is hers, and Nate's "third draft" is another kind."""

    def session(sid: str, day: datetime, *turns: tuple[str, str]) -> Session:
        return Session(
            sid, tuple(Turn(f"{sid}:{i}", who, text) for i, (who, text) in enumerate(turns, 1)), day
        )

    return Conversation(
        "c",
        (
            session("A", datetime(2023, 1, 10, 18), ("Nate", "I won my first tournament today!")),
            session(
                "B",
                datetime(2023, 2, 1, 18),
                ("Alice", "I won my third tournament years ago, in college."),
                ("Nate", "I wrote the third draft of my tournament report."),
            ),
            session("C", datetime(2023, 2, 10, 18), ("Nate", "I won my second tournament!")),
            session("D", datetime(2023, 3, 20, 18), ("Nate", "Came out on top at the blitz open!")),
            session("E", datetime(2023, 4, 20, 18), ("Nate", "I won my fourth tournament!")),
        ),
        ("Nate", "Alice"),
    )


def test_the_third_tournament_is_found_by_the_stated_second_and_fourth(memory: RaMem) -> None:
    memory.add_conversation(_tournaments())
    query = "When did Nate win his third tournament?"
    found = memory.recall(query, k=3)
    [t] = found.frame.grounded_times
    # Alice's third and the third draft are not Nate's third tournament
    assert t.anchor_id is None
    assert t.reason == "after the stated #2 and before the stated #4"
    assert found[0].unit.source_ids == ("D:1",)
    off = RaMem(memory.store, config=RetrievalConfig(ordinals=False)).recall(query, k=3)
    assert off.frame.grounded_times == ()
    assert off[0].unit.source_ids != ("D:1",)
