"""``RaMemMemory``: RaMem as ``BaseMemory`` for existing LangChain chains.

``BaseMemory`` lives in ``langchain-classic`` in LangChain 1.x (deprecated there, still what
existing chains use). New agents should prefer :class:`langchain_ramem.RaMemMiddleware`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

try:
    from langchain_classic.base_memory import BaseMemory
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    msg = "RaMemMemory needs langchain-classic: pip install 'ramem[langchain]'"
    raise ImportError(msg) from exc
from pydantic import ConfigDict, Field

from ramem_core import DEFAULT_K, RaMem
from ramem_core.synthesis import dated
from ramem_core.types import utc_now


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
    coordinates; ``save_context`` records the exchange as two timestamped turns; ``clear``
    drops the namespace.
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
    """The moment of asking (what each question is grounded at) and of each exchange (the
    time recorded with its turns)."""

    @property
    def memory_variables(self) -> list[str]:
        """The one variable this memory fills."""
        return [self.memory_key]

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Situated evidence for the chain's input."""
        query = _pick(inputs, self.input_key, {self.memory_key}, "input")
        block = self.memory.situate(
            query,
            k=self.k,
            namespace=self.namespace,
            max_tokens=self.max_tokens,
            at=self.clock(),  # grounded at the moment of asking
        )
        return {self.memory_key: dated(block)}

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Record the input and the output as turns of a live conversation."""
        self.memory.add_exchange(
            _pick(inputs, self.input_key, {self.memory_key}, "input"),
            _pick(outputs, self.output_key, set(), "output"),
            at=self.clock(),
            user=self.human_prefix,
            assistant=self.ai_prefix,
            conversation_id=self.conversation_id,
            namespace=self.namespace,
        )

    def clear(self) -> None:
        """Forget everything in this memory's namespace."""
        self.memory.drop(namespace=self.namespace)
