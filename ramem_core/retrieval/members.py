"""The second round of stage 3: the members of a set a question asks about.

"What martial arts has John done?" is answered by "I'm off to do some taekwondo!" and "I'm
doing kickboxing and it's giving me so much energy": turns about something else that share no
word with the question, so no key of the first round finds them (much of LoCoMo's multi-hop
evidence is not among the first round's 50 best: ``benchmarks/ceiling_multihop.py``). The
question names the *kind* of its members ("martial arts",
"pets", "European countries"); the words of the memory nearest that kind are the members'
names ("taekwondo", "kickbox"; "dog", "turtl"; "spain", "england").

So, for a question about several things of one kind (:func:`asked_kind`), the second round
asks every statement's own words (:class:`~ramem_core.index.bm25.LexicalIndex` of
``index.own``) for the terms of the memory nearest that kind (:class:`TermVectors`: each term
embedded once), restricted as the first round was (the frame's conditions; the one person
the question names who speaks, as the speaker), and its finds take the places from
``start`` on, after the list's first places, only where they add a member the list lacks
(a term none of the list's first ``start + slots`` memories holds), one find per member, the
best-placed in the first round first. It runs after every other pass (the state passes
included): it never moves what they placed in the first ``start`` places, and a list shorter
than ``start`` is unchanged.
"""

from __future__ import annotations

import atexit
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ramem_core.embedding import normalize
from ramem_core.errors import InvalidInputError
from ramem_core.index import products
from ramem_core.index.bm25 import LexicalIndex
from ramem_core.index.snapshot import Mask, Snapshot
from ramem_core.protocols import Embedder
from ramem_core.retrieval.ranking import Ranking
from ramem_core.types import Member

__all__ = [
    "SET_QUESTION",
    "SecondRound",
    "TermVectors",
    "asked_kind",
    "members",
]

SET_QUESTION = re.compile(
    r"^\s*(?:what|which)\s+(?:kinds?\s+of\s+|types?\s+of\s+|sorts?\s+of\s+)?"
    r"((?:[\w-]+\s+){0,2}?[\w-]+s)\s+(?:do|does|did|has|have|had|is|are|was|were)\b",
    re.IGNORECASE,
)
"""A question about several things of one kind: "What/Which (kind of) <plural noun phrase>
<auxiliary> ...", the phrase being the kind ("What martial arts has John done?")."""


def asked_kind(query: str) -> str | None:
    """The kind of thing a question about several things asks for ("martial arts" in "What
    martial arts has John done?"), or ``None`` for any other question."""
    found = SET_QUESTION.search(query)
    return found.group(1).strip() if found else None


@dataclass(frozen=True, slots=True)
class SecondRound:
    """The second round's constants (:mod:`ramem_core.retrieval.members`).

    Args:
        similarity: the cosine a term needs with the kind asked to name a member. Chosen by
            ``benchmarks/tune_second_round.py``.
        nearest: at most this many terms nearest the kind are asked for.
        start: the list's first ``start`` places are kept; finds take the next ones.
        slots: at most this many finds join the list.
        inline_terms: at most this many terms not embedded yet are embedded while a question
            waits (:class:`TermVectors`); ``None``: all (an evaluation's setting).
    """

    similarity: float = 0.5
    nearest: int = 50
    start: int = 8
    slots: int = 2
    inline_terms: int | None = 1000

    def __post_init__(self) -> None:
        if not -1.0 <= self.similarity <= 1.0 or self.nearest < 1 or self.start < 0:
            msg = f"second round: similarity in [-1, 1], nearest >= 1, start >= 0: {self}"
            raise InvalidInputError(msg)
        if self.inline_terms is not None and self.inline_terms < 0:
            msg = f"second round: inline_terms must not be negative, got {self.inline_terms}"
            raise InvalidInputError(msg)
        if self.slots < 1:
            msg = f"second round: slots must be at least 1, got {self.slots}"
            raise InvalidInputError(msg)


class TermVectors:
    """The vectors of a lexical index's terms, each embedded once.

    Term ids only grow along a line of indexes (:meth:`LexicalIndex.vocabulary` is shared by
    every index a line evolves into), so the vectors of a line are one matrix, rows by term
    id, extended by the terms added since it was last read; the ``lines`` most recently read
    are kept. A new line (an index loaded from its file again) takes the vectors of the terms
    a kept line knows and embeds only the others.

    A question waits for at most ``inline`` terms not embedded yet (a conversation's new
    words); a larger vocabulary (the first question of a process on a large store) is
    embedded by a background thread, and questions meanwhile read the terms embedded so far.
    Wrap the embedder in :class:`~ramem_core.embedding.CachedEmbedder` to keep the vectors
    across processes.
    Thread-safe.

    Args:
        embedder: embeds the terms.
        inline: at most this many terms are embedded while a question waits; ``None``: all
            (an evaluation reads a settled store).
        lines: lines of indexes kept.
    """

    CHUNK = 256
    """Terms per background embedding call (each call appends its rows)."""

    def __init__(self, embedder: Embedder, inline: int | None = 1000, lines: int = 4) -> None:
        self.embedder = embedder
        self.inline = inline
        self.lines = lines
        # id(vocabulary) -> (the vocabulary, its terms' vectors by id)
        self._lines: OrderedDict[int, tuple[Mapping[str, int], npt.NDArray[np.float32]]]
        self._lines = OrderedDict()
        self._filling: dict[int, threading.Thread] = {}
        self._lock = threading.Lock()

    def of(self, index: LexicalIndex) -> tuple[list[str], npt.NDArray[np.float32]]:
        """``index``'s terms in id order, as far as they are embedded, and a matrix whose row
        ``i`` is term ``i``'s unit vector (the same length)."""
        vocabulary = index.vocabulary()
        terms = list(vocabulary)  # one C-level copy: a writer may add terms meanwhile
        matrix = self._matrix(vocabulary)
        missing = len(terms) - len(matrix)
        if missing > 0 and (self.inline is None or missing <= self.inline):
            matrix = self._extend(vocabulary, terms)
        elif missing > 0:
            self._fill(vocabulary, terms)
        n = min(len(terms), len(matrix))
        return terms[:n], matrix[:n]

    def join(self, timeout: float | None = None) -> None:
        """Wait for the background embedding under way (tests, benchmarks)."""
        with self._lock:
            threads = list(self._filling.values())
        for thread in threads:
            thread.join(timeout)

    def _matrix(self, vocabulary: Mapping[str, int]) -> npt.NDArray[np.float32]:
        with self._lock:
            known = self._lines.get(id(vocabulary))
            if known is not None and known[0] is vocabulary:
                self._lines.move_to_end(id(vocabulary))
                return known[1]
        return np.zeros((0, self.embedder.dimension), dtype=np.float32)

    def _extend(
        self, vocabulary: Mapping[str, int], terms: list[str], upto: int | None = None
    ) -> npt.NDArray[np.float32]:
        """The line's matrix with ``terms`` up to ``upto`` (all) embedded, kept."""
        matrix = self._matrix(vocabulary)
        fresh = terms[len(matrix) : upto]
        with self._lock:
            kept = [(v, m) for v, m in self._lines.values() if v is not vocabulary]
        vectors = np.zeros((len(fresh), self.embedder.dimension), dtype=np.float32)
        todo = []
        for i, term in enumerate(fresh):
            for other, rows in kept:
                row = other.get(term)
                if row is not None and row < len(rows):
                    vectors[i] = rows[row]
                    break
            else:
                todo.append(i)
        if todo:
            vectors[todo] = normalize(self.embedder.embed([fresh[i] for i in todo]))
        grown = np.concatenate([matrix, vectors])
        key = id(vocabulary)
        with self._lock:
            known = self._lines.get(key)
            if known is not None and known[0] is vocabulary and len(known[1]) > len(grown):
                grown = known[1]  # another thread got further meanwhile
            self._lines[key] = (vocabulary, grown)
            self._lines.move_to_end(key)
            while len(self._lines) > self.lines:
                self._lines.popitem(last=False)
        return grown

    def _fill(self, vocabulary: Mapping[str, int], terms: list[str]) -> None:
        """Embed ``terms`` in a background thread, :attr:`CHUNK` at a time (one at most per
        line)."""
        key = id(vocabulary)

        def run() -> None:
            try:
                while len(self._matrix(vocabulary)) < len(terms) and not _STOPPING.is_set():
                    self._extend(vocabulary, terms, len(self._matrix(vocabulary)) + self.CHUNK)
            finally:
                with self._lock:
                    self._filling.pop(key, None)

        with self._lock:
            if key in self._filling:
                return
            thread = threading.Thread(target=run, name="ramem-term-vectors", daemon=True)
            self._filling[key] = thread
            _FILLERS.add(thread)
        thread.start()


_STOPPING = threading.Event()
_FILLERS: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


@atexit.register
def _stop_filling() -> None:
    """At exit, background embedding stops after its current chunk (a model call cut off by
    the interpreter's end aborts the process)."""
    _STOPPING.set()
    for thread in list(_FILLERS):
        thread.join(_EXIT_WAIT_S)


_EXIT_WAIT_S = 10.0
"""How long exit waits for a background chunk to finish (one chunk takes about a quarter of a
second; a design limit, not fitted)."""


def _near(
    terms: Sequence[str],
    matrix: npt.NDArray[np.float32],
    kind: npt.NDArray[np.float32],
    asked: Sequence[str],
    round_: SecondRound,
) -> dict[str, float]:
    """The terms nearest ``kind`` (cosine at least ``similarity``, at most ``nearest`` of
    them), without the question's own terms and their other forms (a shared four-letter
    start: "book" for "books"; the first round asked for those)."""
    cosines = products.cosines_with(matrix, kind)
    n = min(round_.nearest, len(cosines))
    if n == 0:
        return {}
    best = np.argpartition(-cosines, n - 1)[:n]
    near = {}
    for i in best[np.argsort(-cosines[best], kind="stable")]:
        term, cosine = terms[int(i)], float(cosines[i])
        if cosine < round_.similarity:
            break
        if not any(term[:4] == word[:4] for word in asked):
            near[term] = cosine
    return near


def members(
    snap: Snapshot,
    query: str,
    ranking: Ranking,
    listed: Sequence[int],
    allowed: Mask | None,
    speakers: Sequence[str],
    vectors: TermVectors,
    round_: SecondRound,
    embedder: Embedder | None = None,
) -> dict[int, Member]:
    """The statements the second round adds for ``query`` (empty unless it asks about several
    things of one kind), with the member each names, in order: the best-placed statement in
    ``ranking`` holding each member term that no memory of ``listed`` (the list's first
    places) holds, one per term, at most ``slots``.

    ``allowed``: the rows the frame's conditions select (``None``: all); ``speakers``: the
    people the question names who speak (with exactly one, only their statements);
    ``embedder``: embeds the kind (``vectors``' own by default; a retriever passes the one
    that embedded it with the question)."""
    index = snap.index
    own = index.own
    kind = asked_kind(query)
    if kind is None or snap.vectors is None:
        return {}
    terms, matrix = vectors.of(own)
    kind_vector = normalize((embedder or vectors.embedder).embed([kind]))[0]
    near = _near(terms, matrix, kind_vector, index.tokenize(query), round_)
    listed_terms: set[str] = set()
    for row in listed:
        listed_terms.update(own.document(int(index.own_doc[row])) or ())
    wanted = near.keys() - listed_terms  # members the list lacks
    if not wanted:
        return {}
    holds = own.scores(sorted(wanted))[index.own_doc] > 0
    holds &= ~snap.derived
    if allowed is not None:
        holds &= allowed
    if len(speakers) == 1:
        spoken = np.zeros(len(holds), dtype=bool)
        spoken[index.speakers.get(speakers[0], np.zeros(0, dtype=np.int64))] = True
        holds &= spoken
    rows = np.flatnonzero(holds)
    rows = rows[np.argsort(-ranking.fused[rows], kind="stable")]  # the first round's order
    found: dict[int, Member] = {}
    named: set[str] = set()  # one find per member
    for row in rows.tolist():
        held = wanted.intersection(own.document(int(index.own_doc[row])) or ())
        if held & named:
            continue
        best = max(held, key=lambda term: (near[term], term))
        found[row] = Member(index.tokenize.written(snap.unit(row).content, best), kind)
        named |= held
        if len(found) == round_.slots:
            break
    return found
