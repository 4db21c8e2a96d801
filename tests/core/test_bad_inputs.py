"""The project's corpus of bad inputs: every entry point, one table.

Each case calls one public entry point with one malformed or odd input and names the error it
must get (a :class:`RaMemError` subclass) and words its message must hold. After every case the
memory must be exactly as before: nothing half-written, no namespace created by a read.
"""

# mypy: disable-error-code="arg-type,list-item,call-arg"
# (the point of this file is to pass the wrong types)
from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from ramem_core import (
    ChromaStore,
    Conversation,
    ConversationFormatError,
    EpisodicContext,
    InvalidInputError,
    MemoryUnit,
    ModelReplyError,
    RaMem,
    RaMemError,
    Session,
    StoreError,
    Turn,
)
from ramem_core.cli import main
from ramem_core.testing import FakeLLM, HashEmbedder, WordCounter
from tests.conftest import FIXTURES, two_trips

Json = dict[str, Any]


@dataclass(frozen=True)
class Ctx:
    """What a case may use: the loaded memory and a folder for its files."""

    memory: RaMem
    folder: Path


class SilentModel:
    """A model whose ``complete`` returns ``None`` (a broken wrapper)."""

    def complete(self, prompt: str) -> str:
        return None  # type: ignore[return-value]


@dataclass(frozen=True)
class Bad:
    """One bad input: its name, the call, the error it must raise and words of the message."""

    name: str
    call: Callable[[Ctx], object]
    error: type[RaMemError]
    message: str


# ------------------------------------------------------------------ builders


def ramem_doc() -> Json:
    """A valid conversation in RaMem's JSON format (the cases break one thing each)."""
    return {
        "id": "doc",
        "participants": ["Ann", "Bo"],
        "sessions": [
            {
                "id": "s1",
                "time": "2023-05-08T13:56:00",
                "turns": [
                    {"id": "s1:1", "speaker": "Ann", "text": "I adopted a cat yesterday."},
                    {"id": "s1:2", "speaker": "Bo", "text": "Lovely!", "image_caption": "a cat"},
                ],
            }
        ],
    }


def locomo_doc() -> list[Json]:
    return json.loads((FIXTURES / "locomo_mini.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def lme_doc() -> list[Json]:
    return json.loads((FIXTURES / "longmemeval_mini.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def write(ctx: Ctx, data: object, name: str = "in.json") -> Path:
    path = ctx.folder / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def raw(ctx: Ctx, content: bytes, name: str = "raw.json") -> Path:
    path = ctx.folder / name
    path.write_bytes(content)
    return path


def ramem_file(change: Callable[[Json], object]) -> Callable[[Ctx], object]:
    """A case that ingests the RaMem document after ``change`` broke it."""

    def call(ctx: Ctx) -> object:
        doc = ramem_doc()
        change(doc)
        return ctx.memory.add_file(write(ctx, doc))

    return call


def ramem_dict(change: Callable[[Json], object]) -> Callable[[Ctx], object]:
    """A case that adds the broken RaMem document as a Python dict."""

    def call(ctx: Ctx) -> object:
        doc = ramem_doc()
        change(doc)
        return ctx.memory.add_conversation(doc)

    return call


def locomo_file(change: Callable[[Json], object]) -> Callable[[Ctx], object]:
    def call(ctx: Ctx) -> object:
        doc = locomo_doc()
        change(doc[0])
        return ctx.memory.add_file(write(ctx, doc), format="locomo")

    return call


def lme_file(change: Callable[[Json], object]) -> Callable[[Ctx], object]:
    def call(ctx: Ctx) -> object:
        doc = lme_doc()
        change(doc[0])
        return ctx.memory.add_file(write(ctx, doc), format="longmemeval")

    return call


def turn0(doc: Json) -> Json:
    return doc["sessions"][0]["turns"][0]  # type: ignore[no-any-return]


def loc_turn(doc: Json) -> Json:
    return doc["conversation"]["session_1"][0]  # type: ignore[no-any-return]


def lme_turn(doc: Json) -> Json:
    return doc["haystack_sessions"][0][0]  # type: ignore[no-any-return]


def sets(target: Callable[[Json], Json], key: str, value: object) -> Callable[[Json], object]:
    return lambda doc: target(doc).__setitem__(key, value)


def drops(target: Callable[[Json], Json], key: str) -> Callable[[Json], object]:
    return lambda doc: target(doc).pop(key)


def top(doc: Json) -> Json:
    return doc


def session0(doc: Json) -> Json:
    return doc["sessions"][0]  # type: ignore[no-any-return]


def loc_conv(doc: Json) -> Json:
    return doc["conversation"]  # type: ignore[no-any-return]


def conversation(**turn: Any) -> Conversation:
    """A one-turn conversation object whose turn takes ``turn``'s fields."""
    fields: dict[str, Any] = {"id": "t1", "speaker": "Ann", "text": "hello"} | turn
    return Conversation("obj", (Session("s1", (Turn(**fields),), datetime(2023, 5, 1)),))


def unit(**change: Any) -> MemoryUnit:
    context = EpisodicContext(session_id="s1", conversation_id="c1")
    fields: dict[str, Any] = {"id": "u1", "content": "Ann likes tea.", "context": context}
    return MemoryUnit(**(fields | change))


AT = datetime(2023, 9, 1, 12, 0)
F = ConversationFormatError
I = InvalidInputError  # noqa: E741

# ------------------------------------------------------------------ the corpus

FILES = [
    Bad("not JSON", lambda c: c.memory.add_file(raw(c, b"{not json")), F, "malformed JSON"),
    Bad("truncated JSON", lambda c: c.memory.add_file(raw(c, b'{"id": "x", ')), F, "malformed"),
    Bad("empty file", lambda c: c.memory.add_file(raw(c, b"")), F, "malformed JSON"),
    Bad(
        "Latin-1 file",
        lambda c: c.memory.add_file(
            raw(c, json.dumps(ramem_doc()).replace("cat", "caf\xe9").encode("latin-1"))
        ),
        F,
        "not UTF-8",
    ),
    Bad(
        "UTF-16 file",
        lambda c: c.memory.add_file(raw(c, json.dumps(ramem_doc()).encode("utf-16"))),
        F,
        "not UTF-8",
    ),
    Bad(
        "nested 100k deep",
        lambda c: c.memory.add_file(raw(c, b"[" * 100_000 + b"]" * 100_000)),
        F,
        "nested too deeply",
    ),
    Bad(
        "top-level number",
        lambda c: c.memory.add_file(raw(c, b"5")),
        F,
        "unknown conversation format",
    ),
    Bad(
        "top-level string",
        lambda c: c.memory.add_file(raw(c, b'"hi"')),
        F,
        "unknown conversation format",
    ),
    Bad("empty list", lambda c: c.memory.add_file(raw(c, b"[]")), F, "unknown conversation format"),
    Bad(
        "unknown format name",
        lambda c: c.memory.add_file(write(c, ramem_doc()), format="xml"),
        F,
        "unknown format 'xml'",
    ),  # type: ignore[arg-type]
    Bad(
        "RaMem file read as LoCoMo",
        lambda c: c.memory.add_file(write(c, ramem_doc()), format="locomo"),
        F,
        "not a LoCoMo sample",
    ),
    Bad(
        "RaMem file read as LongMemEval",
        lambda c: c.memory.add_file(write(c, ramem_doc()), format="longmemeval"),
        F,
        "not a LongMemEval item",
    ),
    Bad("path None", lambda c: c.memory.add_file(None), F, "path must be a string"),  # type: ignore[arg-type]
    Bad("path int", lambda c: c.memory.add_file(5), F, "path must be a string"),  # type: ignore[arg-type]
    Bad("path is a folder", lambda c: c.memory.add_file(c.folder), F, "cannot read file"),
    Bad("path missing", lambda c: c.memory.add_file(c.folder / "nope.json"), F, "No such file"),
    Bad("id missing", ramem_file(drops(top, "id")), F, "conversation id must be a string"),
    Bad("id int", ramem_file(sets(top, "id", 7)), F, "conversation id must be a string"),
    Bad("id empty", ramem_file(sets(top, "id", "  ")), F, "conversation id is empty"),
    Bad("id with separator", ramem_file(sets(top, "id", "a\x1fb")), F, "U+001F"),
    Bad("id with newline", ramem_file(sets(top, "id", "a\nb")), F, "U+000A"),
    Bad("id 300 characters", ramem_file(sets(top, "id", "x" * 300)), F, "limit 200"),
    Bad("sessions missing", ramem_file(drops(top, "sessions")), F, "unknown conversation format"),
    Bad(
        "sessions object",
        ramem_file(sets(top, "sessions", {"a": 1})),
        F,
        "'sessions' must be a list",
    ),
    Bad("sessions empty", ramem_file(sets(top, "sessions", [])), F, "no sessions"),
    Bad(
        "session a string",
        ramem_file(sets(top, "sessions", ["s1"])),
        F,
        "session #0 must be an object",
    ),
    Bad("session id missing", ramem_file(drops(session0, "id")), F, "session id must be a string"),
    Bad("session id bidi", ramem_file(sets(session0, "id", "s\u202e1")), F, "U+202E"),
    Bad(
        "session id repeated",
        ramem_file(lambda d: d["sessions"].append(copy.deepcopy(d["sessions"][0]))),
        F,
        "duplicate session id",
    ),
    Bad("turns missing", ramem_file(drops(session0, "turns")), F, "turns must be a list"),
    Bad("turns a string", ramem_file(sets(session0, "turns", "hello")), F, "turns must be a list"),
    Bad(
        "turn a list",
        ramem_file(lambda d: session0(d)["turns"].append(["x"])),
        F,
        "a turn must be an object",
    ),
    Bad("turn id missing", ramem_file(drops(turn0, "id")), F, "turn id must be a string"),
    Bad("turn id repeated", ramem_file(sets(turn0, "id", "s1:2")), F, "duplicate turn id"),
    Bad("turn id with NUL", ramem_file(sets(turn0, "id", "s1\x00")), F, "U+0000"),
    Bad("speaker missing", ramem_file(drops(turn0, "speaker")), F, "speaker must be a string"),
    Bad("speaker empty", ramem_file(sets(turn0, "speaker", "")), F, "speaker is empty"),
    Bad("speaker int", ramem_file(sets(turn0, "speaker", 3)), F, "speaker must be a string"),
    Bad("speaker with newline", ramem_file(sets(turn0, "speaker", "Ann\nSYSTEM")), F, "U+000A"),
    Bad("speaker 1 MB", ramem_file(sets(turn0, "speaker", "A" * 1_000_000)), F, "limit 100"),
    Bad(
        "speaker zero-width only",
        ramem_file(sets(turn0, "speaker", "\u200b")),
        F,
        "speaker is empty",
    ),
    Bad("text int", ramem_file(sets(turn0, "text", 42)), F, "turn text must be a string"),
    Bad("text list", ramem_file(sets(turn0, "text", ["a"])), F, "turn text must be a string"),
    Bad("text null", ramem_file(sets(turn0, "text", None)), F, "turn text must be a string"),
    Bad("text empty", ramem_file(sets(turn0, "text", "")), F, "turn text is empty"),
    Bad("text only NULs", ramem_file(sets(turn0, "text", "\x00\x00")), F, "turn text is empty"),
    Bad(
        "text only zero-width",
        ramem_file(sets(turn0, "text", "\u200b\u200c\ufeff")),
        F,
        "turn text is empty",
    ),
    Bad(
        "text only bidi marks",
        ramem_file(sets(turn0, "text", "\u202e\u2066")),
        F,
        "turn text is empty",
    ),
    Bad("text lone surrogate", ramem_file(sets(turn0, "text", "hi \ud800")), F, "lone surrogate"),
    Bad(
        "text over the limit",
        ramem_file(sets(turn0, "text", "x" * 1_000_001)),
        F,
        "limit 1,000,000",
    ),
    Bad(
        "caption int",
        ramem_file(sets(turn0, "image_caption", 5)),
        F,
        "image caption must be a string",
    ),
    Bad(
        "caption list",
        ramem_file(sets(turn0, "image_caption", ["a"])),
        F,
        "image caption must be a string",
    ),
    Bad("caption 10 kB", ramem_file(sets(turn0, "image_caption", "x" * 10_000)), F, "limit 2,000"),
    Bad(
        "caption lone surrogate",
        ramem_file(sets(turn0, "image_caption", "\udfff")),
        F,
        "lone surrogate",
    ),
    Bad(
        "session time yesterday",
        ramem_file(sets(session0, "time", "yesterday")),
        F,
        "absolute time",
    ),
    Bad(
        "session time 2 days ago",
        ramem_file(sets(session0, "time", "2 days ago")),
        F,
        "absolute time",
    ),
    Bad(
        "session time nonsense",
        ramem_file(sets(session0, "time", "the 45th of Smarch")),
        F,
        "unparseable session time",
    ),
    Bad(
        "session time int",
        ramem_file(sets(session0, "time", 1683554160)),
        F,
        "session time must be a string",
    ),
    Bad(
        "session time year 9999",
        ramem_file(sets(session0, "time", "9999-12-31")),
        F,
        "outside 1900-2200",
    ),
    Bad(
        "session time year 1066",
        ramem_file(sets(session0, "time", "1066-10-14")),
        F,
        "outside 1900-2200",
    ),
    Bad(
        "turn time nonsense", ramem_file(sets(turn0, "time", "soonish")), F, "unparseable turn time"
    ),
    Bad("turn time bool", ramem_file(sets(turn0, "time", True)), F, "turn time must be a string"),
    Bad(
        "participants a string",
        ramem_file(sets(top, "participants", "Ann")),
        F,
        "'participants' must be a list",
    ),
    Bad(
        "participant int",
        ramem_file(sets(top, "participants", [1])),
        F,
        "participant must be a string",
    ),
    Bad(
        "participant with newline", ramem_file(sets(top, "participants", ["Ann\nBo"])), F, "U+000A"
    ),
]

LOCOMO = [
    Bad("a session with no turns", locomo_file(sets(loc_conv, "session_1", [])), F, "no turns"),
    Bad("no conversation", locomo_file(drops(top, "conversation")), F, "not a LoCoMo sample"),
    Bad(
        "conversation a list", locomo_file(sets(top, "conversation", [])), F, "not a LoCoMo sample"
    ),
    Bad(
        "session a string",
        locomo_file(sets(loc_conv, "session_1", "hi")),
        F,
        "turns must be a list",
    ),
    Bad(
        "turn a string",
        locomo_file(lambda d: loc_conv(d)["session_1"].append("hi")),
        F,
        "a turn must be an object",
    ),
    Bad("speaker missing", locomo_file(drops(loc_turn, "speaker")), F, "speaker must be a string"),
    Bad("speaker int", locomo_file(sets(loc_turn, "speaker", 5)), F, "speaker must be a string"),
    Bad("text int", locomo_file(sets(loc_turn, "text", 5)), F, "turn text must be a string"),
    Bad("text only NUL", locomo_file(sets(loc_turn, "text", "\x00")), F, "turn text is empty"),
    Bad(
        "blip_caption 5",
        locomo_file(sets(loc_turn, "blip_caption", 5)),
        F,
        "image caption must be a string",
    ),
    Bad(
        "blip_caption list",
        locomo_file(sets(loc_turn, "blip_caption", ["a"])),
        F,
        "image caption must be a string",
    ),
    Bad(
        "blip_caption 10 MB",
        locomo_file(sets(loc_turn, "blip_caption", "x" * 10_000_000)),
        F,
        "limit 2,000",
    ),
    Bad("dia_id int", locomo_file(sets(loc_turn, "dia_id", 7)), F, "turn id must be a string"),
    Bad(
        "dia_id repeated",
        locomo_file(lambda d: loc_conv(d)["session_1"][1].update(dia_id="D1:1")),
        F,
        "duplicate turn id",
    ),
    Bad(
        "date nonsense",
        locomo_file(sets(loc_conv, "session_1_date_time", "teatime")),
        F,
        "unparseable session time",
    ),
    Bad(
        "date relative",
        locomo_file(sets(loc_conv, "session_1_date_time", "yesterday")),
        F,
        "absolute time",
    ),
    Bad(
        "date int",
        locomo_file(sets(loc_conv, "session_1_date_time", 2023)),
        F,
        "session time must be a string",
    ),
    Bad(
        "sample_id int",
        locomo_file(sets(top, "sample_id", 26)),
        F,
        "conversation id must be a string",
    ),
    Bad(
        "speaker_a int",
        locomo_file(sets(loc_conv, "speaker_a", 1)),
        F,
        "participant must be a string",
    ),
    Bad(
        "speaker_a newline", locomo_file(sets(loc_conv, "speaker_a", "Caroline\nBen")), F, "U+000A"
    ),
    Bad(
        "no sessions",
        locomo_file(lambda d: d.update(conversation={"speaker_a": "A"})),
        F,
        "no sessions",
    ),
]

LONGMEMEVAL = [
    Bad(
        "item a list",
        lambda c: c.memory.add_file(write(c, [[1]]), format="longmemeval"),
        F,
        "must be an object",
    ),
    Bad("haystack missing", lme_file(drops(top, "haystack_sessions")), F, "not a LongMemEval item"),
    Bad(
        "haystack lengths differ",
        lme_file(lambda d: d["haystack_dates"].pop()),
        F,
        "not a LongMemEval item",
    ),
    Bad(
        "haystack not a list",
        lme_file(sets(top, "haystack_sessions", 5)),
        F,
        "not a LongMemEval item",
    ),
    Bad(
        "session id int",
        lme_file(lambda d: d["haystack_session_ids"].__setitem__(0, 9)),
        F,
        "session id must be a string",
    ),
    Bad(
        "session a string",
        lme_file(lambda d: d["haystack_sessions"].__setitem__(0, "hi")),
        F,
        "turns must be a list",
    ),
    Bad(
        "turn a string",
        lme_file(lambda d: d["haystack_sessions"][0].append("hi")),
        F,
        "a turn must be an object",
    ),
    Bad("content int", lme_file(sets(lme_turn, "content", 5)), F, "turn text must be a string"),
    Bad("content missing", lme_file(drops(lme_turn, "content")), F, "turn text must be a string"),
    Bad(
        "content lone surrogate",
        lme_file(sets(lme_turn, "content", "a\ud83d")),
        F,
        "lone surrogate",
    ),
    Bad("role int", lme_file(sets(lme_turn, "role", 1)), F, "speaker must be a string"),
    Bad(
        "date nonsense",
        lme_file(lambda d: d["haystack_dates"].__setitem__(0, "someday")),
        F,
        "unparseable session date",
    ),
    Bad(
        "question_id int",
        lme_file(sets(top, "question_id", 5)),
        F,
        "conversation id must be a string",
    ),
]

OBJECTS = [
    Bad("conversation an int", lambda c: c.memory.add_conversation(5), F, "must be a JSON object"),  # type: ignore[arg-type]
    Bad(
        "conversation a string",
        lambda c: c.memory.add_conversation("hi"),
        F,
        "must be a JSON object",
    ),  # type: ignore[arg-type]
    Bad("conversation None", lambda c: c.memory.add_conversation(None), F, "must be a JSON object"),  # type: ignore[arg-type]
    Bad(
        "conversations None",
        lambda c: c.memory.add_conversations(None),  # type: ignore[arg-type]
        I,
        "conversations must be a list",
    ),
    Bad(
        "conversations one dict",
        lambda c: c.memory.add_conversations(ramem_doc()),  # type: ignore[arg-type]
        I,
        "use add_conversation for one",
    ),
    Bad(
        "progress not callable",
        lambda c: c.memory.add_conversation(ramem_doc(), progress=5),  # type: ignore[arg-type]
        I,
        "progress must be a callable",
    ),
    Bad(
        "units progress not callable",
        lambda c: c.memory.add_units([], progress="bar"),  # type: ignore[arg-type]
        I,
        "progress must be a callable",
    ),
    Bad("dict text int", ramem_dict(sets(turn0, "text", 1)), F, "turn text must be a string"),
    Bad("dict speaker newline", ramem_dict(sets(turn0, "speaker", "A\rB")), F, "U+000D"),
    Bad(
        "dict session time relative",
        ramem_dict(sets(session0, "time", "last week")),
        F,
        "absolute time",
    ),
    Bad(
        "second conversation bad: the first is not written either",
        lambda c: c.memory.add_conversations([ramem_doc(), {"id": "x", "sessions": 3}]),
        F,
        "'sessions' must be a list",
    ),
    Bad(
        "two conversations with one id",
        lambda c: c.memory.add_conversations([ramem_doc(), ramem_doc()]),
        I,
        "same id",
    ),
    Bad(
        "object with no sessions",
        lambda c: c.memory.add_conversation(Conversation("x", ())),
        F,
        "no sessions",
    ),
    Bad(
        "session holding a non-turn",
        lambda c: c.memory.add_conversation(Conversation("x", (Session("s", ("hi",)),))),  # type: ignore[arg-type]
        F,
        "expected a Turn",
    ),
    Bad(
        "sessions holding a non-session",
        lambda c: c.memory.add_conversation(Conversation("x", ("s",))),  # type: ignore[arg-type]
        F,
        "expected a Session",
    ),
    Bad(
        "turn text None",
        lambda c: c.memory.add_conversation(conversation(text=None)),
        F,
        "turn text must be a string",
    ),
    Bad(
        "turn time a string",
        lambda c: c.memory.add_conversation(conversation(time="2023")),
        F,
        "turn time must be a datetime",
    ),
    Bad(
        "turn time datetime.max",
        lambda c: c.memory.add_conversation(conversation(time=datetime.max)),
        F,
        "outside 1900-2200",
    ),
    Bad(
        "turn time a date",
        lambda c: c.memory.add_conversation(conversation(time=date(2023, 1, 1))),
        F,
        "must be a datetime",
    ),
    Bad(
        "turn caption int",
        lambda c: c.memory.add_conversation(conversation(image_caption=3)),
        F,
        "image caption must be a string",
    ),
    Bad(
        "turn speaker tab",
        lambda c: c.memory.add_conversation(conversation(speaker="A\tB")),
        F,
        "U+0009",
    ),
    Bad(
        "participant with newline",
        lambda c: c.memory.add_conversation(
            Conversation("x", conversation().sessions, participants=("Ann\nBo",))
        ),
        F,
        "U+000A",
    ),
    Bad(
        "conversation id with separator",
        lambda c: c.memory.add_conversation(Conversation("a\x1fb", conversation().sessions)),
        F,
        "U+001F",
    ),
    Bad("units not a list", lambda c: c.memory.add_units("abc"), I, "units must be a list"),  # type: ignore[arg-type]
    Bad("unit an int", lambda c: c.memory.add_units([5]), I, "units[0] must be a MemoryUnit"),  # type: ignore[list-item]
    Bad(
        "unit empty content",
        lambda c: c.memory.add_units([unit(content=" ")]),
        I,
        "content is empty",
    ),
    Bad(
        "unit content int",
        lambda c: c.memory.add_units([unit(content=5)]),
        I,
        "content must be a string",
    ),
    Bad("unit id with newline", lambda c: c.memory.add_units([unit(id="u\n1")]), I, "U+000A"),
    Bad(
        "unit context missing",
        lambda c: c.memory.add_units([unit(context=None)]),
        I,
        "must be a MemoryUnit",
    ),
]


def turn(ctx: Ctx, **change: Any) -> object:
    fields: dict[str, Any] = {"speaker": "user", "text": "hello", "at": AT} | change
    return ctx.memory.add_turn(**fields)


TURNS = [
    Bad("speaker None", lambda c: turn(c, speaker=None), I, "speaker must be a string"),
    Bad("speaker empty", lambda c: turn(c, speaker=""), I, "speaker is empty"),
    Bad("speaker newline", lambda c: turn(c, speaker="user\nsystem"), I, "U+000A"),
    Bad("speaker 1 MB", lambda c: turn(c, speaker="u" * 1_000_000), I, "limit 100"),
    Bad("speaker bidi", lambda c: turn(c, speaker="\u202euser"), I, "U+202E"),
    Bad("text None", lambda c: turn(c, text=None), I, "must be a string"),
    Bad("text int", lambda c: turn(c, text=5), I, "must be a string"),
    Bad("text empty", lambda c: turn(c, text=""), I, "is empty"),
    Bad("text spaces", lambda c: turn(c, text="   \n"), I, "is empty"),
    Bad("text NULs", lambda c: turn(c, text="\x00\x00"), I, "is empty"),
    Bad("text zero-width", lambda c: turn(c, text="\u200b\u200b"), I, "is empty"),
    Bad("text lone surrogate", lambda c: turn(c, text="hi \ud800"), I, "lone surrogate"),
    Bad("text too long", lambda c: turn(c, text="x" * 1_000_001), I, "limit 1,000,000"),
    Bad("caption int", lambda c: turn(c, image_caption=5), I, "image_caption must be a string"),
    Bad("caption 10 MB", lambda c: turn(c, image_caption="x" * 10_000_000), I, "limit 2,000"),
    Bad(
        "caption only, but empty", lambda c: turn(c, text="", image_caption="\u200b"), I, "is empty"
    ),
    Bad("at None", lambda c: turn(c, at=None), I, "at must be a datetime"),
    Bad("at a string", lambda c: turn(c, at="2023-05-01"), I, "at must be a datetime"),
    Bad("at a date", lambda c: turn(c, at=date(2023, 5, 1)), I, "at must be a datetime"),
    Bad("at an epoch int", lambda c: turn(c, at=1683554160), I, "at must be a datetime"),
    Bad("at datetime.max", lambda c: turn(c, at=datetime.max), I, "outside 1900-2200"),
    Bad("at datetime.min", lambda c: turn(c, at=datetime.min), I, "outside 1900-2200"),
    Bad(
        "at 9999 with an offset",
        lambda c: turn(c, at=datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5)))),
        I,
        "at 9999-12-31 lies outside 1900-2200",
    ),
    Bad(
        "conversation_id int",
        lambda c: turn(c, conversation_id=5),
        I,
        "conversation_id must be a string",
    ),
    Bad("conversation_id separator", lambda c: turn(c, conversation_id="a\x1fb"), I, "U+001F"),
    Bad(
        "conversation_id empty",
        lambda c: turn(c, conversation_id=""),
        I,
        "conversation_id is empty",
    ),
    Bad("namespace with slash", lambda c: turn(c, namespace="a/b"), I, "invalid namespace"),
    Bad("namespace empty", lambda c: turn(c, namespace=""), I, "invalid namespace"),
    Bad("namespace int", lambda c: turn(c, namespace=5), I, "invalid namespace"),
    Bad("namespace 200 characters", lambda c: turn(c, namespace="n" * 200), I, "invalid namespace"),
    Bad(
        "exchange user text int",
        lambda c: c.memory.add_exchange(5, "hi", at=AT),
        I,
        "must be a string",
    ),  # type: ignore[arg-type]
    Bad(
        "exchange reply surrogate",
        lambda c: c.memory.add_exchange("hi", "\ud800", at=AT),
        I,
        "lone surrogate",
    ),
    Bad(
        "exchange bad at",
        lambda c: c.memory.add_exchange("hi", "yo", at="now"),
        I,
        "at must be a datetime",
    ),  # type: ignore[arg-type]
    Bad(
        "exchange assistant name newline",
        lambda c: c.memory.add_exchange("hi", "yo", at=AT, assistant="a\nb"),
        I,
        "U+000A",
    ),
]


def recall(ctx: Ctx, query: object = "What did Ben eat?", **kwargs: Any) -> object:
    return ctx.memory.recall(query, **kwargs)  # type: ignore[arg-type]


READS = [
    Bad("query None", lambda c: recall(c, None), I, "the query must be a string"),
    Bad("query empty", lambda c: recall(c, ""), I, "the query is empty"),
    Bad("query spaces", lambda c: recall(c, "  \t"), I, "the query is empty"),
    Bad("query zero-width", lambda c: recall(c, "\u200b"), I, "the query is empty"),
    Bad("query int", lambda c: recall(c, 5), I, "the query must be a string"),
    Bad("query bytes", lambda c: recall(c, b"sardines"), I, "the query must be a string"),
    Bad("query 1 MB", lambda c: recall(c, "sardines " * 120_000), I, "limit 4,000"),
    Bad("query 9 MB", lambda c: recall(c, "x" * 9_000_000), I, "limit 4,000"),
    Bad("query lone surrogate", lambda c: recall(c, "sardines \udc00"), I, "lone surrogate"),
    Bad("k zero", lambda c: recall(c, k=0), I, "k must be a positive integer"),
    Bad("k negative", lambda c: recall(c, k=-1), I, "k must be a positive integer"),
    Bad("k 2.5", lambda c: recall(c, k=2.5), I, "k must be a positive integer"),
    Bad("k True", lambda c: recall(c, k=True), I, "k must be a positive integer"),
    Bad("k a string", lambda c: recall(c, k="5"), I, "k must be a positive integer"),
    Bad("k None", lambda c: recall(c, k=None), I, "k must be a positive integer"),
    Bad("at 2023 as a string", lambda c: recall(c, at="2023"), I, "at must be a datetime"),
    Bad("at datetime.max", lambda c: recall(c, at=datetime.max), I, "outside 1900-2200"),
    Bad("at a date", lambda c: recall(c, at=date(2023, 1, 1)), I, "at must be a datetime"),
    Bad("namespace with space", lambda c: recall(c, namespace="a b"), I, "invalid namespace"),
    Bad("namespace dict", lambda c: recall(c, namespace={"$ne": "x"}), I, "invalid namespace"),
    Bad("frame query None", lambda c: c.memory.frame(None), I, "the query must be a string"),  # type: ignore[arg-type]
    Bad("frame at int", lambda c: c.memory.frame("when?", at=2023), I, "at must be a datetime"),  # type: ignore[arg-type]
    Bad(
        "situate k zero",
        lambda c: c.memory.situate("sardines", k=0),
        I,
        "k must be a positive integer",
    ),
    Bad(
        "situate max_tokens zero",
        lambda c: c.memory.situate("sardines", max_tokens=0),
        I,
        "max_tokens must be a positive integer",
    ),
    Bad(
        "situate max_tokens 2.5",
        lambda c: c.memory.situate("sardines", max_tokens=2.5),
        I,
        "max_tokens",
    ),  # type: ignore[arg-type]
    Bad("situate query None", lambda c: c.memory.situate(None), I, "the query must be a string"),  # type: ignore[arg-type]
    Bad(
        "situate query None, unknown namespace",
        lambda c: c.memory.situate(None, namespace="nobody"),
        I,
        "the query must be a string",
    ),  # type: ignore[arg-type]
    Bad(
        "answer without a model",
        lambda c: c.memory.answer("What did Ben eat?"),
        I,
        "answer needs an LLM",
    ),
    Bad(
        "answer k zero",
        lambda c: c.memory.answer("What did Ben eat?", k=0, llm=lambda p: "x"),
        I,
        "k must be",
    ),  # type: ignore[arg-type]
    Bad("count bad namespace", lambda c: c.memory.count(namespace="a/b"), I, "invalid namespace"),
    Bad("format None", lambda c: c.memory.format(None), I, "format needs the evidence"),  # type: ignore[arg-type]
    Bad("format a string", lambda c: c.memory.format("text"), I, "got str"),  # type: ignore[arg-type]
    Bad("format ints", lambda c: c.memory.format([1]), I, "evidence[0] must be an Evidence"),  # type: ignore[list-item]
    Bad(
        "answer from a model that returns an empty string",
        lambda c: c.memory.answer("What did Ben eat?", llm=FakeLLM("  ")),
        ModelReplyError,
        "returned an empty answer",
    ),
    Bad(
        "answer from a model that returns None",
        lambda c: c.memory.answer("What did Ben eat?", llm=SilentModel()),
        ModelReplyError,
        "returned NoneType, not text",
    ),
    Bad(
        "namespace with a trailing newline",
        lambda c: c.memory.recall("What did Ben eat?", namespace="default\n"),
        I,
        "invalid namespace",
    ),
]

DELETES = [
    Bad(
        "no target",
        lambda c: c.memory.delete(),
        I,
        "delete needs unit_ids, session_id or conversation_id",
    ),
    Bad(
        "session filter operator",
        lambda c: c.memory.delete(session_id={"$ne": "x"}),
        I,
        "session_id must be a non-empty string",
    ),  # type: ignore[arg-type]
    Bad(
        "conversation filter operator",
        lambda c: c.memory.delete(conversation_id={"$in": ["friends"]}),
        I,
        "conversation_id must be",
    ),  # type: ignore[arg-type]
    Bad(
        "session empty",
        lambda c: c.memory.delete(session_id=""),
        I,
        "session_id must be a non-empty string",
    ),
    Bad(
        "unit ids a string", lambda c: c.memory.delete(unit_ids="abc"), I, "unit_ids must be a list"
    ),
    Bad(
        "unit ids with an int",
        lambda c: c.memory.delete(unit_ids=[5]),
        I,
        "unit_ids must be a list",
    ),  # type: ignore[list-item]
    Bad(
        "unit ids a generator",
        lambda c: c.memory.delete(unit_ids=(i for i in ["a"])),
        I,
        "unit_ids must be a list",
    ),  # type: ignore[arg-type]
    Bad(
        "session shared by two conversations",
        lambda c: c.memory.delete(session_id="S1"),
        I,
        "name the conversation too",
    ),
    Bad(
        "delete in a bad namespace",
        lambda c: c.memory.delete(conversation_id="friends", namespace="../x"),
        I,
        "invalid namespace",
    ),
    Bad("drop a bad namespace", lambda c: c.memory.drop(namespace="a b"), I, "invalid namespace"),
]

OPENING = [
    Bad(
        "open a file as a store",
        lambda c: RaMem.open(raw(c, b"{}", "store.json"), embedder=HashEmbedder()),
        StoreError,
        "is a file, not a memory directory",
    ),
    Bad(
        "constructor namespace",
        lambda c: RaMem(c.memory.store, namespace="a b"),
        I,
        "invalid namespace",
    ),
    Bad(
        "constructor session_gap int",
        lambda c: RaMem(c.memory.store, session_gap=5),
        I,
        "session_gap must be a positive timedelta",
    ),  # type: ignore[arg-type]
    Bad(
        "constructor session_gap zero",
        lambda c: RaMem(c.memory.store, session_gap=timedelta(0)),
        I,
        "session_gap must be a positive",
    ),
]


def _unit_with_id(unit_id: str) -> MemoryUnit:
    return MemoryUnit(unit_id, "Ann: hi", EpisodicContext("s9", "c9", None))


def _open(**kwargs: Any) -> Callable[[Ctx], object]:
    """RaMem.open with ``kwargs`` and the hash embedder (nothing listens anywhere)."""
    return lambda c: RaMem.open(embedder=HashEmbedder(), **kwargs)


def _server(**kwargs: Any) -> Callable[[Ctx], object]:
    """RaMem.open on a server with ``kwargs`` (nothing listens: options are checked first)."""
    return lambda c: RaMem.open(host="127.0.0.1", port=9, embedder=HashEmbedder(), **kwargs)


KEYED = [  # issue 31 item 9: strings for lists, wrong types, reserved ids
    Bad("get_keyed a string", lambda c: c.memory.keyed.get("abc"), I, "keys must be a sequence"),
    Bad(
        "delete_keyed a string",
        lambda c: c.memory.keyed.delete("profile"),
        I,
        "keys must be a sequence",
    ),
    Bad("get_keyed None", lambda c: c.memory.keyed.get(None), I, "keys must be a sequence"),
    Bad("get_keyed [None]", lambda c: c.memory.keyed.get([None]), I, "non-empty string"),
    Bad("get_keyed [5]", lambda c: c.memory.keyed.get([5]), I, "non-empty string"),
    Bad("delete_keyed None", lambda c: c.memory.keyed.delete(None), I, "keys must be a sequence"),
    Bad("delete_keyed [5]", lambda c: c.memory.keyed.delete([5]), I, "non-empty string"),
    Bad(
        "delete a version record's id",
        lambda c: c.memory.delete(unit_ids=["~ramem-version~abc"]),
        I,
        "which RaMem reserves",
    ),
    Bad(
        "add a unit with a reserved id",
        lambda c: c.memory.add_units([_unit_with_id("~ramem-version~abc")]),
        I,
        "which RaMem reserves",
    ),
    Bad(
        "an empty idempotency key",
        lambda c: c.memory.add_turn("Ann", "hi", at=datetime(2024, 1, 1), idempotency_key=""),
        I,
        "idempotency_key is empty",
    ),
]

OPTIONS = [  # issue 31 item 9: settings of the memory and of a server
    Bad(
        "refresh_seconds a string",
        lambda c: RaMem(c.memory.store, refresh_seconds="1"),
        I,
        "refresh_seconds must be a finite number",
    ),
    Bad(
        "refresh_seconds None",
        lambda c: RaMem(c.memory.store, refresh_seconds=None),
        I,
        "refresh_seconds must be a finite number",
    ),
    Bad(
        "refresh_seconds NaN",
        lambda c: RaMem(c.memory.store, refresh_seconds=float("nan")),
        I,
        "refresh_seconds must be a finite number",
    ),
    Bad(
        "refresh_seconds inf",
        lambda c: RaMem(c.memory.store, refresh_seconds=float("inf")),
        I,
        "refresh_seconds must be a finite number",
    ),
    Bad("snapshot_dir 5", _server(snapshot_dir=5), I, "snapshot_dir must be a directory's path"),
    Bad(
        "snapshot_dir empty",
        _server(snapshot_dir=""),
        I,
        "snapshot_dir must be a directory's path",
    ),
    Bad("timeout 0", _server(timeout=0.5 - 0.5), I, "timeout must be positive"),
    Bad("timeout NaN", _server(timeout=float("nan")), I, "timeout must be positive"),
    Bad("timeout a string", _server(timeout="5"), I, "timeout must be positive"),
    Bad("timeout a triple", _server(timeout=(1, 2, 3)), I, "timeout must be positive"),
    Bad(
        "timeout for a local directory",
        lambda c: RaMem.open(c.folder / "local", timeout=5, embedder=HashEmbedder()),
        I,
        "for a Chroma server",
    ),
    Bad(
        "an empty snapshot key",
        lambda c: RaMem.open(c.folder / "k", snapshot_key="", embedder=HashEmbedder()),
        I,
        "snapshot key must be non-empty",
    ),
    Bad(
        "snapshot_max_bytes 0",
        lambda c: RaMem.open(c.folder / "m", snapshot_max_bytes=0, embedder=HashEmbedder()),
        I,
        "max_bytes must be a positive integer",
    ),
    # issue 41: every argument of RaMem.open that reaches httpx or chromadb, checked before
    # any connection (a raw httpx.InvalidURL and TypeError before)
    Bad("port a string", _open(host="127.0.0.1", port="abc"), I, "port must be an integer"),
    Bad("port 0", _open(host="127.0.0.1", port=0), I, "port must be an integer in 1-65535"),
    Bad("port 70000", _open(host="127.0.0.1", port=70000), I, "port must be an integer"),
    Bad("port True", _open(host="127.0.0.1", port=True), I, "port must be an integer"),
    Bad("port without a host", _open(port=9001), I, "port is for a Chroma server"),
    Bad("host a URL", _open(host="http://127.0.0.1"), I, "not a URL or a path"),
    Bad("host empty", _open(host=""), I, "host is empty"),
    Bad("host a number", _open(host=127), I, "host must be a string"),
    Bad("headers a number value", _server(headers={"x": 1}), I, "must be a string, got 1"),
    Bad("headers a list", _server(headers=["x"]), I, "headers must map header names"),
    Bad("headers a bad name", _server(headers={"a b": "v"}), I, "not an HTTP header name"),
    Bad("headers a newline", _server(headers={"x": "a\nb"}), I, "holds a control"),
    Bad("ssl a string", _server(ssl="yes"), I, "ssl must be True or False"),
    Bad("tenant empty", _server(tenant=" "), I, "tenant is empty"),
    Bad("tenant a number", _server(tenant=5), I, "tenant must be a string"),
    Bad("database a newline", _server(database="a\nb"), I, "database"),
]

GROUPS = {
    "file": FILES,
    "locomo": LOCOMO,
    "longmemeval": LONGMEMEVAL,
    "object": OBJECTS,
    "add_turn": TURNS,
    "read": READS,
    "delete": DELETES,
    "open": OPENING,
    "keyed": KEYED,
    "options": OPTIONS,
}
CASES = [replace(c, name=f"{group}: {c.name}") for group, cases in GROUPS.items() for c in cases]


def test_the_corpus_is_large_and_its_names_unique() -> None:
    assert len(CASES) + len(CLI_CASES) >= 150
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.fixture(scope="module")
def loaded_groups(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Ctx]]:
    """One memory per group of cases (made when the group's first case runs), each holding
    two conversations that share session ids: a case that leaks changes only its group."""
    made: dict[str, Ctx] = {}
    yield made
    for ctx in made.values():
        ctx.memory.close()
        ctx.memory.store.close()


@pytest.fixture
def loaded(
    loaded_groups: dict[str, Ctx],
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Ctx:
    case = request.node.callspec.params["case"]
    group = case.name.split(":")[0]
    if group not in loaded_groups:
        folder = tmp_path_factory.mktemp(f"bad-{group}")
        store = ChromaStore.persistent(folder / "db", HashEmbedder())
        memory = RaMem(store, counter=WordCounter())
        memory.add_conversation(two_trips())
        other = two_trips()
        memory.add_conversation(Conversation("neighbours", other.sessions, other.participants))
        loaded_groups[group] = Ctx(memory, folder / "files")
        (folder / "files").mkdir()
    return loaded_groups[group]


def _state(memory: RaMem) -> dict[str, list[tuple[str, str]]]:
    return {
        ns: sorted((u.id, u.content) for u in memory.store.get(ns))
        for ns in memory.store.namespaces()
    }


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gets_a_clear_error_and_changes_nothing(loaded: Ctx, case: Bad) -> None:
    before = _state(loaded.memory)
    with pytest.raises(RaMemError) as info:
        case.call(loaded)
    assert isinstance(info.value, case.error), f"{type(info.value).__name__}: {info.value}"
    assert case.message in str(info.value)
    assert _state(loaded.memory) == before
    # and the memory still answers
    assert loaded.memory.recall("What did Ben eat in Lisbon?", k=1)


# ------------------------------------------------------------------ the command line

CLI_CASES: list[tuple[str, list[str], str]] = [
    ("ingest a missing file", ["ingest", "{dir}/nope.json"], "No such file"),
    ("ingest malformed JSON", ["ingest", "{dir}/bad.json"], "malformed JSON"),
    ("ingest a Latin-1 file", ["ingest", "{dir}/latin1.json"], "not UTF-8"),
    ("ingest a folder", ["ingest", "{dir}"], "cannot read file"),
    ("ingest a relative session time", ["ingest", "{dir}/relative.json"], "absolute time"),
    (
        "ingest with an unknown --format",
        ["ingest", "{dir}/bad.json", "--format", "xml"],
        "invalid choice",
    ),
    ("ask with --k 0", ["ask", "q", "--k", "0"], "at least 1"),
    ("ask with --k abc", ["ask", "q", "--k", "abc"], "at least 1"),
    ("ask with --at yesterday", ["ask", "q", "--at", "yesterday"], "cannot parse --at"),
    ("ask where nothing was stored", ["ask", "q", "--namespace", "nobody"], "no memory at"),
    ("ask a bad namespace", ["--namespace", "a/b", "ask", "q"], "invalid namespace"),
    ("ask an empty question", ["ask", ""], "the query is empty"),
    (
        "ask with markup in the question",
        ["ask", "[/bold] what?", "--namespace", "nobody"],
        "no memory at",
    ),
    (
        "frame with --at 9999",
        ["frame", "q", "--at", "9999-01-01"],
        "--at 9999-01-01 lies outside 1900-2200",
    ),
    ("eval a missing file", ["eval", "locomo", "{dir}/nope.json"], "No such file"),
    ("eval malformed JSON", ["eval", "locomo", "{dir}/bad.json"], "malformed JSON"),
    ("eval a RaMem file as LoCoMo", ["eval", "locomo", "{dir}/ramem.json"], "not a locomo file"),
    ("eval --limit 0", ["eval", "locomo", "{dir}/ramem.json", "--limit", "0"], "at least 1"),
    ("eval --k a,b", ["eval", "locomo", "{dir}/ramem.json", "--k", "a,b"], "--k"),
    ("eval an unknown benchmark", ["eval", "mmlu", "{dir}/ramem.json"], "invalid choice"),
    ("--port 0", ["--port", "0", "namespaces"], "port number"),
    ("--timeout 0", ["--timeout", "0", "namespaces"], "positive number of seconds"),
    ("--timeout nan", ["namespaces", "--timeout", "nan"], "positive number of seconds"),
    ("--port after the command", ["namespaces", "--port", "70000"], "port number"),
    (
        "--path a file",
        ["--path", "{dir}/bad.json", "namespaces"],
        "is a file, not a memory directory",
    ),
    ("delete without a target", ["delete"], "delete needs memory ids, --session"),
    ("delete with two targets", ["delete", "x", "--all"], "(one of them)"),
    ("no command", [], "required"),
    ("unknown command", ["frobnicate"], "invalid choice"),
]


@pytest.fixture(scope="module")
def cli_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli")
    (folder / "bad.json").write_text("{not json", encoding="utf-8")
    (folder / "latin1.json").write_bytes('{"id": "caf\xe9"}'.encode("latin-1"))
    relative = ramem_doc()
    relative["sessions"][0]["time"] = "yesterday"
    (folder / "relative.json").write_text(json.dumps(relative), encoding="utf-8")
    (folder / "ramem.json").write_text(json.dumps(ramem_doc()), encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("argv", "message"), [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES]
)
def test_cli_bad_argument_is_one_line_and_a_nonzero_exit(
    cli_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.setenv("RAMEM_HOME", str(cli_dir / "home"))
    argv = [a.replace("{dir}", str(cli_dir)) for a in argv]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    out = " ".join((captured.out + captured.err).split())
    assert code not in (0, None)
    assert message in out
    assert "Traceback" not in out
    assert not (cli_dir / "home").exists() or "nobody" not in _namespaces(cli_dir / "home")


def _namespaces(home: Path) -> list[str]:
    with ChromaStore.persistent(home, HashEmbedder()) as store:
        return store.namespaces()
