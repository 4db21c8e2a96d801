"""The kind of state a statement speaks of, read from its vector as well as its words.

"Two weeks into the new gig at Initech" says where its speaker works without "job" or "I
work at"; "our place in Oaxaca" says where they live. The words of
:func:`~ramem_core.states.state_kinds` miss such statements, so a later one never supersedes
the earlier. Here each kind of state has a few plain prototype sentences, embedded once by the
memory's own embedder; a statement (or a question) whose vector has a cosine of at least
``threshold`` with one of a kind's prototypes, the nearest of all, and a higher one than with
every sentence of :data:`NEUTRAL`, speaks of that kind. The kinds are those of the
words (:data:`~ramem_core.states.KINDS`, the same bits) and a few more (:data:`MORE_KINDS`);
every kind but an appointment is a lasting state (held until superseded), an appointment
holds on its date, and a statement is one only when it says a time.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from importlib import resources

import numpy as np
import numpy.typing as npt

from ramem_core.embedding import fixed_vectors
from ramem_core.index import products
from ramem_core.index.snapshot import Snapshot
from ramem_core.protocols import Embedder
from ramem_core.reading import PLAIN
from ramem_core.states import KINDS, asks_about_state, kind_bits_of

MORE_KINDS = ("car", "phone", "school", "team")
"""Kinds of state that only vectors find, after :data:`~ramem_core.states.KINDS` in the bits."""
ALL_KINDS = (*KINDS, *MORE_KINDS)

PROTOTYPES: dict[str, tuple[str, ...]] = {
    "work": (
        "I work at a company.",
        "I started a new job.",
        "I joined a new employer as an engineer.",
        "My manager at the office gave me a new project.",
    ),
    "residence": (
        "I live in this city.",
        "I moved into a new apartment.",
        "Our new house is in a quiet neighbourhood.",
        "We rent a flat downtown.",
    ),
    "relationship": (
        "I'm dating someone new.",
        "My girlfriend and I went out.",
        "My boyfriend and I are together.",
        "I'm in a relationship with my partner.",
    ),
    "appointment": (
        "The party is on Saturday.",
        "My trip is planned for next month.",
        "I'm visiting my family on Sunday.",
        "The deadline is next Friday.",
        "My appointment is on Monday at ten.",
    ),
    "school": (
        "I study at a university.",
        "I'm enrolled in a college program.",
        "I started classes at a new school.",
    ),
    "team": (
        "I play for a football team.",
        "I joined a sports club.",
        "I train with my team every week.",
    ),
    "car": ("I drive a car.", "I bought a new car.", "My car is a sedan."),
    "phone": ("My phone is a smartphone.", "I got a new phone.", "I switched to a new mobile."),
}
"""Plain sentences of each kind of state, written from the kinds' names alone (no benchmark
statement was read to write them)."""

NEUTRAL = (
    "I had a nice day today.",
    "The weather was lovely this afternoon.",
    "I watched a good film last night.",
    "We cooked dinner together.",
    "I read an interesting book.",
    "That sounds great, thanks for telling me.",
)
"""Everyday sentences that state no lasting state: a statement speaks of a kind only when it
is nearer that kind's prototypes than all of these (an embedder that finds every sentence
near every other, or a statement about nothing in particular, names no kind)."""

_BIT = {kind: 1 << i for i, kind in enumerate(ALL_KINDS)}
LASTING_BITS = sum(bit for kind, bit in _BIT.items() if kind != "appointment")


@dataclass(frozen=True, slots=True)
class Kinds:
    """The kinds of state of a snapshot's memories for one question.

    Attributes:
        bits: per row, the kinds of state it speaks of (bits over :data:`ALL_KINDS`).
        lasting: per row, whether it states a lasting state.
        asked: the kinds of state the question asks about.
    """

    bits: npt.NDArray[np.int64]
    lasting: npt.NDArray[np.bool_]
    asked: int

    @staticmethod
    def of_words(snap: Snapshot, query: str) -> Kinds:
        """The kinds the memories' and the question's words say (the snapshot's columns)."""
        bits = np.asarray(snap.columns["state_kinds"], dtype=np.int64)
        lasting = np.asarray(snap.columns["lasting"], dtype=np.bool_)
        return Kinds(bits, lasting, kind_bits_of(asks_about_state(query)))


def lasting_features(
    vectors: npt.NDArray[np.float32], mood: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """What the lasting-state reader reads of statements: each one's vector and its moods
    (:class:`~ramem_core.reading.Mood` bits, one column each)."""
    moods = [((mood & bit) != 0)[:, None] for bit in (1, 2, 4, 8)]
    return np.hstack([np.asarray(vectors, dtype=np.float64), *moods]).astype(np.float64)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Lasting:
    """Does a statement state something that holds until changed, or tell of a one-off event
    ("a day at the lake with my uncle")? A logistic regression over
    :func:`lasting_features`, fitted by ``benchmarks/fit_lasting.py``; a statement reads as
    lasting at or above ``threshold`` (chosen there so that few held-out events do).
    """

    weights: npt.NDArray[np.float64]
    bias: float
    threshold: float

    def lasting(
        self, vectors: npt.NDArray[np.float32], mood: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.bool_]:
        """Per statement, whether it reads as a lasting state (every one, where the vectors
        are of another embedder than it was fitted on: then as their words and kinds say)."""
        if not len(vectors):
            return np.zeros(0, dtype=np.bool_)
        if vectors.shape[1] + 4 != len(self.weights):
            return np.ones(len(vectors), dtype=np.bool_)
        d = vectors.shape[1]
        moods = lasting_features(vectors[:, :0], mood)  # the mood columns alone
        weights = self.weights[:d].astype(np.float32)
        z = products.cosines_with(vectors.astype(np.float32), weights).astype(np.float64)
        z = z + np.einsum("ij,j->i", moods, self.weights[d:]) + self.bias
        out: npt.NDArray[np.bool_] = 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50))) >= self.threshold
        return out

    def __repr__(self) -> str:
        digest = hashlib.sha256(self.weights.tobytes() + repr(self.bias).encode()).hexdigest()
        return f"Lasting({digest[:16]}, threshold={self.threshold})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lasting) and repr(other) == repr(self)

    def __hash__(self) -> int:
        return hash(repr(self))


def load_lasting(name: str = "lasting.json") -> Lasting:
    """The reader stored in ``ramem_core/_data/<name>`` (written by
    ``benchmarks/fit_lasting.py``)."""
    data = json.loads(
        resources.files("ramem_core").joinpath("_data").joinpath(name).read_text(encoding="utf-8")
    )
    return Lasting(np.asarray(data["weights"]), float(data["bias"]), float(data["threshold"]))


LEARNED_LASTING = load_lasting()
"""Fitted by ``benchmarks/fit_lasting.py`` (its threshold chosen by cross-validation there)."""


class KindVectors:
    """The prototypes' vectors (:data:`PROTOTYPES`), embedded once, on first use, by
    ``embedder``; a vector speaks of the kind of its nearest prototype when that cosine is at
    least ``threshold`` and above its cosine with each :data:`NEUTRAL` sentence (one kind per
    vector: "I moved my dentist appointment" is not also a home).

    Args:
        embedder: the memory's embedder.
        threshold: the cosine a statement or a question needs with a kind's prototype.
    """

    def __init__(
        self, embedder: Embedder, threshold: float, lasting: Lasting | None = None
    ) -> None:
        self.embedder = embedder
        self.threshold = threshold
        self.lasting = lasting
        self._vectors: npt.NDArray[np.float32] | None = None
        self._neutral: npt.NDArray[np.float32] | None = None
        self._bits: npt.NDArray[np.int64] = np.array(
            [_BIT[kind] for kind, texts in PROTOTYPES.items() for _ in texts], dtype=np.int64
        )
        self._lock = threading.Lock()

    def bits(self, vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.int64]:
        """The kinds each of ``vectors`` speaks of, as bits over :data:`ALL_KINDS`."""
        with self._lock:
            if self._vectors is None or self._neutral is None:
                texts = [t for texts in PROTOTYPES.values() for t in texts]
                both = fixed_vectors(self.embedder, [*texts, *NEUTRAL])
                self._vectors, self._neutral = both[: len(texts)], both[len(texts) :]
        if not len(vectors):
            return np.zeros(0, dtype=np.int64)
        cosines = products.cosines(vectors, self._vectors)
        best = cosines.argmax(axis=1)  # one kind per statement: the nearest prototype's
        top = cosines[np.arange(len(vectors)), best]
        neutral = products.cosines(vectors, self._neutral).max(axis=1)
        near = (top >= self.threshold) & (top > neutral)
        found: npt.NDArray[np.int64] = np.where(near, self._bits[best], 0).astype(np.int64)
        return found

    def of(
        self,
        snap: Snapshot,
        rows: list[int],
        query: str,
        query_vector: npt.NDArray[np.float32],
    ) -> Kinds:
        """The kinds of ``rows`` (their words' and their vectors') and of the question, the
        other rows' as their words say; statements only (never a question or a reply)."""
        words = Kinds.of_words(snap, query)
        asked = words.asked | int(self.bits(query_vector[None, :])[0])
        if snap.vectors is None or not rows:
            return Kinds(words.bits, words.lasting, asked)
        at = np.asarray(sorted(set(rows)), dtype=np.int64)
        at = at[~snap.derived[at]]
        found = self.bits(snap.vectors[at])
        # an appointment is a plan with a date: a statement that says no time is none
        found = np.where(snap.timed[at], found, found & LASTING_BITS)
        lasts = (found & LASTING_BITS) != 0
        bits = words.bits.copy()
        bits[at] |= found
        lasting = words.lasting.copy()
        lasting[at] |= lasts
        if self.lasting is not None:  # a one-off event never holds until changed
            mood = np.array(
                [int((snap.units[r].context.reading or PLAIN).mood) for r in at.tolist()]
            )
            lasting[at] &= self.lasting.lasting(snap.vectors[at], mood.astype(np.int64))
        return Kinds(bits, lasting, asked)


def joined_bits(
    words: npt.NDArray[np.int64], found: npt.NDArray[np.int64], timed: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int64]:
    """The kinds of statements as their ``words`` say and their vectors ``found``, an
    appointment only where a statement says a time (:meth:`KindVectors.of`)."""
    found = np.where(timed, found, found & LASTING_BITS)
    out: npt.NDArray[np.int64] = (words | found).astype(np.int64)
    return out
