"""The per-memory facts of a snapshot, declared once.

Each :class:`Column` names one fact every memory has (as a number or a flag) and how it is
read off the memory and its session's span. :class:`MemoryColumns` holds them as named
arrays, and builds (:meth:`~MemoryColumns.of`), grows (:meth:`~MemoryColumns.concat`),
updates (:meth:`~MemoryColumns.with_rows`, :meth:`~MemoryColumns.with_session`), saves
(``__getstate__``), loads and validates (:meth:`~MemoryColumns.validate`) them by iterating
:data:`COLUMNS`: a new fact is one more entry there, and every path carries it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ramem_core.states import kind_bits, state_key, states_something, states_strictly
from ramem_core.types import Kind, MemoryUnit, TimeSpan, to_epoch

SessionKey = tuple[str, str]
Mask = npt.NDArray[np.bool_]


def _says_when(unit: MemoryUnit) -> bool:
    """True when ``unit`` says when: it has an event time or mentions a time."""
    return unit.context.event_time is not None or bool(unit.context.mentions)


def _derived(unit: MemoryUnit) -> bool:
    """True for a question or an assistant's reply: not first-hand evidence."""
    return unit.context.kind is not Kind.STATEMENT


@functools.lru_cache(maxsize=4096)
def _speaker(name: str) -> int:
    """A speaker's name as a number (:func:`~ramem_core.states.state_key`), once per name."""
    return state_key(name)


def _start(span: TimeSpan | None) -> int:
    return to_epoch(span.start) if span is not None else 0


def _end(span: TimeSpan | None) -> int:
    return to_epoch(span.end) if span is not None else 0


@dataclass(frozen=True, slots=True)
class Column:
    """One per-memory fact: its name, its array's dtype, how it is read off a memory (and
    the span of the memory's whole session), and whether it belongs to the session (all of
    a session's rows change together when its span grows)."""

    name: str
    dtype: type[np.generic]
    read: Callable[[MemoryUnit, TimeSpan | None], int | bool]
    of_session: bool = False


COLUMNS: tuple[Column, ...] = (
    Column("session_known", np.bool_, lambda _u, s: s is not None, of_session=True),
    Column("session_start", np.int64, lambda _u, s: _start(s), of_session=True),
    Column("session_end", np.int64, lambda _u, s: _end(s), of_session=True),
    Column("event_known", np.bool_, lambda u, _s: u.context.event_time is not None),
    Column("event_start", np.int64, lambda u, _s: _start(u.context.event_time)),
    Column("event_end", np.int64, lambda u, _s: _end(u.context.event_time)),
    Column("timed", np.bool_, lambda u, _s: _says_when(u)),
    Column("derived", np.bool_, lambda u, _s: _derived(u)),
    # states that hold until superseded (ramem_core.states), read once per memory
    Column("states", np.bool_, lambda u, _s: not _derived(u) and states_something(u.content)),
    Column("lasting", np.bool_, lambda u, _s: not _derived(u) and states_strictly(u.content)),
    Column("state_kinds", np.int64, lambda u, _s: 0 if _derived(u) else kind_bits(u.content)),
    Column("state_key", np.int64, lambda u, _s: 0 if _derived(u) else state_key(u.context.state)),
    Column("said_at", np.int64, lambda u, _s: _end(u.context.session_span)),
    Column("turn", np.int64, lambda u, _s: u.context.turn_index),
    Column("speaker", np.int64, lambda u, _s: _speaker(u.context.speaker)),
)
"""Every per-memory fact a snapshot holds as an array (epoch seconds for times, 0 where
unknown): the session span (for frame masks), the event time, "says when", "is a question
or a reply", and what a statement states (something that can change; a lasting state; the
kinds of state, a bitmask over :data:`ramem_core.states.KINDS`), when it was said (its own
stored span's end), its turn and its speaker (a number, equal for one name in any case)."""


@dataclass(frozen=True, slots=True)
class SpanArrays:
    """Epoch-second bounds of one episodic span field; ``known`` is False where unknown."""

    known: Mask
    start: npt.NDArray[np.int64]
    end: npt.NDArray[np.int64]


class MemoryColumns:
    """The :data:`COLUMNS` of a snapshot's memories, one array each, rows as the snapshot's.

    Values are never changed in place once a snapshot holds them: every update returns new
    arrays (older snapshots keep theirs).
    """

    __slots__ = ("_arrays",)

    def __init__(self, arrays: Mapping[str, npt.NDArray[np.generic]]) -> None:
        self._arrays = dict(arrays)

    @classmethod
    def of(
        cls,
        units: Sequence[MemoryUnit],
        spans: Mapping[SessionKey, TimeSpan],
    ) -> MemoryColumns:
        """The columns of ``units``, each with its session's span from ``spans``."""
        columns = COLUMNS
        values: list[list[int | bool]] = [[] for _ in columns]
        for unit in units:
            span = spans.get((unit.context.conversation_id, unit.context.session_id))
            for out, column in zip(values, columns, strict=True):
                out.append(column.read(unit, span))
        return cls(
            {
                c.name: np.asarray(v, dtype=c.dtype).reshape(len(units))
                for c, v in zip(columns, values, strict=True)
            }
        )

    def __len__(self) -> int:
        return len(self._arrays[COLUMNS[0].name])

    def __getitem__(self, name: str) -> npt.NDArray[np.generic]:
        return self._arrays[name]

    def concat(self, other: MemoryColumns) -> MemoryColumns:
        """These rows followed by ``other``'s."""
        return MemoryColumns(
            {c.name: np.concatenate([self[c.name], other[c.name]]) for c in COLUMNS}
        )

    def with_rows(self, rows: Sequence[int], values: MemoryColumns) -> MemoryColumns:
        """A copy with the ``rows`` given ``values``' rows (in order)."""
        if not len(rows):
            return self
        at = np.asarray(rows, dtype=np.int64)
        out = {}
        for c in COLUMNS:
            array = self[c.name].copy()
            array[at] = values[c.name]
            out[c.name] = array
        return MemoryColumns(out)

    def with_session(self, rows: npt.NDArray[np.int64], span: TimeSpan | None) -> MemoryColumns:
        """A copy with the session columns of ``rows`` (one session's) set to ``span``."""
        out = dict(self._arrays)
        for c in (c for c in COLUMNS if c.of_session):
            array = self[c.name].copy()
            array[rows] = c.read(None, span)  # type: ignore[arg-type]  # reads the span only
            out[c.name] = array
        return MemoryColumns(out)

    @property
    def session(self) -> SpanArrays:
        """The session span columns."""
        return SpanArrays(*(self._arrays[f"session_{f}"] for f in ("known", "start", "end")))  # type: ignore[arg-type]

    @property
    def event(self) -> SpanArrays:
        """The event time columns."""
        return SpanArrays(*(self._arrays[f"event_{f}"] for f in ("known", "start", "end")))  # type: ignore[arg-type]

    def validate(self, n: int) -> None:
        """Raise ``ValueError`` naming the first column that is missing, extra, of another
        dtype or not ``n`` rows long (a loaded file is checked with this)."""
        names = [c.name for c in COLUMNS]
        if sorted(self._arrays) != sorted(names):
            msg = f"memory columns {sorted(self._arrays)} are not {sorted(names)}"
            raise ValueError(msg)
        for c in COLUMNS:
            array = self._arrays[c.name]
            if not isinstance(array, np.ndarray) or array.dtype != np.dtype(c.dtype):
                msg = f"memory column {c.name} is not an array of {np.dtype(c.dtype)}"
                raise ValueError(msg)
            if array.shape != (n,):
                msg = f"memory column {c.name} has shape {array.shape}, not ({n},)"
                raise ValueError(msg)

    def __getstate__(self) -> dict[str, npt.NDArray[np.generic]]:
        """The named arrays (a snapshot file stores them as they are)."""
        return dict(self._arrays)

    def __setstate__(self, state: dict[str, npt.NDArray[np.generic]]) -> None:
        self._arrays = dict(state)
