"""What every list pass of stage 3 shares: the question's facts, the picks, one signature."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ramem_core.index.snapshot import Snapshot
from ramem_core.retrieval.conditions import Conditions
from ramem_core.retrieval.kinds import Kinds
from ramem_core.retrieval.ranking import Probe, Ranking
from ramem_core.types import Member, RecallFrame


@dataclass(frozen=True, slots=True)
class Pick:
    """One memory of the list being built, and what the passes found out about it.

    Attributes:
        row: the memory's row in the snapshot.
        valid: it satisfies the frame (its conditions, or a lasting state ``held`` through
            the frame's window).
        held: in words, the lasting state it states held through the frame's window.
        superseded_by: the row of the later statement that supersedes it.
        member: for a find of the second round, the member of the asked set it names.
        anchor: the before/after relation ("after the hospital visit") whose anchor event
            this memory tells of: the point the relation is measured from.
    """

    row: int
    valid: bool = False
    held: str | None = None
    superseded_by: int | None = None
    member: Member | None = None
    anchor: str | None = None


Picks = list[Pick]


@dataclass(frozen=True, slots=True)
class Facts:
    """What is known of one question against one snapshot before the list is built.

    Attributes:
        snap: the snapshot.
        frame: the recall frame (its ``now`` is the moment of asking).
        probe: the question's vector and cosines.
        conditions: the frame as conditions a memory satisfies.
        ranking: the content ranking (fused, re-ranked by the learned fusion, merged with
            the frame's parts).
        order: the ranking's best rows, the list the passes start from.
        pool: the relevant pool: the first of them in which valid memories move ahead.
        yielding: recorded questions and replies yield to statements.
        chains: for each candidate statement that later ones replaced, likely enough to be
            told (the model's label threshold), their rows in the order they were said
            (empty with supersession off).
        ordering: the same at the model's order threshold, between statements of one kind of
            state (a question about now reads the later first; no claim is made).
        doubts: the same at the model's doubt threshold: statements that a later one may
            have replaced (a state is told it held through a time only when none did).
        kinds: the kinds of state the candidates speak of and the question asks about
            (``None``: as their words say).
    """

    snap: Snapshot
    frame: RecallFrame
    probe: Probe
    conditions: Conditions
    ranking: Ranking
    order: tuple[int, ...]
    pool: tuple[int, ...]
    yielding: bool = False
    chains: Mapping[int, list[int]] = field(default_factory=dict)
    kinds: Kinds | None = None
    ordering: Mapping[int, list[int]] = field(default_factory=dict)
    doubts: Mapping[int, list[int]] = field(default_factory=dict)


class ListPass(Protocol):
    """One decision of stage 3: the picks so far in, the picks out; it never drops a memory
    another pass placed."""

    @property
    def name(self) -> str:
        """The pass's name, as docs/architecture.md lists it."""

    def __call__(self, facts: Facts, picks: Picks) -> Picks: ...
