"""RaMem as an MCP server: ``remember``, ``recall``, ``list``, ``show`` and ``forget`` tools
and the namespace's memories as resources, over one :class:`~ramem_core.RaMem`.

Every tool answers with the text a model reads and the same fields as structured content.
Over HTTP a bearer token may be bound to a namespace of its own (:class:`Tokens`); otherwise
the server's namespace is used.
"""

# no ``from __future__ import annotations``: the MCP SDK reads the tools' signatures at run time

import contextvars
import functools
import hmac
import inspect
import json
import os
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Annotated, Any, TypeVar, cast

import anyio
import anyio.to_thread
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from ramem_core import RaMem, __version__
from ramem_core.errors import RaMemError
from ramem_core.synthesis import dated
from ramem_core.temporal import describe
from ramem_core.transfer import said_at
from ramem_core.types import DEFAULT_K, Evidence, Kind, MemoryUnit, RecallFrame, TimeSpan, utc_now
from ramem_core.validation import MAX_ID_CHARS, MAX_NAME_CHARS, MAX_QUERY_CHARS, check_moment
from ramem_mcp import descriptions
from ramem_mcp.arguments import short, strict
from ramem_mcp.sharing import RELAYED_NAMESPACE, Shared, method_of, warm

T = TypeVar("T")

CANCELLED: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar(
    "ramem_mcp_cancelled", default=None
)
"""Says whether the request a tool serves was cancelled (:func:`_in_worker`)."""

CONVERSATION = "mcp"
"""The conversation id live turns remembered through MCP are stored under."""
MAX_PIECES = 10_000
"""The most memories of one live session read to find a message's pieces."""
REMEMBER_CHARS = 100_000
"""The longest text one ``remember`` stores: about 6 s of this machine's ingest (a thousand
characters a piece), well inside the 60 s a host waits for a tool, where 600,000 took 20-36 s
and outlived the client (issue 55). A longer text is refused, saying to split it."""
MOMENT_CHARS = 64
"""The longest ``at`` read: an ISO 8601 time with fractions and an offset is 32."""


# --------------------------------------------------------------------------- what tools return


class Superseded(BaseModel):
    """A later statement of the same kind that may have replaced a memory (if it did, the
    memory was valid until then)."""

    by: str = Field(description="the superseding memory's id")
    said_at: str = Field(description="when the superseding statement was said (ISO 8601)")
    since: str | None = Field(description="when its new state began, if it says (ISO 8601)")
    content: str


class Memory(BaseModel):
    """A stored memory with its episodic coordinates."""

    id: str
    speaker: str
    content: str
    kind: str = Field(description="statement, question or reply")
    said_at: str | None = Field(description="when it was said (ISO 8601, UTC)")
    event: str | None = Field(description="when its event happened, in words, if it says")
    event_start: str | None = None
    event_end: str | None = None
    participants: list[str] = Field(default_factory=list)
    location: str | None = None
    conversation_id: str
    session_id: str


class Found(Memory):
    """A recalled memory, with why it applies to the question."""

    rank: int
    valid: list[str] = Field(description="the question's conditions it meets")
    superseded: Superseded | None = Field(
        default=None, description="a later statement of the same kind that may have replaced it"
    )
    member: str | None = Field(default=None, description="the member of a set asked about")
    anchor_of: str | None = Field(
        default=None,
        description=(
            "the question's before/after phrase this memory is the anchor of (the point"
            " 'after ...' is measured from), not a memory within it"
        ),
    )


class FrameTime(BaseModel):
    """A time the question names, and what it was grounded to."""

    text: str
    grounded: bool
    window: str | None
    start: str | None
    end: str | None
    reason: str


class Frame(BaseModel):
    """How the question was read: its moment, times and people."""

    question: str
    need: str = Field(description="the question without the words that set a condition")
    now: str | None = Field(description="the moment of asking (ISO 8601, UTC)")
    times: list[FrameTime]
    participants: list[str]
    asks_now: bool
    asks_earlier: bool
    asks_when: bool


class Recalled(BaseModel):
    frame: Frame
    memories: list[Found]


class Remembered(BaseModel):
    id: str
    ids: list[str] = Field(description="every memory it was stored as (a long text: several)")
    said_at: str = Field(description="when it was stored as said (ISO 8601, UTC)")


class Page(BaseModel):
    memories: list[Memory]
    next_after: str | None = Field(description="pass as `after` for the next page; null at the end")


class Forgotten(BaseModel):
    id: str
    deleted: int = Field(description="memories deleted: every piece of the message")


# --------------------------------------------------------------------------- converters


def _iso(moment: datetime | None) -> str | None:
    """RaMem's naive UTC time as ISO 8601 with its zone said (``Z``)."""
    return moment.isoformat(timespec="seconds") + "Z" if moment is not None else None


def _span(span: TimeSpan | None) -> tuple[str | None, str | None, str | None]:
    if span is None:
        return None, None, None
    return describe(span), _iso(span.start), _iso(span.end)


def _memory(unit: MemoryUnit, said: datetime | None = None) -> dict[str, object]:
    """``unit``'s fields; ``said``: its own said time where ``unit`` carries its session's."""
    ctx = unit.context
    event, start, end = _span(ctx.event_time)
    return {
        "id": unit.id,
        "speaker": ctx.speaker,
        "content": unit.content,
        "kind": ctx.kind.value,
        "said_at": _iso(said or said_at(unit)),
        "event": event,
        "event_start": start,
        "event_end": end,
        "participants": list(ctx.participants),
        "location": ctx.location,
        "conversation_id": ctx.conversation_id,
        "session_id": ctx.session_id,
    }


def _found(evidence: Evidence) -> Found:
    later = evidence.superseded
    superseded = None
    if later is not None:
        since = _iso(later.since.start) if later.since is not None else None
        superseded = Superseded(
            by=later.by, said_at=_iso(later.on) or "", since=since, content=later.content
        )
    return Found(
        **_memory(evidence.unit, evidence.said),  # type: ignore[arg-type]
        rank=evidence.rank,
        valid=list(evidence.satisfied),
        superseded=superseded,
        member=evidence.member.word if evidence.member is not None else None,
        anchor_of=evidence.anchor,
    )


def _frame(frame: RecallFrame) -> Frame:
    times = []
    for t in frame.times:
        window, start, end = _span(t.window)
        times.append(
            FrameTime(
                text=t.text,
                grounded=t.grounded,
                window=window,
                start=start,
                end=end,
                reason=t.reason,
            )
        )
    return Frame(
        question=frame.query,
        need=frame.need,
        now=_iso(frame.now),
        times=times,
        participants=list(frame.participants),
        asks_now=frame.asks_now,
        asks_earlier=frame.asks_earlier,
        asks_when=frame.asks_when,
    )


def _line(memory: Memory) -> str:
    event = f", event {memory.event}" if memory.event else ""
    return f"{memory.id} (said {memory.said_at or '?'}{event}) {memory.content}"


def _result(text: str, value: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=value.model_dump(mode="json"),
    )


def parse_moment(value: str | None, what: str, clock: Callable[[], datetime]) -> datetime:
    """``value`` (ISO 8601; ``Z`` or an offset converted to UTC) as RaMem's naive UTC time;
    the clock when ``None``.

    Raises:
        ToolError: not an ISO 8601 time, or outside the years RaMem accepts.
    """
    if value is None:
        return clock()
    text = value.strip()
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"  # Python 3.10's fromisoformat does not read "Z"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        msg = f"{what} must be an ISO 8601 time such as 2024-05-28T09:30:00Z, got {short(value)}"
        raise ToolError(msg) from None
    return _checked(lambda: check_moment(moment, what))


def _checked(call: Callable[[], T]) -> T:
    """``call()``, with RaMem's errors as tool errors (the model reads the message)."""
    try:
        return call()
    except RaMemError as exc:
        raise ToolError(str(exc)) from exc


# --------------------------------------------------------------------------- tokens


class Tokens:
    """Bearer tokens, each bound to the namespace it may read and write: the SDK's
    ``TokenVerifier`` for a fixed set of tokens (compared in constant time)."""

    def __init__(self, namespaces: Mapping[str, str]) -> None:
        if not namespaces:
            raise ValueError("Tokens needs at least one token")
        self._namespaces = dict(namespaces)

    async def verify_token(self, token: str) -> AccessToken | None:
        for known, namespace in self._namespaces.items():
            if hmac.compare_digest(token.encode(), known.encode()):
                return AccessToken(token=token, client_id=namespace, scopes=[])
        return None


# --------------------------------------------------------------------------- the server

Question = Annotated[
    str,
    Field(
        description="the question, in the user's words",
        min_length=1,
        max_length=MAX_QUERY_CHARS,
    ),
]
Moment = Annotated[
    str | None,
    Field(
        description="ISO 8601 time, e.g. 2024-06-10T09:00:00Z; now when left out",
        max_length=MOMENT_CHARS,
    ),
]
Id = Annotated[str, Field(description="the memory's id", min_length=1, max_length=MAX_ID_CHARS)]


def _cpus() -> int:
    """The CPUs this process may run on (its affinity, where the platform says)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


BUSY_CALLS = max(1, _cpus() // 2)
"""How many ``remember`` and ``recall`` calls compute at once; the others wait their turn
while ``list``, ``show`` and ``forget`` go straight through. Chosen by
``benchmarks/bench_mcp.py --part load`` on 2 CPUs (one per two; TUNING.md, issue 55)."""

LONG_TEXT_CHARS = 4_000
"""A ``remember`` longer than this (four pieces or more: a pasted document, seconds of
embedding) takes its turn in a lane of its own, one at a time beside the others, instead of
holding every short call's turn for its whole length (TUNING.md, issue 55)."""

BUSY = frozenset({"remember", "recall"})
"""The tools that compute (anchor, embed, rank): they take turns (:data:`BUSY_CALLS`)."""


def is_long(text: object) -> bool:
    """Whether ``text`` makes a long ``remember`` (:data:`LONG_TEXT_CHARS`)."""
    return isinstance(text, str) and len(text) > LONG_TEXT_CHARS


def _go_on() -> None:
    """Raise when the request being served was cancelled (its client gave up while it waited
    for a turn): the work is not done for nobody."""
    cancelled = CANCELLED.get()
    if cancelled is not None and cancelled():
        raise ToolError("the request was cancelled")


class Tools:
    """The tools of one server: one memory, its default namespace and a clock."""

    def __init__(
        self, memory: RaMem, namespace: str, clock: Callable[[], datetime] = utc_now
    ) -> None:
        self.memory = memory
        self.namespace = namespace
        self.clock = clock
        # the gates of every path to a remember or a recall (a relayed call comes through
        # the owner's threads, not the server's limiters)
        self.busy = threading.BoundedSemaphore(BUSY_CALLS)
        self.long = threading.BoundedSemaphore(1)
        self._loaded = False

    def _load(self) -> None:
        """Load what the first remember needs (the anchorer's parser: seconds) before it
        takes a turn, so that no other call waits for it."""
        if not self._loaded:
            warm(self.memory)
            self._loaded = True

    def _ns(self) -> str:
        """The namespace of this request: a relayed call's own (:mod:`.sharing`), the token's
        over HTTP, else the server's."""
        relayed = RELAYED_NAMESPACE.get()
        if relayed is not None:
            return relayed
        token = get_access_token()
        return token.client_id if token is not None else self.namespace

    def remember(
        self,
        speaker: Annotated[
            str,
            Field(
                description="who said it, e.g. 'user' or their name",
                min_length=1,
                max_length=MAX_NAME_CHARS,
            ),
        ],
        text: Annotated[
            str,
            Field(
                description=f"the message, as said (at most {REMEMBER_CHARS:,} characters)",
                min_length=1,
            ),
        ],
        at: Annotated[
            str | None,
            Field(
                description="when it was said, ISO 8601 (e.g. 2024-05-28T09:30:00Z); now",
                max_length=MOMENT_CHARS,
            ),
        ] = None,
        idempotency_key: Annotated[
            str | None,
            Field(
                description="a key that makes a retry store the message once",
                max_length=MAX_ID_CHARS,
            ),
        ] = None,
    ) -> Annotated[CallToolResult, Remembered]:
        if len(text) > REMEMBER_CHARS:
            msg = (
                f"text is {len(text):,} characters; remember stores at most {REMEMBER_CHARS:,} "
                "at once: split it into several remember calls (one per part, each with its "
                "own idempotency_key)"
            )
            raise ToolError(msg)
        moment = parse_moment(at, "at", self.clock)
        kind = Kind.QUESTION if text.rstrip().endswith("?") else None
        self._load()
        with self.long if is_long(text) else self.busy:
            unit = _checked(
                lambda: self.memory.add_turn(
                    speaker,
                    text,
                    at=moment,
                    conversation_id=CONVERSATION,
                    namespace=self._ns(),
                    kind=kind,
                    idempotency_key=idempotency_key,
                    cancelled=CANCELLED.get(),
                )
            )
        said = _iso(said_at(unit)) or _iso(moment) or ""
        # a message its first memory holds whole was stored as one: no read of its session
        whole = " ".join(text.split()) in " ".join(unit.content.split())
        ids = [unit.id] if whole else [u.id for u in self._pieces(unit)]
        return _result(
            f"Remembered {unit.id} (said {said}).", Remembered(id=unit.id, ids=ids, said_at=said)
        )

    def recall(
        self,
        question: Question,
        k: Annotated[int, Field(description="how many memories", ge=1, le=50)] = DEFAULT_K,
        at: Moment = None,
    ) -> Annotated[CallToolResult, Recalled]:
        moment = parse_moment(at, "at", self.clock)
        ns = self._ns()
        with self.busy:
            _go_on()
            found = _checked(lambda: self.memory.recall(question, k=k, at=moment, namespace=ns))
        value = Recalled(frame=_frame(found.frame), memories=[_found(e) for e in found])
        block = dated(self.memory.format(found))
        return _result(block or f"No memories match {question!r}.", value)

    def list_memories(
        self,
        limit: Annotated[int, Field(description="memories per page", ge=1, le=200)] = 20,
        after: Annotated[
            str | None,
            Field(description="the last id of the previous page", max_length=MAX_ID_CHARS),
        ] = None,
        session_id: Annotated[
            str | None, Field(description="only this session's", max_length=MAX_ID_CHARS)
        ] = None,
    ) -> Annotated[CallToolResult, Page]:
        ns = self._ns()
        units = _checked(  # one more than asked: is there a next page?
            lambda: self.memory.transfer.page(
                namespace=ns, session_id=session_id, limit=limit + 1, after=after
            )
        )
        shown = units[:limit]
        page = Page(
            memories=[Memory(**_memory(u)) for u in shown],  # type: ignore[arg-type]
            next_after=shown[-1].id if len(units) > limit else None,
        )
        lines = [_line(m) for m in page.memories] or ["No memories."]
        if page.next_after:
            lines.append(f"More: call list with after={page.next_after!r}.")
        return _result("\n".join(lines), page)

    def _unit(self, memory_id: str) -> MemoryUnit:
        ns = self._ns()
        unit = _checked(lambda: self.memory.transfer.get(memory_id, namespace=ns))
        if unit is None:
            msg = f"no memory with id {short(memory_id)} in namespace {ns!r}"
            raise ToolError(msg)
        return unit

    def _pieces(self, unit: MemoryUnit) -> list[MemoryUnit]:
        """Every memory the message of ``unit`` was stored as (a long text is cut into
        pieces that share their turn), in order."""
        ctx = unit.context
        ns = self._ns()
        same = _checked(
            lambda: self.memory.transfer.page(
                namespace=ns,
                conversation_id=ctx.conversation_id,
                session_id=ctx.session_id,
                limit=MAX_PIECES,
            )
        )
        pieces = [u for u in same if u.source_ids == unit.source_ids]
        return sorted(pieces, key=lambda u: u.id != unit.id) or [unit]

    def show(
        self,
        id: Id,  # noqa: A002
    ) -> Annotated[CallToolResult, Memory]:
        memory = Memory(**_memory(self._unit(id)))  # type: ignore[arg-type]
        return _result(_line(memory), memory)

    def forget(
        self,
        id: Id,  # noqa: A002
    ) -> Annotated[CallToolResult, Forgotten]:
        unit = self._unit(id)  # an id that matches nothing is an error
        ns = self._ns()
        ids = [u.id for u in self._pieces(unit)]  # the whole message, not one piece of it
        deleted = _checked(lambda: self.memory.delete(unit_ids=ids, namespace=ns))
        return _result(f"Forgot {id}.", Forgotten(id=id, deleted=deleted))

    def memories(self) -> str:
        units = self.memory.transfer.page(namespace=self._ns(), limit=50)
        return json.dumps([_memory(u) for u in units], ensure_ascii=False)

    def one(self, memory_id: str) -> str:
        if len(memory_id) > MAX_ID_CHARS:
            raise ResourceNotFoundError(f"no memory with id {short(memory_id)}")
        try:
            unit = self._unit(memory_id)
        except ToolError as exc:  # an unknown id: not found (-32602), not an internal error
            raise ResourceNotFoundError(str(exc)) from None
        return json.dumps(_memory(unit), ensure_ascii=False)


URI_CHARS = len("ramem://memories/") + MAX_ID_CHARS
"""The longest resource URI read: the longest memory's."""


class RaMemServer(MCPServer):
    """The SDK's server, reading no resource URI longer than any of its own (the SDK's own
    "Unknown resource" error repeats the whole URI); over a shared memory, opening it once
    the host has its answer to ``initialize`` (:meth:`.sharing.Shared.start`)."""

    shared: Shared | None = None

    async def list_tools(self) -> Any:
        if self.shared is not None:
            self.shared.start()
        return await super().list_tools()

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        if len(str(uri)) > URI_CHARS:
            raise ResourceNotFoundError(f"Unknown resource: {short(str(uri))}")
        return await super().read_resource(uri, context)


def _in_worker(
    fn: Callable[..., Any], turns: Callable[[Mapping[str, Any]], anyio.CapacityLimiter]
) -> Callable[..., Any]:
    """Tool ``fn`` (a function the SDK would run in a worker thread of its shared pool, waiting
    for it to the end) as an async tool that waits for a turn of ``turns(arguments)`` without
    holding a thread, runs ``fn`` in a worker thread of its own and, when the request is
    cancelled (``notifications/cancelled``, or the client going away), answers at once and
    tells the work through :data:`CANCELLED`: a ``remember`` not yet written stores nothing,
    a ``recall`` not yet begun is not made."""

    @functools.wraps(fn)
    async def tool(**arguments: Any) -> Any:
        stop = threading.Event()
        token = CANCELLED.set(stop.is_set)
        try:
            return await anyio.to_thread.run_sync(
                functools.partial(fn, **arguments),
                abandon_on_cancel=True,
                limiter=turns(arguments),
            )
        except anyio.get_cancelled_exc_class():
            stop.set()
            raise
        finally:
            CANCELLED.reset(token)

    return tool


def _through(shared: Shared, call: str, name: str, namespace: str) -> Callable[..., Any]:
    """The function the SDK registers for tool (or resource) ``name`` of a shared memory: the
    signature of the :class:`Tools` method that runs it, the call passed to ``shared`` with
    the request's namespace (the token's over HTTP, else ``namespace``)."""
    method = getattr(Tools, method_of(call, name))
    signature = inspect.signature(method)

    def through(**arguments: Any) -> Any:
        token = get_access_token()
        asked = token.client_id if token is not None else namespace
        return shared.call(call, name, arguments, asked)

    through.__name__ = method.__name__
    through.__doc__ = method.__doc__
    through.__annotations__ = dict(method.__annotations__)  # read by pydantic's validate_call
    through.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=list(signature.parameters.values())[1:]  # without self
    )
    return through


def build_server(
    memory: RaMem | Shared,
    *,
    namespace: str | None = None,
    clock: Callable[[], datetime] = utc_now,
    tokens: Mapping[str, str] | None = None,
    url: str | None = None,
) -> MCPServer:
    """An MCP server over ``memory``.

    Args:
        memory: the memory it serves.
        namespace: the namespace of requests without a token (default: the memory's).
        clock: "now", for a message or a question without ``at`` (naive UTC).
        tokens: for HTTP, token -> the namespace it is bound to; requests without one of
            these tokens are refused.
        url: the server's own URL (``http://host:port``), needed with ``tokens``.
    """
    if isinstance(memory, Shared):
        served = namespace or "default"

        def fn(call: str, name: str) -> Callable[..., Any]:
            return _through(memory, call, name, served)
    else:
        tools = Tools(memory, namespace or memory.namespace, clock)

        def fn(call: str, name: str) -> Callable[..., Any]:
            return cast("Callable[..., Any]", getattr(tools, method_of(call, name)))

    auth, verifier = None, None
    if tokens:
        if url is None:
            raise ValueError("tokens need the server's url")
        verifier = Tokens(tokens)
        auth = AuthSettings(  # static tokens: each is this server's own, no audience to check
            issuer_url=url,  # type: ignore[arg-type]  # required, read only by an OAuth provider
            # no resource metadata: a 401 says "Bearer" and that a token is needed, and points
            # no client at an authorization server that does not exist
            resource_server_url=None,
            validate_token_resource=False,
        )
    server = RaMemServer(
        "ramem",
        title="RaMem memory",
        instructions=descriptions.INSTRUCTIONS,
        version=__version__,
        token_verifier=verifier,
        auth=auth,
    )
    if isinstance(memory, Shared):
        server.shared = memory
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    short_turns, long_turns = anyio.CapacityLimiter(BUSY_CALLS), anyio.CapacityLimiter(1)

    def turns(arguments: Mapping[str, Any]) -> anyio.CapacityLimiter:
        return long_turns if is_long(arguments.get("text")) else short_turns

    for name, text, hints in (
        ("remember", descriptions.REMEMBER, ToolAnnotations(open_world_hint=False)),
        ("recall", descriptions.RECALL, reads),
        ("list", descriptions.LIST, reads),
        ("show", descriptions.SHOW, reads),
        (
            "forget",
            descriptions.FORGET,
            ToolAnnotations(destructive_hint=True, open_world_hint=False),
        ),
    ):
        tool = fn("tool", name)
        if name in BUSY:
            tool = _in_worker(tool, turns)
        server.add_tool(tool, name=name, description=text, annotations=hints)
    server.resource(
        "ramem://memories",
        name="memories",
        description=descriptions.MEMORIES,
        mime_type="application/json",
    )(fn("resource", "memories"))
    server.resource(
        "ramem://memories/{memory_id}",
        name="memory",
        description=descriptions.MEMORY,
        mime_type="application/json",
    )(fn("resource", "memory"))
    strict(server)
    return server
