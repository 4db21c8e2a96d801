"""Superseded memories are labelled: by which later statement, said when."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ramem_core.retrieval.passes.base import Facts, Picks
from ramem_core.retrieval.supersession import successors_for


@dataclass(frozen=True, slots=True)
class SupersededLabels:
    """Each memory of the list that a later statement supersedes is marked with the latest
    successor of the kind of state the question asks about
    (:func:`~ramem_core.retrieval.supersession.successors_for`); it keeps its place."""

    name: str = "superseded-labels"

    def __call__(self, facts: Facts, picks: Picks) -> Picks:
        successor = successors_for(facts.snap, facts.chains, facts.frame.query, kinds=facts.kinds)
        if not successor:
            return picks
        return [
            replace(p, superseded_by=successor[p.row]) if p.row in successor else p for p in picks
        ]
