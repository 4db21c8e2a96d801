"""What the scenario benchmarks share (``bench_anchor.py``, ``bench_events.py``,
``bench_when.py``): their command line, each variant run over the scenario file and tabled,
paired differences between two runs, and the JSON they write."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ramem_core import RetrievalConfig
from ramem_core.evaluation.stats import paired_bootstrap

Rows = list[dict[str, Any]]


def run_variants(
    doc: str,
    command: str,
    variants: Mapping[str, RetrievalConfig],
    run: Callable[[RetrievalConfig, list[dict[str, Any]]], Rows],
    table: Callable[[Rows], dict[str, Any]],
    show: Callable[[dict[str, Any]], None],
    *,
    scenarios: Path,
    out: Path,
    default: str | None = None,
) -> tuple[dict[str, Any], Path] | None:
    """Parse ``--variants``, ``--scenarios`` and ``--out``, then run each variant over the
    scenarios: ``{"command", "runs": {name: {"table", "rows"}}}`` and where to write it;
    ``None`` (said) when the scenario file is missing. ``show`` prints each run's table."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    chosen = default if default is not None else ",".join(variants)
    parser.add_argument("--variants", default=chosen, help=f"of {', '.join(variants)}")
    parser.add_argument("--scenarios", type=Path, default=scenarios)
    parser.add_argument("--out", type=Path, default=out)
    args = parser.parse_args()
    if not args.scenarios.exists():
        print(f"skipped: {args.scenarios} is missing")
        return None
    loaded = json.loads(args.scenarios.read_text(encoding="utf-8"))["scenarios"]
    result: dict[str, Any] = {"command": command, "runs": {}}
    for name in args.variants.split(","):
        print(f"{name}:", flush=True)
        rows = run(variants[name], loaded)
        result["runs"][name] = {"table": table(rows), "rows": rows}
        show(result["runs"][name]["table"])
    return result, args.out


def paired(
    a: Rows, b: Rows, measures: Sequence[str], keep: Callable[[dict[str, Any]], bool] | None = None
) -> dict[str, list[float]]:
    """``a`` minus ``b`` per measure both runs have for a scenario (``keep``: of the
    scenarios whose row in ``a`` it keeps), paired bootstrap 95%."""
    out = {}
    for m in measures:
        both = [
            (x[m], y[m])
            for x, y in zip(a, b, strict=True)
            if m in x and m in y and (keep is None or keep(x))
        ]
        p = paired_bootstrap([x for x, _ in both], [y for _, y in both])
        if p is not None:
            out[m] = [round(p.diff, 3), round(p.low, 3), round(p.high, 3)]
    return out


def write(result: dict[str, Any], out: Path) -> None:
    out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"wrote {out}")
