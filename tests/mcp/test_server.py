"""``ramem mcp``'s tools and resources through the MCP SDK's own client, in process."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import numpy as np
import numpy.typing as npt
import pytest
from mcp import Client

from ramem_core import ChromaStore, RaMem
from ramem_core.errors import InvalidInputError
from ramem_core.testing import HashEmbedder, WordCounter
from ramem_mcp import build_server
from ramem_mcp.serving import Address, check_tokens

NOW = datetime(2024, 6, 10, 9, 0)


@asynccontextmanager
async def served(memory: RaMem) -> AsyncIterator[Client]:
    """The SDK's client, connected in process to a server over ``memory`` (namespace "me")."""
    async with Client(build_server(memory, namespace="me", clock=lambda: NOW)) as connected:
        yield connected


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return str(result.content[0].text)  # type: ignore[union-attr]


async def lisbon_then_porto(client: Client) -> None:
    await call(client, "remember", speaker="user", text="I live in Lisbon", at="2024-04-10T10:00Z")
    await call(
        client,
        "remember",
        speaker="user",
        text="I moved to Porto last week",
        at="2024-05-28T12:00:00+02:00",  # an offset: stored as 10:00 UTC
    )


async def test_the_tools_and_their_schemas(memory: RaMem) -> None:
    async with served(memory) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == ["forget", "list", "recall", "remember", "show"]
        remember = tools["remember"].input_schema
        assert remember["required"] == ["speaker", "text"]
        assert set(remember["properties"]) == {"speaker", "text", "at", "idempotency_key"}
        recall = tools["recall"].input_schema
        assert recall["required"] == ["question"]
        assert recall["properties"]["k"]["type"] == "integer"
        assert recall["properties"]["k"]["minimum"] == 1
        assert {"type": "string", "maxLength": 64} in remember["properties"]["at"]["anyOf"]
        assert set(tools["list"].input_schema["properties"]) == {"limit", "after", "session_id"}
        for name in ("show", "forget"):
            assert tools[name].input_schema["required"] == ["id"]
        # structured results: the schema a client validates them by
        found = tools["recall"].output_schema
        assert found is not None
        assert set(found["properties"]) == {"frame", "memories"}
        assert "superseded" in found["$defs"]["Found"]["properties"]
        for tool in tools.values():  # written for a model: what it returns, when to call it
            assert tool.description is not None
            assert len(tool.description) > 40
        assert tools["forget"].annotations is not None
        assert tools["forget"].annotations.destructive_hint is True


async def test_recall_reads_the_moment_of_asking(memory: RaMem) -> None:
    async with served(memory) as client:
        await lisbon_then_porto(client)
        now = await call(client, "recall", question="Where do I live now?", at="2024-06-10T09:00Z")
        found = now.structured_content
        assert found["frame"]["now"] == "2024-06-10T09:00:00Z"
        first, second = found["memories"][:2]
        assert "Porto" in first["content"]
        assert first["said_at"] == "2024-05-28T10:00:00Z"
        assert first["event_start"] == "2024-05-20T00:00:00Z"  # "last week", read against 28 May
        assert "Lisbon" in second["content"]
        assert second["superseded"]["by"] == first["id"]
        text = now.content[0].text
        assert text.startswith("Asked on: Monday 10 June 2024")
        assert "superseded" in text  # the model reads why Lisbon no longer holds

        april = await call(client, "recall", question="Where did I live in April?", at="2024-08-01")
        found = april.structured_content
        assert found["frame"]["now"] == "2024-08-01T00:00:00Z"
        assert [t["grounded"] for t in found["frame"]["times"]] == [True]
        assert "Lisbon" in found["memories"][0]["content"]
        assert found["memories"][0]["said_at"] == "2024-04-10T10:00:00Z"
        assert memory.count(namespace="me") == 2


async def test_without_at_now_is_the_servers_clock(memory: RaMem) -> None:
    async with served(memory) as client:
        stored = await call(client, "remember", speaker="user", text="I adopted a cat yesterday")
        assert stored.structured_content["said_at"] == NOW.isoformat() + "Z"
        shown = await call(client, "show", id=stored.structured_content["id"])
        assert shown.structured_content["event_start"] == "2024-06-09T00:00:00Z"
        found = await call(client, "recall", question="Did I adopt a pet?")
        assert found.structured_content["frame"]["now"] == NOW.isoformat() + "Z"


async def test_a_retry_with_the_same_key_stores_once(memory: RaMem) -> None:
    async with served(memory) as client:
        said = {"speaker": "user", "text": "My sister is called Ana", "at": "2024-05-01T08:00Z"}
        first = await call(client, "remember", **said, idempotency_key="msg-7")
        again = await call(client, "remember", **said, idempotency_key="msg-7")
        assert again.structured_content["id"] == first.structured_content["id"]
        assert memory.count(namespace="me") == 1
        await call(client, "remember", **said, idempotency_key="msg-8")
        assert memory.count(namespace="me") == 2


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"at": "next Tuesday"}, "ISO 8601"),
        ({"at": "2024-13-01T00:00"}, "ISO 8601"),
        ({"at": "1200-01-01T00:00"}, "lies outside"),
        ({"text": ""}, "text"),
        ({"speaker": "two\nlines"}, "speaker"),
        ({"text": 42}, "text"),
        ({"idempotency_key": ""}, "idempotency_key"),
    ],
)
async def test_a_bad_remember_is_refused_and_stores_nothing(
    memory: RaMem, arguments: dict[str, Any], message: str
) -> None:
    async with served(memory) as client:
        await call(client, "remember", speaker="user", text="I live in Lisbon", at="2024-04-10")
        said = {"speaker": "user", "text": "I moved to Porto", **arguments}
        assert message in await refused(client, "remember", **said)
        assert memory.count(namespace="me") == 1


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("recall", {"question": "Where?", "at": "yesterday"}, "ISO 8601"),
        ("recall", {"question": "", "at": "2024-06-10"}, "question"),
        ("recall", {"question": "Where?", "k": 0}, "k"),
        ("list", {"limit": 0}, "limit"),
        ("list", {"after": "no-such-id"}, "no-such-id"),
        ("show", {"id": "no-such-id"}, "no memory with id 'no-such-id'"),
        ("forget", {"id": "no-such-id"}, "no memory with id 'no-such-id'"),
    ],
)
async def test_bad_arguments_get_a_tool_error_naming_the_problem(
    memory: RaMem, tool: str, arguments: dict[str, Any], message: str
) -> None:
    async with served(memory) as client:
        await call(client, "remember", speaker="user", text="I live in Lisbon", at="2024-04-10")
        assert message in await refused(client, tool, **arguments)


async def test_list_pages_newest_first_show_and_forget(memory: RaMem) -> None:
    async with served(memory) as client:
        for day, text in enumerate(["I live in Lisbon", "I like figs", "I run on Sundays"], 1):
            await call(client, "remember", speaker="user", text=text, at=f"2024-04-0{day}T10:00Z")
        page = (await call(client, "list", limit=2)).structured_content
        assert [m["content"] for m in page["memories"]] == [
            "user: I run on Sundays",
            "user: I like figs",
        ]
        rest = (await call(client, "list", limit=2, after=page["next_after"])).structured_content
        assert [m["content"] for m in rest["memories"]] == ["user: I live in Lisbon"]
        assert rest["next_after"] is None

        figs = page["memories"][1]["id"]
        shown = await call(client, "show", id=figs)
        assert shown.structured_content["said_at"] == "2024-04-02T10:00:00Z"
        assert figs in shown.content[0].text
        gone = await call(client, "forget", id=figs)
        assert gone.structured_content == {"id": figs, "deleted": 1}
        assert memory.count(namespace="me") == 2
        assert "no memory" in await refused(client, "forget", id=figs)  # gone for good


async def test_the_namespaces_memories_are_resources(memory: RaMem) -> None:
    async with served(memory) as client:
        await lisbon_then_porto(client)
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        assert listed == ["ramem://memories"]
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["ramem://memories/{memory_id}"]
        read = await client.read_resource("ramem://memories")
        memories = json.loads(read.contents[0].text)  # type: ignore[union-attr]
        assert [m["content"] for m in memories] == [
            "user: I moved to Porto last week",
            "user: I live in Lisbon",
        ]
        one = await client.read_resource(f"ramem://memories/{memories[1]['id']}")
        assert json.loads(one.contents[0].text)["said_at"] == "2024-04-10T10:00:00Z"  # type: ignore[union-attr]


async def test_only_the_servers_namespace_is_served(memory: RaMem) -> None:
    from datetime import datetime as dt

    memory.add_turn("user", "I live in Oslo", at=dt(2024, 1, 1), namespace="other")
    async with Client(build_server(memory, namespace="me")) as client:
        page = (await call(client, "list")).structured_content
    assert page["memories"] == []


@pytest.mark.parametrize(
    ("address", "tokens", "loopback"),
    [
        ("127.0.0.1:8765", {}, True),
        ("localhost:8765", {}, True),
        ("[::1]:8765", {}, True),
        ("0.0.0.0:8765", {"a-long-enough-token-1": "me"}, False),
    ],
)
def test_tokens_are_needed_off_the_loopback(
    address: str, tokens: dict[str, str], loopback: bool
) -> None:
    parsed = Address.parse(address)
    assert parsed.loopback is loopback
    check_tokens(parsed, tokens)
    if not loopback:
        with pytest.raises(InvalidInputError, match="without a bearer token"):
            check_tokens(parsed, {})


@pytest.mark.parametrize("text", ["8765", "host:", "host:0", "host:70000", "host:80a"])
def test_a_bad_address_is_refused(text: str) -> None:
    with pytest.raises(InvalidInputError, match="HOST:PORT"):
        Address.parse(text)


def test_a_short_token_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="16"):
        check_tokens(Address.parse("127.0.0.1:1"), {"short": "me"})


async def test_each_recalled_message_keeps_its_own_said_time(memory: RaMem) -> None:
    """Three messages of one session (minutes apart): each is recalled with its own time, in
    the structured result and in the text the model reads, not the session's start or end."""
    said = {"09:00": "I had coffee with Ana", "09:40": "I bought running shoes"}
    said["10:30"] = "I booked a flight to Rome"
    async with served(memory) as client:
        for at, text in said.items():
            await call(client, "remember", speaker="user", text=text, at=f"2024-03-01T{at}Z")
        found = await call(client, "recall", question="What did I do?", at="2024-03-02T09:00Z")
    by_text = {m["content"]: m["said_at"] for m in found.structured_content["memories"]}
    assert by_text == {f"user: {t}": f"2024-03-01T{at}:00Z" for at, t in said.items()}
    for at in said:
        assert f'said="1 March 2024, {at}"' in found.content[0].text


async def test_forget_deletes_every_piece_of_a_long_message(memory: RaMem) -> None:
    long = " ".join(
        f"Sentence {i} of a long note about my allergy to penicillin." for i in range(60)
    )
    async with served(memory) as client:
        await call(client, "remember", speaker="user", text="I live in Lisbon", at="2024-04-01")
        stored = await call(client, "remember", speaker="user", text=long, at="2024-04-02")
        ids = stored.structured_content["ids"]
        assert len(ids) > 1
        assert ids[0] == stored.structured_content["id"]
        assert memory.count(namespace="me") == 1 + len(ids)
        gone = await call(client, "forget", id=stored.structured_content["id"])
        assert gone.structured_content["deleted"] == len(ids)
        assert memory.count(namespace="me") == 1  # only Lisbon is left
        found = await call(client, "recall", question="Am I allergic to anything?")
        assert all("penicillin" not in m["content"] for m in found.structured_content["memories"])


async def test_a_full_last_page_says_there_is_no_next_one(memory: RaMem) -> None:
    async with served(memory) as client:
        for day in (1, 2):
            await call(client, "remember", speaker="user", text=f"Note {day}", at=f"2024-04-0{day}")
        page = (await call(client, "list", limit=2)).structured_content
        assert len(page["memories"]) == 2
        assert page["next_after"] is None
        first = (await call(client, "list", limit=1)).structured_content
        assert first["next_after"] == first["memories"][0]["id"]


async def test_remembering_a_short_message_reads_no_session(memory: RaMem) -> None:
    """Only a message stored in pieces needs its session read to name every piece."""
    reads: list[dict[str, Any]] = []
    get = memory.store.get

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(kwargs)
        return get(*args, **kwargs)

    memory.store.get = counted  # type: ignore[method-assign]
    async with served(memory) as client:
        said = {"speaker": "user", "text": "I  live in\nLisbon.", "at": "2024-04-10"}
        stored = (await call(client, "remember", **said)).structured_content
    assert stored["ids"] == [stored["id"]]
    assert [r for r in reads if "session_id" in r] == []


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("recall", {"question": "Where?", "namespace": "theirs"}, "takes no argument 'namespace'"),
        ("remember", {"speaker": "u", "text": "Hi", "user_id": "7"}, "no argument 'user_id'"),
        ("recall", {"question": "Where?", "k": True}, "k must be an integer, got True"),
        ("recall", {"question": "Where?", "k": "5"}, "k must be an integer, got '5'"),
        ("recall", {"question": "Where?", "k": 5.0}, "k must be an integer, got 5.0"),
        ("recall", {"question": "Where?", "at": "2024-06-10\x00"}, "no control characters"),
        ("recall", {"question": "Where?", "at": "0001-01-01T00:00+05:00"}, "outside 1900-2200"),
        ("recall", {"k": 3}, "recall needs the argument 'question'"),
    ],
)
async def test_arguments_are_read_strictly_and_refused_in_one_sentence(
    memory: RaMem, tool: str, arguments: dict[str, Any], message: str
) -> None:
    async with served(memory) as client:
        text = await refused(client, tool, **arguments)
    assert message in text
    assert "pydantic" not in text
    assert "\n" not in text
    assert memory.count(namespace="me") == 0


@pytest.mark.parametrize(
    ("tool", "argument"),
    [("show", "id"), ("forget", "id"), ("list", "after"), ("list", "session_id")],
)
async def test_an_overlong_value_is_refused_before_any_work_and_not_echoed(
    memory: RaMem, tool: str, argument: str
) -> None:
    async with served(memory) as client:
        text = await refused(client, tool, **{argument: "x" * 1_000_000})
    assert f"{argument} is too long: at most 200 characters" in text
    assert len(text) < 200


async def test_a_remember_past_the_cap_is_refused_saying_to_split_it(memory: RaMem) -> None:
    async with served(memory) as client:
        text = await refused(client, "remember", speaker="user", text="word " * 20_001)
        assert "split it" in text
        assert "100,000" in text
        assert len(text) < 300
        await call(client, "remember", speaker="user", text="word " * 19_999)  # under the cap
    assert memory.count(namespace="me") > 0


async def test_the_schemas_refuse_unknown_arguments(memory: RaMem) -> None:
    async with served(memory) as client:
        tools = (await client.list_tools()).tools
    assert all(t.input_schema.get("additionalProperties") is False for t in tools)


async def test_an_unknown_resource_is_not_found(memory: RaMem) -> None:
    from mcp.shared.exceptions import MCPError

    async with served(memory) as client:
        uris = [f"ramem://memories/{'x' * n}" for n in (10, 201, 100_000)]
        for uri in ["ramem://memories/no-such-id", *uris]:
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
            assert caught.value.error.code == -32602  # not found, not an internal error
            assert len(caught.value.error.message) < 200


async def test_one_key_makes_an_id_per_namespace(memory: RaMem) -> None:
    said = {"speaker": "user", "text": "I like figs", "idempotency_key": "k1"}
    async with Client(build_server(memory, namespace="a")) as one:
        a = (await call(one, "remember", **said)).structured_content["id"]
    async with Client(build_server(memory, namespace="b")) as two:
        b = (await call(two, "remember", **said)).structured_content["id"]
    assert a != b


class _GatedEmbedder(HashEmbedder):
    """Holds an embedding of a text holding ``GATED`` until ``release`` is set."""

    GATED = "zebra"

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if any(self.GATED in t for t in texts):
            self.entered.set()
            self.release.wait(10)
        return super().embed(texts)


async def test_a_cancelled_remember_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that cancels a remember (the SDK sends ``notifications/cancelled``) while it
    is embedded gets its answer at once, and the message is not stored after all."""
    gated = _GatedEmbedder()
    memory = RaMem(ChromaStore.persistent(tmp_path / "db", gated), counter=WordCounter())
    ended = threading.Event()
    add_turn = memory.add_turn

    def watched(*args: Any, **kwargs: Any) -> Any:
        try:
            return add_turn(*args, **kwargs)
        finally:
            ended.set()

    monkeypatch.setattr(memory, "add_turn", watched)
    async with served(memory) as client:
        with anyio.move_on_after(30) as waited:
            async with anyio.create_task_group() as group:

                async def remember() -> None:
                    await client.call_tool("remember", {"speaker": "user", "text": "I saw a zebra"})

                group.start_soon(remember)
                await anyio.to_thread.run_sync(gated.entered.wait, 10)
                group.cancel_scope.cancel()  # the client gives up on the call
        assert not waited.cancelled_caught
        gated.release.set()
        assert await anyio.to_thread.run_sync(ended.wait, 10)
        await call(client, "remember", speaker="user", text="I saw a giraffe")
        listed = await call(client, "list")
        contents = [m["content"] for m in listed.structured_content["memories"]]
    assert contents == ["user: I saw a giraffe"]
    memory.close()


class _CountedEmbedder(_GatedEmbedder):
    """A :class:`_GatedEmbedder` that counts the embeddings of gated texts under way."""

    def __init__(self) -> None:
        super().__init__()
        self._count = threading.Lock()
        self.inside = 0
        self.most = 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        gated = any(self.GATED in t for t in texts)
        if gated:
            with self._count:
                self.inside += 1
                self.most = max(self.most, self.inside)
        try:
            return super().embed(texts)
        finally:
            if gated:
                with self._count:
                    self.inside -= 1


async def test_remembers_take_turns_and_list_waits_for_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Remembers compute one at a time (BUSY_CALLS=1); those that wait hold no worker
    thread, so a list answers while the pool's every thread would otherwise be taken."""
    from ramem_mcp import server as module

    monkeypatch.setattr(module, "BUSY_CALLS", 1)
    counted = _CountedEmbedder()
    memory = RaMem(ChromaStore.persistent(tmp_path / "db", counted), counter=WordCounter())
    pool = anyio.to_thread.current_default_thread_limiter()
    tokens = pool.total_tokens
    pool.total_tokens = 2  # one call computing and one waiting would take them both
    try:
        async with served(memory) as client, anyio.create_task_group() as group:

            async def remember(text: str) -> None:
                await call(client, "remember", speaker="user", text=text)

            for animal in ("zebra", "zebra foal", "zebra herd"):
                group.start_soon(remember, f"I saw a {animal}")
            assert await anyio.to_thread.run_sync(counted.entered.wait, 10)
            with anyio.fail_after(10):
                listed = await call(client, "list")
            assert listed.structured_content["memories"] == []
            await anyio.sleep(0.3)  # time for a second remember to start, were it let in
            assert counted.most == 1
            counted.release.set()
    finally:
        pool.total_tokens = tokens
        counted.release.set()
    assert memory.count(namespace="me") == 3
    memory.close()


@pytest.mark.parametrize("tool", ["remember", "recall"])
def test_calls_relayed_by_threads_take_turns(
    tool: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner of a shared memory runs each relayed call in a thread of its own: the
    tools' own gate keeps those to one at a time too."""
    from ramem_mcp import server as module

    monkeypatch.setattr(module, "BUSY_CALLS", 1)
    counted = _CountedEmbedder()
    memory = RaMem(ChromaStore.persistent(tmp_path / "db", counted), counter=WordCounter())
    tools = module.Tools(memory, "me")
    tools.remember("user", "I saw a lion")
    calls = {
        "remember": lambda n: tools.remember("user", f"I saw a zebra {n}"),
        "recall": lambda n: tools.recall(f"Did I see a zebra {n}?"),
    }
    threads = [threading.Thread(target=calls[tool], args=(n,)) for n in range(3)]
    try:
        for thread in threads:
            thread.start()
        assert counted.entered.wait(10)
        threading.Event().wait(0.3)  # time for a second call to start, were it let in
        assert counted.most == 1
    finally:
        counted.release.set()
        for thread in threads:
            thread.join(10)
    assert not any(thread.is_alive() for thread in threads)
    assert memory.count(namespace="me") == (4 if tool == "remember" else 1)
    memory.close()


async def test_a_long_remember_takes_a_lane_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pasted document (longer than LONG_TEXT_CHARS) never holds the short calls' turn: a
    short remember is stored while the long one is still being embedded."""
    from ramem_mcp import server as module

    monkeypatch.setattr(module, "BUSY_CALLS", 1)
    counted = _CountedEmbedder()
    memory = RaMem(ChromaStore.persistent(tmp_path / "db", counted), counter=WordCounter())
    long_text = "I saw a zebra at the park. " * (module.LONG_TEXT_CHARS // 20)
    try:
        async with served(memory) as client, anyio.create_task_group() as group:

            async def paste() -> None:
                await call(client, "remember", speaker="user", text=long_text)

            group.start_soon(paste)
            assert await anyio.to_thread.run_sync(counted.entered.wait, 10)
            with anyio.fail_after(10):
                await call(client, "remember", speaker="user", text="I had tea")
                found = await call(client, "recall", question="What did I drink?")
            assert "tea" in found.structured_content["memories"][0]["content"]
            counted.release.set()
    finally:
        counted.release.set()
    memory.close()


def test_a_recall_whose_request_was_cancelled_is_not_made(
    memory: RaMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recall that waited for its turn after its client gave up does no work."""
    from mcp.server.mcpserver.exceptions import ToolError

    from ramem_mcp import server as module

    made: list[str] = []
    monkeypatch.setattr(memory, "recall", lambda *a, **k: made.append("recall"))
    token = module.CANCELLED.set(lambda: True)
    try:
        with pytest.raises(ToolError, match="cancelled"):
            module.Tools(memory, "me").recall("Where do I live?")
    finally:
        module.CANCELLED.reset(token)
    assert made == []


def test_the_first_remember_loads_the_parser_before_its_turn(
    memory: RaMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parser's load (seconds) happens outside the turns, so no other call waits for it."""
    from ramem_mcp import server as module

    monkeypatch.setattr(module, "BUSY_CALLS", 1)
    tools = module.Tools(memory, "me")
    free: list[bool] = []

    def warm(_memory: RaMem) -> None:
        took = tools.busy.acquire(blocking=False)
        free.append(took)
        if took:
            tools.busy.release()

    monkeypatch.setattr(module, "warm", warm)
    tools.remember("user", "I moved to Porto")
    tools.remember("user", "I like figs")
    assert free == [True]  # once, and with the turn free


async def test_the_anchor_of_after_x_is_marked_for_the_model(memory: RaMem) -> None:
    async with served(memory) as client:
        for at, text in (
            ("2024-03-01T10:00Z", "I started a new pottery class on Tuesdays."),
            ("2024-03-10T18:00Z", "I went to the hospital today for my knee."),
            ("2024-03-15T19:00Z", "I went to the cinema with Dana and saw a thriller."),
        ):
            await call(client, "remember", speaker="user", text=text, at=at)
        found = await call(
            client, "recall", question="What did I do after the hospital visit?", at="2024-03-25"
        )
        memories = found.structured_content["memories"]
        assert "cinema" in memories[0]["content"]
        visit = next(m for m in memories if "hospital" in m["content"])
        assert visit["anchor_of"] == "after the hospital visit"
        assert all(m["anchor_of"] is None for m in memories if m is not visit)
        assert "anchor: the point 'after the hospital visit' is measured from" in (
            found.content[0].text
        )
