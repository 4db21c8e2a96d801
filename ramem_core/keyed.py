"""Keyed memories: a memory stored under a key, replaced by the next write of that key (a
LangGraph store item, a profile fact an agent updates).

A keyed memory is anchored like a turn said at its write time, so it has an episode like any
other memory and is recalled with the others. Its first piece's id is :func:`keyed_id` of its
key; a text longer than one piece is stored as several, all replaced together.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from ramem_core.errors import InvalidInputError
from ramem_core.index.freshness import Freshness
from ramem_core.protocols import Anchorer, Embedder, Store
from ramem_core.twins import in_thread
from ramem_core.types import (
    Conversation,
    Granularity,
    MemoryUnit,
    Session,
    TimeSpan,
    Turn,
)
from ramem_core.validation import MAX_TEXT_CHARS, check_id, check_moment, check_name, check_text

_EPOCH_DAY = datetime(1970, 1, 1).date()


def keyed_id(key: str) -> str:
    """The unit id of the memory stored under ``key`` (its first piece)."""
    return "key-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _check_keys(keys: object) -> list[str]:
    """``keys`` as a list of non-empty strings; a lone string is refused (it would be read
    one character at a time)."""
    if isinstance(keys, str | bytes) or not isinstance(keys, Sequence):
        msg = f"keys must be a sequence of strings (a list), got {type(keys).__name__} {keys!r}"
        raise InvalidInputError(msg)
    for key in keys:
        if not isinstance(key, str) or not key:
            msg = f"every key must be a non-empty string, got {key!r}"
            raise InvalidInputError(msg)
    return list(keys)


class KeyedMemories:
    """Put, get and delete memories by key (``memory.keyed``), through the owner of the
    memory's writes (so a cached snapshot sees them at once).

    Args:
        store: the source of truth (read for the pieces a key has).
        snapshots: the owner of writes and freshness every write goes through.
        anchorer: stage 1, which makes a memory of the text.
        embedder: embeds the pieces.
        lock: the memory's writer lock (one writer at a time).
        namespace_of: the namespace a call names, or the memory's default for ``None``.
    """

    def __init__(
        self,
        store: Store,
        snapshots: Freshness,
        anchorer: Anchorer,
        embedder: Embedder,
        lock: threading.RLock,
        namespace_of: Callable[[str | None], str],
    ) -> None:
        self.store = store
        self.snapshots = snapshots
        self.anchorer = anchorer
        self.embedder = embedder
        self._lock = lock
        self._namespace_of = namespace_of

    def put(
        self,
        key: str,
        text: str,
        *,
        at: datetime,
        speaker: str = "user",
        conversation_id: str = "store",
        payload: str = "",
        namespace: str | None = None,
    ) -> list[MemoryUnit]:
        """Store ``text`` as the memory of ``key``, replacing what ``key`` held (a LangGraph
        store item, a profile fact an agent updates).

        It is anchored as a turn said by ``speaker`` at ``at`` ("yesterday" resolves against
        ``at``); the writes of one conversation on one day form a session. ``payload`` is
        kept with it unchanged (:attr:`MemoryUnit.payload`). A long text is stored as several
        pieces, all replaced together; the first piece's id is :func:`keyed_id` of ``key``.

        Raises:
            InvalidInputError: an empty key or text, a bad ``at`` or speaker; nothing is
                written then.
        """
        namespace = self._namespace_of(namespace)
        if not isinstance(key, str) or not key:
            msg = f"key must be a non-empty string, got {key!r}"
            raise InvalidInputError(msg)
        moment = check_moment(at, "at")
        check_name(speaker, "speaker")
        check_id(conversation_id, "conversation_id")
        text = check_text(text, f"text of key {key!r}", limit=MAX_TEXT_CHARS)
        if not isinstance(payload, str):
            msg = f"payload must be a string, got {type(payload).__name__}"
            raise InvalidInputError(msg)
        base = keyed_id(key)
        day = moment.date()
        session_id = f"{conversation_id}-{day.isoformat()}"
        turn = Turn(f"{session_id}:{base}", speaker, text, moment)
        drafts = self.anchorer.anchor(
            Conversation(conversation_id, (Session(session_id, (turn,), moment),), (speaker,))
        )
        vectors = self.embedder.embed([d.content for d in drafts])
        seconds = moment.hour * 3600 + moment.minute * 60 + moment.second
        units = [
            replace(
                draft,
                id=base if part == 0 else f"{base}-p{part}",
                source_ids=(f"{base}/{len(drafts)}",),  # the key's piece count, for replacing
                payload=payload,
                context=replace(
                    draft.context,
                    session_span=TimeSpan(moment, moment, Granularity.INSTANT),
                    session_index=(day - _EPOCH_DAY).days,
                    turn_index=seconds,
                ),
            )
            for part, draft in enumerate(drafts)
        ]
        with self._lock:
            before = self._pieces(namespace, base)
            self.snapshots.write(namespace, units, vectors)
            stale = [f"{base}-p{part}" for part in range(len(units), before)]
            if stale:
                self.snapshots.delete(namespace, ids=stale)
        return units

    def get(self, keys: Sequence[str], *, namespace: str | None = None) -> dict[str, MemoryUnit]:
        """The memories stored under ``keys`` (first pieces), by key; keys with none are
        absent."""
        namespace = self._namespace_of(namespace)
        keys = _check_keys(keys)
        if not self.store.has_namespace(namespace):
            return {}
        ids = {keyed_id(k): k for k in keys}
        return {ids[u.id]: u for u in self.store.get(namespace, ids=list(ids))}

    def delete(self, keys: Sequence[str], *, namespace: str | None = None) -> int:
        """Delete the memories of ``keys`` (every piece); returns how many units went."""
        namespace = self._namespace_of(namespace)
        keys = _check_keys(keys)
        if not self.store.has_namespace(namespace):
            return 0
        with self._lock:
            ids = []
            for key in keys:
                base = keyed_id(key)
                ids += _ids(base, self._pieces(namespace, base))
            return self.snapshots.delete(namespace, ids=ids) if ids else 0

    def items(self, *, namespace: str | None = None) -> list[MemoryUnit]:
        """Every keyed memory of the namespace (first pieces), in the store's order."""
        namespace = self._namespace_of(namespace)
        if not self.store.has_namespace(namespace):
            return []
        return [u for u in self.store.get(namespace) if _is_first_piece(u.id)]

    aput = in_thread(put)
    aget = in_thread(get)
    adelete = in_thread(delete)
    aitems = in_thread(items)

    def _pieces(self, namespace: str, base: str) -> int:
        """How many pieces the keyed memory ``base`` has stored (0 when none)."""
        if not self.store.has_namespace(namespace):
            return 0
        found = self.store.get(namespace, ids=[base])
        return _count(found[0]) if found and found[0].source_ids else 0


def piece_ids(first: MemoryUnit) -> list[str]:
    """Every piece of the keyed memory whose first piece is ``first``, in order (pieces
    after the first are ``<id>-p1``, ``<id>-p2``, ... and each records the count)."""
    return _ids(first.id, _count(first))


def _count(first: MemoryUnit) -> int:
    _, _, count = first.source_ids[0].rpartition("/") if first.source_ids else ("", "", "")
    return int(count) if count.isdigit() else 1


def _ids(base: str, pieces: int) -> list[str]:
    return [base, *(f"{base}-p{part}" for part in range(1, pieces))]


def _is_first_piece(unit_id: str) -> bool:
    return unit_id.startswith("key-") and len(unit_id) == 36
