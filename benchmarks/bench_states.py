"""States in the user's own words: does the state that holds lead, and is a superseded one
labelled?

From the repository root::

    python benchmarks/bench_states.py

The scenarios are ``benchmarks/data/state_phrasings.json``: written by a helper before any
rule was tuned and kept fixed (at least 20 per kind of state: a job, a home, a school, a team,
a partner, a car, a phone; a party, a trip, a visit, a deadline whose date or place changes),
each a user's turns over months, the later statements mostly in words other than "moved",
"I work at" or "appointment". Each scenario is replayed live (``RaMem.add_turn`` with its own
times) into its own namespace, then asked its "now" question and its past-time question at
their own moments (``recall(at=...)``).

Measures, over the top 10 of each question:

- ``now_leads``: the first statement of the state in the list is the latest one;
- ``past_leads``: the first statement of the state is the one that held at the asked time;
- ``labelled``: every statement of the state in the list that a later one replaced (before
  the moment of asking) carries a "superseded" label;
- ``held_true``: no statement but the one that held is told it held at the asked time
  (through it or during part of it; "may have held" claims nothing).

The parts: scenarios with an even number in their id choose, odd ones report (fixed before
any run). Writes ``benchmarks/results/bench_states.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ramem_core import RaMem, RetrievalConfig
from ramem_core.types import Evidence

ROOT = Path(__file__).resolve().parents[1]
PHRASINGS = ROOT / "benchmarks" / "data" / "state_phrasings.json"
RESULT = ROOT / "benchmarks" / "results" / "bench_states.json"
K = 10


def part(scenario: dict[str, Any]) -> str:
    """choose for an even number in the id ("job-04"), report for an odd one (a set written
    after the models were frozen, ``--phrasings benchmarks/data/fresh/...``, is reported
    whole, both parts)."""
    return "choose" if int(scenario["id"].rsplit("-", 1)[1]) % 2 == 0 else "report"


def replay(memory: RaMem, scenario: dict[str, Any], namespace: str) -> list[str]:
    """The scenario's turns stored live; the ids of its state statements, in order."""
    ids = add_turns(memory, scenario, namespace)
    return [ids[i] for i in scenario["states"]]


def add_turns(memory: RaMem, scenario: dict[str, Any], namespace: str) -> list[str]:
    """The scenario's turns stored live, each at its own time, said by "user"; their ids."""
    return [
        memory.add_turn(
            "user", turn["text"], at=datetime.fromisoformat(turn["at"]), namespace=namespace
        ).id
        for turn in scenario["turns"]
    ]


def claims_held(evidence: Evidence) -> bool:
    """Its "valid" line says it held at the asked time, through it or during part of it ("may
    have held" is no claim: it says it does not know)."""
    return any(
        ("held through" in line or "held during" in line) and "may have held" not in line
        for line in evidence.satisfied
    )


def measure(found: list[Evidence], states: list[str], expected: str) -> dict[str, float]:
    """The measures of one question's list (see the module's docstring)."""
    shown = [e for e in found[:K] if e.unit.id in states]
    first = shown[0].unit.id if shown else None
    replaced = set(states[:-1])
    labelled = all(e.superseded is not None for e in shown if e.unit.id in replaced)
    held_wrong = any(claims_held(e) and e.unit.id != expected for e in shown)
    return {
        "leads": float(first == expected),
        "in_top": float(expected in [e.unit.id for e in shown]),
        "labelled": float(labelled),
        "held_true": float(not held_wrong),
    }


def run(config: RetrievalConfig, scenarios: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    # a store of its own per run (an ephemeral Chroma client is shared by the whole process)
    with tempfile.TemporaryDirectory() as tmp, RaMem.open(tmp, config=config) as memory:
        started = time.monotonic()
        for n, scenario in enumerate(scenarios, start=1):
            ns = f"s-{scenario['id']}"
            states = replay(memory, scenario, ns)
            now_q, past_q = scenario["now_question"], scenario["past_question"]
            clock = time.perf_counter()
            now = memory.recall(
                now_q["text"], K, at=datetime.fromisoformat(now_q["at"]), namespace=ns
            )
            now_ms = (time.perf_counter() - clock) * 1000
            clock = time.perf_counter()
            past = memory.recall(
                past_q["text"], K, at=datetime.fromisoformat(past_q["at"]), namespace=ns
            )
            past_ms = (time.perf_counter() - clock) * 1000
            held = states[past_q["answer_state"]]
            rows.append(
                {
                    "id": scenario["id"],
                    "kind": scenario["kind"],
                    "part": part(scenario),
                    "now": measure(list(now.evidence), states, states[-1]),
                    "past": measure(list(past.evidence), states, held),
                    "ms": [round(now_ms, 2), round(past_ms, 2)],
                }
            )
            if n % 50 == 0 or n == len(scenarios):
                print(f"  {n}/{len(scenarios)} ({time.monotonic() - started:.0f} s)", flush=True)
    return rows


def percentiles(values: list[float]) -> dict[str, float]:
    """p50 and p95 of recall times in ms (the past question of a scenario may find pairs the
    pair reader read for its now question in its cache, as a live agent's second question
    would)."""
    import numpy as np

    if not values:
        return {}
    return {
        "p50": round(float(np.percentile(values, 50)), 1),
        "p95": round(float(np.percentile(values, 95)), 1),
    }


def table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means per part and kind: now_leads, past_leads, labelled (both questions), held_true."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        for g in ("all", r["part"], f"{r['part']} {r['kind']}"):
            groups[g].append(r)

    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 3)

    return {
        g: {
            "n": len(rs),
            "now_leads": mean([r["now"]["leads"] for r in rs]),
            "past_leads": mean([r["past"]["leads"] for r in rs]),
            "labelled": mean([min(r["now"]["labelled"], r["past"]["labelled"]) for r in rs]),
            "held_true": mean([min(r["now"]["held_true"], r["past"]["held_true"]) for r in rs]),
            **(
                {"recall_ms": percentiles([m for r in rs for m in r.get("ms", ())])}
                if g == "all"
                else {}
            ),
        }
        for g, rs in sorted(groups.items())
    }


VARIANTS = {
    "ramem": RetrievalConfig(),
    "no-supersession": replace(RetrievalConfig(), supersession=False),
    "words-only": replace(RetrievalConfig(), state_kind_vectors=None),
    "no-lasting": replace(RetrievalConfig(), lasting=None),
    "no-reader": replace(
        RetrievalConfig(), replacement=RetrievalConfig().replacement.without_reader()
    ),
    **{
        f"kinds={t}": replace(RetrievalConfig(), state_kind_vectors=t)
        for t in (0.3, 0.35, 0.4, 0.45, 0.5)
    },
}
"""The runs: RaMem as configured, without supersession, with the words alone, without the
lasting-state reader, without the replacement model's pair reader (its features alone, at their
own thresholds), with the kinds read from vectors at each threshold of the grid
(``kinds=``, chosen on the choose half)."""
DEFAULT_VARIANTS = "ramem,no-supersession,no-reader"


def paired(
    rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]], part_: str
) -> dict[str, Any]:
    """``a`` minus ``b`` on one part, per measure, with paired bootstrap 95% intervals."""
    from ramem_core.evaluation.stats import paired_bootstrap

    out = {}
    for question, measure in (("now", "leads"), ("past", "leads"), ("now", "labelled")):
        a = [r[question][measure] for r in rows_a if r["part"] == part_]
        b = [r[question][measure] for r in rows_b if r["part"] == part_]
        p = paired_bootstrap(a, b)
        assert p is not None
        out[f"{question}_{measure}"] = [round(p.diff, 3), round(p.low, 3), round(p.high, 3)]
    return out


Rows = list[dict[str, Any]]


def variant_runs(
    names: list[str],
    scenarios: list[dict[str, Any]],
    run: Callable[[RetrievalConfig, list[dict[str, Any]]], Rows],
    table: Callable[[Rows], dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Each of the :data:`VARIANTS` named, run over ``scenarios``: its rows and table."""
    runs = {}
    for name in names:
        print(f"{name}:", flush=True)
        rows = run(VARIANTS[name], scenarios)
        runs[name] = {"table": table(rows), "rows": rows}
    return runs


def against(
    runs: dict[str, dict[str, Any]], base: str, paired: Callable[[Rows, Rows, str], Any]
) -> None:
    """Each run minus the run ``base`` on each part, with paired intervals (kept in the run
    as ``minus_<base>`` and printed)."""
    if base not in runs:
        return
    for name, entry in runs.items():
        if name != base:
            entry["minus_" + base] = {
                p: paired(entry["rows"], runs[base]["rows"], p) for p in ("choose", "report")
            }
            print(f"{name} minus {base}: {entry['minus_' + base]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help=f"of {', '.join(VARIANTS)}")
    parser.add_argument("--against", default="no-supersession", help="paired intervals against")
    parser.add_argument("--phrasings", type=Path, default=PHRASINGS, help="the scenarios")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    if not args.phrasings.exists():
        print(f"skipped: {args.phrasings} is missing")
        return
    scenarios = json.loads(args.phrasings.read_text(encoding="utf-8"))["scenarios"]
    result: dict[str, Any] = {
        "command": f"python benchmarks/bench_states.py --phrasings {args.phrasings.name}"
    }
    result["runs"] = variant_runs(args.variants.split(","), scenarios, run, table)
    for name, entry in result["runs"].items():
        print(f"\n== {name}")
        for group, cell in entry["table"].items():
            if " " in group:
                continue
            print(
                f"{group:8} n={cell['n']:3}  now_leads {cell['now_leads']:.3f}  past_leads "
                f"{cell['past_leads']:.3f}  labelled {cell['labelled']:.3f}  held_true "
                f"{cell['held_true']:.3f}"
                + (f"  recall ms {cell['recall_ms']}" if "recall_ms" in cell else "")
            )
    against(result["runs"], args.against, paired)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
