"""Several hosts on one memory (:mod:`ramem_mcp.sharing`), in process: the owner serves its
tools on a loopback port to whoever holds its token; a relay passes calls with its namespace;
a held directory is found without opening the store."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from mcp import Client

from ramem_core import RaMem
from ramem_core.errors import MemoryInUseError
from ramem_core.store.chroma import held_elsewhere
from ramem_mcp import build_server
from ramem_mcp.server import Tools
from ramem_mcp.sharing import TICKET, Owner, Shared, Ticket, _ask

NOW = datetime(2024, 6, 10, 9, 0)


def _owner(memory: RaMem, directory: Path) -> Owner:
    return Owner(Tools(memory, "me", clock=lambda: NOW), directory).start()


def test_the_owner_answers_its_token_only(memory: RaMem, tmp_path: Path) -> None:
    owner = _owner(memory, tmp_path)
    try:
        ticket = Ticket.read(tmp_path)
        assert ticket is not None
        assert ticket == owner.ticket
        assert (tmp_path / TICKET).stat().st_mode & 0o777 == 0o600
        said = {"speaker": "user", "text": "I live in Lisbon", "at": "2024-04-10T09:00Z"}
        request = {"call": "tool", "name": "remember", "arguments": said, "namespace": "b"}
        forged = Ticket(ticket.pid, ticket.port, "not-the-token")
        assert _ask(forged, request) == {"error": "wrong token", "kind": "auth"}
        assert memory.count(namespace="b") == 0  # nothing stored for a wrong token
        stored = _ask(ticket, request)
        assert stored["result"]["structuredContent"]["said_at"] == "2024-04-10T09:00:00Z"
        assert memory.count(namespace="b") == 1  # the relay's namespace, not the owner's
        assert memory.count(namespace="me") == 0
    finally:
        owner.close()
    assert not (tmp_path / TICKET).exists()  # an owner that closes takes its ticket along


def _held(_: object = None) -> RaMem:
    raise MemoryInUseError("held")


async def test_a_relay_passes_each_call_with_its_namespace(memory: RaMem, tmp_path: Path) -> None:
    owner = _owner(memory, tmp_path)
    relay = Shared(tmp_path, _held, lambda m: Tools(m, "x"))
    try:
        async with Client(build_server(relay, namespace="alice")) as client:
            said = {"speaker": "user", "text": "I live in Lisbon", "at": "2024-04-10T09:00Z"}
            stored = await client.call_tool("remember", said)
            assert not stored.is_error, stored.content
            found = await client.call_tool("recall", {"question": "Where do I live?"})
            assert "Lisbon" in found.structured_content["memories"][0]["content"]
            missing = await client.call_tool("show", {"id": "no-such-id"})
            assert missing.is_error
            assert "no memory with id 'no-such-id' in namespace 'alice'" in str(missing.content)
        assert relay.role == "relay"
        assert memory.count(namespace="alice") == 1
    finally:
        owner.close()
        relay.close()


def test_a_held_directory_is_found_without_opening_the_store(tmp_path: Path) -> None:
    assert not held_elsewhere(tmp_path)  # nothing there yet
    with RaMem.open(tmp_path):
        assert held_elsewhere(tmp_path)
    assert not held_elsewhere(tmp_path)  # let go with the memory


def test_a_directory_held_by_a_process_that_serves_no_one_is_said_so(tmp_path: Path) -> None:
    import ramem_mcp.sharing as sharing

    relay = Shared(tmp_path, _held, lambda m: Tools(m, "x"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sharing, "NEW_OWNER_WAIT", 0.2)
        relay.start()
        with pytest.raises(Exception, match="serves no other host"):
            relay.call("tool", "list", {}, "me")


def test_a_relay_owns_the_memory_when_the_dead_owners_lock_goes_after_its_port(
    memory: RaMem, tmp_path: Path
) -> None:
    """A killed owner's port closes a moment before its lock is let go: the relay that finds
    the lock still held must try again, not wait for a ticket nobody will write."""
    import ramem_mcp.sharing as sharing

    stale = Ticket(999_999_999, 1, "dead")  # a pid no process has
    stale.write(tmp_path)
    looks = iter([True, True])  # held at the first two looks, then let go
    relay = Shared(tmp_path, lambda: memory, lambda m: Tools(m, "me", clock=lambda: NOW))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sharing, "held_elsewhere", lambda _: next(looks, False))
        patch.setattr(sharing, "NEW_OWNER_WAIT", 5.0)
        relay.start()
        listed = relay.call("tool", "list", {}, "me")
    try:
        assert not listed.is_error
        assert relay.role == "owner"
    finally:
        relay.close()
