"""Several hosts on one memory: the first ``ramem mcp`` on a memory directory owns it and
serves the others.

A memory directory is open in one process at a time (Chroma's embedded index is per process:
:class:`~ramem_core.errors.MemoryInUseError`). So the server that opens it first, its
**owner**, also listens on a loopback port and writes where, with a fresh random token, to a
file only its user can read (``.ramem-mcp.json`` in the memory directory, mode 0600). A server
started later on the same directory finds the directory held and becomes a **relay**: it
answers its host itself (``initialize``, the tools' schemas, argument checks) and passes each
tool call and resource read to the owner with that token. When the owner goes (its host
closed, or it was killed), the next call of a relay finds its port closed, opens the memory
itself and becomes the owner; the other relays find the new owner's file.

On the wire, one connection per call, one line of JSON each way::

    {"token": ..., "call": "tool" | "resource", "name": ..., "arguments": {...},
     "namespace": ...}
    {"result": <CallToolResult as JSON, or the resource's text>}  or  {"error": ..., "kind": ...}

A relay never opens the store or loads the model, so it answers its host at once.
"""

from __future__ import annotations

import contextlib
import contextvars
import hmac
import json
import logging
import os
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import CallToolResult

from ramem_core.errors import MemoryInUseError, RaMemError
from ramem_core.store.chroma import held_elsewhere

if TYPE_CHECKING:
    from ramem_core import RaMem

Tools = object
"""What runs the calls: a :class:`ramem_mcp.server.Tools` (named here by its methods,
:data:`TOOLS` and :data:`RESOURCES`: the server imports this module)."""

logger = logging.getLogger("ramem_mcp")

TICKET = ".ramem-mcp.json"
"""The owner's file in the memory directory: its pid, port and token (mode 0600)."""
MAX_LINE = 8 * 1024 * 1024
"""The longest request or reply line read: a remember's 100,000 characters, each escaped."""
CALL_TIMEOUT = 600.0
"""Seconds a relay waits for the owner's reply (a first recall of a large memory is slow)."""
NEW_OWNER_WAIT = 60.0
"""Seconds a relay waits for another relay that took the memory over to say where it is (it
opens the store and loads the model first)."""
READ_ONLY = frozenset({"recall", "list", "show"})
"""Tools a relay may send again when the owner went away after the call was sent."""

RELAYED_NAMESPACE: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "ramem_relayed_namespace", default=None
)
"""The namespace of a call relayed from another host's server (see :meth:`Tools._ns`)."""


@dataclass(frozen=True, slots=True)
class Ticket:
    """Where the owner of a memory directory listens, and the token it wants."""

    pid: int
    port: int
    token: str

    @classmethod
    def read(cls, directory: Path) -> Ticket | None:
        """The owner's ticket in ``directory``, or ``None`` (none, or half written)."""
        try:
            data = json.loads((directory / TICKET).read_text(encoding="utf-8"))
            return cls(int(data["pid"]), int(data["port"]), str(data["token"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, directory: Path) -> None:
        """Written whole (a temporary file renamed over it), readable by this user only."""
        temporary = directory / f"{TICKET}.{os.getpid()}.tmp"
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump({"pid": self.pid, "port": self.port, "token": self.token}, file)
        os.replace(temporary, directory / TICKET)


def _reply(tools: Tools, request: dict[str, Any]) -> dict[str, Any]:
    """What ``tools`` answer one relayed request (its namespace the request's)."""
    name, arguments = request.get("name"), request.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return {"error": "a relayed call needs a name and its arguments", "kind": "tool"}
    call = str(request.get("call"))
    if name not in (RESOURCES if call == "resource" else TOOLS):
        return {"error": f"no tool or resource {name[:40]!r}", "kind": "tool"}
    try:
        result = run(tools, call, name, arguments, str(request.get("namespace") or "") or None)
    except ResourceNotFoundError as exc:
        return {"error": str(exc), "kind": "not_found"}
    except (ToolError, RaMemError) as exc:
        return {"error": str(exc), "kind": "tool"}
    except Exception:  # a crash stays on the owner's side, as the SDK keeps it
        logger.exception("relayed %r failed", name)
        return {"error": f"Error executing tool {name}", "kind": "tool"}
    if isinstance(result, CallToolResult):
        return {"result": result.model_dump(mode="json", by_alias=True, exclude_none=True)}
    return {"result": result}


TOOLS = {
    "remember": "remember",
    "recall": "recall",
    "list": "list_memories",
    "show": "show",
    "forget": "forget",
}
"""Each tool's name and the :class:`~ramem_mcp.server.Tools` method that runs it."""
RESOURCES = {"memories": "memories", "memory": "one"}
"""Each resource's name and its method."""


def method_of(call: str, name: str) -> str:
    """The :class:`~ramem_mcp.server.Tools` method of tool ``name`` (``call`` "tool") or
    resource ``name`` ("resource")."""
    return (RESOURCES if call == "resource" else TOOLS)[name]


def run(
    tools: Tools, call: str, name: str, arguments: dict[str, Any], namespace: str | None
) -> Any:
    """Tool (or resource) ``name`` of ``tools`` with ``arguments``, for ``namespace``."""
    with relayed_namespace(namespace):
        return getattr(tools, method_of(call, name))(**arguments)


class Owner:
    """Serves ``tools`` to the relays of ``directory`` on a loopback port (see the module)."""

    def __init__(self, tools: Tools, directory: Path) -> None:
        self.tools = tools
        self.directory = directory
        self.ticket: Ticket | None = None
        self._socket: socket.socket | None = None

    def start(self) -> Owner:
        listener = socket.create_server(("127.0.0.1", 0))
        self._socket = listener
        self.ticket = Ticket(os.getpid(), listener.getsockname()[1], secrets.token_urlsafe(32))
        self.ticket.write(self.directory)
        threading.Thread(target=self._accept, name="ramem-owner", daemon=True).start()
        return self

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        if self.ticket is not None and Ticket.read(self.directory) == self.ticket:
            with contextlib.suppress(OSError):
                (self.directory / TICKET).unlink()

    def _accept(self) -> None:
        listener = self._socket
        while listener is not None:
            try:
                connection, _ = listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        assert self.ticket is not None
        with connection, connection.makefile("rwb") as stream:
            line = stream.readline(MAX_LINE + 1)
            try:
                request = json.loads(line) if len(line) <= MAX_LINE else None
            except ValueError:
                request = None
            if not isinstance(request, dict):
                reply: dict[str, Any] = {"error": "not a request", "kind": "tool"}
            elif not hmac.compare_digest(
                str(request.get("token", "")).encode(), self.ticket.token.encode()
            ):
                reply = {"error": "wrong token", "kind": "auth"}
            else:
                reply = _reply(self.tools, request)
            with contextlib.suppress(OSError):
                stream.write(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
                stream.flush()


class OwnerGoneError(Exception):
    """The owner's port did not answer; ``sent``: after the request left."""

    def __init__(self, sent: bool) -> None:
        super().__init__("the owner went away")
        self.sent = sent


def _ask(ticket: Ticket, request: dict[str, Any]) -> dict[str, Any]:
    """One request to the owner of ``ticket``, and its reply.

    Raises:
        OwnerGoneError: nothing listens there, or it closed before replying.
    """
    try:
        connection = socket.create_connection(("127.0.0.1", ticket.port), timeout=5)
    except OSError:
        raise OwnerGoneError(sent=False) from None
    with connection:
        connection.settimeout(CALL_TIMEOUT)
        try:
            with connection.makefile("rwb") as stream:
                payload = {**request, "token": ticket.token}
                stream.write(json.dumps(payload, ensure_ascii=False).encode() + b"\n")
                stream.flush()
                line = stream.readline(MAX_LINE + 1)
        except OSError:
            raise OwnerGoneError(sent=True) from None
    if not line:
        raise OwnerGoneError(sent=True)
    reply = json.loads(line)
    assert isinstance(reply, dict)
    return reply


class Shared:
    """The memory in ``directory`` as this server reaches it: its own when it could open it
    (the owner), else the owner's (a relay), taking it over when the owner goes.

    Args:
        directory: the memory directory.
        open_memory: opens it (raising :class:`~ramem_core.errors.MemoryInUseError` when
            another process holds it).
        tools: makes the tools of an opened memory.
    """

    def __init__(
        self,
        directory: Path,
        open_memory: Callable[[], RaMem],
        tools: Callable[[RaMem], Tools],
    ) -> None:
        self.directory = directory
        self._open = open_memory
        self._tools_of = tools
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._failed: str | None = None
        self._started = False
        self.memory: RaMem | None = None
        self.tools: Tools | None = None
        self.owner: Owner | None = None
        self.ticket: Ticket | None = None

    # ------------------------------------------------------------------ life

    def start(self) -> Shared:
        """Opens the memory, or finds its owner, in the background (once): the server answers
        its host meanwhile, and a call waits for it. The server starts it when the host has
        its answer to ``initialize`` (at the first ``tools/list`` or call), so the two do not
        share the CPU."""
        with self._lock:
            if not self._started:
                self._started = True
                threading.Thread(target=self._settle, name="ramem-open", daemon=True).start()
        return self

    def close(self) -> None:
        with self._lock:
            if self.owner is not None:
                self.owner.close()
            if self.memory is not None:
                self.memory.close()
            self.owner = self.memory = self.tools = None

    @property
    def role(self) -> str:
        """This server's part: owner, relay, or starting."""
        if not self._ready.is_set():
            return "starting"
        return "owner" if self.tools is not None else "relay"

    def _settle(self, stale: Ticket | None = None) -> None:
        self._failed = None
        try:
            self._own_or_find(stale)
        except Exception as exc:  # said to every call, not lost on a stderr hosts hide
            logger.exception("the memory at %s could not be opened", self.directory)
            self._failed = f"the memory at {self.directory} could not be opened: {exc}"
        finally:
            self._ready.set()

    def _own_or_find(self, stale: Ticket | None) -> None:
        """Open the memory and serve it to the others; or, while another process holds it,
        find that process's ticket (one other than ``stale``). Both are tried until one
        holds: an owner that was killed may still hold the lock for a moment after its port
        closed, and then nobody else will write a ticket."""
        deadline = time.monotonic() + NEW_OWNER_WAIT
        while True:
            if not held_elsewhere(self.directory):  # found without importing the store
                try:
                    memory = self._open()
                except MemoryInUseError:
                    pass  # another relay got there first: its ticket follows
                else:
                    self._own(memory)
                    return
            ticket = Ticket.read(self.directory)
            if ticket is not None and ticket != stale and _alive(ticket.pid):
                self.ticket = ticket
                return
            if time.monotonic() >= deadline:
                msg = (
                    f"the memory at {self.directory} is open in another process that serves "
                    f"no other host (no {TICKET} of a running ramem mcp): close it, or serve "
                    "it with one `ramem mcp`"
                )
                raise MemoryInUseError(msg)
            time.sleep(0.05)

    def _own(self, memory: RaMem) -> None:
        self.memory = memory
        self.tools = self._tools_of(memory)
        self.owner = Owner(self.tools, self.directory).start()
        logger.info("ramem mcp owns %s and serves other hosts on it", self.directory)
        threading.Thread(target=warm, args=(memory,), name="ramem-warm", daemon=True).start()

    # ------------------------------------------------------------------ calls

    def call(self, call: str, name: str, arguments: dict[str, Any], namespace: str | None) -> Any:
        """Tool ``name`` (``call`` "tool") or resource ``name`` ("resource") with
        ``arguments``, for ``namespace``: run here by the owner, else relayed to it."""
        self.start()
        self._ready.wait()
        if call == "tool" and name == "remember" and arguments.get("idempotency_key") is None:
            # a retry after the owner went away must not store it twice
            arguments = {**arguments, "idempotency_key": f"relay-{uuid.uuid4().hex}"}
        for attempt in range(3):
            if self._failed is not None:
                raise ToolError(self._failed)
            tools, ticket = self.tools, self.ticket
            if tools is not None:
                return run(tools, call, name, arguments, namespace)
            assert ticket is not None
            request = {"call": call, "name": name, "arguments": arguments, "namespace": namespace}
            try:
                reply = _ask(ticket, request)
            except OwnerGoneError as gone:
                if gone.sent and call == "tool" and name == "forget":
                    msg = (
                        "the server that owned this memory went away while forgetting; "
                        "call show with the id to see whether it is gone"
                    )
                    self._take_over(ticket)
                    raise ToolError(msg) from None
                if attempt == 2:
                    raise ToolError("the memory's owning server keeps going away") from None
                self._take_over(ticket)
                continue
            return _unpacked(call, reply)
        raise ToolError("the memory's owning server keeps going away")  # pragma: no cover

    def _take_over(self, stale: Ticket) -> None:
        """The owner of ``stale`` went away: own the memory now, or find who does."""
        with self._lock:
            if self.tools is not None or self.ticket != stale:
                return  # another call of this server got there first
            self._ready.clear()
            self._settle(stale)


def _unpacked(call: str, reply: dict[str, Any]) -> Any:
    if "error" in reply:
        if reply.get("kind") == "not_found":
            raise ResourceNotFoundError(str(reply["error"]))
        raise ToolError(str(reply["error"]))
    result = reply.get("result")
    return CallToolResult.model_validate(result) if call == "tool" else result


def warm(memory: RaMem) -> None:
    """Load what the first ``remember`` would (the anchorer's parser), while the host waits
    for nothing: one statement anchored, nothing stored."""
    reader = getattr(memory.anchorer, "reader", None)
    if reader is None:
        return
    try:
        reader.read(["I live here now."], ["user"])
    except Exception:  # warming is an optimisation; the call itself will say
        logger.debug("warming the reader failed", exc_info=True)


def _alive(pid: int) -> bool:
    """A process ``pid`` runs (a ticket left by a killed owner names a dead one)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def relayed_namespace(namespace: str | None) -> Iterator[None]:
    """Calls inside read and write ``namespace`` (a relayed call's)."""
    reset = RELAYED_NAMESPACE.set(namespace)
    try:
        yield
    finally:
        RELAYED_NAMESPACE.reset(reset)
