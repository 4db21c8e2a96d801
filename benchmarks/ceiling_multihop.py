"""How high a second round over the first round's candidates could lift LoCoMo Recall@10 at
most (issue 33): the ceiling with evidence for each missed target.

One command (from the repository root)::

    python benchmarks/ceiling_multihop.py

Runs (or reuses) ``ramem eval locomo`` on the dev set with rankings kept to depth 50
(``results/ceiling``), then, per split (conv-26/30/41 choose, conv-42/43 report, all) and per
category, and for multi-hop per number of evidence sessions:

- Recall@10, @20, @50 and all-evidence@10 as RaMem ranks today;
- the **oracle** Recall@10 and all-evidence@10 of a perfect reorder of the first 20 or 50
  places: the memories there that hold evidence put first, greedily by new evidence covered
  (what any second round that reranks the first round's candidates could reach at most);
- where the evidence Recall@10 misses sits: places 11-20, 21-50, or not in the first 50
  (no key of the question finds it: a second round would need words the question lacks).

Writes ``benchmarks/results/issue33_ceiling.json``. Skips cleanly without the dev data.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"
RUN = ROOT / "results" / "ceiling"
RESULT = ROOT / "benchmarks" / "results" / "issue33_ceiling.json"
SPLITS = {"choose": ("conv-26", "conv-30", "conv-41"), "report": ("conv-42", "conv-43")}
DEPTHS = (20, 50)


def _run() -> list[dict[str, Any]]:
    questions = RUN / "questions.jsonl"
    if not questions.exists():
        command = [sys.executable, "-m", "ramem_core.cli", "eval", "locomo", str(DATA)]
        command += ["--system", "ramem", "--k", "1,5,10,20,50", "--out", str(RUN)]
        subprocess.run(command, check=True, cwd=ROOT)
    rows = [json.loads(line) for line in questions.open(encoding="utf-8")]
    # the harness's Recall@K: questions with evidence, adversarial ones aside (760 on dev)
    keep = [r for r in rows if r["system"] == "ramem" and r["evidence"]]
    return [r for r in keep if r["category_name"] != "adversarial"]


def _covered(retrieved: list[dict[str, Any]], evidence: set[str], k: int) -> set[str]:
    return {s for item in retrieved[:k] for s in item["source_ids"]} & evidence


def _oracle(retrieved: list[dict[str, Any]], evidence: set[str], depth: int) -> set[str]:
    """The evidence a perfect reorder of the first ``depth`` places puts in the first 10."""
    holding = [set(item["source_ids"]) & evidence for item in retrieved[:depth]]
    covered: set[str] = set()
    for _ in range(10):
        best = max(holding, key=lambda ids: len(ids - covered), default=set())
        if not best - covered:
            break
        covered |= best
    return covered


def measure(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of the module docstring for ``rows`` (one question each)."""
    sums: dict[str, float] = defaultdict(float)
    for r in rows:
        evidence, found = set(r["evidence"]), r["retrieved"]
        n = len(evidence)
        for k in (10, 20, 50):
            sums[f"recall@{k}"] += len(_covered(found, evidence, k)) / n
        sums["all_evidence@10"] += _covered(found, evidence, 10) == evidence
        for depth in DEPTHS:
            best = _oracle(found, evidence, depth)
            sums[f"oracle_recall@10_of_{depth}"] += len(best) / n
            sums[f"oracle_all_evidence@10_of_{depth}"] += best == evidence
        missed = evidence - _covered(found, evidence, 10)
        in20 = _covered(found, evidence, 20)
        in50 = _covered(found, evidence, 50)
        sums["missed_at_11_20"] += len(missed & in20) / n
        sums["missed_at_21_50"] += len(missed & (in50 - in20)) / n
        sums["missed_beyond_50"] += len(missed - in50) / n
    return {"n": len(rows), **{key: round(v / len(rows), 3) for key, v in sums.items()}}


def _sessions(r: dict[str, Any]) -> int:
    return len({e.split(":")[0] for e in r["evidence"]})


def main() -> int:
    if not DATA.exists():
        print(f"skipped: {DATA} not found")
        return 0
    rows = _run()
    out: dict[str, Any] = {}
    for split in ("choose", "report", "all"):
        part = [r for r in rows if split == "all" or r["sample_id"] in SPLITS[split]]
        table: dict[str, Any] = {"overall": measure(part)}
        for cat in sorted({r["category_name"] for r in part}):
            table[cat] = measure([r for r in part if r["category_name"] == cat])
        multi = [r for r in part if r["category_name"] == "multi-hop"]
        for n in sorted({min(_sessions(r), 4) for r in multi}):
            name = f"multi-hop, {n}{'+' if n == 4 else ''} evidence sessions"
            table[name] = measure([r for r in multi if min(_sessions(r), 4) == n])
        out[split] = table
    columns = [
        "n",
        "recall@10",
        "oracle_recall@10_of_20",
        "oracle_recall@10_of_50",
        "all_evidence@10",
        "oracle_all_evidence@10_of_50",
        "missed_at_11_20",
        "missed_at_21_50",
        "missed_beyond_50",
    ]
    for split, table in out.items():
        print(f"\n## {split}\n\n| | " + " | ".join(columns) + " |")
        print("|---" * (len(columns) + 1) + "|")
        for name, figures in table.items():
            print(f"| {name} | " + " | ".join(str(figures[c]) for c in columns) + " |")
    RESULT.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {RESULT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
