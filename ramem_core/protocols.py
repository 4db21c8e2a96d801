"""One Protocol per pluggable part of RaMem. Fakes for each live in :mod:`ramem_core.testing`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ramem_core.types import Conversation, MemoryUnit, RecallFrame, TimeSpan


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors of a fixed dimension."""

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    @property
    def name(self) -> str:
        """A stable model name; stored with a collection so vectors are never mixed."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Return an array of shape ``(len(texts), dimension)``, one unit vector per text."""
        ...


@runtime_checkable
class Anchorer(Protocol):
    """Stage 1: turns a conversation into situated memory units."""

    def anchor(self, conversation: Conversation) -> list[MemoryUnit]:
        """Return the memory units of ``conversation``; every turn is covered by a unit."""
        ...


@dataclass(frozen=True, slots=True)
class FrameContext:
    """What a frame inducer may know about the memory when it grounds a query.

    Attributes:
        now: the query's "now": the caller's query time, else the end of the last session.
        memory_range: earliest to latest time the memory knows about (sessions and events);
            ``None`` for an empty memory.
        participants: names known to the memory (speakers and named participants).
        locate: finds the memory that names an anchor event ("the trip"), or ``None`` when
            unsure; its event time (else its session span) anchors the relation.
        covers: True when some memory was said or happened within a span (so "in August"
            means the August memory actually covers).
    """

    now: datetime | None
    memory_range: TimeSpan | None
    participants: tuple[str, ...] = ()
    locate: Callable[[str], MemoryUnit | None] = field(default=lambda _phrase: None)
    covers: Callable[[TimeSpan], bool] = field(default=lambda _span: True)


@runtime_checkable
class FrameInducer(Protocol):
    """Stage 2: splits a query into an information need and a recall frame."""

    def induce(self, query: str, context: FrameContext) -> RecallFrame:
        """Return the recall frame of ``query``; unreliable constraints are marked ungrounded."""
        ...


@runtime_checkable
class LLM(Protocol):
    """The smallest model interface: a prompt in, a completion out."""

    def complete(self, prompt: str) -> str:
        """Return the model's answer to ``prompt``."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens the way the generator will."""

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...
