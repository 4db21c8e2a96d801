"""A read-only snapshot of one namespace, derived from the Chroma collection.

Chroma stays the single source of truth; the snapshot is a cache rebuilt from it whenever the
namespace changed, so it survives restarts and never disagrees with the store for long. It holds
what recall needs on its hot path:

- the episodic index (:mod:`.episodic`): lexical keys with the episode reinstated, session
  documents and dense windows (each row's neighbour rows and window norm); BM25 runs
  client-side since Chroma's hybrid ``Search`` API is not implemented for local Chroma;
- the episodic fields as named per-memory columns (:mod:`.columns`), so a recall frame
  selects its memories as a boolean mask, in microseconds;
- the vectors, so dense ranking is an exact dot product over every memory (one matrix-vector
  product; no Chroma query on the recall path).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, SupportsIndex, overload

import numpy as np
import numpy.typing as npt

from ramem_core.index.columns import Mask as Mask
from ramem_core.index.columns import MemoryColumns, SpanArrays
from ramem_core.index.episodic import (
    EpisodicIndex,
    EpisodicKeys,
    session_key,
    speaker_names,
)
from ramem_core.index.shared import Check, GrownList, GrownMap, Rows, Texts
from ramem_core.store.codec import from_record, to_metadata
from ramem_core.types import Granularity, Kind, MemoryUnit, TimeSpan, from_epoch, to_epoch

_NO_ROWS = np.zeros(0, dtype=np.int64)


SessionKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class SessionState:
    """A stored session as a live writer continues it: its id, position, span so far, how
    many turns it has and who spoke, in order of first turn."""

    session_id: str
    index: int
    span: TimeSpan | None
    turns: int
    speakers: tuple[str, ...]


def _union(spans: Sequence[TimeSpan]) -> TimeSpan:
    return TimeSpan(min(s.start for s in spans), max(s.end for s in spans), spans[0].granularity)


def session_spans(units: Sequence[MemoryUnit]) -> dict[SessionKey, TimeSpan]:
    """The span of each session: the union of the spans its units were stored with.

    A session's span is stored once per write, never rewritten: a live turn stores
    ``[session start, its own time]``, and the session's span is derived here, so a session
    whose turns arrived one by one reads as one span, whatever writer or crash came between.
    """
    grouped: dict[SessionKey, list[TimeSpan]] = {}
    for unit in units:
        if unit.context.session_span is not None:
            grouped.setdefault(session_key(unit), []).append(unit.context.session_span)
    return {key: _union(spans) for key, spans in grouped.items()}


def _respanned(unit: MemoryUnit, spans: Mapping[SessionKey, TimeSpan]) -> MemoryUnit:
    span = spans.get(session_key(unit))
    if span is None or span == unit.context.session_span:
        return unit
    return replace(unit, context=replace(unit.context, session_span=span))


class DamagedUnitError(ValueError):
    """A stored unit that does not decode (only a snapshot file's can: what a snapshot built
    from the store holds was encoded from units). Its snapshot must be rebuilt."""


class StoredUnits(Sequence[MemoryUnit]):
    """Memory units kept as their stored columns (id, content, metadata) and decoded on first
    access: a snapshot loaded from a file needs only the few units a recall returns.

    Supports what a snapshot does with its unit list: ``len``, indexing and slicing, setting
    a row, ``extend`` and ``copy`` (a copy shares the columns and the decoded units).
    """

    __slots__ = ("_contents", "_decoded", "_extra", "_ids", "_metadata", "_set")

    def __init__(
        self,
        ids: Sequence[str],
        contents: Sequence[str],
        metadata: Sequence[str],
    ) -> None:
        self._ids = ids
        self._contents = contents
        self._metadata = metadata  # JSON of the Chroma metadata (codec.to_metadata)
        self._decoded: dict[int, MemoryUnit] = {}  # shared by copies: the columns never change
        self._set: dict[int, MemoryUnit] = {}
        self._extra: GrownList[MemoryUnit] = GrownList([])  # appended, shared along a line

    @classmethod
    def of(cls, units: Iterable[MemoryUnit]) -> StoredUnits:
        """The columns of ``units``."""
        ids, contents, metadata = [], [], []
        for unit in units:
            ids.append(unit.id)
            contents.append(unit.content)
            metadata.append(json.dumps(to_metadata(unit), ensure_ascii=False))
        return cls(ids, contents, metadata)

    def columns(self) -> tuple[Sequence[str], Sequence[str], Sequence[str]]:
        """Ids, contents and metadata JSON of every unit, changes included."""
        if not self._set and not self._extra:
            return self._ids, self._contents, self._metadata
        changed = StoredUnits.of([*self._set.values(), *self._extra])
        ids, contents, metadata = list(self._ids), list(self._contents), list(self._metadata)
        rows = [*self._set, *range(len(self._ids), len(self))]
        for i, row in enumerate(rows):
            if row < len(ids):
                ids[row] = changed._ids[i]
                contents[row] = changed._contents[i]
                metadata[row] = changed._metadata[i]
            else:
                ids.append(changed._ids[i])
                contents.append(changed._contents[i])
                metadata.append(changed._metadata[i])
        return ids, contents, metadata

    def ids(self) -> list[str]:
        """Every unit's id, without decoding any unit."""
        ids = self._ids.all() if isinstance(self._ids, Texts) else list(self._ids)
        for row, unit in self._set.items():
            ids[row] = unit.id
        return ids + [u.id for u in self._extra]

    def __getstate__(self) -> tuple[Texts, Texts, Texts]:
        """The three columns as :class:`Texts` (a file's contents and metadata are then read
        a unit at a time when loaded)."""
        ids, contents, metadata = self.columns()
        return (
            ids if isinstance(ids, Texts) else Texts.of(ids),
            contents if isinstance(contents, Texts) else Texts.of(contents),
            metadata if isinstance(metadata, Texts) else Texts.of(metadata),
        )

    def __setstate__(self, state: tuple[Sequence[str], Sequence[str], Sequence[str]]) -> None:
        self.__init__(*state)  # type: ignore[misc]

    def attach(self, check: Check) -> list[npt.NDArray[Any]]:
        """Have the contents and metadata of a loaded file verified by ``check`` when read;
        returns the arrays now read lazily (the ids are read at load)."""
        lazy = []
        for column in (self._contents, self._metadata):
            if isinstance(column, Texts):
                column.check = check
                lazy.append(column.arrays[0])
        return lazy

    def __len__(self) -> int:
        return len(self._ids) + len(self._extra)

    def _at(self, row: int) -> MemoryUnit:
        if row < 0:
            row += len(self)
        if not 0 <= row < len(self):
            raise IndexError(row)
        n = len(self._ids)
        if row >= n:
            return self._extra[row - n]
        unit = self._set.get(row) or self._decoded.get(row)
        if unit is None:
            try:
                meta = json.loads(self._metadata[row])
                if not isinstance(meta, dict):
                    raise TypeError(f"metadata is a {type(meta).__name__}, not an object")
                unit = from_record(self._ids[row], self._contents[row], meta)
            except Exception as exc:
                msg = f"stored unit {row} does not decode: {type(exc).__name__}: {exc}"
                raise DamagedUnitError(msg) from exc
            self._decoded[row] = unit
        return unit

    @overload
    def __getitem__(self, row: SupportsIndex) -> MemoryUnit: ...
    @overload
    def __getitem__(self, row: slice) -> list[MemoryUnit]: ...
    def __getitem__(self, row: SupportsIndex | slice) -> MemoryUnit | list[MemoryUnit]:
        if isinstance(row, slice):
            return [self._at(i) for i in range(*row.indices(len(self)))]
        return self._at(operator.index(row))

    def __iter__(self) -> Iterator[MemoryUnit]:
        return (self._at(i) for i in range(len(self)))

    def __setitem__(self, row: int, unit: MemoryUnit) -> None:
        n = len(self._ids)
        if row >= n:
            self._extra[row - n] = unit
        else:
            self._set[row] = unit

    def extend(self, units: Iterable[MemoryUnit]) -> None:
        self._extra.extend(units)

    def validate(self, n: int) -> None:
        """Raise ``ValueError`` unless the stored columns hold ``n`` units."""
        columns = self.columns()
        if not all(len(c) == n for c in columns):
            raise ValueError("unit columns differ in length")
        if not all(c.consistent() for c in columns if isinstance(c, Texts)):
            raise ValueError("unit columns' offsets do not cut their bytes")

    def copy(self) -> StoredUnits:
        new = StoredUnits.__new__(StoredUnits)
        new._ids, new._contents, new._metadata = self._ids, self._contents, self._metadata
        new._decoded = self._decoded
        new._set = dict(self._set)
        new._extra = self._extra.copy()
        return new


PER_MEMORY_BYTES = 12_000
"""What a snapshot holds per memory besides its vectors (units, episodic arrays, BM25 and
neighbour indexes), rounded up: measured by ``benchmarks/snapshot_bytes.py``."""


@dataclass(slots=True)
class _Change:
    """What a write does to a snapshot (:meth:`Snapshot.updated`)."""

    replaced: list[tuple[int, MemoryUnit]]  # rows whose units get a new context
    appended: list[MemoryUnit]
    spans: dict[SessionKey, TimeSpan]  # every session's span after the write
    respan: set[SessionKey]  # sessions whose span is derived again from every turn


class Snapshot:
    """Units, vectors, episodic arrays and the episodic index of one namespace.

    ``units`` are kept as stored; each session's span is derived from its turns (see
    :func:`session_spans`) and held once per session: the episodic arrays and :meth:`unit`
    give every unit its whole session's span.

    Args:
        units: the namespace's memories (their order is the snapshot's order).
        vectors: one unit vector per memory, or ``None`` for no dense search.
        keys: the episodic keys the index builds (see :class:`EpisodicKeys`).
    """

    def __init__(
        self,
        units: Sequence[MemoryUnit],
        vectors: npt.NDArray[np.float32] | None = None,
        keys: EpisodicKeys | None = None,
    ) -> None:
        self.units: GrownList[MemoryUnit] | StoredUnits = GrownList(list(units))
        self._session_span = session_spans(self.units)
        self.vectors = vectors
        self._vector_rows = None if vectors is None else Rows.of(vectors)
        self.position = GrownMap.of(u.id for u in self.units)
        session_rows: dict[SessionKey, list[int]] = {}
        self._latest: dict[str, tuple[int, str]] = {}  # conversation -> its latest session
        # per session: turns so far (the highest turn index + 1) and speakers in order
        self._session_turns: dict[SessionKey, int] = {}
        self._session_speakers: dict[SessionKey, tuple[str, ...]] = {}
        for row, unit in enumerate(self.units):
            session_rows.setdefault(session_key(unit), []).append(row)
            self._note_session(self._latest, unit)
            self._note_turn(self._session_turns, self._session_speakers, unit)
        self._session_rows = {
            key: np.asarray(rows, dtype=np.int64) for key, rows in session_rows.items()
        }
        self.columns = MemoryColumns.of(self.units, self._session_span)
        self.names = tuple(sorted({p for u in self.units for p in u.context.participants}))
        self._speakers: dict[tuple[str, str], frozenset[str]] = {}
        for unit in self.units:
            # an agent's exchanges are no episode of these people
            if unit.context.kind is Kind.STATEMENT:
                key = session_key(unit)
                self._speakers[key] = self._speakers.get(key, frozenset()) | speaker_names(unit)
        self.ubiquitous = self._ubiquitous()
        people: dict[str, list[int]] = {}
        for i, unit in enumerate(self.units):
            for name in {p.lower() for p in unit.context.participants}:
                people.setdefault(name, []).append(i)
        self._people = {name: np.array(rows, dtype=np.int64) for name, rows in people.items()}
        self.time_range = self._time_range()
        self.last_session_end = self._last_session_end()
        self.index = EpisodicIndex(self.units, vectors, keys)

    def __len__(self) -> int:
        return len(self.units)

    @property
    def session(self) -> SpanArrays:
        """Every memory's session span (epoch seconds; its whole session's)."""
        return self.columns.session

    @property
    def event(self) -> SpanArrays:
        """Every memory's event time (epoch seconds)."""
        return self.columns.event

    @property
    def timed(self) -> Mask:
        """Memories that say when (an event time or a mentioned time)."""
        return self.columns["timed"]  # type: ignore[return-value]

    @property
    def derived(self) -> Mask:
        """Recorded questions and replies: not first-hand evidence."""
        return self.columns["derived"]  # type: ignore[return-value]

    @property
    def nbytes(self) -> int:
        """The memory this snapshot takes, estimated: its vectors plus
        :data:`PER_MEMORY_BYTES` per memory."""
        vectors = 0 if self.vectors is None else int(self.vectors.nbytes)
        return vectors + len(self) * PER_MEMORY_BYTES

    def __getstate__(self) -> dict[str, object]:
        """What a snapshot file holds: units as columns (decoded on access after loading),
        arrays and the index in their columnar forms; buffers and lookups are made on load."""
        state = dict(self.__dict__)
        units = self.units
        state["units"] = units if isinstance(units, StoredUnits) else StoredUnits.of(units)
        del state["_vector_rows"], state["position"]
        # the per-session state as named columns, not one object per session
        keys = list(self._session_rows)
        rows = [self._session_rows[key] for key in keys]
        state["_session_rows"] = {
            "conversations": [key[0] for key in keys],
            "sessions": [key[1] for key in keys],
            "offsets": np.cumsum([0, *(len(r) for r in rows)]).astype(np.int64),
            "rows": np.concatenate(rows).astype(np.int64) if rows else _NO_ROWS,
            "turns": np.asarray([self._session_turns[k] for k in keys], dtype=np.int64),
            "speakers": ["\x1f".join(self._session_speakers[k]) for k in keys],
        }
        del state["_session_turns"], state["_session_speakers"]
        # each session's span and speakers too (one object per session costs a load)
        spans = list(self._session_span)
        state["_session_span"] = {
            "conversations": [key[0] for key in spans],
            "sessions": [key[1] for key in spans],
            "starts": [self._session_span[key].start.isoformat() for key in spans],
            "ends": [self._session_span[key].end.isoformat() for key in spans],
            "granularities": [self._session_span[key].granularity.value for key in spans],
        }
        speaking = list(self._speakers)
        state["_speakers"] = {
            "conversations": [key[0] for key in speaking],
            "sessions": [key[1] for key in speaking],
            "names": ["\x1f".join(sorted(self._speakers[key])) for key in speaking],
        }
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        sessions = state.pop("_session_rows")
        spans: Any = state.pop("_session_span")
        speaking: Any = state.pop("_speakers")
        self.__dict__.update(state)
        self._session_state_from(sessions)  # type: ignore[arg-type]
        keys = zip(spans["conversations"], spans["sessions"], strict=True)
        fields = zip(spans["starts"], spans["ends"], spans["granularities"], strict=True)
        self._session_span = {
            key: TimeSpan(
                datetime.fromisoformat(start), datetime.fromisoformat(end), Granularity(grain)
            )
            for key, (start, end, grain) in zip(keys, fields, strict=True)
        }
        keys = zip(speaking["conversations"], speaking["sessions"], strict=True)
        self._speakers = {
            key: frozenset(names.split("\x1f")) if names else frozenset()
            for key, names in zip(keys, speaking["names"], strict=True)
        }
        self._vector_rows = None if self.vectors is None else Rows.of(self.vectors)
        units = self.units
        ids = units.ids() if isinstance(units, StoredUnits) else [u.id for u in units]
        self.position = GrownMap.of(ids)

    def _session_state_from(self, columns: Mapping[str, Any]) -> None:
        """The per-session lookups from their saved columns (checked: the columns agree in
        length and the offsets cut the rows)."""
        keys = list(zip(columns["conversations"], columns["sessions"], strict=True))
        offsets, rows = columns["offsets"], columns["rows"]
        turns, speakers = columns["turns"], columns["speakers"]
        if not (len(offsets) == len(keys) + 1 == len(turns) + 1 == len(speakers) + 1):
            raise ValueError("inconsistent snapshot: per-session columns differ in length")
        if offsets[0] != 0 or offsets[-1] != len(rows) or (np.diff(offsets) < 0).any():
            raise ValueError("inconsistent snapshot: session offsets do not cut the rows")
        bounds = offsets.tolist()
        self._session_rows = {k: rows[bounds[i] : bounds[i + 1]] for i, k in enumerate(keys)}
        self._session_turns = dict(zip(keys, turns.tolist(), strict=True))
        self._session_speakers = {
            k: tuple(names.split("\x1f")) for k, names in zip(keys, speakers, strict=True)
        }

    def attach(self, check: Check) -> list[npt.NDArray[Any]]:
        """Have the parts of a loaded file that recall reads a piece at a time (the units'
        contents and metadata, the lexical indexes' postings and documents) verified by
        ``check`` when read; returns the arrays now read lazily, which a load need not
        verify whole."""
        lazy = self.units.attach(check) if isinstance(self.units, StoredUnits) else []
        return lazy + self.index.attach(check)

    def validate(self, dimension: int) -> None:
        """Raise ``ValueError`` naming the first inconsistency (a loaded snapshot file is
        checked with this before use): every part describes as many memories as the units,
        with the dtypes and bounds built ones have."""
        n = len(self.units)
        if isinstance(self.units, StoredUnits):
            self.units.validate(n)
        if self.vectors is not None:
            v = self.vectors
            if not isinstance(v, np.ndarray) or v.dtype != np.float32 or v.shape != (n, dimension):
                msg = f"inconsistent snapshot: vectors are not float32 of shape ({n}, {dimension})"
                raise ValueError(msg)
        self.columns.validate(n)
        for key, rows in self._session_rows.items():
            if not isinstance(rows, np.ndarray) or rows.dtype.kind != "i":
                raise ValueError(f"inconsistent snapshot: rows of session {key} are not integers")
            if len(rows) and (rows.min() < 0 or rows.max() >= n):
                raise ValueError(f"inconsistent snapshot: rows of session {key} out of range")
            if key not in self._session_turns or key not in self._session_speakers:
                raise ValueError(f"inconsistent snapshot: session {key} has no turn count")
        self.index.validate(n, self.vectors)

    @staticmethod
    def _note_session(latest: dict[str, tuple[int, str]], unit: MemoryUnit) -> None:
        ctx = unit.context
        held = latest.get(ctx.conversation_id)
        if held is None or (ctx.session_index, ctx.session_id) > held:
            latest[ctx.conversation_id] = (ctx.session_index, ctx.session_id)

    @staticmethod
    def _note_turn(
        turns: dict[SessionKey, int],
        speakers: dict[SessionKey, tuple[str, ...]],
        unit: MemoryUnit,
    ) -> None:
        key, ctx = session_key(unit), unit.context
        turns[key] = max(turns.get(key, 0), ctx.turn_index + 1)
        held = speakers.get(key, ())
        if ctx.speaker not in held:
            speakers[key] = (*held, ctx.speaker)

    def session_rows(self, key: SessionKey) -> npt.NDArray[np.int64]:
        """The rows of a session (``(conversation id, session id)``); none if unknown."""
        return self._session_rows.get(key, _NO_ROWS)

    def latest_session(self, conversation_id: str) -> SessionState | None:
        """The latest session of a conversation (the highest session index), as stored."""
        held = self._latest.get(conversation_id)
        if held is None:
            return None
        index, session_id = held
        key = (conversation_id, session_id)
        return SessionState(
            session_id=session_id,
            index=index,
            span=self._session_span.get(key),
            turns=self._session_turns[key],
            speakers=self._session_speakers[key],
        )

    def unit(self, row: int) -> MemoryUnit:
        """The memory at ``row`` with its whole session's span."""
        return _respanned(self.units[row], self._session_span)

    def _ubiquitous(self) -> frozenset[str]:
        """Speakers of every session with a statement (sessions of recorded questions and
        replies only do not count): naming them cannot tell one episode from another."""
        if len(self._speakers) < 2:
            return frozenset()
        return frozenset.intersection(*self._speakers.values())

    def updated(
        self, changed: Sequence[MemoryUnit], vectors: Mapping[str, npt.NDArray[np.float32]]
    ) -> Snapshot | None:
        """This snapshot with ``changed`` folded in, without rebuilding what they do not touch:
        new units (their vectors in ``vectors``) are appended, known ones get their new
        context. ``None`` when that is not the change (an edited content, vector, speaker or
        participants): rebuild then. This snapshot is left as it was.
        """
        change = self._change_of(changed, vectors)
        if change is None:
            return None
        assert self.vectors is not None
        assert self._vector_rows is not None
        n_old = len(self.units)
        new = Snapshot.__new__(Snapshot)  # not copy.copy: that pickles
        new.__dict__.update(self.__dict__)
        new.units = self.units.copy()
        for row, unit in change.replaced:
            new.units[row] = unit
        new.units.extend(change.appended)
        rows = np.asarray([vectors[u.id] for u in change.appended], dtype=np.float32)
        rows = rows.reshape(-1, self.vectors.shape[1])
        new._vector_rows, new.vectors = self._vector_rows.append(n_old, rows)
        new.position = self.position.appended(u.id for u in change.appended)
        self._extend_sessions(new, change, n_old)
        new.columns = self._updated_columns(new, change)
        self._extend_people(new, change.appended, n_old)
        new.ubiquitous = new._ubiquitous()
        new.time_range = new._time_range()
        new.last_session_end = new._last_session_end()
        replaced_rows = [row for row, _ in change.replaced]
        new.index = self.index.updated(new.units, new.vectors, replaced_rows)
        return new

    def _change_of(
        self, changed: Sequence[MemoryUnit], vectors: Mapping[str, npt.NDArray[np.float32]]
    ) -> _Change | None:
        """What ``changed`` does to this snapshot: rows whose context it replaces, units it
        appends, session spans; ``None`` for a change this cannot fold in (a known unit moved
        to another session or edited, a new unit without its vector)."""
        if self.vectors is None:
            return None
        # a session's span grows with its new turns: held once per session, not per unit
        spans = dict(self._session_span)
        for key, span in session_spans(changed).items():
            spans[key] = _union([span, spans[key]]) if key in spans else span
        change = _Change([], [], spans, set())
        for unit in changed:
            row = self.position.get(unit.id)
            if row is None:
                if unit.id not in vectors:
                    return None
                change.appended.append(unit)
                continue
            old = self.units[row]
            if session_key(unit) != session_key(old):
                return None  # a known unit moved to another session: rebuild
            same = (
                old.content == unit.content
                and old.context.speaker == unit.context.speaker
                and old.context.participants == unit.context.participants
                and unit.id not in vectors
            )
            if not same:
                return None
            if unit.context.session_span != old.context.session_span:
                change.respan.add(session_key(unit))  # derived again from every turn
            change.replaced.append((row, unit))
        return change

    def _extend_sessions(self, new: Snapshot, change: _Change, n_old: int) -> None:
        """``new``'s per-session rows, latest sessions, turn counts and spans, with the
        change's rows."""
        spans = change.spans
        new._session_span = spans
        new._session_rows = dict(self._session_rows)
        new._latest = dict(self._latest)
        new._session_turns = dict(self._session_turns)
        new._session_speakers = dict(self._session_speakers)
        grown: dict[SessionKey, list[int]] = {}
        for i, unit in enumerate(change.appended, start=n_old):
            grown.setdefault(session_key(unit), []).append(i)
            self._note_session(new._latest, unit)
            self._note_turn(new._session_turns, new._session_speakers, unit)
        for key, rows_added in grown.items():
            held_rows = new._session_rows.get(key, _NO_ROWS)
            new._session_rows[key] = np.concatenate([held_rows, rows_added]).astype(np.int64)
        for key in {session_key(unit) for _, unit in change.replaced}:  # a turn may have moved
            new._session_turns[key] = 1 + max(
                new.units[r].context.turn_index for r in new._session_rows[key].tolist()
            )
        for key in change.respan:  # a stored span was rewritten: it may also have shrunk
            derived = session_spans([new.units[r] for r in new._session_rows[key]]).get(key)
            if derived is None:
                spans.pop(key, None)
            else:
                spans[key] = derived

    def _updated_columns(self, new: Snapshot, change: _Change) -> MemoryColumns:
        """The columns with the appended rows, the replaced rows, and every row of a session
        whose span changed."""
        spans, replaced = change.spans, change.replaced
        columns = self.columns.concat(MemoryColumns.of(change.appended, spans))
        columns = columns.with_rows(
            [row for row, _ in replaced], MemoryColumns.of([u for _, u in replaced], spans)
        )
        touched = {session_key(unit) for unit in [*change.appended, *(u for _, u in replaced)]}
        for key in touched:
            if key not in self._session_span or spans.get(key) != self._session_span[key]:
                columns = columns.with_session(new._session_rows[key], spans.get(key))
        return columns

    def _extend_people(self, new: Snapshot, appended: Sequence[MemoryUnit], n_old: int) -> None:
        """``new``'s names, speakers of each session and rows of each person, with the
        appended rows."""
        added = {p for u in appended for p in u.context.participants}
        if not added <= set(self.names):
            new.names = tuple(sorted(set(self.names) | added))
        new._speakers = dict(self._speakers)
        new._people = dict(self._people)
        for i, unit in enumerate(appended, start=n_old):
            key = session_key(unit)
            if unit.context.kind is Kind.STATEMENT:
                new._speakers[key] = new._speakers.get(key, frozenset()) | speaker_names(unit)
            for name in {p.lower() for p in unit.context.participants}:
                held = new._people.get(name, np.zeros(0, dtype=np.int64))
                new._people[name] = np.append(held, i)

    def _last_session_end(self) -> datetime | None:
        ses = self.session
        return from_epoch(int(ses.end[ses.known].max())) if ses.known.any() else None

    def _time_range(self) -> TimeSpan | None:
        ses, ev = self.session, self.event
        starts = np.concatenate([ses.start[ses.known], ev.start[ev.known]])
        ends = np.concatenate([ses.end[ses.known], ev.end[ev.known]])
        if not len(starts):
            return None
        return TimeSpan(
            from_epoch(int(starts.min())), from_epoch(int(ends.max())), Granularity.INSTANT
        )

    def involving(self, name: str) -> Mask:
        """Memories whose participants include ``name`` (case-insensitive)."""
        mask = np.zeros(len(self.units), dtype=bool)
        rows = self._people.get(name.lower())
        if rows is not None:
            mask[rows] = True
        return mask

    def covers(self, span: TimeSpan) -> bool:
        """True when some memory was said or happened within ``span``.

        A memory happened within it when its whole event time lies inside: an event known only
        to the year ("in 2019") does not make every week of that year covered."""
        start, end = to_epoch(span.start), to_epoch(span.end)
        ses, ev = self.session, self.event
        said = ses.known & (ses.start <= end) & (ses.end >= start)
        happened = ev.known & (ev.start >= start) & (ev.end <= end)
        return bool(said.any() or happened.any())
