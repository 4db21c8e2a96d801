"""Issue 21's variants, measured and not merged: RaMem variants against content-only, per split.

The variants (``stating_first``: a session's turns reordered by their own content inside its
places; ``set_cover``/``set_pool``: for questions whose answer is a set, at most N memories
per session keep their places) live in ``variants.patch`` beside this script. From the
repository root::

    git apply benchmarks/results/issue21_variants/variants.patch
    python benchmarks/results/issue21_variants/compare.py --only "stating 5,stating 10,stating 20"
    python benchmarks/results/issue21_variants/compare.py --only "cover 1,cover 2,cover 3"
    python benchmarks/results/issue21_variants/compare.py \\
        --only "cover 1 pool 40,cover 2 pool 40,cover 2 pool 60"
    git apply -R benchmarks/results/issue21_variants/variants.patch

Splits, fixed before any variant was run:

- LoCoMo dev: conv-26/30/41 choose, conv-42/43 report (as everywhere).
- LongMemEval_S: dev30 choose, dev60 report (as in ``bench_agent_path.py``); dev120 split
  per question type in file order: even positions choose, odd positions report
  (:func:`lme_split`).

The tables and splits are ``benchmarks/bench_splits.py``'s (this script registers the
variants as ablations and runs it under ``results/tune_stating``). Writes
``results/tune_stating/last_run.json`` (the committed ``results.json`` gathers the three runs
above, made when this script still held its own copy of those tables). The patch was made
against the code of that time and may need a merge on today's.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_splits  # noqa: E402

from ramem_core.evaluation import harness  # noqa: E402
from ramem_core.retrieval import RetrievalConfig  # noqa: E402

RESULT = ROOT / "results" / "tune_stating" / "last_run.json"  # results.json holds runs 1-3
BASE = RetrievalConfig()


def variants() -> dict[str, RetrievalConfig]:
    """The variants (their switches exist only with ``variants.patch`` applied)."""
    return {
        "stating 5": replace(BASE, stating_first=5),  # type: ignore[call-arg]
        "stating 10": replace(BASE, stating_first=10),  # type: ignore[call-arg]
        "stating 20": replace(BASE, stating_first=20),  # type: ignore[call-arg]
        "cover 1": replace(BASE, set_cover=1),  # type: ignore[call-arg]
        "cover 2": replace(BASE, set_cover=2),  # type: ignore[call-arg]
        "cover 3": replace(BASE, set_cover=3),  # type: ignore[call-arg]
        "cover 1 pool 40": replace(BASE, set_cover=1, set_pool=40),  # type: ignore[call-arg]
        "cover 2 pool 40": replace(BASE, set_cover=2, set_pool=40),  # type: ignore[call-arg]
        "cover 2 pool 60": replace(BASE, set_cover=2, set_pool=60),  # type: ignore[call-arg]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated variant names")
    args = parser.parse_args()
    if not (bench_splits.DATA / "locomo_dev.json").exists():
        print(f"skipped: {bench_splits.DATA} has no dev data")
        return
    known = variants()
    names = args.only.split(",") if args.only else list(known)
    harness.ABLATIONS.update({name: known[name] for name in names})
    bench_splits.OUT = ROOT / "results" / "tune_stating"
    result: dict[str, Any] = {"command": "python " + " ".join(sys.argv)}
    result["locomo"] = bench_splits.locomo(names)
    result["longmemeval"] = bench_splits.longmemeval(names)
    runs = ("ramem", "content", *names)
    bench_splits._print("LoCoMo dev", result["locomo"], runs)
    bench_splits._print("LongMemEval_S dev30+dev60+dev120", result["longmemeval"], runs)
    RESULT.write_text(json.dumps(result, indent=1))
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
