"""The anchor of "after X" (or "before X") after what lies on the asked side of it, labelled."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ramem_core.retrieval.conditions import anchor_rows
from ramem_core.retrieval.passes.base import Facts, Picks


@dataclass(frozen=True, slots=True)
class AnchorAfter:
    """For a before/after relation whose anchor memory was found ("What did I do after the
    hospital visit?": the message telling of the visit), that memory is marked as the
    relation's anchor and is never valid for it; if it stood among the list's leading valid
    memories (those within the window), it moves to just after them. It never moves up, so
    nothing below it loses a place, and every other memory keeps its order."""

    name: str = "anchor-after"

    def __call__(self, facts: Facts, picks: Picks) -> Picks:
        anchors = anchor_rows(facts.snap, facts.frame)
        places = [i for i, p in enumerate(picks) if p.row in anchors]
        if not places:
            return picks
        marked = [replace(picks[i], valid=False, anchor=anchors[picks[i].row]) for i in places]
        rest = [p for p in picks if p.row not in anchors]
        lead = 0
        while lead < len(rest) and rest[lead].valid:
            lead += 1
        out = list(rest)
        for pick, place in sorted(zip(marked, places, strict=True), key=lambda m: -m[1]):
            # its place among the others, at least after the leading valid ones
            before = place - sum(1 for q in places if q < place)
            out.insert(max(before, lead), pick)
        return out
