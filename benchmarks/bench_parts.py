"""What a question's parts cost at recall (issue 33's LLM path): RaMem recall of the same
questions with no parts, two and four parts, beside content-only recall, at 100k memories.

    python benchmarks/bench_parts.py [--size 100000] [--queries 100]

The memories are bench_core's (its synthetic conversation, anchored, with random unit
vectors). The parts come from a scripted model (``LLMFrameInducer(decompose=True)`` over a
``FakeLLM`` that returns the question with "(part n)" appended), so what is timed is RaMem's
own work: each part's vector, its content ranking (and learned fusion) and the merge; a real
model's call comes on top. Every question and part is new to the embedder. Prints p50/p95 and
the ratios to content-only, and writes ``benchmarks/results/issue33_refit/bench_parts.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_core import build_scale_store, percentile
from synthetic import distinct_queries

from ramem_core import RaMem
from ramem_core.embedding import MiniLMEmbedder
from ramem_core.frames import LLMFrameInducer
from ramem_core.retrieval import CONTENT_ONLY
from ramem_core.testing import FakeLLM

ROOT = Path(__file__).resolve().parents[1]

RESULT = ROOT / "benchmarks" / "results" / "issue33_refit" / "bench_parts.json"


def _inducer(parts: int) -> LLMFrameInducer:
    def reply(prompt: str) -> str:
        if "Split it into the separate questions" not in prompt:
            return "no frame"  # the rule frame, as without a model
        question = prompt.split("Question: ", 1)[1].split("\n", 1)[0]
        return json.dumps({"parts": [f"{question} (part {n})" for n in range(parts)]})

    return LLMFrameInducer(FakeLLM(reply), decompose=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    texts = distinct_queries(args.queries + 5, args.size)
    warm, texts = texts[:5], texts[5:]
    with tempfile.TemporaryDirectory() as tmp:
        print(f"building {args.size:,} memories ...", flush=True)
        memory = build_scale_store(args.size, tmp, embedder)
        memory.snapshots.get("bench")
        runs: dict[str, RaMem] = {
            "content-only": RaMem(memory.store, config=CONTENT_ONLY, namespace="bench"),
            "ramem": memory,
            "ramem, 2 parts": RaMem(memory.store, inducer=_inducer(2), namespace="bench"),
            "ramem, 4 parts": RaMem(memory.store, inducer=_inducer(4), namespace="bench"),
        }
        for run in runs.values():
            for q in warm:
                run.recall(q, k=10)
        times: dict[str, list[float]] = {name: [] for name in runs}
        for n, q in enumerate(texts, start=1):
            for name, run in runs.items():  # interleaved: every run sees the same machine
                t = time.perf_counter()
                run.recall(q, k=10)
                times[name].append((time.perf_counter() - t) * 1000)
            if n % 25 == 0:
                print(f"  {n}/{len(texts)} questions", flush=True)
    base = percentile(times["content-only"], 95)
    result: dict[str, Any] = {
        "command": "python benchmarks/bench_parts.py",
        "memories": args.size,
        "queries": len(texts),
        "runs": {
            name: {
                "p50_ms": round(percentile(ms, 50), 2),
                "p95_ms": round(percentile(ms, 95), 2),
                "p95_over_content": round(percentile(ms, 95) / base, 3),
            }
            for name, ms in times.items()
        },
    }
    print(f"\n{args.size:,} memories, {len(texts)} questions")
    for name, row in result["runs"].items():
        print(
            f"  {name:16} p50 {row['p50_ms']:7.2f} ms  p95 {row['p95_ms']:7.2f} ms"
            f"  p95/content {row['p95_over_content']:.2f}x"
        )
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
