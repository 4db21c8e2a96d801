"""Seeing and moving memory: listing newest first, export and import (issue 32)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from ramem_core import InvalidInputError, Kind, RaMem
from ramem_core.loaders import demo_conversation
from ramem_core.testing import HashEmbedder, WordCounter

T0 = datetime(2024, 3, 1, 9, 0)


def _memory(path: Path | None = None, **kwargs: object) -> RaMem:
    if path is None:
        return RaMem.ephemeral(embedder=HashEmbedder(), counter=WordCounter(), **kwargs)  # type: ignore[arg-type]
    return RaMem.open(path, embedder=HashEmbedder(), counter=WordCounter(), **kwargs)  # type: ignore[arg-type]


def _top10(memory: RaMem, namespace: str) -> list[list[tuple[str, str]]]:
    _, questions = demo_conversation()
    return [
        [
            (e.unit.id, e.unit.content)
            for e in memory.recall(q["question"], k=10, namespace=namespace)
        ]
        for q in questions
    ]


def test_a_page_of_one_conversation_or_session_holds_only_theirs() -> None:
    memory = _memory(namespace="pages")
    ana = memory.add_turn("Ana", "I moved to Porto.", at=T0, conversation_id="ana")
    later = memory.add_turn(
        "Ana", "I like it here.", at=T0 + timedelta(days=2), conversation_id="ana"
    )
    ben = memory.add_turn("Ben", "I moved to Lisbon.", at=T0, conversation_id="ben")
    assert [u.id for u in memory.transfer.page(conversation_id="ana")] == [later.id, ana.id]
    assert [u.id for u in memory.transfer.page(conversation_id="ben")] == [ben.id]
    first_session = ana.context.session_id
    assert [u.id for u in memory.transfer.page(session_id=first_session)] == [ana.id]
    assert memory.transfer.page(conversation_id="ben", session_id=later.context.session_id) == []


def test_the_default_namespace_moves_every_door() -> None:
    memory = _memory(namespace="default-first")
    memory.keyed.put("diet", "I am vegetarian.", at=T0)
    memory.namespace = "default-second"
    memory.keyed.put("diet", "I eat fish now.", at=T0 + timedelta(days=1))
    assert memory.keyed.get(["diet"])["diet"].content.endswith("I eat fish now.")
    assert memory.keyed.get(["diet"], namespace="default-first")["diet"].content.endswith(
        "vegetarian."
    )
    assert [u.content for u in memory.transfer.page()] == ["user: I eat fish now."]
    assert [e.unit.content for e in memory.recall("What do I eat?")] == ["user: I eat fish now."]
    with pytest.raises(InvalidInputError, match="namespace"):
        memory.namespace = "no spaces allowed"
    assert memory.namespace == "default-second"


def test_memories_page_newest_first_with_filters() -> None:
    memory = _memory(namespace="lst")
    said = [
        memory.add_turn("Ana", f"Note {i} about pottery.", at=T0 + timedelta(days=i))
        for i in range(5)
    ]
    question = memory.add_turn(
        "Ana", "What about pottery?", at=T0 + timedelta(days=9), kind=Kind.QUESTION
    )
    assert [u.id for u in memory.transfer.page()] == [question.id, *(u.id for u in reversed(said))]
    first = memory.transfer.page(limit=2)
    second = memory.transfer.page(limit=2, after=first[-1].id)
    assert [u.id for u in first + second] == [u.id for u in memory.transfer.page()][:4]
    assert [u.id for u in memory.transfer.page(kind="question")] == [question.id]
    later = memory.transfer.page(kind=Kind.STATEMENT, since=T0 + timedelta(days=3))
    assert [u.id for u in later] == [
        said[4].id,
        said[3].id,
    ]
    assert memory.transfer.get(said[0].id) == memory.store.get("lst", ids=[said[0].id])[0]
    assert memory.transfer.get("nope") is None
    assert memory.transfer.page(namespace="nobody") == []
    for bad, message in (
        ({"kind": "fact"}, "kind must be one of"),
        ({"after": "nope"}, "not the id of a listed memory"),
        ({"limit": 0}, "limit"),
    ):
        with pytest.raises(InvalidInputError, match=message):
            memory.transfer.page(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("vectors", [False, True])
def test_an_export_imported_elsewhere_recalls_the_same(tmp_path: Path, vectors: bool) -> None:
    """Into another namespace and another directory: the same top 10 for every question of
    the shipped demo; importing twice stores once."""
    conversation, _ = demo_conversation()
    with _memory(tmp_path / "a") as source:
        source.add_conversation(conversation)
        source.add_turn("Alice", "I booked a pottery class.", at=datetime(2023, 12, 1))
        source.keyed.put("profile", "Alice is vegetarian.", at=datetime(2023, 12, 2), payload="{}")
        before = _top10(source, "default")
        assert source.transfer.export(tmp_path / "m.jsonl", vectors=vectors) == source.count()
        source.transfer.import_from(tmp_path / "m.jsonl", namespace="copy")
        assert _top10(source, "copy") == before
        [kept] = source.keyed.get(["profile"], namespace="copy").values()  # keyed identity
        assert kept.payload == "{}"
    with _memory(tmp_path / "b") as target:
        report = target.transfer.import_from(tmp_path / "m.jsonl")
        assert report.new_units == report.units
        assert target.transfer.import_from(tmp_path / "m.jsonl").new_units == 0  # once
        assert _top10(target, "default") == before
        moved = {u.id: u for u in target.store.get("default")}
    with _memory(tmp_path / "a") as source:
        assert {u.id: u for u in source.store.get("default")} == moved  # every field


def test_vectors_of_another_model_are_embedded_again(tmp_path: Path) -> None:
    with RaMem.open(tmp_path / "a", embedder=HashEmbedder(64), counter=WordCounter()) as small:
        small.add_turn("Ana", "I bought a red bicycle.", at=T0)
        small.transfer.export(tmp_path / "m.jsonl", vectors=True)
    with _memory(tmp_path / "b") as memory:
        memory.transfer.import_from(tmp_path / "m.jsonl")
        units, matrix = memory.store.load("default")
        assert np.allclose(matrix, HashEmbedder().embed([u.content for u in units]))


def test_a_bad_import_is_refused_whole(tmp_path: Path) -> None:
    with _memory(tmp_path / "a") as source:
        for i in range(3):
            source.add_turn("Ana", f"Note {i}.", at=T0 + timedelta(minutes=i))
        source.transfer.export(tmp_path / "m.jsonl")
    lines = (tmp_path / "m.jsonl").read_text().splitlines()
    broken = json.loads(lines[3])
    broken["context"] = "nope"
    cases = {
        "bad line": [*lines[:3], json.dumps(broken)],
        "truncated": lines[:3],
        "other version": [lines[0].replace('"ramem_export": 1', '"ramem_export": 9'), *lines[1:]],
        "reserved id": [*lines[:3], lines[3].replace(json.loads(lines[3])["id"], "~ramem-x")],
        "not json": [*lines[:3], "{oops"],
    }
    messages = {
        "bad line": "line 4: a memory needs id, content and context",
        "truncated": "holds 2 memories, its header says 3",
        "other version": "not the header of a RaMem export",
        "reserved id": "which RaMem reserves",
        "not json": "line 4 is not JSON",
    }
    with _memory(tmp_path / "b") as target:
        for name, content in cases.items():
            path = tmp_path / f"{name}.jsonl"
            path.write_text("\n".join(content) + "\n")
            with pytest.raises(InvalidInputError, match=messages[name]):
                target.transfer.import_from(path)
        assert target.count() == 0  # nothing written
        assert not target.has_namespace("default")


class _Counting(HashEmbedder):
    """The hash embedder, remembering every text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.texts += texts
        return super().embed(texts)


def test_a_rewrite_keeps_stored_vectors_and_embeds_only_changed_contents() -> None:
    from dataclasses import replace

    embedder = _Counting()
    memory = RaMem.ephemeral(embedder=embedder, counter=WordCounter(), namespace="rewrite")
    kept = memory.add_turn("Ana", "I moved to Porto.", at=T0)
    edited = memory.add_turn("Ana", "I like it here.", at=T0 + timedelta(days=1))
    units, stored = memory.store.load("rewrite")
    before = dict(zip([u.id for u in units], stored, strict=True))
    embedder.texts.clear()
    report = memory.transfer.rewrite(
        [replace(kept, payload='{"tag": "home"}'), replace(edited, content="Ana: I love it here.")]
    )
    assert embedder.texts == ["Ana: I love it here."]  # the unchanged content: not embedded
    assert report.units == 2
    units, vectors = memory.store.load("rewrite")
    after = dict(zip([u.id for u in units], vectors, strict=True))
    assert np.array_equal(after[kept.id], before[kept.id])
    assert np.allclose(after[edited.id], HashEmbedder().embed(["Ana: I love it here."])[0])
    assert {u.id: u.payload for u in units}[kept.id] == '{"tag": "home"}'
    with pytest.raises(InvalidInputError):
        memory.transfer.rewrite(["not a unit"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="not stored"):  # a rewrite adds nothing
        memory.transfer.rewrite([replace(kept, payload="{}"), replace(kept, id="typo")])
    assert memory.count() == 2
    held = memory.transfer.get(kept.id)
    assert held is not None
    assert held.payload == '{"tag": "home"}'
