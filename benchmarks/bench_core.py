"""Core benchmark: ingest throughput, recall latency at scale, and LoCoMo Recall@10.

Run from the project root:

    python benchmarks/bench_core.py                    # 1k, 10k, 100k memories
    python benchmarks/bench_core.py --sizes 1000 --queries 50   # quick look
    python benchmarks/bench_core.py --sizes 100000 --skip-locomo --ab /tmp/base   # A/B

Prints tables and writes ``benchmarks/results/bench_core.json``. With ``--ab CHECKOUT`` each
timed part (ingest, then recall at each size) also runs on that checkout's ``ramem_core``, in a
fresh process right after this tree's, and a table gives both trees' ratios side by side.

Measured side by side in one run on the same collection: RaMem ``recall`` (frame induction,
episodic keys, validity stage), content-only ``recall`` (dense + BM25 on each memory's own
content) and a plain Chroma HNSW query, each embedding the query with the default embedder.
For scale the stored vectors are random unit vectors (embedding 100k texts would dominate the
run); texts, metadata and the query embedder are real.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from ab_recall import result_of, serve_child, spawn
from synthetic import distinct_queries, synthetic_conversation

from ramem_core import (
    ChromaStore,
    Conversation,
    MemoryUnit,
    RaMem,
    RetrievalConfig,
    RuleAnchorer,
)
from ramem_core.embedding import MiniLMEmbedder, RecentQueries
from ramem_core.evaluation import metrics
from ramem_core.loaders import load_conversations
from ramem_core.retrieval import CONTENT_ONLY

ROOT = Path(__file__).resolve().parents[1]

LOCOMO = ROOT.parent / "shared" / "data" / "locomo_dev.json"


def rss_mb() -> float:
    """Peak resident set size of this process, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_result(path: str | Path, result: dict[str, Any]) -> None:
    """Write a benchmark's JSON result (folders made as needed) and say where."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(f"\nwrote {out}")


def ms_since(start: float) -> float:
    """Milliseconds since ``start`` (a ``time.perf_counter()`` reading)."""
    return (time.perf_counter() - start) * 1000


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) of ``values``."""
    return float(np.percentile(np.array(values), q))


BLOCKS = 4


def block_ratios(ramem_ms: list[float], content_ms: list[float]) -> dict[str, float]:
    """The p95 ratio in each of :data:`BLOCKS` consecutive blocks of the interleaved
    questions: its median and range. One stall of either system moves the pooled p95 ratio
    by a tenth or more; the blocks show how far the ratio itself moves within one run."""
    size = len(ramem_ms) // BLOCKS
    ratios = [
        percentile(ramem_ms[b * size : (b + 1) * size], 95)
        / percentile(content_ms[b * size : (b + 1) * size], 95)
        for b in range(BLOCKS)
    ]
    return {"median": statistics.median(ratios), "low": min(ratios), "high": max(ratios)}


# ------------------------------------------------------------------ ingest


def ingest_conversations() -> tuple[list[Conversation], str]:
    """What an ingest is timed on, and its name: the LoCoMo dev conversations, or a synthetic
    conversation of 2,000 turns without the dev data."""
    if LOCOMO.exists():
        return load_conversations(LOCOMO), "LoCoMo dev (5 conversations)"
    return [synthetic_conversation(2000)], "synthetic (2000 turns)"


def bench_ingest(embedder: MiniLMEmbedder) -> dict[str, Any]:
    """Turns/s of a full ingest (anchor + embed + write) with the default embedder."""
    conversations, source = ingest_conversations()
    turns = sum(len(s.turns) for c in conversations for s in c.sessions)
    embedder.embed(["warm up the model"])
    with tempfile.TemporaryDirectory() as tmp:
        memory = RaMem(ChromaStore.persistent(tmp, embedder))
        t0 = time.perf_counter()
        units = [u for c in conversations for u in memory.anchorer.anchor(c)]
        t_anchor = time.perf_counter() - t0
        t1 = time.perf_counter()
        embedder.embed([u.content for u in units])
        t_embed = time.perf_counter() - t1
        t2 = time.perf_counter()
        report = memory.add_conversations(conversations)
        t_total = time.perf_counter() - t2
    return {
        "source": source,
        "turns": turns,
        "units": report.units,
        "ingest_turns_per_s": turns / t_total,
        "anchor_turns_per_s": turns / t_anchor,
        "embed_texts_per_s": len(units) / t_embed,
        "ingest_over_embedder": t_embed / t_total,  # the same texts embedded, alone
        "seconds": t_total,
    }


# ------------------------------------------------------------------ recall latency


def scale_memories(size: int, dimension: int) -> tuple[list[MemoryUnit], npt.NDArray[np.float32]]:
    """``size`` anchored memories of the synthetic conversation and random unit vectors for
    them (seed 0): the recall path reads vectors, not what they mean."""
    units = RuleAnchorer().anchor(synthetic_conversation(size))[:size]
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(units), dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return units, vectors


def build_scale_store(size: int, path: str, embedder: MiniLMEmbedder) -> RaMem:
    """``size`` anchored memories with random unit vectors in a persistent store."""
    units, vectors = scale_memories(size, embedder.dimension)
    store = ChromaStore.persistent(path, embedder)
    store.upsert("bench", units, vectors)
    return RaMem(store, namespace="bench")


def bench_recall(size: int, queries: int, embedder: MiniLMEmbedder, k: int) -> dict[str, Any]:
    """p50/p95 of RaMem recall vs content-only recall and a plain Chroma query, same store.
    Every timed question is new to both memories (no cached query vector)."""
    warmup, texts = (lambda t: (t[:5], t[5:]))(distinct_queries(queries + 5, size))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        memory = build_scale_store(size, tmp, embedder)
        build_s = time.perf_counter() - t0
        content = RaMem(memory.store, config=CONTENT_ONLY, namespace="bench")
        t1 = time.perf_counter()
        memory.snapshots.get("bench")  # episodic index + arrays + vectors, from Chroma
        snapshot_s = time.perf_counter() - t1
        t1 = time.perf_counter()
        content.snapshots.get("bench")
        content_snapshot_s = time.perf_counter() - t1
        # a built snapshot of this size writes its file in a thread (seconds at 100k): wait
        # for both, or the first seconds of the timed loop share the cores with the writes
        t1 = time.perf_counter()
        memory.snapshots.persist()
        content.snapshots.persist()
        files_s = time.perf_counter() - t1
        grounded = sum(memory.frame(q).is_grounded for q in texts)
        for q in warmup:  # warm every path
            memory.recall(q, k=k)
            content.recall(q, k=k)
        memory.retriever.embedder.forget()  # frame() above embedded the relation questions
        content.retriever.embedder.forget()
        ramem_ms, content_ms, chroma_ms = [], [], []
        assert isinstance(memory.store, ChromaStore)
        collection = memory.store.collection("bench")
        for q in texts:  # interleaved so all see the same machine state
            t = time.perf_counter()
            memory.recall(q, k=k)
            ramem_ms.append(ms_since(t))
            t = time.perf_counter()
            content.recall(q, k=k)
            content_ms.append(ms_since(t))
            t = time.perf_counter()
            vector = embedder.embed([q])[0]
            collection.query(query_embeddings=[vector], n_results=k)  # documents + metadata
            chroma_ms.append(ms_since(t))
        # the same questions again, in two blocks: with onnxruntime's spinning worker threads
        # (its default) and without (RaMem's default), new to the memory each time
        spin_ms, quiet_ms = [], []
        for spin, times in ((True, spin_ms), (False, quiet_ms)):
            memory.retriever.embedder = RecentQueries(MiniLMEmbedder(spin=spin))
            memory.retriever.embedder.embed(["warm up the model"])
            memory.retriever.embedder.forget()
            for q in texts:
                t = time.perf_counter()
                memory.recall(q, k=k)
                times.append(ms_since(t))
    return {
        "memories": size,
        "queries": queries,
        "grounded_share": grounded / queries,
        "build_s": build_s,
        "snapshot_s": snapshot_s,
        "content_snapshot_s": content_snapshot_s,
        "snapshot_files_s": files_s,
        "ramem_p50_ms": percentile(ramem_ms, 50),
        "ramem_p95_ms": percentile(ramem_ms, 95),
        "content_p50_ms": percentile(content_ms, 50),
        "content_p95_ms": percentile(content_ms, 95),
        "chroma_p50_ms": percentile(chroma_ms, 50),
        "chroma_p95_ms": percentile(chroma_ms, 95),
        "ratio_p50": statistics.median(ramem_ms) / statistics.median(content_ms),
        "ratio_p95": percentile(ramem_ms, 95) / percentile(content_ms, 95),
        "ratio_p95_blocks": block_ratios(ramem_ms, content_ms),
        "spinning_p50_ms": percentile(spin_ms, 50),
        "spinning_p95_ms": percentile(spin_ms, 95),
        "quiet_p50_ms": percentile(quiet_ms, 50),
        "quiet_p95_ms": percentile(quiet_ms, 95),
        "peak_rss_mb": rss_mb(),
    }


# ------------------------------------------------------------------ LoCoMo Recall@10


def bench_locomo(embedder: MiniLMEmbedder, k: int) -> dict[str, Any] | None:
    """Evidence Recall@k of RaMem and content-only on the same units (categories 1-4)."""
    if not LOCOMO.exists():
        return None
    samples = json.loads(LOCOMO.read_text(encoding="utf-8"))
    conversations = {c.id: c for c in load_conversations(LOCOMO)}
    names = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
    scores: dict[str, dict[str, list[float]]] = {"ramem": {}, "content": {}}
    with tempfile.TemporaryDirectory() as tmp:
        store = ChromaStore.persistent(tmp, embedder)
        ramem = RaMem(store, config=RetrievalConfig().settled())  # no timing in rankings
        content = RaMem(store, config=CONTENT_ONLY)
        for sample in samples:
            ns = sample["sample_id"]
            ramem.add_conversation(conversations[ns], namespace=ns)
            for qa in sample["qa"]:
                category = qa.get("category")
                gold = metrics.parse_evidence(qa.get("evidence", []))
                if category not in names or not gold:
                    continue
                for system, memory in (("ramem", ramem), ("content", content)):
                    evidence = memory.recall(qa["question"], k=k, namespace=ns)
                    got = [sid for e in evidence for sid in e.unit.source_ids]
                    share = metrics.evidence_recall(gold, got)
                    scores[system].setdefault(names[category], []).append(share)
                    scores[system].setdefault("overall", []).append(share)
    return {
        system: {cat: float(np.mean(v)) for cat, v in by_cat.items()}
        for system, by_cat in scores.items()
    } | {"questions": len(scores["ramem"]["overall"])}


# ------------------------------------------------------------------ main


def in_tree(tree: Path, name: str, *args: Any) -> Any:
    """:data:`CHILD_PARTS`' ``name`` called with ``args`` in a fresh process whose
    ``ramem_core`` is ``tree``'s."""
    return result_of(spawn(__file__, tree, name, list(args)))


def _on_this_tree(result: dict[str, Any]) -> dict[str, Any]:
    import ramem_core

    return {**result, "ramem_core": str(Path(ramem_core.__file__ or "").parents[1])}


CHILD_PARTS: dict[str, Callable[..., dict[str, Any]]] = {
    "bench_ingest": lambda: _on_this_tree(bench_ingest(MiniLMEmbedder())),
    "bench_recall": lambda size, queries, k: _on_this_tree(
        bench_recall(size, queries, MiniLMEmbedder(), k)
    ),
}
"""The timed parts a ``--child`` process runs (each reports which ``ramem_core`` it ran)."""


AB_ROWS = (
    ("ingest / embedder alone", "ingest", "ingest_over_embedder", ">= 0.9"),
    ("recall p95 / content-only p95", "recall", "ratio_p95", "<= 1.2 at 100k"),
    ("recall p95 ratio, median of 4 blocks", "recall", ("ratio_p95_blocks", "median"), ""),
    ("recall p50 / content-only p50", "recall", "ratio_p50", ""),
    ("RaMem recall p95 (ms)", "recall", "ramem_p95_ms", ""),
    ("content-only recall p95 (ms)", "recall", "content_p95_ms", ""),
)


def _value(row: dict[str, Any], key: str | tuple[str, ...]) -> float:
    out: Any = row
    for part in (key,) if isinstance(key, str) else key:
        out = out[part]
    return float(out)


def report_ab(ab: dict[str, Any]) -> None:
    """Both trees' ratios side by side (recall rows once per size)."""
    print(f"\nA/B, one run: this = {ab['this']}, other = {ab['other']}")
    print(f"{'':<52} {'this':>8} {'other':>8} {'this/other':>10}  target")
    for name, part, key, target in AB_ROWS:
        pairs = (
            [("", ab["ingest"])]
            if part == "ingest"
            else [(f" at {r['this']['memories']:,}", r) for r in ab["recall"]]
        )
        for suffix, pair in pairs:
            a, b = _value(pair["this"], key), _value(pair["other"], key)
            print(f"{name + suffix:<52} {a:>8.2f} {b:>8.2f} {a / b:>10.2f}  {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_core.json"))
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--ab", type=Path, help="another checkout, measured beside this one")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        serve_child(CHILD_PARTS)
        return
    ab: dict[str, Any] = {"this": str(ROOT), "other": str(args.ab), "recall": []}
    embedder = MiniLMEmbedder()
    results: dict[str, Any] = {"machine": {"cpus": len(__import__("os").sched_getaffinity(0))}}

    print("== ingest (default embedder: all-MiniLM-L6-v2 int8 ONNX)", flush=True)
    ingest = bench_ingest(embedder)
    results["ingest"] = ingest
    if args.ab:
        ab["ingest"] = {"this": ingest, "other": in_tree(args.ab, "bench_ingest")}
    print(
        f"{ingest['source']}: {ingest['turns']} turns in {ingest['seconds']:.1f} s -> "
        f"{ingest['ingest_turns_per_s']:.0f} turns/s (anchoring alone "
        f"{ingest['anchor_turns_per_s']:.0f}/s, embedding alone "
        f"{ingest['embed_texts_per_s']:.0f}/s)",
        flush=True,
    )

    print(f"\n== recall latency (k={args.k}), RaMem vs content-only, same store", flush=True)
    header = (
        f"{'memories':>9} {'grounded':>8} {'RaMem p50':>10} {'RaMem p95':>10} "
        f"{'content p50':>11} {'content p95':>11} {'ratio p95':>9} {'Chroma p95':>10} "
        f"{'snapshot s':>10} {'RSS MiB':>8} {'spin p95':>8} {'no-spin p95':>11}"
    )
    print(header, flush=True)
    results["recall"] = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        row = bench_recall(size, args.queries, embedder, args.k)
        results["recall"].append(row)
        if args.ab:
            other = in_tree(args.ab, "bench_recall", size, args.queries, args.k)
            ab["recall"].append({"this": row, "other": other})
        print(
            f"{row['memories']:>9} {row['grounded_share']:>8.0%} {row['ramem_p50_ms']:>10.1f} "
            f"{row['ramem_p95_ms']:>10.1f} {row['content_p50_ms']:>11.1f} "
            f"{row['content_p95_ms']:>11.1f} {row['ratio_p95']:>9.2f} "
            f"{row['chroma_p95_ms']:>10.1f} {row['snapshot_s']:>10.1f} {row['peak_rss_mb']:>8.0f} "
            f"{row['spinning_p95_ms']:>8.1f} {row['quiet_p95_ms']:>11.1f}",
            flush=True,
        )
        blocks = row["ratio_p95_blocks"]
        print(
            f"{'':>9} p95 ratio in {BLOCKS} blocks of the same questions: median "
            f"{blocks['median']:.2f} ({blocks['low']:.2f}-{blocks['high']:.2f})",
            flush=True,
        )

    if not args.skip_locomo:
        locomo = bench_locomo(embedder, args.k)
        results["locomo_recall"] = locomo
        if locomo is None:
            print("\nLoCoMo dev split not found: skipped Recall@10", flush=True)
        else:
            cats = ["multi-hop", "temporal", "open-domain", "single-hop", "overall"]
            print(f"\n== LoCoMo dev evidence Recall@{args.k} ({locomo['questions']} questions)")
            print(f"{'system':>8} " + " ".join(f"{c:>11}" for c in cats))
            for system in ("ramem", "content"):
                print(f"{system:>8} " + " ".join(f"{locomo[system][c]:>11.3f}" for c in cats))

    if args.ab:
        results["ab"] = ab
        report_ab(ab)
    write_result(args.out, results)


if __name__ == "__main__":
    main()
