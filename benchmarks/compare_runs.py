"""Compare two evaluation runs number by number: did a change move any figure?

    python benchmarks/compare_runs.py BEFORE_DIR AFTER_DIR [--out FILE]
    python benchmarks/compare_runs.py BEFORE_DIR AFTER_DIR --paired ramem   # intervals

Each directory is an ``--out`` of ``ramem eval`` (``summary.json`` and ``questions.jsonl``).
Every number of ``summary.json`` (every system, ablation, category, split, interval) is
compared at the precision it is stored with, and every question's ranked memory ids per
system; the counts and any difference are printed and written as JSON. Exit status 1 when
anything differs.

With ``--paired SYSTEM`` it says instead how a change moved that system, question by
question: per category, overall and on each of the choose and report parts (LoCoMo:
Recall@1/5/10/20 and wrong-episode-at-1; LongMemEval: turn recall_any@1/5/10 and session
recall_any@5, per question type), the mean after minus
before with a paired bootstrap 95% interval, and whether a cell fell by more than its
interval (the upper end below zero). Exit status 1 when one did.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def numbers(tree: Any, path: str = "") -> dict[str, float]:
    """Every numeric leaf of a JSON tree by its path."""
    out: dict[str, float] = {}
    if isinstance(tree, dict):
        for key, value in tree.items():
            out.update(numbers(value, f"{path}/{key}"))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            out.update(numbers(value, f"{path}[{i}]"))
    elif isinstance(tree, bool | int | float):
        out[path] = float(tree)
    return out


def rankings(path: Path) -> dict[tuple[str, str, str], list[str]]:
    """(system, sample, question) -> ranked memory ids, from ``questions.jsonl``."""
    out = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            sample = str(row.get("sample_id", row.get("question_id")))
            key = (row["system"], sample, row["question"])
            out[key] = [r["id"] for r in row.get("retrieved", [])]
    return out


def compare(before: Path, after: Path) -> dict[str, Any]:
    a = numbers(json.loads((before / "summary.json").read_text(encoding="utf-8")))
    b = numbers(json.loads((after / "summary.json").read_text(encoding="utf-8")))
    differ = {k: [a.get(k), b.get(k)] for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}
    ra, rb = rankings(before / "questions.jsonl"), rankings(after / "questions.jsonl")
    moved = sorted(str(k) for k in set(ra) | set(rb) if ra.get(k) != rb.get(k))
    return {
        "before": str(before),
        "after": str(after),
        "numbers_compared": len(set(a) | set(b)),
        "numbers_different": len(differ),
        "differences": differ,
        "rankings_compared": len(set(ra) | set(rb)),
        "rankings_different": len(moved),
        "moved": moved[:50],
    }


def _metrics(row: dict[str, Any]) -> tuple[str, dict[str, float]]:
    """A question's group and its measures (LoCoMo or LongMemEval rows)."""
    if "category_name" in row:
        out = {
            f"R@{k}": float(row["recall"][k]) for k in ("1", "5", "10", "20") if k in row["recall"]
        }
        if row.get("top1_wrong_episode") is not None:  # confusable questions only
            out["D@1"] = float(row["top1_wrong_episode"])
        return row["category_name"], out
    out = {f"turn@{k}": float(row["turn"][k]["recall_any"]) for k in ("1", "5", "10")}
    out["session@5"] = float(row["session"]["5"]["recall_any"])
    return row["question_type"], out


def _part(row: dict[str, Any]) -> str:
    """A question's part: LoCoMo rows carry it; LongMemEval's follow ``bench_splits``."""
    if "split" in row:
        return str(row["split"])
    from bench_splits import lme_items

    global _LME_PARTS
    if _LME_PARTS is None:
        _LME_PARTS = {str(item["question_id"]): part for _, part, item in lme_items()}
    return _LME_PARTS.get(str(row["question_id"]), "unknown")


_LME_PARTS: dict[str, str] | None = None


def paired(before: Path, after: Path, system: str) -> dict[str, Any]:
    from ramem_core.evaluation.stats import paired_bootstrap

    def rows(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
        out = {}
        with (path / "questions.jsonl").open(encoding="utf-8") as lines:
            for line in lines:
                row = json.loads(line)
                if row["system"] == system:
                    sample = str(row.get("sample_id", row.get("question_id")))
                    out[(sample, row["question"])] = row
        return out

    a, b = rows(before), rows(after)
    groups: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {}
    for key in sorted(set(a) & set(b)):
        group, mb = _metrics(a[key])
        _, ma = _metrics(b[key])
        part = _part(a[key])  # the choose / report part, as bench_splits.py cuts it
        for name in (group, "all", f"{part} {group}", f"{part} all"):
            groups.setdefault(name, []).append((mb, ma))
    table: dict[str, Any] = {}
    fell = []
    for group, pairs in sorted(groups.items()):
        cell: dict[str, Any] = {"n": len(pairs)}
        measures = dict.fromkeys(m for x, _ in pairs for m in x)
        for measure in measures:
            both = [(x[measure], y[measure]) for x, y in pairs if measure in x and measure in y]
            olds = [x for x, _ in both]
            news = [y for _, y in both]
            stat = paired_bootstrap(news, olds)
            if stat is None:
                continue
            cell[measure] = [round(stat.diff, 3), round(stat.low, 3), round(stat.high, 3)]
            worse = stat.high < 0 if measure != "D@1" else stat.low > 0
            if worse:
                fell.append(f"{group} {measure}")
        table[group] = cell
    return {"system": system, "questions": len(set(a) & set(b)), "cells": table, "fell": fell}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--paired", metavar="SYSTEM", help="intervals of after - before")
    args = parser.parse_args()
    if args.paired:
        table = paired(args.before, args.after, args.paired)
        for group, cell in table["cells"].items():
            shown = "  ".join(
                f"{m} {d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                for m, (d, lo, hi) in ((k, v) for k, v in cell.items() if k != "n")
            )
            print(f"{group} (n={cell['n']}): {shown}")
        print("fell beyond the interval:", ", ".join(table["fell"]) or "none")
        if args.out:
            args.out.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
        sys.exit(1 if table["fell"] else 0)
    result = compare(args.before, args.after)
    print(
        f"{result['numbers_compared']} numbers compared, {result['numbers_different']} differ;"
        f" {result['rankings_compared']} rankings compared, {result['rankings_different']} differ"
    )
    for key, (x, y) in list(result["differences"].items())[:20]:
        print(f"  {key}: {x} -> {y}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    sys.exit(1 if result["numbers_different"] or result["rankings_different"] else 0)


if __name__ == "__main__":
    main()
