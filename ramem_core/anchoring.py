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
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from ramem_core.protocols import LLM
from ramem_core.reading import PLAIN, Reading, StateReader, default_reader
from ramem_core.replacement import own_words
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
_TITLED = re.compile(
    r"\b(Dr|Mr|Mrs|Ms|Mx|Prof|Sr|Jr|St)\.\s+([A-Z][a-zA-Z'\-]+(?:\s+[A-Z][a-zA-Z'\-]+)*)"
)
_PLACE = re.compile(
    r"\b(?:in|at|to|from|visited|visiting|near|around)\s+"
    r"((?:the\s+)?[A-Z][a-zA-Z\-]+(?:\s+[A-Z][a-zA-Z\-]+){0,2})"
)
_NOT_NAMES = frozenset(w.lower() for w in (*MONTHS, *WEEKDAYS)) | STOPWORDS | {"i", "ok", "okay"}


def unit_id(conversation_id: str, session_id: str, source_ids: Sequence[str]) -> str:
    """Deterministic id: re-ingesting the same turns replaces the same units."""
    key = "\x1f".join((conversation_id, session_id, *source_ids))
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:24]


PIECE_CHARS = 1_000
"""A turn longer than this is stored as several memory units of at most this many characters
(people paste documents into chats): the default embedder reads 256 word pieces, about a
thousand characters of English, and ignores the rest of a longer text (measured by
``benchmarks/long_turns.py``)."""

_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")


def pieces(text: str, limit: int) -> list[str]:
    """``text`` with its whitespace normalised, cut into consecutive pieces of at most
        ``limit`` characters: after a sentence where one ends in the piece's second half, else
        between words, else inside an overlong word. Nothing is lost: joined (with a space where a
    cut fell between words) they give the text back."""
    text = " ".join(text.split())
    out: list[str] = []
    while len(text) > limit:
        head = text[: limit + 1]
        cuts = [m.start() for m in _SENTENCE_END.finditer(head) if m.start() >= limit // 2]
        cut = cuts[-1] if cuts else head.rfind(" ")
        if cut <= 0:
            out.append(text[:limit])
            text = text[limit:]
            continue
        out.append(text[:cut])
        text = text[cut + 1 :]
    return [*out, text] if text or not out else out


def restate(turn: Turn) -> str:
    """The turn as a self-contained statement: speaker named, image caption kept."""
    text = " ".join(turn.text.split())
    if turn.image_caption:
        caption = " ".join(turn.image_caption.split())  # one line, as the text
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
    """Proper nouns, in text order: names with their title ("Dr. Okafor", not "Dr") and
    capitalised words not opening a sentence. A number alone is not an entity ("August 5"
    names no entity "5")."""
    found: list[tuple[int, str]] = [
        (m.start(), f"{m.group(1)}. {m.group(2)}") for m in _TITLED.finditer(text)
    ]
    # the titled names are blanked, so "Okafor" after "Dr. " is not read again on its own
    rest = _TITLED.sub(lambda m: " " * len(m.group(0)), text)
    for m in _CAPITAL.finditer(rest):
        words = [w for w in m.group(1).split() if w.lower() not in _NOT_NAMES]
        if words:
            found.append((m.start(), " ".join(words)))
    seen = dict.fromkeys(name for _, name in sorted(found))
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
        piece_chars: a turn longer than this becomes several units of at most this many
            characters, each with the turn's coordinates and source id (``None``: never
            split). Only with ``window=1``.
        reader: reads whose state each memory speaks of and how it is said
            (:mod:`ramem_core.reading`; by default the shared spaCy parser); ``None``: no
            memory is read (each a plain fact of its speaker).
    """

    def __init__(
        self,
        window: int = 1,
        piece_chars: int | None = PIECE_CHARS,
        reader: StateReader | Literal["default"] | None = "default",
    ) -> None:
        if window < 1:
            msg = f"window must be at least 1, got {window}"
            raise ValueError(msg)
        if piece_chars is not None and piece_chars < 100:
            msg = f"piece_chars must be at least 100 (or None), got {piece_chars}"
            raise ValueError(msg)
        self.window = window
        self.piece_chars = piece_chars
        self.reader = default_reader() if reader == "default" else reader

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
        units: list[MemoryUnit] = []
        for begin in range(0, len(session.turns), self.window):
            turns = session.turns[begin : begin + self.window]
            limit = self.piece_chars
            if self.window == 1 and limit is not None and len(turns[0].text) > limit:
                units.extend(
                    self._unit(conversation_id, session, session_index, begin, [t], span, known, i)
                    for i, t in enumerate(_split_turn(turns[0], limit))
                )
                continue
            units.append(
                self._unit(conversation_id, session, session_index, begin, turns, span, known)
            )
        return self.read(units)

    def read(self, units: list[MemoryUnit]) -> list[MemoryUnit]:
        """``units`` with their readings (:attr:`reader`), in one batch; a memory of one
        speaker is read as said by them."""
        if self.reader is None or not units:
            return units
        texts = [own_words(u) for u in units]
        readings = self.reader.read(texts, [u.context.speaker for u in units])
        return [
            u if r is PLAIN else replace(u, context=replace(u.context, reading=r))
            for u, r in zip(units, readings, strict=True)
        ]

    def _unit(
        self,
        conversation_id: str,
        session: Session,
        session_index: int,
        turn_index: int,
        turns: Sequence[Turn],
        span: TimeSpan | None,
        known: Sequence[str],
        part: int = 0,
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
        key = source_ids if not part else (*source_ids, f"part {part}")
        return MemoryUnit(unit_id(conversation_id, session.id, key), content, context, source_ids)


def _split_turn(turn: Turn, limit: int) -> list[Turn]:
    """A long turn as turns of at most ``limit`` characters of text, each keeping its id,
    speaker and time; the image caption goes with the last piece (where restating puts it)."""
    texts = pieces(turn.text, limit)
    return [
        replace(turn, text=text, image_caption=turn.image_caption if i == len(texts) - 1 else None)
        for i, text in enumerate(texts)
    ]


def session_span(session: Session) -> TimeSpan | None:
    """When a session was said: its turns' times if given, else its timestamp, else unknown."""
    times = [t.time for t in session.turns if t.time is not None]
    if session.time is not None:
        times.append(session.time)
    if not times:
        return None
    return TimeSpan(min(times), max(times), Granularity.INSTANT)


# --------------------------------------------------------------------------- LLM-backed


@dataclass(slots=True)
class AnchoringReport:
    """What an :class:`LLMAnchorer` did; nothing is lost silently, so every detour is counted.

    Attributes:
        windows: windows of turns sent to the LLM.
        retries: windows asked a second time after an unusable reply.
        fallback_windows: windows anchored by the rule-based anchorer after two bad replies.
        fallback_turns: turns no LLM memory covered, anchored by the rule-based anchorer.
        llm_units: memory units written by the LLM and kept.
        dropped_units: LLM units rejected (no valid source id, empty content, wrong types).
        dropped_times: event or mention times rejected (unparseable or outside a sane range).
    """

    windows: int = 0
    retries: int = 0
    fallback_windows: int = 0
    fallback_turns: int = 0
    llm_units: int = 0
    dropped_units: int = 0
    dropped_times: int = 0

    def as_dict(self) -> dict[str, int]:
        """Plain numbers for reports."""
        return {name: getattr(self, name) for name in self.__slots__}  # type: ignore[attr-defined]


_GRANULARITIES = {g.value: g for g in Granularity if g is not Granularity.INSTANT}


def parse_llm_span(
    value: Any, reference: datetime | None, *, past_years: int = 30, future_years: int = 5
) -> TimeSpan | None:
    """A ``{"start", "end", "granularity"}`` object proposed by an LLM, checked by code.

    Returns ``None`` unless both dates parse (ISO ``YYYY-MM-DD``), ``start <= end``, the
    granularity is known, and the span lies in a sane range around ``reference`` (or within
    1900-2100 when the session time is unknown).
    """
    if not isinstance(value, Mapping):
        return None
    try:
        start = datetime.fromisoformat(str(value["start"])[:10])
        end = datetime.fromisoformat(str(value["end"])[:10]).replace(hour=23, minute=59, second=59)
        granularity = _GRANULARITIES[str(value.get("granularity", "day"))]
    except (KeyError, ValueError, TypeError):
        return None
    if end < start:
        return None
    low, high = (datetime(1900, 1, 1), datetime(2100, 12, 31))
    if reference is not None:
        low = reference.replace(year=max(1, reference.year - past_years), month=1, day=1)
        high = reference.replace(year=reference.year + future_years, month=12, day=31)
    if start < low or end > high:
        return None
    return TimeSpan(start, end, granularity)


class LLMAnchorer:
    """Stage 1 with an LLM: self-contained, lossless memories with their episodic coordinates.

    The LLM proposes, the code checks: replies must be JSON of the documented shape, source
    ids must be turns of the window, dates must parse and lie in a sane range around the
    session. An unusable reply is retried once, then that window falls back to the rule-based
    anchorer; turns that no LLM memory covers get rule-based units. Every turn ends up covered,
    and every detour is counted in :attr:`report`.

    Args:
        llm: the model (wrap it in :class:`~ramem_core.llm.MeteredLLM` to count and cache).
        window: turns per LLM call (never across sessions).
        workers: windows in flight at once.
        fallback: the anchorer for failed windows and uncovered turns.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        window: int = 8,
        workers: int = 4,
        fallback: RuleAnchorer | None = None,
    ) -> None:
        from ramem_core.llm import MeteredLLM

        self.llm = llm if isinstance(llm, MeteredLLM) else MeteredLLM(llm)
        self.window = window
        self.workers = workers
        self.fallback = fallback or RuleAnchorer()
        self.report = AnchoringReport()
        self._lock = threading.Lock()

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self.report, name, getattr(self.report, name) + delta)

    def anchor(self, conversation: Conversation) -> list[MemoryUnit]:
        """Memory units of every session, in conversation order; every turn covered."""
        from concurrent.futures import ThreadPoolExecutor

        speakers = {t.speaker for s in conversation.sessions for t in s.turns}
        known = tuple(dict.fromkeys((*conversation.participants, *sorted(speakers))))
        jobs = [
            (index, session, begin)
            for index, session in enumerate(conversation.sessions)
            for begin in range(0, len(session.turns), self.window)
        ]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            parts = list(pool.map(lambda job: self._window(conversation.id, known, *job), jobs))
        return [unit for part in parts for unit in part]

    def _rules(
        self,
        conversation_id: str,
        session: Session,
        index: int,
        turns: Sequence[Turn],
        known: Sequence[str],
    ) -> list[MemoryUnit]:
        partial = Session(session.id, tuple(turns), session.time)
        return self.fallback.anchor_session(conversation_id, partial, index, known)

    def _window(
        self, conversation_id: str, known: Sequence[str], index: int, session: Session, begin: int
    ) -> list[MemoryUnit]:
        from ramem_core.llm import parse_json_object
        from ramem_core.prompts import ANCHOR_PROMPT, ANCHOR_PROMPT_VERSION

        turns = session.turns[begin : begin + self.window]
        prompt = ANCHOR_PROMPT.format(
            session_id=session.id,
            session_time=f"{session.time:%d %B %Y, %H:%M}" if session.time else "unknown",
            participants=", ".join(known) or "unknown",
            turns="\n".join(f"{t.id} | {restate(t)}" for t in turns),
        )
        self._count(windows=1)
        units: list[MemoryUnit] = []
        for attempt in range(2):
            try:

                def parse(reply: str) -> list[MemoryUnit]:
                    data = parse_json_object(reply)
                    return self._parse(data, conversation_id, session, index, begin, turns)

                units = parse(
                    self.llm.complete(prompt, version=ANCHOR_PROMPT_VERSION, usable=parse)
                )
                break
            except Exception:
                # whatever failed (the call, the JSON, the checks): retry once, then fall back
                if attempt == 0:
                    self._count(retries=1)
        else:
            self._count(fallback_windows=1, fallback_turns=len(turns))
            return self._rules(conversation_id, session, index, turns, known)
        covered = {sid for u in units for sid in u.source_ids}
        missing = [t for t in turns if t.id not in covered]
        if missing:
            self._count(fallback_turns=len(missing))
            units.extend(self._rules(conversation_id, session, index, missing, known))
        self._count(llm_units=len(units) - len(missing))
        return units

    def _parse(
        self,
        data: Mapping[str, Any],
        conversation_id: str,
        session: Session,
        index: int,
        begin: int,
        turns: Sequence[Turn],
    ) -> list[MemoryUnit]:
        items = data.get("memories")
        if not isinstance(items, list) or not items:
            msg = "reply has no 'memories' list"
            raise ValueError(msg)
        by_id = {t.id: t for t in turns}
        order = {t.id: i for i, t in enumerate(turns)}
        reference = session.time
        span = session_span(session)
        units = []
        for number, item in enumerate(items):
            content = item.get("content") if isinstance(item, Mapping) else None
            raw_ids = item.get("source_ids") if isinstance(item, Mapping) else None
            ids = [str(i) for i in raw_ids if str(i) in by_id] if isinstance(raw_ids, list) else []
            if not isinstance(content, str) or not content.strip() or not ids:
                self._count(dropped_units=1)
                continue
            ids.sort(key=order.__getitem__)
            event = parse_llm_span(item.get("event_time"), reference)
            if item.get("event_time") is not None and event is None:
                self._count(dropped_times=1)
            mentions = []
            for raw in item.get("mentions") or []:
                parsed = parse_llm_span(raw, reference)
                if parsed is None or not isinstance(raw.get("text"), str):
                    self._count(dropped_times=1)
                    continue
                mentions.append(TimeMention(raw["text"], parsed))
            speakers = list(dict.fromkeys(by_id[i].speaker for i in ids))
            people = [p for p in item.get("participants") or [] if isinstance(p, str) and p]
            entities = [e for e in item.get("entities") or [] if isinstance(e, str | int | float)]
            location = item.get("location")
            updates = item.get("updates")
            context = EpisodicContext(
                session_id=session.id,
                conversation_id=conversation_id,
                session_span=span,
                event_time=event,
                mentions=tuple(mentions),
                participants=tuple(dict.fromkeys([*speakers, *people])),
                location=location if isinstance(location, str) and location else None,
                entities=tuple(str(e) for e in entities)[:12],
                topic=str(item.get("topic") or "")[:120],
                speaker=", ".join(speakers),
                session_index=index,
                turn_index=begin + order[ids[0]],
                state=" ".join(updates.split())[:120] if isinstance(updates, str) else "",
                reading=parse_llm_reading(item, speakers),
            )
            key = (*ids, f"llm#{number}")
            units.append(
                MemoryUnit(
                    unit_id(conversation_id, session.id, key), content.strip(), context, tuple(ids)
                )
            )
        if not units:
            msg = "no usable memory in the reply"
            raise ValueError(msg)
        return units


OWNER_CHARS = 80
"""The longest owner an LLM may name (:func:`llm_owner`); a longer one is not a name."""

_SPEAKER_WORDS = frozenset(
    ("self", "me", "i", "myself", "my", "mine", "we", "us", "our", "ours", "ourselves")
) | {"speaker", "the speaker"}


def llm_owner(value: Any, speakers: Sequence[str]) -> str | None:
    """The owner an LLM named for a memory (its ``"owner"``), as a
    :attr:`~ramem_core.reading.Reading.owner`: ``""`` for the speaker ("self", "me", "I",
    the speaker's own name, an empty string), else the person lower-cased ("my husband",
    "priya"); ``"Ann's husband"`` said by Ann is ``"my husband"``. ``None`` when ``value`` is
    no owner: not a string, longer than :data:`OWNER_CHARS`, more than one line, or nothing
    left once the store's separators ("|", ";") are taken out."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if len(text) > OWNER_CHARS or not text.isprintable():
        return None
    owner = " ".join(re.sub(r"[|;]", " ", text).replace("\u2019", "'").split()).lower()
    if not owner:
        return None if text else ""
    owner = owner.removesuffix("'s").strip()
    names = {n for s in speakers for n in (s.strip().lower(), *s.lower().split()[:1]) if n}
    if owner in _SPEAKER_WORDS or owner in names:
        return ""
    for name in names:
        if owner.startswith(f"{name}'s ") and owner[len(name) + 3 :].strip():
            return f"my {owner[len(name) + 3 :].strip()}"
    return owner


def parse_llm_reading(item: Mapping[str, Any], speakers: Sequence[str]) -> Reading | None:
    """The :class:`~ramem_core.reading.Reading` an LLM gave a memory (its ``"owner"`` and
    ``"replaces"``), checked: ``"replaces"`` counts only as a JSON boolean; an owner that is
    no owner (:func:`llm_owner`) stores no reading at all, since whose state it speaks of is
    then unknown; a missing owner is the speaker's. ``None`` when neither is given sensibly,
    or when the reading says no more than a plain fact of the speaker does."""
    raw_owner = item.get("owner")
    raw_replaces = item.get("replaces")
    replaces = raw_replaces if isinstance(raw_replaces, bool) else None
    if raw_owner is None:
        if replaces is None:
            return None
        owner = ""
    else:
        named = llm_owner(raw_owner, speakers)
        if named is None:
            return None
        owner = named
    reading = Reading(owner=owner, others=(owner,) if owner else (), replaces=replaces)
    return None if reading == PLAIN else reading
