"""``RaMemMemoryBlock``: RaMem as a long-term block of LlamaIndex's agent ``Memory``.

``Memory.from_defaults(memory_blocks=[RaMemMemoryBlock(memory=...)])``: messages flushed out of
the short-term buffer are stored as timestamped turns; on each get, the block returns situated
evidence for the latest user message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import BaseMemoryBlock
from pydantic import Field

from ramem_core import RaMem


class RaMemMemoryBlock(BaseMemoryBlock[str]):
    """Situated long-term memory for LlamaIndex agents."""

    name: str = "ramem"
    description: str | None = "Situated memories of earlier conversations with this user."
    memory: RaMem
    k: int = 5
    max_tokens: int | None = 1500
    namespace: str | None = None
    conversation_id: str = "llamaindex"
    clock: Callable[[], datetime] = Field(default=datetime.now)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = next(
            (m.content for m in reversed(messages or []) if m.role == MessageRole.USER and
             isinstance(m.content, str) and m.content.strip()),
            None,
        )  # fmt: skip
        if query is None:
            return ""
        block = await asyncio.to_thread(
            self.memory.situate, query, k=self.k, namespace=self.namespace,
            max_tokens=self.max_tokens,
        )  # fmt: skip
        return block.text

    async def _aput(self, messages: list[ChatMessage]) -> None:
        def store() -> None:
            at = self.clock()
            for message in messages:
                text = message.content if isinstance(message.content, str) else None
                if text and text.strip() and message.role in (MessageRole.USER,
                                                               MessageRole.ASSISTANT):  # fmt: skip
                    self.memory.add_turn(str(message.role.value), text, at=at,
                                         conversation_id=self.conversation_id,
                                         namespace=self.namespace)  # fmt: skip

        await asyncio.to_thread(store)
