"""RaMem against a real Chroma server (``chroma run``) on 127.0.0.1."""

from __future__ import annotations

import gc
import os
import stat
import sys
import time
import warnings
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

import ramem_core.store.chroma as chroma_module
import ramem_core.testing as testing
from ramem_core import ChromaStore, RaMem, StoreError
from ramem_core.testing import (
    HashEmbedder,
    StallingProxy,
    WordCounter,
    free_port,
    serve_chroma,
)
from tests.builders import ids
from tests.conftest import two_trips


@pytest.fixture(scope="module")
def chroma_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """A `chroma run` server on a free port: (port, the directory it serves)."""
    path = tmp_path_factory.mktemp("chroma-server") / "db"
    try:
        with serve_chroma(path) as port:
            yield port, path
    except FileNotFoundError:
        pytest.skip("the chroma CLI is not installed")


@pytest.fixture(scope="module")
def chroma_server(chroma_served: tuple[int, Path]) -> int:
    """The port of a `chroma run` server."""
    return chroma_served[0]


@pytest.fixture(autouse=True)
def _collect_http_clients() -> Iterator[None]:
    """chromadb's HTTP client keeps its connections until it is garbage-collected (its
    close() stops the shared system but not the HTTP session): collect dropped clients here,
    so their ResourceWarning cannot surface in whatever test runs next."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def _client(port: int, namespace: str) -> RaMem:
    """A RaMem on the test server (each call: another client, as another process would be)."""
    return RaMem.open(
        host="127.0.0.1",
        port=port,
        embedder=HashEmbedder(),
        counter=WordCounter(),
        namespace=namespace,
    )


@pytest.mark.slow
def test_ingest_and_recall_through_a_chroma_server(chroma_server: int) -> None:
    memory = _client(chroma_server, "server-test")
    memory.add_conversation(two_trips())
    [top] = memory.recall("Where did Ben eat grilled sardines by the river in August?", k=1)
    assert top.unit.source_ids == ("S3:1",)
    # a second client (another process in real life) sees the same memories
    other = _client(chroma_server, "server-test")
    assert other.count() == 6
    memory.drop()
    assert "server-test" not in other.store.namespaces()
    memory.close()  # HTTP connections released now, not by the garbage collector
    other.close()


def test_a_server_collection_takes_the_sync_threshold_made_or_older(
    chroma_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through a server too, RaMem's collections store their index every SYNC_THRESHOLD
    records, and one made before takes the setting at its next write."""
    from ramem_core.store import chroma

    def threshold(memory: RaMem) -> object:  # a fresh handle: what the server keeps
        store = memory.store
        assert isinstance(store, ChromaStore)
        collection = store.client.get_collection(f"{store.prefix}_sync-test")
        return (collection.configuration.get("hnsw") or {}).get("sync_threshold")

    with monkeypatch.context() as older:
        older.setattr(chroma, "SYNC_THRESHOLD", 1000)
        memory = _client(chroma_server, "sync-test")
        memory.add_turn("Ana", "I bought a red bicycle.", at=datetime(2024, 3, 1))
        assert threshold(memory) == 1000
        memory.close()
    memory = _client(chroma_server, "sync-test")
    memory.add_turn("Ana", "I sold the bicycle.", at=datetime(2024, 4, 1))
    assert threshold(memory) == chroma.SYNC_THRESHOLD
    assert memory.count() == 2
    memory.drop()
    memory.close()


@pytest.mark.slow
def test_two_workers_on_a_server_lose_nothing_and_see_deletes(chroma_server: int) -> None:
    def worker() -> RaMem:
        memory = _client(chroma_server, "two-workers")
        memory.snapshots.refresh_seconds = 0.0
        return memory

    first, second = worker(), worker()
    try:
        _two_workers(first, second)
    finally:
        first.drop()
        first.close()
        second.close()


def _two_workers(first: RaMem, second: RaMem) -> None:
    start = datetime(2023, 9, 1, 10, 0)
    for i in range(10):  # one user, two workers recording turns
        first.add_turn("user", f"note {i} from worker one", at=start + timedelta(minutes=i))
        second.add_turn("user", f"note {i} from worker two", at=start + timedelta(minutes=i))
    assert first.count() == 20
    assert len({e.unit.id for e in first.recall("note from worker", k=20)}) == 20
    [gone] = [u for u in second.store.get("two-workers") if u.content.endswith("9 from worker two")]
    second.delete(unit_ids=[gone.id])
    assert gone.id not in {e.unit.id for e in first.recall("note 9 from worker two", k=20)}
    second.add_turn("user", "a replacement note", at=start + timedelta(hours=1))  # count 20
    assert gone.id not in {e.unit.id for e in first.recall("note 9 from worker two", k=20)}


def test_unreachable_server_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="cannot reach the Chroma server"):
        RaMem.open(host="127.0.0.1", port=free_port(), embedder=HashEmbedder()).count()


@pytest.mark.slow
def test_the_directory_a_server_serves_is_not_opened_locally(
    chroma_served: tuple[int, Path],
) -> None:
    port, directory = chroma_served
    served = _client(port, "served")
    served.add_conversation(two_trips())
    with pytest.raises(StoreError, match=r"open in process \d+ \(a Chroma server\?\)"):
        RaMem.open(directory, embedder=HashEmbedder())
    assert served.recall("Where did Ben eat grilled sardines?", k=1)  # the server still serves
    served.drop()
    served.close()


@pytest.mark.slow
def test_tenant_and_database_reach_the_server(chroma_server: int) -> None:
    import chromadb
    from chromadb.config import Settings

    admin = chromadb.AdminClient(
        Settings(
            chroma_api_impl="chromadb.api.fastapi.FastAPI",
            chroma_server_host="127.0.0.1",
            chroma_server_http_port=chroma_server,
            anonymized_telemetry=False,
        )
    )
    admin.create_tenant("acme")
    admin.create_database("memories", tenant="acme")

    def memory(tenant: str | None = None, database: str | None = None) -> RaMem:
        return RaMem.open(
            host="127.0.0.1",
            port=chroma_server,
            tenant=tenant,
            database=database,
            namespace="t-1",
            embedder=HashEmbedder(),
        )

    with memory("acme", "memories") as acme:
        acme.add_conversation(two_trips())
    with memory() as default:  # the default tenant's database does not hold it
        assert "t-1" not in default.store.namespaces()
    with memory("acme", "memories") as again:
        assert again.count() == 6
        again.drop()


@pytest.mark.slow
def test_a_ready_client_is_used_and_left_open(chroma_server: int) -> None:
    import chromadb

    client = chromadb.HttpClient(host="127.0.0.1", port=chroma_server)
    memory = RaMem.open(client=client, embedder=HashEmbedder(), namespace="ready-client")
    assert isinstance(memory.store, ChromaStore)
    assert memory.store.remote  # snapshot files of any size are worth keeping
    memory.add_conversation(two_trips())
    assert memory.recall("Where did Ben eat grilled sardines?", k=1)
    with mock.patch.object(client, "close") as close:
        memory.close()
    close.assert_not_called()  # the caller's client stays open
    assert "ramem_ready-client" in [c.name for c in client.list_collections()]
    client.delete_collection("ramem_ready-client")


def test_ssl_and_headers_go_to_chromas_http_client() -> None:
    import chromadb
    import httpx

    with (
        mock.patch.object(httpx, "get") as probed,
        mock.patch.object(chromadb, "HttpClient", side_effect=ConnectionError("handshake")) as made,
        pytest.raises(StoreError, match=r"cannot reach the Chroma server at https://db:443"),
    ):
        RaMem.open(
            host="db",
            port=443,
            ssl=True,
            headers={"Authorization": "Bearer t0k3n"},
            tenant="acme",
            database="memories",
            embedder=HashEmbedder(),
        )
    assert probed.call_args.args == ("https://db:443/api/v2/heartbeat",)
    assert probed.call_args.kwargs["headers"] == {"Authorization": "Bearer t0k3n"}
    kwargs = made.call_args.kwargs
    assert kwargs["ssl"] is True
    assert kwargs["headers"] == {"Authorization": "Bearer t0k3n"}
    assert (kwargs["tenant"], kwargs["database"]) == ("acme", "memories")


def test_a_client_with_a_host_or_server_options_without_a_server_is_refused(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValueError, match=r"either a ready Chroma client or .*\(host\)"):
        RaMem.open(host="db", client=object(), embedder=HashEmbedder())
    with pytest.raises(ValueError, match="tenant is for a Chroma server"):
        RaMem.open(tmp_path, tenant="acme", embedder=HashEmbedder())
    with pytest.raises(ValueError, match="must be a Chroma client"):
        RaMem.open(client=object(), embedder=HashEmbedder())


@pytest.mark.slow
def test_a_stalled_server_is_a_store_error_within_the_timeout(chroma_server: int) -> None:
    """A server that accepts and never answers (SIGSTOP) fails a recall within the timeout,
    and an open against it fails too: nothing blocks for ever."""
    with StallingProxy(chroma_server) as proxy:
        memory = RaMem.open(
            host="127.0.0.1",
            port=proxy.port,
            timeout=1.0,
            embedder=HashEmbedder(),
            counter=WordCounter(),
            namespace="stalled",
        )
        memory.add_turn("Ana", "I bought a red bicycle.", at=datetime(2024, 3, 1))
        memory.snapshots.invalidate()
        proxy.stalled.set()
        began = time.monotonic()
        with pytest.raises(StoreError, match="ReadTimeout"):
            memory.recall("bicycle")
        with pytest.raises(StoreError, match="timed out"):  # another memory, shared client
            RaMem.open(
                host="127.0.0.1", port=proxy.port, timeout=1.0, embedder=HashEmbedder()
            ).count()
        with pytest.raises(StoreError, match="did not answer within 2 s"):  # a new client
            RaMem.open(host="127.0.0.1", port=proxy.port, timeout=2.0, embedder=HashEmbedder())
        assert time.monotonic() - began < 15
        proxy.stalled.clear()
        memory.drop()
        memory.close()


@pytest.mark.slow
def test_open_close_cycles_through_a_server_share_one_client(chroma_server: int) -> None:
    """Each chromadb HttpClient kept its sockets and about 1 MB after close(): RaMem shares one
    client per server, settings and timeout, so a loop of opens and closes reuses its
    connections instead of making new ones."""
    with StallingProxy(chroma_server) as proxy:
        stores = []
        for _ in range(10):
            memory = _client(proxy.port, "hygiene")
            memory.count()
            stores.append(memory.store)
            memory.close()
        assert len({id(s.client) for s in stores}) == 1  # type: ignore[attr-defined]
        assert proxy.connections <= 3  # the probe's, and the shared client's pool


@pytest.mark.slow
def test_an_export_moves_a_memory_to_a_server_with_the_same_recall(
    chroma_server: int, tmp_path: Path
) -> None:
    from ramem_core.loaders import demo_conversation

    conversation, questions = demo_conversation()
    with RaMem.open(tmp_path / "local", embedder=HashEmbedder(), counter=WordCounter()) as local:
        local.add_conversation(conversation)
        before = [ids(local.recall(q["question"])) for q in questions]
        local.transfer.export(tmp_path / "m.jsonl")
    server = _client(chroma_server, "moved")
    server.transfer.import_from(tmp_path / "m.jsonl")
    assert [ids(server.recall(q["question"])) for q in questions] == before
    server.drop()
    server.close()


def test_a_server_that_ignores_its_stop_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve_chroma` stops its server even when a graceful stop hangs (seen on CI: a
    `chroma run` still waiting on client connections 30 s after SIGTERM)."""
    fake = tmp_path / "bin" / "chroma"
    fake.parent.mkdir()
    fake.write_text(
        f"#!{sys.executable}\n"
        "import signal, socket, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "port = int(sys.argv[sys.argv.index('--port') + 1])\n"
        "server = socket.create_server(('127.0.0.1', port))\n"
        "time.sleep(600)\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(testing, "_STOP_GRACE_S", 0.5)
    started = time.monotonic()
    with serve_chroma(tmp_path / "db"):
        pass
    assert time.monotonic() - started < 20


def _stored(store: ChromaStore, namespace: str) -> dict[str, np.ndarray]:
    """Each memory's vector as Chroma holds it, read in one get."""
    got = store.collection(namespace).get(include=["embeddings"])
    embeddings = got["embeddings"]
    assert embeddings is not None
    return {
        i: np.asarray(v, dtype=np.float32)
        for i, v in zip(got["ids"], list(embeddings), strict=True)
        if not i.startswith(chroma_module.VERSION_ID)
    }


def test_a_load_of_many_pages_pairs_every_memory_with_its_vector(
    chroma_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chroma_module, "_BATCH", 2)  # six memories and a version record
    memory = _client(chroma_server, "split-pages")
    memory.add_conversation(two_trips())
    store = memory.store
    assert isinstance(store, ChromaStore)
    units, vectors = store.load("split-pages")
    stored = _stored(store, "split-pages")
    assert sorted(u.id for u in units) == sorted(stored)
    for unit, vector in zip(units, vectors, strict=True):
        np.testing.assert_array_equal(vector, stored[unit.id])
    memory.drop()
    memory.close()
