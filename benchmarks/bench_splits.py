"""RaMem against content-only and against its own ablations, on fixed choose/report splits.

One command for the retrieval claims of issue 21 (from the repository root)::

    python benchmarks/bench_splits.py --ablate no-fusion

Splits, fixed before any variant was run (issue 21):

- LoCoMo dev: conv-26/30/41 choose, conv-42/43 report (as everywhere).
- LongMemEval_S: dev30 choose, dev60 report (as in ``bench_agent_path.py``); dev120 split
  per question type in file order: even positions choose, odd positions report
  (:func:`lme_split`).

Runs the harness (``ramem_core.evaluation.harness``) with each ablation
(``harness.ABLATIONS``) as an extra run on identical memory units; embeddings are cached under
``results/splits`` (and read from the earlier evaluations' caches when present). Prints per
split and per category / question type: LoCoMo Recall@1/5/10/20, D@1 and multi-hop
all-evidence@10 and @20; LongMemEval turn recall_any@1/5/10 and session recall_any@5, with
paired bootstrap 95% intervals of "ramem minus content-only" and "ablation minus ramem".
Writes ``benchmarks/results/bench_splits.json``. Skips cleanly without the dev data.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder
from ramem_core.evaluation import harness
from ramem_core.evaluation.stats import paired_bootstrap
from ramem_core.protocols import Embedder

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "results" / "splits"
RESULT = ROOT / "benchmarks" / "results" / "bench_splits.json"


def lme_split(source: str, position_in_type: int) -> str:
    """The split of a LongMemEval question: dev30 choose, dev60 report, dev120 alternating."""
    if "dev30" in source:
        return "choose"
    if "dev60" in source:
        return "report"
    return "choose" if position_in_type % 2 == 0 else "report"


LME_FILES = ("dev30", "dev60", "dev120")


def lme_items(names: Sequence[str] = LME_FILES) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Every LongMemEval_S dev question as (file name, part, item), in file order, with the
    part :func:`lme_split` gives it (counted per question type in each file)."""
    for name in names:
        path = DATA / f"longmemeval_s_{name}.json"
        counts: dict[str, int] = defaultdict(int)
        for item in json.loads(path.read_text(encoding="utf-8")):
            kind = str(item.get("question_type"))
            yield name, lme_split(name, counts[kind]), item
            counts[kind] += 1


def cached_embedder() -> Embedder:
    """MiniLM behind the earlier evaluations' caches (read only when a text misses here)."""
    inner: Embedder = MiniLMEmbedder()
    for old in (
        "results/tune_stating/lme",
        "results/tune_stating/locomo",
        "results/long_turns/dev120",
        "results/longmemeval_s",
        "results/locomo",
    ):
        path = ROOT / old / "cache" / "embeddings.sqlite"
        if path.exists():
            inner = CachedEmbedder(inner, path)
    return inner


def interval(pairs: Sequence[tuple[float, float]]) -> list[float]:
    paired = paired_bootstrap([a for a, _ in pairs], [b for _, b in pairs])
    assert paired is not None
    return [round(paired.diff, 3), round(paired.low, 3), round(paired.high, 3)]


def _table(
    rows: list[dict[str, Any]],
    runs: Sequence[str],
    measures: dict[str, Callable[[dict[str, Any]], float]],
    group_of: Callable[[dict[str, Any]], str],
) -> dict[str, Any]:
    """Per group (and 'all'): each run's mean of each measure, and each variant's paired
    intervals against content-only and against ramem."""
    by_question: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        by_question[row["_key"]][row["system"]] = row
    groups: dict[str, list[dict[str, dict[str, Any]]]] = defaultdict(list)
    for runs_of in by_question.values():
        first = runs_of["ramem"]
        groups["all"].append(runs_of)
        groups[group_of(first)].append(runs_of)
    out: dict[str, Any] = {}
    for group, questions in sorted(groups.items()):
        cell: dict[str, Any] = {"n": len(questions)}
        for name, measure in measures.items():
            values = {run: [measure(q[run]) for q in questions] for run in runs}
            cell[name] = {run: round(sum(v) / len(v), 3) for run, v in values.items()}
            for run in runs:
                if run in ("ramem", "content"):
                    continue
                for against in ("content", "ramem"):
                    pairs = list(zip(values[run], values[against], strict=True))
                    cell[name][f"{run} - {against}"] = interval(pairs)
            if "ramem" in values:
                pairs = list(zip(values["ramem"], values["content"], strict=True))
                cell[name]["ramem - content"] = interval(pairs)
        out[group] = cell
    return out


def locomo(variants: Sequence[str]) -> dict[str, Any]:
    options = harness.EvalOptions(
        systems=("ramem", "content"), ks=(1, 5, 10, 20), ablations=tuple(variants)
    )
    harness.evaluate_locomo(
        DATA / "locomo_dev.json",
        OUT / "locomo",
        options,
        embedder=cached_embedder(),
        progress=_progress("LoCoMo"),
    )
    rows = [json.loads(line) for line in (OUT / "locomo" / "questions.jsonl").open()]
    rows = [r for r in rows if r["category"] in (1, 2, 3, 4) and r["evidence"]]
    for r in rows:
        r["_key"] = f"{r['sample_id']}|{r['question']}|{r['evidence']}"
    measures = {
        "R@1": lambda r: r["recall"]["1"],
        "R@5": lambda r: r["recall"]["5"],
        "R@10": lambda r: r["recall"]["10"],
        "R@20": lambda r: r["recall"]["20"],
        "all@10": lambda r: float(r["recall"]["10"] == 1.0),
        "all@20": lambda r: float(r["recall"]["20"] == 1.0),
        "D@1": lambda r: r.get("top1_wrong_episode") or 0.0,
    }
    runs = ("ramem", "content", *variants)
    out = {}
    for split in ("choose", "report", "all"):
        part = [r for r in rows if split in ("all", r["split"])]
        out[split] = _table(part, runs, measures, lambda r: r["category_name"])
    return out


def longmemeval(variants: Sequence[str]) -> dict[str, Any]:
    files = [DATA / f"longmemeval_s_{name}.json" for name in LME_FILES]
    split_of = {str(item["question_id"]): part for _, part, item in lme_items()}
    options = harness.EvalOptions(
        systems=("ramem", "content"), ks=(1, 5, 10), ablations=tuple(variants)
    )
    harness.evaluate_longmemeval(
        files, OUT / "lme", options, embedder=cached_embedder(), progress=_progress("LongMemEval")
    )
    rows = [json.loads(line) for line in (OUT / "lme" / "questions.jsonl").open()]
    for r in rows:
        r["_key"] = r["question_id"]
    measures = {
        "turn@1": lambda r: r["turn"]["1"]["recall_any"],
        "turn@5": lambda r: r["turn"]["5"]["recall_any"],
        "turn@10": lambda r: r["turn"]["10"]["recall_any"],
        "session@5": lambda r: r["session"]["5"]["recall_any"],
    }
    runs = ("ramem", "content", *variants)
    out = {}
    for split in ("choose", "report", "all"):
        part = [r for r in rows if split in ("all", split_of[r["question_id"]])]
        out[split] = _table(part, runs, measures, lambda r: r["question_type"])
    return out


def _progress(name: str) -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        if done == total or done % 25 == 0:
            print(f"  {name}: {done}/{total} questions", flush=True)

    return show


def _print(title: str, table: dict[str, Any], runs: Sequence[str]) -> None:
    print(f"\n== {title}")
    for split, groups in table.items():
        for group, cell in groups.items():
            if split != "all" and group != "all":
                continue
            for measure, values in cell.items():
                if measure == "n":
                    continue
                line = "  ".join(f"{run} {values[run]:.3f}" for run in runs)
                deltas = "  ".join(
                    "{}-ramem {:+.3f} [{:+.3f},{:+.3f}]".format(run, *values[f"{run} - ramem"])
                    for run in runs
                    if run not in ("ramem", "content")
                )
                print(f"{split:7} {group:27} n={cell['n']:4} {measure:9} {line}  {deltas}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ablate", default="", help="comma-separated keys of harness.ABLATIONS")
    args = parser.parse_args()
    if not (DATA / "locomo_dev.json").exists():
        print(f"skipped: {DATA} has no dev data")
        return
    variants = [name for name in args.ablate.split(",") if name]
    unknown = [name for name in variants if name not in harness.ABLATIONS]
    if unknown:
        parser.error(f"unknown ablations {unknown}; known: {', '.join(harness.ABLATIONS)}")
    result: dict[str, Any] = {"command": "python " + " ".join(sys.argv)}
    result["locomo"] = locomo(variants)
    result["longmemeval"] = longmemeval(variants)
    runs = ("ramem", "content", *variants)
    _print("LoCoMo dev", result["locomo"], runs)
    _print("LongMemEval_S dev30+dev60+dev120", result["longmemeval"], runs)
    RESULT.write_text(json.dumps(result, indent=1))
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
