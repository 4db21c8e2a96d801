"""How often Chroma should store a collection's HNSW index (``SYNC_THRESHOLD``, issue 41).

    python benchmarks/bench_sync.py       # thresholds 1000 (Chroma's), 200, 100, 50, 20, 10
    python benchmarks/bench_sync.py --thresholds 1000,50 --repeats 1

Records an index has not yet stored live only in Chroma's log: each process's first touch of
the collection replays them, and each write reads them again. For every threshold, in fresh
processes on one embedded Chroma directory (vectors from the fleet benchmark's cache, so the
embedder's time is out of it):

- **ingest**: ``add_conversation`` of three LoCoMo dev conversations, one namespace each (ms);
- **add_turn**: 30 turns added one by one to a stored conversation (p50 of the last 25, ms);
- **first touch**: a fresh process's first ``count`` of each namespace (median ms);
- **first recall from a snapshot file** and **rebuilt from Chroma** (no file): a fresh
  process's first recall of each namespace, its query's vector computed beforehand (median ms).

Every threshold runs ``--repeats`` times, interleaved. Prints a table (medians over repeats)
and writes ``results/bench_sync.json``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ab_recall import result_of, serve_child, spawn
from bench_core import ms_since, write_result

import ramem_core.store.chroma as chroma_store
from ramem_core import RaMem
from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder
from ramem_core.loaders import load_conversations

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"
CACHE = ROOT / "benchmarks" / "results" / ".fleet-vectors.sqlite"
RESULT = ROOT / "benchmarks" / "results" / "bench_sync.json"
QUESTION = "When did Caroline go to the LGBTQ support group?"
USERS = 3


def _open(directory: str, threshold: int) -> RaMem:
    chroma_store.SYNC_THRESHOLD = threshold
    chroma_store.BATCH_SIZE = min(threshold, 100)
    return RaMem.open(directory, embedder=CachedEmbedder(MiniLMEmbedder(), CACHE))


def write(directory: str, threshold: int) -> dict[str, Any]:
    """Ingest USERS conversations, then add_turn one by one; leave snapshot files for u0-u2
    (``fileless-*`` namespaces hold the same conversations and no file)."""
    conversations = load_conversations(DATA)
    with _open(directory, threshold) as memory:
        start = time.perf_counter()
        for user in range(USERS):
            memory.add_conversation(conversations[user], namespace=f"u{user}")
        ingest_ms = ms_since(start)
        for user in range(USERS):
            memory.add_conversation(conversations[user], namespace=f"fileless-{user}")
            memory.recall(QUESTION, namespace=f"u{user}")  # builds the snapshot to persist
        at = datetime(2030, 1, 1, 9)
        turns = []
        for i in range(30):
            text = f"user message number {i} about the garden and the new job"
            memory.embedder.embed([text])
            t = time.perf_counter()
            memory.add_turn("user", text, at=at + timedelta(seconds=20 * i), namespace="fileless-0")
            turns.append(ms_since(t))
        memory.add_turn("user", "a warm-up namespace", at=at, namespace="live")
        memory.snapshots.persist()
        directory_files = memory.snapshots.files
        assert directory_files is not None
        for user in range(USERS):
            directory_files.remove(f"fileless-{user}")
    return {"ingest_ms": ingest_ms, "add_turn_p50_ms": statistics.median(turns[5:])}


def read(directory: str, threshold: int, what: str) -> dict[str, Any]:
    """A fresh process's first touch of each namespace: ``count`` or a first recall."""
    with _open(directory, threshold) as memory:
        memory.recall("a first request pays for imports", namespace="live")
        memory.embedder.embed([QUESTION])
        taken = []
        for user in range(USERS):
            ns = f"u{user}" if what == "from_file" else f"fileless-{user}"
            t = time.perf_counter()
            if what == "count":
                memory.store.count(ns)
            else:
                memory.recall(QUESTION, namespace=ns)
            taken.append(ms_since(t))
    return {what: statistics.median(taken)}


def run(thresholds: list[int], repeats: int) -> dict[str, Any]:
    rows: dict[int, list[dict[str, Any]]] = {t: [] for t in thresholds}
    with tempfile.TemporaryDirectory() as work:
        for repeat in range(repeats):
            for threshold in thresholds:
                directory = str(Path(work) / f"t{threshold}-r{repeat}")
                row = result_of(spawn(__file__, ROOT, "write", [directory, threshold]))
                for what in ("count", "from_file", "rebuilt"):
                    row |= result_of(spawn(__file__, ROOT, "read", [directory, threshold, what]))
                rows[threshold].append(row)
                print(f"  threshold {threshold}, repeat {repeat + 1}: {_fmt(row)}", flush=True)
                shutil.rmtree(directory)
    return {
        str(t): {k: round(statistics.median(r[k] for r in runs), 1) for k in runs[0]}
        for t, runs in rows.items()
    }


def _fmt(row: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in row.items())


COLUMNS = [
    ("ingest (ms)", "ingest_ms"),
    ("add_turn p50", "add_turn_p50_ms"),
    ("first touch", "count"),
    ("first recall, file", "from_file"),
    ("first recall, rebuilt", "rebuilt"),
]


def table(result: dict[str, Any]) -> str:
    head = "| sync threshold | " + " | ".join(name for name, _ in COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 1)]
    for threshold, row in result.items():
        lines.append(f"| {threshold} | " + " | ".join(f"{row[k]:.1f}" for _, k in COLUMNS) + " |")
    return "\n".join(lines)


def main() -> None:
    if "--child" in sys.argv:
        serve_child({"write": write, "read": read})
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--thresholds", default="1000,200,100,50,20,10")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not DATA.exists():
        print(f"skipped: {DATA} is absent")
        return
    thresholds = [int(t) for t in args.thresholds.split(",")]
    # the embedder's vectors are cached before anything is timed
    cached = CachedEmbedder(MiniLMEmbedder(), CACHE)
    with tempfile.TemporaryDirectory() as scratch, RaMem.open(scratch, embedder=cached) as m:
        for conversation in load_conversations(DATA)[:USERS]:
            cached.embed([u.content for u in m.anchorer.anchor(conversation)])
    result = run(thresholds, args.repeats)
    print()
    print(table(result))
    write_result(
        RESULT,
        {
            "thresholds": result,
            "shipped": chroma_store.SYNC_THRESHOLD,
            "repeats": args.repeats,
            "users": USERS,
            "command": "python benchmarks/bench_sync.py " + " ".join(sys.argv[1:]),
        },
    )


if __name__ == "__main__":
    main()
