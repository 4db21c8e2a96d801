"""The list passes of stage 3 (:mod:`ramem_core.retrieval.passes`): valid memories move
ahead only inside the relevant pool, and a narrow window reaches below it."""

from __future__ import annotations

from datetime import datetime

from ramem_core import (
    ChromaStore,
    Conversation,
    RaMem,
    RetrievalConfig,
    Session,
)
from ramem_core.testing import WordCounter
from tests.builders import session, sources
from tests.conftest import content_only


def _long_session(start: datetime, label: str, topic: str, n: int) -> Session:
    small_talk = (
        f"{'Alice' if i % 2 else 'Ben'}: Small talk number {i} about {topic}."
        for i in range(2, n + 1)
    )
    return session(label, start, f"Ben: Let me tell you about {topic}.", *small_talk)


def test_valid_memories_move_ahead_only_inside_the_relevant_pool(store: ChromaStore) -> None:
    # August holds 40 memories, none about the dentist; the dentist visit was in March
    conversation = Conversation(
        "c",
        (
            session(
                "M",
                datetime(2023, 3, 3, 10, 0),
                "Ben: The dentist filled two teeth and said to floss daily.",
            ),
            _long_session(datetime(2023, 8, 1, 10, 0), "A1", "gardening", 20),
            _long_session(datetime(2023, 8, 15, 10, 0), "A2", "painting", 20),
        ),
    )
    memory = RaMem(store, config=RetrievalConfig(validity_pool=5), counter=WordCounter())
    memory.add_conversation(conversation)
    query = "What did the dentist say in August?"
    assert memory.frame(query).grounded_times  # a grounded but wrong window
    evidence = memory.recall(query, k=10)
    # the relevant memory outside the window is not pushed out by 40 valid ones
    assert "M:1" in {e.unit.source_ids[0] for e in evidence}
    contextual = [e for e in evidence if e.contextual]
    # the valid memories of the relevant pool moved ahead, and the window's two best below it
    assert len(contextual) <= 5 + RetrievalConfig().window_slots
    assert all(e.satisfied for e in contextual)
    assert [e.rank for e in evidence] == list(range(1, 11))
    scores = [e.score for e in evidence]
    assert scores == sorted(scores, reverse=True)
    # with a pool of one and no slots, at most one memory is moved
    narrow = RaMem(
        store, config=RetrievalConfig(validity_pool=1, window_slots=0), counter=WordCounter()
    )
    assert sum(e.contextual for e in narrow.recall(query, k=10)) <= 1


def test_a_narrow_window_reaches_below_the_relevant_pool(store: ChromaStore) -> None:
    # thirty evenings of concert talk; the one concert last Saturday shares few words with
    # the question, so content ranks it below all of them
    sessions = [
        session(
            f"C{day}",
            datetime(2023, 3, 1 + day, 20, 0),
            f"user: I love concert nights, concert number {day} was fun.",
        )
        for day in range(30)
    ]
    sessions.append(
        session(
            "S",
            datetime(2023, 4, 15, 21, 0),
            "user: We saw Queen live with my parents, what a show.",
            "user: The parking was a nightmare though.",
        )
    )
    memory = RaMem(store, counter=WordCounter())
    memory.add_conversation(Conversation("c", tuple(sessions)))
    query = "Who did I go to the concert with last Saturday?"
    at = datetime(2023, 4, 22, 9, 0)
    assert memory.frame(query, at=at).grounded_times
    assert "S:1" not in sources(content_only(store).recall(query, k=20))
    evidence = memory.recall(query, k=10, at=at)
    ids = [e.unit.source_ids[0] for e in evidence]
    # the window's best memories below the pool come first, then the relevant others
    assert set(ids[:2]) == {"S:1", "S:2"}
    assert all(e.contextual for e in evidence[:2])
    assert all(i.startswith("C") for i in ids[2:])
    # without the slots, only the pool's valid memories (here none) move
    pooled = RaMem(store, config=RetrievalConfig(window_slots=0), counter=WordCounter())
    assert "S:1" not in sources(pooled.recall(query, k=10, at=at))
