"""The second round: the members of a set the list lacks ("What martial arts has John
done?": "taekwondo", "kickboxing")."""

from __future__ import annotations

from dataclasses import dataclass, field

from ramem_core.protocols import Embedder
from ramem_core.retrieval.members import SecondRound, TermVectors, members
from ramem_core.retrieval.passes.base import Facts, Pick, Picks


@dataclass(frozen=True)
class SetMembers:
    """For a question about several things of one kind (:func:`~ramem_core.retrieval.
    members.asked_kind`), the statements naming the members nearest that kind that the
    list's first places lack take the places after its first ``round_.start``, restricted
    as the first round was (the frame's conditions when ``restricted``, the one speaker
    named); each find says which member it names (:mod:`ramem_core.retrieval.members`).

    Args:
        round_: the second round's constants.
        embedder: embeds the vocabulary's terms (the question's kind is embedded with the
            question, :meth:`~ramem_core.retrieval.Retriever.probe`).
        restricted: the frame's conditions restrict the finds (``context_ranking``).
        terms: the vocabulary's term vectors, each term embedded once, kept by this pass.
    """

    round_: SecondRound
    embedder: Embedder
    restricted: bool = True
    terms: TermVectors = field(init=False)
    name: str = "set-members"

    def __post_init__(self) -> None:
        object.__setattr__(self, "terms", TermVectors(self.embedder, self.round_.inline_terms))

    def __call__(self, facts: Facts, picks: Picks) -> Picks:
        round_ = self.round_
        restricted = bool(facts.conditions) and self.restricted
        found = members(
            facts.snap,
            facts.frame.query,
            facts.ranking,
            [p.row for p in picks[: round_.start + round_.slots]],
            facts.conditions.mask(facts.snap) if restricted else None,
            facts.frame.speakers,
            self.terms,
            round_,
            facts.probe.embedder,  # the kind's vector is held: embedded with the question
        )
        anchors = {p.row for p in picks if p.anchor is not None}  # never a member found
        finds = [
            Pick(row, valid=restricted, member=member)
            for row, member in found.items()
            if row not in anchors
        ]
        return with_finds(picks, finds, round_.start)


def with_finds(picks: Picks, finds: Picks, start: int) -> Picks:
    """``picks`` with ``finds`` at places ``start + 1`` on, every other pick in its order
    after them, the list as long as it was (a list of ``start`` or fewer is unchanged)."""
    if not finds:
        return picks
    found = {p.row for p in finds}
    rest = [p for p in picks[start:] if p.row not in found]
    return [*picks[:start], *finds, *rest][: len(picks)]
