"""Structures shared along a line of snapshot versions: each new version appends where the
one before it ended, in place while nobody appended there yet, so an update costs what it
adds, never a copy of what it keeps, and older versions still read only their own part."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, SupportsIndex, TypeVar, overload

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[Any]
T = TypeVar("T")


class Rows:
    """Matrix rows appended in place while possible, for snapshots that evolve in a line.

    A holder keeps the buffer and how many rows it knows; :meth:`append` writes past them,
    into spare capacity, when nobody appended there yet, so older holders' rows never change
    and an append costs its rows (amortised), not a copy of the matrix.
    """

    __slots__ = ("data", "filled")

    def __init__(self, data: Matrix, filled: int) -> None:
        self.data = data
        self.filled = filled

    @classmethod
    def of(cls, matrix: Matrix) -> Rows:
        return cls(matrix, len(matrix))

    @classmethod
    def copy_of(cls, matrix: Matrix) -> Rows:
        """A private copy of ``matrix`` with room to append (one copy, not two)."""
        data = np.empty((max(2 * len(matrix), 64), *matrix.shape[1:]), dtype=matrix.dtype)
        data[: len(matrix)] = matrix
        return cls(data, len(matrix))

    def append(self, known: int, rows: Matrix) -> tuple[Rows, Matrix]:
        """The buffer holding the first ``known`` rows and then ``rows``, and its view."""
        end = known + len(rows)
        if known == self.filled and end <= len(self.data):
            self.data[known:end] = rows
            self.filled = end
            return self, self.data[:end]
        data = np.empty((max(2 * end, 64), *self.data.shape[1:]), dtype=self.data.dtype)
        data[:known] = self.data[:known]
        data[known:end] = rows
        grown = Rows(data, end)
        return grown, data[:end]


class GrownMap:
    """A key -> row mapping (a snapshot's unit ids) shared along a line of versions: a
    version sees the keys of its first ``n`` rows only. Keys are only ever added, one per
    row, so the newest version of a line adds in place and an older one adds into a copy."""

    __slots__ = ("_data", "_n")

    def __init__(self, data: dict[str, int], n: int) -> None:
        self._data = data
        self._n = n

    @classmethod
    def of(cls, keys: Iterable[str]) -> GrownMap:
        data = {key: row for row, key in enumerate(keys)}
        return cls(data, len(data))

    def get(self, key: str, default: int | None = None) -> int | None:
        row = self._data.get(key)
        return row if row is not None and row < self._n else default

    def __getitem__(self, key: str) -> int:
        row = self.get(key)
        if row is None:
            raise KeyError(key)
        return row

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[str]:
        return (key for key, row in self._data.items() if row < self._n)

    def appended(self, keys: Iterable[str]) -> GrownMap:
        """This mapping with ``keys`` at the rows after its last."""
        data = self._data
        if len(data) != self._n:  # a newer version added here already: a copy of ours
            data = {key: row for key, row in data.items() if row < self._n}
        n = self._n
        for key in keys:
            data[key] = n
            n += 1
        return GrownMap(data, n)

    def __getstate__(self) -> dict[str, int]:
        return {key: row for key, row in self._data.items() if row < self._n}

    def __setstate__(self, state: dict[str, int]) -> None:
        self._data, self._n = dict(state), len(state)


class GrownList(Sequence[T], Generic[T]):
    """A list shared along a line of versions: a version sees its first ``n`` items, with
    the rows it replaced kept apart (``_set``), so :meth:`copy` and :meth:`extend` cost the
    replaced and the new items, never a copy of the rest. The newest version extends the
    shared list in place; an older one extends a copy of its part."""

    __slots__ = ("_data", "_n", "_set")

    def __init__(self, data: list[T], n: int | None = None) -> None:
        self._data = data
        self._n = len(data) if n is None else n
        self._set: dict[int, T] = {}

    def __len__(self) -> int:
        return self._n

    def _at(self, row: int) -> T:
        if row < 0:
            row += self._n
        if not 0 <= row < self._n:
            raise IndexError(row)
        return self._set[row] if row in self._set else self._data[row]

    @overload
    def __getitem__(self, row: SupportsIndex) -> T: ...
    @overload
    def __getitem__(self, row: slice) -> list[T]: ...
    def __getitem__(self, row: SupportsIndex | slice) -> T | list[T]:
        if isinstance(row, slice):
            return [self._at(i) for i in range(*row.indices(self._n))]
        return self._at(row.__index__())

    def __iter__(self) -> Iterator[T]:
        if not self._set:
            return iter(self._data[: self._n]) if len(self._data) != self._n else iter(self._data)
        return (self._at(i) for i in range(self._n))

    def __setitem__(self, row: int, item: T) -> None:
        if not 0 <= row < self._n:
            raise IndexError(row)
        self._set[row] = item

    def extend(self, items: Iterable[T]) -> None:
        if len(self._data) != self._n:  # a newer version extended here: take our part
            self._data = self._data[: self._n]
        before = len(self._data)
        self._data.extend(items)
        self._n += len(self._data) - before

    def copy(self) -> GrownList[T]:
        new: GrownList[T] = GrownList(self._data, self._n)
        new._set = dict(self._set)
        return new

    def __getstate__(self) -> list[T]:
        return list(self)

    def __setstate__(self, state: Sequence[T]) -> None:
        self.__init__(list(state))  # type: ignore[misc]
