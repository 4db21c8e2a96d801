"""A question asking *when* leads with the memory that tells of the event, and says when.

From the repository root::

    python benchmarks/bench_when.py

The scenarios are ``benchmarks/data/when_scenarios.json`` (60, written by a helper from a
brief alone, before this benchmark was first run, never read to choose a rule): each is one
user's six messages, among them one telling of the asked event (``answer``) and two or three
close to it in topic that are not it (``topic_distractors``: opinions, plans, somebody else's
event, another occasion the question's details rule out); then a question asking when ("When
did I have oral surgery?") at its own moment. Two kinds:

- ``says_when`` (40): the answer says when in its own words ("yesterday", "last Friday", a
  date) and the distractors say no time: what the "says when" bonus is for;
- ``said_plainly`` (20): the answer says no time (only the moment it was sent tells when) and a
  distractor does: what the bonus may cost.

Each scenario is replayed live into its own namespace and asked its question. Measures, over
the top 10 of the scenario's messages: ``answer_first``, ``answer@3`` and
``distractor_first`` (a topic distractor leads). Runs: ``ramem`` (as configured), ``no-when``
(``time_weight`` 0: no bonus, and the learned fusion's "timed" feature reads 0) and
``content-only``. Writes ``benchmarks/results/bench_when.json``, with ``ramem`` minus
``no-when`` per measure and kind (paired bootstrap 95% intervals).
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from scenario_runs import paired, run_variants, write

from ramem_core import RaMem, RetrievalConfig

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "benchmarks" / "data" / "when_scenarios.json"
RESULT = ROOT / "benchmarks" / "results" / "bench_when.json"
K = 10
MEASURES = ("answer_first", "answer@3", "distractor_first")
KINDS = ("all", "says_when", "said_plainly")
VARIANTS = {
    "ramem": RetrievalConfig(),
    "no-when": replace(RetrievalConfig(), time_weight=0.0),
    "content-only": replace(RetrievalConfig(), context_ranking=False),
}


def run(config: RetrievalConfig, scenarios: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp, RaMem.open(tmp, config=config) as memory:
        started = time.monotonic()
        for n, scenario in enumerate(scenarios, start=1):
            ns = f"w-{scenario['id']}"
            turns = scenario["turns"]
            order = sorted(range(len(turns)), key=lambda i: turns[i]["at"])
            id_of = {}
            for i in order:
                turn = turns[i]
                at = datetime.fromisoformat(turn["at"])
                unit = memory.add_turn(turn["speaker"], turn["text"], at=at, namespace=ns)
                id_of[i] = unit.id
            answer = id_of[scenario["answer"]]
            distractors = {id_of[i] for i in scenario["topic_distractors"]}
            asked = datetime.fromisoformat(scenario["asked_at"])
            found = memory.recall(scenario["question"], K, at=asked, namespace=ns)
            shown = [e.unit.id for e in found[:K] if e.unit.id in id_of.values()]
            rows.append(
                {
                    "id": scenario["id"],
                    "kind": scenario["kind"],
                    "asks_when": float(found.frame.asks_when),
                    "answer_first": float(bool(shown) and shown[0] == answer),
                    "answer@3": float(answer in shown[:3]),
                    "distractor_first": float(bool(shown) and shown[0] in distractors),
                }
            )
            if n % 20 == 0 or n == len(scenarios):
                print(f"  {n}/{len(scenarios)} ({time.monotonic() - started:.0f} s)", flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in KINDS:
        chosen = [r for r in rows if kind == "all" or r["kind"] == kind]
        cell: dict[str, Any] = {"n": len(chosen)}
        for m in ("asks_when", *MEASURES):
            cell[m] = round(sum(r[m] for r in chosen) / len(chosen), 3) if chosen else None
        out[kind] = cell
    return out


def main() -> None:
    def show(tabled: dict[str, Any]) -> None:
        for kind, cell in tabled.items():
            print(f"  {kind:12}" + "  ".join(f"{m} {cell[m]}" for m in ("n", *MEASURES)))

    done = run_variants(
        __doc__,
        "python benchmarks/bench_when.py",
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
    if "ramem" in runs and "no-when" in runs:
        a, b = runs["ramem"]["rows"], runs["no-when"]["rows"]
        result["ramem_minus_no_when"] = {
            kind: paired(a, b, MEASURES, lambda row, k=kind: k in ("all", row["kind"]))
            for kind in KINDS
        }
        print("ramem - no-when:", json.dumps(result["ramem_minus_no_when"]))
    write(result, out)


if __name__ == "__main__":
    main()
