"""The facade: idempotent ingest, persistence, live turns, deletion, and bad input."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from ramem_core import (
    ChromaStore,
    Conversation,
    ConversationFormatError,
    Granularity,
    InvalidInputError,
    Kind,
    MemoryUnit,
    RaMem,
    RetrievalConfig,
    Session,
    StoreError,
    TimeSpan,
    Turn,
)
from ramem_core.testing import FakeLLM, HashEmbedder, WordCounter
from tests.builders import conversation, ids, session
from tests.conftest import two_trips


def test_reingest_changes_nothing(memory: RaMem) -> None:
    first = memory.add_conversation(two_trips())
    ids = sorted(u.id for u in memory.store.get(memory.namespace))
    second = memory.add_conversation(two_trips())
    assert (first.units, first.new_units) == (6, 6)
    assert (second.units, second.new_units) == (6, 0)
    assert sorted(u.id for u in memory.store.get(memory.namespace)) == ids


def test_two_ephemeral_memories_of_one_process_never_share_memories() -> None:
    """Chroma keeps one in-memory system per process; each ephemeral memory is a database of
    its own in it (a notebook cell run twice does not find the first run's memories), and
    closing one drops its memories and leaves the other's."""
    at = datetime(2024, 5, 1, 9)
    first = RaMem.ephemeral(embedder=HashEmbedder(), counter=WordCounter())
    second = RaMem.ephemeral(embedder=HashEmbedder(), counter=WordCounter())
    first.add_turn("user", "I keep twelve houseplants on my balcony.", at=at)
    assert second.recall("houseplants balcony", k=5).evidence == ()
    assert not second.has_namespace("default")
    second.add_turn("user", "I ride a red bicycle to work.", at=at)
    import chromadb

    from ramem_core.store.chroma import ChromaStore, client_settings

    assert isinstance(first.store, ChromaStore)
    database = first.store._database
    admin = chromadb.AdminClient(client_settings())
    assert database is not None
    assert admin.get_database(database)["name"] == database
    first.close()
    with pytest.raises(chromadb.errors.NotFoundError):
        admin.get_database(database)  # its memories are gone with it
    assert [e.unit.content for e in second.recall("bicycle", k=5).evidence] == [
        "user: I ride a red bicycle to work."
    ]
    again = RaMem.ephemeral(embedder=HashEmbedder(), counter=WordCounter())
    assert again.recall("houseplants balcony", k=5).evidence == ()
    second.close()
    again.close()


def test_memories_persist_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "db"
    RaMem.open(path, embedder=HashEmbedder()).add_conversation(two_trips())
    reopened = RaMem.open(path, embedder=HashEmbedder(), counter=WordCounter())
    assert reopened.count() == 6
    [top] = reopened.recall("Where did Ben eat grilled sardines by the river in August?", k=1)
    assert top.unit.source_ids == ("S3:1",)  # BM25 rebuilt from Chroma after the restart
    assert top.unit.context.session_span is not None
    assert top.unit.context.session_span.start == datetime(2023, 8, 28, 21, 0)


def test_unit_round_trips_through_chroma(memory: RaMem) -> None:
    conversation = Conversation(
        "c",
        (
            Session(
                "s",
                (Turn("t1", "Ann", "Yesterday I met Bob in Paris.", None, "a cat"),),
                datetime(2023, 5, 8, 10),
            ),
        ),
        ("Ann", "Bob"),
    )
    [original] = memory.anchorer.anchor(conversation)
    memory.add_conversation(conversation)
    [stored] = memory.store.get(memory.namespace)
    assert stored == original
    assert stored.context.participants == ("Ann", "Bob")
    assert stored.context.location == "Paris"
    assert stored.content == "Ann: Yesterday I met Bob in Paris. [shares an image: a cat]"


def test_embedder_mismatch_is_refused(tmp_path: Path) -> None:
    RaMem.open(tmp_path, embedder=HashEmbedder(64)).add_conversation(two_trips())

    class Other(HashEmbedder):
        name = "other-model"

    with pytest.raises(StoreError, match="holds 64-dimensional vectors of 'hash-embedder'"):
        RaMem.open(tmp_path, embedder=Other(64)).count()


def test_an_embedder_of_another_dimension_is_refused_at_open(tmp_path: Path) -> None:
    with RaMem.open(tmp_path, embedder=HashEmbedder(64)) as memory:
        memory.add_conversation(two_trips())
    with (
        RaMem.open(tmp_path, embedder=HashEmbedder(32)) as memory,
        pytest.raises(StoreError, match="64-dimensional vectors of 'hash-embedder', not 32"),
    ):
        memory.recall("Where did Ben go?")


# ---------------------------------------------------------------- live turns


def test_add_turn_opens_sessions_by_time_gap(memory: RaMem) -> None:
    t0 = datetime(2023, 6, 1, 9, 0)
    a = memory.add_turn("user", "I adopted a cat named Miso yesterday.", at=t0)
    b = memory.add_turn("assistant", "Congratulations on Miso!", at=t0 + timedelta(minutes=2))
    c = memory.add_turn("user", "Miso knocked over a vase.", at=t0 + timedelta(days=3))
    assert a.context.session_id == b.context.session_id != c.context.session_id
    assert a.context.event_time is not None
    assert a.context.event_time.start.date().isoformat() == "2023-05-31"
    # what is stored is never rewritten: the first turn keeps the span it was written with
    [stored_a] = memory.store.get(memory.namespace, ids=[a.id])
    assert stored_a.context.session_span == TimeSpan(t0, t0, Granularity.INSTANT)
    # and readers see the session's whole span on every one of its turns
    spans = {e.unit.id: e.unit.context.session_span for e in memory.recall("Miso", k=3)}
    assert (
        spans[a.id] == spans[b.id] == TimeSpan(t0, t0 + timedelta(minutes=2), Granularity.INSTANT)
    )
    fresh = RaMem(memory.store)  # another worker, from the store alone
    assert {e.unit.id: e.unit.context.session_span for e in fresh.recall("Miso", k=3)} == spans
    assert [u.context.turn_index for u in (a, b, c)] == [0, 1, 0]


def test_add_turn_explicit_session_and_timezones(memory: RaMem) -> None:
    at = datetime(2023, 6, 1, 11, 0, tzinfo=timezone(timedelta(hours=2)))
    a = memory.add_turn("user", "hello", at=at)
    memory.end_session()
    b = memory.add_turn("user", "hello again", at=at + timedelta(minutes=1))
    assert a.context.session_id != b.context.session_id
    assert a.context.session_span is not None
    assert a.context.session_span.start == datetime(2023, 6, 1, 9, 0)  # stored as UTC


def test_one_instant_is_stored_the_same_from_a_file_and_from_add_turn(
    memory: RaMem, tmp_path: Path
) -> None:
    path = tmp_path / "tz.json"
    doc = {
        "id": "tz",
        "sessions": [
            {
                "id": "s1",
                "time": "2023-05-01T18:30:00+05:00",
                "turns": [{"id": "t1", "speaker": "Ann", "text": "I booked the flight."}],
            }
        ],
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    memory.add_file(path)
    live = memory.add_turn(
        "Ann",
        "I paid for it.",
        at=datetime(2023, 5, 1, 18, 30, tzinfo=timezone(timedelta(hours=5))),
    )
    [stored] = [u for u in memory.store.get("default") if u.context.conversation_id == "tz"]
    assert stored.context.session_span is not None
    assert live.context.session_span is not None
    assert stored.context.session_span.start == datetime(2023, 5, 1, 13, 30)  # UTC
    assert live.context.session_span.start == stored.context.session_span.start


def test_live_sessions_of_two_namespaces_never_mix(memory: RaMem) -> None:
    start = datetime(2023, 9, 1, 10, 0)
    memory.add_turn("user", "I am in Oslo.", at=start, namespace="alice")
    memory.add_turn("user", "I am in Rome.", at=start + timedelta(minutes=5), namespace="bob")
    bob = memory.add_turn("user", "Still Rome.", at=start + timedelta(minutes=6), namespace="bob")
    assert bob.context.turn_index == 1  # bob's second turn, not alice's third
    assert bob.context.session_span is not None
    assert bob.context.session_span.start == start + timedelta(minutes=5)
    assert {u.content for u in memory.store.get("bob")} == {
        "user: I am in Rome.",
        "user: Still Rome.",
    }


def test_add_turn_continues_after_restart(tmp_path: Path) -> None:
    t0 = datetime(2023, 6, 1, 9, 0)
    first = RaMem.open(tmp_path, embedder=HashEmbedder())
    a = first.add_turn("user", "one", at=t0)
    second = RaMem.open(tmp_path, embedder=HashEmbedder())
    b = second.add_turn("user", "two", at=t0 + timedelta(minutes=5))
    assert a.context.session_id == b.context.session_id
    assert a.id != b.id
    assert second.count() == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"speaker": "", "text": "hi"}, "speaker is empty"),
        ({"speaker": "user", "text": "   "}, "is empty"),
        ({"speaker": "user", "text": "x" * 1_000_001}, "limit"),
    ],
)
def test_add_turn_rejects_bad_input(memory: RaMem, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        memory.add_turn(at=datetime(2023, 1, 1), **kwargs)
    assert memory.count() == 0


def test_add_turn_needs_a_datetime(memory: RaMem) -> None:
    with pytest.raises(InvalidInputError, match="at must be a datetime"):
        memory.add_turn("user", "hi", at="yesterday")  # type: ignore[arg-type]


# ---------------------------------------------------------------- deletion


def test_delete_by_unit_session_conversation_and_namespace(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    memory.add_conversation(two_trips(), namespace="other")
    some = memory.recall("sardines", k=1)[0].unit
    assert memory.delete(unit_ids=[some.id]) == 1
    assert memory.delete(session_id="S1") == 2
    assert memory.count() == 3
    assert memory.delete(conversation_id="friends") == 3
    assert memory.count() == 0
    assert memory.count(namespace="other") == 6  # other tenant untouched
    memory.drop(namespace="other")
    assert "other" not in memory.store.namespaces()
    with pytest.raises(InvalidInputError):
        memory.delete()


def test_deleted_memories_are_never_served_again(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    query = "grilled sardines by the river"
    before = memory.recall(query, k=6)  # the snapshot is cached now
    assert "S2:1" in {e.unit.source_ids[0] for e in before}
    assert memory.delete(session_id="S2") == 2
    after = memory.recall(query, k=6)
    assert {e.unit.context.session_id for e in after} == {"S1", "S3"}


@pytest.mark.parametrize(
    "target",
    [
        {"session_id": {"$ne": "x"}},
        {"conversation_id": {"$in": ["friends"]}},
        {"session_id": ""},
        {"unit_ids": "abc"},
        {"unit_ids": [{"$ne": "x"}]},
    ],
)
def test_delete_takes_plain_values_only(memory: RaMem, target: dict[str, object]) -> None:
    memory.add_conversation(two_trips())
    with pytest.raises(InvalidInputError, match="must be"):
        memory.delete(**target)  # type: ignore[arg-type]
    assert memory.count() == 6  # nothing lost


def test_a_session_is_deleted_within_its_conversation(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    other = two_trips()
    memory.add_conversation(Conversation("neighbours", other.sessions, other.participants))
    with pytest.raises(InvalidInputError, match="exists in conversations 'friends', 'neighbours'"):
        memory.delete(session_id="S1")
    assert memory.count() == 12
    assert memory.delete(session_id="S1", conversation_id="neighbours") == 2
    kept = {(u.context.conversation_id, u.context.session_id) for u in memory.store.get("default")}
    assert ("friends", "S1") in kept
    assert ("neighbours", "S1") not in kept


# ---------------------------------------------------------------- bad input loses nothing


def test_bad_conversation_writes_nothing(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    broken = {
        "id": "new",
        "sessions": [
            {"id": "a", "time": "2023-09-01", "turns": [{"id": "1", "speaker": "X", "text": "ok"}]},
            {
                "id": "b",
                "time": "2023-09-02",
                "turns": [{"id": "1", "speaker": "X", "text": "dup"}],
            },
        ],
    }
    with pytest.raises(ConversationFormatError, match="duplicate turn id"):
        memory.add_conversation(broken)
    assert memory.count() == 6


def test_failed_write_rolls_back(store: ChromaStore, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = RaMem(store, counter=WordCounter())
    memory.add_conversation(two_trips())
    collection = store.collection(memory.namespace)
    calls = {"n": 0}
    original = collection.upsert

    def flaky(**kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk full")
        original(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("ramem_core.store.chroma.max_write_batch", lambda store: 2)
    monkeypatch.setattr(collection, "upsert", flaky)
    bigger = Conversation(
        "big",
        (Session("B", tuple(Turn(f"B:{i}", "Z", f"turn {i}") for i in range(5)), None),),
    )
    with pytest.raises(StoreError, match="disk full"):
        memory.add_conversation(bigger)
    assert memory.count() == 6


def test_missing_session_time_is_unknown_not_invented(memory: RaMem) -> None:
    memory.add_conversation(
        {
            "id": "c",
            "sessions": [
                {"id": "s", "turns": [{"id": "1", "speaker": "A", "text": "I saw it yesterday."}]}
            ],
        }
    )
    [unit] = memory.store.get(memory.namespace)
    assert unit.context.session_span is None
    assert unit.context.event_time is None  # "yesterday" has nothing to resolve against
    assert memory.frame("What happened last week?").now is None


def test_answer_passes_situated_evidence_to_the_llm(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    llm = FakeLLM("grilled sardines and ramen")
    result = memory.answer("What did Ben eat in August?", llm=llm, k=2)
    assert result.text == "grilled sardines and ramen"
    [prompt] = llm.prompts
    assert 'said="28 August 2023, 21:00"' in prompt
    assert "Question time: 28 August 2023" in prompt
    assert result.context.included[0].unit.source_ids == ("S3:1",)


def test_answer_without_llm_is_a_clear_error(memory: RaMem) -> None:
    with pytest.raises(InvalidInputError, match="needs an LLM"):
        memory.answer("anything")


def test_invalid_namespace_is_refused(memory: RaMem) -> None:
    with pytest.raises(InvalidInputError, match="invalid namespace"):
        memory.recall("x", namespace="../etc")


def test_id_lookups_stay_under_sqlite_variable_limits(memory: RaMem) -> None:
    # one statement with more ids than SQLite's variable limit (32766) used to fail
    memory.add_conversation(two_trips())
    stored = [u.id for u in memory.store.get(memory.namespace)]
    many = [f"missing-{i}" for i in range(40_000)] + stored
    assert isinstance(memory.store, ChromaStore)
    assert sorted(memory.store.existing_ids(memory.namespace, many)) == sorted(stored)
    assert len(memory.store.get(memory.namespace, ids=many)) == 6
    assert memory.delete(unit_ids=many) == 6


def test_own_writes_update_the_snapshot_without_reloading(
    memory: RaMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.add_conversation(two_trips())
    memory.recall("sardines", k=1)  # builds the snapshot from Chroma once

    def no_reload(namespace: str) -> None:
        raise AssertionError("snapshot reloaded from Chroma")

    t0 = datetime(2023, 9, 1, 9, 0)
    monkeypatch.setattr(memory.store, "load", no_reload)
    memory.add_turn("Ben", "I ate sardines again yesterday.", at=t0)
    memory.add_turn("Ben", "And grilled ramen today.", at=t0 + timedelta(minutes=3))
    query = "When did Ben eat sardines again?"
    mine = memory.recall(query, k=8)
    monkeypatch.undo()
    fresh = RaMem(memory.store, counter=WordCounter()).recall(query, k=8)
    assert [e.unit for e in mine] == [e.unit for e in fresh]
    first_turn = next(e.unit for e in mine if e.unit.content.startswith("Ben: I ate sardines"))
    assert first_turn.context.session_span is not None
    assert first_turn.context.session_span.end == t0 + timedelta(minutes=3)  # grown in place


def test_reads_of_an_unknown_namespace_are_empty_and_never_create_it(memory: RaMem) -> None:
    """A new user's reads are empty, not errors (issue 30)."""
    memory.add_conversation(two_trips())
    found = memory.recall("sardines last August", k=3, namespace="nobody")
    assert list(found) == []
    assert not found.frame.is_grounded
    assert not memory.frame("sardines", namespace="nobody").is_grounded
    assert memory.count(namespace="nobody") == 0
    assert memory.delete(conversation_id="friends", namespace="nobody") == 0
    assert memory.store.get("nobody") == []
    assert memory.situate("sardines", namespace="nobody").text == ""
    assert memory.store.namespaces() == ["default"]
    assert not memory.store.has_namespace("nobody")


# ---------------------------------------------------------------- live use


@pytest.mark.parametrize(
    "at",
    [
        datetime.max,
        datetime.min,
        datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-5))),
        datetime(1066, 10, 14),
    ],
)
def test_an_absurd_timestamp_is_refused_and_breaks_nothing(memory: RaMem, at: datetime) -> None:
    memory.add_conversation(two_trips())
    with pytest.raises(InvalidInputError, match=r"^at "):
        memory.add_turn("Ben", "hello", at=at)
    with pytest.raises(InvalidInputError, match=r"^at "):
        memory.recall("sardines", k=1, at=at)
    assert memory.count() == 6
    assert memory.recall("What did Ben eat in August?", k=1)  # the namespace still works


def test_two_writers_on_one_conversation_lose_nothing(store: ChromaStore) -> None:
    first, second = RaMem(store), RaMem(store)
    start = datetime(2023, 9, 1, 10, 0)
    for i in range(10):  # interleaved, as two workers recording one user would
        first.add_turn("user", f"message {i} from worker one", at=start + timedelta(minutes=i))
        second.add_turn("user", f"message {i} from worker two", at=start + timedelta(minutes=i))
    assert first.count() == 20
    contents = {u.content for u in store.get("default")}
    assert "user: message 9 from worker one" in contents
    assert "user: message 9 from worker two" in contents


def test_live_questions_after_an_imported_history_still_ground(memory: RaMem) -> None:
    # a 2023 history with one dentist visit in August, then a live exchange in late 2026
    dentist = session(
        "D", datetime(2023, 8, 14, 9, 0), "user: The dentist said my gums look much better."
    )
    memory.add_conversation(conversation("history", *two_trips().sessions, dentist))
    question = "What did my dentist say in August?"
    asked = memory.add_exchange(
        question, "Let me check.", at=datetime(2026, 12, 3, 10, 0), conversation_id="chat"
    )
    assert asked[0].context.event_time is None  # the question is not an August event
    assert asked[0].context.mentions == ()
    frame = memory.frame(question)
    [august] = frame.grounded_times
    assert august.window is not None
    assert august.window.start == datetime(2023, 8, 1)  # the August memory covers
    top = memory.recall(question, k=3)
    assert "D:1" in {e.unit.source_ids[0] for e in top}


def test_namespaces_with_different_embedders_share_a_directory(tmp_path: Path) -> None:
    class Small(HashEmbedder):
        name = "small-hash"

    with RaMem.open(tmp_path / "db", embedder=HashEmbedder(), counter=WordCounter()) as first:
        first.add_turn("user", "hello", at=datetime(2023, 1, 1))
    with RaMem.open(
        tmp_path / "db", embedder=Small(dimension=16), namespace="small", counter=WordCounter()
    ) as second:
        second.add_turn("user", "hello again", at=datetime(2023, 1, 1))
        assert second.count() == 1
        assert second.recall("hello", k=1)[0].unit.content == "user: hello again"


def test_live_turns_update_the_snapshot_without_rebuilding_it(
    memory: RaMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ramem_core.index import snapshot

    memory.add_conversation(two_trips())
    memory.recall("sardines", k=1)  # cached
    at = datetime(2023, 9, 1, 10, 0)
    memory.add_turn("Ben", "We booked a pottery class.", at=at)

    def no_rebuild(*args: object, **kwargs: object) -> None:
        raise AssertionError("the snapshot was rebuilt")

    monkeypatch.setattr(snapshot.Snapshot, "__init__", no_rebuild)
    for minute in range(1, 4):
        memory.add_turn("Alice", f"Pottery note {minute}.", at=at + timedelta(minutes=minute))
    top = memory.recall("pottery class", k=5)
    assert {e.unit.content for e in top} >= {
        "Ben: We booked a pottery class.",
        "Alice: Pottery note 3.",
    }


def test_a_failed_live_write_leaves_the_session_as_it_was(
    memory: RaMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    t0 = datetime(2023, 6, 1, 9, 0)
    memory.add_turn("user", "I planted tomatoes.", at=t0)

    def crash(*args: object, **kwargs: object) -> int:
        raise StoreError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(memory.store, "upsert", crash)
        with pytest.raises(StoreError):
            memory.add_turn("user", "This one is lost.", at=t0 + timedelta(minutes=1))
    after = memory.add_turn("user", "I watered them.", at=t0 + timedelta(minutes=2))
    assert after.context.turn_index == 1  # the failed turn took no place in the session
    stored = memory.store.get(memory.namespace)
    assert sorted(u.content for u in stored) == [
        "user: I planted tomatoes.",
        "user: I watered them.",
    ]
    spans = {e.unit.context.session_span for e in memory.recall("tomatoes", k=2)}
    assert spans == {TimeSpan(t0, t0 + timedelta(minutes=2), Granularity.INSTANT)}


def test_control_characters_are_dropped_from_what_is_stored(memory: RaMem, tmp_path: Path) -> None:
    live = memory.add_turn("Ann", "tea\x02 at\x00 five\x1b", at=datetime(2023, 5, 1, 9, 0))
    assert live.content == "Ann: tea at five"
    doc = {
        "id": "c",
        "sessions": [
            {
                "id": "s",
                "turns": [{"id": "t", "speaker": "Bo", "text": "a\x07b", "image_caption": "x\x7f"}],
            }
        ],
    }
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    memory.add_file(path)
    stored = {u.content for u in memory.store.get(memory.namespace)}
    assert stored == {"Ann: tea at five", "Bo: ab [shares an image: x]"}


def test_situate_keeps_the_end_of_an_overlong_chat_message(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    pasted = "lorem ipsum " * 2_000  # a long paste, then the question
    message = pasted + "What did Ben eat in Lisbon?"
    assert len(message) > 20_000
    with pytest.raises(InvalidInputError, match="limit 4,000"):
        memory.recall(message)
    block = memory.situate(message, k=2)
    assert "sardines" in block.text


KILLED_WRITER = """
import sys
import time
from datetime import datetime
from ramem_core import ChromaStore, Conversation, RuleAnchorer, Session, Turn
from ramem_core.testing import HashEmbedder
turns = tuple(Turn(f"t{i}", "Ann", f"note {i} about the garden") for i in range(int(sys.argv[2])))
units = RuleAnchorer().anchor(Conversation("big", (Session("s1", turns, datetime(2023, 5, 1)),)))
store = ChromaStore.persistent(sys.argv[1], HashEmbedder())
vectors = store.embedder.embed([u.content for u in units])
store.count("default")
print("writing", flush=True)
start = time.perf_counter()
store.upsert("default", units, vectors)
print(f"done {time.perf_counter() - start:.3f}", flush=True)
"""


@pytest.mark.parametrize("delay", [0.2, 0.4, 0.6])  # kills land in the Chroma write
def test_a_kill_during_an_ingest_leaves_all_of_it_or_none(tmp_path: Path, delay: float) -> None:
    import signal
    import subprocess
    import sys
    import time

    from ramem_core.store.chroma import max_write_batch

    size = 3000
    store = ChromaStore.persistent(tmp_path / "probe", HashEmbedder())
    assert size <= max_write_batch(store)  # one Chroma call: one transaction
    store.close()
    with subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(tmp_path / "db"), str(size)],
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "writing"
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    with RaMem.open(tmp_path / "db", embedder=HashEmbedder()) as memory:
        stored = memory.count() if memory.store.has_namespace("default") else 0
        assert stored in (0, size)
        if stored:
            assert len(memory.recall("garden note", k=5)) == 5


def test_a_pasted_document_is_stored_whole_and_found(memory: RaMem) -> None:
    """A turn far longer than the embedder reads (LongMemEval_S holds a 76,560-character
    one) is refused by nothing and found by a fact deep inside it."""
    filler = " ".join(f"Section {i} covers routine maintenance of the boiler." for i in range(1400))
    text = f"{filler} The landlord agreed to repaint the balcony railing in May. {filler}"
    assert len(text) > 76_560
    first = memory.add_turn("user", text, at=datetime(2023, 5, 30, 23, 40))
    stored = memory.store.get(memory.namespace)
    assert len(text) // 1_000 + 1 <= len(stored) <= len(text) // 500 + 1
    assert {u.source_ids for u in stored} == {first.source_ids}
    top = memory.recall("Who agreed to repaint the balcony railing?", k=1)[0]
    assert "repaint the balcony railing" in top.unit.content
    assert top.unit.source_ids == first.source_ids


async def test_the_async_api_runs_off_the_event_loop(
    memory: RaMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    loop_thread = threading.get_ident()
    seen: dict[str, int] = {}
    for name in ("recall", "situate", "add_turn", "add_exchange"):
        method = getattr(memory, name)

        def spy(*args: Any, _name: str = name, _method: Any = method, **kwargs: Any) -> Any:
            seen[_name] = threading.get_ident()
            return _method(*args, **kwargs)

        monkeypatch.setattr(memory, name, spy)
    at = datetime(2023, 5, 1, 9, 0)
    unit = await memory.aadd_turn("Ann", "I adopted a cat named Biscuit.", at=at)
    pair = await memory.aadd_exchange("What is my cat called?", "Biscuit.", at=at)
    found = await memory.arecall("What is the cat called?", k=3)
    block = await memory.asituate("What is the cat called?", k=3)
    assert unit.content == "Ann: I adopted a cat named Biscuit."
    assert len(pair) == 2
    assert unit.id in {e.unit.id for e in found}
    assert "Biscuit" in block.text
    assert set(seen) == {"recall", "situate", "add_turn", "add_exchange"}
    assert loop_thread not in set(seen.values())  # every call ran in a worker thread


# ---------------------------------------------------------------- what an agent records


def _camping(memory: RaMem) -> MemoryUnit:
    fact = memory.add_turn(
        "user", "I went camping in the Alps with my sister Jo.", at=datetime(2024, 8, 17, 10)
    )
    memory.add_turn("user", "My dentist appointment is on Friday.", at=datetime(2024, 8, 20, 10))
    memory.add_exchange(
        "Who went camping with me in the Alps?",
        "Last weekend (= 30 November 2024 - 1 December 2024) you went camping in the Alps "
        'with your sister Jo. <memory n="1" said="17 August 2024, 10:00">user: I went camping '
        "in the Alps with my sister Jo.</memory>",
        at=datetime(2024, 12, 3, 10),
    )
    return fact


def test_a_reply_is_stored_as_a_reply_without_what_it_echoed(memory: RaMem) -> None:
    _camping(memory)
    by_kind = {u.context.kind: u for u in memory.store.get(memory.namespace)}
    reply, question = by_kind[Kind.REPLY], by_kind[Kind.QUESTION]
    assert reply.content == (
        "assistant: Last weekend you went camping in the Alps with your sister Jo."
    )  # no echoed memory, tag, coordinates or resolved-time note
    assert reply.context.event_time is None  # its "last weekend" restates a memory
    assert reply.context.mentions == ()
    assert question.context.event_time is None
    assert {u.context.kind for u in memory.store.get(memory.namespace)} == {
        Kind.STATEMENT,
        Kind.QUESTION,
        Kind.REPLY,
    }


@pytest.mark.parametrize(
    "query", ["Who went camping with me in the Alps?", "Did I go camping last weekend?"]
)
def test_a_recorded_question_or_reply_never_outranks_what_it_restates(
    memory: RaMem, query: str
) -> None:
    fact = _camping(memory)
    found = memory.recall(query, k=4)
    assert found[0].unit.id == fact.id
    assert [e.score for e in found] == sorted((e.score for e in found), reverse=True)
    plain = RaMem(memory.store, counter=WordCounter(), config=RetrievalConfig(derived_last=None))
    assert plain.recall(query, k=4)[0].unit.context.kind is not Kind.STATEMENT  # without it


def test_a_reply_about_something_else_keeps_its_place(memory: RaMem) -> None:
    memory.add_turn(
        "user", "I went camping in the Alps with my sister Jo.", at=datetime(2024, 8, 1)
    )
    memory.add_exchange(
        "Any tips for sourdough bread?",
        "Feed the sourdough starter daily and bake the bread hot.",
        at=datetime(2024, 12, 3, 10),
    )
    found = memory.recall("How do I bake sourdough bread?", k=3)
    kinds = [e.unit.context.kind for e in found]
    # nothing it restates is in the list: ranked among the replies, it takes the place of
    # the statement of its rank (the lone statement first)
    assert kinds[:2] == [Kind.STATEMENT, Kind.REPLY]
    config = RetrievalConfig(derived_yield_all=True)
    every = RaMem(memory.store, counter=WordCounter(), config=config)
    kinds = [e.unit.context.kind for e in every.recall("How do I bake sourdough bread?", k=3)]
    assert kinds == [Kind.STATEMENT, Kind.REPLY, Kind.QUESTION]  # every reply yields


def test_an_echo_only_reply_is_refused_and_kind_is_checked(memory: RaMem) -> None:
    at = datetime(2024, 12, 3, 10)
    with pytest.raises(InvalidInputError, match="nothing but echoed memories"):
        memory.add_turn("assistant", '<memory n="1">user: hi</memory>', at=at, kind=Kind.REPLY)
    with pytest.raises(InvalidInputError, match="kind must be a Kind"):
        memory.add_turn("user", "hello", at=at, kind="reply")  # type: ignore[arg-type]
    assert memory.store.namespaces() == []


def test_add_turn_stores_a_conversations_question_as_a_statement(memory: RaMem) -> None:
    """Between people a question carries the conversation; only a question put to the agent
    (add_exchange) is a question."""
    at = datetime(2023, 5, 8, 10)
    said = memory.add_turn("Ana", "Did you finish the sunset painting yesterday?", at=at)
    assert said.context.kind is Kind.STATEMENT
    assert said.context.event_time is not None  # "yesterday" resolved, as in a bulk ingest
    [asked, _] = memory.add_exchange("What did I paint yesterday?", "A sunset.", at=at)
    assert asked.context.kind is Kind.QUESTION
    assert asked.context.event_time is None


def _echoed(memory: RaMem) -> None:
    """Three statements, then the agent asked about camping three times, each reply restating
    the camping memory."""
    memory.add_turn(
        "user", "I went camping in the Alps with my sister Jo.", at=datetime(2024, 8, 17, 10)
    )
    memory.add_turn("user", "My dentist appointment is on Friday.", at=datetime(2024, 8, 20, 10))
    memory.add_turn("user", "I baked sourdough bread today.", at=datetime(2024, 9, 1, 10))
    for day in (1, 2, 3):
        memory.add_exchange(
            "Who went camping with me in the Alps?",
            "You went camping in the Alps with your sister Jo.",
            at=datetime(2024, 12, day, 10),
        )


def test_questions_and_replies_yield_the_top_places_to_statements(memory: RaMem) -> None:
    _echoed(memory)
    found = memory.recall("Who went camping with me in the Alps?", k=3)
    assert [e.unit.context.kind for e in found] == [Kind.STATEMENT] * 3
    assert "camping" in found[0].unit.content
    kept = RaMem(memory.store, counter=WordCounter(), config=RetrievalConfig(derived_yield=False))
    placed = kept.recall("Who went camping with me in the Alps?", k=3)
    assert placed[0].unit.id == found[0].unit.id  # the source first either way
    assert placed[1].unit.context.kind is not Kind.STATEMENT  # only after its source


def test_a_question_about_the_dialogue_finds_the_replies(memory: RaMem) -> None:
    _echoed(memory)
    frame = memory.frame("What did you tell me about camping in the Alps?")
    assert frame.asks_dialogue
    assert "asks what was said" in str(frame)
    found = memory.recall("What did you tell me about camping in the Alps?", k=4)
    assert Kind.REPLY in {e.unit.context.kind for e in found}
    asked = memory.recall("Who went camping with me in the Alps?", k=4)
    assert [e.unit.context.kind for e in asked][:3] == [Kind.STATEMENT] * 3


def test_a_recorded_question_is_not_the_answer_to_itself(memory: RaMem) -> None:
    memory.add_turn("user", "My dentist appointment is on Friday.", at=datetime(2024, 8, 20, 10))
    memory.add_turn("user", "I baked sourdough bread today.", at=datetime(2024, 9, 1, 10))
    memory.add_exchange(
        "What should I pack for Lisbon?",
        "Pack light clothes for Lisbon.",
        at=datetime(2024, 12, 3, 10),
    )
    found = memory.recall("What should I pack for Lisbon?", k=5)
    kinds = [e.unit.context.kind for e in found]
    assert kinds.index(Kind.REPLY) < kinds.index(Kind.QUESTION)  # the reply keeps a place
    assert kinds.index(Kind.QUESTION) > max(
        i for i, kind in enumerate(kinds) if kind is Kind.STATEMENT
    )
    kept = RaMem(memory.store, counter=WordCounter(), config=RetrievalConfig(derived_yield=False))
    assert kept.recall("What should I pack for Lisbon?", k=5)[0].unit.context.kind is (
        Kind.QUESTION
    )


@pytest.mark.parametrize(
    "query", ["What did Ben eat in Lisbon?", "What did the doctor say?", "Where did Alice go?"]
)
def test_recorded_exchanges_leave_the_statements_order_as_it_was(memory: RaMem, query: str) -> None:
    from tests.conftest import two_trips

    memory.add_conversation(two_trips())
    before = ids(memory.recall(query, k=8))
    for day, asked in enumerate(["What did Ben eat in Lisbon?", "What did the doctor say?"]):
        memory.add_exchange(
            asked, "From what you told me: sardines, and rest.", at=datetime(2024, 1, day + 1)
        )
    after = ids(memory.recall(query, k=8))
    stated = [u for u in after if u in set(before)]
    assert stated == before[: len(stated)]  # the statements keep their order
    assert len(stated) == 8 - sum(u not in set(before) for u in after)


def test_ingest_hands_the_embedder_its_texts_shortest_first(tmp_path: Path) -> None:
    """The writer embeds in length order, so its chunks make the batches one embed call over
    all the texts would (each batch padded to similar lengths: the embedder's own pace)."""
    calls: list[list[str]] = []

    class Recording(HashEmbedder):
        def embed(self, texts: Sequence[str]) -> Any:
            calls.append(list(texts))
            return super().embed(texts)

    lines = [
        "Ana: We finally booked the long trip to Lisbon for the whole family in August.",
        "Ben: Nice!",
        "Ana: The flights were cheaper than I expected.",
        "Ben: When do you leave?",
    ]
    with RaMem.open(tmp_path, embedder=Recording()) as memory:
        memory.add_conversation(conversation("c", session("s1", datetime(2024, 5, 1), *lines)))
    said = [text for call in calls for text in call]
    assert len(said) == len(lines)
    assert said == sorted(said, key=len)
