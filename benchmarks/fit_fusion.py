"""Fit the learned fusion (:data:`ramem_core.retrieval.LEARNED_FUSION`) on the choose parts only.

From the repository root::

    python benchmarks/fit_fusion.py

What it fits: for every choose question (LoCoMo dev conv-26/30/41; LongMemEval_S dev30 and the
even positions of dev120 per type, the splits of ``bench_splits.py``), the fixed fusion's best
:data:`CANDIDATES` memories and their :data:`~ramem_core.retrieval.FUSION_FEATURES`
(``Retriever.fusion_candidates``); a linear score per memory, trained with a listwise softmax
loss (the evidence memories' share of the softmax over a question's candidates), the two
benchmarks weighted equally, the loss (:func:`fit`), L2 and the candidates chosen by 3-fold
cross-validation on the choose part (LoCoMo folds by conversation, LongMemEval by position).
Prints and writes ``benchmarks/results/fit_fusion.json``: the cross-validated figures of the
fixed and the learned order over the candidates (before the validity stage) for each candidate
shape (:data:`OWN_GRID`: how many of the best by own content join) and L2, the chosen pair and
the weights by feature name. With ``--write`` it also writes them, with the chosen
candidate shape, to ``ramem_core/_data/fusion.json``, the file
:data:`~ramem_core.retrieval.LEARNED_FUSION` is loaded from by name (``--from-result``
rewrites that file from the result file without refitting); since issue 39 the shipped file
is fitted on all the dev data by ``python benchmarks/audit_ranking.py --refit-fusion``.
``--keys ABLATION`` (an ablation of ``harness.ABLATIONS`` that turns episodic keys off,
such as ``no-session-doc``) fits the same grid with those keys instead and writes
``benchmarks/results/issue33_refit/fit_fusion_ABLATION.json`` only: the joint refit of issue
33, whether the fusion makes a key redundant. The report parts are measured with the whole
pipeline by ``python benchmarks/bench_splits.py --ablate no-fusion``, not here. Skips cleanly
without the dev data.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from bench_splits import OUT, cached_embedder, lme_items

from ramem_core.evaluation import harness, metrics
from ramem_core.loaders import (
    locomo_conversation,
    longmemeval_conversation,
    longmemeval_evidence,
)
from ramem_core.memory import RaMem
from ramem_core.retrieval import FUSION_FEATURES, Fusion, RetrievalConfig
from ramem_core.retrieval.fusion import FUSION_FILE, fit_listwise, matrix
from ramem_core.temporal import parse_timestamp

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data"
RESULT = ROOT / "benchmarks" / "results" / "fit_fusion.json"
DATA_FILE = ROOT / "ramem_core" / "_data" / FUSION_FILE
CANDIDATES = 50
OWN_GRID = (0, 20)
L2_GRID = (0.001, 0.01, 0.1)
LOSSES = ("any", "all")
PLACE = FUSION_FEATURES.index("place")


@dataclass
class Question:
    benchmark: str
    fold: int
    features: npt.NDArray[np.float64]
    evidence: npt.NDArray[np.bool_]
    gold: int  # evidence turns asked for


def _candidates(
    memory: RaMem, namespace: str, query: str, at: Any, gold: set[str], own: int
) -> Any:
    snap = memory.snapshots.get(namespace)
    frame = memory.frame(query, at=at, namespace=namespace)
    shape = Fusion(dict.fromkeys(FUSION_FEATURES, 0.0), CANDIDATES, own)
    rows, named = memory.retriever.fusion_candidates(snap, frame, shape)
    features = matrix(named)
    evidence = np.array([bool(set(snap.unit(r).source_ids) & gold) for r in rows], dtype=bool)
    return features, evidence


def _config(keys: str | None) -> RetrievalConfig:
    """The fixed fusion's configuration, with the episodic keys of the ablation ``keys``
    (``--keys``) if given."""
    base = replace(RetrievalConfig(), fusion=None)
    if keys is None:
        return base
    return replace(base, keys=harness.ABLATIONS[keys].keys)


def locomo_questions(own: int, keys: str | None = None) -> list[Question]:
    options = harness.EvalOptions(systems=("ramem",), ks=(1, 5, 10))
    bench = harness._open_bench(OUT / "locomo", options, cached_embedder(), None)
    memory = RaMem(bench.store, config=_config(keys))
    out = []
    samples = json.loads((DATA / "locomo_dev.json").read_text(encoding="utf-8"))
    chosen = [s for s in samples if s["sample_id"] not in harness.LOCOMO_HOLDOUT]
    for fold, sample in enumerate(chosen):
        namespace = harness._namespace(sample["sample_id"])
        bench.ingest(namespace, locomo_conversation(sample, sample["sample_id"]))
        for qa in sample["qa"]:
            gold = set(metrics.parse_evidence(qa.get("evidence", [])))
            if int(qa.get("category", 0)) not in metrics.ANSWERABLE or not gold:
                continue
            features, evidence = _candidates(memory, namespace, qa["question"], None, gold, own)
            out.append(Question("locomo", fold % 3, features, evidence, len(gold)))
    return out


def lme_questions(own: int, keys: str | None = None) -> list[Question]:
    options = harness.EvalOptions(systems=("ramem",), ks=(1, 5, 10))
    bench = harness._open_bench(OUT / "lme", options, cached_embedder(), None)
    memory = RaMem(bench.store, config=_config(keys))
    out = []
    for _, split, item in lme_items():
        qid = str(item["question_id"])
        gold = set(longmemeval_evidence(item, qid))
        if split != "choose" or qid.endswith("_abs") or not gold:
            continue
        namespace = harness._namespace(qid)
        bench.ingest(namespace, harness._user_side(longmemeval_conversation(item, qid)))
        at = parse_timestamp(str(item.get("question_date", "")))
        features, evidence = _candidates(memory, namespace, item["question"], at, gold, own)
        out.append(Question("lme", len(out) % 3, features, evidence, len(gold)))
    return out


def fit(
    questions: list[Question], l2: float, loss: str = "any", steps: int = 600
) -> npt.NDArray[np.float64]:
    """Listwise softmax weights (:func:`~ramem_core.retrieval.fusion.fit_listwise`), the two
    benchmarks weighted equally."""
    return fit_listwise(
        [q.features for q in questions],
        [q.evidence for q in questions],
        [q.benchmark for q in questions],
        l2,
        loss,
        steps,
    )


def measures(questions: list[Question], weights: list[npt.NDArray[np.float64]]) -> dict[str, Any]:
    """Per benchmark: evidence found at 1/5/10 (any) and the share of it (recall), over the
    candidates ordered by each question's weights."""
    out: dict[str, list[float]] = defaultdict(list)
    for q, w in zip(questions, weights, strict=True):
        hits = q.evidence[np.argsort(-(q.features @ w), kind="stable")]
        for k in (1, 5, 10):
            out[f"{q.benchmark} any@{k}"].append(float(hits[:k].any()))
            out[f"{q.benchmark} recall@{k}"].append(min(1.0, hits[:k].sum() / q.gold))
    return {name: round(float(np.mean(v)), 4) for name, v in sorted(out.items())}


def _score(table: dict[str, float]) -> float:
    keys = ("locomo recall@1", "locomo recall@10", "lme any@1", "lme any@10")
    return sum(table[k] for k in keys) / len(keys)


def write_data(result: dict[str, Any]) -> None:
    """Write the fitted weights, by name, and the chosen candidate shape to
    ``ramem_core/_data/fusion.json`` (checked by loading it as a :class:`Fusion`)."""
    data = {
        "weights": result["weights"],
        "candidates": CANDIDATES,
        "own_candidates": result["chosen"]["own_candidates"],
        "chosen": result["chosen"],
        "fitted_by": result["command"],
        "result": "benchmarks/results/fit_fusion.json",
    }
    Fusion.from_dict(data)  # a missing or unknown feature name is an error here, not at import
    DATA_FILE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {DATA_FILE}")


def main() -> None:
    if "--from-result" in sys.argv:
        write_data(json.loads(RESULT.read_text(encoding="utf-8")))
        return
    if not (DATA / "locomo_dev.json").exists():
        print(f"skipped: {DATA} has no dev data")
        return
    keys = sys.argv[sys.argv.index("--keys") + 1] if "--keys" in sys.argv else None
    default = RetrievalConfig().keys
    if keys is not None and (
        keys not in harness.ABLATIONS or harness.ABLATIONS[keys].keys == default
    ):
        print(f"--keys takes an ablation that changes the episodic keys, not {keys!r}")
        sys.exit(2)
    command = "python benchmarks/fit_fusion.py" + (f" --keys {keys}" if keys else "")
    result: dict[str, Any] = {"command": command, "keys": keys, "cv": {}}
    fixed = np.zeros(len(FUSION_FEATURES))
    fixed[PLACE] = 1.0
    best: tuple[float, int, float, str] | None = None
    sets = {}
    # a keys variant is fitted with the shipped fit's candidate shape (own=20) only
    for own in OWN_GRID if keys is None else (20,):
        questions = sets[own] = locomo_questions(own, keys) + lme_questions(own, keys)
        print(f"{len(questions)} choose questions, {CANDIDATES} + {own} candidates each")
        result["cv"][f"own={own} fixed"] = measures(questions, [fixed] * len(questions))
        for loss in LOSSES:
            for l2 in L2_GRID:
                held: list[Any] = [None] * len(questions)
                for fold in range(3):
                    w = fit([q for q in questions if q.fold != fold], l2, loss)
                    for i, q in enumerate(questions):
                        if q.fold == fold:
                            held[i] = w
                name = f"own={own} loss={loss} l2={l2}"
                table = result["cv"][name] = measures(questions, held)
                print(f"{name}: {table}", flush=True)
                if best is None or _score(table) > best[0]:
                    best = (_score(table), own, l2, loss)
    assert best is not None
    _, own, l2, loss = best
    weights = fit(sets[own], l2, loss)
    result["chosen"] = {"own_candidates": own, "l2": l2, "loss": loss}
    result["weights"] = dict(zip(FUSION_FEATURES, np.round(weights, 4).tolist(), strict=True))
    print(f"fixed: {result['cv'][f'own={own} fixed']}")
    print(f"chosen own_candidates={own} loss={loss} l2={l2}; weights:")
    print(tuple(round(float(w), 4) for w in weights))
    result["best_cv_score"] = round(best[0], 4)
    if keys is not None:  # a variant: its own result file, never the shipped weights
        out = ROOT / "benchmarks" / "results" / "issue33_refit" / f"fit_fusion_{keys}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(result, indent=1), encoding="utf-8")
        print(f"wrote {out}")
        return
    RESULT.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"wrote {RESULT}")
    if "--write" in sys.argv:  # the shipped file: `audit_ranking.py --refit-fusion` fits it
        write_data(result)


if __name__ == "__main__":
    main()
