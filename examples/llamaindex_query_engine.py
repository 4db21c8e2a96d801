"""A LlamaIndex query engine over RaMem's retriever (``RetrieverQueryEngine``).

Offline with LlamaIndex's ``MockLLM`` (it echoes the prompt it receives, so you can see the
situated memories reach the LLM); any LlamaIndex LLM can replace it.

    python examples/llamaindex_query_engine.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _shared import demo_memory
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from llamaindex_ramem import RaMemRetriever


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path")
    args = parser.parse_args()
    memory, questions = demo_memory(args.path)
    engine = RetrieverQueryEngine.from_args(RaMemRetriever(memory, k=2), llm=MockLLM())
    for q in questions[:3]:
        response = engine.query(q["question"])
        print(f"\nQ: {q['question']}")
        for n in response.source_nodes:
            m = n.node.metadata
            print(
                f"  [{m['rank']}] said {m.get('session_time', '?')} | "
                f"event {m.get('event_time', '-')} | who {m['participants']}"
            )
            print(f"      {m['content']}")
        prompt_tail = str(response).strip().splitlines()
        memories = [line for line in prompt_tail if line.startswith("<memory")]
        print(f"the LLM received {len(memories)} situated memories, e.g. {memories[0]}")


if __name__ == "__main__":
    main()
