"""What reading states costs ingest: the parser on against off, and the embedder alone.

From the repository root::

    python benchmarks/bench_parse_cost.py [--rounds 2]

On the LoCoMo dev conversations (a synthetic conversation of 2,000 turns without the dev
data), side by side in one run and alternating, so that a busy machine weighs on both alike:

- the full ingest (anchor, parse, embed, write) with the default reader
  (:class:`~ramem_core.reading.ParseReader`) and with none (``RuleAnchorer(reader=None)``),
  each into a fresh store;
- the embedder alone over the same memories' texts;
- the parse alone over the same texts.

Reports turns/s, each ingest over the embedder alone (the issue's bar: at least 0.75 with the
parser on) and the parse's share of the ingest. Writes
``benchmarks/results/bench_parse_cost.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_core import ingest_conversations

from ramem_core import RaMem
from ramem_core.anchoring import RuleAnchorer
from ramem_core.embedding import MiniLMEmbedder
from ramem_core.reading import default_reader, needs_reading
from ramem_core.replacement import own_words
from ramem_core.store.chroma import ChromaStore

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "bench_parse_cost.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    conversations, source = ingest_conversations()
    turns = sum(len(s.turns) for c in conversations for s in c.sessions)
    embedder = MiniLMEmbedder()
    reader = default_reader()
    embedder.embed(["warm up the model"])
    reader.read(["I warm up the parser."])
    units = [u for c in conversations for u in RuleAnchorer(reader=None).anchor(c)]
    texts = [u.content for u in units]
    own = [own_words(u) for u in units]
    times: dict[str, list[float]] = {"on": [], "off": [], "embed": [], "parse": []}
    for n in range(args.rounds):
        for name in ("on", "off") if n % 2 == 0 else ("off", "on"):
            anchorer = RuleAnchorer() if name == "on" else RuleAnchorer(reader=None)
            with tempfile.TemporaryDirectory() as tmp:
                memory = RaMem(ChromaStore.persistent(tmp, embedder), anchorer=anchorer)
                started = time.perf_counter()
                memory.add_conversations(conversations)
                times[name].append(time.perf_counter() - started)
                memory.close()
            print(f"  round {n + 1}: ingest, parser {name}: {times[name][-1]:.1f} s", flush=True)
        started = time.perf_counter()
        embedder.embed(texts)
        times["embed"].append(time.perf_counter() - started)
        started = time.perf_counter()
        reader.read(own)
        times["parse"].append(time.perf_counter() - started)
    seconds = {k: statistics.median(v) for k, v in times.items()}
    result: dict[str, Any] = {
        "command": "python benchmarks/bench_parse_cost.py",
        "source": source,
        "turns": turns,
        "memories": len(units),
        "parsed_share": round(sum(map(needs_reading, own)) / len(own), 3),
        "rounds": args.rounds,
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "turns_per_s": {k: round(turns / v, 1) for k, v in seconds.items()},
        "ingest_over_embedder": {
            "parser_on": round(seconds["embed"] / seconds["on"], 3),
            "parser_off": round(seconds["embed"] / seconds["off"], 3),
        },
        "parse_share_of_ingest": round(seconds["parse"] / seconds["on"], 3),
        "parse_ms_per_memory": round(1000 * seconds["parse"] / len(units), 2),
    }
    print(json.dumps(result, indent=1))
    RESULT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
