"""The list passes of stage 3, one module each, and the pipeline a config assembles.

Every pass has one signature (:class:`~.base.ListPass`): the question's facts
(:class:`~.base.Facts`: frame, conditions, rankings, now) and the picks so far in, the picks
out (:class:`~.base.Pick`: a row and what the passes found out about it). None drops a memory
another pass placed. In the order :func:`pipeline` applies them:

1. ``held-through`` — a lasting state held through the asked time counts as valid then.
2. ``valid-first`` — the frame's consistent memories of the relevant pool first.
3. ``anchor-after`` — the anchor of "after X" follows what lies after X, labelled.
4. ``after-their-sources`` — a recorded question or reply never ahead of its source.
5. ``latest-first`` — a question about now reads the latest statement of a changed state
   first.
6. ``latest-day-first`` — a value stated again on a later day, its latest day first.
7. ``set-members`` — the second round: the members of an asked set the list lacks.
8. ``superseded-labels`` — superseded memories are labelled.
"""

from __future__ import annotations

from ramem_core.protocols import Embedder
from ramem_core.retrieval.config import RetrievalConfig
from ramem_core.retrieval.passes.after_sources import AfterTheirSources
from ramem_core.retrieval.passes.anchor_after import AnchorAfter
from ramem_core.retrieval.passes.base import Facts, ListPass, Pick, Picks
from ramem_core.retrieval.passes.held import HeldThrough
from ramem_core.retrieval.passes.labels import SupersededLabels
from ramem_core.retrieval.passes.latest_day import LatestDayFirst
from ramem_core.retrieval.passes.latest_first import LatestFirst
from ramem_core.retrieval.passes.set_members import SetMembers
from ramem_core.retrieval.passes.valid_first import ValidFirst

__all__ = [
    "AfterTheirSources",
    "AnchorAfter",
    "Facts",
    "HeldThrough",
    "LatestDayFirst",
    "LatestFirst",
    "ListPass",
    "Pick",
    "Picks",
    "SetMembers",
    "SupersededLabels",
    "ValidFirst",
    "pipeline",
]


def pipeline(config: RetrievalConfig, terms_embedder: Embedder) -> tuple[ListPass, ...]:
    """The passes ``config`` switches on, in order (``terms_embedder`` embeds the second
    round's vocabulary)."""
    states = config.supersession and config.context_ranking
    passes: list[ListPass | None] = [
        HeldThrough() if states else None,
        ValidFirst(config.window_slots) if config.context_ranking else None,
        AnchorAfter() if config.context_ranking and config.anchor_after else None,
        (
            AfterTheirSources(config.derived_last, config.derived_yield, config.derived_yield_all)
            if config.derived_last is not None
            else None
        ),
        (LatestFirst(config.validity_pool) if states else None),
        (
            LatestDayFirst(config.restate_share)
            if states and config.restate_share is not None
            else None
        ),
        (
            SetMembers(config.members, terms_embedder, config.context_ranking)
            if config.members is not None
            else None
        ),
        SupersededLabels() if states else None,
    ]
    return tuple(p for p in passes if p is not None)
