"""RaMem as a LangGraph store: ``create_agent(..., store=RaMemStore(memory))``, memories saved and
searched through ``runtime.store``, the way LangChain's docs build long-term memory.

Offline by default (a scripted model that calls the tools); pass a real model with
``--model openai:gpt-4o-mini`` (needs langchain-openai and a key).

    python examples/langgraph_store.py
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.messages import AIMessage

from langchain_ramem import RaMemStore
from langchain_ramem.testing import ScriptedChatModel
from ramem_core import RaMem


@tool
def save_memory(fact: str, runtime: ToolRuntime) -> str:
    """Save a fact the user told you, to remember it in later conversations."""
    assert runtime.store is not None
    user = runtime.config["configurable"]["user_id"]
    key = f"fact-{len(runtime.store.search(('memories', user), limit=1000))}"
    runtime.store.put(("memories", user), key, {"content": fact})
    return f"saved {key}"


@tool
def search_memory(query: str, runtime: ToolRuntime) -> str:
    """Search what the user told you before."""
    assert runtime.store is not None
    user = runtime.config["configurable"]["user_id"]
    found = runtime.store.search(("memories", user), query=query, limit=3)
    return "\n".join(f"[{i.score:.2f}] {i.value['content']}" for i in found) or "nothing"


def scripted() -> ScriptedChatModel:
    """Calls save_memory twice, then search_memory, then answers with the best memory."""

    def call(name: str, args: dict[str, str], n: int) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{n}"}])

    return ScriptedChatModel(
        replies=[
            call("save_memory", {"fact": "I moved to Lisbon last March."}, 1),
            "Noted.",
            call("save_memory", {"fact": "My sister Jo visited me in Lisbon yesterday."}, 2),
            "Noted.",
            call("search_memory", {"query": "Who visited me in Lisbon?"}, 3),
            lambda messages: f"From memory: {messages[-1].content.splitlines()[0]}",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a chat model for init_chat_model, e.g. openai:gpt-4o-mini")
    parser.add_argument("--path", help="memory directory (default: a temporary one)")
    args = parser.parse_args()
    directory = Path(args.path) if args.path else Path(tempfile.mkdtemp(prefix="ramem-example-"))
    memory = RaMem.open(directory)
    atexit.register(memory.close)
    if not args.path:
        atexit.register(shutil.rmtree, directory, True)
    days = iter([datetime(2024, 5, 2, 9), datetime(2024, 6, 10, 18)])
    store = RaMemStore(
        memory, clock=lambda: next(days, datetime(2024, 6, 10, 18))
    )  # fixed write times for the demo
    if args.model:
        from langchain.chat_models import init_chat_model

        model = init_chat_model(args.model)
    else:
        model = scripted()
    agent = create_agent(model, tools=[save_memory, search_memory], store=store)
    config = {"configurable": {"user_id": "alice", "thread_id": "chat-1"}}
    for message in [
        "Remember: I moved to Lisbon last March.",
        "Also, my sister Jo visited me in Lisbon yesterday.",
        "Who visited me in Lisbon?",
    ]:
        result = agent.invoke({"messages": [("user", message)]}, config=config)  # type: ignore[arg-type]
        print(f"user: {message}\nagent: {result['messages'][-1].text}\n")
    print("stored items, with the episode RaMem gave each:")
    for item in store.search(("memories", "alice")):
        unit = store.memory_of(("memories", "alice"), item.key)
        assert unit is not None
        event = unit.context.event_time
        print(
            f"  {item.key}: {item.value['content']!r} | thread {unit.context.conversation_id}"
            f" | event {event.start:%d %B %Y} to {event.end:%d %B %Y}"
            if event
            else f"  {item.key}: {item.value['content']!r} | no event time"
        )
    print(f"namespaces: {store.list_namespaces()}")


if __name__ == "__main__":
    main()
