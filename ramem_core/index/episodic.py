"""The episodic index: what is *searched* for a memory, beside what is *returned*.

A memory unit is returned as its own lossless content with its coordinates (stage 1). It is
*found* through richer keys that reinstate its episode (stage 1 -> stage 3):

- a **lexical key**: its own words, plus the words of its neighbour turns in the same session
  with decaying weights (``tf += 0.5 * tf(+-1) + 0.25 * tf(+-2)``), so "the pottery class"
  finds the turn that only says "it was fun" right after the turn that named the class;
- a **dense key**: its own vector plus the normalised sum of the vectors of its neighbourhood
  window (the turns within ``window`` of it in the session). The dense score is
  ``cos(turn, q) + cos(window, q)``; since ``cos(window, q)`` is the window rows' summed
  cosines over the summed vector's norm, it needs one matrix-vector product (the turns'
  cosines) and each row's neighbour rows and norm, not a second matrix;
- a **speaker** bonus: a memory said by a person the query names ("What has Melanie
  painted?") gains a fixed share, as if ranked first in a list of that person's memories.

Beside the keys the index holds every memory's own words (:attr:`EpisodicIndex.own`, what the
second round and the restated values read).
:class:`EpisodicKeys` names and switches each key (for ablations); :data:`CONTENT_KEYS` turns
them off (the content-only baseline). The lexical keys are documents of the generic BM25
in :mod:`ramem_core.index.bm25`, which supports appending and removing documents, so keys are
kept current as a live session grows. How the keys' scores are fused into one ranking is
:meth:`ramem_core.retrieval.Retriever.rank`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ramem_core.index import products
from ramem_core.index.bm25 import LexicalIndex, Scores, as_columns
from ramem_core.index.shared import Check, Rows
from ramem_core.index.text import Tokenizer, add_weighted, term_counts
from ramem_core.types import MemoryUnit

Matrix = npt.NDArray[Any]


@dataclass(frozen=True, slots=True)
class EpisodicKeys:
    """How the episode is reinstated in the search keys of a memory.

    Each weight was chosen by ``benchmarks/tune_retrieval.py`` and judged by
    ``benchmarks/audit_ranking.py``.

    Attributes:
        neighbours: weights of the term frequencies of the turns at distance 1, 2, ... in the
            same session, added to a turn's own lexical key (``()`` turns it off).
        window: turns on each side whose vectors form the dense window key (0: off).
        speaker_weight: a memory said by a person the query names gains
            ``speaker_weight / (rrf_k + 1)``, a first place in a list of that person's
            memories (0: off). Grid ``speaker_weight``.
    """

    neighbours: tuple[float, ...] = (0.5, 0.25)
    window: int = 1
    speaker_weight: float = 0.5

    def __post_init__(self) -> None:
        weights = (*self.neighbours, self.window, self.speaker_weight)
        if min(weights, default=0) < 0 or not all(math.isfinite(w) for w in weights):
            msg = f"episodic key weights must be finite and non-negative: {self}"
            raise ValueError(msg)


CONTENT_KEYS = EpisodicKeys(neighbours=(), window=0, speaker_weight=0.0)
"""Keys of the content-only baseline: a memory is found by its own words and vector alone."""


DENSE_PATCH_LIMIT = 512
"""Rows whose dense windows changed after they were appended are kept apart (a live session's
last turns, whose windows grow) until there are this many; then the windows are rewritten
once."""


# --------------------------------------------------------------------------- the index


def session_key(unit: MemoryUnit) -> tuple[str, str]:
    """A memory's session: (conversation id, session id)."""
    return unit.context.conversation_id, unit.context.session_id


def _turn_order(units: Sequence[MemoryUnit]) -> Callable[[int], tuple[int, str]]:
    return lambda r: (units[r].context.turn_index, units[r].id)


def _in_turn_order(units: Sequence[MemoryUnit], rows: Iterable[int]) -> npt.NDArray[np.int64]:
    return np.asarray(sorted(rows, key=_turn_order(units)), dtype=np.int64)


@dataclass(slots=True)
class _Rekeyed:
    """What re-keying the touched sessions changes (:meth:`EpisodicIndex.updated`, step 3):
    lexical keys removed (documents) and added (with their rows), and each live session's
    tail (the position of its first new turn)."""

    removed_keys: list[int] = field(default_factory=list)
    added_keys: list[dict[str, float]] = field(default_factory=list)
    key_rows: list[int] = field(default_factory=list)
    tails: dict[int, int] = field(default_factory=dict)


class OwnCounts:
    """The own-word counts of a loaded index's rows, read a row at a time from its own-words
    index's documents (as the file holds them: decoded when read, not at load); the rows of
    later writes are appended as dicts. Supports what :class:`EpisodicIndex` does with its
    list of counts: ``len``, indexing by row, ``extend`` and ``prefix``."""

    __slots__ = ("_docs", "_extra", "_index")

    def __init__(self, index: LexicalIndex, docs: npt.NDArray[np.int64]) -> None:
        self._index, self._docs = index, docs
        self._extra: list[dict[str, float]] = []

    def __len__(self) -> int:
        return len(self._docs) + len(self._extra)

    def __getitem__(self, row: int) -> dict[str, float]:
        if row < 0:
            raise IndexError(f"row {row}: rows count from 0")
        n = len(self._docs)
        if row >= n:
            return self._extra[row - n]
        return self._index.document(int(self._docs[row])) or {}

    def __iter__(self) -> Iterator[dict[str, float]]:
        return (self[row] for row in range(len(self)))

    def extend(self, counts: Iterable[dict[str, float]]) -> None:
        self._extra.extend(counts)

    def prefix(self, n: int) -> OwnCounts:
        """The counts of the first ``n`` rows, as counts of their own."""
        if n <= len(self._docs):
            return OwnCounts(self._index, self._docs[:n])
        out = OwnCounts(self._index, self._docs)
        out._extra = self._extra[: n - len(self._docs)]
        return out


class EpisodicIndex:
    """Lexical keys, own words and dense windows of a namespace's memories.

    Rows are the positions of ``units``. Built in one pass from the units (and their vectors);
    :meth:`updated` makes the index of a namespace that changed in a few sessions (live turns)
    without rebuilding the rest, and leaves this index as it was.

    Args:
        units: the memories, in any order (sessions are read from their contexts).
        vectors: one unit vector per memory, rows as ``units``; ``None`` for no dense keys.
        keys: which episodic keys to build.
    """

    def __init__(
        self,
        units: Sequence[MemoryUnit],
        vectors: npt.NDArray[np.float32] | None = None,
        keys: EpisodicKeys | None = None,
    ) -> None:
        self.keys = keys or EpisodicKeys()
        self.tokenize = Tokenizer()
        n = len(units)
        self.own_counts: list[dict[str, float]] | OwnCounts = [
            term_counts(self.tokenize(u.content)) for u in units
        ]
        grouped: dict[tuple[str, str], list[int]] = defaultdict(list)
        for row, unit in enumerate(units):
            grouped[session_key(unit)].append(row)
        # rows of each session in turn order; session number of every row
        self.session_number = {key: number for number, key in enumerate(grouped)}
        self.session_rows = [_in_turn_order(units, rows) for rows in grouped.values()]
        self.session_of = np.zeros(n, dtype=np.int64)
        for number, rows in enumerate(self.session_rows):
            self.session_of[rows] = number
        self.lexical = LexicalIndex.of_columns(
            *neighbour_keys(self.own_counts, self.session_rows, self.keys.neighbours)
        )
        self.row_doc = np.arange(n, dtype=np.int64)  # row -> document of self.lexical
        # every memory's own words: what the second round and the restated values read
        self.own = LexicalIndex()
        self.own.extend(self.own_counts)
        self.own_doc = np.arange(n, dtype=np.int64)
        self.speakers = _speaker_rows({}, units, 0)
        self.vectors = vectors
        # the dense window of every row: its neighbours' rows (-1: none) and the inverse norm
        # of the window's summed vectors, so cos(window, q) comes from the rows' own cosines
        self.neighbours: npt.NDArray[np.int64] | None = None
        self.window_scale: Scores | None = None
        if vectors is not None and self.keys.window > 0:
            self.neighbours = np.full((n, 2 * self.keys.window), -1, dtype=np.int64)
            self.window_scale = np.ones(n, dtype=np.float32)
            for rows in self.session_rows:
                self.neighbours[rows], self.window_scale[rows] = self._window(vectors, rows)
        self._set_window_rows()
        # rows whose windows changed after they were appended, and their windows
        self._patch: dict[int, tuple[npt.NDArray[np.int64], float]] = {}
        self._patch_arrays: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], Scores] | None
        self._patch_arrays = None
        self._columns: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None

    def _set_window_rows(self) -> None:
        self._neighbour_rows = None if self.neighbours is None else Rows.of(self.neighbours)
        self._scale_rows = None if self.window_scale is None else Rows.of(self.window_scale)

    def _session_keys(
        self, rows: npt.NDArray[np.int64], positions: Iterable[int] | None = None
    ) -> list[dict[str, float]]:
        """The lexical keys of a session's rows (turn order), or of the rows at ``positions``
        only."""
        own = self.own_counts
        out = []
        for i in range(len(rows)) if positions is None else positions:
            key = dict(own[rows[i]])
            for distance, weight in enumerate(self.keys.neighbours, start=1):
                if weight <= 0:
                    continue  # a zero weight adds no term (BM25 keeps positive tf only)
                for j in (i - distance, i + distance):
                    if 0 <= j < len(rows):
                        add_weighted(key, own[rows[j]], weight)
            out.append(key)
        return out

    def _window(
        self, vectors: npt.NDArray[np.float32], rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], Scores]:
        """The neighbourhood windows of one session's rows (turn order): each row's neighbour
        rows within ``window`` (``-1`` where the session has none) and the inverse norm of the
        window's summed vectors (the row's own included)."""
        width = self.keys.window
        block = vectors[rows]
        summed = np.array(block, dtype=np.float32, copy=True)
        neighbours = np.full((len(rows), 2 * width), -1, dtype=np.int64)
        offsets = [o for o in range(-width, width + 1) if o]
        for column, offset in enumerate(offsets):
            lo, hi = max(0, -offset), min(len(rows), len(rows) - offset)
            if lo < hi:  # position i sees position i + offset
                summed[lo:hi] += block[lo + offset : hi + offset]
                neighbours[lo:hi, column] = rows[lo + offset : hi + offset]
        norms = np.linalg.norm(summed, axis=1)
        return neighbours, np.asarray(1.0 / np.maximum(norms, 1e-12), dtype=np.float32)

    def updated(
        self,
        units: Sequence[MemoryUnit],
        vectors: npt.NDArray[np.float32] | None,
        replaced: Sequence[int],
    ) -> EpisodicIndex:
        """This index plus these writes: the index of ``units``, this index's units with the
        rows ``replaced`` changed in place (same content, new context) and new units appended
        after them. This index is left unchanged.

        Only the sessions those rows belong to are re-keyed. A session that only gained turns
        after its last one (a live session) costs its new turns: the keys and windows of its
        tail are rebuilt, whatever the session's length. The steps, in order: the own words of
        the new rows, sessions renumbered, the touched sessions re-keyed, the lexical keys
        extended, the own-words index extended, the dense windows patched.
        """
        n_old, n = len(self.session_of), len(units)
        new = EpisodicIndex.__new__(EpisodicIndex)  # not copy.copy: that pickles
        new.__dict__.update(self.__dict__)
        new.own_counts = self._own_counts_with(units)
        touched, fresh = new._renumber_sessions(self, units, replaced)
        rekeyed = new._rekey_sessions(self, units, replaced, touched, fresh)
        new._extend_lexical_keys(self, rekeyed, n)
        new._extend_own_index(self, n_old, n)
        new.speakers = _speaker_rows(self.speakers, units, n_old)
        new._patch_windows(self, vectors, n_old, n, touched, rekeyed.tails)
        return new

    def _own_counts_with(self, units: Sequence[MemoryUnit]) -> list[dict[str, float]] | OwnCounts:
        """Step 1: the own-word counts of ``units``: this index's, then the new rows'.

        Counts are appended, never changed: the newest index of a line extends the shared list
        in place, an older one a copy of its part."""
        n_old = len(self.session_of)
        counts = self.own_counts
        if len(counts) != n_old:
            counts = counts.prefix(n_old) if isinstance(counts, OwnCounts) else counts[:n_old]
        counts.extend(term_counts(self.tokenize(u.content)) for u in units[n_old:])
        return counts

    def _renumber_sessions(
        self, old: EpisodicIndex, units: Sequence[MemoryUnit], replaced: Sequence[int]
    ) -> tuple[set[int], dict[int, list[int]]]:
        """Step 2: each new row's session number (a new session gets the next one); returns
        the sessions touched (of a replaced or a new row) and each one's new rows."""
        n_old, n = len(old.session_of), len(units)
        self.session_number = dict(old.session_number)
        self.session_rows = list(old.session_rows)
        self.session_of = np.concatenate([old.session_of, np.zeros(n - n_old, dtype=np.int64)])
        touched = {int(old.session_of[row]) for row in replaced}
        fresh: dict[int, list[int]] = defaultdict(list)
        for row in range(n_old, n):
            number = self.session_number.setdefault(
                session_key(units[row]), len(self.session_number)
            )
            if number == len(self.session_rows):
                self.session_rows.append(np.zeros(0, dtype=np.int64))
            self.session_of[row] = number
            fresh[number].append(row)
            touched.add(number)
        return touched, fresh

    def _rekey_sessions(
        self,
        old: EpisodicIndex,
        units: Sequence[MemoryUnit],
        replaced: Sequence[int],
        touched: set[int],
        fresh: dict[int, list[int]],
    ) -> _Rekeyed:
        """Step 3: the touched sessions' rows in turn order, and the keys that change: around
        new turns only (their neighbours see them)."""
        n_old = len(old.session_of)
        out = _Rekeyed()
        edited = {int(old.session_of[row]) for row in replaced}
        reach = len(self.keys.neighbours)
        for number in sorted(touched):
            old_rows = self.session_rows[number]
            new_rows = fresh[number]
            appended_only = bool(len(old_rows)) and bool(new_rows) and number not in edited
            at_end = appended_only and min(map(_turn_order(units), new_rows)) >= _turn_order(units)(
                int(old_rows[-1])
            )
            if at_end:  # new turns after the last one (live use): no re-sort, the tail re-keyed
                rows = np.concatenate([old_rows, _in_turn_order(units, new_rows)])
                out.tails[number] = len(old_rows)
                positions: Iterable[int] = range(max(0, len(old_rows) - reach), len(rows))
            else:
                rows = _in_turn_order(units, [*map(int, old_rows), *new_rows])
                found: set[int] = set()
                for i, row in enumerate(rows.tolist()):
                    if row >= n_old:
                        found.update(range(max(0, i - reach), min(len(rows), i + reach + 1)))
                positions = sorted(found)
            self.session_rows[number] = rows
            ordered = list(positions)
            row_keys = self._session_keys(rows, ordered)
            for position, key in zip(rows[ordered].tolist(), row_keys, strict=True):
                if position < n_old:
                    doc = int(old.row_doc[position])
                    if old.lexical.document(doc) == {t: tf for t, tf in key.items() if tf > 0}:
                        continue
                    out.removed_keys.append(doc)
                out.added_keys.append(key)
                out.key_rows.append(position)
        return out

    def _extend_lexical_keys(self, old: EpisodicIndex, rekeyed: _Rekeyed, n: int) -> None:
        """Step 4: the changed keys posted to the lexical index, and each row's document."""
        self.lexical, docs = old.lexical.evolve(rekeyed.removed_keys, rekeyed.added_keys)
        n_old = len(old.session_of)
        self.row_doc = np.concatenate([old.row_doc, np.zeros(n - n_old, dtype=np.int64)])
        self.row_doc[rekeyed.key_rows] = docs

    def _extend_own_index(self, old: EpisodicIndex, n_old: int, n: int) -> None:
        """Step 5: the new rows' own words posted to the own-words index."""
        counts = self.own_counts
        self.own, docs = old.own.evolve([], [counts[row] for row in range(n_old, n)])
        self.own_doc = np.concatenate([old.own_doc, np.asarray(docs, dtype=np.int64)])

    def _patch_windows(
        self,
        old: EpisodicIndex,
        vectors: npt.NDArray[np.float32] | None,
        n_old: int,
        n: int,
        touched: set[int],
        tails: Mapping[int, int],
    ) -> None:
        """Step 6: the dense windows of the new rows, and a patch for old rows whose
        neighbours changed (rewritten once when the patch outgrows
        :data:`DENSE_PATCH_LIMIT`)."""
        self.vectors = vectors
        self._patch, self._patch_arrays = {}, None
        if vectors is None or old.neighbours is None:
            return
        assert old._neighbour_rows is not None
        assert old._scale_rows is not None
        assert old.window_scale is not None
        width = 2 * self.keys.window
        neighbours = np.full((n - n_old, width), -1, dtype=np.int64)
        scale = np.ones(n - n_old, dtype=np.float32)
        patch = dict(old._patch)
        for number in touched:
            rows = self.session_rows[number]
            if number in tails:  # only the tail's windows can change: computed from
                # ``window`` rows before it, so its first rows see their whole window
                first = max(0, tails[number] - self.keys.window)
                start = max(0, first - self.keys.window)
                windows, scales = self._window(vectors, rows[start:])
                windows, scales, rows = (
                    windows[first - start :],
                    scales[first - start :],
                    rows[first:],
                )
            else:
                windows, scales = self._window(vectors, rows)
            added = rows >= n_old
            neighbours[rows[added] - n_old] = windows[added]
            scale[rows[added] - n_old] = scales[added]
            # old rows whose neighbours differ from those they were built with (a live
            # session's last turns; rows are only ever added between, so a window never
            # returns to its built neighbours, and same neighbours mean the same norm)
            kept = np.flatnonzero(~added)
            moved = (old.neighbours[rows[kept]] != windows[kept]).any(axis=1)
            for i in kept[moved].tolist():
                patch[int(rows[i])] = (windows[i], float(scales[i]))
        self._neighbour_rows, self.neighbours = old._neighbour_rows.append(n_old, neighbours)
        self._scale_rows, self.window_scale = old._scale_rows.append(n_old, scale)
        if len(patch) > DENSE_PATCH_LIMIT:  # rewrite once: private copies with the patch
            self.neighbours = np.array(self.neighbours, copy=True)
            self.window_scale = np.array(self.window_scale, copy=True)
            for row, (window, factor) in patch.items():
                self.neighbours[row], self.window_scale[row] = window, factor
            self._set_window_rows()
            patch = {}
        self._patch = patch

    def attach(self, check: Check) -> list[npt.NDArray[Any]]:
        """Have the lexical and own-words indexes of a loaded file verify what they read a
        piece at a time (:meth:`LexicalIndex.attach`); returns the arrays now read lazily."""
        return self.lexical.attach(check) + self.own.attach(check)

    def validate(self, n: int, vectors: npt.NDArray[np.float32] | None) -> None:
        """Raise ``ValueError`` naming the first inconsistency with ``n`` memories and the
        snapshot's ``vectors`` (a loaded file is checked with this)."""

        def need(ok: bool, what: str) -> None:
            if not ok:
                raise ValueError(f"inconsistent snapshot: {what}")

        def rows(array: Any, what: str, kind: str) -> None:
            need(isinstance(array, np.ndarray), f"index.{what} is not an array")
            need(array.dtype.kind == kind, f"index.{what} has dtype {array.dtype}")
            need(array.shape[:1] == (n,), f"index.{what} has {array.shape[:1]} rows, not {n}")

        need(self.vectors is vectors, "the index's vectors are not the snapshot's")
        for name in ("session_of", "row_doc", "own_doc"):
            rows(getattr(self, name), name, "i")
        sessions = len(self.session_rows)
        need(
            n == 0 or bool(((self.session_of >= 0) & (self.session_of < sessions)).all()),
            "session numbers out of range",
        )
        flat = np.fromiter((r for group in self.session_rows for r in group), dtype=np.int64)
        need(bool(((flat >= 0) & (flat < max(n, 1))).all()), "session rows out of range")
        for name, docs in (("lexical", self.row_doc), ("own", self.own_doc)):
            lexical = getattr(self, name)
            need(isinstance(lexical, LexicalIndex), f"index.{name} is not a lexical index")
            lexical.validate(f"index.{name}")
            need(
                len(docs) == 0 or bool(((docs >= 0) & (docs < lexical.size)).all()),
                f"index.{name} documents out of range",
            )
        if self.neighbours is not None:
            rows(self.neighbours, "neighbours", "i")
            need(self.neighbours.ndim == 2, "index.neighbours is not a matrix")
            need(bool(((self.neighbours >= -1) & (self.neighbours < n)).all()), "neighbours")
        if self.window_scale is not None:
            rows(self.window_scale, "window_scale", "f")

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        # the own words' counts are the own-words index's documents: written once, with it
        del state["own_counts"], state["tokenize"], state["_neighbour_rows"], state["_scale_rows"]
        state["_patch_arrays"] = None
        del state["_columns"]  # made on first use
        keys = list(self.session_number)  # as columns: one object per session costs a load
        state["session_number"] = {
            "conversations": [k[0] for k in keys],
            "sessions": [k[1] for k in keys],
            "numbers": np.asarray([self.session_number[k] for k in keys], dtype=np.int64),
        }
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        numbered: Any = state.pop("session_number")
        keys = zip(numbered["conversations"], numbered["sessions"], strict=True)
        self.session_number = dict(zip(keys, numbered["numbers"].tolist(), strict=True))
        self.__dict__.update(state)
        self.own_counts = OwnCounts(self.own, self.own_doc)
        self._columns = None
        self.tokenize = Tokenizer()
        self._set_window_rows()

    def own_lengths(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """How many words (counted as the own-words index counts them) each of ``rows``
        says."""
        return self.own.lengths(self.own_doc[rows])

    def lexical_scores(self, query: str) -> Scores:
        """BM25 of every row's lexical key for ``query``."""
        return self.lexical.scores(self.tokenize(query))[self.row_doc]

    def cosines(self, vector: npt.NDArray[np.float32]) -> Scores:
        """``cos(turn, q)`` of every row (zeros without vectors): one matrix-vector product."""
        if self.vectors is None:
            return np.zeros(len(self.session_of), dtype=np.float32)
        return np.asarray(products.cosines_with(self.vectors, vector), dtype=np.float32)

    def dense_scores(
        self, vector: npt.NDArray[np.float32], cosines: Scores | None = None
    ) -> Scores:
        """Dense score of every row: ``cos(turn) + cos(window)`` (``cos(turn)`` without keys).

        ``cos(window, q)`` is the sum of the window rows' cosines times the window's inverse
        norm, so it costs no pass over the vectors beyond ``cosines`` (given, or computed).
        """
        own = self.cosines(vector) if cosines is None else cosines
        if self.neighbours is None or self.window_scale is None:
            return own
        padded = np.append(own, np.float32(0))  # a missing neighbour (-1) reads the 0
        scores = _with_window(own, padded, self._neighbour_columns(), self.window_scale)
        if self._patch:
            if self._patch_arrays is None:
                self._patch_arrays = (
                    np.fromiter(self._patch, dtype=np.int64, count=len(self._patch)),
                    np.asarray([w for w, _ in self._patch.values()], dtype=np.int64),
                    np.asarray([f for _, f in self._patch.values()], dtype=np.float32),
                )
            rows, windows, factors = self._patch_arrays
            scores[rows] = _with_window(own[rows], padded, windows.T, factors)
        return np.asarray(scores, dtype=np.float32)

    def _neighbour_columns(self) -> npt.NDArray[np.int64]:
        """:attr:`neighbours` column by column, each column contiguous (a gather reads a
        contiguous index twice as fast as a matrix's strided column), made once per index."""
        assert self.neighbours is not None
        held = self._columns
        if held is None or held[0] is not self.neighbours:
            held = (self.neighbours, np.ascontiguousarray(self.neighbours.T))
            self._columns = held
        return held[1]


def neighbour_keys(
    own: Sequence[dict[str, float]],
    session_rows: Sequence[npt.NDArray[np.int64]],
    weights: Sequence[float],
) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Every row's lexical key as columns (:meth:`LexicalIndex.of_columns`): its own term
    counts plus ``weights[d - 1]`` times those of the turns ``d`` before and after it in its
    session (``session_rows``: each session's rows in turn order). The same terms in the same
    order, and the same sums added in the same order, as :meth:`EpisodicIndex._session_keys`
    makes one dictionary at a time."""
    vocabulary, own_offsets, ids, values = as_columns(own)
    size, start = np.diff(own_offsets), own_offsets[:-1]
    n = len(own)
    # (row, the row whose words it takes, weight): its own first, then distance 1 before and
    # after, distance 2 before and after, ...: the order _session_keys adds them in
    every = np.arange(n, dtype=np.int64)
    targets: list[npt.NDArray[np.int64]] = [every]
    sources: list[npt.NDArray[np.int64]] = [every]
    scales: list[npt.NDArray[np.float64]] = [np.ones(n)]
    for distance, weight in enumerate(weights, start=1):
        if weight <= 0:
            continue  # a zero weight adds no term (BM25 keeps positive tf only)
        for side in (0, 1):
            for rows in session_rows:
                if len(rows) > distance:
                    later, earlier = rows[distance:], rows[:-distance]
                    targets.append(later if side == 0 else earlier)
                    sources.append(earlier if side == 0 else later)
                    scales.append(np.full(len(later), weight))
    target, source = np.concatenate(targets), np.concatenate(sources)
    scale: npt.NDArray[np.float64] = np.concatenate(scales)
    # each pair's entries: the source's terms, in the source's order
    count = size[source]
    first = np.repeat(start[source] - (np.cumsum(count) - count), count)
    entry = first + np.arange(int(count.sum()), dtype=np.int64)
    row, term = np.repeat(target, count), ids[entry]
    value = values[entry] * np.repeat(scale, count)
    # stable: a row's entries of one term stay in the order above, summed left to right
    order = np.argsort(row * len(vocabulary) + term, kind="stable")
    row, term, value = row[order], term[order], value[order]
    new = np.ones(len(row), dtype=bool)
    new[1:] = (row[1:] != row[:-1]) | (term[1:] != term[:-1])
    group = np.cumsum(new) - 1
    heads = np.flatnonzero(new)
    summed = value[heads].copy()
    place = np.arange(len(row)) - heads[group]  # each entry's place within its group
    for k in range(1, int(place.max(initial=0)) + 1):
        at = place == k
        summed[group[at]] += value[at]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(row[heads], minlength=n))])
    # each row's terms in the order they were first added (a group's head is its first
    # entry above): the order of _session_keys's dictionary, so lengths sum alike too
    first_seen = np.argsort(row[heads] * len(row) + order[heads])  # keys are distinct
    terms_out, sums = term[heads][first_seen], np.asarray(summed[first_seen], np.float64)
    return vocabulary, offsets.astype(np.int64), terms_out, sums


def _with_window(
    own: Scores, padded: Scores, columns: npt.NDArray[np.int64], scale: Scores
) -> Scores:
    """``cos(turn) + cos(window)`` of rows with cosines ``own``, neighbour rows ``columns``
    (one row per neighbour place, one column per row: indices into ``padded``, every row's
    cosine and a last 0 that ``-1`` reads) and window inverse norms ``scale``."""
    summed = own.copy()
    for column in columns:  # a gather per neighbour place (a sum over axis 0 is slower)
        summed += np.take(padded, column)
    return np.asarray(own + summed * scale, dtype=np.float32)


def speaker_names(unit: MemoryUnit) -> frozenset[str]:
    """Who said ``unit``: its speaker field may name several, comma-separated."""
    return frozenset(n.strip() for n in unit.context.speaker.split(",") if n.strip())


def _speaker_rows(
    known: Mapping[str, npt.NDArray[np.int64]], units: Sequence[MemoryUnit], first: int
) -> dict[str, npt.NDArray[np.int64]]:
    """``known`` (rows of each speaker) with the speakers of the units from row ``first`` on;
    ``known`` is not changed."""
    added: dict[str, list[int]] = defaultdict(list)
    for row in range(first, len(units)):
        for name in speaker_names(units[row]):
            added[name].append(row)
    out = dict(known)
    for name, rows in added.items():
        fresh = np.asarray(rows, dtype=np.int64)
        out[name] = np.concatenate([out[name], fresh]) if name in out else fresh
    return out
