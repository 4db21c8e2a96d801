"""``ramem mcp`` as a separate process, driven by real clients: the Python SDK's
``ClientSession`` over stdio and over streamable HTTP with tokens, the TypeScript SDK's client,
and a LangChain agent through langchain-mcp-adapters (the server loads the real model)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
TS = ROOT / "tests" / "mcp" / "ts"
PY1 = ROOT / ".mcp-clients" / "py1"


def ramem() -> str:
    """The ``ramem`` console script of this environment."""
    script = Path(sys.executable).with_name("ramem")
    assert script.is_file(), f"no ramem script beside {sys.executable}: pip install -e ."
    return str(script)


@pytest.fixture(scope="session")
def clients() -> None:
    """The clients tests/mcp/install_clients.sh installs, installed when missing."""
    if not (TS / "node_modules").is_dir() or not PY1.is_dir():
        subprocess.run(
            ["bash", str(ROOT / "tests" / "mcp" / "install_clients.sh")],
            env={**os.environ, "PYTHON": sys.executable},
            capture_output=True,
            timeout=600,
            check=False,
        )


def structured(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


async def test_the_python_sdks_client_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=ramem(), args=["mcp", "--path", str(tmp_path), "--namespace", "py"]
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name for t in (await session.list_tools()).tools}
        assert tools == {"remember", "recall", "list", "show", "forget"}
        said = {"speaker": "user", "text": "I live in Lisbon", "at": "2024-04-10T09:00:00Z"}
        lisbon = structured(await session.call_tool("remember", said))
        moved = {"speaker": "user", "text": "I moved to Porto last week"}
        await session.call_tool("remember", {**moved, "at": "2024-05-28T09:00:00Z"})
        bad = await session.call_tool("remember", {**moved, "at": "28/05/2024"})
        assert bad.is_error
        assert "ISO 8601" in bad.content[0].text  # type: ignore[union-attr]

        now = structured(
            await session.call_tool(
                "recall", {"question": "Where do I live now?", "at": "2024-06-10T09:00:00Z"}
            )
        )
        assert "Porto" in now["memories"][0]["content"]
        assert now["memories"][0]["said_at"] == "2024-05-28T09:00:00Z"
        april = structured(
            await session.call_tool(
                "recall", {"question": "Where did I live in April?", "at": "2024-08-01T09:00:00Z"}
            )
        )
        assert april["memories"][0]["id"] == lisbon["id"]
        assert april["memories"][0]["said_at"] == "2024-04-10T09:00:00Z"
        page = structured(await session.call_tool("list", {}))
        assert len(page["memories"]) == 2  # the bad time stored nothing


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving_http(path: Path, host: str, *options: str, env: dict[str, str]) -> Iterator[str]:
    """``ramem mcp --http`` of the memory at ``path`` on a free port of ``host``; its URL."""
    port = free_port()
    command = [ramem(), "mcp", "--path", str(path), "--namespace", "me"]
    process = subprocess.Popen(
        [*command, "--http", f"{host}:{port}", *options],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://{host}:{port}/mcp"
    try:
        for _ in range(300):
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, "the server exited"
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """``ramem mcp --http`` on a free loopback port: the token of namespace "me" from the
    environment, and the tokens file binding another to namespace "bob"."""
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"bob-token-0123456789": "bob"}))
    with serving_http(
        tmp_path / "m",
        "127.0.0.1",
        "--tokens",
        str(tokens),
        env={"RAMEM_MCP_TOKEN": "me-token-0123456789"},
    ) as url:
        yield url


async def over_http(url: str, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    """One tool call over HTTP with ``token``, through a client with the timeouts the SDK
    gives its own clients (30 s, reads 300 s): a bare httpx client reads for 5 s at most, and
    a busy machine's first remember, which waits for the memory to open, took longer (its
    stream ended without a response, twice in full runs)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return structured(await session.call_tool(tool, arguments))


async def test_over_http_each_token_reads_its_own_namespace(http_server: str) -> None:
    refused = httpx.post(http_server, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert refused.status_code == 401
    wrong = httpx.post(
        http_server,
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Authorization": "Bearer not-the-token-at-all"},
    )
    assert wrong.status_code == 401

    said = {"speaker": "user", "text": "I live in Lisbon", "at": "2024-04-10T09:00:00Z"}
    await over_http(http_server, "me-token-0123456789", "remember", said)
    mine = await over_http(http_server, "me-token-0123456789", "list", {})
    bobs = await over_http(http_server, "bob-token-0123456789", "list", {})
    assert [m["content"] for m in mine["memories"]] == ["user: I live in Lisbon"]
    assert bobs["memories"] == []


def test_a_401_asks_for_a_bearer_token_and_names_no_authorization_server(
    http_server: str,
) -> None:
    refused = httpx.post(http_server, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert "resource_metadata" not in challenge  # no OAuth metadata of a server that is not
    root = http_server.removesuffix("/mcp")
    for well_known in ("oauth-protected-resource/mcp", "oauth-authorization-server"):
        assert httpx.get(f"{root}/.well-known/{well_known}").status_code == 404


PING = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize("host", ["127.0.0.2", "127.0.0.1"])
def test_every_loopback_address_refuses_another_sites_host_and_origin(
    tmp_path: Path, host: str
) -> None:
    """DNS rebinding: a page of evil.example whose name resolves to this machine's loopback
    reaches the server with its own Host and Origin. On 127.0.0.2 (loopback, so no token) the
    SDK's own guard, which knows only 127.0.0.1, localhost and ::1, let it store memories."""
    with serving_http(tmp_path, host, env={}) as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        evil = {**ACCEPT, "Host": f"evil.example:{port}", "Origin": "http://evil.example"}
        assert httpx.post(url, json=PING, headers=evil).status_code in (403, 421)
        spoofed = {**ACCEPT, "Origin": "http://evil.example"}
        assert httpx.post(url, json=PING, headers=spoofed).status_code == 403
        assert httpx.post(url, json=PING, headers=ACCEPT).status_code == 200  # its own Host


def test_off_the_loopback_it_refuses_to_start_without_a_token(tmp_path: Path) -> None:
    done = subprocess.run(
        [ramem(), "mcp", "--path", str(tmp_path), "--http", "0.0.0.0:8765"],
        env={k: v for k, v in os.environ.items() if k != "RAMEM_MCP_TOKEN"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "without a bearer token" in done.stderr
    assert not (tmp_path / "chroma.sqlite3").exists()  # refused before opening anything


@pytest.mark.usefixtures("clients")
def test_the_typescript_sdks_client(tmp_path: Path) -> None:
    if shutil.which("node") is None or not (TS / "node_modules").is_dir():
        pytest.skip("no Node or @modelcontextprotocol/sdk (npm unreachable): see install_clients")
    done = subprocess.run(
        ["node", str(TS / "client.mjs"), sys.executable, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    seen = json.loads(done.stdout)
    assert seen["server"]["name"] == "ramem"
    schemas = {t["name"]: t["inputSchema"] for t in seen["tools"]}
    assert schemas["remember"]["required"] == ["speaker", "text"]
    assert schemas["recall"]["required"] == ["question"]
    porto = seen["porto"]["structured"]
    assert porto["said_at"] == "2024-05-28T16:30:00Z"  # 18:30 at +02:00, stored as UTC
    assert seen["portoAgain"]["structured"]["id"] == porto["id"]  # the same key: stored once
    assert seen["badTime"]["isError"]
    assert "ISO 8601" in seen["badTime"]["text"]

    now = seen["now"]["structured"]
    assert now["frame"]["now"] == "2024-06-10T09:00:00Z"
    assert now["memories"][0]["id"] == porto["id"]  # the later statement read first
    assert any(m["id"] == seen["lisbon"]["structured"]["id"] for m in now["memories"])
    april = seen["april"]["structured"]
    assert april["memories"][0]["id"] == seen["lisbon"]["structured"]["id"]
    assert april["memories"][0]["said_at"] == "2024-04-10T09:00:00Z"
    assert len(seen["page"]["structured"]["memories"]) == 2


@pytest.mark.usefixtures("clients")
def test_a_langchain_agent_uses_ramem_through_langchain_mcp_adapters(tmp_path: Path) -> None:
    if not (PY1 / "langchain_mcp_adapters").is_dir():
        pytest.skip("langchain-mcp-adapters could not be installed: see install_clients")
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("lc_agent.py")), ramem(), str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(PY1)},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["tools"] == ["forget", "list", "recall", "remember", "show"]
    remembered, _, recalled = seen["results"]
    assert remembered["structured"]["said_at"] == "2024-04-10T09:00:00Z"
    assert recalled["status"] == "success"
    assert "Porto" in recalled["structured"]["memories"][0]["content"]
    # what the model read back: the memories with when they were said
    assert any("Asked on: Monday 10 June 2024" in text for text in seen["model_saw"])
    assert any("Porto" in text and "Lisbon" in text for text in seen["model_saw"])
    assert seen["answer"] == "You live in Porto."


def _stdio(path: Path, namespace: str = "me") -> StdioServerParameters:
    return StdioServerParameters(
        command=ramem(), args=["mcp", "--path", str(path), "--namespace", namespace]
    )


def _contents(result: Any) -> list[str]:
    return [m["content"] for m in structured(result)["memories"]]


async def test_two_hosts_on_one_memory_see_each_others_writes_and_outlive_the_owner(
    tmp_path: Path,
) -> None:
    """A desktop assistant and an editor started on one --path: both work, each reads what
    the other wrote, and when the owner's process is killed the other takes the memory over
    and keeps working."""
    from contextlib import AsyncExitStack

    said = {"speaker": "user", "at": "2024-04-10T09:00:00Z"}
    async with AsyncExitStack() as stack:
        sessions = []
        for text in ("I live in Lisbon", "My sister is called Ana"):
            read, write = await stack.enter_async_context(stdio_client(_stdio(tmp_path)))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            stored = await session.call_tool("remember", {**said, "text": text})
            assert not stored.is_error, stored.content
            sessions.append(session)
        _, second = sessions  # the first opened the memory: it owns it
        for session in sessions:
            assert sorted(_contents(await session.call_tool("list", {}))) == [
                "user: I live in Lisbon",
                "user: My sister is called Ana",
            ]
        ticket = tmp_path / ".ramem-mcp.json"
        assert ticket.stat().st_mode & 0o777 == 0o600  # its token: this user's only
        owner = json.loads(ticket.read_text())["pid"]
        os.kill(owner, signal.SIGKILL)

        found = await second.call_tool("recall", {"question": "Where do I live?"})
        assert "user: I live in Lisbon" in _contents(found)
        moved = await second.call_tool("remember", {**said, "text": "I moved to Porto"})
        assert not moved.is_error, moved.content
        assert "user: I moved to Porto" in _contents(await second.call_tool("list", {}))
        assert json.loads(ticket.read_text())["pid"] not in (owner, None)  # the second owns it


def test_print_config_prints_a_host_block_with_absolute_paths(tmp_path: Path) -> None:
    done = subprocess.run(
        [ramem(), "mcp", "--print-config", "--path", "memory", "--namespace", "work"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    entry = json.loads(done.stdout)["mcpServers"]["ramem"]
    assert entry["command"] == ramem()
    assert Path(entry["command"]).is_absolute()
    assert entry["args"] == ["mcp", "--path", str(tmp_path / "memory"), "--namespace", "work"]
    assert not (tmp_path / "memory").exists()  # printing opens nothing


def test_run_in_a_terminal_it_says_once_how_to_connect(tmp_path: Path) -> None:
    """stdin a terminal (a pseudo-terminal here): one note on stderr, then it waits."""
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [ramem(), "mcp", "--path", str(tmp_path)],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        time.sleep(3)
        assert process.poll() is None  # it waits for a client
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
        os.close(leader)
        os.close(follower)
    text = err.decode()
    assert text.count("speaks MCP over stdio") == 1
    assert "--print-config" in text
