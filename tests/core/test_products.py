"""A recall's small products are computed off BLAS (``ramem_core.index.products``)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from ramem_core.index import products

CORE = Path(__file__).resolve().parents[2] / "ramem_core"

ON_BLAS = {"products.py", "fusion.py"}
"""Modules whose ``@`` products may go to BLAS: the rule itself, and the learned fusion's
candidates (about 50) times its 11 weights, too small for BLAS to split."""


def test_products_are_the_matrix_products() -> None:
    rng = np.random.default_rng(7)
    rows = rng.standard_normal((40, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)  # unit vectors: their products are cosines
    others = rng.standard_normal((35, 384)).astype(np.float32)
    others /= np.linalg.norm(others, axis=1, keepdims=True)
    found = products.cosines(rows, others)
    assert found.shape == (40, 35)
    assert found.dtype == np.float32
    np.testing.assert_allclose(found, rows @ others.T, atol=1e-6)
    along = products.cosines_with(rows, others[0])
    assert along.shape == (40,)
    np.testing.assert_allclose(along, rows @ others[0], atol=1e-6)


def test_a_large_product_goes_to_blas_and_gives_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((12, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    multiplied: list[int] = []

    class Watched(np.ndarray):  # type: ignore[type-arg]
        def __matmul__(self, other: object) -> object:  # type: ignore[override]
            multiplied.append(len(self))
            return np.asarray(self) @ other

    watched = rows.view(Watched)
    off = products.cosines_with(watched, rows[1])
    assert multiplied == []  # 12 rows: below BLAS_FROM, einsum
    monkeypatch.setattr(products, "BLAS_FROM", 12)
    on = products.cosines_with(watched, rows[1])
    assert multiplied == [12]
    assert np.asarray(on).dtype == np.asarray(off).dtype == np.float32
    np.testing.assert_allclose(on, off, atol=1e-6)
    # rows times others: 12 x 3 products
    monkeypatch.setattr(products, "BLAS_FROM", 37)
    off = products.cosines(watched, rows[:3])
    assert multiplied == [12]
    monkeypatch.setattr(products, "BLAS_FROM", 36)
    on = products.cosines(watched, rows[:3])
    assert multiplied == [12, 12]
    np.testing.assert_allclose(on, off, atol=1e-6)


def test_the_index_and_retrieval_multiply_vectors_only_through_products() -> None:
    """``@`` hands a product to BLAS, whose threads stall it where cores are busy
    (``benchmarks/bench_products.py``): every vector product of a recall goes through
    :mod:`ramem_core.index.products`, which decides."""
    found = []
    for path in sorted([*(CORE / "retrieval").rglob("*.py"), *(CORE / "index").rglob("*.py")]):
        if path.name in ON_BLAS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, ast.MatMult):
                found.append(f"{path.relative_to(CORE)}:{node.lineno}")
    assert found == []
