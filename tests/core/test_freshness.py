"""The snapshot cache: the one owner of freshness. Faults are injected at the store's API."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from chromadb.api.models.Collection import Collection

from ramem_core import Conversation, RaMem, Session, StoreError, Turn
from ramem_core.anchoring import RuleAnchorer
from ramem_core.index.episodic import EpisodicKeys
from ramem_core.index.freshness import Freshness
from ramem_core.store.chroma import VERSION_ID, ChromaStore
from ramem_core.testing import HashEmbedder, InMemoryStore, WordCounter
from tests.builders import ids
from tests.conftest import two_trips

T0 = datetime(2024, 3, 1, 9, 0)


def _texts(memory: RaMem) -> set[str]:
    return {u.content for u in memory.snapshots.get(memory.namespace).units}


def _note(cid: str, text: str, minute: int) -> Conversation:
    return Conversation(
        cid, (Session("s1", (Turn("t1", "Ana", text),), T0 + timedelta(minutes=minute)),)
    )


@pytest.mark.parametrize("backend", ["chroma", "fake"])
@pytest.mark.parametrize("then", ["read", "write"])
def test_a_load_that_straddles_a_write_never_loses_it(
    backend: str, then: str, tmp_path: Path
) -> None:
    """A snapshot load that reads the data before a write and finishes after it must not
    hide that write: not from the next read (own writes are seen at once), and not after the
    next write (which once stamped the stale snapshot with the newest version, so it was
    never reloaded)."""
    if backend == "chroma":
        store: ChromaStore | InMemoryStore = ChromaStore.persistent(tmp_path, HashEmbedder())
    else:
        store = InMemoryStore(HashEmbedder())
    memory = RaMem(store, counter=WordCounter(), refresh_seconds=3600)
    memory.add_conversation(_note("c1", "I bought a red bicycle.", 0))
    memory.snapshots.invalidate()
    load = store.load
    loaded = threading.Event()

    def slow_load(namespace: str):  # type: ignore[no-untyped-def]
        found = load(namespace)  # the data is read here, before the write below
        loaded.set()
        time.sleep(0.5)
        return found

    store.load = slow_load  # type: ignore[method-assign]
    reader = threading.Thread(target=memory.recall, args=("bicycle",))
    reader.start()
    assert loaded.wait(5)
    memory.add_conversation(_note("c2", "I painted the kitchen green.", 1))
    reader.join()
    store.load = load  # type: ignore[method-assign]
    if then == "write":
        memory.add_conversation(_note("c3", "I adopted a grey cat.", 2))
    assert len(_texts(memory)) == memory.count() == (3 if then == "write" else 2)
    top = memory.recall("What colour did Ana paint the kitchen?", k=1)[0]
    assert top.unit.content == "Ana: I painted the kitchen green."


def test_a_slow_load_never_replaces_a_newer_snapshot() -> None:
    store = InMemoryStore(HashEmbedder())
    cache = Freshness(store, EpisodicKeys(), refresh_seconds=3600)
    memory = RaMem(store, counter=WordCounter())
    memory.add_conversation(two_trips())
    old_version = store.version("default")
    old = cache.get("default")
    memory.add_turn("Ben", "We watched a film.", at=datetime(2023, 9, 1))
    cache.invalidate()
    new = cache.get("default")
    assert len(new) == len(old) + 1
    with cache._lock:  # a load of the old version finishing late
        from ramem_core.index.freshness import _Cached

        cache._remember("default", _Cached(time.monotonic(), old, old_version))
    assert cache.get("default") is new


def test_a_file_that_misses_stored_memories_is_not_trusted(tmp_path: Path) -> None:
    """A writer killed between the batches of a large write leaves memories that no version
    announces: a snapshot file at that version lacks them, and is ignored."""
    with RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter()) as first:
        for minute in range(4):
            first.add_turn(
                "Ana", f"Note number {minute} about pottery.", at=T0 + timedelta(minutes=minute)
            )
        first.recall("pottery")
    # a second worker writes two memories in batches of one and dies after the first batch
    killed = RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter())
    assert isinstance(killed.store, ChromaStore)
    collection = killed.store.collection("default")
    calls = []

    def dies_on_second_call(**kwargs: Any) -> None:
        calls.append(kwargs["ids"])
        if len(calls) == 2:
            raise SystemExit("killed")  # not an Exception: nothing is undone
        Collection.upsert(collection, **kwargs)

    killed.store._collections["default"] = _Patched(collection, upsert=dies_on_second_call)  # type: ignore[assignment]
    at = T0 + timedelta(minutes=9)
    turns = (Turn("k1", "Ana", "The kiln cracked today.", at), Turn("k2", "Ana", "I swept up.", at))
    units = RuleAnchorer().anchor(Conversation("kiln", (Session("kiln-s1", turns, at),), ("Ana",)))
    with (
        mock.patch("ramem_core.store.chroma.max_write_batch", return_value=2),
        pytest.raises(SystemExit),
    ):
        killed.add_units(units)
    assert [len(ids) for ids in calls] == [2, 2]  # each call: a memory and the version record
    for _ in range(2):  # every restart serves all five, also after its own writes and close
        with RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter()) as restarted:
            assert len(restarted.snapshots.get("default")) == 5
            assert restarted.recall("What happened to the kiln?", k=1)[0].unit.content == (
                "Ana: The kiln cracked today."
            )
            restarted.add_turn("Ana", "I ordered a new kiln.", at=T0 + timedelta(minutes=20))
            restarted.delete(unit_ids=[restarted.recall("new kiln", k=1)[0].unit.id])
    killed.close()


def _filed(tmp_path: Path) -> None:
    """Two writers' pottery notes in ``tmp_path`` and a snapshot file at their version."""
    for writer in range(2):
        with RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter()) as memory:
            notes = [_note(f"c{writer}{i}", f"Pottery note {writer}{i}.", i) for i in range(2)]
            memory.add_conversations(notes)
    with (
        mock.patch("ramem_core.index.files.MIN_MEMORIES", 0),
        RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter()) as reader,
    ):
        assert len(reader.store.version("default")) == 2
        reader.recall("pottery")  # built from the store, its file written
    assert any((tmp_path / "ramem-snapshots").glob("*.snapshot"))


def _unannounced_kiln(tmp_path: Path) -> None:
    """A memory stored with no version record (what a writer from before every Chroma call
    carried its record leaves, or one writing through Chroma itself)."""
    silent = RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter())
    assert isinstance(silent.store, ChromaStore)
    collection = silent.store.collection("default")

    def without_its_record(**kwargs: Any) -> None:
        keep = [i for i, id_ in enumerate(kwargs["ids"]) if not id_.startswith(VERSION_ID)]
        Collection.upsert(collection, **{k: [v[i] for i in keep] for k, v in kwargs.items()})

    silent.store._collections["default"] = _Patched(collection, upsert=without_its_record)  # type: ignore[assignment]
    silent.add_conversations([_note("kiln", "The kiln cracked today.", 9)])
    silent.close()


def _restarted(tmp_path: Path) -> RaMem:
    memory = RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter())
    assert memory.snapshots.files is not None
    assert memory.snapshots.files.path("default").exists()
    return memory


def test_a_snapshot_file_lacking_unannounced_memories_is_refused(tmp_path: Path) -> None:
    """The namespace's file at the version holds fewer memories than the store: it is
    ignored and the snapshot rebuilt, so the unannounced memory is served."""
    _filed(tmp_path)
    _unannounced_kiln(tmp_path)
    with _restarted(tmp_path) as restarted:
        assert len(restarted.snapshots.get("default")) == 5
        assert "Ana: The kiln cracked today." in _texts(restarted)


def test_a_snapshot_file_holding_memories_the_store_lost_is_refused(tmp_path: Path) -> None:
    """A memory gone from the store with no new version (a delete killed before it announced
    itself, or made through Chroma itself): the file at the version is not served."""
    _filed(tmp_path)
    with RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter()) as memory:
        assert isinstance(memory.store, ChromaStore)
        gone = next(u for u in memory.store.get("default") if "note 00" in u.content)
        memory.store.collection("default").delete(ids=[gone.id])  # no version record moves
    with _restarted(tmp_path) as restarted:
        assert len(restarted.snapshots.get("default")) == 3
        assert "Ana: Pottery note 00." not in _texts(restarted)


def test_a_compaction_during_a_file_load_never_hides_a_memory(tmp_path: Path) -> None:
    """Another writer drops a version record while a file loads: the memories are counted
    against the version records just read, before the load, so the drop cannot make the
    store's count match a file that lacks a memory."""
    _filed(tmp_path)
    _unannounced_kiln(tmp_path)
    with _restarted(tmp_path) as restarted:
        assert isinstance(restarted.store, ChromaStore)
        compactor = ChromaStore(restarted.store.client, HashEmbedder())
        load = restarted.snapshots.files.load_sized  # type: ignore[union-attr]

        def compacted_meanwhile(*args: Any, **kwargs: Any) -> Any:
            assert compactor.compact("default", keep=2) == 1  # one of the two records
            return load(*args, **kwargs)

        with mock.patch.object(restarted.snapshots.files, "load_sized", compacted_meanwhile):
            assert len(restarted.snapshots.get("default")) == 5
        assert "Ana: The kiln cracked today." in _texts(restarted)


def test_a_killed_split_edit_never_leaves_a_file_that_hides_it(tmp_path: Path) -> None:
    """A re-ingest that edits memories (same ids, same count), killed between the Chroma calls
    of a split write: the edited memory stored by the first call is served after a restart,
    every time (the count cannot tell; each call announces itself)."""
    notes = [_note(f"c{i}", f"Pottery note {i}: the glaze was blue.", i) for i in range(4)]
    with RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter()) as first:
        first.add_conversations(notes)
        first.recall("pottery")  # built, and its file written at close
    edited = [_note(f"c{i}", f"Pottery note {i}: the glaze was green.", i) for i in range(4)]
    killed = RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter())
    assert isinstance(killed.store, ChromaStore)
    collection = killed.store.collection("default")
    calls: list[list[str]] = []

    def dies_on_second_call(**kwargs: Any) -> None:
        calls.append(kwargs["ids"])
        if len(calls) == 2:
            raise SystemExit("killed")
        Collection.upsert(collection, **kwargs)

    killed.store._collections["default"] = _Patched(collection, upsert=dies_on_second_call)  # type: ignore[assignment]
    with (
        mock.patch("ramem_core.store.chroma.max_write_batch", return_value=3),
        pytest.raises(SystemExit),
    ):
        killed.add_conversations(edited)
    killed.close()
    for _ in range(2):
        with RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter()) as restarted:
            texts = _texts(restarted)
            assert restarted.count() == 4
            assert sum("green" in t for t in texts) == 2  # the first call's two edits


class _Patched:
    """A Chroma collection with some of its methods replaced."""

    def __init__(self, inner: object, **methods: object) -> None:
        self.inner = inner
        self.methods = methods

    def __getattr__(self, name: str) -> object:
        return self.methods.get(name) or getattr(self.inner, name)


def _failing_upserts(collection: object, failures: int) -> _Patched:
    """``collection`` whose next ``failures`` upserts raise, as a dropped connection does."""
    left = [failures]

    def upsert(**kwargs: object) -> None:
        if left[0]:
            left[0] -= 1
            raise ConnectionError("connection reset by peer")
        collection.upsert(**kwargs)  # type: ignore[attr-defined]

    return _Patched(collection, upsert=upsert)


def test_a_failed_write_is_a_store_error_and_a_retry_stores_once(memory: RaMem) -> None:
    store = memory.store
    assert isinstance(store, ChromaStore)
    first = memory.add_turn("Ana", "I bought a red bicycle.", at=T0)
    version = store.version("default")
    store._collections["default"] = _failing_upserts(store.collection("default"), 1)  # type: ignore[assignment]
    with pytest.raises(StoreError, match="nothing of it was kept"):
        memory.add_turn("Ana", "I painted the kitchen green.", at=T0 + timedelta(minutes=1))
    assert memory.count() == 1
    assert store.version("default") == version  # nothing announced
    retried = memory.add_turn("Ana", "I painted the kitchen green.", at=T0 + timedelta(minutes=1))
    assert memory.count() == 2
    assert retried.context.turn_index == first.context.turn_index + 1  # no index reused
    assert retried.context.session_id == first.context.session_id
    assert "Ana: I painted the kitchen green." in _texts(memory)


def test_a_write_and_its_version_record_are_one_chroma_call(memory: RaMem) -> None:
    store = memory.store
    assert isinstance(store, ChromaStore)
    memory.add_turn("Ana", "I bought a red bicycle.", at=T0)
    collection = store.collection("default")
    calls: list[list[str]] = []

    def upsert(**kwargs: Any) -> None:
        calls.append(list(kwargs["ids"]))
        collection.upsert(**kwargs)

    store._collections["default"] = _Patched(collection, upsert=upsert)  # type: ignore[assignment]
    memory.add_turn("Ana", "I painted the kitchen green.", at=T0 + timedelta(minutes=1))
    assert len(calls) == 1
    assert calls[0][-1] == f"{VERSION_ID}{store.writer}"
    assert store.version("default") == frozenset({(store.writer, 2)})
    assert memory.count() == 2  # the version record is not a memory
    assert len(store.get("default")) == 2
    assert len(store.load("default")[1]) == 2


def test_version_records_are_found_without_a_boolean_filter(memory: RaMem) -> None:
    """Chroma answers a boolean ``where`` in time proportional to every record on the server
    (about 210 ms a call with 300 namespaces), a string equality in constant time: version
    reads and counts must use the latter."""
    store = memory.store
    assert isinstance(store, ChromaStore)
    memory.add_turn("Ana", "I bought a red bicycle.", at=T0)
    collection = store.collection("default")
    filters: list[Any] = []

    def get(**kwargs: Any) -> Any:
        filters.append(kwargs.get("where"))
        return collection.get(**kwargs)

    store._collections["default"] = _Patched(collection, get=get)  # type: ignore[assignment]
    assert store.version("default") == frozenset({(store.writer, 1)})
    assert memory.count() == 1
    assert len(filters) == 2
    for where in filters:
        assert where
        assert all(isinstance(v, str) for v in where.values()), where
    record = collection.get(ids=[f"{VERSION_ID}{store.writer}"], include=["metadatas"])
    metadatas = record["metadatas"]
    assert metadatas
    assert not any(isinstance(v, bool) for v in metadatas[0].values())


def test_a_failed_delete_announcement_is_made_by_the_next_write(memory: RaMem) -> None:
    store = memory.store
    assert isinstance(store, ChromaStore)
    memory.add_conversation(two_trips())
    other = RaMem(ChromaStore(store.client, HashEmbedder()), refresh_seconds=0)
    assert len(other.snapshots.get("default")) == 6
    store._collections["default"] = _failing_upserts(store.collection("default"), 1)  # type: ignore[assignment]
    unit = memory.recall("sardines", k=1)[0].unit
    with pytest.raises(StoreError, match="announcing it to other workers failed"):
        memory.delete(unit_ids=[unit.id])
    assert memory.delete(unit_ids=[unit.id]) == 0  # a retry deletes nothing more ...
    assert len(other.snapshots.get("default")) == 5  # ... but announces the first delete


def test_writes_to_other_namespaces_between_do_not_rebuild_a_snapshot() -> None:
    """Each namespace counts its own writes: a worker writing to several users in turn folds
    each write into that user's snapshot instead of rebuilding it."""
    memory = RaMem.ephemeral(embedder=HashEmbedder(), counter=WordCounter())
    for minute in range(3):
        for ns in ("u1", "u2"):
            at = T0 + timedelta(minutes=minute)
            memory.add_turn("Ana", f"Note {minute} for {ns}.", at=at, namespace=ns)
            memory.recall("note", namespace=ns)
    built = memory.snapshots.get("u1")
    with mock.patch.object(memory.store, "load", side_effect=AssertionError("rebuilt")):
        memory.add_turn("Ana", "Note 3 for u2.", at=T0 + timedelta(minutes=3), namespace="u2")
        memory.add_turn("Ana", "Note 3 for u1.", at=T0 + timedelta(minutes=3), namespace="u1")
        assert len(memory.snapshots.get("u1")) == len(built) + 1
    memory.close()


def _two_workers() -> tuple[RaMem, RaMem]:
    """Two workers on one (fake) database: the first checks for foreign writes hourly."""
    shared: dict[str, Any] = {}
    versions: dict[str, Any] = {}
    mine = RaMem(
        InMemoryStore(HashEmbedder(), data=shared, versions=versions), refresh_seconds=3600
    )
    return mine, RaMem(InMemoryStore(HashEmbedder(), data=shared, versions=versions))


def test_a_write_through_is_seen_at_once_and_a_foreign_write_within_refresh() -> None:
    mine, theirs = _two_workers()
    mine.add_turn("Ana", "I bought a red bicycle.", at=T0)
    assert len(mine.snapshots.get("default")) == 1
    theirs.add_turn("Ben", "I sold my old car.", at=T0 + timedelta(minutes=1))
    assert len(mine.snapshots.get("default")) == 1  # within refresh_seconds: not yet
    mine.snapshots.refresh_seconds = 0
    assert len(mine.snapshots.get("default")) == 2
    mine.snapshots.refresh_seconds = 3600
    mine.add_turn("Ana", "I painted the kitchen.", at=T0 + timedelta(minutes=2))
    assert len(mine.snapshots.get("default")) == 3  # own write: folded in, no reload


def test_an_absorb_onto_a_snapshot_that_misses_a_foreign_write_reloads() -> None:
    mine, theirs = _two_workers()
    mine.add_turn("Ana", "I bought a red bicycle.", at=T0)
    mine.recall("bicycle")
    theirs.add_turn("Ben", "I sold my old car.", at=T0 + timedelta(minutes=1))
    mine.add_turn("Ana", "I painted the kitchen.", at=T0 + timedelta(minutes=2))
    assert len(mine.snapshots.get("default")) == 3  # reloaded, not merged onto the stale one


def test_the_cache_is_bounded_by_bytes_and_evicted_namespaces_are_rebuilt() -> None:
    store = InMemoryStore(HashEmbedder())
    loader = RaMem(store, counter=WordCounter())
    for ns in ("a1", "b2", "c3"):
        loader.add_conversation(two_trips(), namespace=ns)
    loader.add_conversations([two_trips(), replace(two_trips(), id="again")], namespace="big")
    one = loader.snapshots.get("a1").nbytes
    assert loader.snapshots.get("big").nbytes == 2 * one  # footprint grows with memories
    memory = RaMem(store, counter=WordCounter(), cache_bytes=2 * one)
    for ns in ("a1", "b2", "c3"):
        memory.recall("sardines", namespace=ns)
    assert memory.snapshots.cached == ["b2", "c3"]
    assert memory.snapshots.nbytes == 2 * one
    assert memory.recall("sardines", namespace="a1")  # rebuilt
    assert memory.snapshots.cached == ["c3", "a1"]
    memory.recall("sardines", namespace="big")  # one namespace twice the size: two go
    assert memory.snapshots.cached == ["big"]
    tiny = RaMem(store, counter=WordCounter(), cache_bytes=1)
    tiny.recall("sardines", namespace="a1")
    tiny.recall("sardines", namespace="b2")
    assert tiny.snapshots.cached == ["b2"]  # the latest is always kept


def test_a_cache_refuses_bad_settings() -> None:
    store = InMemoryStore(HashEmbedder())
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="cache_bytes must be a positive integer"):
            Freshness(store, EpisodicKeys(), cache_bytes=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="refresh_seconds"):
        Freshness(store, EpisodicKeys(), refresh_seconds=-1)


def test_the_fake_store_serves_ramem_like_chroma(memory: RaMem) -> None:
    """The shipped fake answers a recall as the Chroma adapter does (same ranking)."""
    fake = RaMem(InMemoryStore(HashEmbedder()), counter=WordCounter())
    for each in (memory, fake):
        each.add_conversation(two_trips())
    for query in ("Where did Ben eat grilled sardines in August?", "What did the doctor say?"):
        assert ids(fake.recall(query)) == ids(memory.recall(query))
    assert fake.delete(session_id="S1") == memory.delete(session_id="S1") == 2
    assert sorted(u.id for u in fake.store.get("default", conversation_id="friends")) == sorted(
        u.id for u in memory.store.get("default", conversation_id="friends")
    )
    vectors = np.zeros((1, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="1 units but 0 vectors"):
        fake.store.upsert("default", [memory.recall("sardines", k=1)[0].unit], vectors[:0])


# ---------------------------------------------------------------- freshness across workers


def _worker(path: Path, refresh: float = 0.0) -> RaMem:
    store = ChromaStore.persistent(path, HashEmbedder())
    return RaMem(store, counter=WordCounter(), refresh_seconds=refresh)


def test_another_workers_delete_and_edit_are_seen_even_when_the_count_is_unchanged(
    tmp_path: Path,
) -> None:
    reader, writer = _worker(tmp_path / "db"), _worker(tmp_path / "db")
    writer.add_conversation(two_trips())
    query = "grilled sardines by the river"
    assert "S2:1" in {e.unit.source_ids[0] for e in reader.recall(query, k=6)}  # cached now
    [gone] = [u for u in writer.store.get("default") if u.source_ids == ("S2:1",)]
    assert writer.delete(unit_ids=[gone.id]) == 1
    assert "S2:1" not in {e.unit.source_ids[0] for e in reader.recall(query, k=6)}
    writer.add_turn("Ben", "We watched a film.", at=datetime(2023, 9, 1))  # count is 6 again
    assert reader.count() == 6
    assert "S2:1" not in {e.unit.source_ids[0] for e in reader.recall(query, k=7)}
    [edited] = [u for u in writer.store.get("default") if u.source_ids == ("S3:1",)]
    vector = writer.embedder.embed(["Ben: On my trip we ate octopus."])
    writer.store.upsert(
        "default", [replace(edited, content="Ben: On my trip we ate octopus.")], vector
    )
    contents = {e.unit.content for e in reader.recall("octopus trip", k=7)}
    assert "Ben: On my trip we ate octopus." in contents
    assert edited.content not in contents


def test_a_foreign_write_is_not_hidden_by_this_workers_own_write(tmp_path: Path) -> None:
    # a long refresh interval: only the version check on this worker's own write can tell
    mine, theirs = _worker(tmp_path / "db", refresh=3600), _worker(tmp_path / "db")
    mine.add_turn("user", "I like tea.", at=datetime(2023, 9, 1, 10, 0))
    mine.recall("tea", k=3)  # cached
    theirs.add_turn("user", "I adopted a zebra.", at=datetime(2023, 9, 1, 10, 1))
    mine.add_turn("user", "And coffee.", at=datetime(2023, 9, 1, 10, 2))
    assert "user: I adopted a zebra." in {e.unit.content for e in mine.recall("zebra", k=3)}


def test_a_foreign_write_is_not_hidden_by_this_workers_bulk_write(tmp_path: Path) -> None:
    # a bulk write reads no version before it: the version read after it tells
    mine, theirs = _worker(tmp_path / "db", refresh=3600), _worker(tmp_path / "db")
    mine.add_turn("user", "I like tea.", at=datetime(2023, 9, 1, 10, 0))
    mine.recall("tea", k=3)  # cached
    theirs.add_turn("user", "I adopted a zebra.", at=datetime(2023, 9, 1, 10, 1))
    mine.add_conversation(two_trips())
    assert "user: I adopted a zebra." in {e.unit.content for e in mine.recall("zebra", k=3)}


def test_a_live_turn_reads_the_version_once(tmp_path: Path) -> None:
    """The fresh read that places a turn stands for the version after it: one round trip
    for the version per turn, not two."""
    mine = _worker(tmp_path / "db", refresh=3600)
    mine.add_turn("user", "I like tea.", at=datetime(2023, 9, 1, 10, 0))
    mine.recall("tea", k=3)
    with mock.patch.object(
        ChromaStore, "version", autospec=True, side_effect=ChromaStore.version
    ) as version:
        mine.add_turn("user", "And coffee.", at=datetime(2023, 9, 1, 10, 2))
    assert version.call_count == 1
    assert "default" in mine.snapshots.cached  # folded in, not dropped
    assert len(mine.snapshots.get("default")) == 2


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per snapshot built from scratch (``Snapshot.__init__``) from now on."""
    from ramem_core.index.snapshot import Snapshot

    calls: list[int] = []
    init = Snapshot.__init__

    def counted(self: Snapshot, *args: Any, **kwargs: Any) -> None:
        calls.append(1)
        init(self, *args, **kwargs)

    monkeypatch.setattr(Snapshot, "__init__", counted)
    return calls


def test_a_payload_only_rewrite_folds_in_without_a_rebuild(memory: RaMem, built: list[int]) -> None:
    """A write that changes only payloads (a moved expiry) keeps the index: the snapshot
    takes the new units without being built again, and reads see the new payload."""
    kept = memory.add_turn("Ana", "I bought a red bicycle.", at=T0)
    memory.add_turn("Ana", "I painted the kitchen.", at=T0 + timedelta(minutes=1))
    assert memory.recall("bicycle")  # cached
    built.clear()
    memory.transfer.rewrite([replace(kept, payload='{"expires": "later"}')])
    assert "default" in memory.snapshots.cached  # folded in, not dropped
    assert not built
    held = memory.transfer.get(kept.id)
    assert held is not None
    assert held.payload == '{"expires": "later"}'
    memory.transfer.rewrite([replace(kept, content="Ana: I bought a blue bicycle.")])
    assert built  # a new content: its vector is new, the index is built again
    assert [e.unit.content for e in memory.recall("blue bicycle", k=1)] == [
        "Ana: I bought a blue bicycle."
    ]


def test_a_new_context_is_built_again_and_reads_as_rebuilt(memory: RaMem, built: list[int]) -> None:
    """A write back of stored memories with the same content and vector but another context
    (an event moved to another month, another place and topic) is no payload-only change:
    the snapshot is built again (folding is trusted for payloads only), and ranks and reads
    as one built from scratch."""
    from ramem_core.types import Granularity, TimeSpan

    memory.add_conversation(two_trips())
    questions = [
        "Where did Ben eat grilled sardines in August 2023?",
        "What did the doctor say in March 2023?",
        "What happened in Porto?",
    ]
    memory.recall(questions[0])  # cached
    [moved] = [u for u in memory.store.get("default") if u.source_ids == ("S2:1",)]
    august = TimeSpan(datetime(2023, 8, 1), datetime(2023, 8, 31, 23, 59), Granularity.MONTH)
    moved = replace(
        moved,
        context=replace(moved.context, event_time=august, location="Porto", topic="porto trip"),
    )
    built.clear()
    memory.transfer.rewrite([moved])
    assert built

    def read() -> list[list[tuple[str, float]]]:
        return [[(e.unit.id, round(e.score, 6)) for e in memory.recall(q)] for q in questions]

    folded = read()
    held = memory.transfer.get(moved.id)
    assert held is not None
    assert held.context.location == "Porto"
    memory.snapshots.invalidate("default")
    assert read() == folded


def test_a_memory_written_back_with_another_vector_is_read_with_it(tmp_path: Path) -> None:
    """The same content and context with another vector (an import of an export whose
    vectors changed) is no payload-only change: the snapshot reads the new vector."""
    import json

    memory = RaMem(InMemoryStore(HashEmbedder()), counter=WordCounter())
    kept = memory.add_turn("Ana", "I bought a red bicycle.", at=T0)
    assert memory.recall("bicycle")  # cached
    memory.transfer.export(tmp_path / "m.jsonl", vectors=True)
    lines = (tmp_path / "m.jsonl").read_text(encoding="utf-8").splitlines()
    other = [0.0] * memory.embedder.dimension
    other[0] = 1.0
    lines = [
        json.dumps({**item, "vector": other}) if item.get("id") == kept.id else line
        for line, item in ((line, json.loads(line)) for line in lines)
    ]
    (tmp_path / "m.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    memory.transfer.import_from(tmp_path / "m.jsonl")
    snap = memory.snapshots.get("default")
    assert snap.vectors is not None
    assert np.array_equal(snap.vectors[snap.position[kept.id]], np.asarray(other, np.float32))


class _Older(InMemoryStore):
    """A store written before ``Store.written`` and ``Store.counted`` existed."""

    written = None  # type: ignore[assignment]
    counted = None  # type: ignore[assignment]


def test_a_store_without_counted_is_counted_by_its_count() -> None:
    from ramem_core.index.freshness import _counted

    store = _Older(HashEmbedder())
    RaMem(store, counter=WordCounter()).add_turn("Ana", "I like tea.", at=T0)  # type: ignore[arg-type]
    assert _counted(store, "default", store.version("default")) == 1  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [InMemoryStore, _Older], ids=["store", "older store"])
def test_an_error_after_a_stored_write_never_hides_it(make: type[InMemoryStore]) -> None:
    """The write is stored when the version read after it fails: the caller hears of the
    failure, and the next read holds the write (the cached snapshot is dropped)."""
    store = make(HashEmbedder())
    memory = RaMem(store, counter=WordCounter(), refresh_seconds=3600)
    tea = memory.add_turn("Ana", "I like tea.", at=T0)
    assert memory.recall("tea")  # cached
    zebra = replace(tea, id="zebra", content="Ana: I adopted a zebra.", source_ids=("z",))
    with (
        mock.patch.object(InMemoryStore, "version", side_effect=StoreError("down")),
        pytest.raises(StoreError),
    ):
        memory.add_units([zebra])
    assert store.count("default") == 2
    assert "Ana: I adopted a zebra." in {e.unit.content for e in memory.recall("zebra", k=3)}


def test_a_store_without_written_still_folds_its_writes() -> None:
    """A store written before ``Store.written`` existed: its own number is read off the
    version, and a live turn still folds into the cached snapshot."""
    memory = RaMem(_Older(HashEmbedder()), counter=WordCounter(), refresh_seconds=3600)  # type: ignore[arg-type]
    memory.add_turn("Ana", "I like tea.", at=T0)
    assert memory.recall("tea")  # cached
    memory.add_turn("Ana", "And coffee.", at=T0 + timedelta(minutes=1))
    assert "default" in memory.snapshots.cached  # folded in, not dropped
    assert len(memory.snapshots.get("default")) == 2
