"""Recall latency of two checkouts of RaMem, paired in one run: did a change cost time?

    git worktree add /tmp/base <commit>
    python benchmarks/ab_recall.py /tmp/base . --sizes 10000,100000 --queries 200

Each checkout runs in a worker process of its own (its ``ramem_core`` on the path), over
the same memories: the synthetic conversation (synthetic.py), anchored, with random unit vectors,
in the in-memory store (the recall path reads the snapshot, not Chroma). The driver sends
every question to both workers, alternating which goes first, and each worker times RaMem's
recall and content-only recall of it with the default embedder (every question new to
both). Prints p50/p95 per checkout and the after/before ratios, and writes
``benchmarks/results/ab_recall.json``.

With ``--files`` it times instead what a worker pays for a user whose snapshot file is
shared (``bench_fleet.py``'s "first recall from a shared file", on a local directory): each
worker builds its checkout's snapshot file once, then every request opens the directory anew
and recalls once (the snapshot decoded and checked from its file), timed as ``open`` and
``first_recall``; the file's size is reported too (``--out`` names the result file).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "ab_recall.json"


def worker(tree: Path, size: int) -> None:
    """Serve timed recalls of ``tree``'s RaMem over stdin/stdout."""
    import numpy as np
    from synthetic import synthetic_conversation

    from ramem_core import RaMem
    from ramem_core.anchoring import RuleAnchorer
    from ramem_core.embedding import MiniLMEmbedder
    from ramem_core.retrieval import CONTENT_ONLY
    from ramem_core.testing import InMemoryStore

    embedder = MiniLMEmbedder()
    units = RuleAnchorer().anchor(synthetic_conversation(size))[:size]
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(units), embedder.dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = InMemoryStore(embedder)
    store.upsert("bench", units, vectors)
    memory = RaMem(store, namespace="bench", refresh_seconds=3600)
    content = RaMem(store, config=CONTENT_ONLY, namespace="bench", refresh_seconds=3600)
    memory.recall("warm up the snapshot")
    content.recall("warm up the snapshot")
    print(json.dumps({"ready": len(units)}), flush=True)
    for line in sys.stdin:
        query = json.loads(line)
        t = time.perf_counter()
        memory.recall(query, k=10)
        ramem = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        content.recall(query, k=10)
        plain = (time.perf_counter() - t) * 1000
        print(json.dumps({"ramem": ramem, "content": plain}), flush=True)


def file_worker(tree: Path, size: int, directory: Path) -> None:
    """Serve timed first recalls of ``tree``'s RaMem from a snapshot file: each request
    opens the directory anew (Chroma + the namespace's snapshot file), recalls once, and
    closes."""
    import numpy as np
    from synthetic import synthetic_conversation

    from ramem_core import RaMem
    from ramem_core.anchoring import RuleAnchorer
    from ramem_core.embedding import MiniLMEmbedder, RecentQueries

    embedder = RecentQueries(MiniLMEmbedder())  # the question's vector is not what is timed
    units = RuleAnchorer().anchor(synthetic_conversation(size))[:size]
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(units), embedder.dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with RaMem.open(directory, embedder=embedder, namespace="bench") as memory:
        memory.store.upsert("bench", units, vectors)
        memory.recall("build the snapshot")  # built from Chroma; its file is written
    files = list((directory / "ramem-snapshots").glob("*.snapshot"))
    print(
        json.dumps({"ready": len(units), "file_bytes": sum(f.stat().st_size for f in files)}),
        flush=True,
    )
    for line in sys.stdin:
        query = json.loads(line)
        embedder.embed([query])
        t = time.perf_counter()
        memory = RaMem.open(directory, embedder=embedder, namespace="bench")
        opened = time.perf_counter()
        memory.recall(query, k=10)  # the snapshot is loaded from its file here
        done = time.perf_counter()
        memory.close()
        print(
            json.dumps({"open": (opened - t) * 1000, "first_recall": (done - opened) * 1000}),
            flush=True,
        )


def environment_on(tree: Path) -> dict[str, str]:
    """The environment of a worker that imports ``tree``'s ``ramem_core`` (ahead of the
    installed one)."""
    import os

    paths = [str(tree), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


RESULT_MARK = "@@ab-result "
"""The line prefix a child process of :func:`spawn` prints its JSON result after."""


def spawn(script: str | Path, tree: Path, name: str, args: list[Any]) -> subprocess.Popen[str]:
    """``script`` run with ``--child`` in a fresh process on ``tree`` (its ``ramem_core``
    first on ``PYTHONPATH``), asked on stdin to call its function ``name(*args)``
    (:func:`serve_child`)."""
    child = subprocess.Popen(
        [sys.executable, str(script), "--child"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=environment_on(tree),
    )
    assert child.stdin is not None
    child.stdin.write(json.dumps({"name": name, "args": args}))
    child.stdin.close()
    return child


def result_of(child: subprocess.Popen[str]) -> Any:
    """What a child of :func:`spawn` returned (its other output is passed on)."""
    assert child.stdout is not None
    out = None
    for line in child.stdout:
        if line.startswith(RESULT_MARK):
            out = json.loads(line[len(RESULT_MARK) :])
        else:
            print(line, end="", flush=True)
    if child.wait() != 0 or out is None:
        raise RuntimeError(f"a child process failed (exit {child.returncode})")
    return out


def serve_child(functions: Mapping[str, Callable[..., Any]]) -> None:
    """A child's side of :func:`spawn`: call the function named on stdin and print its result
    after :data:`RESULT_MARK`."""
    request = json.loads(sys.stdin.read())
    result = functions[request["name"]](*request["args"])
    print(RESULT_MARK + json.dumps(result), flush=True)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def run(
    before: Path, after: Path, size: int, queries: int, files: Path | None = None
) -> dict[str, Any]:
    from synthetic import distinct_queries

    texts = distinct_queries(queries + 10, size + 1)
    mode = [] if files is None else ["--files"]
    procs = {
        name: subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--worker",
                str(tree),
                "--size",
                str(size),
                *mode,
                *([] if files is None else ["--dir", str(files / name)]),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=environment_on(tree),
        )
        for name, tree in (("before", before), ("after", after))
    }
    ready = {}
    for name, proc in procs.items():
        assert proc.stdout is not None
        ready[name] = json.loads(proc.stdout.readline())

    def ask(name: str, query: str) -> dict[str, float]:
        proc = procs[name]
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(json.dumps(query) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    systems = ("open", "first_recall") if files is not None else ("ramem", "content")
    times: dict[str, dict[str, list[float]]] = {n: {s: [] for s in systems} for n in procs}
    for i, query in enumerate(texts):
        order = ("before", "after") if i % 2 == 0 else ("after", "before")
        for name in order:
            got = ask(name, query)
            if i >= 10:  # the first ten warm both
                for system, ms in got.items():
                    times[name][system].append(ms)
    for proc in procs.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    out: dict[str, Any] = {"memories": size, "queries": queries}
    if files is not None:
        out |= {f"{name}_file_bytes": r["file_bytes"] for name, r in ready.items()}
    for name, by_system in times.items():
        for system, values in by_system.items():
            out[f"{name}_{system}_p50_ms"] = round(statistics.median(values), 3)
            out[f"{name}_{system}_p95_ms"] = round(_percentile(values, 95), 3)
    for stat in ("p50", "p95"):
        for system in systems:
            out[f"{system}_{stat}_after_over_before"] = round(
                out[f"after_{system}_{stat}_ms"] / out[f"before_{system}_{stat}_ms"], 3
            )
        if files is None:
            out[f"ramem_over_content_{stat}_after"] = round(
                out[f"after_ramem_{stat}_ms"] / out[f"after_content_{stat}_ms"], 3
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path, nargs="?")
    parser.add_argument("after", type=Path, nargs="?")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument(
        "--files",
        action="store_true",
        help="time the first recall from a snapshot file (open + recall) instead",
    )
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    if args.worker is not None:
        if args.files:
            file_worker(args.worker.resolve(), args.size, args.dir)
        else:
            worker(args.worker.resolve(), args.size)
        return
    if args.before is None or args.after is None:
        parser.error("give the two checkouts: BEFORE AFTER")
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        print(f"{size:,} memories ...", flush=True)
        if args.files:
            with tempfile.TemporaryDirectory() as tmp:
                row = run(
                    args.before.resolve(), args.after.resolve(), size, args.queries, Path(tmp)
                )
        else:
            row = run(args.before.resolve(), args.after.resolve(), size, args.queries)
        rows.append(row)
        print(json.dumps(row, indent=1), flush=True)
    result = {
        "command": "python benchmarks/ab_recall.py BEFORE AFTER"
        f" --sizes {args.sizes} --queries {args.queries}" + (" --files" if args.files else ""),
        "before": str(args.before),
        "after": str(args.after),
        "rows": rows,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
