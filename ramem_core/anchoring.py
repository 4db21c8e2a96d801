"""Stage 1 of RaMem: episodic anchoring.

Each memory unit is ``(content, episodic context)``. The rule-based anchorer here needs no LLM:
content is the turn restated with its speaker (and any shared image's caption), and the context
holds the session span, every temporal expression resolved against the *session* time, the
event time (the most precise resolved mention, never invented), participants, entities, a
location and topic keywords. An LLM-backed anchorer can replace it through the ``Anchorer``
protocol.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace

from ramem_core.temporal import MONTHS, WEEKDAYS, find_mentions
from ramem_core.types import (
    Conversation,
    EpisodicContext,
    Granularity,
    MemoryUnit,
    Session,
    TimeMention,
    TimeSpan,
    Turn,
)

_PRECISION = {
    Granularity.INSTANT: 0,
    Granularity.DAY: 1,
    Granularity.WEEK: 2,
    Granularity.MONTH: 3,
    Granularity.YEAR: 4,
}
_STOPWORD_TEXT = """
    yesterday today tomorrow tonight week weeks month months year years weekend ago last next
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just me more most my myself no nor not now of off on once only
    or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until
    up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves yeah yes oh hey hi hello wow thanks thank really so much like
    just got get going gonna know think lot things thing good great awesome amazing glad
    sounds sure well way time been also that's i'm it's you're i've don't can't let's what's
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]+")
_CAPITAL = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-zA-Z'\-]+(?:\s+[A-Z][a-zA-Z'\-]+)*)")
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")
_PLACE = re.compile(
    r"\b(?:in|at|to|from|visited|visiting|near|around)\s+"
    r"((?:the\s+)?[A-Z][a-zA-Z\-]+(?:\s+[A-Z][a-zA-Z\-]+){0,2})"
)
_NOT_NAMES = frozenset(w.lower() for w in (*MONTHS, *WEEKDAYS)) | STOPWORDS | {"i", "ok", "okay"}


def unit_id(conversation_id: str, session_id: str, source_ids: Sequence[str]) -> str:
    """Deterministic id: re-ingesting the same turns replaces the same units."""
    key = "\x1f".join((conversation_id, session_id, *source_ids))
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:24]


def restate(turn: Turn) -> str:
    """The turn as a self-contained statement: speaker named, image caption kept."""
    text = " ".join(turn.text.split())
    if turn.image_caption:
        caption = turn.image_caption.strip()
        if not re.match(r"^(a|an)\s+(photo|picture|image)\b", caption, re.IGNORECASE):
            caption = f"an image: {caption}"
        text = f"{text} [shares {caption}]".strip()
    return f"{turn.speaker}: {text}"


def best_event_time(mentions: Iterable[TimeMention]) -> TimeSpan | None:
    """The most precise resolved mention (first one on ties), or ``None``: never invented."""
    ranked = sorted(mentions, key=lambda m: _PRECISION[m.span.granularity])
    return ranked[0].span if ranked else None


def mentioned_names(text: str, names: Iterable[str]) -> list[str]:
    """Known ``names`` that occur in ``text`` as whole words (case-insensitive, possessives too)."""
    found = []
    for name in names:
        if name and re.search(rf"\b{re.escape(name)}(?:'s)?\b", text, re.IGNORECASE):
            found.append(name)
    return found


def extract_entities(text: str, limit: int = 12) -> tuple[str, ...]:
    """Proper nouns (capitalised words not opening a sentence) and numbers, in text order."""
    seen: dict[str, None] = {}
    for m in _CAPITAL.finditer(text):
        words = [w for w in m.group(1).split() if w.lower() not in _NOT_NAMES]
        if words:
            seen.setdefault(" ".join(words), None)
    for m in _NUMBER.finditer(text):
        seen.setdefault(m.group(0), None)
    return tuple(seen)[:limit]


def extract_location(text: str, exclude: Iterable[str] = ()) -> str | None:
    """A place named after "in/at/to/from/visited ..."; ``None`` when nothing plausible."""
    excluded = {e.lower() for e in exclude} | _NOT_NAMES
    for m in _PLACE.finditer(text):
        place = re.sub(r"^the\s+", "", m.group(1))
        if place.split()[0].lower() not in excluded:
            return place
    return None


def extract_topic(text: str, size: int = 3) -> str:
    """A few content keywords, most frequent and longest first."""
    words = [w.lower().strip("'-") for w in _WORD.findall(text)]
    counts = Counter(w for w in words if len(w) > 3 and w not in STOPWORDS)
    ranked = sorted(counts, key=lambda w: (-counts[w], -len(w), w))
    return ", ".join(ranked[:size])


class RuleAnchorer:
    """Rule-based episodic anchoring (no LLM).

    Args:
        window: turns per memory unit (consecutive, never across sessions). 1 keeps one unit
            per turn, which keeps evidence turn ids exact.
    """

    def __init__(self, window: int = 1) -> None:
        if window < 1:
            msg = f"window must be at least 1, got {window}"
            raise ValueError(msg)
        self.window = window

    def anchor(self, conversation: Conversation) -> list[MemoryUnit]:
        """Memory units of every session of ``conversation``, in conversation order."""
        speakers = {t.speaker for s in conversation.sessions for t in s.turns}
        known = tuple(dict.fromkeys((*conversation.participants, *sorted(speakers))))
        units: list[MemoryUnit] = []
        for index, session in enumerate(conversation.sessions):
            units.extend(self.anchor_session(conversation.id, session, index, known))
        return units

    def anchor_session(
        self, conversation_id: str, session: Session, session_index: int, known: Sequence[str]
    ) -> list[MemoryUnit]:
        """Memory units of one session; ``known`` are the names of known participants."""
        span = session_span(session)
        units = []
        for begin in range(0, len(session.turns), self.window):
            turns = session.turns[begin : begin + self.window]
            units.append(
                self._unit(conversation_id, session, session_index, begin, turns, span, known)
            )
        return units

    def _unit(
        self,
        conversation_id: str,
        session: Session,
        session_index: int,
        turn_index: int,
        turns: Sequence[Turn],
        span: TimeSpan | None,
        known: Sequence[str],
    ) -> MemoryUnit:
        lines = [restate(t) for t in turns]
        content = "\n".join(lines)
        mentions: list[TimeMention] = []
        offset = 0
        for turn, line in zip(turns, lines, strict=True):
            reference = turn.time or session.time
            if reference is not None:  # relative times need a session time; none is invented
                mentions.extend(
                    replace(m, char_start=m.char_start + offset, char_end=m.char_end + offset)
                    for m in find_mentions(line, reference)
                    if m.char_start >= len(turn.speaker) + 2  # not inside the speaker's name
                )
            offset += len(line) + 1
        speakers = list(dict.fromkeys(t.speaker for t in turns))
        participants = tuple(dict.fromkeys([*speakers, *mentioned_names(content, known)]))
        body = " ".join(t.text for t in turns)
        source_ids = tuple(t.id for t in turns)
        context = EpisodicContext(
            session_id=session.id,
            conversation_id=conversation_id,
            session_span=span,
            event_time=best_event_time(mentions),
            mentions=tuple(mentions),
            participants=participants,
            location=extract_location(body, exclude=known),
            entities=extract_entities(body),
            topic=extract_topic(body),
            speaker=", ".join(speakers),
            session_index=session_index,
            turn_index=turn_index,
        )
        return MemoryUnit(
            unit_id(conversation_id, session.id, source_ids), content, context, source_ids
        )


def session_span(session: Session) -> TimeSpan | None:
    """When a session was said: its turns' times if given, else its timestamp, else unknown."""
    times = [t.time for t in session.turns if t.time is not None]
    if session.time is not None:
        times.append(session.time)
    if not times:
        return None
    return TimeSpan(min(times), max(times), Granularity.INSTANT)
