"""How ``RetrievalConfig.members`` (the second round, issue 33) was chosen: LoCoMo dev.

    python benchmarks/tune_second_round.py

Each LoCoMo dev conversation is ingested whole (default embedder, vectors cached under
``results/agent_path``) and every answerable question with evidence is asked (k=10) with the
second round off and under each setting of a small grid of :class:`SecondRound` (the cosine a
term needs with the kind asked, the places kept, the finds added). Reported per split
(conv-26/30/41 choose, conv-42/43 report) and category: Recall@10, multi-hop
all-evidence@10, D@1, how many questions the round changed the top 10 of (it fires only for
questions about several things of one kind), each "setting minus off" with a paired
bootstrap 95% interval. The setting is chosen on the choose part: best Recall@10, then
multi-hop Recall@10, then fewer changes, then more places kept. Its cost is timed by
``ab_recall.py``. Writes ``benchmarks/results/tune_second_round.json``. Skips cleanly
without the dev data.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench_agent_path import evidence_score, locomo_questions, paired_dict

from ramem_core import RaMem, RetrievalConfig
from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder
from ramem_core.retrieval.members import SecondRound, asked_kind
from ramem_core.store.chroma import ChromaStore

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"
RESULT = ROOT / "benchmarks" / "results" / "tune_second_round.json"
CATEGORIES = ("overall", "multi-hop", "single-hop", "temporal", "open-domain")
GRID = {
    f"similarity {s}, start {start}, slots {slots}": SecondRound(s, 50, start, slots, None)
    for s in (0.4, 0.5, 0.6)
    for start in (7, 8)
    for slots in (1, 2, 3)
}


def main() -> None:
    if not DATA.exists():
        print("LoCoMo dev data not found under ../shared/data: nothing to run")
        return
    samples = json.loads(DATA.read_text(encoding="utf-8"))
    embedder = CachedEmbedder(
        MiniLMEmbedder(), ROOT / "results" / "agent_path" / "embeddings.sqlite"
    )
    settings = {"off": replace(RetrievalConfig(), members=None)}  # settled: see harness.view_config
    settings |= {name: replace(RetrievalConfig(), members=r) for name, r in GRID.items()}
    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = ChromaStore.persistent(tmp, embedder)
        questions = locomo_questions(store, samples)
        for number, (name, config) in enumerate(settings.items(), start=1):
            memory = RaMem(store, config=config)
            for sid in dict.fromkeys(q["sid"] for q in questions):  # snapshots, term vectors
                memory.recall("What things has anyone done?", namespace=sid)
            rows = []
            for q in questions:
                found = memory.recall(q["question"], k=10, namespace=q["sid"])
                score = evidence_score(found, q["gold"], q["turn_of"])
                rows.append(
                    {
                        "split": q["split"],
                        "category": q["category"],
                        "recall_10": score["recall_10"],
                        "all_10": float(score["recall_10"] == 1.0),
                        "d_at_1": score["d_at_1"],
                        "top10": [e.unit.id for e in found][:10],
                    }
                )
            runs[name] = rows
            print(f"[{number}/{len(settings)}] {name}", file=sys.stderr, flush=True)
        store.close()
    off = runs["off"]
    table: dict[str, Any] = {}
    for name, rows in runs.items():
        for split in ("choose", "report", "all"):
            keep = [i for i, r in enumerate(rows) if split in ("all", r["split"])]
            entry: dict[str, Any] = {
                "changed_top10": sum(rows[i]["top10"] != off[i]["top10"] for i in keep),
                "set_questions": sum(
                    asked_kind(q["question"]) is not None
                    for q in questions
                    if split in ("all", q["split"])
                ),
            }
            for cat in CATEGORIES:
                idx = [i for i in keep if cat == "overall" or rows[i]["category"] == cat]
                a = [rows[i]["recall_10"] for i in idx]
                b = [off[i]["recall_10"] for i in idx]
                entry[cat] = {
                    "n": len(idx),
                    "recall_10": sum(a) / len(a),
                    "minus_off": paired_dict(a, b),
                }
                if cat == "multi-hop":
                    a = [rows[i]["all_10"] for i in idx]
                    b = [off[i]["all_10"] for i in idx]
                    entry[cat]["all_evidence_10"] = sum(a) / len(a)
                    entry[cat]["all_minus_off"] = paired_dict(a, b)
                if cat == "overall":
                    entry["d_at_1"] = sum(rows[i]["d_at_1"] for i in idx) / len(idx)
            table[f"{name} | {split}"] = entry

    def key(name: str) -> tuple[float, float, int, int]:
        e = table[f"{name} | choose"]
        start = GRID[name].start  # a tie keeps more of the first round's places
        recall = e["overall"]["recall_10"], e["multi-hop"]["recall_10"]
        return (-recall[0], -recall[1], e["changed_top10"], -start)

    chosen = min(GRID, key=key)
    print(f"{'setting | split':44} {'R@10':>6} {'mh':>6} {'mh-all':>7} {'D@1':>6} {'chg':>4}")
    for name, e in table.items():
        mh = e["multi-hop"]
        print(
            f"{name:44} {e['overall']['recall_10']:6.3f} {mh['recall_10']:6.3f}"
            f" {mh['all_evidence_10']:7.3f} {e['d_at_1']:6.3f} {e['changed_top10']:4d}"
        )
    print(f"chosen on the choose part: {chosen}")
    RESULT.write_text(
        json.dumps(
            {"command": "python benchmarks/tune_second_round.py", "chosen": chosen, **table},
            indent=2,
        )
    )
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
