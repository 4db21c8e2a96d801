"""The content ranking (:mod:`ramem_core.retrieval.ranking`): episodic keys find a turn by its
neighbours and its session, its own content puts it first, recorded exchanges rank apart."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import numpy as np

from ramem_core import (
    Conversation,
    RaMem,
    RetrievalConfig,
)
from ramem_core.index.episodic import CONTENT_KEYS, EpisodicKeys
from ramem_core.retrieval.fusion import LEARNED_FUSION
from tests.builders import session
from tests.conftest import content_only, two_trips


def test_episodic_keys_prefer_the_supported_episode(memory: RaMem) -> None:
    # a lone look-alike in January against an episode in August that matches as a whole
    memory.add_conversation(
        Conversation(
            "c",
            (
                session(
                    "A",
                    datetime(2023, 1, 5),
                    "Ben: The sardines were grilled by the river, lovely.",
                    "Alice: I painted the kitchen blue.",
                ),
                session(
                    "B",
                    datetime(2023, 8, 5),
                    "Ben: We ate sardines in Porto.",
                    "Alice: Were the sardines grilled?",
                    "Ben: Yes, grilled, next to the river.",
                ),
            ),
        )
    )
    query = "Where did Ben eat grilled sardines by the river?"
    plain = content_only(memory.store).recall(query, k=5)
    # the keys' own fusion (the learned one also weighs the look-alike's own words)
    episodic = RaMem(memory.store, config=RetrievalConfig(fusion=None)).recall(query, k=5)
    assert plain[0].unit.source_ids == ("A:1",)
    assert episodic[0].unit.context.session_id == "B"
    assert {e.unit.id for e in plain} == {e.unit.id for e in episodic}  # nothing dropped
    scores = [e.score for e in episodic]
    assert scores == sorted(scores, reverse=True)
    off = RaMem(memory.store, config=RetrievalConfig(keys=CONTENT_KEYS))
    assert off.recall(query, k=1)[0].unit.source_ids == ("A:1",)  # needs the episodic keys


def test_a_neighbours_words_find_a_turn(memory: RaMem) -> None:
    # "it" names nothing; the turn before it names the pottery class
    memory.add_conversation(
        Conversation(
            "c",
            (
                session(
                    "P",
                    datetime(2023, 5, 2),
                    "Alice: I signed up for a pottery class downtown.",
                    "Ben: Nice, how was the first evening?",
                    "Alice: It was wonderful, I made a small bowl.",
                ),
                session(
                    "Q",
                    datetime(2023, 6, 2),
                    "Alice: The weather was wonderful for a walk.",
                    "Ben: I made soup yesterday evening.",
                ),
            ),
        )
    )
    query = "How was the pottery class downtown?"
    episodic = RaMem(memory.store, config=RetrievalConfig(keys=EpisodicKeys(window=0)))
    plain = RaMem(memory.store, config=RetrievalConfig(keys=CONTENT_KEYS))
    by_id = {u.id: u for u in memory.store.get(memory.namespace)}
    p3 = next(i for i, u in by_id.items() if u.source_ids == ("P:3",))
    lexical = {e.unit.id: e.lexical_score for e in episodic.recall(query, k=5)}
    assert lexical[p3]  # the neighbour's "pottery class" is in P:3's lexical key
    assert not {e.unit.id: e.lexical_score for e in plain.recall(query, k=5)}.get(p3)


def test_rows_ranked_apart_take_no_rank_from_the_others(memory: RaMem) -> None:
    from ramem_core.index.snapshot import Snapshot
    from ramem_core.retrieval import Retriever

    memory.add_conversation(two_trips())
    for day, asked in enumerate(["What did Ben eat in Lisbon?", "Where did Alice go?"]):
        memory.add_exchange(
            asked, "From what you told me: sardines.", at=datetime(2024, 1, day + 1)
        )
    snap = memory.snapshots.get(memory.namespace)
    assert snap.vectors is not None
    stated = np.flatnonzero(~snap.derived)
    alone = Snapshot(
        [snap.unit(int(i)) for i in stated], snap.vectors[stated], memory.retriever.config.keys
    )
    query = "What did Ben eat in Lisbon?"
    vector = memory.embedder.embed([query])[0]
    dense_only = Retriever(memory.embedder, RetrievalConfig(lexical=False))
    together = dense_only.rank(snap, query, vector, apart=snap.derived)
    np.testing.assert_allclose(
        together.fused[stated], dense_only.rank(alone, query, vector).fused, rtol=1e-6
    )
    mixed = dense_only.rank(snap, query, vector)  # without: the questions take their ranks
    assert not np.allclose(mixed.fused[stated], together.fused[stated])


def test_a_question_asking_when_prefers_the_memory_that_says_when(memory: RaMem) -> None:
    # two sessions tell of the same move; only one turn says when it happened
    memory.add_conversation(
        Conversation(
            "c",
            (
                session(
                    "A",
                    datetime(2023, 3, 5),
                    "Ana: Ana moved to Lisbon. Ana loves Lisbon, the move was good.",
                ),
                session("B", datetime(2023, 3, 12), "Ana: I moved there last week with my cat."),
            ),
        )
    )
    said_when = {"B:1"}

    def first(config: RetrievalConfig, query: str) -> set[str]:
        fixed = replace(config, fusion=None)  # the bonus of the fixed fusion (learned: below)
        return set(RaMem(memory.store, config=fixed).recall(query, k=1)[0].unit.source_ids)

    no_bonus = RetrievalConfig(time_weight=0.0)
    assert first(no_bonus, "When did Ana move to Lisbon?") != said_when  # content prefers A
    assert first(RetrievalConfig(), "When did Ana move to Lisbon?") == said_when
    assert first(RetrievalConfig(), "Where did Ana move to, Lisbon?") != said_when  # not "when"
    frame_off = RetrievalConfig(context_ranking=False)
    assert first(frame_off, "When did Ana move to Lisbon?") != said_when  # part of the frame
    # the learned fusion reads "says when" only where the bonus would be given
    snap = memory.snapshots.get(memory.namespace)
    fusion = replace(LEARNED_FUSION, candidates=5)

    def says_when(config: RetrievalConfig, query: str) -> list[float]:
        retriever = RaMem(memory.store, config=config).retriever
        rows, features = retriever.fusion_candidates(snap, memory.frame(query), fusion)
        return [features["timed"][rows.index(snap.position[u.id])] for u in snap.units]

    assert sorted(says_when(RetrievalConfig(), "When did Ana move to Lisbon?")) == [0.0, 1.0]
    for config, query in [
        (RetrievalConfig(), "Where did Ana move to, Lisbon?"),
        (no_bonus, "When did Ana move to Lisbon?"),
        (frame_off, "When did Ana move to Lisbon?"),
    ]:
        assert says_when(config, query) == [0.0, 0.0]
