"""The RaMem error hierarchy.

    RaMemError
    ├── InvalidInputError (also a ValueError)
    │   ├── ConversationFormatError   a conversation file or object is malformed
    │   └── NamespaceNotFoundError    a namespace does not exist (reads return empty instead)
    ├── StoreError                    the Chroma store failed or is inconsistent
    │   ├── MemoryInUseError          the memory directory is open in another process
    │   └── UncertainWriteError       a write failed in a way that may have stored it
    ├── ModelUnavailableError         an embedding model or data file is missing
    └── ModelReplyError               a model's reply is not text

Every message names what was wrong and where (file, session, turn), so a user can fix the input.
Nothing is half-written when one of these is raised during ingest.
"""

from __future__ import annotations


class RaMemError(Exception):
    """Base class of every error RaMem raises on purpose."""


class InvalidInputError(RaMemError, ValueError):
    """An argument or an input value is not acceptable."""


class ConversationFormatError(InvalidInputError):
    """A conversation (file, JSON object or Python object) is malformed.

    Attributes:
        source: the file or object the conversation came from, if known.
        session: the session id where the problem is, if known.
        turn: the turn id or index where the problem is, if known.
    """

    def __init__(
        self,
        problem: str,
        *,
        source: str | None = None,
        session: str | None = None,
        turn: str | None = None,
    ) -> None:
        self.problem = problem
        self.source = source
        self.session = session
        self.turn = turn
        where = [
            f"{label} {value!r}"
            for label, value in (("file", source), ("session", session), ("turn", turn))
            if value is not None
        ]
        msg = f"{problem} ({', '.join(where)})" if where else problem
        super().__init__(msg)


class NamespaceNotFoundError(InvalidInputError, LookupError):
    """A namespace that does not exist. Kept for code that catches it: reads of a namespace
    with no memories return empty results (a new user's are not errors)."""

    def __init__(self, namespace: str) -> None:
        # other tenants' namespaces are never named: they are not the caller's to know
        self.namespace = namespace
        super().__init__(f"namespace {namespace!r} does not exist; add memories to it first")


class StoreError(RaMemError):
    """The memory store failed; the message says which operation."""


class MemoryInUseError(StoreError):
    """The memory directory is open in another process (its lock is held). ``ramem mcp``
    reads this as "another host's server owns it" and relays to that server."""


class UncertainWriteError(StoreError):
    """A write whose outcome is unknown: the connection was lost after the request left, and
    the store could not be asked what it kept. It may have been stored.

    A retry is safe: the same ``ids`` (deterministic for conversations and keyed memories) are
    stored once, and :meth:`~ramem_core.RaMem.add_turn` called again with
    ``idempotency_key=error.idempotency_key`` stores the turn once.

    Attributes:
        ids: the ids of the memories the write carried.
        idempotency_key: the key of the live turn it carried (``None`` for other writes).
    """

    def __init__(
        self, message: str, *, ids: tuple[str, ...] = (), idempotency_key: str | None = None
    ) -> None:
        super().__init__(message)
        self.ids = ids
        self.idempotency_key = idempotency_key


class WriteCancelledError(RaMemError):
    """A write its caller cancelled before it reached the store: nothing was stored (a
    retry stores it anew)."""


class ModelUnavailableError(RaMemError):
    """A model or data file RaMem needs is not installed."""


class ModelReplyError(RaMemError):
    """A model (an object with ``complete``) returned something that is not text."""


def reply_text(reply: object, model: object) -> str:
    """``reply`` if it is a string, else :class:`ModelReplyError` naming the model."""
    if not isinstance(reply, str):
        msg = (
            f"the model {type(model).__name__} returned {type(reply).__name__}, not text: "
            "its complete(prompt) must return a str"
        )
        raise ModelReplyError(msg)
    return reply
