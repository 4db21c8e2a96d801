"""What the embedder's pass size costs: memory kept after a long text, and time.

From the repository root::

    python benchmarks/bench_embed_memory.py

With its memory arena on, onnxruntime keeps the memory of the largest forward pass for the
life of the process. Each variant runs in a fresh process: the default
(:data:`~ramem_core.embedding.TOKENS_PER_PASS` tokens a pass, at most 32 texts, passes wider
than :data:`~ramem_core.embedding.SHRINK_WIDTH` tokens shrinking onnxruntime's arena after
them), the same with the arena kept, with no arena (:data:`~ramem_core.embedding.CPU_ARENA`),
and the old passes of 32 texts whatever their length; each embeds short messages (LoCoMo dev
turns when present, else one written sentence), then 100 pieces of a pasted document (1,000
characters each, the model's 256 tokens), then the short messages again; three rounds,
alternating.
Reports seconds (median) and the resident memory after the long text and at the end.
Writes ``benchmarks/results/bench_embed_memory.json``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "bench_embed_memory.json"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo_dev.json"
VARIANTS = {
    "default (wide passes shrink the arena)": (2_048, True, 64),
    "arena kept": (2_048, True, 10**9),
    "no arena": (2_048, False, 10**9),
    "32 texts a pass, arena kept": (10**9, True, 10**9),
}
"""name -> (:data:`~ramem_core.embedding.TOKENS_PER_PASS`,
:data:`~ramem_core.embedding.CPU_ARENA`, :data:`~ramem_core.embedding.SHRINK_WIDTH`); the
first is the default."""
ROUNDS = 3

CHILD = r"""
import json, sys, time
import ramem_core.embedding as embedding

embedding.TOKENS_PER_PASS = int(sys.argv[1])
embedding.CPU_ARENA = sys.argv[3] == "1"
embedding.SHRINK_WIDTH = int(sys.argv[4])
short = json.loads(sys.argv[2])
line = "Sentence of a long pasted document about the quarterly plan and its budget. "
long = [(line * 14)[:1000]] * 100

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024

e = embedding.MiniLMEmbedder()
e.embed(["warm up"])
loaded = rss()
began = time.perf_counter(); e.embed(short); short_s = time.perf_counter() - began
began = time.perf_counter(); e.embed(long); long_s = time.perf_counter() - began
after = rss()
began = time.perf_counter(); e.embed(short); again_s = time.perf_counter() - began
print(json.dumps({"loaded_mb": loaded, "after_long_mb": after, "short_s": short_s,
                  "long_s": long_s, "short_after_s": again_s, "end_mb": rss()}))
"""


def short_texts() -> list[str]:
    if LOCOMO.exists():
        data = json.loads(LOCOMO.read_text(encoding="utf-8"))
        sample = data[0]
        turns = [
            t["text"]
            for key, session in sample["conversation"].items()
            if key.startswith("session_") and isinstance(session, list)
            for t in session
        ]
        return turns[:640]
    return ["I moved to Porto last week and love it."] * 640


def main() -> None:
    texts = short_texts()
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    for n in range(ROUNDS):
        for name, (tokens, arena, shrink) in VARIANTS.items():
            child = [str(tokens), json.dumps(texts), str(int(arena)), str(shrink)]
            done = subprocess.run(
                [sys.executable, "-c", CHILD, *child],
                capture_output=True,
                text=True,
                check=True,
            )
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"  round {n + 1} {name}: {runs[name][-1]}", flush=True)
    table: dict[str, Any] = {}
    for name, rs in runs.items():
        table[name] = {k: round(statistics.median(r[k] for r in rs), 3) for k in rs[0]}
        table[name]["kept_mb"] = round(table[name]["after_long_mb"] - table[name]["loaded_mb"], 1)
    print(f"\n{'variant':40} {'short s':>8} {'long s':>8} {'kept MB':>8} {'end MB':>8}")
    for name, row in table.items():
        end = row["end_mb"] - row["loaded_mb"]
        print(
            f"{name:40} {row['short_s']:8.3f} {row['long_s']:8.3f} {row['kept_mb']:8.1f} {end:8.1f}"
        )
    result = {
        "command": "python benchmarks/bench_embed_memory.py",
        "short_texts": len(texts),
        "short_from": "LoCoMo dev" if LOCOMO.exists() else "one sentence",
        "rounds": ROUNDS,
        "median": table,
        "runs": runs,
    }
    RESULT.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
