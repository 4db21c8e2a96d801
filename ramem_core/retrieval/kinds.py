"""The kind of state a statement speaks of, read from its vector as well as its words.

"Two weeks into the new gig at Initech" says where its speaker works without "job" or "I
work at"; "our place in Oaxaca" says where they live. The words of
:func:`~ramem_core.states.state_kinds` miss such statements, so a later one never supersedes
the earlier. Here each kind of state has a few plain prototype sentences, embedded once by the
memory's own embedder; a statement (or a question) whose vector has a cosine of at least
``threshold`` with one of a kind's prototypes speaks of that kind. The kinds are those of the
words (:data:`~ramem_core.states.KINDS`, the same bits) and a few more (:data:`MORE_KINDS`);
every kind but an appointment is a lasting state (held until superseded), an appointment
holds on its date.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ramem_core.index.snapshot import Snapshot
from ramem_core.protocols import Embedder
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

_BIT = {kind: 1 << i for i, kind in enumerate(ALL_KINDS)}
ASKED = 1 << 62
"""The state the question asks about: the bit of the statements near the question itself."""
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


class KindVectors:
    """The prototypes' vectors (:data:`PROTOTYPES`), embedded once, on first use, by
    ``embedder``; a vector speaks of a kind when its cosine with one of the kind's prototypes
    is at least ``threshold``.

    Args:
        embedder: the memory's embedder.
        threshold: the cosine a statement or a question needs with a kind's prototype.
        asked: the cosine with the question itself that makes a statement one of the state
            asked about (:data:`ASKED`), when the question asks about a kind of state;
            ``None``: never.
    """

    def __init__(self, embedder: Embedder, threshold: float, asked: float | None = None) -> None:
        self.embedder = embedder
        self.threshold = threshold
        self.asked = asked
        self._vectors: npt.NDArray[np.float32] | None = None
        self._bits: npt.NDArray[np.int64] = np.array(
            [_BIT[kind] for kind, texts in PROTOTYPES.items() for _ in texts], dtype=np.int64
        )
        self._lock = threading.Lock()

    def bits(self, vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.int64]:
        """The kinds each of ``vectors`` speaks of, as bits over :data:`ALL_KINDS`."""
        with self._lock:
            if self._vectors is None:
                texts = [t for texts in PROTOTYPES.values() for t in texts]
                self._vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        if not len(vectors):
            return np.zeros(0, dtype=np.int64)
        near = (vectors @ self._vectors.T) >= self.threshold
        found: npt.NDArray[np.int64] = np.bitwise_or.reduce(
            np.where(near, self._bits[None, :], 0), axis=1
        )
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
        lasts = (found & LASTING_BITS) != 0
        if self.asked is not None and asked:
            near = (snap.vectors[at] @ query_vector) >= self.asked
            found = np.where(near, found | ASKED, found)
            lasts |= near & bool(asked & LASTING_BITS)
            asked |= ASKED
        bits = words.bits.copy()
        bits[at] |= found
        lasting = words.lasting.copy()
        lasting[at] |= lasts
        return Kinds(bits, lasting, asked)
