"""Live turns: one message as it arrives, checked, placed in its session and made memories.

:meth:`ramem_core.RaMem.add_turn` is these steps in order: :func:`check_turn` (nothing is
written when it fails), the anchoring and embedding of a draft (outside the memory's lock),
then under the lock :func:`place` (which session the turn continues or opens, from the
session as stored) and :func:`placed` (the drafts with their session's coordinates), and one
write. :class:`LiveSessions` runs them for a memory; the functions touch no store.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt

from ramem_core.anchoring import unit_id
from ramem_core.errors import InvalidInputError, UncertainWriteError, WriteCancelledError
from ramem_core.index.freshness import Freshness
from ramem_core.index.snapshot import SessionState
from ramem_core.protocols import Anchorer, Embedder, Store
from ramem_core.synthesis import strip_echo
from ramem_core.types import (
    Conversation,
    Granularity,
    Kind,
    MemoryUnit,
    Session,
    TimeSpan,
    Turn,
)
from ramem_core.validation import (
    MAX_CAPTION_CHARS,
    MAX_TEXT_CHARS,
    check_id,
    check_moment,
    check_name,
    check_text,
    visible,
)

CANCEL_PIECES = 16
"""A cancellable turn's pieces are embedded this many at a time (about 4,000 tokens, a second
or two on two cores), so a cancel is honoured within one such pass (a design limit, not
fitted)."""


def _go_on(cancelled: Callable[[], bool] | None) -> None:
    """Raise :class:`~ramem_core.errors.WriteCancelledError` once ``cancelled`` says so."""
    if cancelled is not None and cancelled():
        raise WriteCancelledError("the write was cancelled before it was stored: nothing stored")


@dataclass(frozen=True, slots=True)
class LiveTurn:
    """A checked message: who said what when, in which conversation, as which kind of
    evidence, with a key of its own (writers recording one conversation never share an id)."""

    speaker: str
    text: str
    at: datetime
    conversation_id: str
    kind: Kind
    image_caption: str | None = None
    key: str = ""
    idempotent: bool = False  # the key is the caller's idempotency key (a retry stores once)

    def draft(self, speakers: Sequence[str]) -> Conversation:
        """The turn as a one-turn conversation for the anchorer (its session is assigned
        later, by :func:`placed`)."""
        turn = Turn(f"draft:{self.key}", self.speaker, self.text, self.at, self.image_caption)
        session = Session("draft", (turn,), self.at)
        return Conversation(self.conversation_id, (session,), tuple(speakers))


@dataclass(frozen=True, slots=True)
class Place:
    """Where a live turn goes: its session (index, id, start) and its turn number there."""

    index: int
    session_id: str
    start: datetime
    turn: int


def check_turn(
    speaker: str,
    text: str,
    *,
    at: datetime,
    conversation_id: str,
    image_caption: str | None = None,
    kind: Kind | None = None,
    idempotency_key: str | None = None,
) -> LiveTurn:
    """The message checked (see :meth:`ramem_core.RaMem.add_turn` for what is refused); a
    reply is stripped of what it echoed of the memories it was shown. Its key, which its
    memories' ids are made of, is ``idempotency_key``'s (a random one when ``None``)."""
    if idempotency_key is not None:
        check_text(idempotency_key, "idempotency_key", limit=200)
    moment = check_moment(at, "at")
    check_name(speaker, "speaker")
    check_id(conversation_id, "conversation_id")
    if image_caption is not None:
        image_caption = check_text(
            image_caption, "image_caption", limit=MAX_CAPTION_CHARS, required=False
        )
        image_caption = image_caption if visible(image_caption) else None
    text = check_text(
        text, f"turn text from {speaker!r}", limit=MAX_TEXT_CHARS, required=not image_caption
    )
    if kind is not None and not isinstance(kind, Kind):
        msg = f"kind must be a Kind (statement, question, reply), got {kind!r}"
        raise InvalidInputError(msg)
    if kind is Kind.REPLY:
        text = strip_echo(text)
        if not visible(text) and not image_caption:
            msg = f"the reply from {speaker!r} holds nothing but echoed memories"
            raise InvalidInputError(msg)
    return LiveTurn(
        speaker,
        text,
        moment,
        conversation_id,
        kind or Kind.STATEMENT,
        image_caption,
        key=idempotency_key or uuid.uuid4().hex,
        idempotent=idempotency_key is not None,
    )


def place(
    held: SessionState | None,
    turn: LiveTurn,
    *,
    gap: timedelta,
    new_session: bool = False,
    ended: bool = False,
) -> Place:
    """The session ``turn`` goes to: the one ``held`` (the conversation's latest, as stored)
    when it is open, else a new one after it. A session closes after a pause longer than
    ``gap``, when ``ended`` (:meth:`~ramem_core.RaMem.end_session`) or on ``new_session``; a
    turn dated more than ``gap`` before the open session began (history added out of order)
    starts one of its own too, so no session's span stretches over months it was not said in."""
    if (
        held is None
        or held.span is None
        or new_session
        or ended
        or turn.at - held.span.end > gap
        or held.span.start - turn.at > gap
    ):
        index = 0 if held is None else held.index + 1
        return Place(index, f"{turn.conversation_id}-s{index + 1}", turn.at, 0)
    return Place(held.index, held.session_id, min(held.span.start, turn.at), held.turns)


def turn_unit_id(turn: LiveTurn, namespace: str, part: int = 0) -> str:
    """The id of a live turn's memory (of its ``part``-th piece) in ``namespace``: made of its
    namespace, conversation and key only, never of where it was placed, so a retry with the
    same key makes the same id wherever the first attempt landed, and two tenants' turns
    stored under one key get ids of their own."""
    piece = (f"part {part}",) if part else ()
    return unit_id(turn.conversation_id, "live", (f"namespace {namespace}", turn.key, *piece))


def legacy_turn_id(turn: LiveTurn) -> str:
    """The id a keyed turn's first memory had before ids were namespaced (0.x): a retry of a
    turn stored then still finds it."""
    return unit_id(turn.conversation_id, "live", (turn.key,))


def placed(
    drafts: Sequence[MemoryUnit], turn: LiveTurn, where: Place, namespace: str
) -> list[MemoryUnit]:
    """The anchored ``drafts`` of ``turn`` (several pieces for a long turn) as the memories
    to store: ids of their own, the session's coordinates, and this turn's own span (the
    session's is derived when read, so nothing stored is ever rewritten)."""
    short = hashlib.sha256(turn.key.encode("utf-8")).hexdigest()[:12]  # any key, one line
    turn_id = f"{where.session_id}:{where.turn + 1}-{short}"
    derived = turn.kind is not Kind.STATEMENT
    return [
        replace(
            draft,
            id=turn_unit_id(turn, namespace, part),
            source_ids=(turn_id,),
            context=replace(
                draft.context,
                session_id=where.session_id,
                session_span=TimeSpan(where.start, turn.at, Granularity.INSTANT),
                session_index=where.index,
                turn_index=where.turn,
                # a question is not an event: "what did the dentist say in August?" asked
                # today happened today, and its "August" is a guess, not a time; a reply's
                # dates restate the memories it was shown
                event_time=None if derived else draft.context.event_time,
                mentions=() if derived else draft.context.mentions,
                kind=turn.kind,
            ),
        )
        for part, draft in enumerate(drafts)
    ]


class LiveSessions:
    """One memory's live sessions: records each turn in the session it continues or opens,
    and remembers the sessions :meth:`end` closed (in this process)."""

    def __init__(
        self,
        store: Store,
        snapshots: Freshness,
        anchorer: Anchorer,
        embedder: Embedder,
        lock: threading.RLock,
        session_gap: timedelta,
    ) -> None:
        if not isinstance(session_gap, timedelta) or session_gap <= timedelta(0):
            msg = f"session_gap must be a positive timedelta, got {session_gap!r}"
            raise InvalidInputError(msg)
        self.store = store
        self.snapshots = snapshots
        self.anchorer = anchorer
        self.embedder = embedder
        self.session_gap = session_gap
        self._lock = lock
        self._ended: set[tuple[str, str, str]] = set()  # live sessions closed by end()

    def record(
        self,
        namespace: str,
        turn: LiveTurn,
        *,
        new_session: bool = False,
        cancelled: Callable[[], bool] | None = None,
    ) -> MemoryUnit:
        """Store a checked turn (see :meth:`ramem_core.RaMem.add_turn`); returns its first
        memory. ``cancelled`` is asked between the embedder's passes over a long turn's pieces
        and last just before the write: once it says so, nothing is stored
        (:class:`~ramem_core.errors.WriteCancelledError`)."""
        stored = self._stored(namespace, turn)
        if stored is not None:
            return stored
        _go_on(cancelled)
        # anchoring and embedding take most of the time (an LLM anchorer far more): they run
        # outside the lock, on a draft whose session is placed below
        held = self.latest(namespace, turn.conversation_id)
        speakers = dict.fromkeys([*(held.speakers if held else ()), turn.speaker])
        drafts = self.anchorer.anchor(turn.draft(tuple(speakers)))  # a long turn: pieces
        vectors = self._embed([d.content for d in drafts], cancelled)
        with self._lock:
            # other threads, and other writers, may have moved on: their turns as stored now
            held = self.latest(namespace, turn.conversation_id, fresh=True)
            ended = held is not None and (
                (namespace, turn.conversation_id, held.session_id) in self._ended
            )
            where = place(held, turn, gap=self.session_gap, new_session=new_session, ended=ended)
            units = placed(drafts, turn, where, namespace)
            # a retry of this key may have raced it here (its first try abandoned by a cancel
            # while it wrote): the first write stands
            stored = self._stored(namespace, turn)
            if stored is not None:
                return stored
            _go_on(cancelled)  # the last moment a cancel stores nothing
            try:
                # all or nothing; the fresh read above stands for the others' writes
                self.snapshots.write(namespace, units, vectors, new_ids=True, read_before=True)
            except UncertainWriteError as exc:
                raise UncertainWriteError(
                    str(exc), ids=exc.ids, idempotency_key=turn.key
                ) from exc.__cause__
            return units[0]

    def _stored(self, namespace: str, turn: LiveTurn) -> MemoryUnit | None:
        """The memory of a turn whose idempotency key was stored already, else ``None``."""
        if not turn.idempotent:
            return None
        ids = [turn_unit_id(turn, namespace), legacy_turn_id(turn)]
        stored = self.store.get(namespace, ids=ids)
        return min(stored, key=lambda unit: ids.index(unit.id)) if stored else None

    def _embed(
        self, texts: list[str], cancelled: Callable[[], bool] | None
    ) -> npt.NDArray[np.float32]:
        """``texts``' vectors; with ``cancelled``, :data:`CANCEL_PIECES` at a time, asking it
        before each pass."""
        if cancelled is None or len(texts) <= 1:
            return self.embedder.embed(texts)
        parts = []
        for start in range(0, len(texts), CANCEL_PIECES):
            _go_on(cancelled)
            parts.append(self.embedder.embed(texts[start : start + CANCEL_PIECES]))
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def latest(
        self, namespace: str, conversation_id: str, *, fresh: bool = False
    ) -> SessionState | None:
        """The conversation's latest session as stored (every reader derives it alike);
        ``fresh``: with every write so far."""
        return self.snapshots.read(
            namespace, lambda snap: snap.latest_session(conversation_id), fresh=fresh
        )

    def end(self, namespace: str, conversation_id: str) -> None:
        """Close the open live session: the next turn starts a new one."""
        with self._lock:
            live = self.latest(namespace, conversation_id)
            if live is not None:
                self._ended.add((namespace, conversation_id, live.session_id))

    def clear(self) -> None:
        self._ended.clear()


def exchange(
    user_text: str,
    reply_text: str,
    *,
    at: datetime,
    user: str,
    assistant: str,
    conversation_id: str,
) -> list[LiveTurn]:
    """A user's message and the reply as checked turns (empty sides skipped), all checked
    before any is stored: the message a statement, or a question when it ends in "?"; the
    reply a reply, without what it echoed of the memories shown."""
    for speaker, text in ((user, user_text), (assistant, reply_text)):
        check_name(speaker, "speaker")
        check_text(text, f"{speaker} text", limit=MAX_TEXT_CHARS, required=False)
    check_moment(at, "at")
    check_id(conversation_id, "conversation_id")
    reply = strip_echo(reply_text)
    asked = Kind.QUESTION if user_text.rstrip().endswith("?") else Kind.STATEMENT
    return [
        check_turn(speaker, text, at=at, conversation_id=conversation_id, kind=kind)
        for speaker, text, kind in ((user, user_text, asked), (assistant, reply, Kind.REPLY))
        if visible(text)
    ]
