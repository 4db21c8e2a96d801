"""Shared fixtures: fresh stores on the fake embedder, and small conversations."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from ramem_core import (
    ChromaStore,
    Conversation,
    EpisodicContext,
    Granularity,
    MemoryUnit,
    RaMem,
    Store,
    TimeSpan,
)
from ramem_core.evaluation.harness import EvalOptions, evaluate_locomo
from ramem_core.retrieval import CONTENT_ONLY, RetrievalConfig
from ramem_core.testing import SAME_KIND, HashEmbedder, WordCounter
from tests.builders import conversation, session

FIXTURES = Path(__file__).parent / "fixtures"


def evaluate_mini(out: Path, options: EvalOptions) -> dict[str, Any]:
    """The LoCoMo harness on the mini fixture, offline (hash embedder, word counter)."""
    return evaluate_locomo(
        FIXTURES / "locomo_mini.json", out, options, embedder=HashEmbedder(), counter=WordCounter()
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ChromaStore]:
    """A fresh persistent store in a temporary directory, on the hash embedder."""
    fresh = ChromaStore.persistent(tmp_path / "db", HashEmbedder())
    yield fresh
    for namespace in fresh.namespaces():
        fresh.drop(namespace)


@pytest.fixture
def memory(store: ChromaStore) -> RaMem:
    """A RaMem over the fresh store, its kinds of state read from words alone: the hash
    embedder has no neighbourhoods for the kinds' prototypes to find (the kinds from vectors
    are tested with a fake that has some, ``tests/core/test_state_kinds.py``), and a
    replacement model that reads those kinds (the shipped one reads the real embedder's
    vectors: ``tests/core/test_replacement.py``)."""
    config = RetrievalConfig(state_kind_vectors=None, replacement=SAME_KIND)
    return RaMem(store, counter=WordCounter(), config=config)


def ticking_clock(start: datetime = datetime(2023, 9, 1, 10, 0)) -> Callable[[], datetime]:
    """A clock for adapters that read the time: each call is one minute after the last."""
    ticks = count()
    return lambda: start + timedelta(minutes=next(ticks))


def two_trips() -> Conversation:
    """Two trips and two doctor visits months apart: confusable episodes."""
    return conversation(
        "friends",
        session(
            "S1",
            datetime(2023, 2, 10, 19, 0),
            "Alice: My doctor said my blood pressure is too high.",
            "Ben: I am flying to Lisbon next week for a holiday.",
        ),
        session(
            "S2",
            datetime(2023, 3, 20, 20, 0),
            "Ben: In Lisbon we ate grilled sardines by the river.",
            "Alice: I started running three times a week.",
        ),
        session(
            "S3",
            datetime(2023, 8, 28, 21, 0),
            "Ben: On my holiday trip we ate grilled sardines and ramen.",
            "Alice: The doctor said my blood pressure is normal now.",
        ),
    )


def unit_at(uid: str, session: str, turn: int, text: str, day: int = 1) -> MemoryUnit:
    """A memory of conversation "c": turn ``turn`` of ``session``, said on ``day`` May 2023."""
    span = TimeSpan(datetime(2023, 5, day, 10), datetime(2023, 5, day, 11), Granularity.INSTANT)
    return MemoryUnit(uid, text, EpisodicContext(session, "c", span, turn_index=turn))


def content_only(store: Store) -> RaMem:
    return RaMem(store, config=CONTENT_ONLY, counter=WordCounter())


def back_from_lisbon(memory: RaMem) -> None:
    """Ben back from Lisbon (the anchor's session), then a pottery class weeks later."""
    back = session(
        "A",
        datetime(2023, 5, 10, 19),
        "Ben: I got back from the Lisbon trip today.",
        "Alice: Welcome back! Tell me everything.",
    )
    later = session("B", datetime(2023, 6, 2), "Ben: I started a pottery class.")
    memory.add_conversation(conversation("c", back, later))
