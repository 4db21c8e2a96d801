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


def test_the_audits_ruling_is_symmetric(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 54: a challenger enters on a positive lower bound; a shipped pass leaves only when
    shown to earn nothing (every upper bound of its purpose at most +0.005) or to cost (an
    upper bound below -0.01 anywhere), never on a lower bound at 0.000 alone."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from audit_ranking import verdict  # type: ignore[import-not-found]

    purpose = (("R@10", "temporal"), ("D@1", None))
    small = {
        "R@10": {"temporal": {"gain": [0.01, 0.0, 0.026]}},
        "D@1": {"all": {"gain": [0.003, -0.003, 0.008]}},
    }
    assert verdict(small, purpose, shipped=True)["keep"] is True  # may earn: it stays
    assert verdict(small, purpose, shipped=False)["keep"] is False  # not enough to enter
    flat = {"R@10": {"temporal": {"gain": [0.0, 0.0, 0.004]}}, "D@1": {"all": {"gain": [0, 0, 0]}}}
    assert verdict(flat, purpose, shipped=True)["keep"] is False  # shown to earn nothing
    costly = {**small, "turn@1": {"all": {"gain": [-0.03, -0.05, -0.011]}}}
    judged = verdict(costly, purpose, shipped=True)
    assert judged["keep"] is False
    assert judged["hurts"] == ["turn@1 all"]
    earning = {
        "R@10": {"temporal": {"gain": [0.02, 0.004, 0.04]}},
        "D@1": {"all": {"gain": [0, 0, 0]}},
    }
    assert verdict(earning, purpose, shipped=False)["keep"] is True  # enters
    assert verdict(earning, purpose, shipped=False)["earned_by"] == ["R@10 temporal"]
