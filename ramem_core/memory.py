"""The RaMem facade: open a memory, add conversations or turns, recall situated evidence."""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import weakref
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, TypedDict, TypeVar

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from typing_extensions import Unpack

from ramem_core import explain, transfer
from ramem_core.anchoring import RuleAnchorer
from ramem_core.errors import InvalidInputError, UncertainWriteError
from ramem_core.frames import RuleFrameInducer
from ramem_core.index.files import DEFAULT_MAX_FILE_BYTES, MIN_MEMORIES, SnapshotFiles
from ramem_core.index.freshness import DEFAULT_CACHE_BYTES, Freshness
from ramem_core.index.snapshot import DamagedUnitError, SessionState, Snapshot
from ramem_core.keyed import KeyedMemories
from ramem_core.live import check_turn, place, placed, turn_unit_id
from ramem_core.loaders import Format, conversation_from_dict, load_conversations
from ramem_core.loaders import validate as validate_conversation
from ramem_core.protocols import (
    LLM,
    Anchorer,
    Embedder,
    FrameInducer,
    Store,
    TokenCounter,
)
from ramem_core.retrieval import RetrievalConfig, Retriever
from ramem_core.store.chroma import DEFAULT_TIMEOUT, ChromaStore, check_namespace
from ramem_core.synthesis import Answer, ContextBlock, answer, fit_budget, strip_echo
from ramem_core.types import (
    DEFAULT_K,
    Conversation,
    EpisodicContext,
    Evidence,
    Kind,
    MemoryUnit,
    Recall,
    RecallFrame,
)
from ramem_core.validation import (
    MAX_QUERY_CHARS,
    MAX_TEXT_CHARS,
    MAX_UNIT_CHARS,
    check_count,
    check_id,
    check_moment,
    check_name,
    check_query,
    check_text,
    check_unit_ids,
    visible,
)

Progress = Callable[[int, int], None]
_EMBED_CHUNK = 256


_EPOCH_DAY = datetime(1970, 1, 1).date()


def _default_embedder() -> Embedder:
    from ramem_core.embedding import MiniLMEmbedder

    return MiniLMEmbedder()


P = ParamSpec("P")
R = TypeVar("R")


def _in_thread(
    method: Callable[Concatenate[RaMem, P], R],
) -> Callable[Concatenate[RaMem, P], Coroutine[Any, Any, R]]:
    """An async twin of ``method`` that runs it in a worker thread (the event loop is never
    blocked by a store call or an embedding), with the same parameters and docs."""

    @functools.wraps(method)
    async def in_thread(self: RaMem, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(getattr(self, method.__name__), *args, **kwargs)

    in_thread.__doc__ = f":meth:`{method.__name__}` in a worker thread.\n\n{method.__doc__}"
    return in_thread


@functools.cache
def _empty_snapshot() -> Snapshot:
    """What a namespace nothing was stored in reads as (shared: a snapshot never changes)."""
    return Snapshot([], None)


def _snapshot_files(
    store: ChromaStore, key: bytes | str | None = None, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> SnapshotFiles | None:
    """Where a Chroma store's snapshot files are kept: a local directory's own
    ``ramem-snapshots`` (snapshots of :data:`MIN_MEMORIES` or more; a small one rebuilds
    faster than a file loads), a server's given ``snapshot_dir`` (every size: each rebuild is
    a network read), else none."""
    if store.snapshot_dir is None:
        return None
    files = SnapshotFiles(
        store.snapshot_dir,
        min_memories=0 if store.remote else MIN_MEMORIES,
        key=key,
        max_bytes=max_bytes,
    )
    files.clean()  # what killed writers left
    return files


def _check_progress(progress: object) -> None:
    if progress is not None and not callable(progress):
        msg = f"progress must be a callable (done, total) or None, got {type(progress).__name__}"
        raise InvalidInputError(msg)


def default_path() -> Path:
    """Where a persistent memory lives by default: ``$RAMEM_HOME``, else
    ``$XDG_DATA_HOME/ramem``, else ``~/.local/share/ramem``."""
    if home := os.environ.get("RAMEM_HOME"):
        return Path(home)
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "ramem"


class Options(TypedDict, total=False):
    """:class:`RaMem`'s keyword arguments that :meth:`RaMem.open` and :meth:`RaMem.ephemeral`
    pass on (see :class:`RaMem` for each)."""

    anchorer: Anchorer | None
    inducer: FrameInducer | None
    config: RetrievalConfig | None
    counter: TokenCounter | None
    llm: LLM | None
    namespace: str
    session_gap: timedelta
    refresh_seconds: float
    cache_bytes: int


@dataclass(frozen=True, slots=True)
class IngestReport:
    """What an ingest did: memory units written and turns/sessions they cover."""

    conversations: int
    sessions: int
    turns: int
    units: int
    new_units: int


class RaMem:
    """Long-term memory that retrieves evidence valid for the question, not just similar to it.

    Args:
        store: where memories live (see :meth:`open` for the usual ways to get one).
        anchorer: stage 1; defaults to :class:`RuleAnchorer`.
        inducer: stage 2; defaults to :class:`RuleFrameInducer`.
        config: stage 3 switches.
        counter: token counter for stage 4 budgets; defaults to tiktoken ``cl100k_base``.
        llm: optional model for :meth:`answer`.
        namespace: the default namespace (tenant) of every call.
        session_gap: a pause after which :meth:`add_turn` opens a new session.
        refresh_seconds: another writer's write is served within this time.
        cache_bytes: how much memory the namespaces' snapshots may take in this worker
            (default :data:`~ramem_core.index.freshness.DEFAULT_CACHE_BYTES`, 1 GiB; size it at
            the memories of the users a worker serves, ~13.5 KB each with the default
            embedder); the least recently used are dropped beyond it.
        files: where snapshot files are loaded from and saved to (:class:`SnapshotFiles`);
            ``None``: none (every restart builds from the store); ``"auto"`` (the default):
            a Chroma store's own (a local directory's ``ramem-snapshots``, a server's
            ``snapshot_dir``), none for any other store. The store protocol knows nothing
            of them: they are this memory's cache policy.
        owns_store: close ``store`` when this memory is closed or collected.
    """

    def __init__(
        self,
        store: Store,
        *,
        anchorer: Anchorer | None = None,
        inducer: FrameInducer | None = None,
        config: RetrievalConfig | None = None,
        counter: TokenCounter | None = None,
        llm: LLM | None = None,
        namespace: str = "default",
        session_gap: timedelta = timedelta(hours=1),
        refresh_seconds: float = 1.0,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        files: SnapshotFiles | Literal["auto"] | None = "auto",
        owns_store: bool = False,
    ) -> None:
        from ramem_core.embedding import RecentQueries

        self.namespace = check_namespace(namespace)
        if not isinstance(session_gap, timedelta) or session_gap <= timedelta(0):
            msg = f"session_gap must be a positive timedelta, got {session_gap!r}"
            raise InvalidInputError(msg)
        self.session_gap = session_gap
        self.store = store
        self.embedder: Embedder = store.embedder
        self.anchorer: Anchorer = anchorer or RuleAnchorer()
        self.inducer: FrameInducer = inducer or RuleFrameInducer()
        self.retriever = Retriever(RecentQueries(self.embedder), config)
        self.snapshots = Freshness(
            store,
            self.retriever.config.keys,
            files=(
                (_snapshot_files(store) if isinstance(store, ChromaStore) else None)
                if files == "auto"
                else files
            ),
            refresh_seconds=refresh_seconds,
            cache_bytes=cache_bytes,
        )
        self.llm = llm
        self._counter = counter
        self._ended: set[tuple[str, str, str]] = set()  # live sessions closed by end_session
        self._lock = threading.RLock()  # one writer at a time; reads never wait for it
        self.keyed = KeyedMemories(store, self.snapshots, self.anchorer, self.embedder, self._lock)
        # a memory dropped without close() still releases its store's files and lock
        self._release = weakref.finalize(self, store.close) if owns_store else None

    def close(self) -> None:
        """Write the snapshot files of namespaces changed since they were loaded (a local
        directory's store), drop the cached snapshots and, for a memory that owns its store
        (made by :meth:`open` or :meth:`ephemeral`), close it: files and connections are
        released."""
        with self._lock:
            self.snapshots.close()
            self._ended.clear()
            if self._release is not None:
                self._release()

    def __enter__(self) -> RaMem:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        *,
        host: str | None = None,
        port: int = 8000,
        ssl: bool = False,
        headers: Mapping[str, str] | None = None,
        tenant: str | None = None,
        database: str | None = None,
        client: Any = None,
        snapshot_dir: str | Path | None = None,
        timeout: float | tuple[float, float] | None = None,
        snapshot_key: bytes | str | None = None,
        snapshot_max_bytes: int = DEFAULT_MAX_FILE_BYTES,
        embedder: Embedder | None = None,
        **options: Unpack[Options],
    ) -> RaMem:
        """Open a memory: a local directory (default :func:`default_path`); with ``host``, a
        Chroma server started with ``chroma run`` (``ssl``, ``headers``, ``tenant`` and
        ``database`` go to Chroma's ``HttpClient``); or, with ``client``, any ready Chroma client
        (an ``HttpClient`` you configured, a ``CloudClient``), which stays yours to close.
        ``snapshot_dir``: where a server's workers keep snapshot files (they may share it; a
        local directory keeps its own). ``embedder`` defaults to the shipped MiniLM; the other
        keyword arguments are :class:`RaMem`'s (:class:`Options`). ``timeout``: a server's
        connect and reply timeout in seconds, one number or a ``(connect, read)`` pair (default
        :data:`~ramem_core.store.chroma.DEFAULT_TIMEOUT`: 5 s to connect, 60 s a reply); a
        stalled server is then a :class:`StoreError`. ``snapshot_key``: the deployment key
        that authenticates snapshot files (HMAC-SHA256; default ``$RAMEM_SNAPSHOT_KEY``), for
        a directory that others than this deployment's workers may write;
        ``snapshot_max_bytes``: the largest snapshot file loaded
        (:data:`~ramem_core.index.files.DEFAULT_MAX_FILE_BYTES`, 8 GiB). See docs/deployment.md
        for what RaMem trusts."""
        server_only = {
            "ssl": ssl,
            "headers": headers,
            "tenant": tenant,
            "database": database,
            "timeout": timeout,
        }
        given = [name for name, value in server_only.items() if value]
        if port != 8000 or isinstance(port, bool):  # a port only reaches a server
            given.append("port")
        if client is not None and (path is not None or host is not None or given):
            named = ", ".join(["path"] * (path is not None) + ["host"] * (host is not None) + given)
            msg = f"pass either a ready Chroma client or how to reach one, not both ({named})"
            raise InvalidInputError(msg)
        if host is None and client is None and (given or snapshot_dir is not None):
            named = ", ".join(given + ["snapshot_dir"] * (snapshot_dir is not None))
            msg = (
                f"{named} {'is' if ',' not in named else 'are'} for a Chroma server (host=... or"
                " client=...); a local directory keeps its snapshot files in DIR/ramem-snapshots"
            )
            raise InvalidInputError(msg)
        embedder = embedder or _default_embedder()
        if client is not None:
            store = ChromaStore.of_client(client, embedder, snapshot_dir=snapshot_dir)
        elif host is not None:
            store = ChromaStore.http(
                host,
                port,
                embedder,
                snapshot_dir=snapshot_dir,
                ssl=ssl,
                headers=headers,
                tenant=tenant,
                database=database,
                timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
            )
        else:
            store = ChromaStore.persistent(path or default_path(), embedder)
        try:
            files = _snapshot_files(store, snapshot_key, snapshot_max_bytes)
        except BaseException:
            store.close()
            raise
        return cls(store, owns_store=True, files=files, **options)

    @classmethod
    def ephemeral(cls, *, embedder: Embedder | None = None, **options: Unpack[Options]) -> RaMem:
        """An in-memory memory (nothing persists), e.g. for demos and tests; the keyword
        arguments are :class:`RaMem`'s (:class:`Options`)."""
        store = ChromaStore.ephemeral(embedder or _default_embedder())
        return cls(store, owns_store=True, **options)

    @property
    def counter(self) -> TokenCounter:
        """The token counter (tiktoken ``cl100k_base`` unless one was given)."""
        if self._counter is None:
            from ramem_core.tokens import TiktokenCounter

            self._counter = TiktokenCounter()
        return self._counter

    def _ns(self, namespace: str | None) -> str:
        return check_namespace(namespace) if namespace is not None else self.namespace

    # ------------------------------------------------------------------ writing

    def add_conversation(
        self,
        conversation: Conversation | Mapping[str, Any],
        *,
        namespace: str | None = None,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Anchor and store a whole conversation; re-adding the same one changes nothing.

        Args:
            conversation: a :class:`Conversation` or a dict in RaMem's JSON format.
            namespace: the tenant to store it in.
            progress: called with ``(done, total)`` memory units while embedding.

        Raises:
            ConversationFormatError: the conversation is malformed; nothing is written.
        """
        return self.add_conversations([conversation], namespace=namespace, progress=progress)

    def add_conversations(
        self,
        conversations: Sequence[Conversation | Mapping[str, Any]],
        *,
        namespace: str | None = None,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Anchor and store several conversations at once (all validated before any write)."""
        ns = self._ns(namespace)
        _check_progress(progress)
        if isinstance(conversations, str | bytes | Mapping | Conversation) or not isinstance(
            conversations, Sequence
        ):
            msg = (
                "conversations must be a list of Conversation objects or dicts, got "
                f"{type(conversations).__name__} (use add_conversation for one)"
            )
            raise InvalidInputError(msg)
        parsed = [
            validate_conversation(c) if isinstance(c, Conversation) else conversation_from_dict(c)
            for c in conversations
        ]
        units = [u for c in parsed for u in self.anchorer.anchor(c)]
        return self._write(ns, parsed, units, progress)

    def add_units(
        self,
        units: Sequence[MemoryUnit],
        *,
        namespace: str | None = None,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Embed and store memory units anchored elsewhere (e.g. by a custom anchorer).

        Raises:
            InvalidInputError: ``units`` is not a list of :class:`MemoryUnit` with one-line ids,
                conversation and session ids, and non-empty contents; nothing is written.
        """
        if not isinstance(units, list | tuple):
            msg = f"units must be a list of MemoryUnit, got {type(units).__name__}"
            raise InvalidInputError(msg)
        for position, unit in enumerate(units):
            if not isinstance(unit, MemoryUnit) or not isinstance(unit.context, EpisodicContext):
                msg = f"units[{position}] must be a MemoryUnit, got {type(unit).__name__}"
                raise InvalidInputError(msg)
            check_id(unit.id, f"units[{position}].id")
            check_unit_ids([unit.id], f"units[{position}].id")
            check_id(unit.context.conversation_id, f"units[{position}] conversation id")
            check_id(unit.context.session_id, f"units[{position}] session id")
            check_text(unit.content, f"units[{position}].content", limit=MAX_UNIT_CHARS)
        _check_progress(progress)
        return self._write_units(self._ns(namespace), units, progress)

    def _write_units(
        self,
        namespace: str,
        units: Sequence[MemoryUnit],
        progress: Progress | None,
        vectors: Sequence[npt.NDArray[np.float32] | None] | None = None,
    ) -> IngestReport:
        """:meth:`_write` of units without their conversations: the report counts the
        conversations, sessions and turns the units come from."""
        sessions = {(u.context.conversation_id, u.context.session_id) for u in units}
        report = self._write(namespace, [], units, progress, vectors)
        turns = len({(u.context.conversation_id, s) for u in units for s in u.source_ids})
        return replace(
            report, conversations=len({c for c, _ in sessions}), sessions=len(sessions), turns=turns
        )

    def add_file(
        self,
        path: str | Path,
        *,
        format: Format = "auto",  # noqa: A002
        namespace: str | None = None,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Read a JSON file (RaMem, LoCoMo or LongMemEval format) and store its conversations."""
        return self.add_conversations(
            load_conversations(path, format), namespace=namespace, progress=progress
        )

    def _write(
        self,
        namespace: str,
        conversations: Sequence[Conversation],
        units: Sequence[MemoryUnit],
        progress: Progress | None,
        vectors: Sequence[npt.NDArray[np.float32] | None] | None = None,
    ) -> IngestReport:
        """Embed and store ``units``; ``vectors``: those already known (``None`` rows are
        embedded)."""
        ids = [u.id for u in units]
        if len(set(ids)) != len(ids):
            msg = "two memory units got the same id: session or turn ids repeat across inputs"
            raise InvalidInputError(msg)
        matrix = np.zeros((len(units), self.embedder.dimension), dtype=np.float32)
        missing = [i for i in range(len(units)) if vectors is None or vectors[i] is None]
        for i, known in enumerate(vectors or ()):
            if known is not None:
                matrix[i] = known
        for begin in range(0, len(missing), _EMBED_CHUNK):
            rows = missing[begin : begin + _EMBED_CHUNK]
            matrix[rows] = self.embedder.embed([units[i].content for i in rows])
            if progress is not None:
                progress(min(begin + _EMBED_CHUNK, len(missing)), len(missing))
        new_units = 0
        if units:
            with self._lock:
                new_units = self.snapshots.write(namespace, units, matrix)
        return IngestReport(
            conversations=len(conversations),
            sessions=sum(len(c.sessions) for c in conversations),
            turns=sum(len(s.turns) for c in conversations for s in c.sessions),
            units=len(units),
            new_units=new_units,
        )

    def add_turn(
        self,
        speaker: str,
        text: str,
        *,
        at: datetime,
        conversation_id: str = "live",
        namespace: str | None = None,
        image_caption: str | None = None,
        new_session: bool = False,
        kind: Kind | None = None,
        idempotency_key: str | None = None,
    ) -> MemoryUnit:
        """Record one message as it arrives (agents).

        A session opens implicitly after a pause longer than ``session_gap``, or explicitly
        with ``new_session=True`` or :meth:`end_session`. The session's span grows with each
        turn without rewriting what is stored: each turn is stored with the span from the
        session's start to its own time, in one write (all or nothing), and readers derive
        the session's span from its turns (:func:`~ramem_core.index.snapshot.session_spans`),
        so a crash between turns never leaves turns that disagree on their session.

        Every call stores a new memory with an id of its own, so several writers recording
        the same conversation never overwrite each other. With ``idempotency_key`` (say, the
        message's id in your chat system), the id is made of the conversation and the key: a
        second call with the same key stores nothing and returns the memory already stored.
        When a write fails in a way that may have stored it
        (:class:`~ramem_core.errors.UncertainWriteError`), calling again with
        ``idempotency_key=error.idempotency_key`` stores it exactly once.

        ``kind`` says what the message is as evidence (:class:`~ramem_core.types.Kind`),
        a statement by default: between people a question carries the conversation ("Did you
        finish the sunset painting?"), and replaying LoCoMo turn by turn as statements ranks
        exactly as bulk ingest (``benchmarks/bench_agent_path.py``). :meth:`add_exchange`,
        what agents record, stores a user's message ending in "?" as a question. A question
        or an assistant's reply is stored without an event time or resolved times (asking
        about August today is not an event in August; a reply's dates restate memories), and
        never outranks a statement it restates or asks about. A reply is stored without what it
        echoed of the memories it was shown (:func:`~ramem_core.synthesis.strip_echo`).

        Raises:
            InvalidInputError: ``at`` is not a datetime or lies outside
                :data:`~ramem_core.validation.EARLIEST`-:data:`~ramem_core.validation.LATEST`;
                an empty or oversized turn, a speaker that is not a one-line name (see
                :mod:`ramem_core.validation`). Nothing is written then.

        Returns:
            The stored memory unit (the first piece of a turn long enough to be stored as
            several, see :data:`~ramem_core.anchoring.PIECE_CHARS`).
        """
        ns = self._ns(namespace)
        turn = check_turn(
            speaker,
            text,
            at=at,
            conversation_id=conversation_id,
            image_caption=image_caption,
            kind=kind,
            idempotency_key=idempotency_key,
        )
        if idempotency_key is not None:  # a retry: stored already?
            stored = self.store.get(ns, ids=[turn_unit_id(turn)])
            if stored:
                return stored[0]
        # anchoring and embedding take most of the time (an LLM anchorer far more): they run
        # outside the lock, on a draft whose session is placed below
        held = self._live_session(ns, conversation_id)
        speakers = dict.fromkeys([*(held.speakers if held else ()), speaker])
        drafts = self.anchorer.anchor(turn.draft(tuple(speakers)))  # a long turn: pieces
        vectors = self.embedder.embed([d.content for d in drafts])
        with self._lock:
            # other threads, and other writers, may have moved on: their turns as stored now
            held = self._live_session(ns, conversation_id, fresh=True)
            ended = held is not None and (ns, conversation_id, held.session_id) in self._ended
            where = place(held, turn, gap=self.session_gap, new_session=new_session, ended=ended)
            units = placed(drafts, turn, where)
            try:
                self.snapshots.write(ns, units, vectors, new_ids=True)  # all or nothing
            except UncertainWriteError as exc:
                raise UncertainWriteError(
                    str(exc), ids=exc.ids, idempotency_key=turn.key
                ) from exc.__cause__
            return units[0]

    # ------------------------------------------------------------------ keyed memories

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
        """Store ``text`` as the memory of ``key``, replacing what ``key`` held (a keyed
        memory: a LangGraph store item, a profile fact an agent updates).

        It is anchored as a turn said by ``speaker`` at ``at`` ("yesterday" resolves against
        ``at``); the writes of one conversation on one day form a session, so they are
        episodes of that day. ``payload`` is kept with it unchanged
        (:attr:`MemoryUnit.payload`). A text longer than
        :data:`~ramem_core.anchoring.PIECE_CHARS` is stored as several pieces, all replaced
        together; the first piece's id is :func:`~ramem_core.keyed.keyed_id` of ``key``
        (:mod:`ramem_core.keyed`, also :attr:`keyed`).

        Raises:
            InvalidInputError: an empty key or text, a bad ``at`` or speaker; nothing is
                written then.
        """
        return self.keyed.put(
            self._ns(namespace),
            key,
            text,
            at=at,
            speaker=speaker,
            conversation_id=conversation_id,
            payload=payload,
        )

    def get_keyed(
        self, keys: Sequence[str], *, namespace: str | None = None
    ) -> dict[str, MemoryUnit]:
        """The memories stored by :meth:`put` under ``keys`` (first pieces), by key; keys
        with none are absent."""
        return self.keyed.get(self._ns(namespace), keys)

    def delete_keyed(self, keys: Sequence[str], *, namespace: str | None = None) -> int:
        """Delete the memories of ``keys`` (every piece); returns how many units went."""
        return self.keyed.delete(self._ns(namespace), keys)

    def _live_session(
        self, namespace: str, conversation_id: str, *, fresh: bool = False
    ) -> SessionState | None:
        """The conversation's latest session as stored (every reader derives it alike);
        ``fresh``: with every write so far (see :meth:`Freshness.get`)."""
        return self._reading(
            namespace, lambda snap: snap.latest_session(conversation_id), fresh=fresh
        )

    def end_session(self, conversation_id: str = "live", *, namespace: str | None = None) -> None:
        """Close the open live session: the next :meth:`add_turn` starts a new one."""
        ns = self._ns(namespace)
        with self._lock:
            live = self._live_session(ns, conversation_id)
            if live is not None:
                self._ended.add((ns, conversation_id, live.session_id))

    # ------------------------------------------------------------------ seeing and moving

    def memories(
        self,
        *,
        namespace: str | None = None,
        conversation_id: str | None = None,
        session_id: str | None = None,
        kind: Kind | str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        after: str | None = None,
    ) -> list[MemoryUnit]:
        """A page of the namespace's memories, newest first (when said, then session, turn
        and id): ``limit`` of them after the memory whose id is ``after`` (the previous
        page's last), of one conversation, session or :class:`Kind`, said within
        ``since``-``until``. Empty for a namespace with no memories.

        Raises:
            InvalidInputError: a bad selection (see :func:`ramem_core.transfer.page`).
        """
        ns = self._ns(namespace)
        for name, value in (("conversation_id", conversation_id), ("session_id", session_id)):
            if value is not None:
                check_id(value, name)
        units = self.store.get(ns, conversation_id=conversation_id, session_id=session_id)
        return transfer.page(units, kind=kind, since=since, until=until, limit=limit, after=after)

    def memory(self, unit_id: str, *, namespace: str | None = None) -> MemoryUnit | None:
        """The memory with id ``unit_id`` (its full episodic context), or ``None``."""
        [checked] = check_unit_ids([unit_id], "unit_id")
        found = self.store.get(self._ns(namespace), ids=[checked])
        return found[0] if found else None

    def export(
        self, path: str | Path, *, namespace: str | None = None, vectors: bool = False
    ) -> int:
        """Write every memory of the namespace to ``path`` as versioned JSON lines
        (:mod:`ramem_core.transfer`), with their vectors when ``vectors``; returns how many.
        A backup, or a move to another directory, server or namespace with
        :meth:`import_from`."""
        ns = self._ns(namespace)
        units, matrix = self.store.load(ns)
        target = Path(path)
        tmp = target.with_name(target.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as out:
            written = transfer.write(
                out,
                ns,
                units,
                matrix if vectors else None,
                self.embedder.name,
                self.embedder.dimension,
            )
        tmp.replace(target)  # never half a file under the name
        return written

    def import_from(
        self,
        path: str | Path,
        *,
        namespace: str | None = None,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Store the memories of an export (:meth:`export`) in the namespace: checked whole
        first (nothing is written when a line is bad), vectors used when they are of this
        memory's embedder, else embedded again; ids kept, so importing twice stores once.

        Raises:
            InvalidInputError: the file is not a RaMem export, or a line of it is bad (named).
        """
        ns = self._ns(namespace)
        _check_progress(progress)
        source = str(path)
        try:
            with Path(path).open(encoding="utf-8") as lines:
                found = transfer.read(lines, source, self.embedder.name, self.embedder.dimension)
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInputError(f"cannot read {source}: {exc}") from exc
        return self._write_units(ns, found.units, progress, found.vectors)

    def explain(
        self,
        question: str,
        *,
        k: int = DEFAULT_K,
        at: datetime | None = None,
        namespace: str | None = None,
    ) -> str:
        """One self-contained HTML page explaining the recall of ``question``: the
        namespace's timeline of sessions and events (inline SVG) with the recall frame drawn
        on it (grounded windows, the anchor, now), and the ranked evidence with its "why
        valid" readings beside content-only's ranking (:mod:`ramem_core.explain`). Nothing in
        it is loaded from the network."""
        from ramem_core.retrieval import CONTENT_ONLY

        ns = self._ns(namespace)
        found = self.recall(question, k=k, at=at, namespace=ns)
        moment = check_moment(at, "at") if at is not None else None
        # content-only's ranking over this memory's own snapshot (its units and vectors,
        # indexed by their own words alone): nothing is read from the store again
        units, vectors = self._reading(ns, lambda snap: (list(snap.units), snap.vectors))
        plain_snap = Snapshot(units, vectors, CONTENT_ONLY.keys)
        content = Retriever(self.retriever.embedder, CONTENT_ONLY)
        plain = content.recall(plain_snap, question, RuleFrameInducer(), k, at=moment)
        return explain.page(question, found, plain.evidence, explain.sessions_of(units), ns)

    # ------------------------------------------------------------------ deleting

    def delete(
        self,
        *,
        namespace: str | None = None,
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
        ns = self._ns(namespace)
        if unit_ids is None and session_id is None and conversation_id is None:
            raise InvalidInputError("delete needs unit_ids, session_id or conversation_id")
        for name, value in (("session_id", session_id), ("conversation_id", conversation_id)):
            if value is not None and (not isinstance(value, str) or not value):
                msg = f"{name} must be a non-empty string, got {value!r}"
                raise InvalidInputError(msg)
        if unit_ids is not None:
            unit_ids = check_unit_ids(unit_ids)
        with self._lock:
            if unit_ids is not None:
                return self.snapshots.delete(ns, ids=list(unit_ids))
            if session_id is not None and conversation_id is None:
                owners = sorted(
                    {u.context.conversation_id for u in self.store.get(ns, session_id=session_id)}
                )
                if len(owners) > 1:
                    msg = (
                        f"session {session_id!r} exists in conversations "
                        f"{', '.join(map(repr, owners))}: name the conversation too"
                    )
                    raise InvalidInputError(msg)
            return self.snapshots.delete(ns, conversation_id=conversation_id, session_id=session_id)

    def drop(self, *, namespace: str | None = None) -> None:
        """Delete a whole namespace (its memories, snapshot and snapshot file)."""
        ns = self._ns(namespace)
        with self._lock:
            self.snapshots.drop(ns)

    def namespaces(self) -> list[str]:
        """The namespaces that hold or held memories, sorted."""
        return sorted(self.store.namespaces())

    def has_namespace(self, namespace: str) -> bool:
        """True when something was ever stored in ``namespace`` (reads never create one)."""
        return self.store.has_namespace(check_namespace(namespace))

    def count(self, *, namespace: str | None = None) -> int:
        """Number of memory units in a namespace."""
        return self.store.count(self._ns(namespace))

    # ------------------------------------------------------------------ reading

    def frame(
        self, query: str, *, at: datetime | None = None, namespace: str | None = None
    ) -> RecallFrame:
        """Stage 2: the recall frame of ``query``, grounded against this memory.

        A namespace nothing was stored in yet gives a frame with nothing grounded.

        Raises:
            InvalidInputError: an empty query, one over
                :data:`~ramem_core.validation.MAX_QUERY_CHARS`, or a bad ``at``.
        """
        query = check_query(query)
        moment = check_moment(at, "at") if at is not None else None
        return self._reading(
            namespace,
            lambda snap: self.retriever.frame(
                self.retriever.probe(snap, query), self.inducer, at=moment
            ),
        )

    def recall(
        self,
        query: str,
        k: int = DEFAULT_K,
        *,
        at: datetime | None = None,
        namespace: str | None = None,
    ) -> Recall:
        """The ``k`` best memories for ``query``: valid ones first, relevant ones after.

        The frame and the ranking read one snapshot of the namespace, so a write that lands
        meanwhile is seen by both or by neither.

        Args:
            query: the question.
            k: how many memories to return.
            at: the query's own time (e.g. LongMemEval's question date); by default the end
                of the last session. Never the wall clock.
            namespace: the tenant to search.

        Returns:
            The evidence, best first, with the recall frame it was chosen by; no evidence for
            a namespace with no memories (a new user's, or an emptied one).

        Raises:
            InvalidInputError: an empty or over-long query, ``k`` not a positive integer, a bad
                ``at`` (see :meth:`frame`).
        """
        check_count(k, "k")
        query = check_query(query)
        moment = check_moment(at, "at") if at is not None else None
        return self._reading(
            namespace, lambda snap: self.retriever.recall(snap, query, self.inducer, k, at=moment)
        )

    def _reading(
        self, namespace: str | None, read: Callable[[Snapshot], R], *, fresh: bool = False
    ) -> R:
        """``read`` of the namespace's snapshot; a snapshot whose units do not decode (a
        damaged or hostile snapshot file) is refused, its file removed, and ``read`` runs
        again on a snapshot rebuilt from the store."""
        try:
            return read(self._snapshot(namespace, fresh=fresh))
        except DamagedUnitError as exc:
            self.snapshots.refuse(self._ns(namespace), exc)
            return read(self._snapshot(namespace, fresh=fresh))

    def _snapshot(self, namespace: str | None, *, fresh: bool = False) -> Snapshot:
        """The namespace's snapshot, or an empty one where nothing was ever stored: a new
        user's reads are empty, not errors, and a read never creates a namespace."""
        ns = self._ns(namespace)
        if not self.store.has_namespace(ns):
            return _empty_snapshot()
        return self.snapshots.get(ns, fresh=fresh)

    def situate(
        self,
        query: str,
        *,
        k: int = DEFAULT_K,
        at: datetime | None = None,
        namespace: str | None = None,
        max_tokens: int | None = 1500,
        tag: str = "memory",
    ) -> ContextBlock:
        """Recall for ``query`` and render the evidence with coordinates, within a budget.

        What framework adapters inject into a prompt, with whole chat messages as queries: a
        query over :data:`~ramem_core.validation.MAX_QUERY_CHARS` keeps its last characters
        (where the question usually is), and an empty or unknown namespace gives an empty
        block.
        """
        check_count(k, "k")
        if max_tokens is not None:
            check_count(max_tokens, "max_tokens")
        if isinstance(query, str) and len(query) > MAX_QUERY_CHARS:
            query = query[-MAX_QUERY_CHARS:]
        found = self.recall(query, k=k, at=at, namespace=namespace)  # empty for a new user
        return self.format(found, max_tokens=max_tokens, tag=tag)

    def add_exchange(
        self,
        user_text: str,
        reply_text: str,
        *,
        at: datetime,
        user: str = "user",
        assistant: str = "assistant",
        conversation_id: str = "live",
        namespace: str | None = None,
    ) -> list[MemoryUnit]:
        """Record one user message and the reply as two live turns (empty sides are skipped).

        The user's message is first-hand: a statement, or a question to the agent when it ends
        in "?" (stored without an event time: asking about August today is not an event in
        August). The reply is stored as a reply (:class:`~ramem_core.types.Kind`): without
        the memories it echoed, without an event time, and never above a statement it
        restates."""
        units = []
        # everything is checked before the first write: an exchange is stored whole or not at all
        for speaker, text in ((user, user_text), (assistant, reply_text)):
            check_name(speaker, "speaker")
            check_text(text, f"{speaker} text", limit=MAX_TEXT_CHARS, required=False)
        check_moment(at, "at")
        check_id(conversation_id, "conversation_id")
        reply = strip_echo(reply_text) if isinstance(reply_text, str) else reply_text
        asked = Kind.QUESTION if user_text.rstrip().endswith("?") else Kind.STATEMENT
        for speaker, text, kind in ((user, user_text, asked), (assistant, reply, Kind.REPLY)):
            if visible(text):
                units.append(
                    self.add_turn(
                        speaker,
                        text,
                        at=at,
                        conversation_id=conversation_id,
                        namespace=namespace,
                        kind=kind,
                    )
                )
        return units

    def format(
        self,
        evidence: Sequence[Evidence],
        *,
        max_tokens: int | None = None,
        with_context: bool = True,
        tag: str = "memory",
    ) -> ContextBlock:
        """Stage 4: render evidence (a :class:`Recall` or a list of :class:`Evidence`) with
        its coordinates, cut to ``max_tokens`` (``tag`` names each memory's element).

        Raises:
            InvalidInputError: ``evidence`` is not a sequence of :class:`Evidence`.
        """
        if isinstance(evidence, str | bytes) or not isinstance(evidence, Sequence):
            msg = f"format needs the evidence recall returned, got {type(evidence).__name__}"
            raise InvalidInputError(msg)
        for position, item in enumerate(evidence):
            if not isinstance(item, Evidence):
                msg = f"evidence[{position}] must be an Evidence, got {type(item).__name__}"
                raise InvalidInputError(msg)
        return fit_budget(
            evidence,
            self.counter,
            max_tokens,
            with_context=with_context,
            session_context=self.retriever.config.session_context,
            tag=tag,
            now=evidence.frame.now if isinstance(evidence, Recall) else None,
        )

    def answer(
        self,
        query: str,
        *,
        k: int = DEFAULT_K,
        at: datetime | None = None,
        namespace: str | None = None,
        llm: LLM | None = None,
        max_tokens: int | None = 2000,
    ) -> Answer:
        """Recall, render with coordinates, and ask ``llm`` (or the memory's LLM) to answer."""
        model = llm or self.llm
        if model is None:
            raise InvalidInputError("answer needs an LLM: pass llm= or construct RaMem(llm=...)")
        found = self.recall(query, k=k, at=at, namespace=namespace)
        return answer(query, self.format(found, max_tokens=max_tokens), model, found.frame.now)

    # ------------------------------------------------------------------ async

    # every method that reads or writes the store, embeds or calls a model has an async twin
    # (the same parameters and docs, run in a worker thread by the one forwarder, _in_thread)
    aadd_conversation = _in_thread(add_conversation)
    aadd_conversations = _in_thread(add_conversations)
    aadd_units = _in_thread(add_units)
    aadd_file = _in_thread(add_file)
    aadd_turn = _in_thread(add_turn)
    aadd_exchange = _in_thread(add_exchange)
    aput = _in_thread(put)
    aget_keyed = _in_thread(get_keyed)
    adelete_keyed = _in_thread(delete_keyed)
    aend_session = _in_thread(end_session)
    amemories = _in_thread(memories)
    amemory = _in_thread(memory)
    aexport = _in_thread(export)
    aimport_from = _in_thread(import_from)
    aexplain = _in_thread(explain)
    adelete = _in_thread(delete)
    adrop = _in_thread(drop)
    anamespaces = _in_thread(namespaces)
    ahas_namespace = _in_thread(has_namespace)
    acount = _in_thread(count)
    aframe = _in_thread(frame)
    arecall = _in_thread(recall)
    asituate = _in_thread(situate)
    aanswer = _in_thread(answer)
