"""A LlamaIndex ``Memory`` with the RaMem block: chat turns become situated memories.

python examples/llamaindex_memory.py
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import datetime, timedelta
from itertools import count
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _shared import demo_memory
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import Memory

from llamaindex_ramem import RaMemMemoryBlock

CHAT = [
    (MessageRole.USER, "Biscuit had his vaccinations at the vet yesterday."),
    (MessageRole.ASSISTANT, "Good to hear! How did he handle it?"),
    (MessageRole.USER, "He was brave, the vet Dr. Moreau gave him a treat."),
    (MessageRole.ASSISTANT, "Lovely. Anything else planned for him?"),
]


async def run(path: str | None) -> None:
    memory, _ = demo_memory(path, namespace="alice")
    ticks = count()
    block = RaMemMemoryBlock(
        memory=memory,
        namespace="alice",
        user_name="Alice",
        clock=lambda: datetime(2023, 12, 5, 18, 0) + timedelta(minutes=next(ticks)),
    )
    chat_memory = Memory.from_defaults(
        session_id="alice-chat",
        token_limit=80,
        chat_history_token_ratio=0.3,
        token_flush_size=20,
        memory_blocks=[block],
    )
    for role, text in CHAT:
        await chat_memory.aput(ChatMessage(role=role, content=text))
    print(f"memories in 'alice' after the chat: {memory.count(namespace='alice')}")
    for question in (
        "When did Biscuit see the vet?",
        "What did the doctor tell Alice in February?",
    ):
        print(f"\nQ: {question}")
        await chat_memory.aput(ChatMessage(role=MessageRole.USER, content=question))
        messages = await chat_memory.aget()
        print("what the agent's LLM receives from the RaMem block:")
        print(str(messages[0].content)[:900])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path")
    asyncio.run(run(parser.parse_args().path))


if __name__ == "__main__":
    main()
