"""Conversations in: RaMem JSON, LoCoMo, LongMemEval, and clear errors for bad input."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ramem_core import ConversationFormatError, RuleAnchorer, load_conversations
from ramem_core.loaders import conversation_from_dict
from tests.conftest import FIXTURES


def good() -> dict[str, Any]:
    return {
        "id": "c1",
        "participants": ["Ann"],
        "sessions": [
            {
                "id": "s1",
                "time": "2023-05-08T13:56:00",
                "turns": [
                    {"id": "s1:1", "speaker": "Ann", "text": "hello"},
                    {
                        "id": "s1:2",
                        "speaker": "Bob",
                        "text": "",
                        "image_caption": "a dog photo",
                    },
                ],
            }
        ],
    }


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "conv.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_ramem_format_round_trip(tmp_path: Path) -> None:
    [conv] = load_conversations(write(tmp_path, good()))
    assert conv.id == "c1"
    assert conv.sessions[0].time == datetime(2023, 5, 8, 13, 56)
    assert conv.sessions[0].turns[1].image_caption == "a dog photo"


def test_locomo_loader_keeps_captions_and_session_order() -> None:
    [conv] = load_conversations(FIXTURES / "locomo_mini.json")
    assert conv.id == "conv-mini"
    assert conv.participants == ("Caroline", "Melanie")
    assert [s.id for s in conv.sessions] == ["D1", "D2"]  # extra _date_time keys ignored
    assert conv.sessions[1].time == datetime(2023, 5, 25, 13, 14)
    units = RuleAnchorer().anchor(conv)
    assert units[1].source_ids == ("D1:2",)
    assert "[shares a photo of a painting of a sunrise over a lake]" in units[1].content
    assert units[0].context.event_time is not None
    assert units[0].context.event_time.start.date().isoformat() == "2023-05-07"
    assert units[0].context.participants == ("Caroline",)  # "Mel" is no known name
    assert units[1].context.participants == ("Melanie", "Caroline")
    assert units[2].context.event_time is not None
    assert units[2].context.event_time.start.date().isoformat() == "2023-05-21"  # last Sunday


def test_longmemeval_loader_sorts_sessions_and_skips_empty_turns() -> None:
    [conv] = load_conversations(FIXTURES / "longmemeval_mini.json")
    assert [s.id for s in conv.sessions] == ["sess-a", "sess-b"]
    assert [t.id for t in conv.sessions[1].turns] == ["sess-b:0", "sess-b:1"]
    assert conv.sessions[1].turns[0].speaker == "user"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(sessions="nope"), "'sessions' must be a list"),
        (lambda d: d["sessions"][0].update(time="the 45th of Smarch"), "unparseable session time"),
        (lambda d: d["sessions"][0].update(time=12), "session time must be a string"),
        (lambda d: d["sessions"][0]["turns"][0].update(text=""), "turn text is empty"),
        (lambda d: d["sessions"][0]["turns"][0].update(text=42), "turn text must be a string"),
        (lambda d: d["sessions"][0]["turns"][0].pop("speaker"), "speaker must be a string"),
        (lambda d: d["sessions"][0]["turns"][1].update(id="s1:1"), "duplicate turn id"),
        (lambda d: d["sessions"].append(dict(d["sessions"][0])), "duplicate session id"),
        (lambda d: d["sessions"][0]["turns"][0].update(text="x" * 1_000_001), "limit 1,000,000"),
        (lambda d: d.pop("id"), "conversation id must be a string"),
        (lambda d: d["sessions"][0]["turns"].append("hi"), "a turn must be an object"),
    ],
)
def test_bad_input_names_file_session_and_turn(tmp_path: Path, mutate: Any, message: str) -> None:
    data = good()
    mutate(data)
    path = write(tmp_path, data)
    with pytest.raises(ConversationFormatError, match=message) as info:
        load_conversations(path)
    assert str(path) in str(info.value)


def test_error_names_the_session_and_turn() -> None:
    data = good()
    data["sessions"][0]["turns"][0]["text"] = ""
    with pytest.raises(ConversationFormatError) as info:
        conversation_from_dict(data, "mine.json")
    assert (info.value.source, info.value.session, info.value.turn) == ("mine.json", "s1", "s1:1")
    assert "session 's1'" in str(info.value)
    assert "turn 's1:1'" in str(info.value)


def test_malformed_json_gives_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"id": "x",\n "sessions": [}', encoding="utf-8")
    with pytest.raises(ConversationFormatError, match="malformed JSON at line 2"):
        load_conversations(path)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConversationFormatError, match="cannot read file"):
        load_conversations(tmp_path / "nope.json")


def test_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(ConversationFormatError, match="unknown conversation format"):
        load_conversations(write(tmp_path, {"hello": 1}))


def test_longmemeval_evidence_names_turns_as_the_loader_does() -> None:
    """One gold-turn rule: user turns marked ``has_answer``, with the ids the conversation
    has (a repeated session's ``~2``), never an assistant turn or one the loader skipped."""
    from ramem_core.loaders import longmemeval_conversation, longmemeval_evidence

    def turn(role: str, text: str, answer: bool = False) -> dict[str, object]:
        return {"role": role, "content": text, "has_answer": answer}

    item = {
        "question_id": "q1",
        "haystack_session_ids": ["s1", "s2", "s1"],
        "haystack_dates": [
            "2023/05/20 (Sat) 02:21",
            "2023/05/21 (Sun) 10:00",
            "2023/05/22 (Mon) 09:00",
        ],
        "haystack_sessions": [
            [turn("user", "I live in Lisbon.", True), turn("assistant", "Nice!", True)],
            [turn("user", "\u200b", True), turn("user", "Nothing here.")],
            [turn("user", "Hello."), turn("user", "I moved to Porto.", True)],
        ],
    }
    gold = longmemeval_evidence(item)
    assert gold == ["s1:0", "s1~2:1"]
    ids = {t.id for s in longmemeval_conversation(item).sessions for t in s.turns}
    assert set(gold) <= ids
