"""A recall's vector products, computed where they cost least on a busy machine.

numpy hands a matrix product to its BLAS, and OpenBLAS splits a large enough one over its
threads. Where the cores are busy (a worker process per core, as a fleet runs) a split
product waits for a thread the scheduler has put aside. ``python benchmarks/bench_products.py``
(``results/bench_products.json``) times each product with about a millisecond of Python work
between, alone and in two processes at once on the 2-core machine: a pool's 40 vectors by the
35 kinds' prototypes take 0.03 ms through BLAS alone, 7.2 ms through BLAS two at once, and
0.10 ms through ``einsum``, which never calls BLAS, either way.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

BLAS_FROM = 50_000
"""From this many rows a matrix-vector product (the question against every memory) goes to
BLAS: its threads then save an idle machine more than they cost a busy one. Chosen by
``bench_products.py``: at 30,000 rows they save 1.9 ms alone and cost 3.5 ms two at once, at
60,000 they save 3.2 ms and cost 0.6 ms."""


def cosines(rows: Vectors, others: Vectors) -> Vectors:
    """``rows @ others.T`` (each row's dot product with each of ``others``), off BLAS."""
    out: Vectors = np.einsum("ij,kj->ik", rows, others)
    return out


def cosines_with(rows: Vectors, vector: Vectors) -> Vectors:
    """``rows @ vector`` (each row's dot product with ``vector``), off BLAS below
    :data:`BLAS_FROM` rows."""
    if len(rows) >= BLAS_FROM:
        return np.asarray(rows @ vector, dtype=rows.dtype)
    out: Vectors = np.einsum("ij,j->i", rows, vector)
    return out
