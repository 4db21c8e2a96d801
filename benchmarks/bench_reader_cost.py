"""What the replacement model's pair reader costs a recall, on real conversations.

From the repository root::

    python benchmarks/bench_reader_cost.py

The LoCoMo dev conversations (``../shared/data/locomo_dev.json``; skipped cleanly when absent)
are ingested once, each into its own namespace, and every one of their questions is recalled
twice, side by side in one process: by RaMem as shipped (the features joined with the pair
reader, which reads, at most ``replacement.READ_PAIRS`` pairs, only for a question about a
state at a time: ``retrieval.facts.asks_state_at``) and by the same tree with the features
alone (``Replacement.without_reader``), alternating which goes first. The reader's cache of
readings is emptied before each of its recalls, so every question pays for its own reading (a
live agent asking again over the same statements would not). Reports p50 / p95 recall time
of each, over all questions and over those the reader read for, and how many pairs it read;
writes ``benchmarks/results/bench_reader_cost.json``.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from bench_core import LOCOMO

from ramem_core import RaMem, RetrievalConfig
from ramem_core.loaders import locomo_conversation
from ramem_core.replacement import CrossEncoder

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "bench_reader_cost.json"
K = 10


class Counting:
    """The shipped reader, its cache emptied before each question, counting what it reads."""

    def __init__(self, inner: CrossEncoder) -> None:
        self.inner = inner
        self.read = 0

    def probabilities(self, pairs: Any) -> Any:
        self.read += len(pairs)
        return self.inner.probabilities(pairs)


def main() -> None:
    if not LOCOMO.exists():
        print(f"skipped: {LOCOMO} is missing")
        return
    samples = json.loads(LOCOMO.read_text(encoding="utf-8"))
    shipped = RetrievalConfig()
    reader = shipped.replacement.reader
    assert isinstance(reader, CrossEncoder)
    counting = Counting(reader)
    configs = {
        "reader": replace(shipped, replacement=replace(shipped.replacement, reader=counting)),
        "no-reader": replace(shipped, replacement=shipped.replacement.without_reader()),
    }
    times: dict[str, list[float]] = {name: [] for name in configs}
    read: list[int] = []
    with tempfile.TemporaryDirectory() as tmp, RaMem.open(tmp) as memory:
        started = time.monotonic()
        for s in samples:
            conversation = locomo_conversation(s, s["sample_id"])
            memory.add_conversations([conversation], namespace=s["sample_id"])
        print(f"ingested {len(samples)} conversations ({time.monotonic() - started:.0f} s)")
        views = {name: RaMem(memory.store, config=cfg) for name, cfg in configs.items()}
        questions = [(s["sample_id"], qa["question"]) for s in samples for qa in s["qa"]]
        for n, (namespace, question) in enumerate(questions):
            order = list(views) if n % 2 == 0 else list(reversed(views))
            before = counting.read
            for name in order:
                if name == "reader":
                    reader.forget()
                clock = time.perf_counter()
                views[name].recall(question, K, namespace=namespace)
                times[name].append((time.perf_counter() - clock) * 1000)
                if name == "reader":
                    read.append(counting.read - before)
            if (n + 1) % 200 == 0 or n + 1 == len(questions):
                print(f"  {n + 1}/{len(questions)}", flush=True)
    result: dict[str, Any] = {
        "command": "python benchmarks/bench_reader_cost.py",
        "questions": len(read),
        "pairs_read": {
            "mean": round(float(np.mean(read)), 1),
            "p95": float(np.percentile(read, 95)),
            "none_share": round(float(np.mean(np.array(read) == 0)), 3),
        },
    }
    reading = np.array(read) > 0
    for name, values in times.items():
        ms = np.array(values)
        result[name] = {
            "p50_ms": round(float(np.percentile(ms, 50)), 1),
            "p95_ms": round(float(np.percentile(ms, 95)), 1),
        }
        if reading.any():
            result[name]["read_p50_ms"] = round(float(np.percentile(ms[reading], 50)), 1)
            result[name]["read_p95_ms"] = round(float(np.percentile(ms[reading], 95)), 1)
        print(f"{name:10} {result[name]}")
    ratio = result["reader"]["p95_ms"] / result["no-reader"]["p95_ms"]
    result["p95_ratio"] = round(ratio, 2)
    print(f"pairs read a question: {result['pairs_read']}; p95 ratio {ratio:.2f}")
    RESULT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
