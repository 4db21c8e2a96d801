"""The joint refit of issue 33, through the whole pipeline: each episodic-keys variant with the
fusion refitted for it, against RaMem as shipped, on the choose/report splits.

    python benchmarks/fit_fusion.py --keys no-session-doc  # one refit per variant (choose parts)
    python benchmarks/refit_keys.py no-session-doc

For each named ablation of ``harness.ABLATIONS`` that turns keys off, the run
``refit-<name>`` uses those keys and the weights its refit wrote to
``benchmarks/results/issue33_refit/fit_fusion_<name>.json``; ``bench_splits.py``'s tables
(LoCoMo Recall@1/5/10/20, all-evidence, D@1; LongMemEval turn@1/5/10, session@5, per split and
per category / question type, paired intervals against ``ramem``) are printed and written to
``benchmarks/results/issue33_refit/bench_splits_refit.json``. Skips cleanly without the data.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import bench_splits

from ramem_core.evaluation import harness
from ramem_core.retrieval import RetrievalConfig
from ramem_core.retrieval.fusion import Fusion

ROOT = Path(__file__).resolve().parents[1]

FITS = ROOT / "benchmarks" / "results" / "issue33_refit"


def main() -> None:
    names = sys.argv[1:]
    runs = []
    for name in names:
        fitted = json.loads((FITS / f"fit_fusion_{name}.json").read_text(encoding="utf-8"))
        fusion = Fusion.from_dict(
            {"weights": fitted["weights"], "own_candidates": fitted["chosen"]["own_candidates"]}
        )
        keys = harness.ABLATIONS[name].keys
        harness.ABLATIONS[f"refit-{name}"] = replace(RetrievalConfig(), keys=keys, fusion=fusion)
        runs.append(f"refit-{name}")
    bench_splits.RESULT = FITS / "bench_splits_refit.json"
    sys.argv = [sys.argv[0], "--ablate", ",".join(runs)]
    bench_splits.main()


if __name__ == "__main__":
    main()
