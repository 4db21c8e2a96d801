"""The RaMem facade: open a memory, add conversations or turns, recall situated evidence.

What is not reading or writing a namespace lives beside it: keyed memories in
:attr:`RaMem.keyed` (:mod:`ramem_core.keyed`), pages, export and import in
:attr:`RaMem.transfer` (:mod:`ramem_core.transfer`), the explain page in
:func:`ramem_core.explain.page`, and how a store is opened in :mod:`ramem_core.store.opening`.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from typing_extensions import Unpack

from ramem_core.anchoring import RuleAnchorer
from ramem_core.errors import InvalidInputError
from ramem_core.frames import RuleFrameInducer
from ramem_core.index.files import DEFAULT_MAX_FILE_BYTES, SnapshotFiles
from ramem_core.index.freshness import DEFAULT_CACHE_BYTES, Freshness
from ramem_core.keyed import KeyedMemories
from ramem_core.live import LiveSessions, check_turn, exchange
from ramem_core.loaders import Format, conversations_of, load_conversations
from ramem_core.protocols import LLM, Anchorer, Embedder, FrameInducer, Store, TokenCounter
from ramem_core.retrieval import RetrievalConfig, Retriever
from ramem_core.store.chroma import ChromaStore, check_namespace
from ramem_core.store.opening import Reach, default_path, open_store
from ramem_core.synthesis import Answer, ContextBlock, answer, fit_budget
from ramem_core.transfer import Transfer
from ramem_core.twins import cancellable_in_thread, in_thread
from ramem_core.types import (
    DEFAULT_K,
    Conversation,
    Evidence,
    IngestReport,
    Kind,
    MemoryUnit,
    Recall,
    RecallFrame,
)
from ramem_core.validation import (
    MAX_QUERY_CHARS,
    check_count,
    check_evidence,
    check_moment,
    check_query,
    check_units,
)
from ramem_core.writing import Progress, Writer, check_progress

__all__ = ["IngestReport", "Options", "RaMem", "default_path"]


def _default_embedder() -> Embedder:
    from ramem_core.embedding import MiniLMEmbedder

    return MiniLMEmbedder()


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


class _Namespaces:
    """The namespace a call names, else the memory's default (held apart from the memory, so
    its parts do not hold the memory alive)."""

    def __init__(self, default: str) -> None:
        self.default = check_namespace(default)

    def __call__(self, namespace: str | None) -> str:
        return check_namespace(namespace) if namespace is not None else self.default


class OpenOptions(Options, Reach, total=False):
    """:meth:`RaMem.open`'s keyword arguments: how to reach the store, then the memory's."""


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
            (default 1 GiB, ~13.5 KB a memory with the default embedder); the least recently
            used are dropped beyond it.
        files: where snapshot files are loaded from and saved to (:class:`SnapshotFiles`);
            ``None``: none; ``"auto"`` (the default): a Chroma store's own, none for any other.
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

        self._ns = _Namespaces(namespace)
        self.store = store
        self.embedder: Embedder = store.embedder
        self.anchorer: Anchorer = anchorer or RuleAnchorer()
        self.inducer: FrameInducer = inducer or RuleFrameInducer()
        self.retriever = Retriever(RecentQueries(self.embedder), config)
        self.snapshots = Freshness(
            store,
            self.retriever.config.keys,
            files=SnapshotFiles.of_store(store) if files == "auto" else files,
            refresh_seconds=refresh_seconds,
            cache_bytes=cache_bytes,
        )
        self.llm = llm
        self._counter = counter
        self._lock = threading.RLock()  # one writer at a time; reads never wait for it
        parts = (store, self.snapshots, self.anchorer, self.embedder, self._lock)
        self.live = LiveSessions(*parts, session_gap)
        self.writer = Writer(self.embedder, self.snapshots, self._lock)
        self.keyed = KeyedMemories(*parts, self._ns)
        """Memories stored under a key, replaced by the key's next write."""
        self.transfer = Transfer(store, self.snapshots, self.writer, self._ns)
        """Pages of memories, one memory by id, export and import."""
        # a memory dropped without close() still releases its store's files and lock
        self._release = weakref.finalize(self, store.close) if owns_store else None

    def close(self) -> None:
        """Write the snapshot files of namespaces changed since they were loaded, drop the
        cached snapshots and, for a memory that owns its store (made by :meth:`open` or
        :meth:`ephemeral`), close it: files and connections are released."""
        with self._lock:
            self.snapshots.close()
            self.live.clear()
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
        embedder: Embedder | None = None,
        **given: Unpack[OpenOptions],
    ) -> RaMem:
        """Open a memory: a local directory (default :func:`default_path`), a Chroma server
        started with ``chroma run`` (``host=``, ``port=``, ...), or a ready Chroma ``client``:
        the keyword arguments of :class:`~ramem_core.store.opening.Reach`, then
        :class:`RaMem`'s (:class:`Options`). ``embedder`` defaults to the shipped MiniLM. See
        docs/deployment.md for what RaMem trusts."""
        options: dict[str, Any] = dict(given)
        reach = {name: options.pop(name) for name in Reach.__annotations__ if name in options}
        key = reach.pop("snapshot_key", None)
        max_bytes = reach.pop("snapshot_max_bytes", DEFAULT_MAX_FILE_BYTES)
        store = open_store(path, embedder or _default_embedder(), **reach)
        try:
            files = SnapshotFiles.of_store(store, key=key, max_bytes=max_bytes)
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

    @property
    def namespace(self) -> str:
        """The default namespace (tenant) of every call."""
        return self._ns.default

    @namespace.setter
    def namespace(self, namespace: str) -> None:
        self._ns.default = check_namespace(namespace)

    # ------------------------------------------------------------------ writing

    def add_conversation(
        self,
        conversation: Conversation | Mapping[str, Any],
        *,
        namespace: str | None = None,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Anchor and store a whole conversation (a :class:`Conversation` or a dict in RaMem's
        JSON format); re-adding the same one changes nothing. ``progress`` is called with
        ``(done, total)`` memory units while embedding.

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
        check_progress(progress)
        parsed = conversations_of(conversations)
        units = [u for c in parsed for u in self.anchorer.anchor(c)]
        return self.writer.write(ns, parsed, units, progress)

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
        checked = check_units(units)
        check_progress(progress)
        return self.writer.write_units(self._ns(namespace), checked, progress)

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
        cancelled: Callable[[], bool] | None = None,
    ) -> MemoryUnit:
        """Record one message as it arrives (agents); returns its memory (the first piece of
        a long one). A session opens after a pause longer than ``session_gap``, or with
        ``new_session=True`` or :meth:`end_session` (:mod:`ramem_core.live`). With
        ``idempotency_key`` (your chat system's message id; after an
        :class:`~ramem_core.errors.UncertainWriteError`, its ``idempotency_key``) a retry
        stores nothing. ``kind``: a question or an assistant's reply is stored without an
        event time and never outranks a statement it restates or asks about. ``cancelled``
        (e.g. ``event.is_set`` of a ``threading.Event`` your request's cancellation sets) is
        asked while a long message is embedded and just before the write: once it returns
        true, nothing is stored and :class:`~ramem_core.errors.WriteCancelledError` is raised.

        Raises:
            InvalidInputError: a bad ``at``, an empty or oversized turn, a speaker that is not
                a one-line name; nothing is written then.
            WriteCancelledError: ``cancelled`` said so before the write; nothing is written.
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
        if cancelled is not None and not callable(cancelled):
            msg = f"cancelled must be a function that says whether to stop, got {cancelled!r}"
            raise InvalidInputError(msg)
        return self.live.record(ns, turn, new_session=new_session, cancelled=cancelled)

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
        """Record a user's message and the reply as two live turns (empty sides are skipped),
        stored whole or not at all: the message as a statement, or a question when it ends in
        "?"; the reply as a reply (:func:`ramem_core.live.exchange`)."""
        ns = self._ns(namespace)
        turns = exchange(
            user_text,
            reply_text,
            at=at,
            user=user,
            assistant=assistant,
            conversation_id=conversation_id,
        )
        return [self.live.record(ns, turn) for turn in turns]

    def end_session(self, conversation_id: str = "live", *, namespace: str | None = None) -> None:
        """Close the open live session: the next :meth:`add_turn` starts a new one."""
        self.live.end(self._ns(namespace), conversation_id)

    # ------------------------------------------------------------------ deleting and counting

    def delete(
        self,
        *,
        namespace: str | None = None,
        unit_ids: Sequence[str] | None = None,
        session_id: str | None = None,
        conversation_id: str | None = None,
    ) -> int:
        """Delete memories by unit ids, by session, or by conversation; returns the count
        (see :meth:`~ramem_core.writing.Writer.delete`)."""
        ns = self._ns(namespace)
        return self.writer.delete(ns, unit_ids, session_id, conversation_id)

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
        """Stage 2: the recall frame of ``query``, grounded against this memory (nothing is
        grounded in a namespace nothing was stored in yet).

        Raises:
            InvalidInputError: an empty or over-long query, or a bad ``at``.
        """
        query = check_query(query)
        moment = check_moment(at, "at") if at is not None else None
        probe = self.retriever.probe
        return self.snapshots.read(
            self._ns(namespace),
            lambda snap: self.retriever.frame(probe(snap, query), self.inducer, at=moment),
        )

    def recall(
        self,
        query: str,
        k: int = DEFAULT_K,
        *,
        at: datetime | None = None,
        namespace: str | None = None,
    ) -> Recall:
        """The ``k`` best memories for ``query``: valid ones first, relevant ones after, with
        the recall frame they were chosen by (no evidence in a namespace with no memories).

        ``at`` is the moment of asking (e.g. LongMemEval's question date); by default the end
        of the last session, never the wall clock. The frame and the ranking read one
        snapshot, so a write that lands meanwhile is seen by both or by neither.

        Raises:
            InvalidInputError: an empty or over-long query, ``k`` not a positive integer, a bad
                ``at``.
        """
        check_count(k, "k")
        query = check_query(query)
        moment = check_moment(at, "at") if at is not None else None
        return self.snapshots.read(
            self._ns(namespace),
            lambda snap: self.retriever.recall(snap, query, self.inducer, k, at=moment),
        )

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
        """Recall for ``query`` and render the evidence with coordinates, within a budget:
        what framework adapters put in a prompt. A whole chat message over
        :data:`~ramem_core.validation.MAX_QUERY_CHARS` keeps its last characters (where the
        question usually is); an empty or unknown namespace gives an empty block."""
        check_count(k, "k")
        if max_tokens is not None:
            check_count(max_tokens, "max_tokens")
        if isinstance(query, str) and len(query) > MAX_QUERY_CHARS:
            query = query[-MAX_QUERY_CHARS:]
        found = self.recall(query, k=k, at=at, namespace=namespace)  # empty for a new user
        return self.format(found, max_tokens=max_tokens, tag=tag)

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
        return fit_budget(
            check_evidence(evidence),
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

    # ------------------------------------------------------------------ async twins

    aadd_conversation = in_thread(add_conversation)
    aadd_conversations = in_thread(add_conversations)
    aadd_units = in_thread(add_units)
    aadd_file = in_thread(add_file)
    aadd_turn = cancellable_in_thread(add_turn)
    aadd_exchange = in_thread(add_exchange)
    aend_session = in_thread(end_session)
    adelete = in_thread(delete)
    adrop = in_thread(drop)
    anamespaces = in_thread(namespaces)
    ahas_namespace = in_thread(has_namespace)
    acount = in_thread(count)
    aframe = in_thread(frame)
    arecall = in_thread(recall)
    asituate = in_thread(situate)
    aanswer = in_thread(answer)
