"""A recall's matrix products through numpy's BLAS and off it (``ramem_core.index.products``),
in one process and in two processes at once (a worker per core, as ``bench_fleet.py`` runs).

    python benchmarks/bench_products.py            # table + benchmarks/results/bench_products.json

Each product is timed 300 times with about a millisecond of Python work between (a recall's
own), and the median is reported, in ms. OpenBLAS splits a large enough product over its
threads; where the cores are busy a split product waits for a thread the scheduler has put
aside. The RaMem columns are ``ramem_core.index.products`` as a recall runs them: off BLAS,
but for a matrix-vector product of ``BLAS_FROM`` rows or more.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ramem_core.index import products

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "bench_products.json"
DIM = 384

# name: (rows, others): a (rows x DIM) matrix times a (others x DIM) one; others 0: a vector
SHAPES: dict[str, tuple[int, int]] = {
    "pool x kinds (40 x 35)": (40, 35),
    "statements x statements (30 x 30)": (30, 30),
    "terms x asked kind (3,000)": (3_000, 0),
    "question x memories (600)": (600, 0),
    "question x memories (3,000)": (3_000, 0),
    "question x memories (10,000)": (10_000, 0),
    "question x memories (30,000)": (30_000, 0),
    "question x memories (60,000)": (60_000, 0),
    "question x memories (100,000)": (100_000, 0),
}


def _product(shape: tuple[int, int], off_blas: bool) -> Callable[[], Any]:
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((shape[0], DIM)).astype(np.float32)
    if shape[1] == 0:
        vector = rng.standard_normal(DIM).astype(np.float32)
        if off_blas:
            return lambda: products.cosines_with(rows, vector)
        return lambda: rows @ vector
    others = rng.standard_normal((shape[1], DIM)).astype(np.float32)
    if off_blas:
        return lambda: products.cosines(rows, others)
    return lambda: rows @ others.T


def _python_work(steps: int = 20_000) -> int:
    """About a millisecond of interpreted work between two products (a warm recall's own,
    on this machine: 1.2-1.5 ms in all)."""
    total = 0
    for i in range(steps):
        total += i
    return total


def timed(name: str, off_blas: bool, times: int = 300) -> float:
    """Median ms of one product, ``times`` times, with Python work between."""
    product = _product(SHAPES[name], off_blas)
    taken = []
    for _ in range(times):
        start = time.perf_counter()
        product()
        taken.append((time.perf_counter() - start) * 1000)
        _python_work()
    return round(statistics.median(taken), 3)


def _worker(name: str, off_blas: bool, out: Any) -> None:
    out.put(timed(name, off_blas))


def at_once(name: str, off_blas: bool, processes: int) -> float:
    """The slower of ``processes`` processes' medians, all timing the product at once."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(name, off_blas, queue)) for _ in range(processes)]
    for worker in workers:
        worker.start()
    found = [queue.get() for _ in workers]
    for worker in workers:
        worker.join()
    return max(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    rows = []
    print(f"{'product':<36}{'BLAS, 1 process':>17}{'RaMem':>10}", end="")
    print(f"{f'BLAS, {args.processes} at once':>20}{'RaMem':>10}")
    for name in SHAPES:
        row = {
            "product": name,
            "blas_alone_ms": timed(name, False),
            "ramem_alone_ms": timed(name, True),
            "blas_at_once_ms": at_once(name, False, args.processes),
            "ramem_at_once_ms": at_once(name, True, args.processes),
        }
        rows.append(row)
        print(f"{name:<36}{row['blas_alone_ms']:>17}{row['ramem_alone_ms']:>10}", end="")
        print(f"{row['blas_at_once_ms']:>20}{row['ramem_at_once_ms']:>10}", flush=True)
    result = {"processes": args.processes, "cpus": os.cpu_count(), "products": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
