"""``RaMemMemory``: RaMem as ``BaseMemory`` for existing LangChain chains.

``BaseMemory`` lives in ``langchain-classic`` in LangChain 1.x (deprecated there, still what
existing chains use). New agents should prefer :class:`langchain_ramem.RaMemMiddleware`.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import Any

try:
    from langchain_classic.base_memory import BaseMemory
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    msg = "RaMemMemory needs langchain-classic: pip install '.[langchain]' in a RaMem checkout"
    raise ImportError(msg) from exc
from pydantic import ConfigDict, Field, PrivateAttr

from ramem_core import DEFAULT_K, RaMem
from ramem_core.synthesis import dated
from ramem_core.types import utc_now

_PENDING = 64
"""How many inputs loaded for but not yet saved a memory remembers the said time of."""


def _pick(values: dict[str, Any], key: str | None, skip: set[str], what: str) -> str:
    if key is not None:
        return str(values[key])
    keys = [k for k in values if k not in skip]
    if len(keys) != 1:
        msg = f"cannot tell which {what} key to remember among {sorted(keys)}; set {what}_key"
        raise ValueError(msg)
    return str(values[keys[0]])


class RaMemMemory(BaseMemory):
    """Situated long-term memory for chains.

    ``load_memory_variables`` returns the evidence recalled for the input, rendered with its
    coordinates; ``save_context`` records the exchange as two turns, at the time the input
    was loaded for; ``clear`` drops the namespace.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: RaMem
    memory_key: str = "history"
    input_key: str | None = None
    output_key: str | None = None
    k: int = DEFAULT_K
    max_tokens: int | None = 1500
    namespace: str | None = None
    conversation_id: str = "chain"
    human_prefix: str = "Human"
    ai_prefix: str = "AI"
    clock: Callable[[], datetime] = Field(default=utc_now)
    """The moment of asking: what each input is grounded at, and the time its exchange is
    recorded with (an input saved but never loaded for: the time of saving)."""
    # (input, when it was said) for inputs loaded for and not saved yet, oldest first: a
    # chain saves the exchange after its run, which may take long (an agent's tools)
    _said: deque[tuple[str, datetime]] = PrivateAttr(default_factory=lambda: deque(maxlen=_PENDING))
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def memory_variables(self) -> list[str]:
        """The one variable this memory fills."""
        return [self.memory_key]

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Situated evidence for the chain's input."""
        query = _pick(inputs, self.input_key, {self.memory_key}, "input")
        now = self.clock()
        with self._lock:
            self._said.append((query, now))
        block = self.memory.situate(
            query,
            k=self.k,
            namespace=self.namespace,
            max_tokens=self.max_tokens,
            at=now,  # grounded at the moment of asking
        )
        return {self.memory_key: dated(block)}

    def _said_at(self, query: str) -> datetime:
        """When ``query`` was said: when it was first loaded for, else now."""
        with self._lock:
            for pending in self._said:
                if pending[0] == query:
                    self._said.remove(pending)
                    return pending[1]
        return self.clock()

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Record the input and the output as turns of a live conversation, at the time the
        input was loaded for."""
        query = _pick(inputs, self.input_key, {self.memory_key}, "input")
        self.memory.add_exchange(
            query,
            _pick(outputs, self.output_key, set(), "output"),
            at=self._said_at(query),
            user=self.human_prefix,
            assistant=self.ai_prefix,
            conversation_id=self.conversation_id,
            namespace=self.namespace,
        )

    def clear(self) -> None:
        """Forget everything in this memory's namespace."""
        self.memory.drop(namespace=self.namespace)
