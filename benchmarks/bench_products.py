"""A recall's matrix products through numpy's BLAS and off it (``ramem_core.index.products``),
in one process and in two processes at once (a worker per core, as ``bench_fleet.py`` runs).

    python benchmarks/bench_products.py            # table + benchmarks/results/bench_products.json

Each product is timed 300 times with about a millisecond of Python work between (a recall's
own), and the median is reported, in ms. OpenBLAS splits a large enough product over its
threads; where the cores are busy a split product waits for a thread the scheduler has put
aside. Each product is timed through BLAS (``@``), through ``einsum`` (never BLAS) and as a
recall computes it (``ramem_core.index.products``: einsum below ``BLAS_FROM``, BLAS above).
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


def _product(shape: tuple[int, int], how: str) -> Callable[[], Any]:
    """The product of ``shape`` through BLAS (``"blas"``), einsum (``"einsum"``) or as a
    recall computes it (``"ramem"``)."""
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((shape[0], DIM)).astype(np.float32)
    other = rng.standard_normal((max(shape[1], 1), DIM)).astype(np.float32)
    vector = other[0]
    if shape[1] == 0:
        return {
            "blas": lambda: rows @ vector,
            "einsum": lambda: np.einsum("ij,j->i", rows, vector),
            "ramem": lambda: products.cosines_with(rows, vector),
        }[how]
    return {
        "blas": lambda: rows @ other.T,
        "einsum": lambda: np.einsum("ij,kj->ik", rows, other),
        "ramem": lambda: products.cosines(rows, other),
    }[how]


def _python_work(steps: int = 20_000) -> int:
    """About a millisecond of interpreted work between two products (a warm recall's own,
    on this machine: 1.2-1.5 ms in all)."""
    total = 0
    for i in range(steps):
        total += i
    return total


def timed(name: str, how: str, times: int = 300) -> float:
    """Median ms of one product, ``times`` times, with Python work between."""
    product = _product(SHAPES[name], how)
    taken = []
    for _ in range(times):
        start = time.perf_counter()
        product()
        taken.append((time.perf_counter() - start) * 1000)
        _python_work()
    return round(statistics.median(taken), 3)


def _worker(name: str, how: str, out: Any) -> None:
    out.put(timed(name, how))


def at_once(name: str, how: str, processes: int) -> float:
    """The slower of ``processes`` processes' medians, all timing the product at once."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(name, how, queue)) for _ in range(processes)]
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
    hows = ("blas", "einsum", "ramem")
    heads = [f"{how}, alone" for how in hows] + [f"{how}, {args.processes} at once" for how in hows]
    print(f"{'product':<36}" + "".join(f"{head:>18}" for head in heads))
    for name in SHAPES:
        row: dict[str, Any] = {"product": name}
        for how in hows:
            row[f"{how}_alone_ms"] = timed(name, how)
        for how in hows:
            row[f"{how}_at_once_ms"] = at_once(name, how, args.processes)
        rows.append(row)
        values = [row[f"{how}_alone_ms"] for how in hows] + [
            row[f"{how}_at_once_ms"] for how in hows
        ]
        print(f"{name:<36}" + "".join(f"{v:>18}" for v in values), flush=True)
    result = {"processes": args.processes, "cpus": os.cpu_count(), "products": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
