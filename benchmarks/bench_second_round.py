"""What the second round costs (issue 33), and how often it fires.

    python benchmarks/bench_second_round.py --size 100000 --queries 64

- **Fires:** how many LoCoMo and LongMemEval_S dev questions ask about several things of
  one kind (:func:`~ramem_core.retrieval.members.asked_kind`), the only ones it runs for.
- **When it fires:** bench_core's synthetic conversation, ``--size`` anchored memories with
  random unit vectors in the in-memory store (as ``ab_recall.py``), and questions about
  several things ("What pets does Ben have?"), each asked of RaMem with the round, RaMem
  without it and content-only (three memories over one store, each with its own recent
  question cache, so each embeds the question once; the order rotates). p50/p95 and the
  ratios.
- **Once per process:** the first such question starts embedding the index's vocabulary
  (:class:`~ramem_core.retrieval.members.TermVectors`; in the background beyond
  ``inline_terms``): the first question's time and when the vocabulary is done, on the
  synthetic store; for a vocabulary of real talk, every distinct term of the LongMemEval_S
  dev120 haystacks (when the data is there) is embedded and timed. The timed questions are
  asked once it is done.

Writes ``benchmarks/results/bench_second_round.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench_core import scale_memories
from synthetic import NAMES

from ramem_core import RaMem, RetrievalConfig
from ramem_core.embedding import MiniLMEmbedder
from ramem_core.index.text import Tokenizer
from ramem_core.retrieval import CONTENT_ONLY
from ramem_core.retrieval.members import asked_kind
from ramem_core.testing import InMemoryStore

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data"
RESULT = ROOT / "benchmarks" / "results" / "bench_second_round.json"
SET_QUERIES = [
    "What pets does {name} have?",
    "What hobbies has {name} picked up?",
    "Which cities has {name} visited?",
    "What books has {name} read?",
    "What sports does {name} play?",
    "What dishes has {name} cooked?",
    "What instruments does {name} play?",
    "What classes has {name} taken?",
    "What kinds of music does {name} like?",
    "Which concerts has {name} been to?",
]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def firing() -> dict[str, Any]:
    """How many dev questions the second round runs for."""
    out: dict[str, Any] = {}
    locomo = DATA / "locomo_dev.json"
    if locomo.exists():
        asked = [qa["question"] for s in json.loads(locomo.read_text()) for qa in s["qa"]]
        out["locomo_dev"] = {"questions": len(asked), "fires": _fires(asked)}
    for name in ("dev30", "dev60", "dev120"):
        path = DATA / f"longmemeval_s_{name}.json"
        if path.exists():
            asked = [item["question"] for item in json.loads(path.read_text())]
            out[f"longmemeval_s_{name}"] = {"questions": len(asked), "fires": _fires(asked)}
    return out


def _fires(questions: list[str]) -> int:
    return sum(asked_kind(q) is not None for q in questions)


def when_it_fires(size: int, queries: int, embedder: MiniLMEmbedder) -> dict[str, Any]:
    """Recall times of questions about several things at ``size`` memories."""
    units, vectors = scale_memories(size, embedder.dimension)
    store = InMemoryStore(embedder)
    store.upsert("bench", units, vectors)
    configs = {
        "ramem": RetrievalConfig(),
        "without_round": replace(RetrievalConfig(), members=None),
        "content": CONTENT_ONLY,
    }
    memories = {
        name: RaMem(store, config=c, namespace="bench", refresh_seconds=3600)
        for name, c in configs.items()
    }
    for memory in memories.values():
        memory.recall("warm up the snapshot")
    texts = [q.format(name=n) for q in SET_QUERIES for n in NAMES]
    random.Random(size).shuffle(texts)
    first, texts = texts[0], texts[1 : queries + 1]
    t = time.perf_counter()
    memories["ramem"].recall(first, k=10)  # starts embedding the snapshot's terms
    cold = time.perf_counter() - t
    memories["ramem"].retriever.pass_named("set-members").terms.join()  # type: ignore[attr-defined]  # the rest is timed in steady state
    embedded = time.perf_counter() - t
    own = memories["ramem"].snapshots.get("bench").index.own
    terms = len(own.vocabulary())
    times: dict[str, list[float]] = {name: [] for name in memories}
    names = list(memories)
    for i, text in enumerate(texts):
        for name in names[i % 3 :] + names[: i % 3]:
            t = time.perf_counter()
            memories[name].recall(text, k=10)
            times[name].append((time.perf_counter() - t) * 1000)
        print(f"\r{i + 1}/{len(texts)} questions", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    out: dict[str, Any] = {
        "memories": len(units),
        "questions": len(texts),
        "fired": sum(asked_kind(q) is not None for q in texts),
        "first_question_seconds": cold,
        "terms": terms,
        "terms_embedded_after_seconds": embedded,
    }
    for name, values in times.items():
        out[name] = {"p50_ms": _percentile(values, 50), "p95_ms": _percentile(values, 95)}
    for other in ("without_round", "content"):
        out[f"p95_over_{other}"] = out["ramem"]["p95_ms"] / out[other]["p95_ms"]
    return out


def real_vocabulary(embedder: MiniLMEmbedder) -> dict[str, Any] | None:
    """Every distinct term of the LongMemEval_S dev120 haystacks, embedded and timed: what
    the first question of a process pays on a store of that much real talk."""
    path = DATA / "longmemeval_s_dev120.json"
    if not path.exists():
        return None
    tokenize = Tokenizer()
    terms: dict[str, None] = {}
    turns = 0
    for item in json.loads(path.read_text()):
        for session in item["haystack_sessions"]:
            for turn in session:
                terms.update(dict.fromkeys(tokenize(turn["content"])))
                turns += 1
    vocabulary = list(terms)
    t = time.perf_counter()
    embedder.embed(vocabulary)
    seconds = time.perf_counter() - t
    return {
        "turns": turns,
        "terms": len(vocabulary),
        "seconds": seconds,
        "terms_per_second": len(vocabulary) / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=64)
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    embedder.embed(["warm up the model"])
    result: dict[str, Any] = {
        "command": f"python benchmarks/bench_second_round.py --size {args.size}"
        f" --queries {args.queries}",
        "fires": firing(),
        "when_it_fires": when_it_fires(args.size, args.queries, embedder),
        "real_vocabulary": real_vocabulary(embedder),
    }
    print(json.dumps(result, indent=1))
    RESULT.write_text(json.dumps(result, indent=1))
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
