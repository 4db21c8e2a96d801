"""The LLM anchorer's own answer to whose state a memory speaks of and whether it replaces
what its owner said before ("owner", "replaces"): read strictly, so that no weak answer
fails a memory or stores a wrong reading."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from ramem_core import Conversation
from ramem_core.anchoring import LLMAnchorer, RuleAnchorer
from ramem_core.prompts.anchoring import ANCHOR_PROMPT, ANCHOR_PROMPT_VERSION, ANCHOR_SCHEMA
from ramem_core.reading import Reading
from ramem_core.store.codec import from_record, to_metadata
from ramem_core.testing import FakeLLM
from ramem_core.types import MemoryUnit
from tests.builders import memory_for, session

TURNS = ("S1:1", "S1:2", "S1:3")


def conversation() -> Conversation:
    moving = session(
        "S1",
        datetime(2023, 5, 8, 10),
        "Ann: We finally moved to Porto last week.",
        "Ann: My husband just started at Initech.",
        "Ann: Priya's flight got moved to Friday.",
    )
    return Conversation("c", (moving,), ("Ann",))


def reply(*items: dict[str, Any]) -> str:
    return json.dumps({"memories": list(items)})


def anchorer(answer: str | Any) -> LLMAnchorer:
    """An LLM anchorer over a fake model; its fallback reads nothing (no parser here)."""
    return LLMAnchorer(FakeLLM(answer), fallback=RuleAnchorer(reader=None))


def kept(units: list[MemoryUnit], llm: LLMAnchorer, dropped: int = 0) -> None:
    """Every memory is the LLM's own (nothing fell back to rules); ``dropped``: the units an
    earlier, unusable reply had."""
    assert [u.content for u in units] == [f"Restated {t}." for t in TURNS]
    assert llm.report.llm_units == 3
    assert (llm.report.dropped_units, llm.report.fallback_turns) == (dropped, 0)


def good() -> str:
    return reply(
        memory_for("S1:1", updates="where Ann lives", owner="self", replaces=True),
        memory_for("S1:2", updates="where Ann's husband works", owner="my husband", replaces=False),
        memory_for("S1:3", updates="the date of Priya's flight", owner="Priya", replaces=None),
    )


def test_owner_and_replaces_are_read_into_the_reading() -> None:
    llm = anchorer(good())
    units = llm.anchor(conversation())
    kept(units, llm)
    assert [u.context.reading for u in units] == [
        Reading(owner="", others=(), replaces=True),
        Reading(owner="my husband", others=("my husband",), replaces=False),
        Reading(owner="priya", others=("priya",), replaces=None),
    ]
    assert units[0].context.state == "where Ann lives"


def test_the_prompt_asks_for_both_and_names_a_new_version() -> None:
    assert ANCHOR_PROMPT_VERSION == "anchor-v3"
    fake = FakeLLM(good())
    LLMAnchorer(fake, fallback=RuleAnchorer(reader=None)).anchor(conversation())
    (prompt,) = fake.prompts
    assert '"owner": "self" or' in prompt
    assert '"replaces": true or false or null' in prompt
    assert ANCHOR_PROMPT.count("{turns}") == 1
    item = ANCHOR_SCHEMA["properties"]["memories"]["items"]
    assert {"owner", "replaces"} <= set(item["required"])
    assert item["properties"]["replaces"] == {"type": ["boolean", "null"]}


@pytest.mark.parametrize(
    "owner", ["self", "Self", "me", "I", "", "  ", "Ann", "ann", "the speaker"]
)
def test_the_speaker_is_the_empty_owner(owner: str) -> None:
    llm = anchorer(reply(*(memory_for(t, owner=owner, replaces=True) for t in TURNS)))
    units = llm.anchor(conversation())
    kept(units, llm)
    assert all(u.context.reading == Reading("", (), replaces=True) for u in units)


def test_a_plain_fact_of_the_speaker_stores_no_reading() -> None:
    llm = anchorer(reply(*(memory_for(t, owner="self", replaces=None) for t in TURNS)))
    units = llm.anchor(conversation())
    kept(units, llm)
    assert all(u.context.reading is None for u in units)


def test_owners_are_one_short_line_without_the_stores_separators() -> None:
    llm = anchorer(
        reply(
            memory_for("S1:1", owner="Ann's husband", replaces=True),  # the speaker's: "my"
            memory_for("S1:2", owner=" My | Husband;s  friend ", replaces=False),
            memory_for("S1:3", owner="Priya's", replaces=True),
        )
    )
    units = llm.anchor(conversation())
    kept(units, llm)
    owners = [u.context.reading.owner for u in units if u.context.reading is not None]
    assert owners == ["my husband", "my husband s friend", "priya"]
    for unit in units:  # stored and read back as it was
        meta = to_metadata(unit)
        assert from_record(unit.id, unit.content, meta).context.reading == unit.context.reading


@pytest.mark.parametrize(
    "answer",
    ["yes", "true", 1, 0, "maybe", [True], {"value": True}, 1.0],
    ids=["yes", "true-string", "one", "zero", "maybe", "list", "object", "float"],
)
def test_replaces_counts_only_as_a_json_boolean(answer: Any) -> None:
    llm = anchorer(reply(*(memory_for(t, owner="Priya", replaces=answer) for t in TURNS)))
    units = llm.anchor(conversation())
    kept(units, llm)
    assert all(u.context.reading == Reading("priya", ("priya",), replaces=None) for u in units)


@pytest.mark.parametrize(
    "owner",
    [
        ["my husband"],
        {"name": "Priya"},
        42,
        True,
        "x" * 10_000,
        "y" * 81,
        "my\nhusband",
        "my husband\x00",
        "|;|",
    ],
    ids=["list", "object", "number", "boolean", "10k", "81", "two-lines", "nul", "separators"],
)
def test_a_malformed_owner_stores_no_reading_and_keeps_the_memory(owner: Any) -> None:
    llm = anchorer(reply(*(memory_for(t, owner=owner, replaces=True) for t in TURNS)))
    units = llm.anchor(conversation())
    kept(units, llm)
    assert all(u.context.reading is None for u in units)


def test_an_owner_of_eighty_characters_is_kept() -> None:
    name = "z" * 80
    llm = anchorer(reply(*(memory_for(t, owner=name, replaces=False) for t in TURNS)))
    units = llm.anchor(conversation())
    kept(units, llm)
    assert all(u.context.reading == Reading(name, (name,), replaces=False) for u in units)


def test_a_reply_without_them_keeps_its_memories_unread() -> None:
    """An anchor-v2 reply (neither key), or both null: memories kept, no reading; a
    "replaces" alone is the speaker's."""
    llm = anchorer(
        reply(
            memory_for("S1:1"),
            memory_for("S1:2", owner=None, replaces=None),
            memory_for("S1:3", replaces=False),
        )
    )
    units = llm.anchor(conversation())
    kept(units, llm)
    assert [u.context.reading for u in units] == [None, None, Reading("", (), replaces=False)]


def test_one_weak_item_spoils_no_other() -> None:
    llm = anchorer(
        reply(
            memory_for("S1:1", owner=["Ann"], replaces="yes", extra={"nested": [1, 2]}),
            memory_for("S1:2", owner="my husband", replaces=True),
            memory_for("S1:3", owner="x" * 10_000, replaces=False),
        )
    )
    units = llm.anchor(conversation())
    kept(units, llm)
    assert [u.context.reading for u in units] == [
        None,
        Reading("my husband", ("my husband",), replaces=True),
        None,
    ]


@pytest.mark.parametrize(
    "weak",
    [
        "{broken",  # malformed JSON
        "",  # empty
        json.dumps({"notes": "owner: self, replaces: true"}),  # off-schema
        json.dumps({"memories": "S1:1 replaces"}),  # off-schema
        json.dumps({"memories": [{"owner": "self", "replaces": True}]}),  # no memory in it
    ],
    ids=["malformed", "empty", "no-memories", "memories-not-a-list", "no-content"],
)
def test_a_weak_reply_is_asked_again_and_the_second_answer_is_read(weak: str) -> None:
    answers = iter([weak, good()])
    llm = anchorer(lambda prompt: next(answers))
    units = llm.anchor(conversation())
    assert llm.report.retries == 1
    kept(units, llm, dropped=int(weak.startswith('{"memories": [{')))
    assert [u.context.reading for u in units] == [
        Reading("", (), replaces=True),
        Reading("my husband", ("my husband",), replaces=False),
        Reading("priya", ("priya",), replaces=None),
    ]
