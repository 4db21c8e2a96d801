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

from ramem_core import DEFAULT_K, Kind, RaMem
from ramem_core.synthesis import dated, strip_echo
from ramem_core.types import utc_now


class RaMemMemoryBlock(BaseMemoryBlock[str]):
    """Situated long-term memory for LlamaIndex agents."""

    name: str = "ramem"
    description: str | None = "Situated memories of earlier conversations with this user."
    memory: RaMem
    k: int = DEFAULT_K
    max_tokens: int | None = 1500
    namespace: str | None = None
    conversation_id: str = "llamaindex"
    user_name: str = "user"
    """The speaker name stored for user messages (e.g. the user's real name)."""
    assistant_name: str = "assistant"
    """The speaker name stored for assistant messages."""
    clock: Callable[[], datetime] = Field(default=utc_now)
    """The time stored with each message: naive UTC, as every time RaMem stores."""

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = next(
            (
                m.content
                for m in reversed(messages or [])
                if m.role == MessageRole.USER and isinstance(m.content, str) and m.content.strip()
            ),
            None,
        )
        if query is None:
            return ""
        # LlamaIndex wraps every block in <memory>...</memory>: RaMem's items take another name
        block = await self.memory.asituate(
            query,
            k=self.k,
            namespace=self.namespace,
            max_tokens=self.max_tokens,
            tag="evidence",
            at=self.clock(),  # grounded at the moment of asking
        )
        return dated(block)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        def store() -> None:
            at = self.clock()
            speakers = {
                MessageRole.USER: (self.user_name, None),  # a statement, or a question
                MessageRole.ASSISTANT: (self.assistant_name, Kind.REPLY),
            }
            for message in messages:
                text = message.content if isinstance(message.content, str) else None
                if message.role is MessageRole.ASSISTANT and text:
                    text = strip_echo(text)  # what the model echoed of its memories
                who = speakers.get(message.role)
                if text and text.strip() and who is not None:
                    kind = who[1] or (Kind.QUESTION if text.rstrip().endswith("?") else None)
                    self.memory.add_turn(
                        who[0],
                        text,
                        at=at,
                        namespace=self.namespace,
                        conversation_id=self.conversation_id,
                        kind=kind,
                    )

        await asyncio.to_thread(store)
