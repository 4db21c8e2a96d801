"""A recorded question or reply never ahead of the statement it restates or asks about."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ramem_core.index import products
from ramem_core.retrieval.passes.base import Facts, Picks
from ramem_core.types import Kind


@dataclass(frozen=True, slots=True)
class AfterTheirSources:
    """Each question or assistant's reply of the list moves to just after the lowest-placed
    statement it restates or asks about (cosine at least ``threshold``); when recorded
    questions and replies yield (``yield_``, unless the frame asks about the dialogue with
    the agent), after every statement of the list instead: a question always, a reply that
    restates one (with ``yield_all``, every reply). For a question about the dialogue, the
    agent's replies go before the user's questions where they meet (what was said to the user
    is the evidence, what the user asked is not). Everything else keeps its order.

    Args:
        threshold: the cosine that makes a statement the source of a question or reply.
        yield_: questions and replies yield to every statement.
        yield_all: and every reply does, restating or not.
    """

    threshold: float
    yield_: bool = True
    yield_all: bool = False
    name: str = "after-their-sources"

    def __call__(self, facts: Facts, picks: Picks) -> Picks:
        snap = facts.snap
        if snap.vectors is None or not picks:
            return picks
        rows = np.asarray([p.row for p in picks], dtype=np.int64)
        derived = snap.derived[rows]
        if not derived.any():
            return picks
        to_end = self.yield_ and not facts.frame.asks_dialogue
        vectors = snap.vectors[rows]
        similar = products.cosines(vectors[derived], vectors) >= self.threshold
        statements = ~derived
        keys: list[tuple[int, int, int, int]] = []
        d = 0
        for place in range(len(picks)):
            if not derived[place]:
                keys.append((place, 0, 0, place))
                continue
            sources = np.flatnonzero(similar[d] & statements)
            d += 1
            below = sources[sources > place]
            asked = snap.unit(int(rows[place])).context.kind is Kind.QUESTION
            later = int(asked and facts.frame.asks_dialogue)  # replies first, then questions
            if to_end and (len(sources) or asked or self.yield_all):
                keys.append((len(picks), 1, later, place))
            else:
                keys.append((int(below.max()) if len(below) else place, 1, later, place))
        return [picks[place] for *_, place in sorted(keys)]
