"""One-off events are never told as held through a later window.

From the repository root::

    python benchmarks/bench_events.py

The scenarios are ``benchmarks/data/fresh/events.json`` (110, written by a helper after the
models were frozen and never read by whoever tuned them): each is one user's turns, among them
a one-off event (a day out, a meal, a match: ``event_turn``), then a question about a later
window ("What did I get up to last weekend?") asked at its own moment; most also say what was
done inside that window (``window_turn``). Each scenario is replayed live into its own
namespace and asked its question.

Measures, over the top 10:

- ``event_held``: the event's "valid" line claims it held during the asked window (through it
  or during part of it; "may have held" claims nothing): it must be 0;
- ``event_first``: the event is the first of the scenario's turns in the list;
- ``window_leads``: where a turn says what was done in the window, it is the first.

Writes ``benchmarks/results/bench_events.json``.
"""

from __future__ import annotations

import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench_states import DEFAULT_VARIANTS, VARIANTS, add_turns, claims_held
from scenario_runs import run_variants, write

from ramem_core import RaMem, RetrievalConfig

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "benchmarks" / "data" / "fresh" / "events.json"
RESULT = ROOT / "benchmarks" / "results" / "bench_events.json"
K = 10
MEASURES = ("event_held", "event_first", "window_leads")


def run(config: RetrievalConfig, scenarios: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp, RaMem.open(tmp, config=config) as memory:
        started = time.monotonic()
        for n, scenario in enumerate(scenarios, start=1):
            ns = f"e-{scenario['id']}"
            ids = add_turns(memory, scenario, ns)
            q = scenario["question"]
            found = memory.recall(q["text"], K, at=datetime.fromisoformat(q["at"]), namespace=ns)
            shown = [e for e in found[:K] if e.unit.id in ids]
            event = ids[scenario["event_turn"]]
            window = scenario.get("window_turn")
            row: dict[str, Any] = {
                "id": scenario["id"],
                "event_held": float(any(claims_held(e) for e in shown if e.unit.id == event)),
                "event_first": float(bool(shown) and shown[0].unit.id == event),
            }
            if window is not None:
                row["window_leads"] = float(bool(shown) and shown[0].unit.id == ids[window])
            rows.append(row)
            if n % 50 == 0 or n == len(scenarios):
                print(f"  {n}/{len(scenarios)} ({time.monotonic() - started:.0f} s)", flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows)}
    for m in MEASURES:
        values = [r[m] for r in rows if m in r]
        out[m] = round(sum(values) / len(values), 3) if values else None
        out[f"{m}_n"] = len(values)
    return out


def main() -> None:
    def show(cell: dict[str, Any]) -> None:
        print("  " + "  ".join(f"{m} {cell[m]} (n={cell[m + '_n']})" for m in MEASURES))

    done = run_variants(
        __doc__,
        "python benchmarks/bench_events.py",
        VARIANTS,
        run,
        table,
        show,
        scenarios=SCENARIOS,
        out=RESULT,
        default=DEFAULT_VARIANTS,
    )
    if done is not None:
        write(*done)


if __name__ == "__main__":
    main()
