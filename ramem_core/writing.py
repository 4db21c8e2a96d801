"""The write path every ingest takes: embed what has no vector yet, in chunks with progress,
then one write through the owner of the namespace's freshness."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from ramem_core.errors import InvalidInputError
from ramem_core.index.freshness import Freshness
from ramem_core.protocols import Embedder
from ramem_core.types import Conversation, IngestReport, MemoryUnit
from ramem_core.validation import check_unit_ids

Progress = Callable[[int, int], None]
"""Called with ``(done, total)`` memory units while an ingest embeds."""
EMBED_CHUNK = 256
"""Units embedded per call between two progress reports."""


def check_progress(progress: object) -> None:
    if progress is not None and not callable(progress):
        msg = f"progress must be a callable (done, total) or None, got {type(progress).__name__}"
        raise InvalidInputError(msg)


class Writer:
    """Embeds and stores units for one memory (one writer at a time, under its ``lock``)."""

    def __init__(self, embedder: Embedder, snapshots: Freshness, lock: threading.RLock) -> None:
        self.embedder = embedder
        self.snapshots = snapshots
        self.lock = lock

    def write(
        self,
        namespace: str,
        conversations: Sequence[Conversation],
        units: Sequence[MemoryUnit],
        progress: Progress | None = None,
        vectors: Sequence[npt.NDArray[np.float32] | None] | None = None,
    ) -> IngestReport:
        """Embed and store ``units`` (of ``conversations``, which the report counts);
        ``vectors``: those already known (``None`` rows are embedded)."""
        ids = [u.id for u in units]
        if len(set(ids)) != len(ids):
            msg = "two memory units got the same id: session or turn ids repeat across inputs"
            raise InvalidInputError(msg)
        matrix = np.zeros((len(units), self.embedder.dimension), dtype=np.float32)
        missing = [i for i in range(len(units)) if vectors is None or vectors[i] is None]
        # by length, so each chunk's batches are those of one embed call over all of them
        missing.sort(key=lambda i: len(units[i].content))
        for i, known in enumerate(vectors or ()):
            if known is not None:
                matrix[i] = known
        for begin in range(0, len(missing), EMBED_CHUNK):
            rows = missing[begin : begin + EMBED_CHUNK]
            matrix[rows] = self.embedder.embed([units[i].content for i in rows])
            if progress is not None:
                progress(min(begin + EMBED_CHUNK, len(missing)), len(missing))
        new_units = 0
        if units:
            with self.lock:
                new_units = self.snapshots.write(namespace, units, matrix)
            self.snapshots.prepare(namespace, len(units))  # the first recall reads its file
        return IngestReport(
            conversations=len(conversations),
            sessions=sum(len(c.sessions) for c in conversations),
            turns=sum(len(s.turns) for c in conversations for s in c.sessions),
            units=len(units),
            new_units=new_units,
        )

    def delete(
        self,
        namespace: str,
        unit_ids: Sequence[str] | None = None,
        session_id: str | None = None,
        conversation_id: str | None = None,
    ) -> int:
        """Delete memories by unit ids, by session, or by conversation; returns the count.

        Targets are plain strings (never filter expressions). A session is deleted within its
        conversation: ``session_id`` alone is accepted only when exactly one conversation of
        the namespace has a session of that id. Deleted memories are never served again.

        Raises:
            InvalidInputError: no target, a target that is not a plain string, or a session id
                shared by several conversations without ``conversation_id``.
        """
        if unit_ids is None and session_id is None and conversation_id is None:
            raise InvalidInputError("delete needs unit_ids, session_id or conversation_id")
        for name, value in (("session_id", session_id), ("conversation_id", conversation_id)):
            if value is not None and (not isinstance(value, str) or not value):
                raise InvalidInputError(f"{name} must be a non-empty string, got {value!r}")
        with self.lock:
            if unit_ids is not None:
                return self.snapshots.delete(namespace, ids=check_unit_ids(unit_ids))
            if session_id is not None and conversation_id is None:
                found = self.snapshots.store.get(namespace, session_id=session_id)
                owners = sorted({u.context.conversation_id for u in found})
                if len(owners) > 1:
                    msg = (
                        f"session {session_id!r} exists in conversations "
                        f"{', '.join(map(repr, owners))}: name the conversation too"
                    )
                    raise InvalidInputError(msg)
            return self.snapshots.delete(
                namespace, conversation_id=conversation_id, session_id=session_id
            )

    def write_units(
        self,
        namespace: str,
        units: Sequence[MemoryUnit],
        progress: Progress | None = None,
        vectors: Sequence[npt.NDArray[np.float32] | None] | None = None,
    ) -> IngestReport:
        """:meth:`write` of units without their conversations: the report counts the
        conversations, sessions and turns the units come from."""
        sessions = {(u.context.conversation_id, u.context.session_id) for u in units}
        report = self.write(namespace, [], units, progress, vectors)
        turns = len({(u.context.conversation_id, s) for u in units for s in u.source_ids})
        return IngestReport(
            conversations=len({c for c, _ in sessions}),
            sessions=len(sessions),
            turns=turns,
            units=report.units,
            new_units=report.new_units,
        )
