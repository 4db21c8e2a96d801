"""BM25 over weighted term frequencies, with appends and removals (generic: no memory types).

Chroma's hybrid ``Search`` API is not implemented for local Chroma, so lexical retrieval runs
client-side on numpy: :class:`LexicalIndex` scores a query over posting lists, accepts
documents as weighted term counts (so a document can be a blend of several texts), and can be
appended to and have documents removed as a live conversation grows, with older copies left
as they were (:meth:`LexicalIndex.evolve`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ramem_core.index.shared import Check, Rows
from ramem_core.index.text import term_counts

Scores = npt.NDArray[np.float32]


# --------------------------------------------------------------------------- BM25


def _idf(documents: int, df: int) -> float:
    """BM25's inverse document frequency of a term ``df`` of ``documents`` hold."""
    return float(np.log(1.0 + (documents - df + 0.5) / (df + 0.5)))


class LexicalIndex:
    """Okapi BM25 over weighted term frequencies, with appends and removals.

    Documents get consecutive ids; removing one leaves a tombstone (its id is never reused, its
    postings stay and score nothing), and statistics (document frequencies, average length)
    always count live documents only. Scores are computed at query time from postings, so an
    append costs the document's terms and a removal its terms' counts.

    An index is changed only while it is built. :meth:`evolve` returns a *new* index with some
    documents removed and others added; this one stays as it was, so readers holding it are
    never disturbed. Posting lists are append-only and shared: the new index appends its
    documents to them, and an older index reads only the entries of its own documents (doc ids
    below its size; ids only grow). Only the newest index of a line may evolve in place; an
    older one evolves into a copy.

    Args:
        k1: term-frequency saturation.
        b: length normalisation.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._docs: list[dict[str, float] | None] | FrozenDocs = []
        # every document's length, appended in place along a line of indexes
        self._length_rows = Rows.of(np.zeros(0, dtype=np.float64))
        self._lengths: npt.NDArray[np.float64] = self._length_rows.data
        self._postings: dict[str, tuple[list[int], list[float]]] = {}
        self._df = _DocFreq()
        self._arrays: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] = {}
        self._live = 0
        self._total_length = 0.0
        self._length_array: npt.NDArray[np.float32] | None = None
        self._n = 0  # this index's document ids: 0 .. n-1 (``_docs`` may hold more)
        self._alive_rows = Rows.of(np.zeros(0, dtype=bool))  # private to this index
        self._alive: npt.NDArray[np.bool_] = self._alive_rows.data
        self._tip = True  # no newer index appended to the shared posting lists yet
        # posting arrays of an index built in bulk or loaded from a file (read-only; lists
        # made on first append)
        self._base = _Columns({}, [0], np.zeros(0, np.int64), np.zeros(0, np.float32))

    def evolve(
        self, removed: Iterable[int], added: Sequence[dict[str, float]]
    ) -> tuple[LexicalIndex, list[int]]:
        """A new index without the ``removed`` documents and with ``added`` ones appended,
        and the ids of the added documents. This index is left unchanged (copy on write)."""
        new = LexicalIndex(self.k1, self.b)
        # documents are appended, never changed, so the newest index of a line shares the
        # list; an older one takes a copy of its own part
        new._docs = self._docs if self._tip else _prefix(self._docs, self._n)
        new._n = self._n
        new._alive_rows = Rows.copy_of(self._alive)  # removals are this index's own
        new._alive = new._alive_rows.data[: self._n]
        new._base = self._base
        new._length_rows, new._lengths = self._length_rows, self._lengths
        if self._tip:
            new._postings = self._postings  # shared, append-only
        else:  # a newer index appends to the shared lists already: take a private copy
            n = self._n
            new._postings = {}
            for term, (docs, tfs) in self._postings.items():
                k = bisect_left(docs, n)
                new._postings[term] = (docs[:k], tfs[:k])
        self._tip = False
        new._df = self._df.copy()
        new._arrays = dict(self._arrays)
        new._live = self._live
        new._total_length = self._total_length
        for doc in removed:
            new.remove(doc)
        return new, [new.add(counts) for counts in added]

    def _append(self, counts: dict[str, float] | None) -> int:
        """A new document id (``counts`` kept for :meth:`document`), alive."""
        doc = self._n
        if len(self._docs) != doc:  # another index appended here: take our part
            self._docs = _prefix(self._docs, doc)
        self._docs.append(counts)
        self._alive_rows, self._alive = self._alive_rows.append(doc, np.ones(1, dtype=bool))
        self._n += 1
        return doc

    def _append_lengths(self, lengths: Sequence[float]) -> None:
        self._length_rows, self._lengths = self._length_rows.append(
            len(self._lengths), np.asarray(lengths, dtype=np.float64)
        )

    @property
    def size(self) -> int:
        """Number of document ids (removed ones included)."""
        return self._n

    def attach(self, check: Check) -> list[npt.NDArray[Any]]:
        """Have what a loaded file's index reads a term or a document at a time (posting
        slices, document counts) verified by ``check`` when read; returns the arrays now read
        lazily."""
        self._base.check = check
        lazy: list[npt.NDArray[Any]] = [self._base._docs, self._base._tfs]
        if isinstance(self._docs, FrozenDocs):
            lazy += self._docs.attach(check)
        return lazy

    def validate(self, what: str = "lexical index") -> None:
        """Raise ``ValueError`` naming the first inconsistency of this index's arrays (a
        loaded file is checked with this)."""
        size = self._n
        if len(self._docs) < size or len(self._alive) != size:
            raise ValueError(f"inconsistent snapshot: {what} documents")
        if len(self._lengths) != size or self._lengths.dtype != np.float64:
            raise ValueError(f"inconsistent snapshot: {what} lengths")
        if not self._base.consistent(size):
            raise ValueError(f"inconsistent snapshot: {what} postings")
        if isinstance(self._docs, FrozenDocs) and not self._docs.consistent():
            raise ValueError(f"inconsistent snapshot: {what} document terms")

    @property
    def live(self) -> int:
        """Number of live documents."""
        return self._live

    def lengths(self, docs: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """The lengths (summed term counts) of documents ``docs``."""
        return self._lengths[docs]

    def document(self, doc: int) -> dict[str, float] | None:
        """The term counts of document ``doc`` (``None`` once removed)."""
        return self._docs[doc] if self._alive[doc] else None

    def add(self, counts: dict[str, float]) -> int:
        """Append a document given as term -> weighted frequency; returns its id."""
        counts = {t: tf for t, tf in counts.items() if tf > 0}
        doc = self._append(counts)
        length = float(sum(counts.values()))
        self._append_lengths([length])
        self._total_length += length
        self._live += 1
        for term, tf in counts.items():
            entry = self._entry(term)
            entry[0].append(doc)
            entry[1].append(tf)
            self._df.add(term)
            self._arrays.pop(term, None)
        self._length_array = None
        return doc

    def extend(self, documents: Sequence[dict[str, float]]) -> None:
        """Append many documents at once (a bulk build: one pass, no per-term bookkeeping)."""
        if not self._n and not self._base:
            self._build(documents)
            return
        if self._base:  # loaded from a file: posting lists are made term by term
            for counts in documents:
                self.add(counts)
            return
        postings, df = self._postings, self._df
        doc = self._n
        lengths = []
        for counts in documents:
            self._append(counts)
            length = 0.0
            for term, tf in counts.items():
                entry = postings.get(term)
                if entry is None:
                    entry = postings[term] = ([], [])
                entry[0].append(doc)
                entry[1].append(tf)
                df.add(term)
                length += tf
            lengths.append(length)
            self._total_length += length
            doc += 1
        self._append_lengths(lengths)
        self._live += len(documents)
        self._arrays.clear()
        self._length_array = None

    @classmethod
    def of_columns(
        cls,
        terms: Sequence[str],
        offsets: npt.NDArray[np.int64],
        doc_terms: npt.NDArray[np.int64],
        doc_tfs: npt.NDArray[np.float64],
        k1: float = 1.5,
        b: float = 0.75,
    ) -> LexicalIndex:
        """An index of documents given as columns, the form a snapshot file holds: document
        ``d`` holds the terms ``terms[doc_terms[offsets[d]:offsets[d + 1]]]``, each once, with
        the positive weights ``doc_tfs`` alongside; every term of ``terms`` is in some
        document (:func:`as_columns` makes them)."""
        index = cls.__new__(cls)
        index.__setstate__(_columns_state(terms, offsets, doc_terms, doc_tfs, k1, b))
        return index

    def _build(self, documents: Sequence[dict[str, float]]) -> None:
        """Index ``documents`` into an empty index as columns (:meth:`of_columns`): the
        posting arrays are made with one sort, posting lists only for terms that a later
        append touches."""
        self.__setstate__(_columns_state(*as_columns(documents), self.k1, self.b))

    def remove(self, doc: int) -> None:
        """Remove document ``doc`` (a no-op if it is already removed)."""
        counts = self.document(doc)
        if counts is None:
            return
        self._alive[doc] = False
        self._live -= 1
        self._total_length -= float(self._lengths[doc])
        for term in counts:
            self._df.add(term, -1)

    def _entry(self, term: str) -> tuple[list[int], list[float]]:
        """The appendable posting list of ``term`` (made from the loaded arrays if need be)."""
        entry = self._postings.get(term)
        if entry is None:
            base = self._base.get(term)
            entry = ([], []) if base is None else (base[0].tolist(), base[1].tolist())
            self._postings[term] = entry
        return entry

    def _posting(self, term: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        cached = self._arrays.get(term)
        if cached is None and term not in self._postings and term in self._base:
            cached = self._arrays[term] = self._base[term]  # base documents precede every id
        if cached is None:
            docs, tfs = self._postings.get(term, ([], []))
            k = bisect_left(docs, self._n)  # this index's own entries
            cached = (np.asarray(docs[:k], dtype=np.int64), np.asarray(tfs[:k], dtype=np.float32))
            self._arrays[term] = cached
        return cached

    def idf(self, term: str) -> float:
        """The BM25 inverse document frequency of ``term`` among this index's live documents;
        0 for a term no document holds (it tells no document from another)."""
        df = self._df.get(term) if self._live else 0
        return _idf(self._live, df) if df else 0.0

    def vocabulary(self) -> Mapping[str, int]:
        """Every term posted along this index's line of indexes, with its id (ids are
        consecutive from 0 in insertion order and only ever added; the mapping is shared along
        the line: read it, never change it). A term may have no live document here."""
        return self._df.vocabulary

    def scores(self, terms: Sequence[str]) -> Scores:
        """BM25 score of every document id for the query ``terms`` (0 for removed ones)."""
        out = np.zeros(self._n, dtype=np.float32)
        if not self._live:
            return out
        if self._length_array is None:
            self._length_array = np.asarray(self._lengths, dtype=np.float32)
        avgdl = max(self._total_length / self._live, 1e-9)
        norm = self.k1 * (1.0 - self.b + self.b * self._length_array / avgdl)
        n = self._live
        for term, qtf in term_counts(terms).items():
            df = self._df.get(term)
            if not df:
                continue
            idf = _idf(n, df)
            docs, tfs = self._posting(term)
            out[docs] += qtf * idf * tfs * (self.k1 + 1.0) / (tfs + norm[docs])
        if self._live < self._n:
            out[~self._alive] = 0.0
        return out

    def __getstate__(self) -> dict[str, Any]:
        """Columnar state for a snapshot file: posting and document arrays, no per-term or
        per-document Python objects, so a 100k-document index loads in milliseconds. An index
        still as it was made from columns (:meth:`of_columns`, or loaded from a file) hands
        back its own."""
        docs = self._docs
        if (
            isinstance(docs, FrozenDocs)
            and docs.unchanged
            and not self._postings
            and len(docs) == self._n == self._live
        ):
            terms, bounds, posting_docs, posting_tfs = self._base.columns()
        else:
            terms, bounds, posting_docs, posting_tfs, docs = self._columns_anew()
        return {
            "k1": self.k1,
            "b": self.b,
            "terms": terms,
            "posting_offsets": bounds,
            "posting_docs": posting_docs,
            "posting_tfs": posting_tfs,
            "docs": docs,
            "lengths": np.array(self._lengths, dtype=np.float64, copy=True),
            "df_terms": (df := self._df.counts())[0],
            "df_counts": df[1],
            "live": self._live,
            "total_length": self._total_length,
        }

    def _columns_anew(
        self,
    ) -> tuple[
        list[str], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32], FrozenDocs
    ]:
        """This index's terms (sorted), posting bounds and columns, and documents, each
        decoded and encoded again (an index that documents were added to or removed from)."""
        terms = sorted({*self._postings, *self._base})
        postings = [self._posting(term) for term in terms]
        n = self._n
        documents = [self.document(doc) for doc in range(n)]
        vocabulary = {term: i for i, term in enumerate(terms)}
        alive = np.ones(n, dtype=bool)
        offsets = np.zeros(n + 1, dtype=np.int64)
        doc_terms: list[int] = []
        doc_tfs: list[float] = []
        for doc in range(n):
            counts = documents[doc]
            if counts is None:
                alive[doc] = False
            else:
                doc_terms.extend(vocabulary[t] for t in counts)
                doc_tfs.extend(counts.values())
            offsets[doc + 1] = len(doc_terms)
        return (
            terms,
            np.cumsum([0, *(len(d) for d, _ in postings)]),
            np.concatenate([d for d, _ in postings] or [np.zeros(0, np.int64)]),
            np.concatenate([t for _, t in postings] or [np.zeros(0, np.float32)]),
            FrozenDocs(
                terms,
                offsets,
                np.asarray(doc_terms, dtype=np.int64),
                np.asarray(doc_tfs, dtype=np.float64),
                alive,
            ),
        )

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["k1"], state["b"])  # type: ignore[misc]
        terms, offsets = state["terms"], state["posting_offsets"]
        at = dict(zip(terms, range(len(terms)), strict=True))
        self._base = _Columns(at, offsets.tolist(), state["posting_docs"], state["posting_tfs"])
        self._docs = state["docs"]
        self._n = len(self._docs)
        docs = self._docs
        alive = docs.alive() if isinstance(docs, FrozenDocs) else [d is not None for d in docs]
        self._alive_rows = Rows.of(np.asarray(alive, dtype=bool).reshape(self._n))
        self._alive = self._alive_rows.data
        self._length_rows = Rows.of(np.array(state["lengths"], dtype=np.float64))
        self._lengths = self._length_rows.data
        terms, counts = state["df_terms"], state["df_counts"]
        if len(terms) != len(counts):
            raise ValueError("document frequencies and their terms differ in length")
        self._df = _DocFreq(
            dict(zip(terms, range(len(terms)), strict=True)), np.array(counts, dtype=np.int64)
        )
        self._live = state["live"]
        self._total_length = state["total_length"]


def as_columns(
    documents: Sequence[dict[str, float]],
) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """``documents`` as columns (:meth:`LexicalIndex.of_columns`): the terms, numbered in
    order of first occurrence, each document's offsets, and its term numbers and weights in
    its own order (dict.fromkeys and map run in C)."""
    terms: list[str] = []
    tfs: list[float] = []
    sizes: list[int] = []
    for counts in documents:
        terms.extend(counts)
        tfs.extend(counts.values())
        sizes.append(len(counts))
    vocabulary = {term: number for number, term in enumerate(dict.fromkeys(terms))}
    ids = np.fromiter(map(vocabulary.__getitem__, terms), np.int64, len(terms))
    offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
    return list(vocabulary), offsets, ids, np.asarray(tfs, dtype=np.float64)


def _columns_state(
    terms: Sequence[str],
    offsets: npt.NDArray[np.int64],
    doc_terms: npt.NDArray[np.int64],
    doc_tfs: npt.NDArray[np.float64],
    k1: float,
    b: float,
) -> dict[str, Any]:
    """The state (:meth:`LexicalIndex.__getstate__`) of an index of documents given as
    columns: the postings made with one sort, by term, each term's documents ascending."""
    n = len(offsets) - 1
    vocabulary = list(terms)
    of_doc = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    order = np.argsort(doc_terms, kind="stable")
    df = np.bincount(doc_terms, minlength=len(vocabulary))
    lengths = np.bincount(of_doc, weights=doc_tfs, minlength=n)
    return {
        "k1": k1,
        "b": b,
        "terms": vocabulary,
        "posting_offsets": np.concatenate([[0], np.cumsum(df)]),
        "posting_docs": of_doc[order],
        "posting_tfs": np.asarray(doc_tfs[order], dtype=np.float32),
        "docs": FrozenDocs(vocabulary, offsets, doc_terms, doc_tfs, np.ones(n, bool)),
        "lengths": lengths,
        "df_terms": vocabulary,
        "df_counts": df,
        "live": n,
        "total_length": float(sum(lengths.tolist())),
    }


def _prefix(
    docs: list[dict[str, float] | None] | FrozenDocs, n: int
) -> list[dict[str, float] | None] | FrozenDocs:
    """The first ``n`` documents of ``docs``, as a list or documents of their own."""
    if isinstance(docs, FrozenDocs):
        return docs.prefix(n)
    return docs[:n]


class _DocFreq:
    """Document frequencies: a term vocabulary shared along a line of indexes (ids are only
    ever added) and this index's counts by term id, an array copied when an index evolves
    (a copy costs a memcpy, not a dict of every term)."""

    __slots__ = ("_counts", "_ids")

    def __init__(
        self, ids: dict[str, int] | None = None, counts: npt.NDArray[np.int64] | None = None
    ) -> None:
        self._ids = {} if ids is None else ids
        self._counts = np.zeros(16, dtype=np.int64) if counts is None else counts

    def get(self, term: str) -> int:
        i = self._ids.get(term)
        return int(self._counts[i]) if i is not None and i < len(self._counts) else 0

    def add(self, term: str, by: int = 1) -> None:
        i = self._ids.get(term)
        if i is None:
            i = self._ids[term] = len(self._ids)
        if i >= len(self._counts):
            grown = np.zeros(max(2 * len(self._counts), i + 1, 16), dtype=np.int64)
            grown[: len(self._counts)] = self._counts
            self._counts = grown
        self._counts[i] += by

    def copy(self) -> _DocFreq:
        return _DocFreq(self._ids, self._counts.copy())

    @property
    def vocabulary(self) -> Mapping[str, int]:
        return self._ids

    def counts(self) -> tuple[list[str], npt.NDArray[np.int64]]:
        """Every term with documents, and how many (two columns)."""
        terms = list(self._ids)
        ids = np.fromiter(self._ids.values(), dtype=np.int64, count=len(terms))
        counts = np.zeros(len(terms), dtype=np.int64)
        known = ids < len(self._counts)
        counts[known] = self._counts[ids[known]]
        keep = np.flatnonzero(counts)
        return [terms[i] for i in keep.tolist()], counts[keep]


class _Columns:
    """Every term's posting arrays as slices of two columns (an index built in bulk or loaded
    from a file); a term's slices are made when it is first asked for, so loading an index
    makes no per-term objects."""

    __slots__ = ("_at", "_bounds", "_docs", "_tfs", "check")

    def __init__(
        self,
        at: dict[str, int],
        bounds: list[int],
        docs: npt.NDArray[np.int64],
        tfs: npt.NDArray[np.float32],
    ) -> None:
        self._at, self._bounds, self._docs, self._tfs = at, bounds, docs, tfs
        self.check: Check | None = None  # a loaded file's: verifies a term's slices

    def get(self, term: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] | None:
        i = self._at.get(term)
        if i is None:
            return None
        first, last = self._bounds[i], self._bounds[i + 1]
        docs, tfs = self._docs[first:last], self._tfs[first:last]
        if self.check is not None:
            self.check(docs)
            self.check(tfs)
        return docs, tfs

    def __getitem__(self, term: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        found = self.get(term)
        if found is None:
            raise KeyError(term)
        return found

    def __contains__(self, term: object) -> bool:
        return term in self._at

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)

    def columns(
        self,
    ) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The terms by number, the bounds of each one's postings, and the two columns."""
        if self.check is not None:  # a loaded file's: never copy damage into a new file
            self.check(self._docs)
            self.check(self._tfs)
        terms = sorted(self._at, key=self._at.__getitem__)
        return terms, np.asarray(self._bounds, dtype=np.int64), self._docs, self._tfs

    def consistent(self, documents: int) -> bool:
        """True when the bounds cut both columns into one slice per term and every posted
        document id is below ``documents`` (a loaded file is checked with this)."""
        bounds = np.asarray(self._bounds)
        return bool(
            len(bounds) == len(self._at) + 1
            and bounds[0] == 0
            and bounds[-1] == len(self._docs) == len(self._tfs)
            and (np.diff(bounds) >= 0).all()
            and (not len(self._docs) or (self._docs.min() >= 0 and self._docs.max() < documents))
        )


class FrozenDocs:
    """Documents' term counts held as arrays (an index loaded from a snapshot file), decoded
    one document at a time; documents appended later are kept beside them.

    Supports what :class:`LexicalIndex` does with its document list: ``len``, indexing,
    ``append`` and ``prefix`` (removals are the index's own alive mask, never written here).
    """

    __slots__ = ("_alive", "_extra", "_offsets", "_terms", "_tfs", "_vocabulary", "check")

    def __init__(
        self,
        vocabulary: list[str],
        offsets: npt.NDArray[np.int64],
        terms: npt.NDArray[np.int64],
        tfs: npt.NDArray[np.float64],
        alive: npt.NDArray[np.bool_],
    ) -> None:
        self._vocabulary = vocabulary
        self._offsets = offsets
        self._terms = terms
        self._tfs = tfs
        self._alive = alive
        self._extra: list[dict[str, float] | None] = []
        self.check: Check | None = None  # a loaded file's: verifies a document's slices

    def __getstate__(self) -> tuple[object, ...]:
        if self._extra:
            raise TypeError("only an unchanged FrozenDocs is pickled (LexicalIndex makes one)")
        if self.check is not None:  # a loaded file's: never copy damage into a new file
            self.check(self._terms)
            self.check(self._tfs)
        return (self._vocabulary, self._offsets, self._terms, self._tfs, self._alive)

    def __setstate__(self, state: tuple[object, ...]) -> None:
        self.__init__(*state)  # type: ignore[misc]

    def __len__(self) -> int:
        return len(self._alive) + len(self._extra)

    def __getitem__(self, doc: int) -> dict[str, float] | None:
        n = len(self._alive)
        if doc >= n:
            return self._extra[doc - n]
        if not self._alive[doc]:
            return None
        lo, hi = int(self._offsets[doc]), int(self._offsets[doc + 1])
        terms, tfs = self._terms[lo:hi], self._tfs[lo:hi]
        if self.check is not None:
            self.check(terms)
            self.check(tfs)
        words = self._vocabulary
        return {words[t]: tf for t, tf in zip(terms.tolist(), tfs.tolist(), strict=True)}

    def append(self, counts: dict[str, float] | None) -> None:
        self._extra.append(counts)

    @property
    def unchanged(self) -> bool:
        """True while nothing was appended (the columns hold every document)."""
        return not self._extra

    def consistent(self) -> bool:
        """True when the offsets cut the term and value arrays and every term id is in the
        vocabulary (a loaded file is checked with this)."""
        offsets, terms = self._offsets, self._terms
        return bool(
            len(offsets) == len(self._alive) + 1
            and int(offsets[-1]) == len(terms) == len(self._tfs)
            and ((terms >= 0) & (terms < len(self._vocabulary))).all()
        )

    def alive(self) -> npt.NDArray[np.bool_]:
        """Which documents are not removed (no document is decoded)."""
        extra = np.asarray([d is not None for d in self._extra], dtype=bool)
        return np.concatenate([np.asarray(self._alive, dtype=bool), extra])

    def prefix(self, n: int) -> FrozenDocs:
        """A copy holding the first ``n`` documents (sharing the arrays)."""
        new = FrozenDocs(self._vocabulary, self._offsets, self._terms, self._tfs, self._alive)
        new._extra = self._extra[: max(0, n - len(self._alive))]
        new.check = self.check
        return new

    def attach(self, check: Check) -> list[npt.NDArray[Any]]:
        """Have each document's slices verified by ``check`` when read; returns the arrays
        now read lazily."""
        self.check = check
        return [self._terms, self._tfs]
