"""Seeing and moving memory: a namespace's memories paged newest first, and the versioned
JSON-lines format that exports and imports them.

The format (``FORMAT_VERSION`` 1), one JSON object per line:

- a header: ``{"ramem_export": 1, "namespace": ..., "memories": N, "embedder": NAME,
  "dimension": D, "vectors": true|false}``;
- one line per memory: ``{"id": ..., "content": ..., "context": {...}}`` where ``context``
  holds every stored field (the full episodic context, ``kind``, ``source_ids`` and the
  ``payload`` a keyed memory or LangGraph item keeps: Chroma's metadata as
  :func:`~ramem_core.store.codec.to_metadata` writes it), plus ``"vector": [...]`` when
  vectors were exported.

Supersession is not stored (it is derived when read), so nothing of it is exported. Vectors
are optional: an import re-embeds memories without them, or with vectors of another model.
An import is checked whole before anything is written (all or nothing).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

from ramem_core.errors import InvalidInputError
from ramem_core.index.freshness import Freshness
from ramem_core.protocols import Store
from ramem_core.store.codec import from_record, to_metadata
from ramem_core.twins import in_thread
from ramem_core.types import IngestReport, Kind, MemoryUnit
from ramem_core.validation import (
    MAX_ID_CHARS,
    MAX_UNIT_CHARS,
    check_count,
    check_id,
    check_moment,
    check_text,
    check_unit_ids,
    check_units,
)
from ramem_core.writing import Progress, Writer, check_progress

FORMAT_VERSION = 1
"""The export format's version: an import refuses any other."""


def said_at(unit: MemoryUnit) -> datetime | None:
    """When ``unit`` was said: the end of its stored session span (a live turn's own time)."""
    span = unit.context.session_span
    return span.end if span is not None else None


def _newest_first(unit: MemoryUnit) -> tuple[datetime, int, int, str]:
    said = said_at(unit) or datetime.min
    return (said, unit.context.session_index, unit.context.turn_index, unit.id)


def page(
    units: Iterable[MemoryUnit],
    *,
    kind: Kind | str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    after: str | None = None,
) -> list[MemoryUnit]:
    """Memories newest first (said time, then session and turn, then id), of ``kind``, said
    within ``since``-``until``; ``limit`` of them after the memory whose id is ``after`` (the
    last of the previous page).

    Raises:
        InvalidInputError: an unknown kind, a bad time or limit, an ``after`` that is not
            among the memories.
    """
    check_count(limit, "limit")
    wanted = None
    if kind is not None:
        try:
            wanted = Kind(kind)
        except ValueError:
            msg = f"kind must be one of {', '.join(k.value for k in Kind)}, got {kind!r}"
            raise InvalidInputError(msg) from None
    low = check_moment(since, "since") if since is not None else None
    high = check_moment(until, "until") if until is not None else None

    def chosen_one(unit: MemoryUnit) -> bool:
        said = said_at(unit)
        if low is not None and (said is None or said < low):
            return False
        if high is not None and (said is None or said > high):
            return False
        return wanted is None or unit.context.kind is wanted

    chosen = [u for u in units if chosen_one(u)]
    chosen.sort(key=_newest_first, reverse=True)
    start = 0
    if after is not None:
        ids = [u.id for u in chosen]
        if after not in ids:
            msg = f"after={after!r} is not the id of a listed memory (of this selection)"
            raise InvalidInputError(msg)
        start = ids.index(after) + 1
    return chosen[start : start + limit]


# --------------------------------------------------------------------------- the format


def record(unit: MemoryUnit, vector: npt.NDArray[np.float32] | None = None) -> dict[str, Any]:
    """One memory as an export line's object."""
    out: dict[str, Any] = {"id": unit.id, "content": unit.content, "context": to_metadata(unit)}
    if vector is not None:
        out["vector"] = [round(float(x), 7) for x in vector]
    return out


def header(
    namespace: str, count: int, embedder: str, dimension: int, vectors: bool
) -> dict[str, Any]:
    """An export's first line."""
    return {
        "ramem_export": FORMAT_VERSION,
        "namespace": namespace,
        "memories": count,
        "embedder": embedder,
        "dimension": dimension,
        "vectors": vectors,
    }


def write(
    out: TextIO,
    namespace: str,
    units: Sequence[MemoryUnit],
    vectors: npt.NDArray[np.float32] | None,
    embedder: str,
    dimension: int,
) -> int:
    """Write an export of ``units`` (with ``vectors`` when given) to ``out``; returns the
    number of memories written."""
    line = header(namespace, len(units), embedder, dimension, vectors is not None)
    out.write(json.dumps(line, ensure_ascii=False) + "\n")
    for row, unit in enumerate(units):
        vector = vectors[row] if vectors is not None else None
        out.write(json.dumps(record(unit, vector), ensure_ascii=False) + "\n")
    return len(units)


@dataclass(frozen=True, slots=True)
class Imported:
    """A checked export: its memories, and their vectors where they can be used as they are
    (``None`` rows are to be embedded)."""

    units: list[MemoryUnit]
    vectors: list[npt.NDArray[np.float32] | None]
    source_namespace: str


def read(lines: Iterable[str], source: str, embedder: str, dimension: int) -> Imported:
    """Check a whole export; vectors are kept only when they are of ``embedder`` with
    ``dimension``.

    Raises:
        InvalidInputError: anything malformed, named by its line.
    """
    numbered: Iterator[tuple[int, str]] = (
        (n, line) for n, line in enumerate(lines, start=1) if line.strip()
    )
    first = next(numbered, None)
    if first is None:
        raise InvalidInputError(f"{source} is empty: not a RaMem export")
    top = _json(first[1], source, first[0])
    if not isinstance(top, dict) or top.get("ramem_export") != FORMAT_VERSION:
        msg = f"{source} line 1 is not the header of a RaMem export of version {FORMAT_VERSION}"
        raise InvalidInputError(msg)
    same_model = top.get("embedder") == embedder and top.get("dimension") == dimension
    units: list[MemoryUnit] = []
    vectors: list[npt.NDArray[np.float32] | None] = []
    seen: set[str] = set()
    for n, line in numbered:
        units.append(_unit(_json(line, source, n), source, n))
        if units[-1].id in seen:
            raise InvalidInputError(f"{source} line {n}: memory id {units[-1].id!r} repeats")
        seen.add(units[-1].id)
        vectors.append(
            _vector(_json(line, source, n), dimension, source, n) if same_model else None
        )
    expected = top.get("memories")
    if expected != len(units):
        msg = f"{source} holds {len(units)} memories, its header says {expected!r}: truncated?"
        raise InvalidInputError(msg)
    return Imported(units, vectors, str(top.get("namespace", "")))


def _json(line: str, source: str, number: int) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise InvalidInputError(f"{source} line {number} is not JSON: {exc}") from None


def _unit(item: Any, source: str, number: int) -> MemoryUnit:
    where = f"{source} line {number}"
    if not isinstance(item, dict) or not isinstance(item.get("context"), dict):
        raise InvalidInputError(f"{where}: a memory needs id, content and context")
    unit_id = check_id(item.get("id"), f"{where} id")
    check_unit_ids([unit_id], f"{where} id")
    content = check_text(item.get("content"), f"{where} content", limit=MAX_UNIT_CHARS)
    try:
        unit = from_record(unit_id, content, item["context"])
    except Exception as exc:
        raise InvalidInputError(f"{where}: its context does not decode: {exc}") from None
    check_id(unit.context.conversation_id, f"{where} conversation id")
    check_id(unit.context.session_id, f"{where} session id")
    if len(unit.payload) > 10 * MAX_UNIT_CHARS + MAX_ID_CHARS:
        raise InvalidInputError(f"{where}: its payload is too long")
    return unit


def _vector(
    item: dict[str, Any], dimension: int, source: str, number: int
) -> npt.NDArray[np.float32] | None:
    raw = item.get("vector")
    if raw is None:
        return None
    if (
        not isinstance(raw, list)
        or len(raw) != dimension
        or not all(isinstance(x, int | float) and math.isfinite(x) for x in raw)
    ):
        raise InvalidInputError(f"{source} line {number}: a vector of {dimension} numbers")
    return np.asarray(raw, dtype=np.float32)


class Transfer:
    """Seeing and moving one memory's namespaces (``memory.transfer``): pages of memories,
    one memory by id, export to and import from the format above.

    Args:
        store: the source of truth (an export reads every memory with its vector).
        snapshots: the cached snapshots pages are read from.
        writer: what an import writes through (:class:`~ramem_core.writing.Writer`).
        namespace_of: the namespace a call names, or the memory's default for ``None``.
    """

    def __init__(
        self,
        store: Store,
        snapshots: Freshness,
        writer: Writer,
        namespace_of: Callable[[str | None], str],
    ) -> None:
        self.store = store
        self.snapshots = snapshots
        self.writer = writer
        self._namespace_of = namespace_of

    def page(
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
        """A page of the namespace's memories, newest first (:func:`page`), of one
        conversation, session or :class:`Kind`, said within ``since``-``until``; empty for a
        namespace with no memories."""
        ns = self._namespace_of(namespace)
        for name, value in (("conversation_id", conversation_id), ("session_id", session_id)):
            if value is not None:
                check_id(value, name)

        def wanted(unit: MemoryUnit) -> bool:
            context = unit.context
            return (conversation_id is None or context.conversation_id == conversation_id) and (
                session_id is None or context.session_id == session_id
            )

        units = self.snapshots.read(ns, lambda snap: [u for u in snap.units if wanted(u)])
        return page(units, kind=kind, since=since, until=until, limit=limit, after=after)

    def get(self, unit_id: str, *, namespace: str | None = None) -> MemoryUnit | None:
        """The memory with id ``unit_id`` (its full episodic context), or ``None``."""
        [checked] = check_unit_ids([unit_id], "unit_id")

        def find(snap: Any) -> MemoryUnit | None:
            row = snap.position.get(checked)
            return None if row is None else snap.units[row]

        return self.snapshots.read(self._namespace_of(namespace), find)

    def export(
        self, path: str | Path, *, namespace: str | None = None, vectors: bool = False
    ) -> int:
        """Write every memory of the namespace to ``path`` (with their vectors when
        ``vectors``); returns how many. A backup, or a move to another directory, server or
        namespace with :meth:`import_from`."""
        ns = self._namespace_of(namespace)
        units, matrix = self.store.load(ns)
        target = Path(path)
        tmp = target.with_name(target.name + ".tmp")
        embedder = self.writer.embedder
        with tmp.open("w", encoding="utf-8") as out:
            written = write(
                out, ns, units, matrix if vectors else None, embedder.name, embedder.dimension
            )
        tmp.replace(target)  # never half a file under the name
        return written

    def rewrite(self, units: Sequence[MemoryUnit], *, namespace: str | None = None) -> IngestReport:
        """Store ``units`` over the stored memories of the same ids (a new payload, a moved
        expiry, a corrected context): a unit whose content is its stored memory's keeps that
        memory's vector, so only changed contents are embedded.

        Raises:
            InvalidInputError: ``units`` is not a list of valid :class:`MemoryUnit`, or one of
                them is not stored (a rewrite never adds a memory); nothing is written.
        """
        ns = self._namespace_of(namespace)
        checked = check_units(units)

        def stored(snap: Any) -> list[npt.NDArray[np.float32] | None]:
            rows = [snap.position.get(u.id) for u in checked]
            unknown = [u.id for u, row in zip(checked, rows, strict=True) if row is None]
            if unknown:
                msg = (
                    f"rewrite stores over stored memories: {len(unknown)} unit id(s) are not "
                    f"stored in namespace {ns!r} (first: {unknown[0]!r}); nothing was written"
                )
                raise InvalidInputError(msg)
            return [
                None
                if snap.vectors is None or snap.units[row].content != u.content
                else np.array(snap.vectors[row], dtype=np.float32)
                for u, row in zip(checked, rows, strict=True)
            ]

        return self.writer.write_units(ns, checked, None, self.snapshots.read(ns, stored))

    def import_from(
        self,
        path: str | Path,
        *,
        namespace: str | None = None,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Store the memories of an export in the namespace: checked whole first (nothing is
        written when a line is bad), vectors used when they are of this memory's embedder,
        else embedded again; ids kept, so importing twice stores once.

        Raises:
            InvalidInputError: the file is not a RaMem export, or a line of it is bad (named).
        """
        ns = self._namespace_of(namespace)
        check_progress(progress)
        source = str(path)
        embedder = self.writer.embedder
        try:
            with Path(path).open(encoding="utf-8") as lines:
                found = read(lines, source, embedder.name, embedder.dimension)
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInputError(f"cannot read {source}: {exc}") from exc
        return self.writer.write_units(ns, found.units, progress, found.vectors)

    apage = in_thread(page)
    aget = in_thread(get)
    aexport = in_thread(export)
    arewrite = in_thread(rewrite)
    aimport_from = in_thread(import_from)
