"""Look-alike statements that replace nothing: is any of them told as superseded?

From the repository root::

    python benchmarks/bench_unchanged.py

The scenarios are ``benchmarks/data/unchanged_phrasings.json``: written by a helper that never
saw the rules, before any run, and kept fixed (20 per kind: two jobs held at once, a second
home, two trips, two parties, a health note and an exercise note, ...). In each, one user's
statements look alike (one speaker, one kind of thing, "now", dates) but none replaces another:
all stay true. Each scenario is replayed live (``RaMem.add_turn`` with its own times) into its
own namespace and asked its question (whose answer is the earlier look-alike) at its moment.

Measures, over the top 10:

- ``false_label``: a statement of the scenario is labelled superseded (every label is false
  here: nothing was replaced);
- ``answer_labelled``: the answer itself is labelled superseded;
- ``found``: the answer is in the top 10; ``leads``: it is the first of the scenario's turns.

The parts: even ids choose, odd ones report (fixed before any run). The same variants as
``bench_states.py`` (whose measures say what a stricter rule costs on real changes of state).
Writes ``benchmarks/results/bench_unchanged.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from bench_states import DEFAULT_VARIANTS, VARIANTS, add_turns, against, part, variant_runs

from ramem_core import RaMem, RetrievalConfig

ROOT = Path(__file__).resolve().parents[1]
PHRASINGS = ROOT / "benchmarks" / "data" / "unchanged_phrasings.json"
RESULT = ROOT / "benchmarks" / "results" / "bench_unchanged.json"
K = 10


def run(config: RetrievalConfig, scenarios: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp, RaMem.open(tmp, config=config) as memory:
        started = time.monotonic()
        for n, scenario in enumerate(scenarios, start=1):
            ns = f"u-{scenario['id']}"
            ids = add_turns(memory, scenario, ns)
            question = scenario["question"]
            found = memory.recall(
                question["text"], K, at=datetime.fromisoformat(question["at"]), namespace=ns
            )
            answer = ids[question["answer_turn"]]
            shown = [e for e in found[:K] if e.unit.id in ids]
            rows.append(
                {
                    "id": scenario["id"],
                    "kind": scenario["kind"],
                    "lookalike": scenario.get("lookalike", ""),
                    "part": part(scenario),
                    "false_label": float(any(e.superseded is not None for e in shown)),
                    "answer_labelled": float(
                        any(e.superseded is not None for e in shown if e.unit.id == answer)
                    ),
                    "found": float(any(e.unit.id == answer for e in shown)),
                    "leads": float(bool(shown) and shown[0].unit.id == answer),
                }
            )
            if n % 60 == 0 or n == len(scenarios):
                print(f"  {n}/{len(scenarios)} ({time.monotonic() - started:.0f} s)", flush=True)
    return rows


MEASURES = ("false_label", "answer_labelled", "found", "leads")


def table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means per part, and per part and kind."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        for g in ("all", r["part"], f"{r['part']} {r['kind']}"):
            groups[g].append(r)
        if r["lookalike"]:
            groups[f"lookalike {r['lookalike']}"].append(r)
    return {
        g: {"n": len(rs), **{m: round(sum(r[m] for r in rs) / len(rs), 3) for m in MEASURES}}
        for g, rs in sorted(groups.items())
    }


def paired(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]], part_: str) -> Any:
    """``a`` minus ``b`` on one part, per measure, with paired bootstrap 95% intervals."""
    from ramem_core.evaluation.stats import paired_bootstrap

    out = {}
    for measure in MEASURES:
        a = [r[measure] for r in rows_a if r["part"] == part_]
        b = [r[measure] for r in rows_b if r["part"] == part_]
        p = paired_bootstrap(a, b)
        assert p is not None
        out[measure] = [round(p.diff, 3), round(p.low, 3), round(p.high, 3)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help=f"of {', '.join(VARIANTS)}")
    parser.add_argument("--against", default="ramem", help="paired intervals against")
    parser.add_argument("--phrasings", type=Path, default=PHRASINGS, help="the scenarios")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    if not args.phrasings.exists():
        print(f"skipped: {args.phrasings} is missing")
        return
    scenarios = json.loads(args.phrasings.read_text(encoding="utf-8"))["scenarios"]
    result: dict[str, Any] = {
        "command": f"python benchmarks/bench_unchanged.py --phrasings {args.phrasings.name}"
    }
    result["runs"] = variant_runs(args.variants.split(","), scenarios, run, table)
    for name, entry in result["runs"].items():
        print(f"\n== {name}")
        for group, cell in entry["table"].items():
            if " " in group and not group.startswith("lookalike"):
                continue
            cells = "  ".join(f"{m} {cell[m]:.3f}" for m in MEASURES)
            print(f"{group:24} n={cell['n']:3}  {cells}")
    against(result["runs"], args.against, paired)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
