"""Structures shared along a line of snapshot versions: each new version appends where the
one before it ended, in place while nobody appended there yet, so an update costs what it
adds, never a copy of what it keeps, and older versions still read only their own part."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, SupportsIndex, TypeVar, overload

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[Any]
T = TypeVar("T")

Check = Callable[[npt.NDArray[Any]], None]
"""Verifies a piece of a snapshot file's mapped data before it is read (raises when the piece
does not match the file's digests): what a structure read lazily from a file is given."""


class Texts(Sequence[str]):
    """Strings held as one UTF-8 byte array and their byte offsets (a snapshot file's text
    columns, the units' ids, contents and metadata): a string is decoded when it is read, so
    a loaded column of 100k memories makes no Python objects and its bytes stay unread (and,
    mapped from a file, unverified) until a recall returns their memory.

    ``check``, when set (a loaded file's :class:`~ramem_core.index.files.Blocks`), verifies
    the bytes of a string before it is decoded.
    """

    __slots__ = ("_blob", "_offsets", "check")

    def __init__(self, blob: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64]) -> None:
        self._blob = blob
        self._offsets = offsets
        self.check: Check | None = None

    @classmethod
    def of(cls, texts: Iterable[str]) -> Texts:
        encoded = [t.encode("utf-8") for t in texts]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return cls(np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets)

    @property
    def arrays(self) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        """The byte array and the offsets."""
        return self._blob, self._offsets

    def consistent(self) -> bool:
        """True when the offsets cut the byte array from its start to its end, in order (a
        loaded file is checked with this; what the bytes say is checked when read)."""
        offsets, blob = self._offsets, self._blob
        return bool(
            offsets.ndim == 1
            and offsets.dtype == np.int64  # a narrower type's differences could wrap
            and len(offsets) >= 1
            and blob.ndim == 1
            and blob.dtype == np.uint8
            and offsets[0] == 0
            and offsets[-1] == len(blob)
            and (np.diff(offsets) >= 0).all()
        )

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, i: SupportsIndex) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: SupportsIndex | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self._at(j) for j in range(*i.indices(len(self)))]
        return self._at(operator.index(i))

    def _at(self, i: int) -> str:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        piece = self._blob[int(self._offsets[i]) : int(self._offsets[i + 1])]
        if self.check is not None:
            self.check(piece)
        return piece.tobytes().decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        return iter(self.all())

    def all(self) -> list[str]:
        """Every string (the whole byte array read and decoded once)."""
        if self.check is not None:
            self.check(self._blob)
        text = self._blob.tobytes().decode("utf-8")
        offsets = self._offsets
        if len(text) != len(self._blob):  # not ASCII: a string's character offset is its byte
            # offset less the UTF-8 continuation bytes before it
            continued = np.zeros(len(self._blob) + 1, dtype=np.int64)
            np.cumsum((self._blob & 0xC0) == 0x80, out=continued[1:])
            offsets = offsets - continued[offsets]
        bounds = offsets.tolist()
        return [text[a:b] for a, b in itertools.pairwise(bounds)]


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
