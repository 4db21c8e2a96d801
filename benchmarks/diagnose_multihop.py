"""What LoCoMo's multi-hop misses are made of (issue 54, item 4): a diagnosis, no rule.

From the repository root::

    python benchmarks/diagnose_multihop.py

Every LoCoMo dev multi-hop question is recalled as the audit scores it (its fold's system:
the fusion refitted on the other folds, :mod:`audit_ranking`), to depth 100. For each
evidence turn missing from the top 10 it records where it ranks, and what ties it to the
question and to the evidence found: a content word (stemmed, stop words out) shared with the
question, the speakers' names aside (every line holds one); a speaker the question names;
the session of an evidence turn found in the top 10; and how many evidence turns the
question has. Prints the shares per rank bucket and writes
``benchmarks/results/diagnose_multihop.json``. It reads misses of the dev data, so it
chooses nothing: any part it suggests must win in the audit, refitted per fold.
``ceiling_multihop.py`` (issue 33) buckets the same ranks for the shipped system of
``ramem eval locomo`` with the oracle of a reorder; this one uses the audit's fold systems
and reads what ties each missed turn to the question.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from audit_ranking import DATA, Audit, Data

from ramem_core.frames import RuleFrameInducer
from ramem_core.index.text import Tokenizer
from ramem_core.retrieval import Retriever

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "diagnose_multihop.json"
DEPTH = 100
K = 10


def bucket(rank: int | None) -> str:
    if rank is None:
        return f"beyond {DEPTH}"
    if rank < 20:
        return "11-20"
    if rank < 50:
        return "21-50"
    return f"51-{DEPTH}"


def main() -> None:
    if not (DATA / "locomo_dev.json").exists():
        print(f"skipped: {DATA} has no dev data")
        return
    data = Data()
    audit = Audit(data)
    configs = audit.configs(lambda c: c)
    inducer = RuleFrameInducer()
    words = Tokenizer()
    retrievers: dict[int, Retriever] = {}
    missed: list[dict[str, Any]] = []
    questions = [q for q in data.questions if q.bench == "locomo" and q.group == "multi-hop"]
    full = 0
    for q in questions:
        config = configs[q.fold]
        retriever = retrievers.setdefault(
            q.fold, Retriever(data.embedders[q.bench], config.settled())
        )
        snap = data.snapshot(q, config.keys)
        found = retriever.recall(snap, q.text, inducer, DEPTH, at=q.at).evidence
        rank_of: dict[str, int] = {}
        for rank, e in enumerate(found):
            for source in e.unit.source_ids:
                rank_of.setdefault(source, rank)
        top_sessions = {e.unit.context.session_id for e in found[:K]}
        found_gold = {g for g in q.gold if rank_of.get(g, DEPTH) < K}
        found_sessions = {
            e.unit.context.session_id
            for e in found[:K]
            if any(s in q.gold for s in e.unit.source_ids)
        }
        names = {w for u in snap.units for w in words(u.context.speaker or "")}
        asked = set(words(q.text)) - names  # the speakers' names aside: every line holds one
        if found_gold == set(q.gold):
            full += 1
            continue
        units = {s: u for u in snap.units for s in u.source_ids if s in q.gold}
        for gold in sorted(q.gold - found_gold):
            unit = units.get(gold)
            if unit is None:
                continue
            rank = rank_of.get(gold)
            speaker = unit.context.speaker
            missed.append(
                {
                    "question": q.key,
                    "evidence": gold,
                    "bucket": bucket(rank),
                    "shares_a_word": bool(asked & set(words(unit.content))),
                    "speaker_named": bool(speaker) and speaker.lower() in q.text.lower(),
                    "session_of_found_evidence": unit.context.session_id in found_sessions,
                    "session_in_top": unit.context.session_id in top_sessions,
                    "gold_turns": len(q.gold),
                    "some_found": bool(found_gold),
                }
            )
    result: dict[str, Any] = {
        "command": "python benchmarks/diagnose_multihop.py",
        "questions": len(questions),
        "all_evidence_in_top_10": full,
        "missed_evidence_turns": len(missed),
        "by_bucket": {},
    }
    print(f"{len(questions)} multi-hop questions, {full} with every evidence turn in the top 10;")
    print(f"{len(missed)} evidence turns missed:")
    flags = (
        "shares_a_word",
        "speaker_named",
        "session_of_found_evidence",
        "session_in_top",
        "some_found",
    )
    for name in ("11-20", "21-50", f"51-{DEPTH}", f"beyond {DEPTH}", "all"):
        rows = [m for m in missed if name in ("all", m["bucket"])]
        if not rows:
            continue
        cell = {"n": len(rows)} | {f: round(sum(m[f] for m in rows) / len(rows), 3) for f in flags}
        result["by_bucket"][name] = cell
        print(f"  {name:12} n={cell['n']:3}  " + "  ".join(f"{f} {cell[f]}" for f in flags))
    result["by_gold_turns"] = dict(sorted(Counter(m["gold_turns"] for m in missed).items()))
    result["missed"] = missed
    RESULT.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
