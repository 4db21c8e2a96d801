"""One Protocol per pluggable part of RaMem. Fakes for each live in :mod:`ramem_core.testing`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ramem_core.types import Conversation, MemoryUnit, RecallFrame, TimeSpan, Version


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


@runtime_checkable
class MemoryLookup(Protocol):
    """What stage 2 may ask of memory while it grounds a question (one per question, over
    the snapshot its ranking reads: :class:`~ramem_core.retrieval.lookup.SnapshotLookup`)."""

    def locate(self, phrase: str) -> MemoryUnit | None:
        """The memory that names an anchor event ("the trip"), or ``None`` when unsure; its
        event time (else its session span) anchors the relation."""
        ...

    def covers(self, span: TimeSpan) -> bool:
        """True when some memory was said or happened within ``span`` (so "in August" means
        the August memory actually covers)."""
        ...


class NoLookup:
    """A :class:`MemoryLookup` of a memory that knows nothing: no anchor is found, every span
    is covered (what a frame inducer sees without a memory)."""

    def locate(self, phrase: str) -> MemoryUnit | None:
        return None

    def covers(self, span: TimeSpan) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class FrameContext:
    """What a frame inducer may know about the memory when it grounds a query.

    Attributes:
        now: the query's "now": the caller's query time, else the end of the last session.
        memory_range: earliest to latest time the memory knows about (sessions and events);
            ``None`` for an empty memory.
        participants: names known to the memory (speakers and named participants).
        speakers: names of the people who speak in the memory.
        memory: what the inducer may ask of the memory (anchors, coverage).
    """

    now: datetime | None
    memory_range: TimeSpan | None
    participants: tuple[str, ...] = ()
    speakers: tuple[str, ...] = ()
    memory: MemoryLookup = field(default_factory=NoLookup)


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


@runtime_checkable
class Store(Protocol):
    """Where memories live: one collection of memory units (with their vectors) per namespace.

    The store is the single source of truth; everything RaMem holds in memory is derived from
    it. Every write announces itself in the namespace's :meth:`version` with or *after* its
    data (never before), so a reader that reads the version first and the data second holds
    at least what the version announces. Selections are plain values (ids, a conversation id,
    a session id), never a backend's filter syntax.
    :class:`ramem_core.store.chroma.ChromaStore` is the real one,
    :class:`ramem_core.testing.InMemoryStore` the fake.
    """

    @property
    def embedder(self) -> Embedder:
        """The embedder whose vectors the store holds (checked on open, never mixed)."""
        ...

    @property
    def writer(self) -> str:
        """This store's writer id: the first half of its entries in :meth:`version`."""
        ...

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        ...

    def upsert(
        self,
        namespace: str,
        units: Sequence[MemoryUnit],
        vectors: npt.NDArray[np.float32],
        *,
        new_ids: bool = False,
    ) -> int:
        """Insert or replace ``units`` with their vectors, then announce the write; returns how
        many were new. Raises :class:`~ramem_core.errors.StoreError` and leaves nothing of a
        write that failed (``new_ids``: the caller guarantees the ids are new)."""
        ...

    def get(
        self,
        namespace: str,
        *,
        ids: Sequence[str] | None = None,
        conversation_id: str | None = None,
        session_id: str | None = None,
    ) -> list[MemoryUnit]:
        """The memories that match every selection given (all of them when none is)."""
        ...

    def delete(
        self,
        namespace: str,
        *,
        ids: Sequence[str] | None = None,
        conversation_id: str | None = None,
        session_id: str | None = None,
    ) -> int:
        """Delete the memories that match every selection given (at least one); returns the
        count."""
        ...

    def load(self, namespace: str) -> tuple[list[MemoryUnit], npt.NDArray[np.float32]]:
        """Every memory of ``namespace`` with its vector (rows in the same order)."""
        ...

    def count(self, namespace: str) -> int:
        """Number of memories in ``namespace`` (0 for an unknown one, which is not created)."""
        ...

    def version(self, namespace: str) -> Version:
        """The namespace's write version."""
        ...

    def counted(self, namespace: str, version: Version) -> int:
        """:meth:`count`, for a namespace whose :meth:`version` was just read as ``version``
        (call it right after that read): a store that keeps its version beside the memories
        saves a read by it."""
        ...

    def written(self, namespace: str) -> int:
        """This writer's number in :meth:`version` as its own last write there left it (0
        before any), known without asking the backend."""
        ...

    def identity(self, namespace: str) -> str:
        """What tells this namespace from any other, past or present, of any store (a Chroma
        collection's id; ``""`` for a namespace that does not exist): a snapshot file is
        bound to it."""
        ...

    def namespaces(self) -> list[str]:
        """The namespaces that exist, sorted."""
        ...

    def has_namespace(self, namespace: str) -> bool:
        """True when ``namespace`` exists (it may be empty)."""
        ...

    def drop(self, namespace: str) -> None:
        """Delete a namespace and every memory in it."""
        ...

    def close(self) -> None:
        """Release files and connections; later use raises ``StoreError``."""
        ...
