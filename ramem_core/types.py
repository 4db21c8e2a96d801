"""Value types of RaMem: conversations in, situated memory units and evidence out.

All times are naive datetimes in the conversation's own clock (RaMem never mixes in the wall
clock); the store keeps them as integer epoch seconds read as UTC.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from enum import Enum
from typing import overload

from ramem_core.reading import Reading

DEFAULT_K = 10
"""How many memories a recall returns unless told otherwise (every entry point: ``recall``,
``situate``, ``answer``, the CLI and the adapters)."""


class Kind(str, Enum):
    """What a memory is as evidence: a first-hand statement, or something derived from one.

    A question ("What did the doctor say?") is not a fact, and an assistant's reply restates
    memories it was shown: both are kept (so "what did you tell me" works) but never outrank
    a statement (:attr:`ramem_core.retrieval.RetrievalConfig.derived_last`).
    """

    STATEMENT = "statement"
    QUESTION = "question"
    REPLY = "reply"


class Granularity(str, Enum):
    """How precise a time span is: "last week" is a week, "in 2022" a year, not a point."""

    INSTANT = "instant"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    YEAR = "year"


Version = frozenset[tuple[str, int]]
"""A namespace's write version: (writer, sequence number) of every writer that wrote to it.
Every write raises its writer's number after its data is stored (see
:meth:`ramem_core.protocols.Store.version`)."""


def newer_or_equal(version: Version, other: Version) -> bool:
    """True when ``version`` holds every write ``other`` announces (each writer's number is at
    least the one in ``other``)."""
    mine = dict(version)
    return all(mine.get(writer, -1) >= sequence for writer, sequence in other)


def to_epoch(moment: datetime) -> int:
    """Epoch seconds of a naive datetime read as UTC (the store's time axis)."""
    return int(moment.replace(tzinfo=timezone.utc).timestamp())


def utc_now() -> datetime:
    """The wall clock as RaMem stores times: naive UTC (for recording live messages only;
    recall never reads the wall clock)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


_EPOCH = datetime(1970, 1, 1)


def from_epoch(seconds: int) -> datetime:
    """The naive datetime for epoch seconds read as UTC (as ``fromtimestamp`` in UTC gives,
    in a third of the time: every stored time is decoded with it)."""
    return _EPOCH + timedelta(seconds=seconds)


@dataclass(frozen=True, slots=True)
class TimeSpan:
    """A closed interval of time ``[start, end]`` with the precision it was stated with."""

    start: datetime
    end: datetime
    granularity: Granularity

    def __post_init__(self) -> None:
        if self.end < self.start:
            msg = f"time span ends before it starts: {self.start} > {self.end}"
            raise ValueError(msg)

    def overlaps(self, other: TimeSpan) -> bool:
        """True when the two spans share at least one moment."""
        return self.start <= other.end and other.start <= self.end

    def contains(self, other: TimeSpan) -> bool:
        """True when ``other`` lies inside this span."""
        return self.start <= other.start and other.end <= self.end

    @classmethod
    def instant(cls, moment: datetime) -> TimeSpan:
        """A span of one moment."""
        return cls(moment, moment, Granularity.INSTANT)


@dataclass(frozen=True, slots=True)
class TimeMention:
    """A temporal expression found in a text and resolved against a reference time."""

    text: str
    span: TimeSpan
    char_start: int = -1
    char_end: int = -1


# --------------------------------------------------------------------------- input


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation.

    Attributes:
        id: unique inside its conversation (LoCoMo: ``"D1:3"``).
        speaker: who said it.
        text: what was said.
        time: when it was said, if the source gives a per-turn time.
        image_caption: a caption of an image shared with the message, kept as evidence.
    """

    id: str
    speaker: str
    text: str
    time: datetime | None = None
    image_caption: str | None = None


@dataclass(frozen=True, slots=True)
class Session:
    """A contiguous stretch of conversation, said at one time.

    ``time`` is the session's own timestamp; ``None`` means unknown (never invented).
    """

    id: str
    turns: tuple[Turn, ...]
    time: datetime | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """A multi-session conversation between known participants."""

    id: str
    sessions: tuple[Session, ...]
    participants: tuple[str, ...] = ()


# --------------------------------------------------------------------------- memory


@dataclass(frozen=True, slots=True)
class EpisodicContext:
    """Where a memory sits in the user's life: stage 1 of RaMem (episodic anchoring).

    Attributes:
        session_id: the session the memory was said in.
        conversation_id: the conversation it belongs to.
        session_span: when it was said ``[start, end]``; ``None`` when unknown.
        event_time: when the remembered thing happened, if stated; distinct from session time.
        mentions: every temporal expression in the memory, resolved against the session time.
        participants: who is involved (the speaker and named participants).
        location: where it happened, if stated.
        entities: proper nouns and numbers in the memory.
        topic: a few keywords.
        speaker: who said it.
        session_index: position of the session in its conversation (0-based).
        turn_index: position of the first source turn inside its session (0-based).
        kind: a first-hand statement, a question or an assistant's reply (see :class:`Kind`).
        state: the state this statement sets, as the LLM anchorer named it ("where Alice
            lives"): later statements of the same person naming the same state supersede it,
            whatever their words; empty when none was named.
        reading: whose state the statement speaks of, how it is said and what it signals
            (:class:`~ramem_core.reading.Reading`, read from its parse at anchoring);
            ``None`` when it was not read (a plain fact of its speaker).
    """

    session_id: str
    conversation_id: str
    session_span: TimeSpan | None = None
    event_time: TimeSpan | None = None
    mentions: tuple[TimeMention, ...] = ()
    participants: tuple[str, ...] = ()
    location: str | None = None
    entities: tuple[str, ...] = ()
    topic: str = ""
    speaker: str = ""
    session_index: int = 0
    turn_index: int = 0
    kind: Kind = Kind.STATEMENT
    state: str = ""
    reading: Reading | None = None


@dataclass(frozen=True, slots=True)
class MemoryUnit:
    """A situated memory: a self-contained content plus its episodic context.

    ``payload`` is an opaque string an application stores with the memory and gets back
    unchanged (e.g. :class:`langchain_ramem.RaMemStore` keeps a LangGraph item's value
    there); it is never indexed, embedded or shown to a model.
    """

    id: str
    content: str
    context: EpisodicContext
    source_ids: tuple[str, ...] = ()
    payload: str = ""


# --------------------------------------------------------------------------- recall


class Relation(str, Enum):
    """A temporal relation between the asked-about event and an anchor."""

    BEFORE = "before"
    AFTER = "after"
    DURING = "during"


@dataclass(frozen=True, slots=True)
class TimeConstraint:
    """A time window the answer must fall in, and how it was obtained.

    Attributes:
        text: the query words it came from ("last August", "after the trip").
        window: the grounded window, or ``None`` when it could not be grounded.
        grounded: True only when the window resolved unambiguously inside the conversation.
        relation: set when the constraint is relative to an anchor event.
        anchor: the anchor phrase ("the trip") for relations.
        reason: why it is (not) grounded, for people reading the frame.
        anchor_id: the id of the memory that located the anchor event, if one did.
        padded: retrieval widens the window (a reading of words such as "last week" is
            approximate); ``False`` for a window read off memories' own times.
    """

    text: str
    window: TimeSpan | None
    grounded: bool
    relation: Relation | None = None
    anchor: str | None = None
    reason: str = ""
    anchor_id: str | None = None
    padded: bool = True


@dataclass(frozen=True, slots=True)
class RecallFrame:
    """Stage 2 of RaMem: a query split into an information need and recall conditions.

    Attributes:
        query: the question as asked.
        need: the question without the parts that grounded a condition.
        now: the query's time: the caller's, else the end of the memory's last session.
        times: time constraints, grounded or not (only grounded ones are used).
        participants: people who tell episodes apart, named by the question (a condition).
        asks_when: the question asks *when* ("When did Ana move?"): memories that say when
            rank higher.
        speakers: people the question names who speak in the memory (not a condition: their
            memories rank higher, "What has Melanie painted?").
        asks_dialogue: the question asks what was said to or by the agent ("What did you
            recommend?", "What did I ask you about Lisbon?"): recorded questions and replies
            (:class:`Kind`) keep their place instead of yielding to statements.
        asks_now: the question asks about a state as it is now ("Where do I live now?", "What
            is my current job?"): the latest statement of each superseded chain comes first.
        asks_earlier: the question asks for an earlier value ("Where did I live before?",
            "What was my previous job?"): superseded statements keep their place.
        parts: the separate questions a question about several things is made of ("What
            pets does Nate have?" -> one per pet), proposed by an LLM
            (:class:`~ramem_core.frames.LLMFrameInducer` with ``decompose=True``): each is
            ranked too and the rankings fused, so every part can reach the relevant pool.
    """

    query: str
    need: str
    now: datetime | None = None
    times: tuple[TimeConstraint, ...] = ()
    participants: tuple[str, ...] = ()
    asks_when: bool = False
    speakers: tuple[str, ...] = ()
    asks_dialogue: bool = False
    asks_now: bool = False
    asks_earlier: bool = False
    parts: tuple[str, ...] = ()

    @property
    def grounded_times(self) -> tuple[TimeConstraint, ...]:
        """Time constraints that may be used to filter memory."""
        return tuple(t for t in self.times if t.grounded and t.window is not None)

    @property
    def is_grounded(self) -> bool:
        """True when the frame has at least one reliable constraint."""
        return bool(self.grounded_times or self.participants)

    def __str__(self) -> str:
        """The frame as a person reads it: the need, each time and whether it is used."""
        lines = [f"need: {self.need}"]
        if self.now is not None:
            lines.append(f"now: {self.now:%Y-%m-%d %H:%M}")
        for t in self.times:
            window = f"{t.window.start:%Y-%m-%d} to {t.window.end:%Y-%m-%d}" if t.window else "-"
            used = "grounded" if t.grounded else "not used"
            lines.append(f"time: {t.text!r} -> {window} ({used}: {t.reason})")
        if self.participants:
            lines.append(f"participants: {', '.join(self.participants)}")
        if self.speakers:
            lines.append(f"names who speaks: {', '.join(self.speakers)}")
        if self.asks_when:
            lines.append("asks when: memories that say when rank higher")
        if self.asks_dialogue:
            lines.append("asks what was said to or by the agent: questions and replies count")
        for part in self.parts:
            lines.append(f"part: {part}")
        if not self.is_grounded:
            lines.append("no grounded condition: content retrieval only")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Evidence:
    """A retrieved memory with its scores and the frame conditions it satisfies.

    Attributes:
        unit: the memory.
        score: the final ranking's score, decreasing with rank: the reciprocal-rank-fusion
            score, plus 1 for context-consistent memories (so scores above 1 mark them).
        rank: 1-based position in the final list.
        dense_score: cosine similarity to the query, if the unit was a dense candidate.
        lexical_score: BM25 score, if the unit was a lexical candidate.
        contextual: True when the unit came from the context-consistent candidates.
        satisfied: the frame conditions the unit meets ("why it is valid").
        superseded: the later statement by the same person of the same kind of state that
            may supersede this one ("I moved to Porto" after "I live in Lisbon"), if any: if
            it does, the memory was valid until then (derived when read, never stored).
        member: for a memory the second round added, the member of the set asked about it
            names (:class:`Member`).
        said: when the memory itself was said (its own turn's time; ``unit`` carries its
            whole session's span), if known.
        anchor: the question's before/after relation ("after the hospital visit") whose
            anchor event this memory tells of: the point the relation is measured from, not
            a memory within it.
    """

    unit: MemoryUnit
    score: float
    rank: int
    dense_score: float | None = None
    lexical_score: float | None = None
    contextual: bool = False
    satisfied: tuple[str, ...] = field(default_factory=tuple)
    superseded: Supersession | None = None
    member: Member | None = None
    said: datetime | None = None
    anchor: str | None = None


@dataclass(frozen=True, slots=True)
class Member:
    """Why the second round (:mod:`ramem_core.retrieval.members`) added a memory: it names
    ``word`` (as said, "taekwondo"), one of the ``kind`` a question about several things asks
    for ("martial arts")."""

    word: str
    kind: str


@dataclass(frozen=True, slots=True)
class Supersession:
    """A state statement superseded by a later one: ``by`` (the successor's unit id) said
    ``on`` (when the successor was said), with its ``content``; ``since``: when the
    successor's lasting state begins, when it says ("I moved to Porto last week!": that
    week; "I start at Google next month": that month), else ``None`` (as of ``on``)."""

    by: str
    on: datetime
    content: str
    since: TimeSpan | None = None


@dataclass(frozen=True, slots=True)
class Recall(Sequence[Evidence]):
    """What one recall found: the recall frame it used and the evidence, best first.

    A sequence of its evidence (``recall[0]``, ``len(recall)``, ``for e in recall``), so code
    that reads a list of evidence reads it unchanged; ``frame`` says how the question was
    grounded (its ``now``, time windows and participants).
    """

    frame: RecallFrame
    evidence: tuple[Evidence, ...] = ()

    def __len__(self) -> int:
        return len(self.evidence)

    @overload
    def __getitem__(self, index: int) -> Evidence: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Evidence, ...]: ...

    def __getitem__(self, index: int | slice) -> Evidence | tuple[Evidence, ...]:
        return self.evidence[index]

    def __iter__(self) -> Iterator[Evidence]:
        return iter(self.evidence)


@dataclass(frozen=True, slots=True)
class IngestReport:
    """What an ingest did: memory units written and turns/sessions they cover."""

    conversations: int
    sessions: int
    turns: int
    units: int
    new_units: int
