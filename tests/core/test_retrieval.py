"""Stage 3: valid memories rank first, relevant ones are never dropped, tenants never mix."""

from __future__ import annotations

from datetime import datetime

import pytest

from ramem_core import (
    ChromaStore,
    Conversation,
    RaMem,
    RecallFrame,
    RetrievalConfig,
)
from ramem_core.errors import InvalidInputError
from ramem_core.index.episodic import CONTENT_KEYS, EpisodicKeys
from ramem_core.retrieval import (
    CONTENT_ONLY,
)
from ramem_core.testing import WordCounter
from tests.builders import ids, session
from tests.conftest import content_only, two_trips

WRONG_EPISODE_QUERY = "Where did Ben eat grilled sardines by the river in August?"


def test_valid_episode_outranks_more_similar_wrong_episode(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    plain = content_only(memory.store).recall(WRONG_EPISODE_QUERY, k=3)
    valid = memory.recall(WRONG_EPISODE_QUERY, k=3)
    # content-only prefers the March memory: it shares more words with the query
    assert plain[0].unit.source_ids == ("S2:1",)
    # RaMem puts the August memory first and says why
    assert valid[0].unit.source_ids == ("S3:1",)
    assert valid[0].contextual
    assert any("August" in s or "in August" in s for s in valid[0].satisfied)
    # the relevant but invalid memory is not dropped
    assert "S2:1" in {sid for e in valid for sid in e.unit.source_ids}


def test_ungrounded_frame_falls_back_to_content(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    query = "Where did someone eat grilled sardines in 1999?"
    frame = memory.frame(query)
    assert not frame.is_grounded
    assert not any(e.contextual for e in memory.recall(query, k=4))
    # without episodic keys (and the learned fusion), RaMem's list is the content-only list
    no_keys = RaMem(memory.store, config=RetrievalConfig(keys=CONTENT_KEYS, fusion=None))
    plain_ids = ids(content_only(memory.store).recall(query, k=4))
    assert ids(no_keys.recall(query, k=4)) == plain_ids


def test_evidence_ranks_are_dense_and_sorted(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    evidence = memory.recall("blood pressure doctor", k=4)
    assert [e.rank for e in evidence] == [1, 2, 3, 4]
    assert len({e.unit.id for e in evidence}) == 4
    assert {e.unit.source_ids[0] for e in evidence[:2]} == {"S1:1", "S3:2"}


def test_k_is_honoured_and_validated(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    assert len(memory.recall("sardines", k=2)) == 2
    assert len(memory.recall("sardines", k=50)) == 6
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InvalidInputError, match="k must be a positive integer"):
            memory.recall("sardines", k=bad)  # type: ignore[arg-type]


def test_recall_on_a_new_or_an_emptied_namespace_returns_nothing(memory: RaMem) -> None:
    memory.add_turn("Ann", "I adopted a cat.", at=datetime(2023, 5, 1), namespace="other-tenant")
    found = memory.recall("anything at all last August", k=5)
    assert list(found) == []  # a new user: empty, never another tenant's memories
    assert "other-tenant" not in repr(found)
    memory.add_turn("Ann", "I moved to Lisbon.", at=datetime(2023, 5, 1))
    memory.delete(conversation_id="live")
    assert memory.count() == 0
    assert list(memory.recall("anything at all last August", k=5)) == []


def _other_conversation() -> Conversation:
    return Conversation(
        "other",
        (
            session(
                "X1", datetime(2023, 8, 2), "Carol: We ate grilled sardines in August by the river."
            ),
        ),
    )


@pytest.mark.parametrize(
    "config",
    [
        RetrievalConfig(lexical=False),
        RetrievalConfig(dense=False),
        RetrievalConfig(),
        CONTENT_ONLY,
    ],
    ids=["dense", "bm25", "contextual", "content"],
)
def test_namespaces_never_mix(store: ChromaStore, config: RetrievalConfig) -> None:
    memory = RaMem(store, config=config, counter=WordCounter())
    memory.add_conversation(two_trips(), namespace="tenant-a")
    memory.add_conversation(_other_conversation(), namespace="tenant-b")
    for query in (WRONG_EPISODE_QUERY, "grilled sardines", "What did Carol eat in August?"):
        b = memory.recall(query, k=10, namespace="tenant-b")
        assert {e.unit.context.conversation_id for e in b} == {"other"}
        a = memory.recall(query, k=10, namespace="tenant-a")
        assert {e.unit.context.conversation_id for e in a} <= {"friends"}
    assert memory.recall("grilled sardines", k=10, namespace="tenant-a")


def test_config_rejects_nonsense() -> None:
    with pytest.raises(InvalidInputError):
        RetrievalConfig(dense=False, lexical=False)
    with pytest.raises(InvalidInputError):
        RetrievalConfig(validity_pool=0)
    with pytest.raises(ValueError, match="non-negative"):
        EpisodicKeys(window=-1)


def test_frame_is_visible_to_users(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    frame = memory.frame(WRONG_EPISODE_QUERY)
    assert isinstance(frame, RecallFrame)
    assert frame.now == datetime(2023, 8, 28, 21, 0)
    assert [t.text for t in frame.grounded_times] == ["in August"]
    assert frame.participants == ()  # Ben speaks in every session: naming him selects nothing


def test_live_turns_keep_the_episodic_keys_current(memory: RaMem) -> None:
    at = datetime(2023, 5, 2, 18, 0)
    memory.add_turn("Alice", "I signed up for a pottery class downtown.", at=at)
    query = "How was the pottery class downtown?"
    memory.recall(query, k=3)  # the snapshot is cached now: later turns must update its keys
    reply = memory.add_turn("Ben", "Nice, how was the first evening?", at=at)
    later = memory.add_turn("Alice", "It was wonderful, I made a small bowl.", at=at)
    lexical = {e.unit.id: e.lexical_score for e in memory.recall(query, k=3)}
    assert lexical[reply.id]  # a neighbour of the turn that named the class
    assert lexical[later.id]  # two turns away, added after the first recall
    session = memory.snapshots.get(memory.namespace).index
    assert len(session.session_rows) == 1


def test_recall_reads_one_snapshot_for_its_frame_and_its_ranking(
    memory: RaMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that lands between the frame and the ranking is seen by both or by neither:
    one recall takes the namespace's snapshot once."""
    memory.add_conversation(two_trips())
    reads: list[object] = []
    get = memory.snapshots.get

    def counted(namespace: str, *, fresh: bool = False) -> object:
        snap = get(namespace, fresh=fresh)
        reads.append(snap)
        return snap

    monkeypatch.setattr(memory.snapshots, "get", counted)
    found = memory.recall("What did Alice do after the Lisbon holiday?", k=3)
    assert len(reads) == 1
    assert any(t.anchor_id for t in found.frame.times)  # the frame read it too
    assert found.frame.now == datetime(2023, 8, 28, 21, 0)  # the snapshot's last session end


@pytest.mark.parametrize(
    "bad",
    [
        {"window_slots": -1},
        {"validity_pool": 0},
        {"time_weight": -0.5},
        {"dense": False, "lexical": False},
    ],
)
def test_a_bad_retrieval_setting_is_named(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError, match=next(iter(bad))):
        RetrievalConfig(**bad)  # type: ignore[arg-type]
