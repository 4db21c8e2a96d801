"""``RaMemMemoryBlock``: RaMem as a long-term block of LlamaIndex's agent ``Memory``.

``Memory.from_defaults(memory_blocks=[RaMemMemoryBlock(memory=...)])``: messages flushed out of
the short-term buffer are stored as turns, each at the time the block first saw it; on each get,
the block returns situated evidence for the latest user message.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import BaseMemoryBlock
from pydantic import Field, PrivateAttr

from ramem_core import DEFAULT_K, Kind, RaMem
from ramem_core.synthesis import dated, strip_echo
from ramem_core.types import utc_now

_SESSIONS_HELD = 1024
"""How many ``Memory`` sessions a block keeps said times for (the most recently read)."""


def _message_key(message: ChatMessage) -> str:
    """What makes two copies of a message the same message: its role, text and extra fields.

    ``Memory`` hands blocks fresh copies read back from its SQL store, so object identity
    does not survive; ``session_id`` is left out because ``BaseMemoryBlock.aput`` adds it to
    flushed messages only.
    """
    extra = {k: v for k, v in message.additional_kwargs.items() if k != "session_id"}
    seen = json.dumps([message.role.value, message.content, extra], sort_keys=True, default=str)
    return hashlib.sha256(seen.encode("utf-8")).hexdigest()


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
    """The moment of asking, and when a message was said: naive UTC, as every time RaMem
    stores."""
    # when the messages in each session's short-term buffer were said: by session, then by
    # message key, oldest copy first
    _said: dict[str | None, dict[str, list[datetime]]] = PrivateAttr(default_factory=dict)

    def _note_said(self, messages: list[ChatMessage], session: str | None, now: datetime) -> None:
        """Record when each message of the buffer was said, as first seen.

        LlamaIndex 0.14's messages carry no time of their own (its SQL store keeps one, but
        does not return it), and ``Memory`` flushes a message long after it was said, so the
        first ``get`` that shows a message is the nearest thing to its said time. An agent
        reads its memory after each user message but not after its reply: a reply first seen
        takes the time of what it answers, as :meth:`~ramem_core.RaMem.add_exchange` stores
        it. Copies of one text are told apart by order, the buffer dropping its oldest first.
        A session's record holds only what its buffer holds now, and only the sessions read
        last are kept, so the record stays bounded.
        """
        keys = [_message_key(m) for m in messages]
        held = self._said.pop(session, {})
        # older copies than the buffer holds left it unflushed (a reset): forget them
        known = {key: held.get(key, [])[-n:] for key, n in Counter(keys).items()}
        said: dict[str, list[datetime]] = {}
        previous: datetime | None = None
        for message, key in zip(messages, keys, strict=True):
            times = said.setdefault(key, [])
            if len(times) < len(known[key]):
                at = known[key][len(times)]
            elif message.role is MessageRole.USER or previous is None:
                at = now
            else:
                at = previous
            times.append(at)
            previous = at
        self._said[session] = said  # the most recently read session last
        while len(self._said) > _SESSIONS_HELD:
            del self._said[next(iter(self._said))]

    def _said_at(self, message: ChatMessage, now: datetime | None) -> datetime | None:
        """When a flushed message was said: as first seen, else (never seen) ``now``."""
        held = self._said.get(message.additional_kwargs.get("session_id"), {})
        key = _message_key(message)
        times = held.get(key)
        if not times:
            return now
        if len(times) == 1:
            del held[key]
        return times.pop(0)  # the buffer flushes its oldest copy first

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        now = self.clock()
        self._note_said(messages or [], block_kwargs.get("session_id"), now)
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
            at=now,  # grounded at the moment of asking
        )
        return dated(block)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        now = self.clock()
        # on the loop: the record has no lock. A message no get showed (a reply flushed with
        # the next put, before the get that follows it) was said with what it answers: it
        # takes the time of the message before it in the flush, as a reply first seen does
        said: list[datetime] = []
        for message in messages:
            seen = self._said_at(message, None)
            if seen is None:
                answers = message.role is not MessageRole.USER and bool(said)
                seen = said[-1] if answers else now
            said.append(seen)

        def store() -> None:
            speakers = {
                MessageRole.USER: (self.user_name, None),  # a statement, or a question
                MessageRole.ASSISTANT: (self.assistant_name, Kind.REPLY),
            }
            for message, at in zip(messages, said, strict=True):
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
