"""Choose the replacement model's order threshold on the choose halves of the fixed phrasings.

From the repository root::

    python benchmarks/choose_order.py

An order is not a claim: a question about now may read a later statement first on a weaker
probability than a label needs, and what that costs is a look-alike's answer read second.
This runs the choose halves (even ids) of ``benchmarks/data/state_phrasings.json`` (now_leads,
past_leads) and ``benchmarks/data/unchanged_phrasings.json`` (leads: the look-alike's answer
first) at each order threshold of :data:`GRID` (between the model's doubt and label
thresholds) and keeps the one of the best mean of now_leads and leads (ties: the higher
threshold). The report halves and the fresh phrasings are not read. Writes
``benchmarks/results/choose_order.json``; the chosen value goes into
``ramem_core/_data/replacement.json`` as ``order_threshold`` only with ``--write``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import bench_states
import bench_unchanged

from ramem_core import RetrievalConfig
from ramem_core.replacement import LEARNED_REPLACEMENT

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "choose_order.json"
MODEL = ROOT / "ramem_core" / "_data" / "replacement.json"


def grid() -> list[float]:
    model = LEARNED_REPLACEMENT
    points = {model.doubt, model.order, 0.25, 0.4, 0.5}
    return sorted(round(p, 4) for p in points if model.doubt <= p <= model.label)


GRID = grid()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write the chosen threshold")
    args = parser.parse_args()
    changes = [
        s
        for s in json.loads(bench_states.PHRASINGS.read_text(encoding="utf-8"))["scenarios"]
        if bench_states.part(s) == "choose"
    ]
    looks = [
        s
        for s in json.loads(bench_unchanged.PHRASINGS.read_text(encoding="utf-8"))["scenarios"]
        if bench_states.part(s) == "choose"
    ]
    rows: dict[str, Any] = {}
    for t in GRID:
        config = RetrievalConfig(replacement=replace(LEARNED_REPLACEMENT, order=t))
        states = bench_states.table(bench_states.run(config, changes))["choose"]
        unchanged = bench_unchanged.table(bench_unchanged.run(config, looks))["choose"]
        rows[str(t)] = {
            "now_leads": states["now_leads"],
            "past_leads": states["past_leads"],
            "held_true": states["held_true"],
            "leads": unchanged["leads"],
            "false_label": unchanged["false_label"],
            "objective": round((states["now_leads"] + unchanged["leads"]) / 2, 4),
        }
        print(t, rows[str(t)], flush=True)
    best = max(GRID, key=lambda t: (rows[str(t)]["objective"], t))
    result = {
        "command": "python benchmarks/choose_order.py",
        "grid": rows,
        "chosen": best,
        "fitted": LEARNED_REPLACEMENT.order,
    }
    RESULT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"chosen order threshold {best} (the fit's {LEARNED_REPLACEMENT.order}); wrote {RESULT}")
    if args.write:
        record = json.loads(MODEL.read_text(encoding="utf-8"))
        record["order_threshold"] = best
        record["order_chosen_by"] = "python benchmarks/choose_order.py --write"
        MODEL.write_text(json.dumps(record) + "\n", encoding="utf-8")
        print(f"wrote {MODEL}")


if __name__ == "__main__":
    main()
