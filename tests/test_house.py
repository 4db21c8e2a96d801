"""The house rules a reader relies on: no function of the core longer than a screen or two."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 80
"""Lines of code a function of ``ramem_core`` may have, its docstring not counted."""


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = node.body
    first = body[0]
    documented = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    start = (first.end_lineno or first.lineno) + 1 if documented and len(body) > 1 else first.lineno
    return (node.end_lineno or node.lineno) - start + 1


def test_no_function_of_the_core_is_over_80_lines() -> None:
    long = []
    for path in sorted((ROOT / "ramem_core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = _code_lines(node)
                if lines > MAX_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines}")
    assert not long, "\n".join(long)
