"""One user's memory at scale, each figure in a fresh process beside Chroma's own.

From the repository root::

    python benchmarks/bench_scale.py                   # 100k memories
    python benchmarks/bench_scale.py --sizes 10000     # a quick look

For each size, one namespace of the synthetic conversation (``synthetic.py``, anchored by the
rule anchorer, with random unit vectors: the recall path reads vectors, not what they mean) is
written as a RaMem export with its vectors (kept in ``--cache`` for the next run), then imported
with ``memory.transfer.import_from`` into a fresh directory (``import``: seconds, peak RSS).
Then, each in a fresh process with chromadb imported, the embedder loaded and a warm-up
question embedded before the clock starts:

- ``chroma``: Chroma's own cold open of that directory and collection, and one query of the
  question's vector (10 results);
- ``ramem``: ``RaMem.open`` and the first recall, as the next process after the import finds
  it (the import built the snapshot and wrote its file); then 30 warm recalls (p50/p95), the
  same questions by content-only recall on the same memory (its own snapshot loaded first),
  and the time to add one turn (a second one: the first also loads the parser);
- ``ramem, file removed``: the first recall with the snapshot file taken away, as every first
  recall after an import was before the import wrote it (the snapshot rebuilt from the store).

With ``--ab CHECKOUT``, the first recall of this tree and of that checkout (its
``ramem_core``) run alternately over the same imported memory, three rounds, with Chroma's
own beside them. Each process reports its peak resident memory; ``bytes per memory`` is the
RaMem process's peak over that of a process that only loaded the embedder and opened an
empty memory, per memory.
Writes ``benchmarks/results/bench_scale.json``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ab_recall import result_of, serve_child, spawn

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "bench_scale.json"
NAMESPACE = "bench"
QUESTION = "What did Carol say about the book club last week?"
WARM = 30


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _embedder() -> Any:
    from ramem_core.embedding import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    embedder.embed(["a warm-up question"])
    return embedder


def make_export(size: int, path: str) -> dict[str, Any]:
    """The synthetic namespace of ``size`` memories as an export file with its vectors."""
    import numpy as np
    from synthetic import synthetic_conversation

    from ramem_core import RuleAnchorer
    from ramem_core.embedding import MiniLMEmbedder
    from ramem_core.transfer import write

    began = time.perf_counter()
    units = RuleAnchorer().anchor(synthetic_conversation(size))[:size]
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(units), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    tmp = Path(path + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        write(out, NAMESPACE, units, vectors, MiniLMEmbedder.name, 384)
    tmp.replace(path)
    return {"memories": len(units), "seconds": time.perf_counter() - began}


def do_import(directory: str, export: str) -> dict[str, Any]:
    from ramem_core import RaMem

    embedder = _embedder()
    began = time.perf_counter()
    with RaMem.open(directory, embedder=embedder, namespace=NAMESPACE) as memory:
        report = memory.transfer.import_from(export)
        collection = memory.store.collection(NAMESPACE).name
    return {
        "seconds": time.perf_counter() - began,
        "memories": report.units,
        "collection": collection,
        "peak_mb": _peak_mb(),
    }


def chroma_first(directory: str, collection: str) -> dict[str, Any]:
    import chromadb

    embedder = _embedder()
    began = time.perf_counter()
    client = chromadb.PersistentClient(path=directory)
    found = client.get_collection(collection).query(
        query_embeddings=embedder.embed([QUESTION]).tolist(), n_results=10
    )
    seconds = time.perf_counter() - began
    assert len(found["ids"][0]) == 10
    return {"first_s": seconds, "peak_mb": _peak_mb()}


def baseline(directory: str) -> dict[str, Any]:
    """What a process that loaded the embedder and opened an empty memory holds."""
    from ramem_core import RaMem

    embedder = _embedder()
    with RaMem.open(directory, embedder=embedder, namespace=NAMESPACE) as memory:
        memory.recall(QUESTION)
    return {"peak_mb": _peak_mb()}


def ramem_first(directory: str, size: int, warm: bool) -> dict[str, Any]:
    import chromadb  # noqa: F401  # imported before the clock, as in chroma_first
    from synthetic import distinct_queries

    from ramem_core import RaMem
    from ramem_core.retrieval import CONTENT_ONLY

    embedder = _embedder()
    began = time.perf_counter()
    memory = RaMem.open(directory, embedder=embedder, namespace=NAMESPACE)
    found = memory.recall(QUESTION, k=10)
    first = time.perf_counter() - began
    assert len(found) == 10
    out: dict[str, Any] = {"first_s": first, "peak_mb": _peak_mb()}
    if warm:
        plain = RaMem(memory.store, config=CONTENT_ONLY, namespace=NAMESPACE)
        plain.recall(QUESTION, k=10)  # its own snapshot, loaded before the clock
        ramem_ms, content_ms = [], []
        for question in distinct_queries(WARM, size):
            for target, times in ((memory, ramem_ms), (plain, content_ms)):
                t = time.perf_counter()
                target.recall(question, k=10)
                times.append((time.perf_counter() - t) * 1000)
        for name in ("first_add_turn_s", "add_turn_s"):  # the first loads the parser
            t = time.perf_counter()
            memory.add_turn("Carol", "I finished the book club novel tonight.", at=found.frame.now)
            out[name] = time.perf_counter() - t
        out["ramem_p50_ms"] = statistics.median(ramem_ms)
        out["ramem_p95_ms"] = _p95(ramem_ms)
        out["content_p50_ms"] = statistics.median(content_ms)
        out["content_p95_ms"] = _p95(content_ms)
        out["peak_after_warm_mb"] = _peak_mb()
    memory.close()
    return out


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


FUNCTIONS = {
    "make_export": make_export,
    "do_import": do_import,
    "chroma_first": chroma_first,
    "baseline": baseline,
    "ramem_first": ramem_first,
}


def child(name: str, *args: Any, tree: Path = ROOT) -> Any:
    script = tree / "benchmarks" / "bench_scale.py"
    return result_of(spawn(script if script.exists() else __file__, tree, name, list(args)))


AB_ROUNDS = 3


def first_ab(directory: str, size: int, other: Path) -> dict[str, Any]:
    """The first recall of this tree and of ``other`` (a checkout) over the same memory, with
    Chroma's own, alternating, :data:`AB_ROUNDS` rounds: seconds per round and medians.

    ``other`` reads a copy of the imported directory with its own snapshot file (a checkout
    of another file format would otherwise take this tree's file for a stale one and replace
    it): its file is written by one first recall before the rounds, not timed."""
    copy = str(Path(directory).parent / "other-memory")
    shutil.copytree(directory, copy, ignore=shutil.ignore_patterns("ramem-snapshots"))
    child("ramem_first", copy, size, False, tree=other)  # builds and writes its own file
    runs: dict[str, list[float]] = {"this": [], "other": [], "chroma": []}
    for _ in range(AB_ROUNDS):
        runs["chroma"].append(child("chroma_first", directory, f"ramem_{NAMESPACE}")["first_s"])
        for name, tree, held in (("this", ROOT, directory), ("other", other, copy)):
            runs[name].append(child("ramem_first", held, size, False, tree=tree)["first_s"])
    shutil.rmtree(copy, ignore_errors=True)
    return {
        "other": str(other),
        "runs": runs,
        "median": {k: statistics.median(v) for k, v in runs.items()},
    }


def run_size(size: int, cache: Path, other: Path | None = None) -> dict[str, Any]:
    cache.mkdir(parents=True, exist_ok=True)
    export = cache / f"scale-{size}.jsonl"
    made = None
    if not export.exists():
        print(f"  writing the export of {size:,} memories to {export}", flush=True)
        made = child("make_export", size, str(export))
    with tempfile.TemporaryDirectory() as tmp:
        directory = str(Path(tmp) / "memory")
        print(f"  importing {size:,} memories", flush=True)
        imported = child("do_import", directory, str(export))
        chroma = child("chroma_first", directory, imported["collection"])
        ramem = child("ramem_first", directory, size, True)
        ab = first_ab(directory, size, other) if other is not None else None
        snapshots = Path(directory) / "ramem-snapshots"
        held = Path(tmp) / "held-snapshots"
        shutil.move(snapshots, held)  # the file taken away: rebuilt from the store
        rebuilt = child("ramem_first", directory, size, False)
        shutil.rmtree(snapshots, ignore_errors=True)
        empty = child("baseline", str(Path(tmp) / "empty"))
        file_bytes = sum(f.stat().st_size for f in held.iterdir())
    result = {
        "memories": imported["memories"],
        "export": made,
        "import": imported,
        "chroma": chroma,
        "ramem": ramem,
        "ramem_file_removed": rebuilt,
        "baseline": empty,
        "snapshot_file_bytes": file_bytes,
        "first_over_chroma": ramem["first_s"] / chroma["first_s"],
        "rebuilt_first_over_chroma": rebuilt["first_s"] / chroma["first_s"],
        "warm_p95_over_content": ramem["ramem_p95_ms"] / ramem["content_p95_ms"],
        "bytes_per_memory": (ramem["peak_mb"] - empty["peak_mb"]) * 2**20 / imported["memories"],
        "first_ab": ab,
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ramem-scale")
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument(
        "--ab", type=Path, help="a checkout whose first recall runs beside this tree's, alternating"
    )
    args = parser.parse_args()
    if args.child:
        serve_child(FUNCTIONS)
        return
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        print(f"{size:,} memories:", flush=True)
        rows.append(run_size(size, args.cache, args.ab))
    head = (
        f"{'memories':>9} {'chroma s':>9} {'ramem s':>8} {'x':>5} {'no file s':>9} {'x':>6}"
        f" {'p95 x':>6} {'peak MB':>8} {'B/mem':>7} {'add s':>6}"
    )
    print(head)
    for r in rows:
        print(
            f"{r['memories']:>9,} {r['chroma']['first_s']:9.2f} {r['ramem']['first_s']:8.2f}"
            f" {r['first_over_chroma']:5.1f} {r['ramem_file_removed']['first_s']:9.2f}"
            f" {r['rebuilt_first_over_chroma']:6.1f} {r['warm_p95_over_content']:6.2f}"
            f" {r['ramem']['peak_mb']:8.0f} {r['bytes_per_memory']:7.0f}"
            f" {r['ramem']['add_turn_s']:6.2f}"
        )
    for r in rows:
        if r["first_ab"] is not None:
            m = r["first_ab"]["median"]
            print(
                f"first recall, medians of {AB_ROUNDS} alternating rounds at {r['memories']:,}:"
                f" this {m['this']:.2f} s, {r['first_ab']['other']} {m['other']:.2f} s,"
                f" Chroma {m['chroma']:.2f} s"
            )
    command = "python benchmarks/bench_scale.py" + (f" --ab {args.ab}" if args.ab else "")
    result = {"command": command, "python": sys.version, "sizes": rows}
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
