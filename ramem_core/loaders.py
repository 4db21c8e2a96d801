"""Conversations in: RaMem's own JSON format, LoCoMo and LongMemEval, all validated.

RaMem's JSON format (one object, or a list of them)::

    {
      "id": "trip-planning",
      "participants": ["Alice", "Ben"],           # optional
      "sessions": [
        {
          "id": "s1",
          "time": "2023-03-02T18:30:00",          # session time; optional, never invented
          "turns": [
            {"id": "s1:1", "speaker": "Alice", "text": "...",
             "time": "2023-03-02T18:31:00",       # optional per-turn time
             "image_caption": "a photo of ..."}   # optional
          ]
        }
      ]
    }

Every problem raises :class:`ConversationFormatError` naming the file, session and turn.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from ramem_core.errors import ConversationFormatError, InvalidInputError
from ramem_core.temporal import parse_timestamp
from ramem_core.types import Conversation, Session, Turn
from ramem_core.validation import (
    MAX_CAPTION_CHARS,
    MAX_TEXT_CHARS,
    check_id,
    check_moment,
    check_name,
    check_text,
    visible,
)

Format = Literal["auto", "ramem", "locomo", "longmemeval"]


def _time(
    value: Any, what: str, *, source: str | None, session: str | None, turn: str | None = None
) -> datetime | None:
    """A file's time value as a naive UTC datetime (checked for range by :func:`validate`)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        msg = f"{what} must be a string, got {type(value).__name__}"
        raise ConversationFormatError(msg, source=source, session=session, turn=turn)
    parsed = parse_timestamp(value)
    if parsed is None:
        msg = (
            f"unparseable {what} {value[:80]!r}: give an absolute time such as "
            "2023-05-08T13:56:00 or '1:56 pm on 8 May, 2023'"
        )
        raise ConversationFormatError(msg, source=source, session=session, turn=turn)
    return parsed


def validate(conversation: Conversation, source: str | None = None) -> Conversation:
    """Check a conversation built in Python; returns it with its times in UTC, or raises.

    Checks, against the limits of :mod:`ramem_core.validation`: ids present, one-line and unique
    (sessions; turns across the conversation), speakers and participants present and one-line,
    texts and captions within their limits with no control character, no empty turn, times
    within range (aware ones are converted to UTC).
    """
    src = source or f"conversation {str(conversation.id)[:80]!r}"
    if not isinstance(conversation, Conversation):
        msg = f"expected a Conversation, got {type(conversation).__name__}"
        raise ConversationFormatError(msg, source=src)
    where: dict[str, str | None] = {"source": src, "session": None, "turn": None}
    try:
        check_id(conversation.id, "conversation id")
        if not isinstance(conversation.participants, tuple | list):
            raise InvalidInputError("participants must be a list of names")
        for name in conversation.participants:
            check_name(name, "participant")
        if not isinstance(conversation.sessions, tuple | list) or not conversation.sessions:
            raise InvalidInputError("conversation has no sessions")
        session_ids: set[str] = set()
        turn_ids: set[str] = set()
        sessions = []
        for index, session in enumerate(conversation.sessions):
            where.update(session=f"#{index}", turn=None)
            _unique_id(session, Session, session_ids, where, "session")
            if not isinstance(session.turns, tuple | list):
                raise InvalidInputError("turns must be a list")
            turns = []
            for position, turn in enumerate(session.turns):
                where["turn"] = f"#{position}"
                turns.append(_checked_turn(turn, turn_ids, where))
            time = None if session.time is None else check_moment(session.time, "session time")
            sessions.append(replace(session, turns=tuple(turns), time=time))
    except InvalidInputError as exc:
        raise ConversationFormatError(str(exc), **where) from None
    return replace(
        conversation, sessions=tuple(sessions), participants=tuple(conversation.participants)
    )


def _unique_id(
    item: object, kind: type[Session | Turn], seen: set[str], where: dict[str, str | None], key: str
) -> str:
    """The id of ``item`` (a ``kind``), checked and unique in ``seen``; ``where`` names it."""
    if not isinstance(item, kind):
        raise InvalidInputError(f"expected a {kind.__name__}, got {type(item).__name__}")
    ident = check_id(item.id, f"{key} id")
    where[key] = ident
    if ident in seen:
        raise InvalidInputError(f"duplicate {key} id")
    seen.add(ident)
    return ident


def _checked_turn(turn: object, seen: set[str], where: dict[str, str | None]) -> Turn:
    _unique_id(turn, Turn, seen, where, "turn")
    assert isinstance(turn, Turn)
    check_name(turn.speaker, "speaker")
    caption = turn.image_caption
    if caption is not None:
        caption = check_text(caption, "image caption", limit=MAX_CAPTION_CHARS, required=False)
    has_caption = caption is not None and visible(caption)
    text = check_text(turn.text, "turn text", limit=MAX_TEXT_CHARS, required=not has_caption)
    time = None if turn.time is None else check_moment(turn.time, "turn time")
    return replace(turn, text=text, time=time, image_caption=caption if has_caption else None)


def _field(obj: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """A raw field; :func:`validate` checks its type and value with the rest."""
    return obj.get(key, default)


def _turns(value: Any, *, source: str | None, session: str) -> list[Mapping[str, Any]]:
    """The turns of a session: a list of JSON objects, else a format error."""
    if not isinstance(value, list):
        msg = f"the turns must be a list, got {type(value).__name__}"
        raise ConversationFormatError(msg, source=source, session=session)
    for position, turn in enumerate(value):
        if not isinstance(turn, Mapping):
            msg = f"a turn must be an object, got {type(turn).__name__}"
            raise ConversationFormatError(msg, source=source, session=session, turn=f"#{position}")
    return value


def conversation_from_dict(data: Any, source: str | None = None) -> Conversation:
    """Parse one conversation in RaMem's JSON format (see the module docstring)."""
    if not isinstance(data, Mapping):
        msg = f"a conversation must be a JSON object, got {type(data).__name__}"
        raise ConversationFormatError(msg, source=source)
    raw_sessions = data.get("sessions")
    if not isinstance(raw_sessions, list):
        raise ConversationFormatError("field 'sessions' must be a list", source=source)
    participants = data.get("participants", [])
    if not isinstance(participants, list):
        raise ConversationFormatError("'participants' must be a list of names", source=source)
    sessions = []
    for index, raw in enumerate(raw_sessions):
        if not isinstance(raw, Mapping):
            msg = f"session #{index} must be an object, got {type(raw).__name__}"
            raise ConversationFormatError(msg, source=source)
        sid = _field(raw, "id")
        where = str(sid)[:80]
        turns = [
            Turn(
                id=_field(t, "id"),
                speaker=_field(t, "speaker"),
                text=t.get("text", ""),
                time=_time(t.get("time"), "turn time", source=source, session=where),
                image_caption=t.get("image_caption"),
            )
            for t in _turns(raw.get("turns"), source=source, session=where)
        ]
        time = _time(raw.get("time"), "session time", source=source, session=where)
        sessions.append(Session(sid, tuple(turns), time))
    return validate(Conversation(_field(data, "id"), tuple(sessions), tuple(participants)), source)


def locomo_conversation(sample: Any, source: str | None = None) -> Conversation:
    """One LoCoMo sample as a conversation (sessions in order; image captions kept)."""
    if not isinstance(sample, Mapping) or not isinstance(sample.get("conversation"), Mapping):
        raise ConversationFormatError("not a LoCoMo sample (no 'conversation')", source=source)
    cid = sample.get("sample_id") or "locomo"
    conv = sample["conversation"]
    numbers = sorted(
        int(m.group(1)) for key in conv if (m := re.fullmatch(r"session_(\d{1,4})", str(key)))
    )
    sessions = []
    for n in numbers:
        sid = f"D{n}"
        time = _time(conv.get(f"session_{n}_date_time"), "session time", source=source, session=sid)
        turns = tuple(
            Turn(
                id=t.get("dia_id") or f"{sid}:{i + 1}",
                speaker=_field(t, "speaker"),
                text=t.get("text", ""),
                image_caption=t.get("blip_caption"),
            )
            for i, t in enumerate(_turns(conv[f"session_{n}"], source=source, session=sid))
        )
        if not turns:
            raise ConversationFormatError("a session has no turns", source=source, session=sid)
        sessions.append(Session(sid, turns, time))
    participants = tuple(conv[k] for k in ("speaker_a", "speaker_b") if conv.get(k))
    return validate(Conversation(cid, tuple(sessions), participants), source)


def longmemeval_sessions(
    item: Any, source: str | None
) -> list[tuple[str, Any, list[tuple[int, Mapping[str, Any]]]]]:
    """The haystack's sessions in file order as (unique session id, date, kept turns with
    their index): a repeated session id gets a ``~2`` suffix, and turns with no visible
    character are left out (their indices are kept). The one place LongMemEval turn ids are
    made, for the conversation and for its evidence turns alike."""
    if not isinstance(item, Mapping):
        msg = f"a LongMemEval item must be an object, got {type(item).__name__}"
        raise ConversationFormatError(msg, source=source)
    try:
        triples = list(
            zip(
                item["haystack_session_ids"],
                item["haystack_dates"],
                item["haystack_sessions"],
                strict=True,
            )
        )
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"not a LongMemEval item: {exc}"
        raise ConversationFormatError(msg, source=source) from exc
    seen: dict[str, int] = {}
    out = []
    for raw_id, date, turns_raw in triples:
        if not isinstance(raw_id, str):
            msg = f"a haystack session id must be a string, got {type(raw_id).__name__}"
            raise ConversationFormatError(msg, source=source)
        seen[raw_id] = seen.get(raw_id, 0) + 1
        sid = raw_id if seen[raw_id] == 1 else f"{raw_id}~{seen[raw_id]}"
        kept = [
            (j, t)
            for j, t in enumerate(_turns(turns_raw, source=source, session=sid))
            if not (isinstance(t.get("content"), str) and not visible(t["content"]))
        ]
        out.append((sid, date, kept))
    return out


def longmemeval_conversation(item: Any, source: str | None = None) -> Conversation:
    """The haystack of one LongMemEval question as a conversation.

    Sessions are sorted by full timestamp (the file is not). Turn ids are
    ``"<session_id>:<index>"``; turns with no visible character are skipped (the cleaned files
    hold a few), and a repeated session id gets a ``~2`` suffix so ids stay unique.
    """
    qid = (item.get("question_id") if isinstance(item, Mapping) else None) or "longmemeval"
    sessions = []
    for sid, date, kept in longmemeval_sessions(item, source):
        time = _time(date, "session date", source=source, session=sid)
        turns = tuple(
            Turn(id=f"{sid}:{j}", speaker=_field(t, "role", "user"), text=_field(t, "content"))
            for j, t in kept
        )
        if turns:
            sessions.append(Session(sid, turns, time))
    sessions.sort(key=lambda s: s.time or datetime.min)
    return validate(Conversation(qid, tuple(sessions), ("user", "assistant")), source)


def longmemeval_evidence(item: Any, source: str | None = None) -> list[str]:
    """The evidence turns of one LongMemEval question: the ids (as
    :func:`longmemeval_conversation` gives them) of the user turns marked ``has_answer``, once
    each, in file order. The one gold-turn rule of the harness, the agent-path benchmark and
    the fusion fit; assistant turns are never evidence here (RaMem stores the user's side)."""
    return list(
        dict.fromkeys(
            f"{sid}:{j}"
            for sid, _, kept in longmemeval_sessions(item, source)
            for j, t in kept
            if t.get("has_answer") and t.get("role") == "user"
        )
    )


def detect_format(data: Any) -> Format:
    """Guess the format of parsed JSON ``data``."""
    first = data[0] if isinstance(data, list) and data else data
    if isinstance(first, Mapping):
        if "conversation" in first and "qa" in first:
            return "locomo"
        if "haystack_sessions" in first:
            return "longmemeval"
        if "sessions" in first:
            return "ramem"
    return "auto"


def read_json(path: str | Path) -> Any:
    """The parsed JSON of a UTF-8 file (a byte-order mark is allowed).

    Raises:
        ConversationFormatError: the file is unreadable, not UTF-8, not JSON or nested deeper
            than Python's JSON parser goes (the message names the file).
    """
    if not isinstance(path, str | os.PathLike):
        msg = f"a file path must be a string or a path, got {type(path).__name__}"
        raise ConversationFormatError(msg)
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        msg = (
            f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}): "
            "save the file as UTF-8"
        )
        raise ConversationFormatError(msg, source=source) from exc
    except OSError as exc:
        msg = f"cannot read file: {exc.strerror or exc}"
        raise ConversationFormatError(msg, source=source) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise ConversationFormatError(msg, source=source) from exc
    except RecursionError as exc:
        msg = "JSON nested too deeply to read (conversation files nest 5 levels)"
        raise ConversationFormatError(msg, source=source) from exc


def conversations_of(conversations: object) -> list[Conversation]:
    """``conversations`` (a list of :class:`Conversation` or dicts in RaMem's JSON format),
    each checked; a lone conversation is refused with a hint."""
    if isinstance(conversations, str | bytes | Mapping | Conversation) or not isinstance(
        conversations, Sequence
    ):
        msg = (
            "conversations must be a list of Conversation objects or dicts, got "
            f"{type(conversations).__name__} (use add_conversation for one)"
        )
        raise InvalidInputError(msg)
    return [
        validate(c) if isinstance(c, Conversation) else conversation_from_dict(c)
        for c in conversations
    ]


def load_conversations(path: str | Path, format: Format = "auto") -> list[Conversation]:  # noqa: A002
    """Read every conversation in a JSON file.

    Args:
        path: a JSON file in RaMem's format, LoCoMo's or LongMemEval's.
        format: the file's format; ``"auto"`` detects it.

    Raises:
        ConversationFormatError: the file is unreadable, not JSON, or malformed; the message
            names the file, session and turn.
    """
    if format not in {"auto", "ramem", "locomo", "longmemeval"}:
        msg = f"unknown format {format!r}: use auto, ramem, locomo or longmemeval"
        raise ConversationFormatError(msg, source=str(path))
    source = str(path)
    data = read_json(path)
    kind = detect_format(data) if format == "auto" else format
    items: Iterable[Any] = data if isinstance(data, list) else [data]
    if kind == "locomo":
        return [locomo_conversation(x, source) for x in items]
    if kind == "longmemeval":
        return [longmemeval_conversation(x, source) for x in items]
    if kind == "ramem":
        return [conversation_from_dict(x, source) for x in items]
    raise ConversationFormatError("unknown conversation format; pass --format", source=source)


def demo_conversation() -> tuple[Conversation, list[dict[str, str]]]:
    """The conversation shipped for demos and examples, and its questions.

    Two friends over six sessions (February-November 2023) with confusable episodes: two
    trips and two doctor's appointments months apart. Each question names the session that
    holds its answer (``expected_session``).
    """
    from importlib import resources

    text = (resources.files("ramem_core") / "_data" / "demo_conversation.json").read_text("utf-8")
    data = json.loads(text)
    return conversation_from_dict(data, "demo_conversation.json"), list(data["questions"])
