"""Snapshot files: a restarted worker loads its snapshot instead of rebuilding it, and never
serves a file that is behind the store."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest

from ramem_core import ChromaStore, RaMem, RetrievalConfig
from ramem_core.index.bm25 import LexicalIndex
from ramem_core.index.episodic import EpisodicKeys
from ramem_core.index.files import Signature, SnapshotFiles, through_file
from ramem_core.index.shared import Texts
from ramem_core.index.snapshot import DamagedUnitError, Snapshot, StoredUnits
from ramem_core.testing import HashEmbedder, rewrite_snapshot_file
from tests.conftest import two_trips

QUERIES = [
    "What did Alice eat on the trip to Lisbon?",
    "What did the doctor say in March?",
    "What happened after the second trip?",
]


def _open(path: Path, **kwargs: object) -> RaMem:
    return RaMem.open(path, embedder=HashEmbedder(), **kwargs)  # type: ignore[arg-type]


def _answers(memory: RaMem) -> list[list[tuple[str, bool]]]:
    return [[(e.unit.id, e.contextual) for e in memory.recall(q, k=5)] for q in QUERIES]


def _no_chroma_load(memory: RaMem, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(namespace: str) -> None:
        raise AssertionError(f"loaded {namespace!r} from Chroma, not from its snapshot file")

    monkeypatch.setattr(memory.store, "load", refuse)


def test_a_reopened_memory_answers_from_its_snapshot_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _open(tmp_path) as memory:
        memory.add_conversation(two_trips())
        memory.add_turn("Alice", "I booked a pottery class for Friday.", at=datetime(2023, 11, 3))
        before = _answers(memory)
    with _open(tmp_path) as memory:
        _no_chroma_load(memory, monkeypatch)
        assert _answers(memory) == before
        # a loaded snapshot takes live turns like a built one
        memory.add_turn("Alice", "The pottery class was fun.", at=datetime(2023, 11, 10))
        assert memory.recall("pottery class fun", k=1)[0].unit.content.endswith("was fun.")
    with _open(tmp_path) as memory:  # written again at close: the new turn is in the file
        _no_chroma_load(memory, monkeypatch)
        assert memory.recall("pottery class fun", k=1)[0].unit.content.endswith("was fun.")


def test_a_file_behind_the_store_is_never_served(tmp_path: Path) -> None:
    with _open(tmp_path) as memory:
        memory.add_conversation(two_trips())
        doomed = memory.recall("sardines", k=1)[0].unit.id
    # a writer that dies without close(): its delete is in Chroma, not in the file
    crashed = _open(tmp_path)
    crashed.delete(unit_ids=[doomed])
    crashed.store.close()
    with _open(tmp_path) as memory:
        assert doomed not in {e.unit.id for q in QUERIES for e in memory.recall(q, k=50)}
        assert doomed not in {e.unit.id for e in memory.recall("sardines", k=50)}


def test_a_damaged_file_is_ignored_and_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _open(tmp_path) as memory:
        memory.add_conversation(two_trips())
        before = _answers(memory)
    files = SnapshotFiles(tmp_path / "ramem-snapshots")
    path = files.path("default")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # a torn copy
    with caplog.at_level(logging.WARNING), _open(tmp_path) as memory:
        assert _answers(memory) == before
    assert "refusing the snapshot file" in caplog.text


def test_a_file_built_with_other_keys_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _open(tmp_path) as memory:
        memory.add_conversation(two_trips())
        memory.recall(QUERIES[0])
    assert SnapshotFiles(tmp_path / "ramem-snapshots").path("default").exists()
    other = RetrievalConfig(keys=EpisodicKeys(neighbours=(0.7,)))
    with _open(tmp_path, config=other) as memory:
        loads = []
        load = memory.store.load

        def counted(namespace: str):
            loads.append(namespace)
            return load(namespace)

        monkeypatch.setattr(memory.store, "load", counted)
        memory.recall(QUERIES[0])
        assert loads == ["default"]


def test_files_hold_one_namespace_each_and_go_with_a_drop(tmp_path: Path) -> None:
    with _open(tmp_path) as memory:
        memory.add_conversation(two_trips(), namespace="alice")
        memory.add_conversation(two_trips(), namespace="bob")
        memory.recall(QUERIES[0], namespace="alice")
        memory.recall(QUERIES[0], namespace="bob")
    files = SnapshotFiles(tmp_path / "ramem-snapshots")
    assert files.path("alice").exists()
    assert files.path("bob").exists()
    assert files.path("alice") != files.path("bob")
    with _open(tmp_path) as memory:
        memory.drop(namespace="bob")
    assert not files.path("bob").exists()


def test_a_big_snapshot_is_written_when_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ramem_core.index.freshness import Freshness

    memory = _open(tmp_path)
    memory.add_conversation(two_trips())
    memory.snapshots.invalidate()
    assert memory.snapshots.files is not None
    monkeypatch.setattr(memory.snapshots.files, "min_memories", 1)
    memory.recall(QUERIES[0])  # built from Chroma now, its file written beside
    assert memory.snapshots.persist() == 0  # waits for that file; nothing else to write
    files = SnapshotFiles(tmp_path / "ramem-snapshots")
    assert files.path("default").exists()  # before any close: a crash keeps it
    other = Freshness(memory.store, memory.retriever.config.keys, files=files)
    assert other.persist() == 0  # nothing cached there, nothing to write
    memory.close()


def test_files_are_only_for_a_local_directory() -> None:
    memory = RaMem.ephemeral(embedder=HashEmbedder())
    assert memory.snapshots.files is None
    memory.add_conversation(two_trips())
    assert memory.snapshots.persist() == 0
    memory.close()


def _saved(tmp_path: Path) -> tuple[SnapshotFiles, Snapshot, Signature, frozenset[Any]]:
    """The two-trips snapshot saved in ``tmp_path`` as namespace "ns" at version w1:3: the
    files, the snapshot, its signature and its version."""
    units = list(_units())
    snap = Snapshot(units, HashEmbedder().embed([u.content for u in units]))
    files = SnapshotFiles(tmp_path)
    signature = Signature(repr(EpisodicKeys()), HashEmbedder().dimension)
    version = frozenset({("w1", 3)})
    assert files.save("ns", snap, version, signature)
    return files, snap, signature, version


def test_a_file_holds_the_version_and_settings_it_was_built_with(tmp_path: Path) -> None:
    files, _snap, signature, version = _saved(tmp_path)
    assert files.load("ns", version, signature) is not None
    assert files.load("ns", frozenset({("w1", 4)}), signature) is None
    assert files.load("ns", version, Signature(signature.keys, signature.dimension + 1)) is None
    assert files.load("other", version, signature) is None
    assert list(tmp_path.iterdir()) == [files.path("ns")]  # no temporary file left


def _units():
    from ramem_core import RuleAnchorer

    return RuleAnchorer().anchor(two_trips())


def test_stored_units_decode_on_access_and_copies_keep_their_changes() -> None:
    from dataclasses import replace

    units = _units()
    stored = through_file(StoredUnits.of(units))
    assert len(stored) == len(units)
    assert stored[0] == units[0]
    assert stored[-1] == units[-1]
    assert stored[1:3] == units[1:3]
    assert list(stored) == units
    copy = stored.copy()
    edited = replace(units[0], content="changed")
    copy[0] = edited
    copy.extend([edited])
    assert stored[0] == units[0]
    assert len(stored) == len(units)
    assert copy[0] == edited
    assert copy[len(units)] == edited
    assert list(through_file(copy)) == [edited, *units[1:], edited]
    assert copy.ids() == [edited.id, *(u.id for u in units[1:]), edited.id]
    with pytest.raises(IndexError):
        stored[len(units)]


def test_a_loaded_lexical_index_scores_removes_and_appends_like_the_original() -> None:
    docs = [{"pottery": 1.0, "class": 2.0}, {"river": 1.0}, {"pottery": 0.5, "river": 3.0}]
    index = LexicalIndex()
    index.extend(docs)
    index.remove(1)
    loaded = through_file(index)
    query = ["pottery", "river", "class"]
    np.testing.assert_allclose(loaded.scores(query), index.scores(query))
    assert [loaded.document(i) for i in range(3)] == [docs[0], None, docs[2]]
    for one in (index, loaded):  # the same changes on both
        one.remove(0)
        one.add({"class": 1.0, "river": 1.0})
    np.testing.assert_allclose(loaded.scores(query), index.scores(query))
    # evolving a loaded index leaves it as it was, like any other
    before = loaded.scores(query)
    evolved, [new] = loaded.evolve([2], [{"pottery": 4.0}])
    np.testing.assert_allclose(loaded.scores(query), before)
    assert loaded.document(2) == docs[2]  # its removal is the evolved index's alone
    assert evolved.document(2) is None
    assert evolved.scores(["pottery"])[new] > 0
    assert evolved.scores(["pottery"])[2] == 0.0
    again = through_file(evolved)  # a loaded index that changed saves whole
    np.testing.assert_allclose(again.scores(query), evolved.scores(query))


def test_a_store_on_a_server_has_no_files_unless_given_a_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import chromadb
    import httpx

    monkeypatch.setattr(
        chromadb, "HttpClient", lambda **kw: chromadb.EphemeralClient(kw["settings"])
    )
    monkeypatch.setattr(httpx, "get", lambda *a, **kw: None)
    monkeypatch.setattr("ramem_core.store.chroma._SHARED_CLIENTS", {})
    store = ChromaStore.http("127.0.0.1", 9, HashEmbedder())
    assert store.snapshot_dir is None
    assert RaMem(store).snapshots.files is None


def test_an_update_neither_encodes_units_nor_copies_its_buffers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Snapshots define __getstate__ for files; a live update must not go through it (a
    copy.copy would encode every unit and drop the buffers' spare rows at each turn)."""
    from dataclasses import replace

    from ramem_core.index import snapshot as snapshot_module

    embedder = HashEmbedder()
    units = _units()
    snap = Snapshot(units, embedder.embed([u.content for u in units]))

    def refuse(unit: object) -> None:
        raise AssertionError("a live update encoded a unit")

    monkeypatch.setattr(snapshot_module, "to_metadata", refuse)
    versions = [snap]
    for i in range(3):
        new = replace(units[-1], id=f"new-{i}", content=f"a new turn {i} about pottery")
        new = replace(new, context=replace(new.context, turn_index=100 + i))
        updated = versions[-1].updated([new], {new.id: embedder.embed([new.content])[0]})
        assert updated is not None
        versions.append(updated)
    # after the first append the buffers have spare rows: later appends write into them
    assert versions[2]._vector_rows is versions[3]._vector_rows
    assert versions[2].index._neighbour_rows is versions[3].index._neighbour_rows
    assert versions[2].index.tokenize is versions[3].index.tokenize


class _Exploit:
    """A pickle that runs code when loaded: what a hostile file in a shared directory holds."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, ...]:
        import os

        return (os.system, (f"touch {self.marker}",))


_rewritten = rewrite_snapshot_file


def _vectors_index(tree: dict[str, object]) -> int:
    """Which array holds the snapshot's vectors."""
    return int(tree["s"]["m"]["vectors"]["a"])  # type: ignore[index]


@pytest.mark.parametrize(
    "attack",
    [
        "pickle",  # the old format's loader would run it
        "foreign class",  # a tree naming a class outside the allow-list
        "object array",  # an array that only pickle can hold
        "short vectors",  # arrays that disagree with the units
        "postings out of range",  # an index pointing outside its documents
    ],
)
def test_a_hostile_file_is_refused_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, attack: str
) -> None:
    import pickle

    with _open(tmp_path) as memory:
        memory.add_conversation(two_trips())
        before = _answers(memory)
    path = SnapshotFiles(tmp_path / "ramem-snapshots").path("default")
    marker = tmp_path / "pwned"

    def foreign(tree: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        tree["s"]["m"]["units"] = {"o": "Popen", "s": {"l": ["touch", str(marker)]}}

    def short(tree: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        name = f"a{_vectors_index(tree)}"
        arrays[name] = arrays[name][:-1]

    def out_of_range(tree: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        for name, array in arrays.items():
            if array.dtype.kind == "i" and array.ndim == 1 and len(array):
                arrays[name] = array + 10_000

    if attack == "pickle":
        path.write_bytes(pickle.dumps(_Exploit(marker)))
    elif attack == "foreign class":
        _rewritten(path, foreign)
    elif attack == "object array":
        body = np.array([_Exploit(marker)], dtype=object)
        with path.open("wb") as file:  # only savez with pickles can write it
            np.savez(file, header=np.zeros(1, np.uint8), tree=np.zeros(1, np.uint8), data=body)
    elif attack == "short vectors":
        _rewritten(path, short)
    else:
        _rewritten(path, out_of_range)
    with caplog.at_level(logging.WARNING), _open(tmp_path) as memory:
        assert _answers(memory) == before  # rebuilt from the store
    assert not marker.exists()  # nothing in the file ran
    assert "refusing the snapshot file" in caplog.text


@pytest.mark.parametrize("damage", ["documents", "bounds", "columns"])
def test_postings_that_do_not_fit_their_index_are_refused(damage: str) -> None:
    """The lexical postings of a loaded file are checked: ids inside the documents, bounds
    that cut both columns into one slice per term."""
    from ramem_core.index.files import check

    memory = RaMem.ephemeral(embedder=HashEmbedder())
    memory.add_conversation(two_trips())
    snap = memory.snapshots.get("default")
    check(snap, memory.embedder.dimension)  # a built snapshot passes
    columns = snap.index.lexical._base
    if damage == "documents":
        columns._docs = columns._docs + 10_000
    elif damage == "bounds":
        columns._bounds = [*columns._bounds[:-1], columns._bounds[-1] + 1]
    else:
        columns._tfs = columns._tfs[:-1]
    with pytest.raises(ValueError, match=r"index\.lexical postings"):
        check(snap, memory.embedder.dimension)
    memory.close()


def test_a_packed_table_describes_only_plain_arrays_inside_the_data() -> None:
    from ramem_core.index.files import pack, unpack

    table, data = pack([np.arange(3, dtype=np.int64), np.ones((2, 2), dtype=np.float32)])
    arrays = unpack(table, data)
    np.testing.assert_array_equal(arrays["a0"], [0, 1, 2])
    assert arrays["a1"].shape == (2, 2)
    for bad, message in [
        ([["|O", [1], 0]], "would hold object"),
        ([["<i8", [1000], 0]], "runs past the file's data"),
        ([["<i8", [-1], 0]], "negative shape or offset"),
        ([["<i8", [1], -8]], "negative shape or offset"),
        ("not a table", "not a packed array table"),
    ]:
        with pytest.raises((TypeError, ValueError), match=message):
            unpack(bad, data)


def test_a_servers_workers_share_a_snapshot_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chromadb
    import httpx

    # in-process clients share one state: they stand in for workers of `chroma run`; the
    # state lives while one of them is open, so this one holds it across the workers' closes
    from ramem_core.store.chroma import client_settings

    keeper = chromadb.EphemeralClient(client_settings())
    monkeypatch.setattr(
        chromadb, "HttpClient", lambda **kw: chromadb.EphemeralClient(kw["settings"])
    )
    monkeypatch.setattr(httpx, "get", lambda *a, **kw: None)
    monkeypatch.setattr("ramem_core.store.chroma._SHARED_CLIENTS", {})
    shared = tmp_path / "snapshots"

    def worker() -> RaMem:
        return RaMem.open(host="127.0.0.1", port=9, snapshot_dir=shared, embedder=HashEmbedder())

    first = worker()
    first.add_conversation(two_trips())
    before = _answers(first)
    first.close()
    path = SnapshotFiles(shared).path("default")
    path.unlink()
    second = worker()
    assert _answers(second) == before  # built from the server ...
    assert path.exists() or second.snapshots.persist() == 0  # waits; nothing left to write
    assert path.exists()  # ... and its file kept, though small: a server's rebuild is remote
    third = worker()
    _no_chroma_load(third, monkeypatch)
    assert _answers(third) == before  # from the shared file, not rebuilt
    second.close()
    third.close()
    del keeper  # the shared state may go now
    with pytest.raises(ValueError, match="snapshot_dir is for a Chroma server"):
        RaMem.open(tmp_path / "local", snapshot_dir=shared, embedder=HashEmbedder())


def test_a_file_of_an_older_format_is_refused_and_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file written before the per-memory columns (format 5) is not read: its header's
    format differs, so the snapshot is built from the store and the file written anew."""
    import io
    import json

    from ramem_core.index import files as files_module

    with _open(tmp_path) as memory:
        memory.add_conversation(two_trips())
        before = _answers(memory)
    path = SnapshotFiles(tmp_path / "ramem-snapshots").path("default")
    with np.load(io.BytesIO(path.read_bytes()), allow_pickle=False) as data:
        parts = {name: np.array(data[name]) for name in ("header", "tree", "data")}
    header = json.loads(bytes(parts["header"]))
    assert header["signature"]["format"] == files_module.FORMAT
    header["signature"]["format"] = 5
    parts["header"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
    with path.open("wb") as file:
        np.savez(file, header=parts["header"], tree=parts["tree"], data=parts["data"])
    with _open(tmp_path) as memory:
        loads: list[str] = []
        load = memory.store.load

        def counted(namespace: str):
            loads.append(namespace)
            return load(namespace)

        monkeypatch.setattr(memory.store, "load", counted)
        assert _answers(memory) == before
        assert loads == ["default"]  # rebuilt from the store, not read from the old file
    again = json.loads(bytes(np.load(path, allow_pickle=False)["header"]))
    assert again["signature"]["format"] == files_module.FORMAT  # written anew at close


def test_a_declared_column_travels_every_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A per-memory fact declared once in ``COLUMNS`` is built, grown by a live turn,
    written to a file, loaded and validated without any other change."""
    from ramem_core.index import columns
    from ramem_core.index.files import through_file
    from ramem_core.index.snapshot import Snapshot
    from tests.conftest import unit_at

    extra = columns.Column("turn_twice", np.int64, lambda u, _s: 2 * u.context.turn_index)
    monkeypatch.setattr(columns, "COLUMNS", (*columns.COLUMNS, extra))
    embedder = HashEmbedder()
    units = [unit_at(f"t{i}", "S", i, f"Ann: turn {i} about pottery") for i in range(4)]
    snap = Snapshot(units[:3], embedder.embed([u.content for u in units[:3]]))
    grown = snap.updated([units[3]], {"t3": embedder.embed([units[3].content])[0]})
    assert grown is not None
    loaded = through_file(grown)
    loaded.validate(embedder.dimension)
    assert loaded.columns["turn_twice"].tolist() == [0, 2, 4, 6]
    broken = through_file(grown)
    broken.columns._arrays["turn_twice"] = broken.columns["turn_twice"][:-1]
    with pytest.raises(ValueError, match="column turn_twice"):
        broken.validate(embedder.dimension)


# ------------------------------------------------------------------ untrusted shared files


def _two_tenants(path: Path, **kwargs: object) -> dict[str, list[list[tuple[str, bool]]]]:
    """Alice's and Bob's memories in one directory, written by one writer (so their write
    versions are identical), each with a snapshot file; their answers."""
    from tests.conftest import two_trips as trips

    answers = {}
    with _open(path, **kwargs) as memory:
        for tenant in ("alice", "bob"):
            conversation = trips()
            if tenant == "bob":
                from dataclasses import replace

                conversation = replace(conversation, id="bob-trips")
            memory.add_conversation(conversation, namespace=tenant)
            answers[tenant] = [
                [(e.unit.id, e.contextual) for e in memory.recall(q, k=5, namespace=tenant)]
                for q in QUERIES
            ]
        assert memory.store.version("alice") == memory.store.version("bob")
    return answers


def _tenant_answers(memory: RaMem, tenant: str) -> list[list[tuple[str, bool]]]:
    return [
        [(e.unit.id, e.contextual) for e in memory.recall(q, k=5, namespace=tenant)]
        for q in QUERIES
    ]


def test_another_tenants_file_with_its_namespace_rewritten_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    before = _two_tenants(tmp_path)
    files = SnapshotFiles(tmp_path / "ramem-snapshots")

    def to_alice(header: dict[str, Any]) -> None:
        header["namespace"] = "alice"

    _rewritten(files.path("bob"), header_change=to_alice, target=files.path("alice"))
    with caplog.at_level(logging.WARNING), _open(tmp_path) as memory:
        assert _tenant_answers(memory, "alice") == before["alice"]  # alice's own, rebuilt
    assert "bound to another store" in caplog.text


@pytest.mark.parametrize("keyed", [False, True])
def test_replaced_contents_are_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, keyed: bool
) -> None:
    """A file whose contents were replaced: refused by its digest; with a deployment key,
    also when whoever replaced them made the digest again."""
    key = {"snapshot_key": "deployment secret"} if keyed else {}
    with _open(tmp_path, **key) as memory:
        memory.add_conversation(two_trips())
        before = _answers(memory)
    path = SnapshotFiles(tmp_path / "ramem-snapshots").path("default")

    def swap_vectors(tree: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        name = f"a{_vectors_index(tree)}"
        arrays[name] = arrays[name][::-1].copy()  # every memory takes another's vector

    _rewritten(path, swap_vectors, digest=keyed)  # without a key: the digest is stale
    with caplog.at_level(logging.WARNING), _open(tmp_path, **key) as memory:
        assert _answers(memory) == before
    reason = "HMAC does not match" if keyed else "do not match the digest"
    assert reason in caplog.text


def test_a_keyed_directory_loads_its_own_files_and_refuses_unkeyed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with _open(tmp_path) as memory:  # written without a key
        memory.add_conversation(two_trips())
        before = _answers(memory)
    monkeypatch.setenv("RAMEM_SNAPSHOT_KEY", "deployment secret")
    with caplog.at_level(logging.WARNING), _open(tmp_path) as memory:
        assert _answers(memory) == before  # refused, rebuilt, written again with the key
    assert "HMAC does not match" in caplog.text
    with _open(tmp_path) as memory:
        _no_chroma_load(memory, monkeypatch)
        assert _answers(memory) == before


def test_garbage_unit_metadata_is_refused_and_rebuilt_at_first_use(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _open(tmp_path) as memory:
        memory.add_conversation(two_trips())
        before = _answers(memory)
    path = SnapshotFiles(tmp_path / "ramem-snapshots").path("default")

    def garbage(tree: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        units = tree["s"]["m"]["units"]["s"]["t"]  # ids, contents, metadata JSON
        metadata = units[2]
        if "X" in metadata:  # bytes and byte offsets, read a unit at a time
            blob_at, offsets_at = metadata["X"]
            rows = len(arrays[f"a{offsets_at}"]) - 1
            texts = Texts.of("{not json" if i % 2 else '{"a": 1}' for i in range(rows))
            arrays[f"a{blob_at}"], arrays[f"a{offsets_at}"] = texts.arrays
        elif "x" in metadata:  # stored as text plus offsets
            rows = len(arrays[f"a{metadata['o']}"]) - 1
            units[2] = {"l": ["{not json" if i % 2 else '{"a": 1}' for i in range(rows)]}
        else:
            units[2] = {"l": ["{not json" for _ in metadata["l"]]}

    _rewritten(path, garbage)
    with caplog.at_level(logging.WARNING), _open(tmp_path) as memory:
        assert _answers(memory) == before  # no KeyError, no JSONDecodeError: rebuilt
    assert "does not decode" in caplog.text


@pytest.mark.parametrize("kind", ["fifo", "symlink", "too large", "inflating"])
def test_only_regular_files_within_the_size_limits_are_opened(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    import os
    import threading
    import zipfile

    with _open(tmp_path) as memory:
        memory.add_conversation(two_trips())
        before = _answers(memory)
    path = SnapshotFiles(tmp_path / "ramem-snapshots").path("default")
    limit: dict[str, Any] = {}
    if kind == "fifo":
        path.unlink()
        os.mkfifo(path)
    elif kind == "symlink":
        real = path.with_suffix(".real")
        path.rename(real)
        path.symlink_to(real)
    elif kind == "too large":
        limit = {"snapshot_max_bytes": path.stat().st_size - 1}
    else:  # a small file whose data inflates to far more (a zip bomb)
        with np.load(path, allow_pickle=False) as data:
            header, tree, blob = data["header"], data["tree"], data["data"]
        padded = np.concatenate([blob, np.zeros(64 << 20, np.uint8)])
        with path.open("wb") as file:
            np.savez_compressed(file, header=header, tree=tree, data=padded)
        assert path.stat().st_size < 1 << 20
        with zipfile.ZipFile(path) as archive:
            assert sum(m.file_size for m in archive.infolist()) > 64 << 20
    answers: list[Any] = []
    with caplog.at_level(logging.WARNING), _open(tmp_path, **limit) as memory:
        reader = threading.Thread(target=lambda: answers.append(_answers(memory)), daemon=True)
        reader.start()
        reader.join(timeout=30)
        assert answers == [before]  # promptly, from the store
    reason = {
        "fifo": "not a regular file",
        "symlink": "Too many levels of symbolic links",
        "too large": "allowed",
        "inflating": "is compressed",
    }[kind]
    assert f"refusing the snapshot file {path}" in caplog.text
    assert reason in caplog.text


def test_the_cache_counts_what_a_loaded_file_holds(tmp_path: Path) -> None:
    """A file's data stays in memory while any array of it is used: a file of six memories
    carrying 32 MB more is counted as 32 MB, not as six memories."""
    with _open(tmp_path) as memory:
        memory.add_conversation(two_trips())
        memory.recall("sardines")  # its file is written at close
    path = SnapshotFiles(tmp_path / "ramem-snapshots").path("default")

    def ballast(tree: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        arrays[f"a{len(arrays)}"] = np.ones(32 << 20, np.uint8)

    _rewritten(path, ballast)
    with _open(tmp_path) as memory:
        memory.recall("sardines")
        [held] = memory.snapshots._snapshots.values()
        assert held.snap.nbytes < 1 << 20  # the estimate
        assert memory.snapshots.nbytes >= 32 << 20


def test_litter_of_killed_file_writers_is_cleaned_at_open(tmp_path: Path) -> None:
    import os
    import time

    with _open(tmp_path) as memory:
        memory.add_conversation(two_trips())
    directory = tmp_path / "ramem-snapshots"
    directory.mkdir(exist_ok=True)
    old, young = directory / "a.tmp", directory / "b.tmp"
    old.write_bytes(b"")
    young.write_bytes(b"")
    hour_ago = time.time() - 3600
    os.utime(old, (hour_ago, hour_ago))
    with _open(tmp_path):
        assert not old.exists()
        assert young.exists()  # perhaps another worker's file being written


def test_an_import_writes_the_snapshot_the_first_recall_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk write (here an import) of at least ``min_memories`` builds the snapshot and its
    file: the first recall of the next process reads the file, never the whole store."""
    from ramem_core.index import files as files_module

    with _open(tmp_path / "a") as source:
        source.add_conversation(two_trips())
        source.transfer.export(tmp_path / "export.jsonl", vectors=True)
    monkeypatch.setattr(files_module, "MIN_MEMORIES", 1)  # what of_store passes a directory
    with _open(tmp_path / "b") as memory:
        assert memory.snapshots.files is not None
        assert memory.snapshots.files.min_memories == 1
        memory.transfer.import_from(tmp_path / "export.jsonl")
    files = SnapshotFiles(tmp_path / "b" / "ramem-snapshots")
    assert files.path("default").exists()
    with _open(tmp_path / "b") as memory:
        loads: list[str] = []
        monkeypatch.setattr(memory.store, "load", lambda ns: loads.append(ns))
        found = memory.recall(QUERIES[0])
        assert found
        assert loads == []


def _mapped_from(array: np.ndarray) -> bool:
    import mmap

    base: object = array
    while base is not None:
        if isinstance(base, np.memmap | mmap.mmap):
            return True
        base = getattr(base, "base", None)
    return False


def test_a_files_arrays_are_mapped_not_copied(tmp_path: Path) -> None:
    """The vectors of a snapshot loaded from a file are read in place from the file's pages
    (shared by the workers of one machine), not copied out of it."""
    files, snap, signature, version = _saved(tmp_path)
    loaded = files.load("ns", version, signature)
    assert loaded is not None
    assert loaded.vectors is not None
    assert _mapped_from(loaded.vectors)
    assert snap.vectors is not None
    assert np.array_equal(loaded.vectors, snap.vectors)


@pytest.mark.parametrize("damage", ["not bytes", "two dimensions", "past its end"])
def test_a_data_member_that_cannot_be_mapped_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    files, _snap, signature, version = _saved(tmp_path)
    path = files.path("ns")
    if damage == "past its end":  # the array's header claims more bytes than the file has
        body = path.read_bytes()
        at = body.index(b"'shape': (") + len(b"'shape': (")
        end = body.index(b",", at)
        claimed = b"9" * (end - at)  # as many digits: the header keeps its length
        assert int(claimed) > int(body[at:end])
        path.write_bytes(body[:at] + claimed + body[end:])
    else:
        with np.load(path) as data:
            header, tree, raw = data["header"], data["tree"], data["data"]
        body = raw.view(np.float64) if damage == "not bytes" else raw.reshape(-1, 8)
        with path.open("wb") as file:
            np.savez(file, header=header, tree=tree, data=body)
    with caplog.at_level(logging.WARNING):
        assert files.load("ns", version, signature) is None
    assert "refusing the snapshot file" in caplog.text


def _flip_byte_of(path: Path, array: int, at: int = 0) -> None:
    """Change one byte of packed array ``array`` of the file at ``path`` in place, leaving
    its header and digests as they were (a block damaged on disk)."""
    from ramem_core.index.files import _mapped

    table = _tree(path)["arrays"]
    with path.open("rb") as file:
        mapped = _mapped(file, "data.npy", path.stat().st_size)
        assert isinstance(mapped, np.memmap)
        offset = mapped.offset
    assert 0 <= at < int(np.prod(table[array][1])) * np.dtype(table[array][0]).itemsize
    position = offset + table[array][2] + at
    with path.open("r+b") as damaged:
        damaged.seek(position)
        old = damaged.read(1)
        damaged.seek(position)
        damaged.write(bytes([old[0] ^ 0xFF]))


def _tree(path: Path) -> dict[str, Any]:
    """The JSON tree of the file at ``path``: its packed arrays' table and the root."""
    import json

    with np.load(path, allow_pickle=False) as data:
        tree: dict[str, Any] = json.loads(bytes(data["tree"]))
    return tree


def _damage_middle(path: Path, array: int) -> None:
    """Change a byte in every 32 of packed array ``array``, all but its first and last 64
    bytes (blocks shared with the arrays beside it stay whole)."""
    dtype, shape, _ = _tree(path)["arrays"][array]
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    for at in range(64, size - 64, 32):
        _flip_byte_of(path, array, at=at)


def _unit_columns(path: Path) -> list[list[int]]:
    """The packed arrays (bytes, offsets) of the units' ids, contents and metadata."""
    columns = _tree(path)["root"]["s"]["m"]["units"]["s"]["t"]
    assert all("X" in c for c in columns)  # each as bytes and byte offsets
    return [c["X"] for c in columns]


def test_a_load_verifies_what_it_reads_and_leaves_the_units_to_their_recall(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 56: a file's units' contents and metadata are verified when a recall reads them,
    not at load. A damaged metadata block loads (no refusal yet) and the first unit read from
    it sends that recall to a snapshot rebuilt from the store; a damaged vector is refused at
    load, as before."""
    monkeypatch.setattr("ramem_core.index.files.BLOCK_BYTES", 64)  # many blocks in a small file
    files, snap, signature, version = _saved(tmp_path)
    path = files.path("ns")
    metadata = _unit_columns(path)[2][0]
    _flip_byte_of(path, metadata, at=200)  # inside the metadata: a block of its own
    with caplog.at_level(logging.WARNING):
        loaded = files.load("ns", version, signature)
    assert loaded is not None, caplog.text  # the damaged block was not read at load
    assert "refusing" not in caplog.text
    damaged = []
    for row in range(len(snap)):
        try:
            assert loaded.units[row] == snap.units[row]  # the other blocks read as saved
        except DamagedUnitError as exc:
            damaged.append((row, str(exc)))
    assert 1 <= len(damaged) <= 2  # the unit(s) whose metadata lies in the damaged block
    assert all("do not match the digest" in reason for _, reason in damaged)
    assert not files.save("ns", loaded, version, signature)  # damage is never copied on
    files.remove("ns")

    files, snap, signature, version = _saved(tmp_path)
    _flip_byte_of(files.path("ns"), _vectors_index_of(files.path("ns")), at=3)
    with caplog.at_level(logging.WARNING):
        assert files.load("ns", version, signature) is None
    assert "do not match the digest in its header (data block" in caplog.text


def _vectors_index_of(path: Path) -> int:
    return _vectors_index(_tree(path)["root"])


def test_a_unit_whose_block_is_damaged_is_served_from_the_store(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ramem_core.index.files.BLOCK_BYTES", 64)
    with _open(tmp_path) as memory:
        memory.add_conversation(two_trips())
        before = _answers(memory)
    path = SnapshotFiles(tmp_path / "ramem-snapshots").path("default")
    _damage_middle(path, _unit_columns(path)[1][0])  # every unit's content, but at its ends
    with caplog.at_level(logging.WARNING), _open(tmp_path) as memory:
        assert _answers(memory) == before
    assert "refusing the snapshot of 'default'" in caplog.text
    assert "(data block" in caplog.text


def test_texts_read_one_string_at_a_time_in_any_script() -> None:
    words = ["plain", "", "naïve café", "東京", "emoji 🎉 here", "x" * 300]
    texts = Texts.of(words)
    assert len(texts) == len(words)
    assert [texts[i] for i in range(len(words))] == words
    assert texts[-1] == words[-1]
    assert texts[1:3] == words[1:3]
    assert list(texts) == words  # all at once (not ASCII: read by byte offsets)
    assert Texts.of(["ab", "c"]).all() == ["ab", "c"]
    assert texts.consistent()
    blob, offsets = texts.arrays
    assert not Texts(blob, offsets[::-1].copy()).consistent()
    with pytest.raises(IndexError):
        texts[len(words)]


def test_a_first_read_loads_the_file_while_the_store_is_asked_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 56: the file's load does not wait for the store's first answer (a cold Chroma's
    first call): the two overlap."""
    import threading

    with mock.patch("ramem_core.index.files.MIN_MEMORIES", 0), _open(tmp_path) as memory:
        memory.add_conversation(two_trips())
        before = _answers(memory)
    with _open(tmp_path) as memory:
        files = memory.snapshots.files
        assert files is not None
        started = threading.Event()
        load, version = files.load_sized, memory.store.version

        def loading(*args: Any, **kwargs: Any) -> Any:
            started.set()
            return load(*args, **kwargs)

        def slow_version(namespace: str) -> Any:
            assert started.wait(10), "the file's load waited for the version"
            return version(namespace)

        monkeypatch.setattr(files, "load_sized", loading)
        monkeypatch.setattr(memory.store, "version", slow_version)
        _no_chroma_load(memory, monkeypatch)
        assert _answers(memory) == before


def test_a_damaged_posting_block_is_found_when_its_term_is_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ramem_core.index.files.BLOCK_BYTES", 64)
    files, _snap, signature, version = _saved(tmp_path)
    path = files.path("ns")
    lexical = _tree(path)["root"]["s"]["m"]["index"]["s"]["m"]["lexical"]["s"]["m"]
    _damage_middle(path, lexical["posting_tfs"]["a"])  # float32: any bytes pass the checks
    loaded = files.load("ns", version, signature)
    assert loaded is not None  # postings are verified term by term, when scored
    every_term = " ".join(loaded.index.lexical.vocabulary())
    with pytest.raises(DamagedUnitError, match="do not match the digest"):
        loaded.index.lexical_scores(every_term)


def test_a_damaged_block_of_documents_counts_is_found_when_one_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ramem_core.index.files.BLOCK_BYTES", 64)
    files, _snap, signature, version = _saved(tmp_path)
    path = files.path("ns")
    own = _tree(path)["root"]["s"]["m"]["index"]["s"]["m"]["own"]["s"]["m"]
    _damage_middle(path, own["docs"]["s"]["t"][3]["a"])  # FrozenDocs' weights (4th state)
    loaded = files.load("ns", version, signature)
    assert loaded is not None  # documents' counts are verified a document at a time
    with pytest.raises(DamagedUnitError, match="do not match the digest"):
        [loaded.index.own_counts[row] for row in range(len(loaded))]


def test_a_loaded_snapshot_keeps_each_sessions_span_speakers_and_number() -> None:
    units = list(_units())
    snap = Snapshot(units, HashEmbedder().embed([u.content for u in units]))
    loaded = through_file(snap)
    assert loaded._session_span == snap._session_span
    assert loaded._speakers == snap._speakers
    assert loaded.ubiquitous == snap.ubiquitous
    assert loaded.index.session_number == snap.index.session_number
    assert any(len(names) > 1 for names in snap._speakers.values())


def test_a_write_that_meets_a_damaged_block_is_stored_and_the_snapshot_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live turn folded into a loaded snapshot reads the units of its session: a damaged
    block met there must not report the stored turn as failed (a client would store it twice);
    the snapshot is refused and its file removed."""
    monkeypatch.setattr("ramem_core.index.files.BLOCK_BYTES", 64)
    with _open(tmp_path) as memory:
        memory.add_conversation(two_trips())
        _answers(memory)
    path = SnapshotFiles(tmp_path / "ramem-snapshots").path("default")
    for column in (1, 2):  # every unit's content and metadata
        _damage_middle(path, _unit_columns(path)[column][0])
    with caplog.at_level(logging.WARNING), _open(tmp_path) as memory:
        memory.recall("Lisbon", k=1)  # the first unit read refuses the file: rebuilt
        assert "refusing the snapshot of 'default'" in caplog.text
    # the same met while a stored write is folded into the snapshot (its session's units)
    with _open(tmp_path) as memory:
        memory.recall("Lisbon", k=1)

        def damaged(*args: Any, **kwargs: Any) -> None:
            raise DamagedUnitError("its contents do not match the digest (data block 3)")

        monkeypatch.setattr(Snapshot, "updated", damaged)
        memory.add_turn("Alice", "The Lisbon photos are printed.", at=datetime(2023, 11, 3))
        monkeypatch.undo()
        found = memory.recall("Lisbon photos printed", k=1)
        assert found[0].unit.content.endswith("photos are printed.")
        assert memory.count() == len(list(_units())) + 1  # stored once


def test_text_offsets_of_a_narrow_type_are_refused() -> None:
    blob = np.frombuffer(b"abcdefghij", dtype=np.uint8)
    wrapping = np.array([0, 100, -100, 10], dtype=np.int8)  # differences wrap in int8
    assert not Texts(blob, wrapping).consistent()  # type: ignore[arg-type]  # on purpose
    assert not Texts(blob, np.array([0, 4, 10], dtype=np.int32)).consistent()
    assert Texts(blob, np.array([0, 4, 10], dtype=np.int64)).consistent()


def test_a_block_left_unverified_by_any_failure_refuses_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ramem_core.index.files import Blocks

    monkeypatch.setattr("ramem_core.index.files.BLOCK_BYTES", 64)
    files, _snap, signature, version = _saved(tmp_path)
    verify = Blocks._verify

    def failing(self: Blocks, block: int) -> None:
        if block == 1:
            raise MemoryError("no memory for a hash")
        verify(self, block)

    monkeypatch.setattr(Blocks, "_verify", failing)
    with caplog.at_level(logging.WARNING):
        assert files.load("ns", version, signature) is None
    assert "no memory for a hash" in caplog.text
