"""Live writes: what one ``add_turn`` costs beside embedding the turn alone.

    python benchmarks/bench_live.py                      # 1k and 10k memories
    python benchmarks/bench_live.py --sizes 1000 --turns 10

Prints a table and writes ``results/bench_live.json``. The store is bench_core's synthetic
one (real texts and metadata, random unit vectors); the turns are embedded with the default
embedder, and "embedding alone" is the same text embedded on its own, interleaved.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_core import build_scale_store, percentile  # noqa: E402

from ramem_core.embedding import MiniLMEmbedder  # noqa: E402


def bench_size(size: int, turns: int, embedder: MiniLMEmbedder) -> dict[str, Any]:
    """add_turn and embedding-alone p50/p95 in a namespace of ``size`` memories."""
    with tempfile.TemporaryDirectory() as tmp:
        memory = build_scale_store(size, tmp, embedder)
        memory.recall("warm up the snapshot", k=5)  # a live agent reads before it writes
        at = datetime(2030, 1, 1, 9, 0)
        add_ms, embed_ms = [], []
        for i in range(turns):
            text = f"user message number {i} about the garden and the new job"
            t = time.perf_counter()
            embedder.embed([text])
            embed_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            memory.add_turn("user", text, at=at + timedelta(minutes=i))
            add_ms.append((time.perf_counter() - t) * 1000)
        memory.close()
    return {
        "memories": size,
        "turns": turns,
        "add_turn_p50_ms": percentile(add_ms, 50),
        "add_turn_p95_ms": percentile(add_ms, 95),
        "embed_p50_ms": percentile(embed_ms, 50),
        "ratio_p50": percentile(add_ms, 50) / percentile(embed_ms, 50),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--turns", type=int, default=15)
    parser.add_argument("--out", default=str(ROOT / "results" / "bench_live.json"))
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    print(
        f"{'memories':>9} {'add_turn p50':>13} {'add_turn p95':>13} {'embed p50':>10} {'ratio':>7}"
    )
    rows = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        row = bench_size(size, args.turns, embedder)
        rows.append(row)
        print(
            f"{size:>9} {row['add_turn_p50_ms']:>13.0f} {row['add_turn_p95_ms']:>13.0f} "
            f"{row['embed_p50_ms']:>10.1f} {row['ratio_p50']:>7.0f}",
            flush=True,
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"live": rows}, indent=2), encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
