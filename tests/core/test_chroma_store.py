"""The Chroma adapter: the only module that imports chromadb; its resources and its errors."""

from __future__ import annotations

import errno
import gc
import os
import weakref
from datetime import datetime
from pathlib import Path
from typing import ClassVar

import pytest

from ramem_core import RaMem, StoreError
from ramem_core.errors import InvalidInputError
from ramem_core.store import chroma
from ramem_core.store.chroma import ChromaStore, check_namespace
from ramem_core.testing import HashEmbedder, WordCounter
from tests.conftest import two_trips


def test_an_embedder_is_not_kept_alive_by_chroma(tmp_path: Path) -> None:
    """Chroma caches embedding functions; RaMem's holds the model's name only, so a closed
    and dropped memory frees its embedder at once (not when the cyclic GC runs)."""
    gc.disable()
    try:
        embedder = HashEmbedder()
        alive = weakref.ref(embedder)
        memory = RaMem.open(tmp_path, embedder=embedder, counter=WordCounter())
        memory.add_turn("Ana", "I bought a red bicycle.", at=datetime(2024, 3, 1))
        memory.recall("bicycle")
        memory.close()
        del memory, embedder
        assert alive() is None
    finally:
        gc.enable()


def test_an_unclosed_memory_releases_its_directory_when_collected(tmp_path: Path) -> None:
    memory = RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter())
    memory.add_turn("Ana", "I bought a red bicycle.", at=datetime(2024, 3, 1))
    key = str(tmp_path.resolve())
    assert key in chroma._DirectoryLock._held
    del memory
    gc.collect()
    assert key not in chroma._DirectoryLock._held  # its lock file descriptor is closed


def test_collection_handles_are_bounded(
    store: ChromaStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chroma, "_OPEN_COLLECTIONS", 3)
    memory = RaMem(store, counter=WordCounter())
    for i in range(5):
        memory.add_turn("Ana", f"note {i}", at=datetime(2024, 3, 1), namespace=f"n{i}")
    assert list(store._collections) == ["n2", "n3", "n4"]
    assert memory.count(namespace="n0") == 1  # an evicted handle is opened again


def _sync_threshold(store: ChromaStore, namespace: str) -> object:
    """What Chroma keeps (a fresh handle: a cached one holds what this client last set)."""
    collection = store.client.get_collection(f"{store.prefix}_{namespace}")
    return (collection.configuration.get("hnsw") or {}).get("sync_threshold")


def test_a_namespace_stores_its_index_every_sync_threshold_records(store: ChromaStore) -> None:
    """Records an index has not stored are replayed from Chroma's log by every process's
    first touch and read again by every write: RaMem's collections store theirs far more
    often than Chroma's default of 1000."""
    memory = RaMem(store, counter=WordCounter())
    memory.add_turn("Ana", "I bought a red bicycle.", at=datetime(2024, 3, 1), namespace="n")
    assert chroma.SYNC_THRESHOLD < 1000
    assert _sync_threshold(store, "n") == chroma.SYNC_THRESHOLD


def test_an_older_collection_takes_the_sync_threshold_at_its_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as older:  # a collection made by an earlier RaMem
        older.setattr(chroma, "SYNC_THRESHOLD", 1000)
        with RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter()) as memory:
            memory.add_turn("Ana", "I bought a red bicycle.", at=datetime(2024, 3, 1))
            assert _sync_threshold(memory.store, "default") == 1000  # type: ignore[arg-type]
    with RaMem.open(tmp_path, embedder=HashEmbedder(), counter=WordCounter()) as memory:
        assert memory.recall("bicycle")  # a read changes nothing
        assert _sync_threshold(memory.store, "default") == 1000  # type: ignore[arg-type]
        memory.add_turn("Ana", "I sold the bicycle.", at=datetime(2024, 4, 1))
        assert _sync_threshold(memory.store, "default") == chroma.SYNC_THRESHOLD  # type: ignore[arg-type]
        assert memory.count() == 2


def test_a_server_that_refuses_the_sync_threshold_keeps_the_collection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Refusing:
        name = "ramem_n"
        configuration: ClassVar[dict[str, object]] = {"hnsw": {"sync_threshold": 1000}}

        def modify(self, **_: object) -> None:
            raise ValueError("unknown configuration key")

    class Unreadable:
        name = "ramem_m"

        @property
        def configuration(self) -> object:
            raise ValueError("cannot rebuild the embedding function")

    with caplog.at_level("INFO", logger="ramem_core.store.chroma"):
        chroma._sync_often(Refusing())  # type: ignore[arg-type]
        chroma._sync_often(Unreadable())  # type: ignore[arg-type]
    assert "unknown configuration key" in caplog.text
    assert "cannot rebuild the embedding function" in caplog.text


def test_too_many_open_files_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.open

    def exhausted(path: str, *args: object, **kwargs: object) -> int:
        if str(path).endswith(".ramem.lock"):
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", exhausted)
    with pytest.raises(StoreError, match=r"cannot open the memory directory .*open files"):
        RaMem.open(tmp_path / "db", embedder=HashEmbedder())


def test_a_damaged_database_is_a_store_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=r"chroma\.sqlite3") as raised:
        RaMem.open(tmp_path, embedder=HashEmbedder())
    assert str(tmp_path) in str(raised.value)
    with RaMem.open(tmp_path / "elsewhere", embedder=HashEmbedder()):
        pass  # the directory lock of the failed open was released


def test_a_truncated_database_is_a_store_error(tmp_path: Path) -> None:
    with RaMem.open(tmp_path, embedder=HashEmbedder()) as memory:
        memory.add_conversation(two_trips())
    database = tmp_path / "chroma.sqlite3"
    database.write_bytes(database.read_bytes()[:1000])
    with pytest.raises(StoreError, match=r"chroma\.sqlite3"):
        RaMem.open(tmp_path, embedder=HashEmbedder()).recall("sardines")


@pytest.mark.parametrize("bad", ["alice\n", "\nalice", "al ice", "a" * 123, "", "-a", "a/b"])
def test_a_namespace_that_cannot_name_a_collection_is_refused(bad: str) -> None:
    with pytest.raises(InvalidInputError, match="invalid namespace"):
        check_namespace(bad)


def test_selections_are_plain_values(store: ChromaStore) -> None:
    memory = RaMem(store, counter=WordCounter())
    memory.add_conversation(two_trips())
    assert {u.context.session_id for u in store.get("default", session_id="S2")} == {"S2"}
    assert store.get("default", conversation_id="nobody") == []
    assert len(store.get("default", conversation_id="friends", session_id="S3")) == 2
    assert store.delete("default", conversation_id="friends", session_id="S3") == 2
    assert store.count("default") == 4
    with pytest.raises(InvalidInputError, match="delete needs"):
        store.delete("default")


def test_a_directory_another_process_has_open_is_refused(tmp_path: Path) -> None:
    """A `chroma run --path DIR` server keeps DIR's database open; a second writer beside it
    would corrupt what it serves, so opening DIR locally is refused, naming the process."""
    import subprocess
    import sys

    with RaMem.open(tmp_path, embedder=HashEmbedder()) as memory:
        memory.add_conversation(two_trips())
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            f"c = sqlite3.connect({str(tmp_path / 'chroma.sqlite3')!r}); c.execute('select 1')\n"
            "print('open', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(StoreError, match=f"open in process {holder.pid}"):
            RaMem.open(tmp_path, embedder=HashEmbedder())
    finally:
        holder.kill()
        holder.communicate()  # reaps it and closes its pipe
    with RaMem.open(tmp_path, embedder=HashEmbedder()) as memory:  # free again
        assert memory.count() == 6


# ---------------------------------------------------------------- resources


def test_a_closed_memory_releases_its_directory(tmp_path: Path) -> None:
    with RaMem.open(tmp_path / "db", embedder=HashEmbedder(), counter=WordCounter()) as memory:
        memory.add_conversation(two_trips())
    with pytest.raises(StoreError, match="closed"):
        memory.count()
    memory.close()  # twice is fine
    again = RaMem.open(tmp_path / "db", embedder=HashEmbedder(), counter=WordCounter())
    assert again.count() == 6  # reopened in the same process, nothing lost
    again.close()


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="counts Linux descriptors")
def test_opening_and_closing_many_memories_does_not_pile_up_descriptors(tmp_path: Path) -> None:
    def descriptors() -> int:
        return len(list(Path("/proc/self/fd").iterdir()))

    before = descriptors()
    for i in range(12):
        with RaMem.open(tmp_path / f"db{i}", embedder=HashEmbedder()) as memory:
            memory.add_turn("user", "hello", at=datetime(2023, 1, 1))
            memory.recall("hello", k=1)
    assert descriptors() - before < 12  # about 10 per open memory without close()


def test_a_second_process_on_one_directory_is_refused_at_open(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from ramem_core import RaMem, StoreError\n"
        "from ramem_core.testing import HashEmbedder\n"
        "try:\n"
        "    RaMem.open(sys.argv[1], embedder=HashEmbedder()).close()\n"
        "except StoreError as exc:\n"
        "    print(exc)\n"
        "    sys.exit(3)\n"
    )

    def other_process() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / "db")],
            capture_output=True,
            text=True,
            timeout=120,
        )

    memory = RaMem.open(tmp_path / "db", embedder=HashEmbedder(), counter=WordCounter())
    memory.add_conversation(two_trips())
    refused = other_process()
    assert refused.returncode == 3, refused.stderr
    assert "open in another process" in refused.stdout
    assert "chroma run" in refused.stdout
    same_process = RaMem.open(tmp_path / "db", embedder=HashEmbedder())  # shared, not refused
    assert same_process.count() == 6
    same_process.close()
    memory.close()
    assert other_process().returncode == 0  # free once this process closed it


def test_no_chroma_warning_when_another_process_writes_and_deletes(tmp_path: Path) -> None:
    """Chroma rebuilds a collection's embedding function from its configuration by name; a
    process that had not registered RaMem's warned "Could not reconstruct embedding function
    ramem" on every write and delete (issue 32)."""
    import subprocess
    import sys

    script = (
        "import warnings, datetime\n"
        "warnings.simplefilter('always')\n"
        "from ramem_core import RaMem\n"
        "from ramem_core.testing import HashEmbedder, WordCounter\n"
        f"m = RaMem.open({str(tmp_path)!r}, embedder=HashEmbedder(), counter=WordCounter())\n"
        "u = m.add_turn('Ana', 'I bought a red bicycle.', at=datetime.datetime(2024, 3, 1))\n"
        "m.delete(unit_ids=[u.id])\n"
        "m.close()\n"
    )
    for _ in range(2):  # the first process makes the collection, the second opens it
        run = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr
        assert "Could not reconstruct" not in run.stderr
        assert "Warning" not in run.stderr, run.stderr


def test_a_count_beside_a_version_just_read_is_the_count(store: ChromaStore) -> None:
    """Two writers' version records sit beside the memories: the count given the version
    read just before leaves them out as the count does, without reading them again."""
    other = ChromaStore(store.client, HashEmbedder())
    assert other.writer != store.writer
    for writer, text in ((store, "I bought a red bicycle."), (other, "I sold the old one.")):
        RaMem(writer, counter=WordCounter()).add_turn(
            "Ana", text, at=datetime(2024, 3, 1), namespace="n"
        )
    version = store.version("n")
    assert len(version) == 2
    assert store.counted("n", version) == store.count("n") == 2
    assert store.counted("missing", frozenset()) == 0


def test_an_ephemeral_store_closed_during_a_read_says_it_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A read that finds no collection because another thread closed the store (its
    database dropped) raises "closed", never answers that the namespace does not exist."""
    from chromadb.errors import NotFoundError

    store = ChromaStore.ephemeral(HashEmbedder())

    def closed_meanwhile(namespace: str, *, create: bool = True) -> None:
        store.close()
        raise NotFoundError(f"collection of {namespace} not found")

    monkeypatch.setattr(store, "collection", closed_meanwhile)
    with pytest.raises(StoreError, match="closed"):
        store.has_namespace("someone")
