"""Choose retrieval constants on the *choose* parts of the dev data, never the report parts.

    python benchmarks/tune_retrieval.py   # validity_pool, window, own, speaker and time weights

LoCoMo: conv-26/30/41 (conv-42/43 are kept for reporting). LongMemEval_S: dev30 (dev60 is
kept for reporting). Prints a table per constant and writes ``results/tune_retrieval.json``.
Runs the harness itself (same units, caches under ``results/tune``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from ramem_core.evaluation import harness
from ramem_core.evaluation.harness import EvalOptions
from ramem_core.index.episodic import EpisodicKeys
from ramem_core.retrieval import RetrievalConfig

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data"
CHOOSE = {"conv-26", "conv-30", "conv-41"}


def _run(configs: dict[str, RetrievalConfig], locomo: Path, lme: Path, out: Path) -> dict[str, Any]:
    harness.ABLATIONS.update(configs)  # each candidate setting is evaluated as an "ablation"
    names = tuple(configs)
    lo = harness.evaluate_locomo(
        locomo, out / "locomo", EvalOptions(systems=("content",), ks=(5, 10), ablations=names)
    )
    lm = harness.evaluate_longmemeval(
        lme, out / "lme", EvalOptions(systems=("content",), ks=(1, 5, 10), ablations=names)
    )
    rows = {}
    for name in names:
        e, m = lo["runs"][name], lm["runs"][name]
        temporal = m["by_type"].get("temporal-reasoning", {})
        rows[name] = {
            "locomo_r5": e["recall"]["5"]["overall"],
            "locomo_temporal_r5": e["recall"]["5"]["temporal"],
            "locomo_r10": e["recall"]["10"]["overall"],
            "locomo_multihop_r10": e["recall"]["10"]["multi-hop"],
            "locomo_temporal_r10": e["recall"]["10"]["temporal"],
            "locomo_d1_all": e["d_at_1_all"],
            "lme_turn_r10": m["turn"]["10"]["recall_any"],
            "lme_session_r5": m["session"]["5"]["recall_any"],
            "lme_temporal_turn_r10": temporal.get("turn recall_any@10"),
            "lme_turn_r1": m["turn"]["1"]["recall_any"],
        }
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "results" / "tune"))
    parser.add_argument("--only", nargs="*", help="grids to run (default: all)")
    args = parser.parse_args()
    out = Path(args.out)
    locomo_all = DATA / "locomo_dev.json"
    lme = DATA / "longmemeval_s_dev30.json"
    if not (locomo_all.exists() and lme.exists()):
        print("dev data not found under ../shared/data: nothing to tune")
        return
    samples = [s for s in json.loads(locomo_all.read_text()) if s["sample_id"] in CHOOSE]
    with tempfile.TemporaryDirectory() as tmp:
        locomo = Path(tmp) / "locomo_choose.json"
        locomo.write_text(json.dumps(samples))
        base = RetrievalConfig()
        grids = {
            "validity_pool": {
                f"pool={p}": replace(base, validity_pool=p) for p in (10, 20, 30, 50, 100)
            },
            "window": {f"w={w}": replace(base, keys=EpisodicKeys(window=w)) for w in (0, 1, 2)},
            "speaker_weight": {
                f"speaker={w}": replace(base, keys=EpisodicKeys(speaker_weight=w))
                for w in (0.0, 0.25, 0.5, 1.0, 2.0)
            },
            "time_weight": {
                f"time={w}": replace(base, time_weight=w) for w in (0.0, 0.25, 0.5, 1.0)
            },
            "window_slots": {f"slots={n}": replace(base, window_slots=n) for n in (0, 1, 2, 3, 5)},
        }
        results = {}
        for name, configs in grids.items():
            if args.only and name not in args.only:
                continue
            results[name] = _run(configs, locomo, lme, out)
            print(f"\n== {name} (LoCoMo conv-26/30/41, LongMemEval_S dev30)")
            cols = list(next(iter(results[name].values())))
            print(f"{'setting':>14} " + " ".join(f"{c:>22}" for c in cols))
            for setting, row in results[name].items():
                print(f"{setting:>14} " + " ".join(f"{row[c]:>22.3f}" for c in cols))
    path = ROOT / "benchmarks" / "results" / "tune_retrieval.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    earlier = json.loads(path.read_text()) if path.exists() else {}  # --only updates its grids
    path.write_text(json.dumps(earlier | results, indent=2))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
