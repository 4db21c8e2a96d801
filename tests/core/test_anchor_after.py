""" "After X" reads what came after X first, and X is told as the anchor, never as within."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from ramem_core import RaMem
from ramem_core.synthesis import build_prompt, evidence_metadata, system_context
from ramem_core.testing import WordCounter

VISIT = "I went to the hospital today for my knee, the visit took four hours."
AFTER = (
    "Since the hospital visit I have been doing knee exercises every morning.",
    "I went to the cinema with Dana and saw a thriller.",
    "I booked a trip to Lisbon for April.",
)
QUESTION = "What did I do after the hospital visit?"
ASKED = datetime(2024, 3, 25, 9)


def _told(memory: RaMem) -> dict[str, str]:
    """The scenario stored live; each text's memory id."""
    turns = [
        (datetime(2024, 2, 20, 12), "I had dinner with my brother at an Italian place."),
        (datetime(2024, 3, 1, 10), "I started a new pottery class on Tuesdays."),
        (datetime(2024, 3, 10, 18), VISIT),
        (datetime(2024, 3, 12, 9), AFTER[0]),
        (datetime(2024, 3, 15, 19), AFTER[1]),
        (datetime(2024, 3, 20, 12), AFTER[2]),
    ]
    return {text: memory.add_turn("user", text, at=at).id for at, text in turns}


def test_what_came_after_leads_and_the_anchor_follows_labelled(memory: RaMem) -> None:
    ids = _told(memory)
    found = memory.recall(QUESTION, k=6, at=ASKED)
    relation = next(t for t in found.frame.grounded_times if t.anchor_id)
    assert relation.anchor_id == ids[VISIT]
    order = [e.unit.id for e in found]
    within = {ids[text] for text in AFTER}
    place = order.index(ids[VISIT])
    # every memory within the window that the list holds comes before the anchor
    assert set(order[:place]) == within & set(order)
    assert place >= 1
    visit = found[place]
    assert visit.anchor == "after the hospital visit"
    assert not visit.contextual
    assert not any("within" in s for s in visit.satisfied)
    assert all(e.anchor is None for e in found if e.unit.id != ids[VISIT])
    # what a model reads, and what a framework document carries
    text = memory.format(found, max_tokens=2000).text
    assert "anchor: the point 'after the hospital visit' is measured from" in text
    # and what a model is told those lines mean, as an agent's system prompt and to answer
    context = memory.situate(QUESTION, k=6, at=ASKED)
    for told in (system_context(context), build_prompt(QUESTION, context, ASKED)):
        assert "(anchor: the point the question measures from" in told
    assert evidence_metadata(visit)["anchor_of"] == "after the hospital visit"


def test_without_the_pass_the_anchor_stands_among_the_valid(memory: RaMem) -> None:
    """The scenario above needs the pass: off, the visit (inside the padded window) is
    valid and ranks among the memories within it, unlabelled."""
    off = RaMem(
        memory.store,
        counter=WordCounter(),
        config=replace(memory.retriever.config, anchor_after=False),
    )
    ids = _told(off)
    found = off.recall(QUESTION, k=6, at=ASKED)
    visit = next(e for e in found if e.unit.id == ids[VISIT])
    assert visit.anchor is None
    assert visit.contextual
    assert visit.rank < max(e.rank for e in found if e.contextual)


def test_an_anchor_is_never_told_within_its_own_relation() -> None:
    from ramem_core.retrieval.evidence import _not_within

    lines = (
        "said 12 March 2024, 09:00, within 'after the hospital visit'",
        "event March 2024 within 'in March'",
    )
    assert _not_within(lines, "after the hospital visit") == ("event March 2024 within 'in March'",)
    assert _not_within(lines, None) == lines


def test_the_pass_moves_anchors_only_down_to_just_after_the_leading_valid() -> None:
    from types import SimpleNamespace
    from typing import Any

    from ramem_core.retrieval.passes import AnchorAfter, Pick
    from ramem_core.types import Granularity, Relation, TimeConstraint, TimeSpan

    window = TimeSpan(datetime(2024, 3, 11), datetime(2024, 3, 25), Granularity.DAY)

    def facts(*anchors: int) -> Any:
        times = [
            TimeConstraint(f"after x{a}", window, True, Relation.AFTER, anchor_id=f"m{a}")
            for a in anchors
        ]
        position = {f"m{i}": i for i in range(10)}
        return SimpleNamespace(
            snap=SimpleNamespace(position=position),
            frame=SimpleNamespace(grounded_times=times),
        )

    def picks(*rows: int, valid: int) -> list[Pick]:
        return [Pick(r, valid=i < valid) for i, r in enumerate(rows)]

    step = AnchorAfter()
    # the anchor among the three leading valid ones: just after them
    out = step(facts(1), picks(1, 2, 3, 4, 5, valid=3))
    assert [p.row for p in out] == [2, 3, 1, 4, 5]
    assert [p.anchor for p in out] == [None, None, "after x1", None, None]
    assert not out[2].valid
    # below the valid ones already: it keeps its place (never moves up)
    out = step(facts(5), picks(1, 2, 3, 4, 5, valid=2))
    assert [p.row for p in out] == [1, 2, 3, 4, 5]
    assert out[4].anchor == "after x5"
    # two anchors keep their order; no anchor in the list: unchanged
    out = step(facts(1, 2), picks(1, 2, 3, 4, valid=4))
    assert [p.row for p in out] == [3, 4, 1, 2]
    unchanged = picks(3, 4, valid=2)
    assert step(facts(7), unchanged) == unchanged
