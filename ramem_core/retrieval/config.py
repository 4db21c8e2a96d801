"""The switches of the retrieval stage, one line each, with where each value was chosen."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta

from ramem_core.errors import InvalidInputError
from ramem_core.index.episodic import CONTENT_KEYS, EpisodicKeys
from ramem_core.replacement import LEARNED_REPLACEMENT, Replacement
from ramem_core.retrieval.fusion import LEARNED_FUSION, Fusion
from ramem_core.retrieval.kinds import LEARNED_LASTING, Lasting
from ramem_core.retrieval.members import SecondRound


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Switches of the retrieval stage (the evaluation's ablations are settings of this).

    The tuned values were chosen by ``benchmarks/tune_retrieval.py`` and each pass is judged
    by ``benchmarks/audit_ranking.py`` (figures and histories: ``benchmarks/results/TUNING.md``).

    Attributes:
        keys: the episodic keys memories are found by (:data:`CONTENT_KEYS` for none).
        rrf_k: the reciprocal-rank-fusion constant.
        depth: rows ranked exactly in each list; the rest share the tail rank.
        dense: use dense (embedding) retrieval.
        lexical: use BM25 (and the session documents).
        context_ranking: move frame-consistent memories ahead inside the relevant pool.
        session_context: let a memory's session span stand in for an unknown event time.
        validity_pool: how many of the content ranking's best memories form the relevant
            pool in which frame-consistent ones move ahead (grid ``validity_pool``).
        window_padding: a frame's time windows are widened by this much on each side for
            ranking (LongMemEval's reference implementation pads by two days).
        anchor_min_similarity: cosine needed to accept a memory as a relation's anchor event.
        time_weight: when the frame asks *when* (:attr:`RecallFrame.asks_when`), memories
            that say when (an event time or a mentioned time) gain
            ``time_weight / (rrf_k + 1)``; part of the frame, off with ``context_ranking``
            (grid ``time_weight``; kept by the audit under the symmetric ruling, TUNING.md).
        window_slots: when the frame has a time window, this many of the window's best
            memories *below* the relevant pool join the frame-consistent ones ahead: the
            filtered search of the paper's stage 3, kept small so that a wide or wrong window
            cannot fill the list (grid ``window_slots``).
        exclude_anchor: keep a before/after relation's anchor out of the relation's window
            when ranking: no padding on the anchor's side, and the anchor memory's session
            is not inside ("after the trip" is not the trip). Off: chosen by
            ``benchmarks/tune_retrieval.py``. The "why valid" labels never count the
            padding or the anchor's session either way.
        anchor_after: the memory that tells of a before/after relation's anchor event ("the
            hospital visit" of "after the hospital visit") is labelled as the point the
            relation is measured from, never valid for it, and follows the memories within
            the window (:class:`~ramem_core.retrieval.passes.AnchorAfter`). A behaviour the
            benchmarks do not score: kept on ``benchmarks/bench_anchor.py``, its cost read by
            the audit.
        derived_last: a question or an assistant's reply (:class:`~ramem_core.types.Kind`)
            never outranks a statement in the list that it restates or asks about: one whose
            vector's cosine with its own is at least this; it moves to just after that
            statement. ``None`` turns it off. Not tuned (bulk-ingested conversations hold
            statements only); 0.5 keeps a restatement or a question with its source, and
            leaves a reply about something else where it ranked.
        fusion: re-rank the content ranking's best memories by a learned fusion of its
            signals (:class:`~ramem_core.retrieval.fusion.Fusion`; the default,
            :data:`~ramem_core.retrieval.fusion.LEARNED_FUSION`, is loaded by name from
            ``ramem_core/_data/fusion.json``) before the validity stage;
            ``None``: the fixed fusion alone.
        supersession: states that hold until superseded
            (:mod:`ramem_core.retrieval.supersession`): a later statement by the same person
            about the same state supersedes an earlier one; a question about now reads the
            latest of each chain first, one about a past time finds a lasting state valid
            until it was superseded, and each earlier memory is labelled with the later
            statement that may have replaced it.
        replacement: the model that weighs whether a later statement replaced an earlier one
            (:class:`~ramem_core.replacement.Replacement`; the default,
            :data:`~ramem_core.replacement.LEARNED_REPLACEMENT`, is loaded by name from
            ``ramem_core/_data/replacement.json``, written by
            ``benchmarks/fit_replacement.py``): its label threshold says when a memory is
            told it was superseded, its order threshold when a question about now reads the
            later statement first.
        order_any_kind: a question about now also reads the later statement first when the
            replacement model finds the replacement at least this likely, whatever kinds of
            state the two were read as ("The city break is Seville now" read as a home,
            "Baby shower is now the 6th" as no kind); below it, only statements of one kind
            (or of the kind asked and one not read) are ordered. ``None``: one kind only.
            Chosen on ``bench_states.py``'s and ``bench_unchanged.py``'s choose halves: the
            lowest of 0.5-0.9 that puts no look-alike ahead of what it resembles.
        lasting: reads whether a statement states something that lasts or tells of a
            one-off event (:class:`~ramem_core.retrieval.kinds.Lasting`, loaded by name from
            ``ramem_core/_data/lasting.json``, written by ``benchmarks/fit_lasting.py``): only
            a lasting state is found valid over the time it held; ``None``: as its words and
            kind say.
        restate_share: for a question about now or for a value at no time in particular,
            statements of the relevant pool whose own words hold this share of the question's
            words (weighted by idf) and state a value, said on two or more days, form one
            chain whose latest day's statements are read first
            (:func:`~ramem_core.retrieval.supersession.restated`); ``None`` turns it off.
            Chosen by ``benchmarks/bench_updates.py``.
        state_kind_vectors: a statement or a question speaks of a kind of state also when its
            vector has this cosine with one of the kind's prototype sentences
            (:mod:`ramem_core.retrieval.kinds`: "two weeks into the new gig at Initech" is about
            a job); ``None``: the words alone. Chosen by ``benchmarks/bench_states.py``.
        state_candidates: how many of the content ranking's best statements supersession is
            sought among (with the list's own).
        derived_yield: unless the frame asks about the dialogue with the agent
            (:attr:`RecallFrame.asks_dialogue`), such a reply moves after every statement of
            the list instead of just after its source, and so does every question: a
            restatement or a question adds no evidence, so it takes no top place from a
            statement that might be evidence (with ``derived_yield_all``, every reply too,
            restating or not). Chosen by ``benchmarks/bench_agent_path.py``.
        members: the second round (:mod:`ramem_core.retrieval.members`): for a question
            about several things of one kind ("What martial arts has John done?"), the
            statements holding the words nearest that kind ("taekwondo", "kickboxing") that
            the list lacks take places after its first ones; ``None`` turns it off.
    """

    keys: EpisodicKeys = field(default_factory=EpisodicKeys)
    rrf_k: int = 60
    depth: int = 1000
    dense: bool = True
    lexical: bool = True
    context_ranking: bool = True
    session_context: bool = True
    validity_pool: int = 20
    window_padding: timedelta = timedelta(days=2)
    anchor_min_similarity: float = 0.35
    time_weight: float = 0.5
    window_slots: int = 2
    derived_last: float | None = 0.5
    derived_yield: bool = True
    derived_yield_all: bool = False
    exclude_anchor: bool = False
    anchor_after: bool = True
    fusion: Fusion | None = LEARNED_FUSION
    supersession: bool = True
    replacement: Replacement = LEARNED_REPLACEMENT
    order_any_kind: float | None = 0.8
    lasting: Lasting | None = LEARNED_LASTING
    state_candidates: int = 50
    restate_share: float | None = 0.6
    state_kind_vectors: float | None = 0.3
    members: SecondRound | None = field(default_factory=SecondRound)

    def __post_init__(self) -> None:
        if not (self.dense or self.lexical):
            msg = "retrieval needs dense or lexical retrieval switched on"
            raise InvalidInputError(msg)
        if self.time_weight < 0:
            msg = f"time_weight must not be negative, got {self.time_weight}"
            raise InvalidInputError(msg)
        if self.validity_pool < 1 or self.depth < 1 or self.rrf_k < 0 or self.window_slots < 0:
            msg = (
                "validity_pool and depth must be positive, rrf_k and window_slots non-negative:"
                f" {self}"
            )
            raise InvalidInputError(msg)
        if self.order_any_kind is not None and not 0.0 <= self.order_any_kind <= 1.0:
            msg = f"order_any_kind must be a probability in [0, 1], got {self.order_any_kind}"
            raise InvalidInputError(msg)
        if self.window_padding < timedelta(0):
            msg = f"window_padding must not be negative, got {self.window_padding}"
            raise InvalidInputError(msg)

    def settled(self) -> RetrievalConfig:
        """This config as an offline run reads it: every question waits for the second
        round's term vectors (``members.inline_terms=None``), so a ranking never depends on
        how far a background embedding had got (evaluations and benchmarks; a live agent
        keeps the default)."""
        if self.members is None or self.members.inline_terms is None:
            return self
        return replace(self, members=replace(self.members, inline_terms=None))


CONTENT_ONLY = RetrievalConfig(keys=CONTENT_KEYS, context_ranking=False, fusion=None, members=None)
"""Content-only retrieval (dense + BM25 on each memory's own content, no episodic context):
the baseline RaMem improves on."""
