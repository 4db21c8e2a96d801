"""RaMemStore (the LangGraph store) on LoCoMo dev: quality through ``store.search`` and its cost.

    python benchmarks/bench_store.py            # all five LoCoMo dev conversations
    python benchmarks/bench_store.py --limit 1  # one conversation (smoke)

Each conversation is stored three ways, on one embedded Chroma directory and the default
embedder (vectors cached under ``results/store``):

- **RaMem**: ``add_turn`` turn by turn (session times), asked with ``recall`` (k=10);
- **RaMemStore**: one ``put`` per turn into ``("locomo", <conversation>)``, the value
  ``{"content": text, "speaker": name, "said_at": session time}``, asked with
  ``store.search(query=...)`` (limit 10);
- **InMemoryStore**: LangGraph's own store with the same embedder
  (``IndexConfig(embed=..., fields=["content"])``), the same puts (content ``"speaker: text"``,
  as RaMem's memories read) and searches: the plain LangGraph baseline.

Reports evidence Recall@10 and D@1 for each, paired bootstrap intervals of RaMemStore minus
RaMem and RaMemStore minus InMemoryStore, a table per category and split (conv-26/30/41
choose, conv-42/43 report), and put / add_turn p50 and search / recall p95 measured in the same
run. Writes ``benchmarks/results/bench_store.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ramem_core import RaMem, RetrievalConfig
from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder
from ramem_core.evaluation import metrics
from ramem_core.evaluation.harness import LOCOMO_HOLDOUT
from ramem_core.evaluation.stats import paired_bootstrap
from ramem_core.loaders import locomo_conversation
from ramem_core.store.chroma import ChromaStore

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"
SYSTEMS = ("ramem", "ramem_store", "in_memory_store")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _turns(conversation: Any) -> list[tuple[str, str, str, datetime, bool]]:
    """(turn id, speaker, text, said at, opens a session) of each turn, in order."""
    out = []
    last = datetime(2000, 1, 1)
    for session in conversation.sessions:
        start = session.time or last + timedelta(days=1)
        for j, turn in enumerate(session.turns):
            last = start + timedelta(seconds=30 * j)
            out.append((turn.id, turn.speaker, turn.text or turn.image_caption or "", last, j == 0))
    return out


def _warm(memory: RaMem, store: Any, conversation: Any) -> None:
    """Store the conversation once each way and drop it: the vectors the timed run needs
    are then in the embedding cache for both, so neither pays for embedding first."""
    for turn_id, speaker, text, at, opens in _turns(conversation):
        memory.add_turn(speaker, text, at=at, namespace="warm", new_session=opens)
        value = {"content": text, "speaker": speaker, "said_at": at.isoformat()}
        store.put(("warm", "up"), turn_id, value)
        memory.embedder.embed([f"{speaker}: {text}"])
    memory.drop(namespace="warm")
    store.drop_namespace(("warm",))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="at most this many conversations")
    parser.add_argument("--out", default=str(ROOT / "results" / "store"))
    args = parser.parse_args()
    if not DATA.exists():
        print("LoCoMo dev data not found under ../shared/data: nothing to run")
        return
    from langgraph.store.memory import InMemoryStore

    from langchain_ramem.store import RaMemStore

    samples = json.loads(DATA.read_text(encoding="utf-8"))[: args.limit]
    embedder = CachedEmbedder(MiniLMEmbedder(), Path(args.out) / "embeddings.sqlite")

    def embed(texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in embedder.embed(list(texts))]

    rows: list[dict[str, Any]] = []
    timings: dict[str, list[float]] = {"add_turn": [], "put": [], "recall": [], "search": []}
    with tempfile.TemporaryDirectory(prefix="ramem-store-bench-") as tmp:
        chroma = ChromaStore.persistent(tmp, embedder)
        memory = RaMem(chroma, config=RetrievalConfig().settled())  # no timing in rankings
        store = RaMemStore(memory)
        forget = memory.retriever.embedder.forget  # type: ignore[attr-defined]
        baseline = InMemoryStore(
            index={"dims": embedder.dimension, "embed": embed, "fields": ["content"]}
        )
        for sample in samples:
            sid = sample["sample_id"]
            conversation = locomo_conversation(sample, sid)
            namespace = ("locomo", sid)
            _warm(memory, store, conversation)  # every vector cached before timing
            turn_of: dict[str, list[str]] = {}
            for turn_id, speaker, text, at, opens in _turns(conversation):
                began = time.perf_counter()
                unit = memory.add_turn(
                    speaker,
                    text,
                    at=at,
                    conversation_id=sid,
                    namespace=f"turns-{sid}",
                    new_session=opens,
                )
                timings["add_turn"].append(time.perf_counter() - began)
                turn_of[unit.id] = [turn_id]
                value = {"content": text, "speaker": speaker, "said_at": at.isoformat()}
                began = time.perf_counter()
                store.put(namespace, turn_id, value)
                timings["put"].append(time.perf_counter() - began)
                # the baseline embeds "speaker: text", as RaMem's memories read
                baseline.put(namespace, turn_id, {**value, "content": f"{speaker}: {text}"})
            print(f"{sid}: {len(turn_of)} turns stored three ways", flush=True)
            for qa in sample["qa"]:
                gold = metrics.parse_evidence(qa.get("evidence", []))
                if int(qa.get("category", 0)) not in metrics.ANSWERABLE or not gold:
                    continue
                question = qa["question"]
                forget()  # each timed call embeds the question (a cached-embedder lookup)
                began = time.perf_counter()
                recalled = memory.recall(question, namespace=f"turns-{sid}")
                timings["recall"].append(time.perf_counter() - began)
                forget()
                began = time.perf_counter()
                searched = store.search(namespace, query=question, limit=10)
                timings["search"].append(time.perf_counter() - began)
                plain = baseline.search(namespace, query=question, limit=10)
                ranked = {
                    "ramem": [t for e in recalled for t in turn_of.get(e.unit.id, [])],
                    "ramem_store": [i.key for i in searched],
                    "in_memory_store": [i.key for i in plain],
                }
                sessions = {g.split(":")[0] for g in gold}
                rows.append(
                    {
                        "sample_id": sid,
                        "split": "report" if sid in LOCOMO_HOLDOUT else "choose",
                        "category": metrics.LOCOMO_CATEGORIES[int(qa["category"])],
                        **{
                            name: {
                                "recall_10": metrics.evidence_recall(gold, turns[:10]),
                                "d_at_1": float(
                                    not turns or turns[0].split(":")[0] not in sessions
                                ),
                            }
                            for name, turns in ranked.items()
                        },
                    }
                )
            print(f"{sid}: questions asked", flush=True)
        chroma.close()

    def table(part: list[dict[str, Any]]) -> dict[str, Any]:
        means = {
            name: {f: sum(r[name][f] for r in part) / len(part) for f in ("recall_10", "d_at_1")}
            for name in SYSTEMS
        }
        paired = {}
        for other in ("ramem", "in_memory_store"):
            for f in ("recall_10", "d_at_1"):
                result = paired_bootstrap(
                    [r["ramem_store"][f] for r in part], [r[other][f] for r in part]
                )
                paired[f"ramem_store minus {other} {f}"] = (
                    result.as_dict() if result is not None else {}
                )
        return {"questions": len(part), "means": means, "paired": paired}

    groups = {"all": table(rows)}
    for key in ("split", "category"):
        for value in sorted({r[key] for r in rows}):
            groups[value] = table([r for r in rows if r[key] == value])
    cost = {
        "add_turn_p50_ms": 1000 * statistics.median(timings["add_turn"]),
        "put_p50_ms": 1000 * statistics.median(timings["put"]),
        "recall_p95_ms": 1000 * _percentile(timings["recall"], 0.95),
        "search_p95_ms": 1000 * _percentile(timings["search"], 0.95),
    }
    cost["put_over_add_turn_p50"] = cost["put_p50_ms"] / cost["add_turn_p50_ms"]
    cost["search_over_recall_p95"] = cost["search_p95_ms"] / cost["recall_p95_ms"]
    for name, group in groups.items():
        print(f"\n== {name} ({group['questions']} questions)")
        print(f"{'system':16} {'Recall@10':>10} {'D@1':>7}")
        for system, means in group["means"].items():
            print(f"{system:16} {means['recall_10']:>10.3f} {means['d_at_1']:>7.3f}")
        for label, p in group["paired"].items():
            if p:
                print(f"  {label:40} {p['diff']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}]")
    print("\n== cost (same run)")
    for label, value in cost.items():
        print(f"{label:24} {value:8.2f}")
    result = {"command": "python benchmarks/bench_store.py", "groups": groups, "cost": cost}
    path = ROOT / "benchmarks" / "results" / "bench_store.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
