""" "After X" leads with what came after X, and X is labelled as the anchor.

From the repository root::

    python benchmarks/bench_anchor.py

The scenarios are ``benchmarks/data/anchor_scenarios.json`` (60, written by a helper from a
brief alone, before this benchmark was first run, never read to choose a rule): each is one
user's messages, among them one telling of an event X (``anchor``) and two to four telling
what happened on the asked side of it (``within``: after X for "after", before X for
"before"), with distractors on the other side close to X in topic; then a question ("What
have I been up to since the move?") asked at its own moment. Each scenario is replayed live
into its own namespace and asked its question.

Measures, over the top 10:

- ``grounded``: the question's before/after relation was grounded on X's message;
- ``within_leads``: the first of the scenario's messages is one of ``within``;
- ``anchor_first``: the first is X itself;
- ``anchor_labelled``: X, where shown, carries the anchor label (``Evidence.anchor``);
- ``anchor_within``: X, where shown, has a "within" line for the relation (must be 0);
- ``within@3``: the share of ``within`` among the first three.

Runs: ``ramem`` (as configured), ``no-anchor-after`` (the pass off) and ``content-only``.
Writes ``benchmarks/results/bench_anchor.json``, with ``ramem`` minus ``no-anchor-after``
per measure (paired bootstrap 95% intervals).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from scenario_runs import paired, run_variants, write

from ramem_core import RaMem, RetrievalConfig
from ramem_core.types import Relation

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "benchmarks" / "data" / "anchor_scenarios.json"
RESULT = ROOT / "benchmarks" / "results" / "bench_anchor.json"
K = 10
MEASURES = (
    "grounded",
    "within_leads",
    "anchor_first",
    "anchor_labelled",
    "anchor_within",
    "within@3",
)
VARIANTS = {
    "ramem": RetrievalConfig(),
    "no-anchor-after": replace(RetrievalConfig(), anchor_after=False),
    "content-only": replace(RetrievalConfig(), context_ranking=False),
}


def run(config: RetrievalConfig, scenarios: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp, RaMem.open(tmp, config=config) as memory:
        started = time.monotonic()
        for n, scenario in enumerate(scenarios, start=1):
            ns = f"a-{scenario['id']}"
            ids = [
                memory.add_turn(
                    turn.get("speaker", "user"),
                    turn["text"],
                    at=datetime.fromisoformat(turn["at"]),
                    namespace=ns,
                ).id
                for turn in sorted(scenario["turns"], key=lambda t: t["at"])
            ]
            order = sorted(range(len(scenario["turns"])), key=lambda i: scenario["turns"][i]["at"])
            id_of = {i: ids[order.index(i)] for i in range(len(ids))}
            anchor = id_of[scenario["anchor"]]
            within = {id_of[i] for i in scenario["within"]}
            at = datetime.fromisoformat(scenario["asked_at"])
            found = memory.recall(scenario["question"], K, at=at, namespace=ns)
            shown = [e for e in found[:K] if e.unit.id in id_of.values()]
            relations = [
                t
                for t in found.frame.grounded_times
                if t.relation in (Relation.BEFORE, Relation.AFTER)
            ]
            x = [e for e in shown if e.unit.id == anchor]
            row: dict[str, Any] = {
                "id": scenario["id"],
                "relation": scenario["relation"],
                "grounded": float(any(t.anchor_id == anchor for t in relations)),
                "within_leads": float(bool(shown) and shown[0].unit.id in within),
                "anchor_first": float(bool(shown) and shown[0].unit.id == anchor),
                "within@3": sum(e.unit.id in within for e in shown[:3]) / min(3, len(within)),
            }
            if x:
                row["anchor_labelled"] = float(x[0].anchor is not None)
                row["anchor_within"] = float(
                    any(f"within {t.text!r}" in s for t in relations for s in x[0].satisfied)
                )
            rows.append(row)
            if n % 20 == 0 or n == len(scenarios):
                print(f"  {n}/{len(scenarios)} ({time.monotonic() - started:.0f} s)", flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for group in ("all", "after", "before"):
        chosen = [r for r in rows if group == "all" or r["relation"] == group]
        cell: dict[str, Any] = {"n": len(chosen)}
        for m in MEASURES:
            values = [r[m] for r in chosen if m in r]
            cell[m] = round(sum(values) / len(values), 3) if values else None
            cell[f"{m}_n"] = len(values)
        out[group] = cell
    return out


def main() -> None:
    def show(tabled: dict[str, Any]) -> None:
        for group, cell in tabled.items():
            print(f"  {group:6}" + "  ".join(f"{m} {cell[m]}" for m in MEASURES))

    done = run_variants(
        __doc__,
        "python benchmarks/bench_anchor.py",
        VARIANTS,
        run,
        table,
        show,
        scenarios=SCENARIOS,
        out=RESULT,
    )
    if done is None:
        return
    result, out = done
    runs = result["runs"]
    if "ramem" in runs and "no-anchor-after" in runs:
        result["ramem_minus_no_anchor_after"] = paired(
            runs["ramem"]["rows"], runs["no-anchor-after"]["rows"], MEASURES
        )
        print("ramem - no-anchor-after:", result["ramem_minus_no_anchor_after"])
    write(result, out)


if __name__ == "__main__":
    main()
