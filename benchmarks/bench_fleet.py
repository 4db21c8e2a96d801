"""Many users across worker processes on one Chroma server (issue 22's benchmark).

    python benchmarks/bench_fleet.py                  # U=300 users (~170k memories), W=2
    python benchmarks/bench_fleet.py --users 20       # a quick run

Starts ``chroma run`` on a free local port, stores U users (user ``u`` holds LoCoMo dev
conversation ``u mod 5`` in namespace ``user-u``; a cached MiniLM embedder computes each text
once), then measures, side by side on this machine:

- first recall of a user a worker has never served (after the worker's own first request,
  for another user, has paid for its imports): rebuilt from Chroma (no snapshot file)
  against a bare Chroma get of the same namespace's records, and loaded from a shared
  snapshot file;
- a random-user request stream on W worker processes (``cache_bytes`` at its default, shared
  snapshot files): recall p50/p95, and warm recall (one user again and again);
- worker RSS and snapshot bytes per memory;
- ``add_turn`` p50 through the server and on a local directory, beside embedding the turn and
  beside one bare Chroma upsert of the same record (into an empty collection and into a copy
  of the user's collection);
- ingest turns/s through the server with the real embedder against the embedder alone on the
  same texts.

Prints a table and writes ``results/bench_fleet.json``; stops its server.

With ``--ab TREE`` (another checkout, e.g. ``git worktree add /tmp/base <commit>``) every
phase runs for both checkouts on the same data, each in processes that import that checkout's
``ramem_core`` and on a server of its own, holding what that checkout stored (how a collection
is made changes what reading it costs); the checkouts take turns to go first from phase to
phase. The table gives both and their ratios.
The floor of ``add_turn`` (one bare upsert) writes to collections configured as that
checkout configures its own.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ab_recall import result_of, serve_child, spawn
from bench_core import ms_since, percentile, write_result
from bench_live import rss_mb

from ramem_core import RaMem
from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder
from ramem_core.loaders import load_conversations
from ramem_core.store.chroma import ChromaStore
from ramem_core.store.codec import to_metadata
from ramem_core.testing import serve_chroma

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"
RESULT = ROOT / "benchmarks" / "results" / "bench_fleet.json"
CACHE = ROOT / "benchmarks" / "results" / ".fleet-vectors.sqlite"


def _questions() -> list[list[str]]:
    """Each dev conversation's questions."""

    samples = json.loads(DATA.read_text(encoding="utf-8"))
    return [[qa["question"] for qa in s.get("qa", [])] for s in samples]


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values, 50), 1),
        "p95": round(percentile(values, 95), 1),
        "n": len(values),
    }


# ------------------------------------------------------------------ workers (processes)


def worker(task: dict[str, Any]) -> dict[str, Any]:
    """One worker process: a RaMem on the server, running one phase's requests."""
    embedder = CachedEmbedder(MiniLMEmbedder(), CACHE)
    snapshot_dir = task.get("snapshot_dir")
    memory = RaMem.open(
        host="127.0.0.1", port=task["port"], snapshot_dir=snapshot_dir, embedder=embedder
    )
    questions = task["questions"]
    rng = random.Random(task["seed"])
    result: dict[str, Any] = {"first": [], "bare_get": [], "random": [], "warm": []}
    store = memory.store
    assert isinstance(store, ChromaStore)
    if task.get("warmup") is not None:  # the process's own first request (imports, patterns)
        memory.recall(questions[0][0], namespace=f"user-{task['warmup']}")
    for user in task.get("first_users", []):
        ns = f"user-{user}"
        question = rng.choice(questions[user % len(questions)])
        embedder.embed([question])  # the query's vector is not part of what is measured
        if task.get("bare"):
            t = time.perf_counter()
            store.collection(ns).get(include=["documents", "metadatas", "embeddings"])
            result["bare_get"].append(ms_since(t))
        t = time.perf_counter()
        memory.recall(question, namespace=ns)
        result["first"].append(ms_since(t))
    users = task.get("random_users", [])
    for _ in range(task.get("requests", 0)):
        user = rng.choice(users)
        question = rng.choice(questions[user % len(questions)])
        embedder.embed([question])
        t = time.perf_counter()
        memory.recall(question, namespace=f"user-{user}")
        result["random"].append(ms_since(t))
    if users:
        ns = f"user-{users[0]}"
        pool = questions[users[0] % len(questions)]
        for question in pool[:5]:
            embedder.embed([question])
            memory.recall(question, namespace=ns)
        for _ in range(100):
            question = rng.choice(pool)
            embedder.embed([question])
            t = time.perf_counter()
            memory.recall(question, namespace=ns)
            result["warm"].append(ms_since(t))
        cached = memory.snapshots.cached
        held = memory.snapshots.nbytes
        memories = sum(len(memory.snapshots.get(ns)) for ns in cached)
        result["bytes_per_memory"] = held / max(memories, 1)
        result["cache_bytes"] = memory.snapshots.cache_bytes
        result["cached_users"] = len(cached)
    if task.get("persist"):
        memory.snapshots.persist()
    result["rss_mb"] = rss_mb()
    result["ramem_core"] = str(Path(sys.modules["ramem_core"].__file__ or "").parents[1])
    memory.close()
    return result


def run_workers(tasks: list[dict[str, Any]], tree: Path = ROOT) -> list[dict[str, Any]]:
    """Run ``tasks`` in as many fresh processes at once, on ``tree``; results in order."""
    children = [spawn(__file__, tree, "worker", [task]) for task in tasks]
    return [result_of(c) for c in children]


def in_tree(tree: Path, name: str, *args: Any) -> Any:
    """This module's function ``name`` called with ``args`` in a fresh process on ``tree``."""
    return result_of(spawn(__file__, tree, name, list(args)))


# ------------------------------------------------------------------ phases


def timed_ingest(port: int, users: int) -> dict[str, Any]:
    """Store the first ``users`` users (namespaces ``user-N``) with the real
    embedder, timed against the embedder alone on the same texts."""
    conversations = load_conversations(DATA)
    real = MiniLMEmbedder()
    texts_total, ingest_s, embed_s = 0, 0.0, 0.0
    with RaMem.open(host="127.0.0.1", port=port, embedder=real) as memory:
        real.embed(["warm up"])
        for user in range(users):
            conversation = conversations[user % len(conversations)]
            texts = [u.content for u in memory.anchorer.anchor(conversation)]
            t = time.perf_counter()
            real.embed(texts)
            embed_s += time.perf_counter() - t
            t = time.perf_counter()
            report = memory.add_conversation(conversation, namespace=f"user-{user}")
            ingest_s += time.perf_counter() - t
            texts_total += report.turns
    return {
        "ingest_turns_per_s": round(texts_total / ingest_s, 1),
        "embedder_turns_per_s": round(texts_total / embed_s, 1),
        "ingest_over_embedder": round(embed_s / ingest_s, 3),
    }


def ingest(port: int, users: int) -> dict[str, Any]:
    """Store every user (the first few timed by :func:`timed_ingest`)."""
    conversations = load_conversations(DATA)
    timed = min(3, users)
    result = timed_ingest(port, timed)
    cached = CachedEmbedder(MiniLMEmbedder(), CACHE)
    with RaMem.open(host="127.0.0.1", port=port, embedder=cached) as memory:
        start = time.perf_counter()
        for user in range(timed, users):
            memory.add_conversation(
                conversations[user % len(conversations)], namespace=f"user-{user}"
            )
            if (user + 1) % 25 == 0 or user + 1 == users:
                rate = (user + 1 - timed) / (time.perf_counter() - start)
                print(f"  stored {user + 1}/{users} users ({rate:.1f} users/s)", flush=True)
        memories = sum(memory.count(namespace=f"user-{u}") for u in range(users))
    return {"users": users, "memories": memories, **result}


def live_turns(port: int, turns: int) -> dict[str, Any]:
    """add_turn through the server and on a local directory, each beside embedding the turn
    and one bare upsert of the same record (an empty collection, a copy of the namespace)."""
    embedder = MiniLMEmbedder()
    out: dict[str, Any] = {}
    with RaMem.open(host="127.0.0.1", port=port, embedder=embedder) as source:
        units, vectors = source.store.load("user-0")
    with tempfile.TemporaryDirectory() as local:
        for where in ("server", "local"):
            memory = (
                RaMem.open(host="127.0.0.1", port=port, embedder=embedder)
                if where == "server"
                else RaMem.open(local, embedder=embedder)
            )
            ns = "live-bench"
            memory.add_units(units, namespace=ns)
            store = memory.store
            assert isinstance(store, ChromaStore)
            client = store.client
            # the floor's collections are configured as this checkout makes its own (how
            # often the index is stored changes what an upsert costs)
            made = store.collection(ns).metadata or {}
            hnsw = {k: v for k, v in made.items() if k.startswith("hnsw:")}
            empty = client.get_or_create_collection(
                "bench-empty", embedding_function=None, metadata=hnsw or None
            )
            copy = client.get_or_create_collection(
                "bench-copy", embedding_function=None, metadata=hnsw or None
            )
            copy.upsert(
                ids=[u.id for u in units],
                documents=[u.content for u in units],
                embeddings=vectors,
                metadatas=[to_metadata(u) for u in units],  # type: ignore[misc]
            )
            start = datetime(2030, 1, 1, 9)
            timings: dict[str, list[float]] = {"add_turn": [], "embed": [], "empty": [], "copy": []}
            for i in range(turns + 5):
                text = f"user message number {i} about the garden and the new job"
                t = time.perf_counter()
                vector = embedder.embed([text])
                embed_ms = ms_since(t)
                t = time.perf_counter()
                unit = memory.add_turn(
                    "user", text, at=start + timedelta(seconds=20 * i), namespace=ns
                )
                add_ms = ms_since(t)
                bare: dict[str, float] = {}
                for name, collection in (("empty", empty), ("copy", copy)):
                    t = time.perf_counter()
                    collection.upsert(
                        ids=[f"bare-{i}"],
                        documents=[unit.content],
                        embeddings=vector,
                        metadatas=[to_metadata(unit)],  # type: ignore[list-item]
                    )
                    bare[name] = ms_since(t)
                if i >= 5:  # the first turns open the session and warm the caches
                    timings["add_turn"].append(add_ms)
                    timings["embed"].append(embed_ms)
                    timings["empty"].append(bare["empty"])
                    timings["copy"].append(bare["copy"])
            client.delete_collection("bench-empty")
            client.delete_collection("bench-copy")
            memory.drop(namespace=ns)
            memory.close()
            p50 = {name: percentile(values, 50) for name, values in timings.items()}
            out[where] = {
                "add_turn_p50_ms": round(p50["add_turn"], 1),
                "embed_p50_ms": round(p50["embed"], 1),
                "bare_upsert_empty_p50_ms": round(p50["empty"], 1),
                "bare_upsert_copy_p50_ms": round(p50["copy"], 1),
                "over_embed": round(p50["add_turn"] / p50["embed"], 2),
                "over_embed_plus_upsert_empty": round(
                    p50["add_turn"] / (p50["embed"] + p50["empty"]), 2
                ),
                "over_embed_plus_upsert_copy": round(
                    p50["add_turn"] / (p50["embed"] + p50["copy"]), 2
                ),
            }
            print(f"  add_turn {where}: {out[where]}", flush=True)
    return out


def _outside(users: list[int], measured: list[int], w: int) -> int | None:
    """A user for worker ``w``'s warm-up request: not among the ones it measures."""
    others = [u for u in reversed(users) if u not in measured]
    return others[w % len(others)] if others else None


def read_phases(
    port: int, args: argparse.Namespace, questions: list[list[str]], workdir: Path, tree: Path
) -> dict[str, Any]:
    """First recalls (rebuilt from Chroma, beside a bare get; from shared snapshot files),
    a random-user stream and warm recall, by workers on ``tree``."""
    shared = workdir / "snapshots"
    per = args.first
    users = list(range(args.users))
    random.Random(0).shuffle(users)
    # 1. first recalls rebuilt from Chroma, beside a bare get of the same records
    print(f"first recall, no snapshot files ({tree})", flush=True)
    tasks = [
        {
            "port": port,
            "questions": questions,
            "seed": w,
            "first_users": users[w * per : (w + 1) * per],
            "warmup": _outside(users, users[w * per : (w + 1) * per], w),
            "bare": True,
        }
        for w in range(args.workers)
    ]
    rebuilt = run_workers(tasks, tree)
    assert {r["ramem_core"] for r in rebuilt} == {str(tree)}, "a worker ran another checkout"
    # 2. one process writes every user's snapshot file (what a fleet's workers leave)
    print("writing shared snapshot files", flush=True)
    run_workers(
        [
            {
                "port": port,
                "questions": questions,
                "seed": 99,
                "first_users": list(range(args.users)),
                "snapshot_dir": str(shared),
                "persist": True,
            }
        ],
        tree,
    )
    # 3. first recalls from shared files, then a random-user stream, then warm recall
    print("first recall from shared files; random-user stream", flush=True)
    tasks = [
        {
            "port": port,
            "questions": questions,
            "seed": 10 + w,
            "first_users": users[w * per : (w + 1) * per],
            "warmup": _outside(users, users[w * per : (w + 1) * per], w),
            "random_users": users,
            "requests": args.requests,
            "snapshot_dir": str(shared),
        }
        for w in range(args.workers)
    ]
    served = run_workers(tasks, tree)

    def pooled(results: list[dict[str, Any]], key: str) -> list[float]:
        return [v for r in results for v in r[key]]

    first_rebuilt, bare = pooled(rebuilt, "first"), pooled(rebuilt, "bare_get")
    warm = pooled(served, "warm")
    from_file = pooled(served, "first")
    return {
        "first_recall_rebuilt_ms": _summary(first_rebuilt),
        "bare_get_ms": _summary(bare),
        "rebuilt_over_bare_get_p50": round(percentile(first_rebuilt, 50) / percentile(bare, 50), 2),
        "first_recall_from_file_ms": _summary(from_file),
        "from_file_p95_over_warm_p50": round(percentile(from_file, 95) / percentile(warm, 50), 2),
        "random_user_recall_ms": _summary(pooled(served, "random")),
        "warm_recall_ms": _summary(warm),
        "worker_rss_mb": [round(r["rss_mb"]) for r in served],
        "bytes_per_memory": round(served[0]["bytes_per_memory"]),
        "cache_bytes": served[0]["cache_bytes"],
        "cached_users_per_worker": [r["cached_users"] for r in served],
    }


def measure(args: argparse.Namespace, questions: list[list[str]], workdir: Path) -> dict[str, Any]:
    """Every measurement of the table, on a ``chroma run`` server; with ``args.ab``, every
    phase for both checkouts, each on a server of its own, the checkouts taking turns to go
    first (a drift of the machine favours neither)."""
    result: dict[str, Any] = {"users": args.users, "workers": args.workers, "cpus": os.cpu_count()}
    trees = {"this": ROOT, **({"other": args.ab.resolve()} if args.ab else {})}
    per: dict[str, dict[str, Any]] = {name: {} for name in trees}
    with contextlib.ExitStack() as servers:
        # each checkout reads what it wrote, on a server of its own: how a collection is
        # made (its index settings) changes what reading it costs
        ports = {}
        for name in trees:
            (workdir / name).mkdir(parents=True)
            ports[name] = servers.enter_context(serve_chroma(workdir / name / "db"))

        def stored(name: str) -> None:
            tree = trees[name]
            print(f"ingest: {args.users} users through chroma run ({tree})", flush=True)
            per[name]["ingest"] = in_tree(tree, "ingest", ports[name], args.users)
            print(f"  {per[name]['ingest']}", flush=True)

        def read(name: str) -> None:
            tree = trees[name]
            per[name].update(read_phases(ports[name], args, questions, workdir / name, tree))

        def live(name: str) -> None:
            print(f"add_turn ({trees[name]})", flush=True)
            per[name]["add_turn"] = in_tree(trees[name], "live_turns", ports[name], args.turns)

        for number, phase in enumerate((stored, read, live)):
            order = list(trees) if number % 2 == 0 else list(reversed(trees))
            for name in order:
                phase(name)
    result.update(per["this"])
    if args.ab:
        result["ab"] = {"this": str(ROOT), "other": str(args.ab), "trees": per}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--first", type=int, default=20, help="first recalls per worker")
    parser.add_argument("--requests", type=int, default=200, help="random requests per worker")
    parser.add_argument("--turns", type=int, default=40, help="timed add_turn calls")
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--ab", type=Path, help="another checkout, measured beside this one")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        serve_child(globals())
        return
    if not DATA.exists():
        print(f"skipped: {DATA} not found")
        return
    questions = _questions()
    workdir = Path(tempfile.mkdtemp(prefix="ramem-fleet-"))
    try:
        result = measure(args, questions, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(result)
    write_result(args.out, result)


def report(result: dict[str, Any]) -> None:
    ingest_ = result["ingest"]
    live = result["add_turn"]
    rows = [
        ("users / memories", f"{ingest_['users']} / {ingest_['memories']}", ""),
        (
            "first recall, rebuilt from Chroma (p50/p95 ms)",
            _pair(result["first_recall_rebuilt_ms"]),
            f"{result['rebuilt_over_bare_get_p50']}x a bare get "
            f"({_pair(result['bare_get_ms'])}); target <= 1.5x",
        ),
        (
            "first recall, shared snapshot file (p50/p95 ms)",
            _pair(result["first_recall_from_file_ms"]),
            "target p95 <= 30",
        ),
        (
            "random-user recall (p50/p95 ms)",
            _pair(result["random_user_recall_ms"]),
            "target p95 <= 40",
        ),
        ("warm recall (p50/p95 ms)", _pair(result["warm_recall_ms"]), ""),
        ("worker RSS (MB)", str(result["worker_rss_mb"]), ""),
        ("snapshot bytes per memory", str(result["bytes_per_memory"]), ""),
        (
            "add_turn local (p50 ms)",
            str(live["local"]["add_turn_p50_ms"]),
            f"{live['local']['over_embed']}x embedding; target <= 2.5x",
        ),
        (
            "add_turn server (p50 ms)",
            str(live["server"]["add_turn_p50_ms"]),
            f"{live['server']['over_embed_plus_upsert_empty']}x (embed + bare upsert, empty "
            f"collection), {live['server']['over_embed_plus_upsert_copy']}x (same-size "
            "collection); target <= 1.5x",
        ),
        (
            "ingest turns/s",
            str(ingest_["ingest_turns_per_s"]),
            f"{ingest_['ingest_over_embedder']}x the embedder alone "
            f"({ingest_['embedder_turns_per_s']}); target >= 0.9x",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print()
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:<14} {note}")
    if "ab" in result:
        report_ab(result["ab"])


AB_ROWS = (
    ("cold first recall / bare get, p50", ("rebuilt_over_bare_get_p50",), "<= 1.5"),
    ("shared-file first recall p95 / warm p50", ("from_file_p95_over_warm_p50",), "<= 4"),
    (
        "add_turn server / (embed + upsert, same size)",
        ("add_turn", "server", "over_embed_plus_upsert_copy"),
        "<= 1.5",
    ),
    (
        "add_turn server / (embed + upsert, empty)",
        ("add_turn", "server", "over_embed_plus_upsert_empty"),
        "",
    ),
    ("ingest / embedder alone", ("ingest", "ingest_over_embedder"), ">= 0.9"),
    ("cold first recall p50 (ms)", ("first_recall_rebuilt_ms", "p50"), ""),
    ("bare get p50 (ms)", ("bare_get_ms", "p50"), ""),
    ("shared-file first recall p95 (ms)", ("first_recall_from_file_ms", "p95"), ""),
    ("warm recall p50 (ms)", ("warm_recall_ms", "p50"), ""),
    ("add_turn server p50 (ms)", ("add_turn", "server", "add_turn_p50_ms"), ""),
)


def report_ab(ab: dict[str, Any]) -> None:
    """Both checkouts side by side: each ratio of the targets, and this over other."""
    this, other = ab["trees"]["this"], ab["trees"]["other"]

    def value(tree: dict[str, Any], path: tuple[str, ...]) -> float:
        out: Any = tree
        for key in path:
            out = out[key]
        return float(out)

    print(f"\nA/B, one run: this = {ab['this']}, other = {ab['other']}")
    width = max(len(r[0]) for r in AB_ROWS)
    print(f"{'':<{width}}  {'this':>8} {'other':>8} {'this/other':>10}  target")
    for name, path, target in AB_ROWS:
        a, b = value(this, path), value(other, path)
        print(f"{name:<{width}}  {a:>8.2f} {b:>8.2f} {a / b:>10.2f}  {target}")


def _pair(summary: dict[str, float]) -> str:
    return f"{summary['p50']} / {summary['p95']}"


if __name__ == "__main__":
    main()
