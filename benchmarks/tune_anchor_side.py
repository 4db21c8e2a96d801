"""How ``RetrievalConfig.anchor_side_slots`` was chosen: before/after placement on LoCoMo dev.

    python benchmarks/tune_anchor_side.py

Each LoCoMo dev conversation is ingested whole (default embedder, vectors cached under
``results/agent_path``) and every answerable question with evidence is asked (k=10) under each
setting: ``anchor_side_slots`` 0 (off), 1, 3 and 20 (every anchor-side memory of the relevant
pool below the others), and ``exclude_anchor``. Reported per split (conv-26/30/41 choose,
conv-42/43 report): Recall@10, D@1, and on the questions whose frame grounds a before/after
relation, how many have rank 1 on the anchor's own side and their Recall@10. Writes
``benchmarks/results/tune_anchor_side.json``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_agent_path import _anchor_side, _score, locomo_questions  # noqa: E402

from ramem_core import RaMem, RetrievalConfig  # noqa: E402
from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder  # noqa: E402
from ramem_core.store.chroma import ChromaStore  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"
SETTINGS = {
    "slots 0 (off)": RetrievalConfig(anchor_side_slots=0),
    "slots 1": RetrievalConfig(anchor_side_slots=1),
    "slots 3 (default)": RetrievalConfig(anchor_side_slots=3),
    "slots 20 (whole pool)": RetrievalConfig(anchor_side_slots=20),
    "exclude_anchor": RetrievalConfig(anchor_side_slots=0, exclude_anchor=True),
}


def main() -> None:
    if not DATA.exists():
        print("LoCoMo dev data not found under ../shared/data: nothing to run")
        return
    samples = json.loads(DATA.read_text(encoding="utf-8"))
    embedder = CachedEmbedder(
        MiniLMEmbedder(), ROOT / "results" / "agent_path" / "embeddings.sqlite"
    )
    table: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = ChromaStore.persistent(tmp, embedder)
        questions = locomo_questions(store, samples)
        for name, config in SETTINGS.items():
            memory = RaMem(store, config=config.settled())
            rows = []
            for q in questions:
                found = memory.recall(q["question"], k=10, namespace=q["sid"])
                score = _score(found, q["gold"], q["turn_of"])
                rows.append((q["split"], score, _anchor_side(found)))
            for split in ("choose", "report", "all"):
                part = [r for r in rows if split in ("all", r[0])]
                sided = [r for r in part if r[2] is not None]
                table[f"{name} | {split}"] = {
                    "recall_10": sum(r[1]["recall_10"] for r in part) / len(part),
                    "d_at_1": sum(r[1]["d_at_1"] for r in part) / len(part),
                    "before_after_questions": len(sided),
                    "anchor_side_at_1": sum(bool(r[2]) for r in sided),
                    "before_after_recall_10": (
                        sum(r[1]["recall_10"] for r in sided) / len(sided) if sided else None
                    ),
                }
        store.close()
    print(
        f"{'setting | split':32} {'R@10':>6} {'D@1':>6} {'b/a q':>6} {'side@1':>7} {'b/a R@10':>9}"
    )
    for key, v in table.items():
        print(
            f"{key:32} {v['recall_10']:6.3f} {v['d_at_1']:6.3f} {v['before_after_questions']:6d}"
            f" {v['anchor_side_at_1']:7d} {v['before_after_recall_10'] or 0:9.3f}"
        )
    out = ROOT / "benchmarks" / "results" / "tune_anchor_side.json"
    out.write_text(
        json.dumps({"command": "python benchmarks/tune_anchor_side.py", **table}, indent=2)
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
