"""RaMem as a LangGraph store: ``create_agent(..., store=RaMemStore(memory))`` and langmem's tools.

A put is a memory with its episode (:meth:`ramem_core.RaMem.put`): the write time as session
time (or the value's ``said_at`` ISO time), the run's ``thread_id`` as the conversation, the
namespace's owner as speaker unless the value names a ``speaker``. ``search(query=...)`` goes
through RaMem's recall frame, so "what did I plan last August?" or "after the move" is
grounded against the namespace's own time range.

TTL follows LangGraph's ``TTLConfig``: an item put with a ``ttl`` (minutes) expires that long
after its last write or refreshing read; its expiry is kept in the item's own stored record, so
it holds for every worker and after a restart. An expired item is hidden from every read at
once and deleted by :meth:`RaMemStore.sweep_ttl` (or the sweeper thread).

Namespaces: the first ``tenant_depth`` labels of a LangGraph namespace name one RaMem
namespace (``("memories", "u-42")`` is ``lg.memories.u-42``); deeper labels are kept with each
item, so prefix searches and listings match whole labels. Everything is answered from what is
stored, never from a process-local registry, so several workers can share one Chroma server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any, cast

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from langchain_ramem.filters import as_time, check_filter, matches
from ramem_core import InvalidInputError, RaMem
from ramem_core.keyed import keyed_id, piece_ids
from ramem_core.types import MemoryUnit, utc_now
from ramem_core.validation import EARLIEST, LATEST, MAX_QUERY_CHARS, check_name

PREFIX = "lg"
"""RaMem namespaces of a :class:`RaMemStore` start with ``lg.``."""

DEFAULT_FIELDS = ("content", "content.content")
"""Where the indexed text of a value is looked for, in order (``content.content`` is how
langmem writes a schema'd memory); a value with none of them is indexed as its JSON."""

DEFAULT_SWEEP_MINUTES = 5.0
"""How often the TTL sweeper runs when neither its call nor the TTL config says."""

log = logging.getLogger(__name__)

_SAFE = re.compile(r"[A-Za-z0-9-]")
_MAX_NAME = 122


# --------------------------------------------------------------------------- namespaces


def encode_tenant(tenant: tuple[str, ...]) -> str:
    """The RaMem namespace of a tenant tuple: ``lg`` and each label after a ``.``, characters
    other than letters, digits and inner ``-`` written as ``_xx`` (UTF-8 bytes in hex);
    reversible (:func:`decode_tenant`). A name longer than 122 characters becomes
    ``lg-h`` and a hash (its labels are then read from the items)."""
    parts = [PREFIX]
    for label in tenant:
        out = []
        for position, char in enumerate(label):
            edge = char == "-" and position in (0, len(label) - 1)
            if _SAFE.fullmatch(char) and not edge:
                out.append(char)
            else:
                out.append("".join(f"_{b:02x}" for b in char.encode("utf-8")))
        parts.append("".join(out))
    name = ".".join(parts)
    if len(name) > _MAX_NAME:
        import hashlib

        digest = hashlib.sha256(json.dumps(list(tenant)).encode("utf-8")).hexdigest()[:40]
        return f"{PREFIX}-h{digest}"
    return name


def decode_tenant(name: str) -> tuple[str, ...] | None:
    """The tenant tuple of a RaMem namespace made by :func:`encode_tenant`; ``None`` for a
    hashed name or a namespace that is not a store's."""
    if not name.startswith(PREFIX + "."):
        return None
    labels = []
    for part in name[len(PREFIX) + 1 :].split("."):
        raw = bytearray()
        for m in re.finditer(r"_([0-9a-f]{2})|([A-Za-z0-9-])", part):
            raw += bytes([int(m.group(1), 16)]) if m.group(1) else m.group(2).encode("ascii")
        try:
            labels.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            return None
    return tuple(labels)


def _is_store_namespace(name: str) -> bool:
    return name.startswith((PREFIX + ".", PREFIX + "-h"))


# --------------------------------------------------------------------------- TTL

_TTL_KEYS = ("default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired")


def _check_minutes(value: Any, name: str) -> None:
    """Raise :class:`InvalidInputError` unless ``value`` is ``None`` or a finite number of
    minutes above 0."""
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        msg = f"{name} must be a positive number of minutes or None, got {value!r}"
        raise InvalidInputError(msg)


def _check_ttl_config(config: Any) -> TTLConfig | None:
    """``config`` when it is a valid LangGraph ``TTLConfig`` (or ``None``).

    Raises:
        InvalidInputError: naming the key that is unknown or has a bad value.
    """
    if config is None:
        return None
    if not isinstance(config, Mapping):
        msg = f"ttl must be a TTLConfig dict, got {type(config).__name__}"
        raise InvalidInputError(msg)
    for key in config:
        if key not in _TTL_KEYS:
            msg = f"unknown TTL setting {key!r}: use {', '.join(_TTL_KEYS)}"
            raise InvalidInputError(msg)
    _check_minutes(config.get("default_ttl"), "default_ttl")
    _check_minutes(config.get("sweep_interval_minutes"), "sweep_interval_minutes")
    if not isinstance(config.get("refresh_on_read", True), bool):
        msg = f"refresh_on_read must be True or False, got {config['refresh_on_read']!r}"
        raise InvalidInputError(msg)
    if config.get("omit_expired", True) is not True:
        msg = "omit_expired must be True: RaMemStore always hides expired items"
        raise InvalidInputError(msg)
    return cast(TTLConfig, dict(config))


def _aware(moment: datetime) -> datetime:
    """A clock's reading as an aware UTC time (a naive one is UTC)."""
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def _once(clock: Callable[[], datetime]) -> Callable[[], datetime]:
    """``clock``, read on first use only: one batch sees one time, and a batch that meets no
    TTL never reads it."""
    moment: list[datetime] = []

    def now() -> datetime:
        if not moment:
            moment.append(_aware(clock()))
        return moment[0]

    return now


def _expiry(now: datetime, minutes: float) -> datetime:
    try:
        return now + timedelta(minutes=minutes)
    except OverflowError:  # past year 9999: never
        return datetime.max.replace(tzinfo=timezone.utc)


def _expired(record: Mapping[str, Any], now: Callable[[], datetime]) -> bool:
    expires = record.get("expires")
    return expires is not None and datetime.fromisoformat(expires) <= now()


# --------------------------------------------------------------------------- the store


def _in_run_thread() -> str | None:
    """The ``thread_id`` of the LangGraph run this call is part of, if any."""
    try:
        from langgraph.config import get_config

        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a run
        return None
    thread = configurable.get("thread_id")
    return str(thread) if thread is not None else None


def _record(unit: MemoryUnit) -> dict[str, Any] | None:
    try:
        record = json.loads(unit.payload)
    except ValueError:
        return None
    return record if isinstance(record, dict) and "key" in record else None


def _item(record: Mapping[str, Any], score: float | None = None, *, ranked: bool = False) -> Item:
    fields: dict[str, Any] = {
        "namespace": tuple(record["ns"]),
        "key": record["key"],
        "value": record["value"],
        "created_at": datetime.fromisoformat(record["created"]),
        "updated_at": datetime.fromisoformat(record["updated"]),
    }
    return SearchItem(**fields, score=score) if ranked else Item(**fields)


class RaMemStore(BaseStore):
    """A LangGraph ``BaseStore`` whose search is RaMem's episodic recall.

    Args:
        memory: the RaMem the items live in (its store decides where: local or a Chroma
            server).
        tenant_depth: how many leading namespace labels name one RaMem namespace (one user's
            memory); deeper labels are kept with the items.
        fields: where a value's indexed text is (dotted paths, as LangGraph's
            ``IndexConfig.fields``); default :data:`DEFAULT_FIELDS`, else the value's JSON.
        time_field: a value key holding the item's own ISO time (session time), used instead
            of the write time when present, parseable and within RaMem's years
            (:data:`~ramem_core.validation.EARLIEST`-:data:`~ramem_core.validation.LATEST`);
            the value itself is stored as given either way.
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes) for puts that name no
            ``ttl``, ``refresh_on_read`` (default True) for reads that name no
            ``refresh_ttl``, ``sweep_interval_minutes`` for :meth:`start_ttl_sweeper`.
        clock: the current time (naive UTC): write times and expiry.

    Differences from LangGraph's ``InMemoryStore`` (the reference): ``created_at`` is kept
    when an item is updated; a query always ranks (RaMem indexes every store); scores are
    ``1 / rank`` within one RaMem namespace, and a search spanning several interleaves them by
    rank; ordering filters compare numbers as numbers and ISO dates as times; ``$and`` /
    ``$or`` are supported; a namespace whose items are all deleted is no longer listed; a
    queryless search lists the latest update first; a malformed filter is an
    :class:`~ramem_core.InvalidInputError` before anything in the batch runs. TTL follows
    LangGraph's documented semantics (``InMemoryStore`` has none), with expired items always
    hidden (``omit_expired`` True); a refreshing read of an item with a TTL rewrites its
    pieces, with their episode unchanged.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: RaMem,
        *,
        tenant_depth: int = 2,
        fields: Sequence[str] | None = None,
        time_field: str | None = "said_at",
        ttl: TTLConfig | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        if isinstance(tenant_depth, bool) or not isinstance(tenant_depth, int) or tenant_depth < 1:
            msg = f"tenant_depth must be a positive integer, got {tenant_depth!r}"
            raise InvalidInputError(msg)
        self.memory = memory
        self.tenant_depth = tenant_depth
        self.fields = tuple(fields) if fields is not None else DEFAULT_FIELDS
        self._paths = [(f, tokenize_path(f)) for f in self.fields]
        self.time_field = time_field
        self.ttl_config = _check_ttl_config(ttl)
        self.clock = clock
        self._lock = threading.RLock()  # a put, a refresh and a sweep never interleave
        self._sweeper: tuple[threading.Thread, threading.Event, Future[None]] | None = None

    # ------------------------------------------------------------------ the contract

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ``ops``: reads see the store as it was before the batch's writes; the last
        put to a key wins, and items read with ``refresh_ttl`` are refreshed before the puts.
        Every op is checked first, so a bad one writes nothing."""
        ops = list(ops)
        for op in ops:
            self._check(op)
        now = _once(self.clock)
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        refresh: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}
        for op in ops:
            if isinstance(op, GetOp):
                record = self._live(op.namespace, op.key, now)
                results.append(_item(record) if record is not None else None)
                read = [record] if record is not None else []
            elif isinstance(op, SearchOp):
                hits = self._search(op, now)
                results.append([_item(r, score, ranked=True) for r, score in hits])
                read = [r for r, _ in hits]
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op, now))
                continue
            else:
                assert isinstance(op, PutOp)
                puts[(op.namespace, op.key)] = op
                results.append(None)
                continue
            if op.refresh_ttl:
                refresh |= {(tuple(r["ns"]), r["key"]): r for r in read if "ttl" in r}
        self._refresh([r for at, r in refresh.items() if at not in puts], now)
        for op in puts.values():
            self._put(op)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread: the event loop never waits on the store."""
        return await asyncio.to_thread(self.batch, list(ops))

    def memory_of(self, namespace: tuple[str, ...], key: str) -> MemoryUnit | None:
        """The RaMem memory an item is stored as (its first piece), with the episode RaMem
        gave it: session time, event time, thread, speaker."""
        found = self.memory.keyed.get(
            [_composite({"ns": tuple(namespace), "key": key})],
            namespace=self._tenant(tuple(namespace)),
        )
        return next(iter(found.values()), None)

    def drop_namespace(self, namespace: tuple[str, ...]) -> int:
        """Delete every item whose namespace starts with ``namespace`` (whole labels);
        returns how many items went. The empty prefix, which would delete every tenant's
        items, is refused: drop each namespace by name."""
        if isinstance(namespace, str) or not isinstance(namespace, tuple | list):
            msg = f"namespace must be a tuple of labels, got {type(namespace).__name__}"
            raise InvalidNamespaceError(msg)
        if not namespace:
            msg = "drop_namespace(()) would delete every tenant's items: name a namespace prefix"
            raise InvalidNamespaceError(msg)
        validate_op_namespace(SearchOp(tuple(namespace)))
        now = _once(self.clock)
        gone = 0
        for name in self._tenant_names(tuple(namespace)):
            stored = self._records(name)
            records = [r for r in stored if _under(r["ns"], namespace)]
            if not records:
                continue
            if len(records) == len(stored):  # the prefix holds all the tenant's items
                self.memory.drop(namespace=name)
            else:
                self.memory.keyed.delete([_composite(r) for r in records], namespace=name)
            gone += sum(not _expired(r, now) for r in records)  # expired ones were gone
        return gone

    # ------------------------------------------------------------------ TTL

    def sweep_ttl(self) -> int:
        """Delete the expired items from the memory (every piece of each).

        Returns:
            How many items were deleted.
        """
        now = _once(self.clock)
        gone = 0
        for name in self._tenant_names(()):
            with self._lock:  # a put between the read and the delete is not swept
                expired = [_composite(r) for r in self._records(name) if _expired(r, now)]
                if expired:
                    self.memory.keyed.delete(expired, namespace=name)
            gone += len(expired)
        return gone

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> Future[None]:
        """Run :meth:`sweep_ttl` in a background thread until :meth:`stop_ttl_sweeper`.

        Args:
            sweep_interval_minutes: the wait between sweeps; default the TTL config's
                ``sweep_interval_minutes``, else :data:`DEFAULT_SWEEP_MINUTES`.

        Returns:
            A future that is done when the sweeper stops (cancelling it stops it); the
            running sweeper's future if one runs already.
        """
        _check_minutes(sweep_interval_minutes, "sweep_interval_minutes")
        with self._lock:
            if self._sweeper is not None and self._sweeper[0].is_alive():
                return self._sweeper[2]
            interval = (
                sweep_interval_minutes
                or (self.ttl_config or {}).get("sweep_interval_minutes")
                or DEFAULT_SWEEP_MINUTES
            )
            stop = threading.Event()
            done: Future[None] = Future()
            done.add_done_callback(lambda f: stop.set() if f.cancelled() else None)

            def sweep_until_stopped() -> None:
                while not stop.wait(interval * 60):
                    try:
                        self.sweep_ttl()
                    except Exception:  # a store that is down now may be up at the next sweep
                        log.exception("TTL sweep failed; the next is in %s minutes", interval)
                with contextlib.suppress(InvalidStateError):  # cancelled: done already
                    done.set_result(None)

            thread = threading.Thread(target=sweep_until_stopped, name="ttl-sweeper", daemon=True)
            self._sweeper = (thread, stop, done)
            thread.start()
            return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread, if one runs.

        Args:
            timeout: how many seconds to wait for it to stop; ``None``: as long as it takes.

        Returns:
            True when it stopped (or none ran), False when ``timeout`` passed first.
        """
        with self._lock:
            sweeper = self._sweeper
        if sweeper is None:
            return True
        thread, stop, _ = sweeper
        stop.set()
        thread.join(timeout)
        if thread.is_alive():
            return False
        with self._lock:
            if self._sweeper is sweeper:
                self._sweeper = None
        return True

    # ------------------------------------------------------------------ checks

    def _check(self, op: Op) -> None:
        if not isinstance(op, GetOp | SearchOp | ListNamespacesOp | PutOp):
            msg = f"unknown store operation {type(op).__name__}"
            raise InvalidInputError(msg)
        validate_op_namespace(op)
        if isinstance(op, PutOp):
            if not op.namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            if op.namespace[0] == "langgraph":
                msg = f'Root label for namespace cannot be "langgraph". Got: {op.namespace}'
                raise InvalidNamespaceError(msg)
            if not isinstance(op.key, str) or not op.key:
                msg = f"an item key must be a non-empty string, got {op.key!r}"
                raise InvalidInputError(msg)
            _check_minutes(op.ttl, "ttl")
            if op.value is not None and not isinstance(op.value, Mapping):
                msg = f"an item value must be a dict, got {type(op.value).__name__}"
                raise InvalidInputError(msg)
            if op.value is not None:
                try:
                    json.dumps(op.value)
                except (TypeError, ValueError) as exc:
                    msg = f"the value of {op.key!r} is not JSON: {exc}"
                    raise InvalidInputError(msg) from exc
                except RecursionError:
                    msg = f"the value of {op.key!r} nests too deeply to be stored as JSON"
                    raise InvalidInputError(msg) from None
        if isinstance(op, GetOp | SearchOp) and not isinstance(op.refresh_ttl, bool):
            msg = f"refresh_ttl must be True, False or None, got {op.refresh_ttl!r}"
            raise InvalidInputError(msg)
        if isinstance(op, SearchOp):
            if op.filter is not None:
                check_filter(op.filter)
            for name in ("limit", "offset"):
                value = getattr(op, name)
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    msg = f"search {name} must be a non-negative integer, got {value!r}"
                    raise InvalidInputError(msg)
            if op.query is not None and not isinstance(op.query, str):
                msg = f"a search query must be a string, got {type(op.query).__name__}"
                raise InvalidInputError(msg)
        if isinstance(op, ListNamespacesOp):
            for name in ("limit", "offset", "max_depth"):
                value = getattr(op, name)
                if value is None and name == "max_depth":
                    continue
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    msg = f"list_namespaces {name} must be a non-negative integer, got {value!r}"
                    raise InvalidInputError(msg)

    # ------------------------------------------------------------------ reads

    def _tenant(self, namespace: tuple[str, ...]) -> str:
        return encode_tenant(namespace[: self.tenant_depth])

    def _live(
        self, namespace: tuple[str, ...], key: str, now: Callable[[], datetime]
    ) -> dict[str, Any] | None:
        """The stored record of an item, unless there is none or it has expired."""
        unit = self.memory_of(namespace, key)
        record = _record(unit) if unit is not None else None
        return record if record is not None and not _expired(record, now) else None

    def _tenant_names(self, prefix: tuple[str, ...]) -> list[str]:
        """The RaMem namespaces that may hold items under ``prefix``."""
        if len(prefix) >= self.tenant_depth:
            name = self._tenant(prefix)
            return [name] if self.memory.has_namespace(name) else []
        names = []
        for name in self.memory.namespaces():
            if not _is_store_namespace(name):
                continue
            tenant = decode_tenant(name)
            if tenant is None or tuple(tenant[: len(prefix)]) == prefix:
                names.append(name)
        return names

    def _records(self, name: str) -> list[dict[str, Any]]:
        """Every item stored in the RaMem namespace ``name`` (first pieces only)."""
        records = []
        for unit in self.memory.keyed.items(namespace=name):
            record = _record(unit)
            if record is not None and unit.id == keyed_id(_composite(record)):
                records.append(record)
        return records

    def _search(
        self, op: SearchOp, now: Callable[[], datetime]
    ) -> list[tuple[dict[str, Any], float | None]]:
        """The records a search finds, with their scores, in order."""
        prefix = tuple(op.namespace_prefix)
        flt = op.filter or {}

        def wanted(record: Mapping[str, Any]) -> bool:
            return (
                _under(record["ns"], prefix)
                and matches(record["value"], flt)
                and not _expired(record, now)
            )

        names = self._tenant_names(prefix)
        if not op.query:
            records = [r for name in names for r in self._records(name) if wanted(r)]
            records.sort(key=lambda r: (r["updated"], r["key"]), reverse=True)
            return [(r, None) for r in records[op.offset : op.offset + op.limit]]
        need = op.offset + op.limit
        ranked: list[tuple[int, int, dict[str, Any]]] = []  # (rank, tenant, record)
        plain: list[dict[str, Any]] = []
        for position, name in enumerate(names):
            query = op.query[-MAX_QUERY_CHARS:]
            found, rest = self._ranked(name, query, wanted, need, bool(flt))
            ranked += [(rank, position, r) for rank, r in enumerate(found, start=1)]
            plain += rest
        ranked.sort(key=lambda t: (t[0], t[1]))
        out: list[tuple[dict[str, Any], float | None]] = [(r, 1.0 / rank) for rank, _, r in ranked]
        if len(out) < need:  # as InMemoryStore: unindexed items after the ranked, unscored
            plain.sort(key=lambda r: (r["updated"], r["key"]), reverse=True)
            out += [(r, None) for r in plain]
        return out[op.offset : need]

    def _ranked(
        self,
        name: str,
        query: str,
        wanted: Callable[[Mapping[str, Any]], bool],
        need: int,
        filtered: bool,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The wanted indexed items of one RaMem namespace in recall order (at least ``need``
        when there are that many), and its wanted unindexed ones when room is left."""
        if need == 0:
            return [], []
        k = 4 * need if filtered else need + 10  # room for pieces and unindexed items
        while True:
            evidence = self.memory.recall(query, k, namespace=name)
            seen: set[str] = set()
            found: list[dict[str, Any]] = []
            plain: list[dict[str, Any]] = []
            for e in evidence:
                record = _record(e.unit)
                if record is None:
                    continue
                composite = _composite(record)
                if composite in seen or not wanted(record):
                    continue
                seen.add(composite)
                (found if record.get("index", True) else plain).append(record)
            exhausted = len(evidence) < k
            if len(found) >= need or exhausted:
                break
            k *= 4
        if exhausted or len(found) >= need:  # every item ranked, or no room for the rest
            return found, plain
        # unindexed items ranked below k: read them from the store
        plain = [r for r in self._records(name) if not r.get("index", True) and wanted(r)]
        return found, plain

    def _list_namespaces(
        self, op: ListNamespacesOp, now: Callable[[], datetime]
    ) -> list[tuple[str, ...]]:
        stored: set[tuple[str, ...]] = set()
        for name in self._tenant_names(()):
            stored |= {tuple(r["ns"]) for r in self._records(name) if not _expired(r, now)}
        namespaces = [
            ns for ns in stored if all(_does_match(c, ns) for c in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
        else:
            namespaces = sorted(namespaces)
        return namespaces[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------------ writes

    def _put(self, op: PutOp) -> None:
        namespace, key = tuple(op.namespace), op.key
        tenant = self._tenant(namespace)
        composite = _composite({"ns": namespace, "key": key})
        if op.value is None:
            with self._lock:
                self.memory.keyed.delete([composite], namespace=tenant)
            return
        value = dict(op.value)
        now = _aware(self.clock())
        said = as_time(value.get(self.time_field)) if self.time_field else None
        if said is not None and not EARLIEST <= said <= LATEST:
            said = None  # a date RaMem does not place in time (1800): the item is kept as is
        with self._lock:
            previous = self._live(namespace, key, lambda: now)  # an expired one is gone
            record = {
                "ns": list(namespace),
                "key": key,
                "value": value,
                "created": previous["created"] if previous is not None else now.isoformat(),
                "updated": now.isoformat(),
                "index": op.index is not False,
            }
            if op.ttl is not None:
                record |= {"ttl": op.ttl, "expires": _expiry(now, op.ttl).isoformat()}
            self.memory.keyed.put(
                composite,
                self._text(value, op.index),
                at=said or now.astimezone(timezone.utc).replace(tzinfo=None),
                speaker=self._speaker(namespace, value),
                conversation_id=_in_run_thread() or "store",
                payload=json.dumps(record, ensure_ascii=False),
                namespace=tenant,
            )

    def _refresh(self, records: Sequence[Mapping[str, Any]], now: Callable[[], datetime]) -> None:
        """Move the expiry of items just read to ``ttl`` minutes from now, in every piece (a
        recall may meet any piece), keeping each piece's episode, text and vector: per tenant,
        one read of what is stored now and one write for all the items of one read."""
        due: dict[str, list[tuple[Mapping[str, Any], datetime]]] = {}
        for seen in records:
            expires = _expiry(now(), seen["ttl"])
            if expires > datetime.fromisoformat(seen["expires"]):
                due.setdefault(self._tenant(tuple(seen["ns"])), []).append((seen, expires))
        get = self.memory.transfer.get
        with self._lock:
            for tenant, items in due.items():
                composites = [_composite(seen) for seen, _ in items]
                stored = self.memory.keyed.get(composites, namespace=tenant)
                units: list[MemoryUnit] = []
                for (seen, expires), composite in zip(items, composites, strict=True):
                    first = stored.get(composite)
                    if first is None or _record(first) != seen:  # put or deleted since: leave
                        continue
                    payload = json.dumps(
                        {**seen, "expires": expires.isoformat()}, ensure_ascii=False
                    )
                    pieces = (get(i, namespace=tenant) for i in piece_ids(first))
                    units += [replace(u, payload=payload) for u in pieces if u is not None]
                if units:
                    self.memory.transfer.rewrite(units, namespace=tenant)

    def _text(self, value: Mapping[str, Any], index: Any) -> str:
        """The text a value is found by: its ``fields`` (or the put's own ``index`` paths)."""
        paths = [(p, tokenize_path(p)) for p in index] if isinstance(index, list) else self._paths
        for _, path in paths:
            texts = [t for t in get_text_at_path(value, path) if t and t.strip()]
            if texts:
                return "\n".join(texts)
        return json.dumps(value, ensure_ascii=False, sort_keys=True)

    def _speaker(self, namespace: tuple[str, ...], value: Mapping[str, Any]) -> str:
        """The value's ``speaker``, else the namespace's owner (its tenant's last label)."""
        owner = namespace[: self.tenant_depth][-1]
        for candidate in (value.get("speaker"), owner):
            if isinstance(candidate, str):
                try:
                    return check_name(candidate, "speaker")
                except InvalidInputError:
                    continue
        return "user"


def _composite(record: Mapping[str, Any]) -> str:
    """The RaMem key of an item: its whole namespace and its key."""
    return json.dumps([list(record["ns"]), record["key"]], ensure_ascii=False)


def _under(namespace: Sequence[str], prefix: Sequence[str]) -> bool:
    """``namespace`` starts with ``prefix``, label by label."""
    return tuple(namespace[: len(prefix)]) == tuple(prefix)


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    labels = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    if not path:
        return True
    return all(p == "*" or p == label for p, label in zip(path, labels, strict=True))
