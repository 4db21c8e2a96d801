"""Faults with an ambiguous outcome, injected deterministically at Chroma's collection API
(``_Patched``) or the store's: writes that were stored but reported failed, writes whose
outcome cannot be learned, loads that straddle deletes, raw Chroma errors, version records of
writers long gone."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.api.models.Collection import Collection
from chromadb.errors import InternalError

from ramem_core import RaMem, StoreError, UncertainWriteError
from ramem_core.store.chroma import MAX_VERSION_RECORDS, VERSION_ID, ChromaStore, client_settings
from ramem_core.testing import HashEmbedder, InMemoryStore, WordCounter
from tests.core.test_freshness import _Patched

T0 = datetime(2024, 3, 1, 9, 0)


def _patch(memory: RaMem, **methods: object) -> Collection:
    store = memory.store
    assert isinstance(store, ChromaStore)
    collection = store.collection(memory.namespace)
    store._collections[memory.namespace] = _Patched(collection, **methods)  # type: ignore[assignment]
    return collection


def _workers(tmp_path: Path) -> tuple[RaMem, RaMem]:
    """Two workers (writers) on one Chroma database, as two processes on a server are."""
    client = chromadb.PersistentClient(path=str(tmp_path), settings=client_settings())
    one, two = (
        RaMem(ChromaStore(client, HashEmbedder()), counter=WordCounter(), refresh_seconds=0)
        for _ in range(2)
    )
    return one, two


def _texts(memory: RaMem) -> list[str]:
    return [u.content for u in memory.snapshots.get(memory.namespace).units]


def test_a_write_stored_but_reported_failed_is_a_success_and_moves_the_sequence_on(
    tmp_path: Path,
) -> None:
    """The connection is lost after Chroma committed: the write is read back and reported
    stored, once; the writer's next write is seen by another worker (it once reused the
    sequence number, and stayed invisible)."""
    one, two = _workers(tmp_path)
    one.add_turn("Ana", "I bought a red bicycle.", at=T0)
    assert len(_texts(two)) == 1
    collection = one.store.collection("default")  # type: ignore[attr-defined]

    def commits_then_drops(**kwargs: Any) -> None:
        collection.upsert(**kwargs)
        raise ConnectionError("connection reset by peer")

    _patch(one, upsert=commits_then_drops)
    one.add_turn("Ana", "I painted the kitchen green.", at=T0 + timedelta(minutes=1))
    one.store._collections.clear()  # type: ignore[attr-defined]
    assert one.count() == 2
    one.add_turn("Ana", "I adopted a grey cat.", at=T0 + timedelta(minutes=2))
    assert sorted(_texts(two)) == sorted(_texts(one))
    assert len(_texts(two)) == 3


def test_a_write_of_unknown_outcome_says_so_and_a_retry_with_its_key_stores_once(
    tmp_path: Path,
) -> None:
    one, two = _workers(tmp_path)
    one.add_turn("Ana", "I bought a red bicycle.", at=T0)
    collection = one.store.collection("default")  # type: ignore[attr-defined]

    gone = threading.Event()  # the server is unreachable from the write on

    def reads(**kwargs: Any) -> Any:
        if gone.is_set():
            raise ConnectionError("server went away")
        return collection.get(**kwargs)

    def commits_then_drops(**kwargs: Any) -> None:
        collection.upsert(**kwargs)
        gone.set()
        raise ConnectionError("connection reset by peer")

    _patch(one, upsert=commits_then_drops, get=reads)
    with pytest.raises(UncertainWriteError, match="may have been stored") as caught:
        one.add_turn("Ana", "I painted the kitchen green.", at=T0 + timedelta(minutes=1))
    assert caught.value.ids
    assert caught.value.idempotency_key
    one.store._collections.clear()  # type: ignore[attr-defined]
    retried = one.add_turn(
        "Ana",
        "I painted the kitchen green.",
        at=T0 + timedelta(minutes=1),
        idempotency_key=caught.value.idempotency_key,
    )
    assert retried.id == caught.value.ids[0]
    assert retried.context.turn_index == 1  # the stored one, not a second placement
    assert one.count() == 2  # stored once, not twice
    assert len(_texts(two)) == 2
    one.add_turn("Ana", "I adopted a grey cat.", at=T0 + timedelta(minutes=2))
    assert len(_texts(two)) == 3  # the sequence never stalls behind the unknown write
    assert one.add_turn("Ana", "Hi", at=T0, idempotency_key="m1").id == (
        one.add_turn("Ana", "Hi", at=T0, idempotency_key="m1").id
    )
    assert one.count() == 4


def test_a_failed_part_of_a_split_write_is_undone_and_announced(tmp_path: Path) -> None:
    from unittest import mock

    from tests.core.test_freshness import _note

    one, two = _workers(tmp_path)
    one.add_conversation(_note("c0", "A first note.", 0))
    assert len(_texts(two)) == 1
    collection = one.store.collection("default")  # type: ignore[attr-defined]
    calls: list[int] = []

    def fails_second(**kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 2:
            assert len(_texts(two)) == 3  # a reader sees the first call's part
            raise ConnectionError("connection reset by peer")
        collection.upsert(**kwargs)

    _patch(one, upsert=fails_second)
    notes = [_note(f"c{i}", f"Note {i} about pottery.", i) for i in range(1, 5)]
    with (
        mock.patch("ramem_core.store.chroma.max_write_batch", return_value=3),
        pytest.raises(StoreError, match="the part that was stored is undone"),
    ):
        one.add_conversations(notes)
    assert one.count() == 1
    assert len(_texts(two)) == 1  # the reader that may have seen the part sees it gone


@pytest.mark.parametrize("backend", ["chroma", "fake"])
def test_a_load_that_straddles_a_delete_never_brings_it_back(backend: str, tmp_path: Path) -> None:
    store: ChromaStore | InMemoryStore = (
        ChromaStore.persistent(tmp_path, HashEmbedder())
        if backend == "chroma"
        else InMemoryStore(HashEmbedder())
    )
    memory = RaMem(store, counter=WordCounter(), refresh_seconds=3600)
    kept = memory.add_turn("Ana", "I bought a red bicycle.", at=T0)
    gone = memory.add_turn("Ana", "I painted the kitchen green.", at=T0 + timedelta(minutes=1))
    memory.snapshots.invalidate()
    load = store.load
    loaded, deleted = threading.Event(), threading.Event()

    def straddling_load(namespace: str) -> Any:
        found = load(namespace)  # read before the delete below
        loaded.set()
        assert deleted.wait(5)
        return found

    store.load = straddling_load  # type: ignore[method-assign]
    reader = threading.Thread(target=memory.recall, args=("bicycle",))
    reader.start()
    assert loaded.wait(5)
    memory.delete(unit_ids=[gone.id])
    deleted.set()
    reader.join()
    store.load = load  # type: ignore[method-assign]
    assert [u.id for u in memory.snapshots.get("default").units] == [kept.id]
    assert gone.id not in {e.unit.id for e in memory.recall("kitchen green", k=5)}


def test_a_raw_chroma_error_on_a_read_is_a_store_error_naming_it(tmp_path: Path) -> None:
    with RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter()) as memory:
        memory.add_turn("Ana", "I bought a red bicycle.", at=T0)
        memory.snapshots.invalidate()

        collection = memory.store.collection("default")  # type: ignore[attr-defined]

        def races(**kwargs: Any) -> Any:
            if "embeddings" in kwargs.get("include", ()):  # the load, not the version
                raise InternalError("Error finding id")
            return collection.get(**kwargs)

        def count() -> int:
            raise InternalError("Error finding id")

        _patch(memory, get=races, count=count)
        with pytest.raises(StoreError, match=r"reading the memories .* InternalError: Error"):
            memory.recall("bicycle")
        with pytest.raises(StoreError, match="counting the memories"):
            memory.count()


def test_version_records_stay_bounded_however_many_writers_came_and_went() -> None:
    client = chromadb.EphemeralClient(client_settings())
    reader = RaMem(ChromaStore(client, HashEmbedder()), counter=WordCounter(), namespace="vr")
    reader.snapshots.refresh_seconds = 0
    for minute in range(3 * MAX_VERSION_RECORDS):  # a writer lifetime each (CLI runs)
        writer = RaMem(ChromaStore(client, HashEmbedder()), counter=WordCounter(), namespace="vr")
        writer.add_turn("Ana", f"Note {minute}.", at=T0 + timedelta(minutes=minute))
        assert len(reader.snapshots.get("vr")) == minute + 1  # every write still seen
    collection = client.get_collection("ramem_vr")
    records = [i for i in collection.get(include=[])["ids"] if i.startswith(VERSION_ID)]
    assert len(records) <= MAX_VERSION_RECORDS
    assert reader.count() == 3 * MAX_VERSION_RECORDS
    client.delete_collection("ramem_vr")


def test_two_writers_of_one_conversation_never_share_a_turn_index(tmp_path: Path) -> None:
    """Each writer places a live turn after every turn stored so far, not after what its
    cached snapshot held (which, within refresh_seconds, lacks the other writer's)."""
    one, two = _workers(tmp_path)
    for memory in (one, two):
        memory.snapshots.refresh_seconds = 3600
    for minute in range(6):
        writer = (one, two)[minute % 2]
        writer.add_turn("Ana", f"Note {minute}.", at=T0 + timedelta(minutes=minute))
    indices = sorted(u.context.turn_index for u in one.store.get("default"))
    assert indices == list(range(6))
