"""Compare two evaluation runs number by number: did a change move any figure?

    python benchmarks/compare_runs.py BEFORE_DIR AFTER_DIR [--out FILE]

Each directory is an ``--out`` of ``ramem eval`` (``summary.json`` and ``questions.jsonl``).
Every number of ``summary.json`` (every system, ablation, category, split, interval) is
compared at the precision it is stored with, and every question's ranked memory ids per
system; the counts and any difference are printed and written as JSON. Exit status 1 when
anything differs.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
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
