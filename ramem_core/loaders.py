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
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from ramem_core.errors import ConversationFormatError
from ramem_core.temporal import parse_timestamp
from ramem_core.types import Conversation, Session, Turn

MAX_TURN_CHARS = 50_000
Format = Literal["auto", "ramem", "locomo", "longmemeval"]


def _time(
    value: Any, what: str, *, source: str | None, session: str | None, turn: str | None = None
) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    if not isinstance(value, str):
        msg = f"{what} must be a string, got {type(value).__name__}"
        raise ConversationFormatError(msg, source=source, session=session, turn=turn)
    parsed = parse_timestamp(value)
    if parsed is None:
        msg = f"unparseable {what} {value!r}"
        raise ConversationFormatError(msg, source=source, session=session, turn=turn)
    return parsed.replace(tzinfo=None)


def _str(
    obj: Mapping[str, Any],
    key: str,
    *,
    source: str | None,
    session: str | None,
    turn: str | None = None,
    required: bool = True,
) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        got = "missing" if value is None else f"{type(value).__name__} {value!r}"[:80]
        msg = f"field {key!r} must be a non-empty string, got {got}"
        raise ConversationFormatError(msg, source=source, session=session, turn=turn)
    return value


def validate(conversation: Conversation, source: str | None = None) -> Conversation:
    """Check a conversation built in Python; returns it unchanged or raises.

    Checks: ids present and unique (sessions; turns across the conversation), speakers
    present, texts are strings, no empty turn, no turn over ``MAX_TURN_CHARS`` characters.
    """
    src = source or f"conversation {conversation.id!r}"
    if not isinstance(conversation.id, str) or not conversation.id.strip():
        raise ConversationFormatError("conversation id must be a non-empty string", source=src)
    if not conversation.sessions:
        raise ConversationFormatError("conversation has no sessions", source=src)
    session_ids: set[str] = set()
    turn_ids: set[str] = set()
    for session in conversation.sessions:
        sid = session.id
        if not isinstance(sid, str) or not sid.strip():
            raise ConversationFormatError("session id must be a non-empty string", source=src)
        if sid in session_ids:
            raise ConversationFormatError("duplicate session id", source=src, session=sid)
        session_ids.add(sid)
        for turn in session.turns:
            tid = turn.id
            if not isinstance(tid, str) or not tid.strip():
                msg = "turn id must be a non-empty string"
                raise ConversationFormatError(msg, source=src, session=sid)
            if tid in turn_ids:
                raise ConversationFormatError(
                    "duplicate turn id", source=src, session=sid, turn=tid
                )
            turn_ids.add(tid)
            if not isinstance(turn.speaker, str) or not turn.speaker.strip():
                raise ConversationFormatError(
                    "turn has no speaker", source=src, session=sid, turn=tid
                )
            if not isinstance(turn.text, str):
                msg = f"turn text must be a string, got {type(turn.text).__name__}"
                raise ConversationFormatError(msg, source=src, session=sid, turn=tid)
            if not turn.text.strip() and not turn.image_caption:
                raise ConversationFormatError("empty turn", source=src, session=sid, turn=tid)
            if len(turn.text) > MAX_TURN_CHARS:
                msg = f"turn text has {len(turn.text)} characters (limit {MAX_TURN_CHARS})"
                raise ConversationFormatError(msg, source=src, session=sid, turn=tid)
    return conversation


def conversation_from_dict(data: Any, source: str | None = None) -> Conversation:
    """Parse one conversation in RaMem's JSON format (see the module docstring)."""
    if not isinstance(data, Mapping):
        msg = f"a conversation must be a JSON object, got {type(data).__name__}"
        raise ConversationFormatError(msg, source=source)
    cid = _str(data, "id", source=source, session=None)
    raw_sessions = data.get("sessions")
    if not isinstance(raw_sessions, list):
        raise ConversationFormatError("field 'sessions' must be a list", source=source)
    participants = data.get("participants", [])
    if not isinstance(participants, list) or not all(isinstance(p, str) for p in participants):
        raise ConversationFormatError("'participants' must be a list of names", source=source)
    sessions = []
    for index, raw in enumerate(raw_sessions):
        if not isinstance(raw, Mapping):
            msg = f"session #{index} must be an object"
            raise ConversationFormatError(msg, source=source)
        sid = _str(raw, "id", source=source, session=f"#{index}")
        turns_raw = raw.get("turns")
        if not isinstance(turns_raw, list):
            raise ConversationFormatError("'turns' must be a list", source=source, session=sid)
        turns = []
        for position, t in enumerate(turns_raw):
            if not isinstance(t, Mapping):
                msg = "a turn must be an object"
                raise ConversationFormatError(msg, source=source, session=sid, turn=f"#{position}")
            tid = _str(t, "id", source=source, session=sid, turn=f"#{position}")
            caption = t.get("image_caption")
            if caption is not None and not isinstance(caption, str):
                msg = "'image_caption' must be a string"
                raise ConversationFormatError(msg, source=source, session=sid, turn=tid)
            turns.append(
                Turn(
                    id=tid,
                    speaker=_str(t, "speaker", source=source, session=sid, turn=tid),
                    text=_str(t, "text", source=source, session=sid, turn=tid, required=False),
                    time=_time(t.get("time"), "turn time", source=source, session=sid, turn=tid),
                    image_caption=caption,
                )
            )
        sessions.append(
            Session(
                sid,
                tuple(turns),
                _time(raw.get("time"), "session time", source=source, session=sid),
            )
        )
    return validate(Conversation(cid, tuple(sessions), tuple(participants)), source)


def locomo_conversation(sample: Mapping[str, Any], source: str | None = None) -> Conversation:
    """One LoCoMo sample as a conversation (sessions in order; image captions kept)."""
    if not isinstance(sample, Mapping) or not isinstance(sample.get("conversation"), Mapping):
        raise ConversationFormatError("not a LoCoMo sample (no 'conversation')", source=source)
    cid = str(sample.get("sample_id") or "locomo")
    conv = sample["conversation"]
    numbers = sorted(
        int(m.group(1))
        for key in conv
        if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(conv[key], list)
    )
    sessions = []
    for n in numbers:
        sid = f"D{n}"
        time = _time(conv.get(f"session_{n}_date_time"), "session time", source=source, session=sid)
        turns = tuple(
            Turn(
                id=str(t.get("dia_id") or f"{sid}:{i + 1}"),
                speaker=str(t.get("speaker") or ""),
                text=str(t.get("text") or ""),
                image_caption=t.get("blip_caption") or None,
            )
            for i, t in enumerate(conv[f"session_{n}"])
        )
        sessions.append(Session(sid, turns, time))
    participants = tuple(str(conv[k]) for k in ("speaker_a", "speaker_b") if conv.get(k))
    return validate(Conversation(cid, tuple(sessions), participants), source)


def longmemeval_conversation(item: Mapping[str, Any], source: str | None = None) -> Conversation:
    """The haystack of one LongMemEval question as a conversation.

    Sessions are sorted by full timestamp (the file is not). Turn ids are
    ``"<session_id>:<index>"``; empty turns are skipped (the cleaned files hold a few), and
    a repeated session id gets a ``~2`` suffix so ids stay unique.
    """
    qid = str(item.get("question_id") or "longmemeval")
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
    sessions = []
    for raw_id, date, turns_raw in triples:
        seen[raw_id] = seen.get(raw_id, 0) + 1
        sid = raw_id if seen[raw_id] == 1 else f"{raw_id}~{seen[raw_id]}"
        time = _time(date, "session date", source=source, session=sid)
        turns = tuple(
            Turn(id=f"{sid}:{j}", speaker=str(t.get("role") or "user"), text=t["content"])
            for j, t in enumerate(turns_raw)
            if isinstance(t.get("content"), str) and t["content"].strip()
        )
        if turns:
            sessions.append(Session(sid, turns, time))
    sessions.sort(key=lambda s: s.time or datetime.min)
    return validate(Conversation(qid, tuple(sessions), ("user", "assistant")), source)


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
    """The parsed JSON of a file.

    Raises:
        ConversationFormatError: the file is unreadable or not JSON (the message names it).
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        msg = f"cannot read file: {reason}"
        raise ConversationFormatError(msg, source=source) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise ConversationFormatError(msg, source=source) from exc


def load_conversations(path: str | Path, format: Format = "auto") -> list[Conversation]:  # noqa: A002
    """Read every conversation in a JSON file.

    Args:
        path: a JSON file in RaMem's format, LoCoMo's or LongMemEval's.
        format: the file's format; ``"auto"`` detects it.

    Raises:
        ConversationFormatError: the file is unreadable, not JSON, or malformed; the message
            names the file, session and turn.
    """
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
