"""Fit the calibration of the relevance scores framework adapters show (LlamaIndex's node
scores), and measure what a similarity cutoff keeps.

    python benchmarks/fit_scores.py          # about 2 minutes with the embedding cache

A node's score is a logistic function of what the evidence carries: the memory's cosine to
the question (the shipped MiniLM), its reciprocal rank in RaMem's list and whether it meets
the recall frame (:data:`ramem_core.synthesis.SCORE_FEATURES`), fitted on LoCoMo dev's
choose part (conv-26/30/41) to tell evidence from the rest among RaMem's top 10, the two
classes weighted equally: 0.5 is where a node is as much like evidence as like the rest.
The fitted weights are written by name to ``ramem_core/_data/score_calibration.json`` (read by
:func:`ramem_core.synthesis.calibrated_score`); the report part (conv-42/43) gives what
``SimilarityPostprocessor(similarity_cutoff=0.5)`` keeps: the share of evidence nodes kept
and of the rest dropped, beside the relative score used before (relevance over the best
match). Writes ``benchmarks/results/score_calibration.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from bench_splits import cached_embedder

from ramem_core import RaMem
from ramem_core.loaders import locomo_conversation
from ramem_core.testing import InMemoryStore, WordCounter

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"
WEIGHTS = ROOT / "ramem_core" / "_data" / "score_calibration.json"
RESULT = ROOT / "benchmarks" / "results" / "score_calibration.json"
CHOOSE, REPORT = ("conv-26", "conv-30", "conv-41"), ("conv-42", "conv-43")
NAME = "minilm-evidence-balanced-v1"
FEATURES = ("cosine", "reciprocal_rank", "contextual")


def rows() -> list[dict[str, Any]]:
    """One row per node of RaMem's top 10 for every LoCoMo dev question (adversarial ones
    left out): its part, cosine, the relative score of before and whether it is evidence."""
    embedder = cached_embedder()
    memory = RaMem(InMemoryStore(embedder), counter=WordCounter())
    out = []
    samples = json.loads(DATA.read_text(encoding="utf-8"))
    for number, sample in enumerate(samples, start=1):
        cid = sample["sample_id"]
        memory.add_conversation(locomo_conversation(sample), namespace=cid.replace("-", ""))
        part = "choose" if cid in CHOOSE else "report"
        for qa in sample["qa"]:
            if qa.get("category") == 5 or not qa.get("evidence"):
                continue
            found = memory.recall(qa["question"], k=10, namespace=cid.replace("-", ""))
            relevance = [e.score - (1.0 if e.contextual else 0.0) for e in found]
            best = max(relevance, default=0.0)
            gold = set(qa["evidence"])
            for e, rel in zip(found, relevance, strict=True):
                out.append(
                    {
                        "part": part,
                        "cosine": float(e.dense_score or 0.0),
                        "reciprocal_rank": 1.0 / e.rank,
                        "contextual": float(e.contextual),
                        "relative": rel / best if best > 0 else 0.0,
                        "evidence": bool(gold & set(e.unit.source_ids)),
                    }
                )
        print(f"  {cid}: {number}/{len(samples)} conversations", flush=True)
    return out


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Class-balanced logistic regression of ``y`` on the columns of ``x`` (Newton's
    method); the last weight is the intercept."""
    design = np.hstack([x, np.ones((len(x), 1))])
    weight = np.where(y, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    beta = np.zeros(design.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-(design @ beta)))
        g = design.T @ (weight * (p - y))
        h = (design * (weight * p * (1 - p))[:, None]).T @ design
        step = np.linalg.solve(h + 1e-9 * np.eye(len(beta)), g)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return beta


def kept(scores: np.ndarray, y: np.ndarray, cutoff: float = 0.5) -> dict[str, float]:
    keep = scores >= cutoff
    return {
        "evidence_kept": round(float(keep[y].mean()), 3),
        "rest_dropped": round(float((~keep[~y]).mean()), 3),
        "nodes_kept": round(float(keep.mean()), 3),
    }


def main() -> None:
    if not DATA.exists():
        print(f"skipped: {DATA} is not here")
        return
    table = rows()
    part = np.array([r["part"] for r in table])
    x = np.array([[r[f] for f in FEATURES] for r in table])
    y = np.array([r["evidence"] for r in table])
    relative = np.array([r["relative"] for r in table])
    beta = fit(x[part == "choose"], y[part == "choose"])
    calibrated = 1 / (1 + np.exp(-(x @ beta[:-1] + beta[-1])))
    cosine_only = fit(x[part == "choose"][:, :1], y[part == "choose"])
    by_cosine = 1 / (1 + np.exp(-(x[:, 0] * cosine_only[0] + cosine_only[1])))
    weights = {f: round(float(w), 4) for f, w in zip(FEATURES, beta[:-1], strict=True)}
    result: dict[str, Any] = {
        "command": "python benchmarks/fit_scores.py",
        "name": NAME,
        "weights": weights,
        "intercept": round(float(beta[-1]), 4),
        "nodes": {p: int((part == p).sum()) for p in ("choose", "report")},
        "evidence_share": {p: round(float(y[part == p].mean()), 3) for p in ("choose", "report")},
    }
    for p in ("choose", "report"):
        mask = part == p
        result[f"cutoff_0.5_{p}"] = {
            "calibrated: cosine, rank, frame (now)": kept(calibrated[mask], y[mask]),
            "calibrated: cosine alone (variant)": kept(by_cosine[mask], y[mask]),
            "relative to the best (before)": kept(relative[mask], y[mask]),
        }
    WEIGHTS.write_text(
        json.dumps(
            {
                NAME: {
                    "embedder": "all-MiniLM-L6-v2-onnx-int8",
                    "weights": weights,
                    "intercept": result["intercept"],
                    "fitted_on": "LoCoMo dev choose part (conv-26/30/41), RaMem top 10, "
                    "classes weighted equally; python benchmarks/fit_scores.py",
                }
            },
            indent=1,
        )
        + "\n"
    )
    RESULT.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    print("\n| similarity_cutoff=0.5, LoCoMo report part | evidence nodes kept | rest dropped |")
    print("|---|---|---|")
    for name, value in result["cutoff_0.5_report"].items():
        print(f"| {name} | {value['evidence_kept']} | {value['rest_dropped']} |")


if __name__ == "__main__":
    main()
