"""The list passes of stage 3: each turns the ranking into the list it returns, one decision
at a time, and none drops a memory another pass placed.

In the order :meth:`~ramem_core.retrieval.Retriever.retrieve` applies them:

1. :func:`candidates` — the ranking's best, and the relevant pool (recorded questions and
   replies apart when they yield, ``derived_yield``).
2. :func:`valid_first` — frame-consistent memories of the pool first, then the window's best
   from below it (``context_ranking``, ``validity_pool``, ``window_slots``).
3. :func:`after_their_sources` — a question or reply never ahead of the statement it restates
   (``derived_last``, ``derived_yield``, ``derived_yield_all``).
4. :func:`~ramem_core.retrieval.supersession.latest_first` — a question about now reads the
   latest statement of each superseded chain first (``supersession``).
5. :func:`anchor_side_free` — the first places go to memories off a before/after anchor's
   side (``anchor_side_slots``).
6. :func:`~ramem_core.retrieval.members.with_members` — the second round: for a question
   about several things of one kind, the statements naming members the list lacks take
   the places after its first eight (``members``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from ramem_core.index.snapshot import Mask, Snapshot
from ramem_core.retrieval.conditions import BEFORE_AFTER, Conditions, on_anchor_side
from ramem_core.retrieval.ranking import Ranking
from ramem_core.types import Kind, RecallFrame

Chosen = list[tuple[int, bool]]
"""The list being built: rows, best first, each with whether it satisfied the frame."""


def candidates(
    ranking: Ranking, snap: Snapshot, width: int, pool: int, *, yielding: bool
) -> tuple[list[int], list[int]]:
    """The ``width`` best rows in ranking order and the relevant pool (the first ``pool`` of
    them). ``yielding``: questions and replies yield to statements, so the list holds
    ``width`` statements (recorded questions can crowd a pool) and the pool is made of
    statements."""
    if yielding:
        stated = ranking.top(width, among=~snap.derived)
        said = ranking.top(width, among=snap.derived)
        order = sorted(stated + said, key=lambda row: (-ranking.fused[row], row))
        return order, stated[:pool]
    order = ranking.top(width)
    return order, order[:pool]


def valid_first(
    ranking: Ranking,
    snap: Snapshot,
    conditions: Conditions,
    order: Sequence[int],
    pool: Sequence[int],
    window_slots: int,
    held: Collection[int] = (),
) -> Chosen:
    """``order`` with the pool's frame-consistent memories first (those the frame's
    conditions select, and the lasting states ``held`` through its window), followed by the
    window's ``window_slots`` best from below the pool (a narrow window often holds evidence
    that shares few words with the question); the others keep their order after them."""
    valid: list[int] = []
    if conditions:
        mask = conditions.mask(snap)
        valid = [row for row in pool if mask[row] or row in held]
        if conditions.windows and window_slots:
            valid += beyond_pool(ranking, mask, pool, window_slots)
    first = set(valid)
    return [(row, True) for row in valid] + [(row, False) for row in order if row not in first]


def beyond_pool(ranking: Ranking, mask: Mask, pooled: Sequence[int], slots: int) -> list[int]:
    """The ``slots`` best frame-consistent memories that are not in the relevant pool."""
    taken = set(pooled)
    best = ranking.top(len(taken) + slots, among=mask)
    return [row for row in best if row not in taken][:slots]


def after_their_sources(
    chosen: Chosen,
    snap: Snapshot,
    threshold: float,
    *,
    to_end: bool = False,
    always: bool = False,
) -> Chosen:
    """``chosen`` with each question or reply moved to just after the lowest-placed statement
    of the list it restates or asks about (cosine at least ``threshold``), or with ``to_end``
    after every statement of the list (a question always: asking is not evidence of an event;
    with ``always`` every reply too); everything else keeps its order."""
    rows = np.asarray([row for row, _ in chosen], dtype=np.int64)
    derived = snap.derived[rows]
    if not derived.any() or snap.vectors is None:
        return chosen
    vectors = snap.vectors[rows]
    similar = (vectors[derived] @ vectors.T) >= threshold
    statements = ~derived
    keys: list[tuple[int, int, int]] = []
    d = 0
    for place in range(len(chosen)):
        if not derived[place]:
            keys.append((place, 0, place))
            continue
        sources = np.flatnonzero(similar[d] & statements)
        d += 1
        below = sources[sources > place]
        asked = snap.unit(int(rows[place])).context.kind is Kind.QUESTION
        if to_end and (len(sources) or asked or always):
            keys.append((len(chosen), 1, place))
        else:
            keys.append((int(below.max()) if len(below) else place, 1, place))
    return [chosen[place] for _, _, place in sorted(keys)]


def anchor_side_free(
    chosen: Chosen, pool: int, slots: int, snap: Snapshot, frame: RecallFrame
) -> Chosen:
    """``chosen`` with its first ``slots`` places given to the best memories of its first
    ``pool`` that are not on a before/after anchor's side (:func:`on_anchor_side`)."""
    if not any(t.relation in BEFORE_AFTER for t in frame.grounded_times):
        return chosen
    top = chosen[:pool]
    side = [on_anchor_side(snap.unit(row), frame) for row, _ in top]
    if not any(side[:slots]):
        return chosen
    free = [i for i, s in enumerate(side) if not s][:slots]
    first = [top[i] for i in free]
    return first + [c for i, c in enumerate(top) if i not in free] + chosen[pool:]
