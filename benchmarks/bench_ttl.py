"""What a refreshing read costs in RaMemStore (LangGraph's TTL): search with and without
``refresh_ttl``, side by side in one run.

    python benchmarks/bench_ttl.py                 # 200 items, 60 searches
    PYTHONPATH=/tmp/base python benchmarks/bench_ttl.py --out /tmp/ttl-base.json   # a checkout

An embedded Chroma directory, the default embedder, items of one to three sentences put with
a TTL far longer than the run (every item stays live). A clock moved by one minute before each
search makes every refreshing search move its hits' expiry (a rewrite of each hit); the plain
search reads the same store. Each question is asked once unmeasured first (its embedding and
anything a first search pays), then both ways, each going first in turn. Prints p50/p95 of
both and writes ``results/bench_ttl.json``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench_core import percentile, write_result

from langchain_ramem.store import RaMemStore
from ramem_core import RaMem
from ramem_core.embedding import MiniLMEmbedder

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "bench_ttl.json"
THINGS = ["tomatoes", "the marathon", "my sister", "the new job", "a trip to Lisbon", "the dog"]


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2024, 1, 1, 9)

    def __call__(self) -> datetime:
        return self.now


TTL_MINUTES = 100_000
"""Longer than the clock moves in a run: every item stays live, so every search reads all."""


def run(items: int, searches: int) -> dict[str, Any]:
    rng = random.Random(0)
    clock = Clock()
    embedder = MiniLMEmbedder()
    with tempfile.TemporaryDirectory() as tmp, RaMem.open(tmp, embedder=embedder) as memory:
        store = RaMemStore(memory, clock=clock)
        for i in range(items):
            thing = rng.choice(THINGS)
            text = f"Note {i}: I talked about {thing} today. " * rng.randint(1, 3)
            store.put(("users", "u1"), f"k{i}", {"content": text.strip()}, ttl=TTL_MINUTES)
        timings: dict[str, list[float]] = {"refreshing": [], "plain": []}
        for n in range(searches + 5):
            query = f"what did I say about {rng.choice(THINGS)}? ({n})"
            # not measured: the query's first embedding and anything else a first search pays
            store.search(("users",), query=query, limit=10, refresh_ttl=False)
            order = [("refreshing", True), ("plain", False)]
            for name, refresh in order if n % 2 else order[::-1]:  # each goes first in turn
                clock.now += timedelta(minutes=1)  # every refresh moves its hits' expiry
                t = time.perf_counter()
                store.search(("users",), query=query, limit=10, refresh_ttl=refresh)
                if n >= 5:
                    timings[name].append((time.perf_counter() - t) * 1000)
        live = len(store.search(("users",), limit=items + 10, refresh_ttl=False))
        assert live == items, f"{live} of {items} items live: the clock outran the TTL"
    out: dict[str, Any] = {
        name: {"p50": round(statistics.median(v), 1), "p95": round(percentile(v, 95), 1)}
        for name, v in timings.items()
    }
    out["refreshing_over_plain_p50"] = round(out["refreshing"]["p50"] / out["plain"]["p50"], 2)
    out["items"], out["searches"] = items, searches
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--searches", type=int, default=60)
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    result = run(args.items, args.searches)
    print(f"{'search, limit 10':<22} {'p50 ms':>8} {'p95 ms':>8}")
    for name in ("refreshing", "plain"):
        print(f"{name:<22} {result[name]['p50']:>8} {result[name]['p95']:>8}")
    print(f"refreshing / plain, p50: {result['refreshing_over_plain_p50']}")
    import ramem_core

    result["ramem_core"] = str(Path(ramem_core.__file__).parents[1])
    result["command"] = "python benchmarks/bench_ttl.py " + " ".join(sys.argv[1:])
    write_result(args.out, result)


if __name__ == "__main__":
    main()
