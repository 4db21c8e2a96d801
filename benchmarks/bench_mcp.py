"""``ramem mcp`` as a host meets it: how soon it answers, and what many clients at once get.

From the repository root::

    python benchmarks/bench_mcp.py            # both parts
    python benchmarks/bench_mcp.py --part start --rounds 5
    python benchmarks/bench_mcp.py --part load --seconds 60 --clients 8

- ``start``: ``initialize`` answered, from the moment the process is spawned, by ``ramem mcp``
  and by a bare SDK ``MCPServer`` with one tool, launched alternately (the ratio is of the
  medians of one run); for ``ramem mcp`` also the first ``recall`` after it (the store opens
  and the model loads behind ``initialize``), and a second host's ``initialize`` and first
  ``recall`` on the same memory (a relay: it opens nothing).
- ``load``: ``ramem mcp --http`` on the loopback, ``--clients`` clients each storing a message
  (with an idempotency key) and recalling, for ``--seconds``; one hostile client sending a
  3,000,000-character id to ``show`` once a second; one probe calling ``list`` (one memory)
  every 0.2 s, from a process of its own. Reports acknowledged vs stored (every memory read
  back), the probe's latency (nothing should stall it past a second) and the clients' own
  ``remember`` and ``recall`` latencies; then the same load without the hostile client, for
  comparison.

Writes ``benchmarks/results/bench_mcp.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "bench_mcp.json"
RAMEM = str(Path(sys.executable).with_name("ramem"))
BARE = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("bare")


@server.tool()
def echo(text: str) -> str:
    return text


server.run("stdio")
"""


async def _timed_start(params: StdioServerParameters, then: list[tuple[str, dict]]) -> dict:
    """Seconds from spawn to ``initialize`` answered, then to each call of ``then``."""
    out: dict[str, float] = {}
    started = time.perf_counter()
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        out["initialize"] = time.perf_counter() - started
        for tool, arguments in then:
            began = time.perf_counter()
            result = await session.call_tool(tool, arguments)
            assert not result.is_error, result.content
            out[f"first {tool}"] = time.perf_counter() - began
    return out


async def _two_hosts(path: str) -> dict[str, float]:
    """The second host's initialize and first recall, while the first owns the memory."""
    ask = ("recall", {"question": "Where do I live?"})
    async with AsyncExitStack() as stack:
        params = StdioServerParameters(command=RAMEM, args=["mcp", "--path", path])
        read, write = await stack.enter_async_context(stdio_client(params))
        first = await stack.enter_async_context(ClientSession(read, write))
        await first.initialize()
        await first.call_tool(*ask)
        return await _timed_start(params, [ask])


def start(rounds: int) -> dict[str, Any]:
    times: dict[str, list[dict[str, float]]] = {"bare": [], "ramem": [], "second host": []}
    with tempfile.TemporaryDirectory() as tmp:
        bare_script = Path(tmp) / "bare.py"
        bare_script.write_text(BARE)
        bare = StdioServerParameters(command=sys.executable, args=[str(bare_script)])
        for n in range(rounds):
            path = str(Path(tmp) / f"m{n}")
            ramem = StdioServerParameters(command=RAMEM, args=["mcp", "--path", path])
            said = {"speaker": "user", "text": "I live in Lisbon", "at": "2024-04-10T09:00Z"}
            times["bare"].append(asyncio.run(_timed_start(bare, [])))
            times["ramem"].append(
                asyncio.run(
                    _timed_start(
                        ramem, [("recall", {"question": "Where do I live?"}), ("remember", said)]
                    )
                )
            )
            times["second host"].append(asyncio.run(_two_hosts(path)))
            print(f"  round {n + 1}/{rounds}: {times['ramem'][-1]}", flush=True)
    medians = {
        who: {key: round(statistics.median(r[key] for r in runs), 3) for key in runs[0]}
        for who, runs in times.items()
    }
    ratio = medians["ramem"]["initialize"] / medians["bare"]["initialize"]
    return {"rounds": rounds, "median_s": medians, "initialize_ratio": round(ratio, 3)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def _http_session(url: str) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with the server at ``url`` over streamable HTTP."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(timeout=120) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def _session_call(url: str, tool: str, arguments: dict) -> Any:
    async with _http_session(url) as session:
        return await session.call_tool(tool, arguments)


async def _load(url: str, seconds: float, clients: int, hostile_too: bool) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    acknowledged: list[str] = []
    failures: list[str] = []
    took: dict[str, list[float]] = {"remember": [], "recall": []}

    async def client(n: int) -> None:
        async with _http_session(url) as session:
            i = 0
            while time.monotonic() < deadline:
                key = f"c{n}-{i}"
                said = {"speaker": "user", "text": f"Note {key}: I met friend {i} today"}
                began = time.perf_counter()
                result = await session.call_tool("remember", {**said, "idempotency_key": key})
                took["remember"].append(time.perf_counter() - began)
                if result.is_error:
                    failures.append(str(result.content[0].text)[:80])  # type: ignore[union-attr]
                else:
                    acknowledged.append(key)
                began = time.perf_counter()
                found = await session.call_tool("recall", {"question": f"Whom did I meet {i}?"})
                took["recall"].append(time.perf_counter() - began)
                if found.is_error:
                    failures.append("recall")
                i += 1

    async def hostile() -> None:
        async with _http_session(url) as session:
            while time.monotonic() < deadline:
                await session.call_tool("show", {"id": "x" * 3_000_000})
                await asyncio.sleep(1)

    # the probe in a process of its own: what it waits is the server's, not this process's
    prober = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--probe",
        url,
        "--seconds",
        str(seconds),
        stdout=asyncio.subprocess.PIPE,
    )
    extra = [hostile()] if hostile_too else []
    await asyncio.gather(*(client(n) for n in range(clients)), *extra)
    out, _ = await prober.communicate()
    probe = json.loads(out.decode().strip().splitlines()[-1])
    return {"acknowledged": acknowledged, "failures": failures, "probe": probe, "took": took}


async def _probe(url: str, seconds: float) -> list[float]:
    """``list`` of one memory every 0.2 s for ``seconds``: each call's latency."""
    deadline = time.monotonic() + seconds
    latencies: list[float] = []
    async with _http_session(url) as session:
        while time.monotonic() < deadline:
            began = time.perf_counter()
            await session.call_tool("list", {"limit": 1})
            latencies.append(time.perf_counter() - began)
            await asyncio.sleep(0.2)
    return latencies


def load(seconds: float, clients: int, hostile: bool = True) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        port = _free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        server = subprocess.Popen(
            [RAMEM, "mcp", "--path", tmp, "--http", f"127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(600):
                try:
                    httpx.get(url, timeout=1)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            # the store opened, the model and the parser loaded before the clock starts (a
            # host's first remember waits for the parser: see the start part)
            asyncio.run(_session_call(url, "recall", {"question": "warm up"}))
            said = {"speaker": "user", "text": "Warming up: I read a book."}
            asyncio.run(_session_call(url, "remember", said))
            ran = asyncio.run(_load(url, seconds, clients, hostile))
            stored = 0
            after = None
            while True:  # every memory, read back page by page
                arguments = {"limit": 200, **({"after": after} if after else {})}
                page = asyncio.run(_session_call(url, "list", arguments)).structured_content
                stored += sum(m["content"].startswith("user: Note c") for m in page["memories"])
                after = page["next_after"]
                if after is None:
                    break
        finally:
            server.terminate()
            server.wait(timeout=60)
    calls = {  # the probe's list, then each client tool's
        f"{tool}_{name}_s": round(value, 3)
        for tool, took in {"probe": ran["probe"], **ran["took"]}.items()
        for name, value in _spread(took).items()
    }
    return {
        "seconds": seconds,
        "clients": clients,
        "hostile": hostile,
        "acknowledged": len(ran["acknowledged"]),
        "stored": stored,
        "lost": len(ran["acknowledged"]) - stored,
        "failures": ran["failures"][:5],
        "probe_calls": len(ran["probe"]),
        **calls,
    }


def _spread(values: list[float]) -> dict[str, float]:
    """p50, p95 and max of ``values``."""
    ordered = sorted(values) or [float("nan")]
    return {
        "p50": ordered[len(ordered) // 2],
        "p95": ordered[int(len(ordered) * 0.95) - (len(ordered) == 1)],
        "max": ordered[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["start", "load", "both"], default="both")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--no-hostile", action="store_true", help="without the 3 MB ids")
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--probe", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:  # the load's probe process
        print(json.dumps(asyncio.run(_probe(args.probe, args.seconds))))
        return
    result: dict[str, Any] = {
        "command": "python " + " ".join(["benchmarks/bench_mcp.py", *sys.argv[1:]])
    }
    result["cpus"] = os.cpu_count()
    if args.part in ("start", "both"):
        print("start:", flush=True)
        result["start"] = start(args.rounds)
        print(json.dumps(result["start"], indent=1))
    if args.part in ("load", "both"):
        print(f"load: {args.clients} clients for {args.seconds:.0f} s", flush=True)
        result["load"] = load(args.seconds, args.clients, not args.no_hostile)
        print(json.dumps(result["load"], indent=1))
        if not args.no_hostile:  # the same load without the hostile client, side by side
            print("load without the hostile client", flush=True)
            result["load_without_hostile"] = load(args.seconds, args.clients, False)
            print(json.dumps(result["load_without_hostile"], indent=1))
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
