"""The benchmark scripts import as they are run (``python benchmarks/NAME.py``), with no
``sys.path`` edits and no private names of another script."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_script_edits_no_path_and_imports_no_private_name(script: str) -> None:
    code = (BENCHMARKS / script).read_text(encoding="utf-8")
    assert "sys.path" not in code
    private = re.findall(
        r"^\s*from (?:bench_|audit_|fit_|tune_|ramem_core)\S* import .*\b_\w", code, re.M
    )
    assert private == []


def test_every_script_imports() -> None:
    """Each script's module-level code runs (its ``main`` is behind ``__name__``)."""
    modules = [name.removesuffix(".py") for name in SCRIPTS]
    code = f"import importlib\nfor m in {modules!r}:\n    importlib.import_module(m)\n"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=BENCHMARKS, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
