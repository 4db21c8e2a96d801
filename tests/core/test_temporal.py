"""Stage 1 time resolution: expressions resolved against the session time, with granularity."""

from __future__ import annotations

from datetime import datetime

import pytest

from ramem_core.temporal import describe, find_mentions, parse_timestamp
from ramem_core.types import Granularity

MON = datetime(2023, 5, 8, 13, 56)  # Monday 8 May 2023 (LoCoMo conv-26, session 1)
SUN = datetime(2023, 6, 25, 10, 0)  # Sunday
JAN = datetime(2024, 1, 15, 9, 0)  # Monday in January, for year rollovers
D, W, M, Y = Granularity.DAY, Granularity.WEEK, Granularity.MONTH, Granularity.YEAR

# (text, session time, expected expression, first day, last day, granularity)
CASES = [
    ("I went to a support group yesterday", MON, "yesterday", "2023-05-07", "2023-05-07", D),
    ("we met last night", MON, "last night", "2023-05-07", "2023-05-07", D),
    ("today was busy", MON, "today", "2023-05-08", "2023-05-08", D),
    ("tonight we eat out", MON, "tonight", "2023-05-08", "2023-05-08", D),
    ("see you tomorrow", MON, "tomorrow", "2023-05-09", "2023-05-09", D),
    (
        "the day before yesterday I ran",
        MON,
        "the day before yesterday",
        "2023-05-06",
        "2023-05-06",
        D,
    ),
    ("2 days ago I painted", MON, "2 days ago", "2023-05-06", "2023-05-06", D),
    ("three days ago", MON, "three days ago", "2023-05-05", "2023-05-05", D),
    ("a day ago", MON, "a day ago", "2023-05-07", "2023-05-07", D),
    ("a few days ago we talked", MON, "a few days ago", "2023-05-03", "2023-05-06", D),
    ("a couple of days ago", MON, "a couple of days ago", "2023-05-06", "2023-05-06", D),
    ("two weeks ago I adopted a dog", MON, "two weeks ago", "2023-04-24", "2023-04-30", W),
    ("a week ago", MON, "a week ago", "2023-05-01", "2023-05-07", W),
    ("3 months ago", MON, "3 months ago", "2023-02-01", "2023-02-28", M),
    ("a month ago", MON, "a month ago", "2023-04-01", "2023-04-30", M),
    ("4 years ago I moved", MON, "4 years ago", "2019-01-01", "2019-12-31", Y),
    ("a year ago", MON, "a year ago", "2022-01-01", "2022-12-31", Y),
    ("last week I gave a speech", MON, "last week", "2023-05-01", "2023-05-07", W),
    ("next week is the opener", MON, "next week", "2023-05-15", "2023-05-21", W),
    ("this week is hectic", MON, "this week", "2023-05-08", "2023-05-14", W),
    ("last month we moved", MON, "last month", "2023-04-01", "2023-04-30", M),
    ("next month", MON, "next month", "2023-06-01", "2023-06-30", M),
    ("last month", JAN, "last month", "2023-12-01", "2023-12-31", M),
    ("last year I painted", MON, "last year", "2022-01-01", "2022-12-31", Y),
    ("next year", MON, "next year", "2024-01-01", "2024-12-31", Y),
    ("last Friday I went", MON, "last Friday", "2023-05-05", "2023-05-05", D),
    ("last Monday", MON, "last Monday", "2023-05-01", "2023-05-01", D),
    ("next Friday", MON, "next Friday", "2023-05-12", "2023-05-12", D),
    ("last weekend we camped", MON, "last weekend", "2023-05-06", "2023-05-07", D),
    ("this past weekend", MON, "this past weekend", "2023-05-06", "2023-05-07", D),
    ("last weekend", SUN, "last weekend", "2023-06-17", "2023-06-18", D),
    ("next weekend", MON, "next weekend", "2023-05-20", "2023-05-21", D),
    ("I did it the week before", MON, "the week before", "2023-05-01", "2023-05-07", W),
    ("earlier this month", MON, "earlier this month", "2023-05-01", "2023-05-08", M),
    ("later this month", MON, "later this month", "2023-05-08", "2023-05-31", M),
    ("last August we hiked", MON, "last August", "2022-08-01", "2022-08-31", M),
    ("last March", MON, "last March", "2023-03-01", "2023-03-31", M),
    ("last May", MON, "last May", "2022-05-01", "2022-05-31", M),
    ("next June", MON, "next June", "2023-06-01", "2023-06-30", M),
    ("camping in June", MON, "in June", "2023-06-01", "2023-06-30", M),
    ("in December", JAN, "in December", "2023-12-01", "2023-12-31", M),
    ("in May 2022", MON, "May 2022", "2022-05-01", "2022-05-31", M),
    ("back in March of 2021", MON, "March of 2021", "2021-03-01", "2021-03-31", M),
    ("in 2022 I painted", MON, "in 2022", "2022-01-01", "2022-12-31", Y),
    ("I've known her since 2016", MON, "since 2016", "2016-01-01", "2023-05-08", Y),
    ("on May 7, 2023", MON, "May 7, 2023", "2023-05-07", "2023-05-07", D),
    ("on 7 May 2023", MON, "7 May 2023", "2023-05-07", "2023-05-07", D),
    ("on the 3rd of June", MON, "3rd of June", "2023-06-03", "2023-06-03", D),
    ("on June 3rd", MON, "June 3rd", "2023-06-03", "2023-06-03", D),
    ("due 2023-07-01", MON, "2023-07-01", "2023-07-01", "2023-07-01", D),
    ("the other day", MON, "the other day", "2023-05-01", "2023-05-07", D),
    (
        "between August 11 and August 15 2021",
        MON,
        "between August 11 and August 15 2021",
        "2021-08-11",
        "2021-08-15",
        D,
    ),
    (
        "from 28 December to 3 January",
        JAN,
        "from 28 December to 3 January",
        "2023-12-28",
        "2024-01-03",
        D,
    ),
    ("between May 3 and 7, 2022", MON, "between May 3 and 7, 2022", "2022-05-03", "2022-05-07", D),
    ("the second week of May", MON, "the second week of May", "2023-05-08", "2023-05-14", W),
    (
        "the last week of February 2024",
        MON,
        "the last week of February 2024",
        "2024-02-23",
        "2024-02-29",
        W,
    ),
    ("over the past 3 weeks", MON, "the past 3 weeks", "2023-04-17", "2023-05-08", D),
    ("in the last two months", MON, "the last two months", "2023-03-08", "2023-05-08", D),
    ("in March and April", MON, "in March and April", "2023-03-01", "2023-04-30", M),
    ("in early June", MON, "early June", "2023-06-01", "2023-06-10", D),
    ("mid-April we met", MON, "mid-April", "2023-04-11", "2023-04-20", D),
    ("at the end of February 2024", MON, "the end of February 2024", "2024-02-21", "2024-02-29", D),
    (
        "the first half of September 2022",
        MON,
        "the first half of September 2022",
        "2022-09-01",
        "2022-09-15",
        D,
    ),
    ("the second half of April", MON, "the second half of April", "2023-04-16", "2023-04-30", D),
]


@pytest.mark.parametrize(("text", "ref", "expr", "first", "last", "granularity"), CASES)
def test_expression_resolves_against_session_time(
    text: str, ref: datetime, expr: str, first: str, last: str, granularity: Granularity
) -> None:
    mentions = find_mentions(text, ref)
    assert [m.text for m in mentions] == [expr]
    span = mentions[0].span
    assert span.start.date().isoformat() == first
    assert span.end.date().isoformat() == last
    assert span.granularity is granularity
    assert text[mentions[0].char_start : mentions[0].char_end] == expr


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize(
    "text",
    [
        "we should meet up",  # "we" is not Wednesday (dateparser.search_dates gets this wrong)
        "I may go to the park",  # "may" the verb
        "I ran 5 miles and it took 2 hours",  # durations, not times
        "March on, friend",  # no cue for a month
        "for 4 years now",  # a duration, not a date
        "",
    ],
)
def test_no_false_positives(text: str) -> None:
    assert find_mentions(text, MON) == ()


def test_several_mentions_in_text_order() -> None:
    mentions = find_mentions("Yesterday I booked it for next month, not last week.", MON)
    assert [m.text for m in mentions] == ["Yesterday", "next month", "last week"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
        ("2023/05/30 (Tue) 23:40", datetime(2023, 5, 30, 23, 40)),
        ("2023-03-02T18:30:00", datetime(2023, 3, 2, 18, 30)),
        ("2023-03-02", datetime(2023, 3, 2)),
    ],
)
def test_parse_timestamp(value: str, expected: datetime) -> None:
    assert parse_timestamp(value) == expected


@pytest.mark.parametrize("value", ["", "not a date", "the 45th of Smarch"])
def test_parse_timestamp_rejects_garbage(value: str) -> None:
    assert parse_timestamp(value) is None


def test_describe_uses_granularity() -> None:
    [day] = find_mentions("yesterday", MON)
    [month] = find_mentions("last August", MON)
    [year] = find_mentions("in 2022", MON)
    assert (describe(day.span), describe(month.span), describe(year.span)) == (
        "7 May 2023",
        "August 2022",
        "2022",
    )
