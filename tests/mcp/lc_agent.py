"""A LangChain agent that uses ``ramem mcp`` through langchain-mcp-adapters, with a scripted
chat model; prints what it saw as JSON. Run by tests/mcp/test_clients.py with the adapters and
the MCP SDK 1.x they require first on PYTHONPATH (the server runs with its own SDK 2.x).

Usage: python lc_agent.py RAMEM_COMMAND MEMORY_DIR
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient

from langchain_ramem.testing import ScriptedChatModel


def call(name: str, n: int, **args: object) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{n}"}])


async def main(command: str, path: str) -> None:
    server_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the server's SDK
    client = MultiServerMCPClient(
        {
            "ramem": {
                "transport": "stdio",
                "command": command,
                "args": ["mcp", "--path", path, "--namespace", "agent"],
                "env": server_env,
            }
        }
    )
    tools = await client.get_tools()
    model = ScriptedChatModel(
        replies=[
            call("remember", 1, speaker="user", text="I live in Lisbon", at="2024-04-10T09:00Z"),
            call(
                "remember",
                2,
                speaker="user",
                text="I moved to Porto last week",
                at="2024-05-28T09:00Z",
            ),
            call("recall", 3, question="Where do I live now?", at="2024-06-10T09:00Z"),
            "You live in Porto.",
        ]
    )
    agent = create_agent(model, tools=tools)
    state = await agent.ainvoke({"messages": [{"role": "user", "content": "Where do I live?"}]})
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    out = {
        "tools": sorted(t.name for t in tools),
        "results": [
            {
                "name": m.name,
                "status": m.status,
                "text": m.text,
                "structured": (m.artifact or {}).get("structured_content"),
            }
            for m in results
        ],
        "answer": state["messages"][-1].content,
        "model_saw": [str(m.content)[:2000] for m in model.calls[-1]],
    }
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
