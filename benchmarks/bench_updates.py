"""Knowledge updates: does the latest statement of a changed state come first?

    python benchmarks/bench_updates.py

The questions: every LongMemEval_S dev knowledge-update question whose evidence turns lie in
sessions of two or more dates, except those that ask for the earlier value
(:data:`EARLIER`, a list fixed before any run: "What was my previous ...?"). Parts as in
``bench_splits.py``: dev30 and the even positions of dev120 (per question type) to choose,
dev60 and the odd positions to report.

Measures, over the top 10 of each run, at the question's own date:

- ``latest_first@10``: the first evidence turn in the top 10 comes from the latest evidence
  session (by date);
- ``latest_in@10``: some evidence turn of the latest evidence session is in the top 10.

Runs: RaMem, content-only, RaMem without supersession (``no-supersession``) and without the
restated-value chains (``no-restate``: :func:`~ramem_core.retrieval.supersession.restated`),
with paired bootstrap 95% intervals; and the agent path (:func:`agent_path`): each question through
``create_agent`` + ``RaMemMiddleware`` with the question's own date as the clock, checking
that the model saw exactly ``recall(at=question date)``, with ``latest_first@10`` of what it
saw. ``restate_share`` is chosen on the choose part from a small grid (:data:`GRID`); the
report part is measured once with the chosen one. Writes
``benchmarks/results/bench_updates.json``; embeddings are cached under ``results/updates``.
Skips cleanly without the dev data.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from bench_splits import cached_embedder, interval, lme_items

from ramem_core import Evidence, RaMem, RetrievalConfig
from ramem_core.evaluation import harness
from ramem_core.loaders import (
    longmemeval_conversation,
    longmemeval_evidence,
    longmemeval_sessions,
)
from ramem_core.temporal import parse_timestamp

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "results" / "updates"
RESULT = ROOT / "benchmarks" / "results" / "bench_updates.json"
EARLIER = ("50635ada", "e66b632c", "dfde3500", "f685340e")
"""Knowledge-update questions that ask for the earlier value (or for both), fixed by reading
the questions before any run: the previous frequent flyer status, the previous personal
best, the previous tutor, how often "previously" and now."""
GRID = (None, 0.4, 0.5, 0.6, 0.7)
"""``restate_share`` tried on the choose part. Among the best, the lowest (the broadest chain
that costs the choose part nothing). (Supersession itself is the replacement model's:
``benchmarks/fit_replacement.py``.)"""


def questions() -> list[dict[str, Any]]:
    """The knowledge-update questions measured, with their part and evidence sessions."""
    out = []
    for name, part, item in lme_items():
        kind = str(item.get("question_type"))
        qid = str(item["question_id"])
        if kind != "knowledge-update" or qid.endswith("_abs") or qid in EARLIER:
            continue
        gold = longmemeval_evidence(item, qid)
        dates = {sid: parse_timestamp(str(d)) for sid, d, _ in longmemeval_sessions(item, qid)}
        sessions = {g.rsplit(":", 1)[0] for g in gold}
        when = {s: dates[s] for s in sessions}
        if len({d.date() for d in when.values() if d is not None}) < 2:
            continue
        latest = max(d for d in when.values() if d is not None)
        out.append(
            {
                "id": qid,
                "file": name,
                "part": part,
                "item": item,
                "gold": set(gold),
                "latest": {s for s, d in when.items() if d == latest},
            }
        )
    return out


def measure(memory: RaMem, q: dict[str, Any], namespace: str) -> dict[str, float]:
    at = parse_timestamp(str(q["item"].get("question_date", "")))
    return latest(memory.recall(q["item"]["question"], 10, at=at, namespace=namespace), q)


def latest(found: Sequence[Evidence], q: dict[str, Any]) -> dict[str, float]:
    """``latest_first@10`` and ``latest_in@10`` of the evidence ``found`` for ``q``."""
    first: str | None = None
    latest_in = False
    for e in found:
        hits = [s for s in e.unit.source_ids if s in q["gold"]]
        for source in hits:
            session = source.rsplit(":", 1)[0]
            first = session if first is None else first
            latest_in = latest_in or session in q["latest"]
    return {
        "latest_first@10": float(first is not None and first in q["latest"]),
        "latest_in@10": float(latest_in),
    }


def agent_path(memory: RaMem, q: dict[str, Any]) -> dict[str, float]:
    """``q`` asked through ``create_agent`` + ``RaMemMiddleware`` with the question's own date
    as the clock (``bench_agent_path.asked_through_agent``): whether the model saw exactly
    ``recall(at=question date)``, and ``latest_first@10`` of what it saw."""
    from bench_agent_path import asked_through_agent

    at = parse_timestamp(str(q["item"].get("question_date", "")))
    assert at is not None
    same, block = asked_through_agent(memory, q["item"]["question"], q["namespace"], at)
    return {**latest(block.included, q), "same_as_recall": float(same)}


def main() -> None:
    if not (DATA / "longmemeval_s_dev30.json").exists():
        print(f"skipped: {DATA} has no LongMemEval dev data")
        return
    options = harness.EvalOptions(systems=("ramem", "content"), ks=(10,))
    bench = harness._open_bench(OUT, options, cached_embedder(), None)
    asked = questions()
    print(
        f"{len(asked)} questions: {sum(q['part'] == 'choose' for q in asked)} choose,"
        f" {sum(q['part'] == 'report' for q in asked)} report",
        flush=True,
    )
    for n, q in enumerate(asked, start=1):
        namespace = harness._namespace(q["id"])
        conversation = harness._user_side(longmemeval_conversation(q["item"], q["id"]))
        bench.ingest(namespace, conversation)
        q["namespace"] = namespace
        print(f"  ingested {n}/{len(asked)}", end="\r", flush=True)
    print()

    def run(config: RetrievalConfig, part: str) -> list[dict[str, float]]:
        memory = RaMem(bench.store, config=config.settled(), counter=bench.counter)
        return [measure(memory, q, q["namespace"]) for q in asked if q["part"] == part]

    def mean(rows: list[dict[str, float]], key: str) -> float:
        return round(sum(r[key] for r in rows) / len(rows), 3)

    base = RetrievalConfig()
    grid = {}
    for point in GRID:
        rows = run(replace(base, restate_share=point), "choose")
        grid[str(point)] = {m: mean(rows, m) for m in ("latest_first@10", "latest_in@10")}

    def share_of(point: str) -> float:
        return 2.0 if point == "None" else float(point)

    best = max(
        grid,
        key=lambda g: (grid[g]["latest_first@10"], grid[g]["latest_in@10"], -share_of(g)),
    )
    print("choose grid (restate_share):", json.dumps(grid))
    print(f"chosen: {best} (default {base.restate_share})")
    share = None if best == "None" else float(best)
    chosen = replace(base, restate_share=share)
    runs = {
        "ramem": chosen,
        "content": harness.SYSTEMS["content"],
        "no-supersession": replace(chosen, supersession=False),
        "no-restate": replace(chosen, restate_share=None),
    }
    result: dict[str, Any] = {
        "command": "python benchmarks/bench_updates.py",
        "excluded_earlier_value": list(EARLIER),
        "choose_grid": grid,
        "chosen": {"restate_share": share},
        "parts": {},
    }
    for part in ("choose", "report"):
        ids = [q["id"] for q in asked if q["part"] == part]
        rows = {name: run(config, part) for name, config in runs.items()}
        cell: dict[str, Any] = {"n": len(ids), "questions": ids}
        for m in ("latest_first@10", "latest_in@10"):
            cell[m] = {name: mean(r, m) for name, r in rows.items()}
            for other in ("content", "no-supersession", "no-restate"):
                pairs = [(a[m], b[m]) for a, b in zip(rows["ramem"], rows[other], strict=True)]
                cell[m][f"ramem - {other}"] = interval(pairs)
        memory = RaMem(bench.store, config=chosen.settled(), counter=bench.counter)
        agent = [agent_path(memory, q) for q in asked if q["part"] == part]
        cell["agent path (create_agent + middleware, clock = question date)"] = {
            "same_as_recall": mean(agent, "same_as_recall"),
            "latest_first@10": mean(agent, "latest_first@10"),
            "latest_in@10": mean(agent, "latest_in@10"),
        }
        result["parts"][part] = cell
        print(f"\n{part} part ({len(ids)} questions)")
        for m in ("latest_first@10", "latest_in@10"):
            line = "  ".join(f"{name} {cell[m][name]:.3f}" for name in runs)
            print(f"  {m}: {line}")
            for other in ("content", "no-supersession", "no-restate"):
                d, lo, hi = cell[m][f"ramem - {other}"]
                print(f"    ramem - {other}: {d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        print(
            f"  agent path: {cell['agent path (create_agent + middleware, clock = question date)']}"
        )
    RESULT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {RESULT} ({datetime.now():%H:%M})")


if __name__ == "__main__":
    main()
