"""Agent middleware for ``langchain.agents.create_agent`` and a recall tool.

Before each model call the middleware recalls situated evidence for the latest user message and
adds it, with coordinates, to the system message of that call (not to the stored history).
After the agent's turn it records the exchange, at the time the user's message was said. The
namespace of every read and write comes from the agent's context or config (``user_id`` by
default), so one user's memory never reaches another's; without one, the middleware refuses to
guess unless a default namespace was set.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ModelRequest,
        ModelResponse,
    )
    from langchain.agents.middleware.types import PrivateStateAttr
    from langchain.tools import ToolRuntime, tool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    msg = "RaMemMiddleware needs langchain: pip install '.[langchain]' in a RaMem checkout"
    raise ImportError(msg) from exc
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from typing_extensions import NotRequired

from ramem_core import DEFAULT_K, InvalidInputError, RaMem
from ramem_core.synthesis import ContextBlock, dated, system_context
from ramem_core.types import utc_now


@dataclass(frozen=True)
class MemoryContext:
    """A ready context schema: ``create_agent(..., context_schema=MemoryContext)`` and
    ``agent.invoke(..., context=MemoryContext(user_id="u-42"))``."""

    user_id: str


class _SaidState(AgentState[Any]):
    """The agent's state with when the run's user message was said (ISO, naive UTC)."""

    ramem_said_at: NotRequired[Annotated[str, PrivateStateAttr]]


def _lookup(source: Any, key: str) -> Any:
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(key)
    return getattr(source, key, None)


def resolve_namespace(
    context: Any, config: Mapping[str, Any] | None, key: str, default: str | None
) -> str:
    """The tenant of a run: ``context[key]``, else ``config["configurable"][key]``."""
    value = _lookup(context, key)
    if value is None and config is not None:
        value = _lookup(config.get("configurable"), key)
    if value is None:
        value = default
    if value is None:
        msg = (
            f"no memory namespace for this run: pass context={{'{key}': ...}} or "
            f"config={{'configurable': {{'{key}': ...}}}}, or set default_namespace"
        )
        raise InvalidInputError(msg)
    return str(value)


def _current_config() -> Mapping[str, Any] | None:
    from langgraph.config import get_config

    try:
        return get_config()
    except RuntimeError:  # called outside a runnable context
        return None


def _last_human(messages: list[AnyMessage]) -> HumanMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)


def recall_tool(
    memory: RaMem,
    *,
    k: int = DEFAULT_K,
    namespace_key: str = "user_id",
    default_namespace: str | None = None,
    clock: Callable[[], datetime] | None = utc_now,
) -> BaseTool:
    """A tool the agent can call to search its long-term memory itself.

    ``clock``: the moment of asking, so "last week" and "now" mean the week before the call
    (naive UTC now by default, as every time RaMem stores); ``None`` grounds against the end
    of the memory's last session, for offline replays."""

    @tool("recall_memory")
    def recall_memory(query: str, runtime: ToolRuntime[Any, Any]) -> str:
        """Search long-term memory of earlier conversations with this user.

        Args:
            query: what to look for, with any time or person it concerns
                (e.g. "what the doctor said last August").
        """
        ns = resolve_namespace(runtime.context, runtime.config, namespace_key, default_namespace)
        at = clock() if clock is not None else None
        return dated(memory.situate(query, k=k, namespace=ns, at=at)) or "No memory found."

    return recall_memory


class RaMemMiddleware(AgentMiddleware):
    """Inject situated memories before model calls and record each exchange afterwards.

    Args:
        memory: the RaMem memory.
        k: memories recalled per model call.
        max_tokens: budget of the injected memories.
        namespace_key: the context or configurable key naming the user.
        default_namespace: the namespace when a run names none (``None``: refuse).
        record: what to record after the agent's turn: ``"exchange"`` (default) the user's
            message and the agent's answer, the answer as a reply (no event time, echoed
            memories stripped, never above a memory it restates); ``"user"`` the user's
            message only; ``"none"`` nothing. ``True`` / ``False`` mean ``"exchange"`` /
            ``"none"``.
        with_tool: also give the agent the ``recall_memory`` tool (off by default: a tool
            needs a model that supports tool calling, ``bind_tools``, and the memories are
            injected anyway).
        clock: the moment of asking and when the user's message was said: naive UTC now
            by default, as every time RaMem stores. Each question is grounded at it ("last
            weekend" asked a week later is another weekend), and what the model receives
            says it ("Asked on ..."). The exchange is recorded at the clock's time when the
            agent's turn began, however long its tools or a pause for a human take.
    """

    state_schema = _SaidState  # type: ignore[assignment]

    def __init__(
        self,
        memory: RaMem,
        *,
        k: int = DEFAULT_K,
        max_tokens: int | None = 1500,
        namespace_key: str = "user_id",
        default_namespace: str | None = None,
        record: Literal["exchange", "user", "none"] | bool = "exchange",
        with_tool: bool = False,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        super().__init__()
        self.memory = memory
        self.k = k
        self.max_tokens = max_tokens
        self.namespace_key = namespace_key
        self.default_namespace = default_namespace
        if record is True or record is False:
            record = "exchange" if record else "none"
        if record not in ("exchange", "user", "none"):
            msg = f"record must be 'exchange', 'user' or 'none', got {record!r}"
            raise InvalidInputError(msg)
        self.record = record
        self.clock = clock
        self.tools = (
            [
                recall_tool(
                    memory,
                    k=k,
                    namespace_key=namespace_key,
                    default_namespace=default_namespace,
                    clock=clock,
                )
            ]
            if with_tool
            else []
        )

    def _namespace(self, context: Any) -> str:
        return resolve_namespace(
            context, _current_config(), self.namespace_key, self.default_namespace
        )

    def _query(self, request: ModelRequest) -> tuple[str, str] | None:
        """The latest user message and the run's namespace, or ``None`` (nothing to recall)."""
        human = _last_human(request.messages)
        if human is None or not human.text.strip():
            return None
        namespace = self._namespace(request.runtime.context if request.runtime else None)
        return human.text, namespace

    @staticmethod
    def _inject(request: ModelRequest, block: ContextBlock) -> ModelRequest:
        section = system_context(block)
        if not section:
            return request
        base = request.system_prompt or ""
        text = f"{base}\n\n{section}" if base else section
        return request.override(system_message=SystemMessage(content=text))

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Add the recalled memories to this model call's system message."""
        asked = self._query(request)
        if asked is not None:
            block = self.memory.situate(
                asked[0],
                k=self.k,
                namespace=asked[1],
                max_tokens=self.max_tokens,
                at=self.clock(),  # grounded at the moment of asking
            )
            request = self._inject(request, block)
        return handler(request)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Async form of :meth:`wrap_model_call` (recall runs in a worker thread)."""
        asked = self._query(request)
        if asked is not None:
            block = await self.memory.asituate(
                asked[0],
                k=self.k,
                namespace=asked[1],
                max_tokens=self.max_tokens,
                at=self.clock(),
            )
            request = self._inject(request, block)
        return await handler(request)

    def _said(self) -> dict[str, Any] | None:
        """Note when the user's message was said: the turn may end long after (slow tools,
        a pause for a human's approval), and "yesterday" means the day before it was said."""
        if self.record == "none":
            return None
        return {"ramem_said_at": self.clock().isoformat()}

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Note when the user's message was said (kept in the agent's state; async runs call
        this too, it does no I/O)."""
        return self._said()

    def _said_at(self, state: Any) -> datetime:
        """When the user's message was said, as noted before the turn, else now."""
        said = state.get("ramem_said_at")
        return datetime.fromisoformat(said) if said else self.clock()

    def _exchange(self, state: Any, runtime: Any) -> tuple[str, str, str] | None:
        """The latest user message, the agent's final answer and the namespace, or ``None``."""
        if self.record == "none":
            return None
        messages: list[AnyMessage] = state["messages"]
        human = _last_human(messages)
        if human is None:
            return None
        reply = messages[-1].text if messages and messages[-1] is not human else ""
        if self.record == "user":
            reply = ""  # add_exchange skips an empty side
        return human.text, reply, self._namespace(runtime.context)

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Record the latest user message and the agent's final answer."""
        exchange = self._exchange(state, runtime)
        if exchange is not None:
            user, reply, namespace = exchange
            self.memory.add_exchange(user, reply, at=self._said_at(state), namespace=namespace)
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Async form of :meth:`after_agent` (the write runs in a worker thread)."""
        exchange = self._exchange(state, runtime)
        if exchange is not None:
            user, reply, namespace = exchange
            await self.memory.aadd_exchange(
                user, reply, at=self._said_at(state), namespace=namespace
            )
        return None
