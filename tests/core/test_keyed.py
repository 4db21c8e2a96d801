"""Keyed memories (:mod:`ramem_core.keyed`): put replaces a key's memory, pieces go together,
and bad keys are refused before anything is read or deleted."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from ramem_core import RaMem
from ramem_core.errors import InvalidInputError
from ramem_core.keyed import keyed_id


def test_put_replaces_a_key_with_its_episode_and_payload(memory: RaMem) -> None:
    at = datetime(2024, 5, 2, 9)
    memory.keyed.put("bike", "I sold my bike yesterday.", at=at, speaker="Ana", payload='{"v": 1}')
    memory.keyed.put("tea", "I like green tea.", at=at, payload="")
    [unit] = memory.keyed.get(["bike"]).values()
    assert unit.content == "Ana: I sold my bike yesterday."
    assert unit.payload == '{"v": 1}'  # through Chroma's metadata and back
    assert unit.context.event_time is not None
    assert unit.context.event_time.start == datetime(2024, 5, 1)
    memory.keyed.put("bike", "I bought a new bike.", at=at + timedelta(days=1), payload='{"v": 2}')
    assert memory.count() == 2
    [again] = memory.keyed.get(["bike"]).values()
    assert again.payload == '{"v": 2}'
    assert again.content == "user: I bought a new bike."
    assert memory.recall("Which bike did I buy?", k=1)[0].unit.id == again.id
    assert set(memory.keyed.get(["bike", "tea", "none"])) == {"bike", "tea"}


def test_a_long_keyed_text_is_replaced_whole(memory: RaMem) -> None:
    at = datetime(2024, 5, 2, 9)
    memory.keyed.put("doc", "A long note about gardens. " * 120, at=at)
    assert memory.count() > 2
    memory.keyed.put("doc", "Short now.", at=at)
    assert memory.count() == 1
    assert memory.keyed.delete(["doc", "never"]) == 1
    assert memory.count() == 0


def test_put_refuses_bad_input_and_writes_nothing(memory: RaMem) -> None:
    at = datetime(2024, 5, 2, 9)
    for kwargs, message in [
        ({"key": "", "text": "x"}, "key must be a non-empty string"),
        ({"key": "k", "text": "  "}, "text of key 'k'"),
        ({"key": "k", "text": "x", "payload": {"a": 1}}, "payload must be a string"),
    ]:
        with pytest.raises(InvalidInputError, match=message):
            memory.keyed.put(at=at, **kwargs)  # type: ignore[arg-type]
    assert memory.store.namespaces() == []


@pytest.mark.parametrize("keys", ["profile", b"profile", None, 3, [""], ["ok", 7]])
def test_bad_keys_are_refused_and_nothing_is_deleted(memory: RaMem, keys: object) -> None:
    """A lone string is not a list of keys: read one character at a time it would delete the
    key "p" and keep "profile"."""
    at = datetime(2024, 5, 2, 9)
    memory.keyed.put("profile", "I am vegetarian.", at=at)
    memory.keyed.put("p", "A key named p.", at=at)
    with pytest.raises(InvalidInputError, match="key"):
        memory.keyed.delete(keys)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="key"):
        memory.keyed.get(keys)  # type: ignore[arg-type]
    assert set(memory.keyed.get(["profile", "p"])) == {"profile", "p"}


def test_items_are_the_first_pieces_of_every_key(memory: RaMem) -> None:
    at = datetime(2024, 5, 2, 9)
    memory.keyed.put("doc", "A long note about gardens. " * 120, at=at)
    memory.keyed.put("tea", "I like green tea.", at=at)
    memory.add_turn("user", "A plain turn, not keyed.", at=at)
    assert memory.count() > 3
    items = memory.keyed.items()
    assert sorted(u.id for u in items) == sorted([keyed_id("doc"), keyed_id("tea")])
    assert memory.keyed.items(namespace="nobody") == []


def test_keys_put_minutes_apart_lend_each_other_their_words(memory: RaMem) -> None:
    """A keyed memory's turn index is its second of the day: two puts a minute apart are
    still neighbours (they have no place in a dialogue to measure)."""
    at = datetime(2024, 5, 2, 9)
    memory.keyed.put("bike", "I sold my bike yesterday.", at=at)
    memory.keyed.put("tea", "Green tea every morning.", at=at + timedelta(minutes=1))
    snap = memory.snapshots.get(memory.namespace)
    tea = snap.position[keyed_id("tea")]
    assert snap.index.lexical_scores("bike")[tea] > 0.0
