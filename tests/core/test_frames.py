"""Stage 2: recall frames grounded against the conversation's own dates, never the wall clock."""

from __future__ import annotations

from datetime import datetime

import pytest

from ramem_core import (
    EpisodicContext,
    FrameContext,
    Granularity,
    MemoryUnit,
    Relation,
    RuleFrameInducer,
    TimeSpan,
)
from ramem_core.memory import RaMem
from ramem_core.testing import FakeLookup

NOW = datetime(2023, 11, 20, 19, 15)  # end of the last session
RANGE = TimeSpan(datetime(2023, 2, 10, 19, 5), NOW, Granularity.INSTANT)
TRIP = TimeSpan(datetime(2023, 5, 14), datetime(2023, 5, 14, 23, 59, 59), Granularity.DAY)
MARATHON = MemoryUnit("m1", "Ben: I ran the marathon!", EpisodicContext("S4", "c", TRIP))


def locate(phrase: str) -> MemoryUnit | None:
    return MARATHON if "marathon" in phrase else None


CTX = FrameContext(
    now=NOW, memory_range=RANGE, participants=("Alice", "Ben"), memory=FakeLookup(locate=locate)
)


def induce(query: str, context: FrameContext = CTX):
    return RuleFrameInducer().induce(query, context)


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [
        ("What did the doctor say last August?", "2023-08-01", "2023-08-31"),
        ("What did Ben do in May?", "2023-05-01", "2023-05-31"),
        ("What happened in February?", "2023-02-01", "2023-02-28"),  # the past May/Feb only
        ("What did we talk about last month?", "2023-10-01", "2023-10-31"),
        ("What did Alice say two weeks ago?", "2023-11-06", "2023-11-12"),
        ("Where did Ben go in August 2023?", "2023-08-01", "2023-08-31"),
        ("What did Alice do in 2023?", "2023-01-01", "2023-12-31"),
    ],
)
def test_grounded_time_windows(query: str, first: str, last: str) -> None:
    frame = induce(query)
    [constraint] = frame.grounded_times
    assert constraint.window is not None
    assert constraint.window.start.date().isoformat() == first
    assert constraint.window.end.date().isoformat() == last
    assert frame.is_grounded


@pytest.mark.parametrize(
    ("query", "reason_part"),
    [
        ("What did Ben do in 1999?", "outside"),  # outside the conversation's dates
        ("What will Alice do next year?", "outside"),
        ("What happened in March 2019?", "outside"),
    ],
)
def test_out_of_range_constraints_stay_ungrounded(query: str, reason_part: str) -> None:
    frame = induce(query)
    assert frame.grounded_times == ()
    assert frame.times
    assert not frame.times[0].grounded
    assert reason_part in frame.times[0].reason


def test_month_without_year_is_ambiguous_over_a_long_range() -> None:
    long_range = TimeSpan(datetime(2021, 1, 1), NOW, Granularity.INSTANT)
    context = FrameContext(now=NOW, memory_range=long_range, participants=())
    frame = induce("What did we do in March?", context)
    assert frame.grounded_times == ()
    assert "ambiguous" in frame.times[0].reason


def test_now_comes_from_the_conversation_not_the_wall_clock() -> None:
    frame = induce("What did Ben do last year?")
    # the wall clock says 2026; the conversation's "now" is November 2023
    assert frame.grounded_times == ()
    assert frame.times[0].window is not None
    assert frame.times[0].window.start.year == 2022


def test_caller_query_time_moves_now() -> None:
    context = FrameContext(now=datetime(2023, 9, 5), memory_range=RANGE, participants=())
    [constraint] = induce("What did I buy last week?", context).grounded_times
    assert constraint.window is not None
    assert constraint.window.start.date().isoformat() == "2023-08-28"


def test_empty_memory_grounds_nothing() -> None:
    context = FrameContext(now=None, memory_range=None, participants=())
    frame = induce("What did Ben do last August?", context)
    assert not frame.is_grounded


def test_participants_are_known_names_only() -> None:
    frame = induce("What did Alice's friend Zoe say to Ben?")
    assert frame.participants == ("Alice", "Ben")


def test_no_constraint_means_ungrounded_frame_and_whole_need() -> None:
    frame = induce("What is the best way to cook rice?")
    assert not frame.is_grounded
    assert frame.need == frame.query


def test_need_drops_grounded_time_words() -> None:
    assert induce("What did the doctor say last August?").need == "What did the doctor say?"
    # the preposition that led to the time goes with it
    assert induce("Where was Ben in the week before 16 November 2023?").need == "Where was Ben?"
    assert induce("What did Alice read in May?").need == "What did Alice read?"


def test_relation_to_an_event_found_in_memory() -> None:
    frame = induce("What did the doctor say after the marathon?")
    [constraint] = frame.grounded_times
    assert constraint.relation is Relation.AFTER
    assert constraint.anchor == "the marathon"
    assert constraint.window is not None
    assert constraint.window.start > TRIP.end
    assert constraint.window.end == RANGE.end
    assert constraint.anchor_id == "m1"  # which memory located the anchor, for evaluation
    assert frame.need == "What did the doctor say?"


@pytest.mark.parametrize(
    "query",
    [
        "How many days before the marathon did I buy the shoes?",
        "How long after the marathon did Ben see the doctor?",
        "How many weeks had passed since the marathon when Alice moved?",
    ],
)
def test_a_distance_question_is_not_a_filter(query: str) -> None:
    # both events are evidence: filtering to one side of the anchor would drop the other
    frame = induce(query)
    assert not frame.grounded_times
    [constraint] = frame.times
    assert constraint.anchor == "the marathon"
    assert "distance" in constraint.reason
    assert frame.need == query


def _covering(*months: int) -> FrameContext:
    wide = TimeSpan(datetime(2021, 1, 1), NOW, Granularity.INSTANT)
    return FrameContext(
        now=NOW,
        memory_range=wide,
        memory=FakeLookup(
            covers=lambda span: any(
                span.overlaps(TimeSpan(datetime(y, m, 1), datetime(y, m, 28), Granularity.DAY))
                for y, m in [divmod(x, 100) for x in months]
            )
        ),
    )


def test_a_yearless_month_means_the_one_memory_covers() -> None:
    # three Augusts lie in range, but only August 2022 holds memories
    [constraint] = induce("What did we do in August?", _covering(202208, 202302)).grounded_times
    assert constraint.window is not None
    assert constraint.window.start == datetime(2022, 8, 1)
    # two covered Augusts: ambiguous, so not a filter
    [unsure] = induce("What did we do in August?", _covering(202108, 202208)).times
    assert not unsure.grounded
    assert "ambiguous" in unsure.reason


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [
        ("What did Ben do in the summer?", "2023-06-01", "2023-08-31"),
        ("What did Alice read between February and April?", "2023-02-01", "2023-04-30"),
        ("What did Ben cook in early 2023?", "2023-01-01", "2023-04-30"),
        ("Where did we go the weekend before last?", "2023-11-11", "2023-11-12"),
        ("What happened last summer?", "2023-06-01", "2023-08-31"),
        ("Where was Ben between August 11 and August 15 2023?", "2023-08-11", "2023-08-15"),
        ("What did Alice read from 3 May to 5 May?", "2023-05-03", "2023-05-05"),
        ("Where was Ben between May 3 and 7?", "2023-05-03", "2023-05-07"),
        ("Which country was Ben in the second week of November?", "2023-11-08", "2023-11-14"),
        ("What did Alice bake in the last week of June 2023?", "2023-06-24", "2023-06-30"),
        ("What did Ben cook in the last four months?", "2023-07-20", "2023-11-20"),
        ("Which airline did Alice fly in March and April?", "2023-03-01", "2023-04-30"),
        ("Where was Ben the week before 16 November 2023?", "2023-11-09", "2023-11-15"),
        ("What did Alice do the month before June 2023?", "2023-05-01", "2023-05-31"),
        ("What did Ben eat the day after the marathon?", "2023-05-15", "2023-05-15"),
        ("What did Ben do the weekend before the marathon?", "2023-05-06", "2023-05-07"),
        ("What did Ben do the weekend after the marathon?", "2023-05-20", "2023-05-21"),
    ],
)
def test_what_people_say_grounds(query: str, first: str, last: str) -> None:
    [constraint] = induce(query).grounded_times
    assert constraint.window is not None
    assert constraint.window.start.date().isoformat() == first
    assert constraint.window.end.date().isoformat() == last


def test_the_weekend_before_last_is_a_time_not_a_relation() -> None:
    [constraint] = induce("Where did we go the weekend before last?").times
    assert constraint.relation is None
    assert constraint.grounded


def test_a_relation_to_a_date_keeps_the_year_after_its_comma() -> None:
    # "August 3" alone is yearless; ", 2023" belongs to the anchor
    [constraint] = induce("What did Ben do the week before August 3, 2023 with the kids?").times
    assert constraint.anchor is not None
    assert "2023" in constraint.anchor
    assert constraint.window is not None
    assert constraint.window.start.date().isoformat() == "2023-07-27"


def test_relation_keeps_the_main_clause_in_the_need() -> None:
    frame = induce("After the marathon did Ben see the doctor?")
    [constraint] = frame.grounded_times
    assert constraint.anchor == "the marathon"
    assert frame.need == "did Ben see the doctor?"


def test_relation_with_offset() -> None:
    frame = induce("What did Ben buy two weeks before the marathon?")
    [constraint] = frame.grounded_times
    assert constraint.window is not None
    assert constraint.window.granularity is Granularity.WEEK
    assert constraint.window.start.date().isoformat() == "2023-04-24"


def test_relation_to_a_time() -> None:
    [constraint] = induce("What did Alice do before June 2023?").grounded_times
    assert constraint.relation is Relation.BEFORE
    assert constraint.window is not None
    assert constraint.window.start == RANGE.start
    assert constraint.window.end < datetime(2023, 6, 1)


def test_relation_to_an_unknown_event_is_dropped_not_guessed() -> None:
    frame = induce("What did Alice say after the wedding?")
    assert frame.grounded_times == ()
    assert frame.times[0].relation is Relation.AFTER
    assert "not found" in frame.times[0].reason
    assert frame.need == frame.query


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("When did Caroline go to the LGBTQ support group?", True),
        ("when's the party?", True),
        ("In what year did Maria move?", True),
        ("Which month did they adopt the dog?", True),
        ("What date is the concert?", True),
        ("How long ago did Jon start the job?", True),
        ("What did Melanie paint?", False),
        ("How many days before the meeting did I attend the workshop?", False),
        ("Where was Ben when it rained?", False),
        ("What time-saving tips did I get?", True),  # a known false positive: a soft bonus
    ],
)
def test_questions_asking_when_are_recognised(query: str, asks: bool) -> None:
    from ramem_core.frames import asks_for_time

    assert asks_for_time(query) is asks


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("What did you recommend for Lisbon?", True),
        ("Can you remind me what you told me about the hotel?", True),
        ("I remember you mentioned a book about Rome, which one?", True),
        ("What did I ask you yesterday?", True),
        ("What was your advice on tents?", True),
        ("Can you remind me where I went last week?", False),
        ("Do you know what I bought?", False),
        ("What did Caroline tell Melanie?", False),
        ("Where did you go camping?", False),
    ],
)
def test_questions_about_the_dialogue_with_the_agent_are_recognised(query: str, asks: bool) -> None:
    from ramem_core.frames import asks_about_dialogue

    assert asks_about_dialogue(query) is asks


@pytest.mark.parametrize(
    "query",
    [
        "What did we do in March?",
        "What happened the week after the marathon?",
        "What did Ben do 999 years after the marathon?",
        "Where was Ben between December 28 and January 3?",
        "What did we do in the last 999 years?",
    ],
)
@pytest.mark.parametrize("year", [1, 9999])
def test_frames_at_the_ends_of_the_calendar_ground_nothing_and_never_raise(
    query: str, year: int
) -> None:
    day = TimeSpan(datetime(year, 1, 1), datetime(year, 12, 30, 23), Granularity.INSTANT)
    marathon = MemoryUnit("m", "Ben: the marathon", EpisodicContext("S", "c", day))
    context = FrameContext(
        now=day.end, memory_range=day, memory=FakeLookup(locate=lambda _phrase: marathon)
    )
    frame = induce(query, context)
    assert all(t.window is None or t.window.overlaps(day) for t in frame.grounded_times)


NOW_FOR_CUES = datetime(2023, 8, 28)


def test_the_frame_carries_what_ranking_needs_so_no_stage_reparses_the_query() -> None:
    context = FrameContext(now=NOW_FOR_CUES, memory_range=None, speakers=("Melanie", "Ben"))
    painted = RuleFrameInducer().induce("What has Melanie painted?", context)
    assert painted.speakers == ("Melanie",)
    assert painted.participants == ()  # naming a speaker is a bonus, not a condition
    assert not painted.asks_when
    moved = RuleFrameInducer().induce("When did Ana move to Lisbon?", context)
    assert moved.asks_when
    assert moved.speakers == ()  # Ana does not speak here


@pytest.mark.parametrize(
    ("query", "day"),
    [
        ("What did I do on Saturday?", datetime(2024, 11, 30)),
        ("Where was I on Tuesday?", datetime(2024, 11, 26)),  # asked on a Tuesday: the last one
        ("Which restaurant did we go to on sunday?", datetime(2024, 12, 1)),
    ],
)
def test_a_bare_weekday_about_the_past_is_the_latest_one_before_now(
    query: str, day: datetime
) -> None:
    now = datetime(2024, 12, 3, 10)  # a Tuesday
    context = FrameContext(
        now=now, memory_range=TimeSpan(datetime(2024, 1, 1), now, Granularity.INSTANT)
    )
    [time] = RuleFrameInducer().induce(query, context).grounded_times
    assert time.window is not None
    assert (time.window.start, time.window.granularity) == (day, Granularity.DAY)


def test_a_bare_weekday_that_may_be_ahead_is_not_grounded() -> None:
    now = datetime(2024, 12, 3, 10)
    context = FrameContext(
        now=now, memory_range=TimeSpan(datetime(2024, 1, 1), now, Granularity.INSTANT)
    )
    frame = RuleFrameInducer().induce("What am I doing on Saturday?", context)
    assert not frame.grounded_times
    assert "ahead" in frame.times[0].reason


def test_recall_ranks_by_the_frames_cues(memory: RaMem, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stage 3 reads the frame, not the question: a frame that names no speaker gets no
    speaker bonus even when the question's words name one."""
    from dataclasses import replace

    from tests.conftest import two_trips

    memory.add_conversation(two_trips())
    query = "What did Ben say about his trip?"
    named = memory.recall(query)
    induce = memory.inducer.induce
    monkeypatch.setattr(memory.inducer, "induce", lambda q, c: replace(induce(q, c), speakers=()))
    plain = memory.recall(query)
    assert named.frame.speakers == ("Ben",)
    assert [e.score for e in named] != [e.score for e in plain]
