"""Live memory under load: add_turn, cold and warm recall, idle namespaces, threads.

    python benchmarks/bench_live.py                          # 1k, 20k and 100k memories
    python benchmarks/bench_live.py --sizes 1000 --session-turns 200   # a quick run

Prints one table per part and writes ``results/bench_live.json``:

- per namespace size: ``add_turn`` p50/p95 in a new live session (its first 20 turns, around
  turn 10) beside embedding the same text alone (interleaved, the same machine state), the
  first recall of a freshly opened memory with no snapshot file (built from Chroma, the file
  written) and of a restarted one (open the directory + first recall, from the file), and
  warm recall p50/p95;
- one session grown to ``--session-turns`` turns: ``add_turn`` around turn 10 and at its end;
- resident memory per idle cached namespace, and that the snapshot cache bound holds it;
- 8 threads sharing one ``RaMem``: recall and mixed add_turn + recall throughput and p95.

The stores are bench_core's synthetic ones (real texts and metadata, random unit vectors);
live turns and queries go through the default embedder.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
import tracemalloc
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from bench_core import build_scale_store, percentile, write_result
from synthetic import distinct_queries, synthetic_conversation

from ramem_core import ChromaStore, RaMem
from ramem_core.anchoring import RuleAnchorer
from ramem_core.embedding import MiniLMEmbedder

ROOT = Path(__file__).resolve().parents[1]

START = datetime(2030, 1, 1, 9, 0)


def rss_mb() -> float:
    """This process's resident memory now (Linux)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def timed_turns(
    memory: RaMem, embedder: MiniLMEmbedder, first: int, count: int, conversation: str
) -> tuple[list[float], list[float]]:
    """``count`` add_turn calls from turn ``first`` on, each beside embedding its text alone."""
    add_ms, embed_ms = [], []
    for i in range(first, first + count):
        text = f"user message number {i} about the garden and the new job"
        t = time.perf_counter()
        embedder.embed([text])
        embed_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        memory.add_turn(
            "user", text, at=START + timedelta(seconds=20 * i), conversation_id=conversation
        )
        add_ms.append((time.perf_counter() - t) * 1000)
    return add_ms, embed_ms


def bare_upserts(memory: RaMem, embedder: MiniLMEmbedder, count: int) -> list[float]:
    """``count`` bare Chroma upserts of one record each (text, vector, a little metadata)
    into a scratch collection of the same directory: the floor of any durable write. Timed
    after the turns, not interleaved with them (Chroma's log work would disturb both)."""
    assert isinstance(memory.store, ChromaStore)
    client = memory.store.client
    scratch = client.get_or_create_collection(
        "bench-scratch", embedding_function=None, metadata={"hnsw:space": "cosine"}
    )
    write_ms = []
    for i in range(count):
        text = f"user message number {i} about the garden and the new job"
        vector = embedder.embed([text])
        t = time.perf_counter()
        scratch.upsert(
            ids=[f"turn-{i}"],
            embeddings=vector,
            documents=[text],
            metadatas=[{"turn": i, "speaker": "user"}],
        )
        write_ms.append((time.perf_counter() - t) * 1000)
    client.delete_collection("bench-scratch")
    return write_ms


def bench_size(size: int, embedder: MiniLMEmbedder, n_queries: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        built = build_scale_store(size, tmp, embedder)
        build_s = time.perf_counter() - t
        memory = RaMem(built.store, namespace="bench")  # a freshly opened worker
        t = time.perf_counter()
        memory.recall("What did Alice say about the garden?", k=10)
        cold_s = time.perf_counter() - t  # built from Chroma (and its snapshot file written)
        memory.close()
        built.store.close()
        t = time.perf_counter()  # a restarted worker: opens the directory, reads the file
        store = ChromaStore.persistent(tmp, embedder)
        memory = RaMem(store, namespace="bench")
        memory.recall("What did Alice say about the garden?", k=10)
        restart_s = time.perf_counter() - t
        texts = distinct_queries(n_queries + 5, size)
        warmup, texts = texts[:5], texts[5:]  # every timed question is new (no cached vector)
        for q in warmup:
            memory.recall(q, k=10)
        recall_ms = []
        for q in texts:
            t = time.perf_counter()
            memory.recall(q, k=10)
            recall_ms.append((time.perf_counter() - t) * 1000)
        add_ms, embed_ms = timed_turns(memory, embedder, 0, 20, "live")
        write_ms = bare_upserts(memory, embedder, 20)
        memory.close()
        store.close()
    return {
        "memories": size,
        "build_s": build_s,
        "cold_first_recall_s": cold_s,
        "restart_first_recall_s": restart_s,
        "recall_p50_ms": percentile(recall_ms, 50),
        "recall_p95_ms": percentile(recall_ms, 95),
        "add_turn_p50_ms": percentile(add_ms, 50),
        "add_turn_p95_ms": percentile(add_ms, 95),
        "embed_p50_ms": percentile(embed_ms, 50),
        "embed_p95_ms": percentile(embed_ms, 95),
        "bare_chroma_upsert_p50_ms": percentile(write_ms, 50),
        "ratio_p50": percentile(add_ms, 50) / percentile(embed_ms, 50),
    }


def bench_long_session(turns: int, embedder: MiniLMEmbedder) -> dict[str, Any]:
    """One live session grown to ``turns`` turns in a 1k namespace."""
    with tempfile.TemporaryDirectory() as tmp:
        memory = build_scale_store(1000, tmp, embedder)
        memory.recall("warm up", k=5)
        early, early_embed = timed_turns(memory, embedder, 0, 20, "long")
        middle = max(turns - 40, 20)
        for i in range(20, middle):  # the turns in between, untimed
            at = START + timedelta(seconds=20 * i)
            memory.add_turn("user", f"message {i}: the weather", at=at, conversation_id="long")
        late, late_embed = timed_turns(memory, embedder, middle, turns - middle, "long")
        sessions = {u.context.session_id for u in memory.store.get("bench", conversation_id="long")}
        memory.store.close()
    assert len(sessions) == 1, sessions
    return {
        "session_turns": turns,
        "turn_10_p50_ms": percentile(early, 50),
        "turn_10_p95_ms": percentile(early, 95),
        "turn_10_embed_p50_ms": percentile(early_embed, 50),
        "turn_end_p50_ms": percentile(late, 50),
        "turn_end_p95_ms": percentile(late, 95),
        "turn_end_embed_p50_ms": percentile(late_embed, 50),
    }


def bench_idle_namespaces(embedder: MiniLMEmbedder, count: int, size: int) -> dict[str, Any]:
    """Resident memory per idle cached namespace, unbounded and with the default bound."""
    units = RuleAnchorer().anchor(synthetic_conversation(size))[:size]
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((len(units), embedder.dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    out: dict[str, Any] = {"namespaces": count, "memories_each": size}
    with tempfile.TemporaryDirectory() as tmp:
        store = ChromaStore.persistent(tmp, embedder)
        for i in range(count):
            store.upsert(f"user-{i}", units, vectors)
        # the bounded cache first: memory the unbounded one frees would be reused otherwise
        for label, bound in (("default_bound", None), ("unbounded", 1 << 40)):
            memory = RaMem(store) if bound is None else RaMem(store, cache_bytes=bound)
            tracemalloc.start()  # bytes held, exactly; RSS can hide them in reused memory
            before, held_before = rss_mb(), tracemalloc.get_traced_memory()[0]
            for i in range(count):
                memory.recall("What did Alice say about the garden?", k=5, namespace=f"user-{i}")
            after, held_after = rss_mb(), tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            cached = max(len(memory.snapshots.cached), 1)
            out[label] = {
                "cached_namespaces": len(memory.snapshots.cached),
                "rss_growth_mb": after - before,
                "rss_per_cached_namespace_mb": (after - before) / cached,
                "held_mb": (held_after - held_before) / 2**20,
                "held_per_cached_namespace_mb": (held_after - held_before) / 2**20 / cached,
            }
            memory.snapshots.invalidate()
        store.close()
    return out


def bench_threads(embedder: MiniLMEmbedder, size: int, threads: int) -> dict[str, Any]:
    """Recall and mixed add_turn + recall from 1 and from ``threads`` threads on one RaMem."""
    texts = distinct_queries(200, 99)
    out: dict[str, Any] = {"memories": size, "threads": threads}
    with tempfile.TemporaryDirectory() as tmp:
        memory = build_scale_store(size, tmp, embedder)
        memory.recall("warm up", k=10)

        def run(workers: int, per_worker: int, mixed: bool) -> dict[str, float]:
            latencies: list[float] = []
            lock = threading.Lock()

            def work(worker: int) -> None:
                mine = []
                for j in range(per_worker):
                    t = time.perf_counter()
                    if mixed and j % 2:
                        memory.add_turn(
                            "user",
                            f"worker {worker} says {texts[j]}",
                            at=START + timedelta(minutes=j),
                            conversation_id=f"w{worker}-{workers}",
                        )
                    else:
                        memory.recall(texts[(worker * per_worker + j) % len(texts)], k=10)
                    mine.append((time.perf_counter() - t) * 1000)
                with lock:
                    latencies.extend(mine)

            pool = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
            memory.retriever.embedder.forget()  # type: ignore[attr-defined]  # none is cached
            t = time.perf_counter()
            for thread in pool:
                thread.start()
            for thread in pool:
                thread.join()
            wall = time.perf_counter() - t
            return {
                "ops_per_s": len(latencies) / wall,
                "p50_ms": percentile(latencies, 50),
                "p95_ms": percentile(latencies, 95),
            }

        for mixed in (False, True):
            name = "mixed" if mixed else "recall"
            out[f"{name}_1_thread"] = run(1, 48, mixed)
            out[f"{name}_{threads}_threads"] = run(threads, 48 // threads * 2, mixed)
        memory.store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,20000,100000", help="namespace sizes")
    parser.add_argument("--queries", type=int, default=50, help="warm recalls per size")
    parser.add_argument("--session-turns", type=int, default=1500, help="long session length")
    parser.add_argument("--idle", type=int, default=32, help="namespaces for the RSS part")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_live.json"))
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    embedder.embed(["warm up the model"])
    result: dict[str, Any] = {"machine": {"cpus": os.cpu_count()}}

    print("add_turn and recall by namespace size (ms unless noted)")
    print(
        f"{'memories':>9} {'add p50':>8} {'add p95':>8} {'embed p50':>9} {'ratio':>6} "
        f"{'upsert p50':>10} {'cold s':>7} {'restart s':>9} {'recall p50':>10} {'recall p95':>10}"
    )
    result["sizes"] = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        row = bench_size(size, embedder, args.queries)
        result["sizes"].append(row)
        print(
            f"{size:>9} {row['add_turn_p50_ms']:>8.1f} {row['add_turn_p95_ms']:>8.1f} "
            f"{row['embed_p50_ms']:>9.1f} {row['ratio_p50']:>6.1f} "
            f"{row['bare_chroma_upsert_p50_ms']:>10.1f} {row['cold_first_recall_s']:>7.1f} "
            f"{row['restart_first_recall_s']:>9.1f} {row['recall_p50_ms']:>10.1f} "
            f"{row['recall_p95_ms']:>10.1f}",
            flush=True,
        )

    long = bench_long_session(args.session_turns, embedder)
    result["long_session"] = long
    print(f"\none session of {args.session_turns} turns (1k namespace)")
    print(
        f"  turn ~10: add_turn p50 {long['turn_10_p50_ms']:.1f} p95 {long['turn_10_p95_ms']:.1f}"
        f" (embed {long['turn_10_embed_p50_ms']:.1f});"
        f" turn ~{args.session_turns}: p50 {long['turn_end_p50_ms']:.1f}"
        f" p95 {long['turn_end_p95_ms']:.1f} (embed {long['turn_end_embed_p50_ms']:.1f})",
        flush=True,
    )

    idle = bench_idle_namespaces(embedder, args.idle, 500)
    result["idle_namespaces"] = idle
    print(f"\n{args.idle} namespaces of 500 memories, one recall each")
    for label in ("default_bound", "unbounded"):
        part = idle[label]
        print(
            f"  {label:>13}: {part['cached_namespaces']} cached, "
            f"held {part['held_mb']:.1f} MB ({part['held_per_cached_namespace_mb']:.2f} MB per "
            f"cached namespace), RSS {part['rss_growth_mb']:+.0f} MB",
            flush=True,
        )

    threads = bench_threads(embedder, 20_000 if "20000" in args.sizes else 1000, args.threads)
    result["threads"] = threads
    print(f"\n{args.threads} threads on one RaMem ({threads['memories']} memories)")
    for name in ("recall", "mixed"):
        for label in (f"{name}_1_thread", f"{name}_{args.threads}_threads"):
            part = threads[label]
            print(
                f"  {label:>18}: {part['ops_per_s']:6.1f} ops/s, "
                f"p50 {part['p50_ms']:.1f} ms, p95 {part['p95_ms']:.1f} ms",
                flush=True,
            )
    write_result(args.out, result)


if __name__ == "__main__":
    main()
