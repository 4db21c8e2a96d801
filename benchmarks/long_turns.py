"""Long turns stored in pieces: what splitting changes on LongMemEval_S, and dev120 whole.

    python benchmarks/long_turns.py

People paste documents into chats; LongMemEval_S holds user turns of up to 76,560 characters
and thousands of assistant turns longer than the embedder reads (256 word pieces, about
1,000 characters). The rule anchorer stores a turn longer than ``PIECE_CHARS`` as several
units. This runs the LongMemEval harness on dev30 + dev60 with and without splitting (RaMem and
content-only, everything else equal) and prints, per metric and question type, the
figures with paired bootstrap 95% intervals of "split minus unsplit"; then dev120 with
splitting, which the former 50,000-character input limit refused at 52%. Writes
``benchmarks/results/long_turns.json``; caches under ``results/long_turns``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ramem_core.anchoring import PIECE_CHARS
from ramem_core.evaluation import harness
from ramem_core.evaluation.harness import EvalOptions
from ramem_core.evaluation.stats import paired_bootstrap

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data"
METRICS = (("turn", "1"), ("turn", "10"), ("session", "5"))


def _per_question(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    rows = {}
    for line in (out / "questions.jsonl").read_text().splitlines():
        row = json.loads(line)
        rows[(row["system"], row["question_id"])] = row
    return rows


def _compare(split: Path, unsplit: Path) -> dict[str, Any]:
    """Per system, metric and question type: split minus unsplit, paired by question."""
    a, b = _per_question(split), _per_question(unsplit)
    table: dict[str, Any] = {}
    for system in ("ramem", "content"):
        ids = sorted(q for s, q in a if s == system and (s, q) in b)
        types = sorted({a[(system, q)]["question_type"] for q in ids})
        for level, k in METRICS:
            metric = f"{level} recall_any@{k}"
            for group in ("all", *types):
                chosen = [
                    q for q in ids if group == "all" or a[(system, q)]["question_type"] == group
                ]
                x = [a[(system, q)][level][k]["recall_any"] for q in chosen]
                y = [b[(system, q)][level][k]["recall_any"] for q in chosen]
                paired = paired_bootstrap(x, y)
                if paired is not None:
                    table.setdefault(system, {}).setdefault(metric, {})[group] = paired.as_dict()
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "results" / "long_turns"))
    args = parser.parse_args()
    out = Path(args.out)
    dev = [DATA / "longmemeval_s_dev30.json", DATA / "longmemeval_s_dev60.json"]
    dev120 = DATA / "longmemeval_s_dev120.json"
    if not all(p.exists() for p in [*dev, dev120]):
        print("LongMemEval_S dev files not found under ../shared/data: nothing to run")
        return
    systems = ("ramem", "content")
    runs = {}
    for name, piece in (("split", PIECE_CHARS), ("unsplit", None)):
        print(f"LongMemEval_S dev30 + dev60, {name} ...", flush=True)
        options = EvalOptions(systems=systems, ks=(1, 5, 10), piece_chars=piece)
        runs[name] = harness.evaluate_longmemeval(dev, out / name, options)
    table = _compare(out / "split", out / "unsplit")
    print(f"\n== split minus unsplit (pieces of at most {PIECE_CHARS} characters), dev30 + dev60")
    print(f"{'system':8} {'metric':22} {'group':26} {'n':>3} {'unsplit':>8} {'split':>8}  diff")
    for system, metrics in table.items():
        for metric, groups in metrics.items():
            for group, p in groups.items():
                print(
                    f"{system:8} {metric:22} {group:26} {p['n']:>3} {p['b']:>8.3f} {p['a']:>8.3f}"
                    f"  {p['diff']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}]"
                )
    print("\nLongMemEval_S dev120, split ...", flush=True)
    whole = harness.evaluate_longmemeval(
        dev120, out / "dev120", EvalOptions(systems=systems, ks=(1, 5, 10))
    )
    questions = {s: whole["runs"][s]["questions"] for s in systems}
    skipped = whole["skipped"]
    print(f"dev120: every question ingested and asked; scored {questions} (skipped {skipped})")
    result = {
        "command": "python benchmarks/long_turns.py",
        "piece_chars": PIECE_CHARS,
        "dev30_dev60_split_minus_unsplit": table,
        "dev30_dev60_tokens_at_k": {
            n: {s: r["runs"][s]["tokens"] for s in systems} for n, r in runs.items()
        },
        "dev120": {
            "questions": questions,
            "skipped": whole["skipped"],
            "paired_vs_content": whole.get("paired_vs_content", {}),
        },
    }
    path = ROOT / "benchmarks" / "results" / "long_turns.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
