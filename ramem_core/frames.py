"""Stage 2 of RaMem: recall-condition induction.

A query is split into an information need and a recall frame: time windows, participants and
temporal relations ("after the trip"). Relative expressions are grounded against the
conversation's own "now" (the caller's query time, else the end of the last session), never the
wall clock. A constraint is marked grounded only when it resolved unambiguously inside the
memory's date range; anything else is kept for display but never used to filter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from ramem_core.anchoring import mentioned_names
from ramem_core.protocols import LLM, FrameContext
from ramem_core.states import asks_earlier, asks_now
from ramem_core.temporal import (
    NUMBER_PATTERN,
    WEEKDAYS,
    day_span,
    month_span,
    number_word,
    resolve_all,
    shift_months,
    week_span,
    year_span,
)
from ramem_core.types import (
    Granularity,
    RecallFrame,
    Relation,
    TimeConstraint,
    TimeSpan,
)
from ramem_core.validation import MAX_QUERY_CHARS

_RELATION_WORDS = {
    "before": Relation.BEFORE,
    "prior to": Relation.BEFORE,
    "until": Relation.BEFORE,
    "after": Relation.AFTER,
    "following": Relation.AFTER,
    "since": Relation.AFTER,
    "during": Relation.DURING,
    "while": Relation.DURING,
}
_RELATION = re.compile(
    rf"\b(?:(?P<n>{NUMBER_PATTERN})\s+(?P<unit>day|week|month|year)s?\s+"
    r"|the\s+(?P<period>day|week|weekend|month|year)\s+)?"
    r"(?P<rel>before|prior to|until|after|following|since|during|while)\s+"
    # "the weekend before last" is a time, not a relation; "August 3, 2023": the year is kept
    r"(?!last\b)(?P<anchor>[^?.!,;]+(?:,\s*(?:19|20)\d\d\b[^?.!,;]*)?)",
    re.IGNORECASE,
)
_SECOND = timedelta(seconds=1)
_LEADING_PREPOSITION = re.compile(r"\b(?:in|on|at|during|over|within|by)\s+$", re.IGNORECASE)
# the anchor phrase ends where the main clause resumes: "after the trip | did Ben ..."
_CLAUSE = re.compile(
    r"\s+(?:did|do|does|was|were|had|have|has|is|are|will|would|when|that|and)\b.*$",
    re.IGNORECASE,
)
# "How many days before the meeting did I ...", "how long after ...", "how many weeks had passed
# since ...": the question asks for a distance between two events, so both are evidence and
# the relation must not filter one of them out.
_DISTANCE = re.compile(
    r"\bhow\s+(?:many|much|long)\b|\b(?:days?|weeks?|months?|years?)\s+(?:had\s+)?passed\b",
    re.IGNORECASE,
)


# "When did ...", "What year did ...", "How long ago ...": the question asks for a time, so
# its evidence is a memory that says when (an event time or a time it mentions).
_ASKS_TIME = re.compile(
    r"^\W*(?:when\b|(?:(?:on|in|at)\s+)?(?:what|which)\s+(?:time|date|day|year|month)\b"
    r"|how\s+long\s+ago\b)",
    re.IGNORECASE,
)


def asks_for_time(query: str) -> bool:
    """True when ``query`` asks *when* something happened ("When did Ana move?", "In which
    year ...", "How long ago ..."): its evidence must say when."""
    return _ASKS_TIME.search(query) is not None


# "What did you recommend?", "you told me", "your advice", "What did I ask you?": the question is
# about the dialogue with the agent, so the recorded questions and replies are its evidence.
_SAID = (
    r"(?:tell|told|say|said|mention(?:ed)?|recommend(?:ed)?|suggest(?:ed)?|give|gave|provide[d]?"
    r"|list(?:ed)?|advise[d]?|write|wrote|shar(?:e|ed)|explain(?:ed)?|describe[d]?|answer(?:ed)?"
    r"|repl(?:y|ied)|call(?:ed)?|name[d]?)"
)
_ASKS_DIALOGUE = re.compile(
    rf"\byou\s+(?:had\s+|have\s+|just\s+)?{_SAID}\b"
    r"|\byour\s+(?:advice|answer|reply|response|recommendation|suggestion|tip|idea)s?\b"
    r"|\b(?:I|we)\s+(?:asked|told)\s+you\b|\b(?:did|have)\s+(?:I|we)\s+(?:ask|tell)\s+you\b"
    r"|\bour\s+(?:conversation|chat|discussion)\b",
    re.IGNORECASE,
)


def asks_about_dialogue(query: str) -> bool:
    """True when ``query`` asks what was said to or by the agent ("What did you recommend for
    Lisbon?", "What did I ask you yesterday?"), not about the user's own episodes."""
    return _ASKS_DIALOGUE.search(query) is not None


def named_speakers(query: str, context: FrameContext) -> tuple[str, ...]:
    """The people who speak in the memory that ``query`` names ("What has Melanie painted?")."""
    return tuple(mentioned_names(query, context.speakers))


def framed(
    query: str,
    need: str,
    times: Sequence[TimeConstraint],
    participants: Sequence[str],
    context: FrameContext,
) -> RecallFrame:
    """The frame of ``query`` with what stage 3 reads off the question besides its conditions:
    whether it asks *when*, the people it names who speak in the memory, and whether it asks
    about a state now or before (:mod:`ramem_core.states`)."""
    return RecallFrame(
        query,
        need,
        context.now,
        tuple(times),
        tuple(participants),
        asks_when=asks_for_time(query),
        asks_dialogue=asks_about_dialogue(query),
        speakers=named_speakers(query, context),
        asks_now=asks_now(query),
        asks_earlier=asks_earlier(query),
    )


def _relation_of(m: re.Match[str]) -> Relation:
    return _RELATION_WORDS[" ".join(m.group("rel").lower().split())]


def _anchor_phrase(m: re.Match[str]) -> str:
    return _CLAUSE.sub("", m.group("anchor").strip()) or m.group("anchor").strip()


def _offset_span(anchor: TimeSpan, amount: int, unit: str, relation: Relation) -> TimeSpan:
    """The span ``amount`` units before/after ``anchor`` ("two weeks before the trip")."""
    sign = -1 if relation is Relation.BEFORE else 1
    moment = anchor.start if relation is Relation.BEFORE else anchor.end
    if unit == "day":
        return day_span(moment + sign * timedelta(days=amount))
    if unit == "week":
        return week_span(moment + sign * timedelta(weeks=amount))
    if unit == "month":
        return month_span(*shift_months(moment, sign * amount))
    return year_span(moment.year + sign * amount)


_PERIOD_DAYS = {"day": 0, "week": 6, "year": 364}  # days after the first of the period


def _adjacent_span(anchor: TimeSpan, period: str, relation: Relation) -> TimeSpan:
    """The period right before or after ``anchor``: "the week before 16 November" is the seven
    days up to 15 November; "the weekend after the trip" the first weekend after it."""
    if period == "weekend":
        # the last Saturday-Sunday ending before the anchor, or the first starting after it
        moment = anchor.start - _SECOND if relation is Relation.BEFORE else anchor.end + _SECOND
        step = -1 if relation is Relation.BEFORE else 1
        day = day_span(moment).start
        while day.weekday() != (6 if relation is Relation.BEFORE else 5):
            day += timedelta(days=step)
        saturday = day - timedelta(days=1) if relation is Relation.BEFORE else day
        return TimeSpan(saturday, saturday + timedelta(days=2) - _SECOND, Granularity.DAY)
    if relation is Relation.BEFORE:
        end = day_span(anchor.start).start - _SECOND
        if period == "month":
            start = datetime(*shift_months(anchor.start, -1), min(anchor.start.day, 28))
        else:
            start = day_span(end).start - timedelta(days=_PERIOD_DAYS[period])
        return TimeSpan(day_span(start).start, end, Granularity.DAY)
    start = day_span(anchor.end).end + _SECOND
    if period == "month":
        last = datetime(*shift_months(anchor.end, 1), min(anchor.end.day, 28))
    else:
        last = start + timedelta(days=_PERIOD_DAYS[period])
    return TimeSpan(start, day_span(last).end, Granularity.DAY)


def relation_window(
    anchor: TimeSpan, relation: Relation, memory_range: TimeSpan, now: datetime | None = None
) -> TimeSpan | None:
    """The window a relation to ``anchor`` selects inside the memory's range; an "after"
    window ends at ``now`` (what happened after X happened by the moment of asking)."""
    if relation is Relation.DURING:
        return anchor
    if relation is Relation.BEFORE:
        start, end = memory_range.start, anchor.start - _SECOND
    else:
        last = memory_range.end if now is None else min(memory_range.end, now)
        start, end = anchor.end + _SECOND, last
    if end < start:
        return None
    return TimeSpan(start, end, Granularity.DAY)


def _with_year(span: TimeSpan, year: int) -> TimeSpan | None:
    """A yearless span ("in May", "in the summer", "between May and July") moved to start in
    ``year``."""
    shift = year - span.start.year
    try:
        if span.granularity is Granularity.MONTH:
            first = month_span(year, span.start.month)
            end_year, end_month = shift_months(first.start, _months_between(span.start, span.end))
            return TimeSpan(first.start, month_span(end_year, end_month).end, Granularity.MONTH)
        return TimeSpan(
            span.start.replace(year=span.start.year + shift),
            span.end.replace(year=span.end.year + shift),
            span.granularity,
        )
    except ValueError:  # 29 February in a common year; a year outside 1-9999
        return None


_BARE_WEEKDAY = re.compile(
    r"\bon\s+(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I
)
# a question about the past: "What did I do on Saturday?", "Where was I on Tuesday?"
_PAST_CUE = re.compile(
    r"\b(?:did|was|were|had|went|got|made|saw|said|told|ate|met|bought|took|ran)\b|\b\w{3,}ed\b",
    re.I,
)


def _months_between(start: datetime, end: datetime) -> int:
    return (end.year - start.year) * 12 + end.month - start.month


def _names_a_time(relation: re.Match[str], now: datetime | None) -> bool:
    """True for "during" followed by a time ("during June", "during the summer of 2023"): a
    window, not an event to anchor on."""
    if relation.group("rel").lower() != "during" or relation.group("n") or relation.group("period"):
        return False
    phrase = relation.group(0)[relation.start("rel") - relation.start() :]
    return any(start == 0 for start, _, _, _ in resolve_all(phrase, now or datetime.min))


class RuleFrameInducer:
    """Rule-based recall-frame induction (no LLM)."""

    def induce(self, query: str, context: FrameContext) -> RecallFrame:
        """Split ``query`` into its need and a frame grounded against ``context``."""
        participants = tuple(mentioned_names(query, context.participants))
        speakers = named_speakers(query, context)
        times: list[TimeConstraint] = []
        removed: list[tuple[int, int]] = []

        relation = _RELATION.search(query)
        if relation is not None and _names_a_time(relation, context.now):
            relation = None  # "during June": a time, found with the others below
        if relation is not None and _DISTANCE.search(query):
            relation_text = relation.group(0).strip()
            times.append(
                TimeConstraint(
                    relation_text,
                    None,
                    False,
                    _relation_of(relation),
                    _anchor_phrase(relation),
                    "a distance between two events: both are evidence, neither is a filter",
                )
            )
        elif relation is not None:
            constraint = self._relation(relation, context, speakers)
            if constraint is not None:
                times.append(constraint)
                if constraint.grounded:
                    removed.append(
                        (relation.start(), relation.start("anchor") + len(_anchor_phrase(relation)))
                    )

        found = resolve_all(query, context.now or datetime.min)
        for start, end, text, resolved in found:
            if any(s <= start and end <= e for s, e in removed) or (
                relation is not None and relation.start() <= start < relation.end()
            ):
                continue  # part of a relation clause, handled above
            constraint = self._ground(text, resolved.span, resolved.yearless, context)
            times.append(constraint)
            if constraint.grounded:
                removed.append((start, end))
        for m in _BARE_WEEKDAY.finditer(query):
            if any(s < m.end() and m.start() < e for s, e, _, _ in found) or (
                relation is not None and relation.start() <= m.start() < relation.end()
            ):
                continue  # "last Saturday", or inside a relation clause
            constraint = self._bare_weekday(m, query, context)
            times.append(constraint)
            if constraint.grounded:
                removed.append((m.start(), m.end()))

        need = query
        for start, end in sorted(removed, reverse=True):
            # with the preposition that led to it: "Where was Tim in the week before X?"
            lead = _LEADING_PREPOSITION.search(need[:start])
            need = need[: lead.start() if lead else start] + need[end:]
        need = re.sub(r"\s+([?.!,])", r"\1", " ".join(need.split())) or query
        return framed(query, need, times, participants, context)

    def _bare_weekday(self, m: re.Match[str], query: str, context: FrameContext) -> TimeConstraint:
        """ "on Saturday": the latest Saturday up to the query's time, when the question is
        about the past (a question in the present or future may mean the coming one)."""
        text = m.group(0).strip()
        if context.now is None:
            return TimeConstraint(text, None, False, reason="the memory is empty: no 'now'")
        if not _PAST_CUE.search(query):
            return TimeConstraint(text, None, False, reason="no past tense: it may be ahead")
        target = WEEKDAYS[m.group("wd").lower()]
        back = (context.now.weekday() - target) % 7 or 7  # before the query, as "last"
        return self._ground(text, day_span(context.now - timedelta(days=back)), False, context)

    def _ground(
        self, text: str, span: TimeSpan, yearless: bool, context: FrameContext
    ) -> TimeConstraint:
        memory = context.memory_range
        if context.now is None or memory is None:
            return TimeConstraint(text, None, False, reason="the memory is empty: no 'now'")
        if yearless:
            # "in May" with no year: the May that memory covers, grounded only if there is one
            candidates = [
                s
                for y in range(memory.start.year - 1, memory.end.year + 1)
                if (s := _with_year(span, y)) is not None and s.overlaps(memory)
            ]
            covered = [s for s in candidates if context.memory.covers(s)]
            if covered:
                candidates = covered
            past = [s for s in candidates if s.start <= context.now]
            if len(past) == 1:  # a question about memory asks about the past first
                candidates = past
            if len(candidates) != 1:
                years = ", ".join(str(c.start.year) for c in candidates) or "none in range"
                return TimeConstraint(text, None, False, reason=f"ambiguous year ({years})")
            span = candidates[0]
        if not span.overlaps(memory):
            return TimeConstraint(text, span, False, reason="outside the conversation's dates")
        return TimeConstraint(text, span, True, reason=f"relative to {context.now:%d %B %Y}")

    def _relation(
        self, m: re.Match[str], context: FrameContext, speakers: tuple[str, ...] = ()
    ) -> TimeConstraint | None:
        relation = _relation_of(m)
        anchor_text = _anchor_phrase(m)
        memory = context.memory_range
        text = m.group(0).strip()
        if context.now is None or memory is None:
            return TimeConstraint(text, None, False, relation, anchor_text, "the memory is empty")
        # the anchor is a time ("after May 2023") or an event found in memory ("after the trip")
        inner = resolve_all(anchor_text, context.now)
        anchor_id = None
        if inner and inner[0][0] == 0:
            grounded = self._ground(inner[0][2], inner[0][3].span, inner[0][3].yearless, context)
            anchor = grounded.window if grounded.grounded else None
            source = "time"
        else:
            unit = context.memory.locate(anchor_text)
            anchor = None if unit is None else unit.context.event_time or unit.context.session_span
            anchor_id = None if unit is None else unit.id
            source = "event found in memory"
        if anchor is None:
            reason = f"anchor {anchor_text!r} not found unambiguously in memory"
            return TimeConstraint(text, None, False, relation, anchor_text, reason)
        if relation is Relation.DURING and (m.group("period") or m.group("n")):
            return TimeConstraint(text, None, False, relation, anchor_text, "vague offset")
        amount = number_word(m.group("n")) if m.group("n") else 1
        if amount is None:
            return TimeConstraint(text, None, False, relation, anchor_text, "vague offset")
        try:
            window: TimeSpan | None
            if m.group("period"):
                window = _adjacent_span(anchor, m.group("period").lower(), relation)
            elif m.group("n"):
                window = _offset_span(anchor, amount, m.group("unit").lower(), relation)
            else:
                window = relation_window(anchor, relation, memory, context.now)
        except (ValueError, OverflowError):  # past the ends of the calendar
            return TimeConstraint(text, None, False, relation, anchor_text, "outside the calendar")
        if window is None or not window.overlaps(memory):
            return TimeConstraint(
                text, window, False, relation, anchor_text, "outside the conversation's dates"
            )
        return TimeConstraint(
            text, window, True, relation, anchor_text, f"{relation.value} {source}", anchor_id
        )


def _frame_reply(reply: str) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """The JSON object of a frame reply with its ``times`` and ``participants`` lists."""
    from ramem_core.llm import parse_json_object

    data = parse_json_object(reply)
    raw_times = data.get("times") or []
    raw_people = data.get("participants") or []
    if not isinstance(raw_times, list) or not isinstance(raw_people, list):
        raise TypeError("'times' and 'participants' must be lists")
    return data, raw_times, raw_people


MAX_PARTS = 4
"""The most parts a question is split into (:attr:`RecallFrame.parts`)."""


def _parts(reply: str, query: str = "") -> tuple[str, ...]:
    """The parts of a decomposition reply: two to :data:`MAX_PARTS` distinct non-empty
    strings of at most :data:`~ramem_core.validation.MAX_QUERY_CHARS` characters other than
    ``query``, or none for an empty list; anything else raises (an unusable reply)."""
    from ramem_core.llm import parse_json_object

    raw = parse_json_object(reply).get("parts")
    if not isinstance(raw, list):
        raise TypeError("'parts' must be a list")
    asked = " ".join(query.lower().split())
    parts: list[str] = []
    for item in raw:
        if not isinstance(item, str) or not item.strip() or len(item) > MAX_QUERY_CHARS:
            raise ValueError(f"unusable part {item!r}")
        text = " ".join(item.split())
        if text.lower() != asked and text.lower() not in (p.lower() for p in parts):
            parts.append(text)
    if len(parts) > MAX_PARTS:
        raise ValueError(f"{len(parts)} parts (at most {MAX_PARTS})")
    return tuple(parts) if len(parts) >= 2 else ()


class LLMFrameInducer:
    """Stage 2 with an LLM: the model proposes the frame, the code grounds it.

    Proposed windows are kept only when their dates parse and overlap the memory's range
    (the guard against hallucinated constraints); proposed participants only when they are
    known names that tell episodes apart. An unusable reply falls back to the rule-based
    inducer, and the fallbacks are counted.

    With ``decompose``, a second call asks the model to split a question about several
    things into separate questions (:attr:`RecallFrame.parts`), each ranked and the rankings
    fused by the retrieval stage; kept only when there are two to :data:`MAX_PARTS` distinct
    ones, each a usable query other than the question itself (else the question has no
    parts, and ``part_failures`` counts it). Off by default: it costs a call per question and
    is not measured, as no model is at hand here.

    Args:
        llm: the model (wrap it in :class:`~ramem_core.llm.MeteredLLM` to count and cache).
        fallback: the inducer used when the reply is unusable.
        decompose: also ask for the question's parts.
    """

    def __init__(
        self, llm: LLM, *, fallback: RuleFrameInducer | None = None, decompose: bool = False
    ) -> None:
        from ramem_core.llm import MeteredLLM

        self.llm = llm if isinstance(llm, MeteredLLM) else MeteredLLM(llm)
        self.fallback = fallback or RuleFrameInducer()
        self.decompose = decompose
        self.fallbacks = 0
        self.dropped = 0
        self.part_failures = 0

    def induce(self, query: str, context: FrameContext) -> RecallFrame:
        """The LLM's frame for ``query``, grounded against ``context`` by code, with its parts
        when ``decompose``."""
        frame = self._frame(query, context)
        if not self.decompose:
            return frame
        return replace(frame, parts=self.parts(query))

    def parts(self, query: str) -> tuple[str, ...]:
        """The separate questions ``query`` is made of, as the model proposes them and the
        code keeps them; ``()`` for a question about one thing or an unusable reply."""
        from ramem_core.prompts import PARTS_PROMPT, PARTS_PROMPT_VERSION

        try:
            reply = self.llm.complete(
                PARTS_PROMPT.format(question=query), version=PARTS_PROMPT_VERSION, usable=_parts
            )
            return _parts(reply, query)
        except Exception:
            self.part_failures += 1
            return ()

    def _frame(self, query: str, context: FrameContext) -> RecallFrame:
        from ramem_core.anchoring import parse_llm_span
        from ramem_core.prompts import FRAME_PROMPT, FRAME_PROMPT_VERSION

        memory = context.memory_range
        if context.now is None or memory is None:
            return self.fallback.induce(query, context)
        prompt = FRAME_PROMPT.format(
            range_start=f"{memory.start:%d %B %Y}",
            range_end=f"{memory.end:%d %B %Y}",
            now=f"{context.now:%d %B %Y}",
            participants=", ".join(context.participants) or "unknown",
            question=query,
        )
        try:
            reply = self.llm.complete(prompt, version=FRAME_PROMPT_VERSION, usable=_frame_reply)
            data, raw_times, raw_people = _frame_reply(reply)
        except Exception:
            # the call, the JSON or its shape failed: the rule-based frame is the safe answer
            self.fallbacks += 1
            return self.fallback.induce(query, context)
        times = []
        for raw in raw_times:
            text = str(raw.get("text", "")) if isinstance(raw, dict) else ""
            window = parse_llm_span(raw, context.now, past_years=200, future_years=200)
            if window is None:
                self.dropped += 1
                times.append(TimeConstraint(text, None, False, reason="unparseable proposal"))
            elif not window.overlaps(memory):
                self.dropped += 1
                times.append(
                    TimeConstraint(
                        text, window, False, reason="proposed outside the conversation's dates"
                    )
                )
            else:
                times.append(TimeConstraint(text, window, True, reason="proposed by the LLM"))
        known = {p.lower(): p for p in context.participants}
        people = tuple(
            dict.fromkeys(
                known[p.lower()] for p in raw_people if isinstance(p, str) and p.lower() in known
            )
        )
        need = data.get("need")
        need = need.strip() if isinstance(need, str) and need.strip() else query
        # asks-when and the named speakers are read off the question by rule: the model is
        # asked for times, people and the need
        return framed(query, need, times, people, context)
