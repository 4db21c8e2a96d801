"""Where the time of each cold path goes (issue 41): one LoCoMo dev conversation, this machine.

    python benchmarks/profile_paths.py build        # a snapshot built from the store, by part
    python benchmarks/profile_paths.py cold         # a first recall with no snapshot file, and
                                                    # its reads, through a chroma run server
                                                    # (and the get split in two, at once)
    python benchmarks/profile_paths.py shared-file  # a first recall from a snapshot file, through
                                                    # a chroma run server
    python benchmarks/profile_paths.py add-turn     # add_turn on a local directory
    python benchmarks/profile_paths.py ingest       # bulk ingest beside the embedder alone
    ... --profile 25                                # and cProfile's 25 costliest calls

Times are medians (build: of 7 runs). A profile says where to look; the ratios the issue sets
are measured by ``bench_fleet.py`` (``--ab`` for a change's before and after).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ramem_core import RaMem
from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder
from ramem_core.index.columns import MemoryColumns
from ramem_core.index.episodic import EpisodicIndex
from ramem_core.index.snapshot import Snapshot, session_spans
from ramem_core.loaders import load_conversations
from ramem_core.store.chroma import ChromaStore
from ramem_core.testing import serve_chroma

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"
CACHE = ROOT / "benchmarks" / "results" / ".fleet-vectors.sqlite"
QUESTION = "When did Caroline go to the LGBTQ support group?"


def _median_ms(run: Callable[[], Any], times: int = 7) -> float:
    taken = []
    for _ in range(times):
        start = time.perf_counter()
        run()
        taken.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(taken), 1)


def _profiled(run: Callable[[], Any], top: int) -> None:
    if top:
        profile = cProfile.Profile()
        profile.runcall(run)
        pstats.Stats(profile).sort_stats("tottime").print_stats(top)


def build(work: Path, top: int) -> None:
    with RaMem.open(work / "local", embedder=CachedEmbedder(MiniLMEmbedder(), CACHE)) as memory:
        memory.add_conversation(load_conversations(DATA)[0], namespace="u0")
        units, vectors = memory.store.load("u0")
        keys = memory.snapshots.keys
        spans = session_spans(units)
        collection = memory.store.collection("u0")  # type: ignore[attr-defined]
        print(f"{len(units)} memories")
        rows = {
            "bare Chroma get (documents, metadata, vectors)": lambda: collection.get(
                include=["documents", "metadatas", "embeddings"]
            ),
            "the store's load (the get, decoded)": lambda: memory.store.load("u0"),
            "snapshot build": lambda: Snapshot(units, vectors, keys),
            "  of which the per-memory columns": lambda: MemoryColumns.of(units, spans),
            "  of which the episodic index": lambda: EpisodicIndex(units, vectors, keys),
        }
        for name, run in rows.items():
            print(f"{name:50} {_median_ms(run):8.1f} ms")
        _profiled(lambda: Snapshot(units, vectors, keys), top)


def shared_file(work: Path, top: int) -> None:
    embedder = CachedEmbedder(MiniLMEmbedder(), CACHE)
    conversations = load_conversations(DATA)
    with serve_chroma(work / "db") as port:
        snapshots = work / "snapshots"
        with RaMem.open(
            host="127.0.0.1", port=port, embedder=embedder, snapshot_dir=snapshots
        ) as writer:
            for user in range(3):
                writer.add_conversation(conversations[user], namespace=f"u{user}")
                writer.recall("hello", namespace=f"u{user}")
            writer.snapshots.persist()
        with RaMem.open(
            host="127.0.0.1", port=port, embedder=embedder, snapshot_dir=snapshots
        ) as reader:
            reader.recall("a first request pays for imports", namespace="u0")
            embedder.embed([QUESTION])
            for user in (1, 2):
                start = time.perf_counter()
                reader.recall(QUESTION, namespace=f"u{user}")
                taken = (time.perf_counter() - start) * 1000
                print(f"first recall of u{user} from its snapshot file: {taken:.1f} ms")
            warm = _median_ms(lambda: reader.recall(QUESTION, namespace="u1"), 20)
            print(f"warm recall: {warm} ms")
            reader.snapshots.invalidate("u2")
            _profiled(lambda: reader.recall(QUESTION, namespace="u2"), top)


def add_turn(work: Path, top: int) -> None:
    embedder = MiniLMEmbedder()
    with RaMem.open(work / "local", embedder=embedder) as memory:
        memory.add_conversation(load_conversations(DATA)[1], namespace="live")
        start = datetime(2030, 1, 1, 9)
        texts = [f"user message number {i} about the garden and the new job" for i in range(30)]
        add, embed = [], []
        for i, text in enumerate(texts):
            t = time.perf_counter()
            embedder.embed([text])
            embed.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            memory.add_turn("user", text, at=start + timedelta(seconds=20 * i), namespace="live")
            add.append((time.perf_counter() - t) * 1000)
        print(f"add_turn p50 {statistics.median(add[5:]):.1f} ms")
        print(f"embedding the turn p50 {statistics.median(embed[5:]):.1f} ms")
        at = start + timedelta(hours=1)
        _profiled(lambda: memory.add_turn("user", "one more turn", at=at, namespace="live"), top)


def ingest(work: Path, top: int) -> None:
    embedder = MiniLMEmbedder()
    conversation = load_conversations(DATA)[2]
    with RaMem.open(work / "local", embedder=embedder) as memory:
        texts = [u.content for u in memory.anchorer.anchor(conversation)]
        embedder.embed(["warm up"])
        start = time.perf_counter()
        embedder.embed(texts)
        alone = time.perf_counter() - start
        runs: dict[str, float] = {}
        profile = cProfile.Profile() if top else None
        start = time.perf_counter()
        if profile is not None:
            profile.enable()
        memory.add_conversation(conversation, namespace="bulk")
        if profile is not None:
            profile.disable()
        runs["ingest"] = time.perf_counter() - start
        rate, ratio = len(texts) / runs["ingest"], alone / runs["ingest"]
        print(f"{len(texts)} turns: the embedder alone {len(texts) / alone:.0f} turns/s")
        print(f"ingest {rate:.0f} turns/s ({ratio:.3f}x the embedder alone)")
        if profile is not None:
            pstats.Stats(profile).sort_stats("cumulative").print_stats(top)


def cold(work: Path, top: int) -> None:
    embedder = CachedEmbedder(MiniLMEmbedder(), CACHE)
    conversation = load_conversations(DATA)[0]
    with (
        serve_chroma(work / "db") as port,
        RaMem.open(host="127.0.0.1", port=port, embedder=embedder) as memory,
    ):
        users = [f"u{user}" for user in range(8)]
        for user in users:
            memory.add_conversation(conversation, namespace=user)
        store = memory.store
        assert isinstance(store, ChromaStore)
        memory.recall("a first request pays for imports", namespace=users[0])
        embedder.embed([QUESTION])
        print(f"{store.count(users[0])} memories a user, through a chroma run server")

        def get(user: str, include: list[str]) -> Callable[[], Any]:
            return lambda: store.collection(user).get(include=include)

        def both(user: str) -> None:  # the two reads of a load, at once
            reader = threading.Thread(target=get(user, ["embeddings"]))
            reader.start()
            get(user, ["documents", "metadatas"])()
            reader.join()

        def first_recall(user: str) -> None:
            memory.snapshots.invalidate(user)  # (a dict removal: not a cost to see)
            memory.recall(QUESTION, namespace=user)

        rows: dict[str, Callable[[str], Any]] = {
            "bare Chroma get (documents, metadata, vectors)": lambda u: get(
                u, ["documents", "metadatas", "embeddings"]
            )(),
            "  its documents and metadata alone": lambda u: get(u, ["documents", "metadatas"])(),
            "  its vectors alone": lambda u: get(u, ["embeddings"])(),
            "  the two at once": both,
            "the store's load (the get, decoded)": store.load,
            "first recall (a snapshot built from the store)": first_recall,
        }
        for name, run in rows.items():  # each row over the users in turn, 3 rounds
            taken = []
            for _ in range(3):
                for user in users[1:]:
                    start = time.perf_counter()
                    run(user)
                    taken.append((time.perf_counter() - start) * 1000)
            print(f"{name:50} {statistics.median(taken):8.1f} ms")
        memory.snapshots.invalidate(users[1])
        _profiled(lambda: memory.recall(QUESTION, namespace=users[1]), top)


PATHS = {
    "build": build,
    "cold": cold,
    "shared-file": shared_file,
    "add-turn": add_turn,
    "ingest": ingest,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", choices=sorted(PATHS))
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile's top N")
    args = parser.parse_args()
    if not DATA.exists():
        print(f"skipped: {DATA} not found")
        return
    with tempfile.TemporaryDirectory() as tmp:
        PATHS[args.path](Path(tmp), args.profile)


if __name__ == "__main__":
    main()
