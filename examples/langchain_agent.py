"""A LangChain ``create_agent`` agent with RaMem middleware, over a multi-session conversation.

Offline by default (a scripted model that answers from the memories it was given); pass a real
model to use one, e.g. ``--model openai:gpt-4o-mini`` (needs langchain-openai and a key).

    python examples/langchain_agent.py
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _shared import demo_memory
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage, SystemMessage

from langchain_ramem import MemoryContext, RaMemMiddleware
from langchain_ramem.testing import ScriptedChatModel


def answer_from_memories(messages: list[BaseMessage]) -> str:
    """The offline model: quote the first injected memory, with its date."""
    system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
    found = re.search(r'<memory n="1" said="([^"]+)"[^>]*>\n([^\n]+)', system)
    if not found:
        return "I don't remember anything about that."
    return f"From what you told me on {found.group(1)}: {found.group(2)}"


class ShowWhatTheModelSees(AgentMiddleware):
    """Prints the system message the model receives (placed after RaMem's middleware, it
    sees the memories RaMem injected, with the date of asking and why each applies)."""

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        print("what the model receives:")
        print(request.system_prompt)
        return handler(request)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a chat model for init_chat_model, e.g. openai:gpt-4o-mini")
    parser.add_argument("--path", help="memory directory (default: a temporary one)")
    args = parser.parse_args()

    memory, questions = demo_memory(args.path, namespace="alice")
    if args.model:
        from langchain.chat_models import init_chat_model

        model = init_chat_model(args.model)
    else:
        model = ScriptedChatModel(default=answer_from_memories)
    agent = create_agent(
        model,
        system_prompt="You are Alice's assistant. Answer briefly.",
        middleware=[
            RaMemMiddleware(memory, k=3, clock=lambda: datetime(2023, 11, 21, 9, 0)),
            ShowWhatTheModelSees(),
        ],
        context_schema=MemoryContext,
    )
    for q in questions[:3]:
        print(f"\nQ: {q['question']}")
        result = agent.invoke(
            {"messages": [("user", q["question"])]}, context=MemoryContext(user_id="alice")
        )
        print(f"A: {result['messages'][-1].text}")
    print(f"\nthe exchanges were recorded: {memory.count(namespace='alice')} memories in 'alice'")


if __name__ == "__main__":
    main()
