"""A recall's vector products, computed where they cost least on a busy machine.

numpy hands a matrix product to its BLAS, and OpenBLAS splits a large enough one over its
threads. Where the cores are busy (a worker process per core, as a fleet runs) a split
product waits for a thread the scheduler has put aside. ``python benchmarks/bench_products.py``
(``results/bench_products.json``) times each product with about a millisecond of Python work
between, alone and in two processes at once on the 2-core machine: a pool's 40 vectors by the
35 kinds' prototypes take 0.03 ms through BLAS alone, 7.1 ms through BLAS two at once, and
0.10 ms through ``einsum``, which never calls BLAS, either way.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

BLAS_FROM = 50_000
"""A product of this many rows times others or more (the question against 50,000 memories)
goes to BLAS: its threads then save an idle machine more than they cost a busy one. Chosen
by ``bench_products.py`` (``results/bench_products.json``, blas against einsum): at 30,000
rows BLAS's threads save 1.7 ms alone and cost 3.5 ms two at once, at 60,000 they save 3.0 and
cost 0.7."""


def _on_blas(rows: Vectors, others: int) -> bool:
    return len(rows) * others >= BLAS_FROM


def cosines(rows: Vectors, others: Vectors) -> Vectors:
    """``rows @ others.T`` (each row's dot product with each of ``others``), off BLAS below
    :data:`BLAS_FROM`."""
    if _on_blas(rows, len(others)):
        return np.asarray(rows @ others.T)
    out: Vectors = np.einsum("ij,kj->ik", rows, others)
    return out


def cosines_with(rows: Vectors, vector: Vectors) -> Vectors:
    """``rows @ vector`` (each row's dot product with ``vector``), off BLAS below
    :data:`BLAS_FROM` rows."""
    if _on_blas(rows, 1):
        return np.asarray(rows @ vector)
    out: Vectors = np.einsum("ij,j->i", rows, vector)
    return out
