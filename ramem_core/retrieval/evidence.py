"""The list as evidence: each pick with its scores, why it is valid, by what it is
superseded and, for a find of the second round, the member it names."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ramem_core.retrieval.passes.base import Facts, Pick
from ramem_core.retrieval.supersession import supersession
from ramem_core.types import Evidence, from_epoch


def _with_held(satisfied: tuple[str, ...], held: str | None) -> tuple[str, ...]:
    """What a memory satisfies, with the lasting state it held through a window when its
    own times say nothing of that window."""
    if held is None or any("within" in s for s in satisfied):
        return satisfied
    return (*satisfied, held)


def _not_within(satisfied: tuple[str, ...], relation: str | None) -> tuple[str, ...]:
    """What an anchor memory satisfies, without the relation it is the anchor of."""
    if relation is None:
        return satisfied
    return tuple(s for s in satisfied if f"within {relation!r}" not in s)


def evidence(picks: Sequence[Pick], facts: Facts, *, dense: bool) -> list[Evidence]:
    """``picks`` as evidence, best first: a valid memory's score is its fused score plus 1,
    and a memory never scores above the one before it (a question or reply moved after its
    source takes at most the score before it). ``dense``: report the cosines."""
    snap, ranking, conditions = facts.snap, facts.ranking, facts.conditions
    cosines = facts.probe.cosines if dense and snap.vectors is not None else None
    successor = {p.row: p.superseded_by for p in picks if p.superseded_by is not None}
    said_at = snap.columns["said_at"]  # each memory's own said time (epoch seconds; 0: unknown)
    out = []
    ceiling = np.inf
    for place, pick in enumerate(picks, start=1):
        row = pick.row
        unit = snap.unit(row)
        lexical = float(ranking.lexical[row]) if ranking.lexical is not None else 0.0
        score = min(float(ranking.fused[row]) + (1.0 if pick.valid else 0.0), ceiling)
        ceiling = score
        out.append(
            Evidence(
                unit=unit,
                score=score,
                rank=place,
                dense_score=float(cosines[row]) if cosines is not None else None,
                lexical_score=lexical if lexical > 0 else None,
                contextual=pick.valid,
                satisfied=_not_within(
                    _with_held(conditions.satisfied(unit), pick.held), pick.anchor
                ),
                superseded=supersession(snap, row, successor, facts.kinds),
                member=pick.member,
                said=from_epoch(int(said_at[row])) if said_at[row] else None,
                anchor=pick.anchor,
            )
        )
    return out
