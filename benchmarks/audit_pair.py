"""Pair two audit runs question by question: how did a change move RaMem's cross-validated
figures?

    python benchmarks/audit_pair.py BEFORE.json AFTER.json [--out FILE]

Each file is a run of ``benchmarks/audit_ranking.py`` (its cached rows under
``results/audit/runs``, one row of measures per dev question, in the audit's question order:
the run of one tree's ``ramem``, say, against another tree's). Prints, per metric and per
LoCoMo category / LongMemEval question type, both CV means and the paired bootstrap 95%
interval of after minus before (for D@1, lower is better: the fall), and flags a cell whose
upper bound is below -0.01 (a loss beyond its interval). Needs the dev data (to group the
questions); skips cleanly without it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from audit_ranking import DATA, METRICS, REPORTED, gains, lme_questions, locomo_questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not (DATA / "locomo_dev.json").exists():
        print(f"skipped: {DATA} has no dev data")
        return
    questions = locomo_questions()[0] + lme_questions()[0]
    before = json.loads(args.before.read_text(encoding="utf-8"))
    after = json.loads(args.after.read_text(encoding="utf-8"))
    if not len(before) == len(after) == len(questions):
        raise SystemExit(f"runs of {len(before)} and {len(after)} rows, {len(questions)} questions")
    table = gains(after, before, questions, tuple(dict.fromkeys((*METRICS, *REPORTED))))
    losses = []
    for metric, cells in table.items():
        print(f"\n{metric}")
        for group, cell in cells.items():
            low, high = cell["gain"][1], cell["gain"][2]
            flag = "  LOSS" if high < -0.01 else ""
            if flag:
                losses.append(f"{metric} {group}")
            print(
                f"  {group:28} n={cell['n']:4}  before {cell['without']:.3f}  after "
                f"{cell['with']:.3f}  {cell['gain'][0]:+.3f} [{low:+.3f}, {high:+.3f}]{flag}"
            )
    print(f"\nlosses beyond the interval: {losses or 'none'}")
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "before": str(args.before),
                    "after": str(args.after),
                    "table": table,
                    "losses": losses,
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
