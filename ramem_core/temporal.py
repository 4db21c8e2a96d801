"""Temporal expressions: find them in text and resolve them against a reference time.

Used by stage 1 (mentions resolved against the *session* time) and stage 2 (query expressions
grounded against the conversation's "now"). Candidate spans are found with our own patterns, then
resolved by calendar arithmetic; absolute dates are parsed with dateparser restricted to English
(fast, and free of ``search_dates`` false positives such as "we" -> Wednesday).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from ramem_core.types import Granularity, TimeMention, TimeSpan
from ramem_core.validation import to_utc

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_MONTH_RE = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
)
_WEEKDAY_RE = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
}
_FUZZY_WORDS = ("a few", "few", "several")
NUMBER_PATTERN = r"(?:\d{1,3}|a couple of|a couple|couple of|a few|few|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"  # noqa: E501
_YEAR_RE = r"(?:19[5-9]\d|20\d\d)"
_UNIT_RE = r"(?:day|week|month|year)s?"


# --------------------------------------------------------------------------- calendar helpers


def day_span(day: datetime) -> TimeSpan:
    """The whole calendar day of ``day``."""
    start = day.replace(hour=0, minute=0, second=0, microsecond=0)
    return TimeSpan(start, start + timedelta(days=1, seconds=-1), Granularity.DAY)


def days_span(first: datetime, last: datetime) -> TimeSpan:
    """Calendar days ``first`` to ``last`` inclusive, at day granularity."""
    return TimeSpan(day_span(first).start, day_span(last).end, Granularity.DAY)


def week_span(day: datetime) -> TimeSpan:
    """The Monday-to-Sunday week holding ``day``."""
    monday = day_span(day).start - timedelta(days=day.weekday())
    return TimeSpan(monday, monday + timedelta(days=7, seconds=-1), Granularity.WEEK)


def month_span(year: int, month: int) -> TimeSpan:
    """A calendar month."""
    last = calendar.monthrange(year, month)[1]
    return TimeSpan(
        datetime(year, month, 1), datetime(year, month, last, 23, 59, 59), Granularity.MONTH
    )


def year_span(year: int) -> TimeSpan:
    """A calendar year."""
    return TimeSpan(datetime(year, 1, 1), datetime(year, 12, 31, 23, 59, 59), Granularity.YEAR)


def shift_months(day: datetime, months: int) -> tuple[int, int]:
    """(year, month) ``months`` after the month of ``day`` (negative goes back)."""
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def _weekend_of(day: datetime) -> TimeSpan:
    saturday = week_span(day).start + timedelta(days=5)
    return days_span(saturday, saturday + timedelta(days=1))


def _last_weekend(ref: datetime) -> TimeSpan:
    """The latest Saturday-Sunday that ended before the day of ``ref``."""
    weekend = _weekend_of(ref)
    if weekend.end >= day_span(ref).start:
        weekend = _weekend_of(ref - timedelta(weeks=1))
    return weekend


def number_word(word: str) -> int | None:
    word = word.lower()
    if word.isdigit():
        return int(word)
    return _NUMBER_WORDS.get(word)


def _nearest_year(ref: datetime, month: int, day: int = 1) -> int:
    """The year whose ``month``/``day`` lies closest to ``ref`` (for "in June" without a year)."""
    best = ref.year
    best_gap: float | None = None
    for year in (ref.year - 1, ref.year, ref.year + 1):
        try:
            gap = abs((datetime(year, month, day) - ref).total_seconds())
        except ValueError:  # 29 February in a common year
            continue
        if best_gap is None or gap < best_gap:
            best, best_gap = year, gap
    return best


def _year_or_nearest(m: re.Match[str], ref: datetime, month: int) -> int:
    """The year the expression gives, else the one whose ``month`` lies closest to ``ref``
    (the caller marks the result yearless)."""
    return int(m.group("year")) if m.group("year") else _nearest_year(ref, month)


# --------------------------------------------------------------------------- resolvers


@dataclass(frozen=True, slots=True)
class Resolved:
    """A resolved expression; ``yearless`` marks month/day names given without a year."""

    span: TimeSpan
    yearless: bool = False


_Resolver = Callable[["re.Match[str]", datetime], Resolved | None]


def _ago(m: re.Match[str], ref: datetime) -> Resolved | None:
    amount, unit = m.group("n").lower(), m.group("unit").lower().rstrip("s")
    if amount in _FUZZY_WORDS:
        low, high = 2, 5  # "a few days ago": somewhere between 2 and 5 units back
    else:
        n = number_word(amount)
        if n is None:
            return None
        low = high = n
    if unit == "day":
        return Resolved(days_span(ref - timedelta(days=high), ref - timedelta(days=low)))
    if unit == "week":
        first, last = week_span(ref - timedelta(weeks=high)), week_span(ref - timedelta(weeks=low))
        return Resolved(TimeSpan(first.start, last.end, Granularity.WEEK))
    if unit == "month":
        first_m, last_m = shift_months(ref, -high), shift_months(ref, -low)
        return Resolved(
            TimeSpan(month_span(*first_m).start, month_span(*last_m).end, Granularity.MONTH)
        )
    return Resolved(
        TimeSpan(year_span(ref.year - high).start, year_span(ref.year - low).end, Granularity.YEAR)
    )


def _trailing(m: re.Match[str], ref: datetime) -> Resolved | None:
    """ "in the last four months", "over the past 2 weeks": from that long ago up to now."""
    amount, unit = m.group("n").lower(), m.group("unit").lower().rstrip("s")
    n = 5 if amount in _FUZZY_WORDS else number_word(amount)  # "the past few weeks"
    if n is None:
        return None
    if unit in ("month", "year"):
        year, month = shift_months(ref, -n * (12 if unit == "year" else 1))
        start = datetime(year, month, min(ref.day, calendar.monthrange(year, month)[1]))
    else:
        start = ref - timedelta(days=n * (7 if unit == "week" else 1))
    return Resolved(days_span(start, ref))


def _two_months(m: re.Match[str], ref: datetime) -> Resolved | None:
    """ "in March and April (2023)": both months, and any between them."""
    if MONTHS[m.group("last").lower()] < MONTHS[m.group("first").lower()]:
        return None  # "in December and January" is rare and ambiguous in its year
    return _month_range(m, ref)  # "between March and April", which may cross New Year


def _relative_period(m: re.Match[str], ref: datetime) -> Resolved | None:
    which = " ".join(m.group("which").lower().split())
    unit = m.group("unit").lower()
    step = {
        "last": -1,
        "this past": -1,
        "past": -1,
        "previous": -1,
        "next": 1,
        "this": 0,
        "coming": 1,
        "following": 1,
    }[which]
    if unit == "week":
        return Resolved(week_span(ref + timedelta(weeks=step)))
    if unit == "weekend":
        if step < 0:
            return Resolved(_last_weekend(ref))
        return Resolved(_weekend_of(ref + timedelta(weeks=step)))
    if unit == "month":
        return Resolved(month_span(*shift_months(ref, step)))
    return Resolved(year_span(ref.year + step))


def _before_period(m: re.Match[str], ref: datetime) -> Resolved | None:
    # "the week before" / "the weekend before": the period just before the reference
    unit = m.group("unit").lower()
    if unit == "week":
        return Resolved(week_span(ref - timedelta(weeks=1)))
    if unit == "weekend":
        return Resolved(_last_weekend(ref))
    if unit == "month":
        return Resolved(month_span(*shift_months(ref, -1)))
    return Resolved(year_span(ref.year - 1))


def _earlier_this(m: re.Match[str], ref: datetime) -> Resolved | None:
    unit, direction = m.group("unit").lower(), m.group("dir").lower()
    period = {
        "week": week_span(ref),
        "month": month_span(ref.year, ref.month),
        "year": year_span(ref.year),
    }[unit]
    today = day_span(ref)
    if direction == "earlier":
        return Resolved(TimeSpan(period.start, today.end, period.granularity))
    return Resolved(TimeSpan(today.start, period.end, period.granularity))


def _weekday(m: re.Match[str], ref: datetime) -> Resolved | None:
    which = " ".join(m.group("which").lower().split())
    target = WEEKDAYS[m.group("wd").lower()]
    if which == "next":
        ahead = (target - ref.weekday()) % 7 or 7
        return Resolved(day_span(ref + timedelta(days=ahead)))
    back = (ref.weekday() - target) % 7 or 7
    return Resolved(day_span(ref - timedelta(days=back)))


def _named_month(m: re.Match[str], ref: datetime) -> Resolved | None:
    which = " ".join((m.group("which") or "").lower().split())
    month = MONTHS[m.group("month").lower()]
    if which == "last":
        year = ref.year if month < ref.month else ref.year - 1
        return Resolved(month_span(year, month))
    if which == "next":
        year = ref.year if month > ref.month else ref.year + 1
        return Resolved(month_span(year, month))
    return Resolved(month_span(_nearest_year(ref, month), month), yearless=True)


def _month_year(m: re.Match[str], ref: datetime) -> Resolved | None:
    return Resolved(month_span(int(m.group("year")), MONTHS[m.group("month").lower()]))


def _parse_date(text: str, ref: datetime) -> datetime | None:
    """One written date ("May 7, 2023", "3rd of June"), a missing year taken from ``ref``."""
    import dateparser  # heavy import, only when a date string is present

    text = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", text, flags=re.IGNORECASE)
    return dateparser.parse(
        text.replace(",", " "),
        languages=["en"],
        settings={"RELATIVE_BASE": ref, "PREFER_DAY_OF_MONTH": "first", "STRICT_PARSING": False},
    )


def _full_date(m: re.Match[str], ref: datetime) -> Resolved | None:
    parsed = _parse_date(m.group(0), ref)
    if parsed is None:
        return None
    has_year = re.search(_YEAR_RE, m.group(0)) is not None
    if not has_year:
        year = _nearest_year(ref, parsed.month, min(parsed.day, 28))
        parsed = parsed.replace(year=year)
    return Resolved(day_span(parsed), yearless=not has_year)


def _day_range(m: re.Match[str], ref: datetime) -> Resolved | None:
    """ "between August 11 and August 15 2023", "from 3 May to 5 May", "between May 3 and 7":
    the days from the first to the last; a year given once applies to both."""
    first = _parse_date(m.group("a"), ref)
    if first is None:
        return None
    bare = re.match(r"(\d{1,2})(?:st|nd|rd|th)?(?:,?\s+\d{4})?$", m.group("b"), re.IGNORECASE)
    if bare is not None:  # "between May 3 and 7"
        last: datetime | None = first.replace(day=int(bare.group(1)))
    else:
        last = _parse_date(m.group("b"), ref)
    if last is None:
        return None
    years = [re.search(_YEAR_RE, m.group(g)) for g in ("a", "b")]
    if years[1] is not None and years[0] is None:
        last = last.replace(year=int(years[1].group(0)))
        first = first.replace(year=last.year)
    elif years[0] is not None and years[1] is None:
        last = last.replace(year=first.year)
    elif years[0] is None:
        year = _nearest_year(ref, first.month, min(first.day, 28))
        first, last = first.replace(year=year), last.replace(year=year)
    if last < first:  # "between 28 December and 3 January": the range crosses New Year
        if years[0] is not None and years[1] is not None:
            return None
        if years[1] is not None:
            first = first.replace(year=first.year - 1)
        else:
            last = last.replace(year=last.year + 1)
    return Resolved(days_span(first, last), yearless=years[0] is None and years[1] is None)


_MONTH_PARTS = {
    "early": (1, 10),
    "beginning": (1, 10),
    "start": (1, 10),
    "mid": (11, 20),
    "late": (21, 31),
    "end": (21, 31),
    "first": (1, 15),
    "second": (16, 31),
}


def _part_of_month(m: re.Match[str], ref: datetime) -> Resolved | None:
    """ "early May" (1-10), "mid-May", "late May" / "the end of May" (21-31), "the first half
    of September" (1-15), "the second half" (16-31)."""
    month = MONTHS[m.group("month").lower()]
    year = _year_or_nearest(m, ref, month)
    part = (m.group("part") or m.group("half") or m.group("edge")).lower()
    first, last = _MONTH_PARTS[part]
    last = min(last, calendar.monthrange(year, month)[1])
    span = days_span(datetime(year, month, first), datetime(year, month, last))
    return Resolved(span, yearless=not m.group("year"))


_ORDINAL_WEEKS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3}
_ORDINAL_WEEKS |= {"fourth": 4, "4th": 4, "last": 0}


def _week_of_month(m: re.Match[str], ref: datetime) -> Resolved | None:
    """ "the second week of November": days 8-14; "the last week of June": its last 7 days."""
    month = MONTHS[m.group("month").lower()]
    year = _year_or_nearest(m, ref, month)
    whole = month_span(year, month)
    nth = _ORDINAL_WEEKS[m.group("nth").lower()]
    if nth:
        start = whole.start + timedelta(weeks=nth - 1)
    else:
        start = datetime(whole.end.year, whole.end.month, whole.end.day) - timedelta(days=6)
    span = days_span(start, start + timedelta(days=6))
    return Resolved(TimeSpan(span.start, span.end, Granularity.WEEK), yearless=not m.group("year"))


def _iso_date(m: re.Match[str], ref: datetime) -> Resolved | None:
    try:
        return Resolved(day_span(datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)))))
    except ValueError:
        return None


def _year(m: re.Match[str], ref: datetime) -> Resolved | None:
    year = int(m.group("year"))
    if m.group("prep").lower() == "since":
        end = day_span(ref).end if ref.year >= year else year_span(year).end
        return Resolved(TimeSpan(year_span(year).start, end, Granularity.YEAR))
    return Resolved(year_span(year))


_SEASONS = {
    "spring": (3, 5),
    "summer": (6, 8),
    "fall": (9, 11),
    "autumn": (9, 11),
    "winter": (12, 2),
}
_SEASON_RE = r"(?:spring|summer|fall|autumn|winter)"


def season_span(year: int, season: str) -> TimeSpan:
    """A meteorological season (northern hemisphere); winter ``year`` runs from December of
    ``year`` to February of the next year."""
    first, last = _SEASONS[season]
    end_year = year + 1 if last < first else year
    return TimeSpan(
        month_span(year, first).start, month_span(end_year, last).end, Granularity.MONTH
    )


def _season(m: re.Match[str], ref: datetime) -> Resolved | None:
    season = m.group("season").lower()
    which = " ".join((m.groupdict().get("which") or "").lower().split())
    if m.group("year"):
        return Resolved(season_span(int(m.group("year")), season))
    this = season_span(ref.year - (1 if season == "winter" and ref.month <= 2 else 0), season)
    if which in ("last", "this past", "past"):
        while this.end >= day_span(ref).start:  # the latest one that is over
            this = season_span(this.start.year - 1, season)
        return Resolved(this)
    if which == "next":
        while this.start <= ref:
            this = season_span(this.start.year + 1, season)
        return Resolved(this)
    if which == "this":
        return Resolved(this)
    # "in the summer" with no year: the nearest one; stage 2 picks the one memory covers
    nearest = min(
        (season_span(this.start.year + d, season) for d in (-1, 0, 1)),
        key=lambda s: abs((s.start + (s.end - s.start) / 2 - ref).total_seconds()),
    )
    return Resolved(nearest, yearless=True)


def _month_range(m: re.Match[str], ref: datetime) -> Resolved | None:
    first, last = MONTHS[m.group("first").lower()], MONTHS[m.group("last").lower()]
    if m.group("year"):
        year = int(m.group("year"))
        start_year = year - 1 if last < first else year
        return Resolved(
            TimeSpan(
                month_span(start_year, first).start, month_span(year, last).end, Granularity.MONTH
            )
        )
    year = _nearest_year(ref, first)
    end_year = year + 1 if last < first else year
    span = TimeSpan(
        month_span(year, first).start, month_span(end_year, last).end, Granularity.MONTH
    )
    return Resolved(span, yearless=True)


_THIRDS = {"early": (1, 4), "mid": (5, 8), "late": (9, 12)}


def _part_of_year(m: re.Match[str], ref: datetime) -> Resolved | None:
    first, last = _THIRDS[m.group("part").lower()]
    year = int(m.group("year"))
    return Resolved(
        TimeSpan(month_span(year, first).start, month_span(year, last).end, Granularity.MONTH)
    )


def _weekend_before_last(m: re.Match[str], ref: datetime) -> Resolved | None:
    return Resolved(_weekend_of(_last_weekend(ref).start - timedelta(weeks=1)))


def _fixed_day(offset: int) -> _Resolver:
    def resolve(m: re.Match[str], ref: datetime) -> Resolved | None:
        return Resolved(day_span(ref + timedelta(days=offset)))

    return resolve


def _other_day(m: re.Match[str], ref: datetime) -> Resolved | None:
    return Resolved(days_span(ref - timedelta(days=7), ref - timedelta(days=1)))


_DAY_DATE = rf"\d{{1,2}}(?:st|nd|rd|th)?(?:\s+of)?\s+{_MONTH_RE}\.?(?:,?\s+{_YEAR_RE})?"
_MONTH_DATE = rf"{_MONTH_RE}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+{_YEAR_RE})?"

# Order matters: longer, more specific patterns first; matches never overlap.
_PATTERNS: list[tuple[re.Pattern[str], _Resolver]] = [
    (re.compile(p, re.IGNORECASE), r)
    for p, r in [
        (r"\b(\d{4})-(\d{2})-(\d{2})\b", _iso_date),
        (
            rf"\bbetween\s+(?P<first>{_MONTH_RE})\s+and\s+(?P<last>{_MONTH_RE})\b"
            rf"(?:,?\s+(?:of\s+)?(?P<year>{_YEAR_RE})\b)?",
            _month_range,
        ),
        (
            rf"\b(?:between|from)\s+(?P<a>{_DAY_DATE}|{_MONTH_DATE})\s+(?:and|to|until|till|through)"
            rf"\s+(?P<b>{_DAY_DATE}|{_MONTH_DATE}|\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+{_YEAR_RE})?)(?!\d)",
            _day_range,
        ),
        (
            rf"\b(?:the\s+)?(?P<nth>{'|'.join(_ORDINAL_WEEKS)})\s+week\s+of\s+(?P<month>{_MONTH_RE})"
            rf"\b(?:,?\s+(?:of\s+)?(?P<year>{_YEAR_RE})\b)?",
            _week_of_month,
        ),
        (
            rf"\b(?:in|during)\s+(?P<first>{_MONTH_RE})\s+(?:and|or|&)\s+(?P<last>{_MONTH_RE})\b"
            rf"(?!\s*\d{{1,2}}\b)(?:,?\s+(?:of\s+)?(?P<year>{_YEAR_RE})\b)?",
            _two_months,
        ),
        (
            rf"\bthe\s+(?:last|past|previous)\s+(?P<n>{NUMBER_PATTERN})\s+(?P<unit>{_UNIT_RE})\b",
            _trailing,
        ),
        (
            rf"\b(?:(?:the\s+)?(?P<half>first|second)\s+half\s+of\s+|(?P<part>early|mid|late)[-\s]*"
            rf"|(?:the\s+)?(?P<edge>beginning|start|end)\s+of\s+)(?P<month>{_MONTH_RE})\b"
            rf"(?!\s*\d{{1,2}}\b)(?:,?\s+(?:of\s+)?(?P<year>{_YEAR_RE})\b)?",
            _part_of_month,
        ),
        (rf"\b(?P<part>early|mid|late)[-\s]+(?P<year>{_YEAR_RE})\b", _part_of_year),
        (
            rf"\b(?:(?P<which>last|this past|past|next|this)\s+|(?:(?:in|during|over)\s+)?the\s+)"
            rf"(?P<season>{_SEASON_RE})\b(?:\s+(?:of\s+)?(?P<year>{_YEAR_RE})\b)?",
            _season,
        ),
        (rf"\b(?P<season>{_SEASON_RE})\s+(?:of\s+)?(?P<year>{_YEAR_RE})\b", _season),
        (r"\bthe weekend before last\b", _weekend_before_last),
        (rf"\b(?:{_DAY_DATE}|{_MONTH_DATE})(?!\d)", _full_date),
        (rf"\b(?P<month>{_MONTH_RE})\.?,?\s+(?:of\s+)?(?P<year>{_YEAR_RE})\b", _month_year),
        (r"\bthe day before yesterday\b", _fixed_day(-2)),
        (r"\bthe day after tomorrow\b", _fixed_day(2)),
        (r"\b(?:yesterday|last night)\b", _fixed_day(-1)),
        (r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", _fixed_day(0)),
        (r"\btomorrow\b", _fixed_day(1)),
        (r"\bthe other day\b", _other_day),
        (rf"\b(?P<n>{NUMBER_PATTERN})\s+(?P<unit>{_UNIT_RE})\s+ago\b", _ago),
        (r"\b(?P<dir>earlier|later) this (?P<unit>week|month|year)\b", _earlier_this),
        (r"\bthe (?P<unit>week|weekend|month|year) before\b(?!\s+(?:last|the|\d))", _before_period),
        (
            r"\b(?P<which>last|next|this past|past|previous|this|coming|following)\s+"
            r"(?P<unit>week|weekend|month|year)\b",
            _relative_period,
        ),
        (rf"\b(?P<which>last|next|this past|past)\s+(?P<wd>{_WEEKDAY_RE})\b", _weekday),
        (
            rf"\b(?:(?P<which>last|next|this)\s+|(?:in|during|throughout)\s+"
            r"(?:early\s+|mid-?\s*|late\s+)?)"
            rf"(?P<month>{_MONTH_RE})\b(?!\s*\d)",
            _named_month,
        ),
        (rf"\b(?P<prep>in|since|during|of|by)\s+(?P<year>{_YEAR_RE})\b", _year),
    ]
]

_GROUP_NAME = re.compile(r"\(\?P<\w+>")
_ANY = re.compile(
    "|".join("(?:" + _GROUP_NAME.sub("(?:", p.pattern) + ")" for p, _ in _PATTERNS),
    re.IGNORECASE,
)
"""Every pattern of :data:`_PATTERNS` as one (names dropped): a text none of them matches
(most turns) is read once instead of once per pattern."""

# "may" is also a verb: only take it as a month with a cue ("in May", "May 2023", "May 7").
_MAY_VERB = re.compile(r"^may$", re.IGNORECASE)


def resolve_all(text: str, ref: datetime) -> list[tuple[int, int, str, Resolved]]:
    """Every temporal expression in ``text`` resolved against ``ref``, in text order.

    Returns tuples ``(char_start, char_end, expression, resolved)``; unparseable candidates are
    skipped, never guessed.
    """
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, int, str, Resolved]] = []
    if _ANY.search(text) is None:
        return found
    for pattern, resolver in _PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span()
            if any(start < e and s < end for s, e in taken):
                continue
            if _MAY_VERB.match(m.group(0).strip()):
                continue
            try:
                resolved = resolver(m, ref)
            except (ValueError, OverflowError):
                resolved = None
            if resolved is None:
                continue
            taken.append((start, end))
            found.append((start, end, m.group(0), resolved))
    found.sort(key=lambda item: item[0])
    return found


def find_mentions(text: str, ref: datetime) -> tuple[TimeMention, ...]:
    """Temporal expressions of ``text`` as :class:`TimeMention`, resolved against ``ref``."""
    return tuple(
        TimeMention(text=expr, span=r.span, char_start=s, char_end=e)
        for s, e, expr, r in resolve_all(text, ref)
    )


def parse_timestamp(value: str) -> datetime | None:
    """Parse an absolute timestamp such as LoCoMo's ``"1:56 pm on 8 May, 2023"``.

    A value with a time-zone offset is converted to UTC; the result is always naive. Relative
    values ("yesterday", "2 days ago") are not timestamps: a file read on another day would
    give another time. Returns ``None`` when the value cannot be parsed as an absolute time;
    callers decide whether that is an error.
    """
    value = value.strip()
    if not value or len(value) > 100:
        return None
    for fmt in ("%I:%M %p on %d %B, %Y", "%Y/%m/%d (%a) %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"):
        try:
            return datetime.strptime(value, fmt)
        except ValueError:
            continue
    try:
        return to_utc(datetime.fromisoformat(value))
    except ValueError:
        pass
    import dateparser

    # parsed against two different "now"s: a relative value gives two different answers
    parsed = [
        dateparser.parse(
            value,
            languages=["en"],
            settings={"STRICT_PARSING": True, "RELATIVE_BASE": base},
        )
        for base in (datetime(2001, 2, 3, 4, 5, 6), datetime(2011, 12, 13, 14, 15, 16))
    ]
    if parsed[0] is None or parsed[1] is None or to_utc(parsed[0]) != to_utc(parsed[1]):
        return None
    return to_utc(parsed[0])


def describe(span: TimeSpan) -> str:
    """A short human form of a span at its granularity: "7 May 2023", "May 2023", "2023"."""
    start = span.start
    if span.granularity is Granularity.INSTANT:
        return f"{start.day} {start:%B %Y}, {start:%H:%M}"
    if span.granularity is Granularity.YEAR:
        return str(start.year) if start.year == span.end.year else f"{start.year}-{span.end.year}"
    if span.granularity is Granularity.MONTH:
        if (start.year, start.month) == (span.end.year, span.end.month):
            return f"{start:%B %Y}"
        return f"{start:%B %Y} - {span.end:%B %Y}"
    if span.granularity is Granularity.WEEK:
        if span.end - start <= timedelta(days=7):
            return f"week of {start.day} {start:%B %Y}"
        return f"weeks of {start.day} {start:%B %Y} - {span.end.day} {span.end:%B %Y}"
    if start.date() == span.end.date():
        return f"{start.day} {start:%B %Y}"
    return f"{start.day} {start:%B %Y} - {span.end.day} {span.end:%B %Y}"
