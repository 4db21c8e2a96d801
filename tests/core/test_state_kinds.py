"""States in the user's own words (:mod:`ramem_core.retrieval.kinds`): a later statement
supersedes an earlier one of the same kind of state whatever words carry it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from ramem_core import RaMem, RetrievalConfig
from ramem_core.retrieval.kinds import NEUTRAL, PROTOTYPES, KindVectors
from ramem_core.store.chroma import ChromaStore
from ramem_core.testing import SAME_KIND, HashEmbedder, WordCounter

JOB_WORDS = ("acme", "initech", "gig", "work", "job", "employer", "office")
"""What the fake embedder reads as speaking of a job: a real embedder's neighbourhood."""


class ThemeEmbedder(HashEmbedder):
    """The hash embedder, but every text holding a job word (or a job prototype) embeds as
    "job" plus a little of its own words: "two weeks into the new gig at Initech" lies near
    "I work at a company", as in a real embedder."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        own = super().embed(texts)
        job = super().embed(["job"])[0]
        out = own.copy()
        for i, text in enumerate(texts):
            lowered = text.lower()
            if text in PROTOTYPES["work"] or any(w in lowered for w in JOB_WORDS):
                out[i] = 3 * job + own[i]
            out[i] /= np.linalg.norm(out[i])
        return out


WORDS_ONLY = replace(RetrievalConfig(), state_kind_vectors=None, replacement=SAME_KIND)
IN_OTHER_WORDS = replace(RetrievalConfig(), state_kind_vectors=0.5, replacement=SAME_KIND)


def _memory(config: RetrievalConfig, path: Path) -> tuple[RaMem, list[str]]:
    store = ChromaStore.persistent(path / "store", ThemeEmbedder())
    memory = RaMem(store, counter=WordCounter(), config=config)
    said = [
        ("I work at Acme as an accountant.", datetime(2024, 3, 4, 9)),
        ("Baked bread with the kids this weekend.", datetime(2024, 4, 8, 12)),
        ("Two weeks into the new gig at Initech, loving it.", datetime(2024, 5, 13, 10)),
        ("The weather turned warm at last.", datetime(2024, 5, 20, 18)),
    ]
    ids = [memory.add_turn("user", text, at=at, namespace="u").id for text, at in said]
    return memory, ids


def _ids(memory: RaMem, query: str, at: datetime) -> list[str]:
    return [e.unit.id for e in memory.recall(query, 4, at=at, namespace="u")]


def test_a_job_change_in_other_words_leads_for_now_and_labels_the_old_job(tmp_path: Path) -> None:
    memory, ids = _memory(IN_OTHER_WORDS, tmp_path)
    found = memory.recall("Where do I work these days?", 4, at=datetime(2024, 6, 10), namespace="u")
    states = [e for e in found if e.unit.id in (ids[0], ids[2])]
    assert [e.unit.id for e in states] == [ids[2], ids[0]]
    assert states[1].superseded is not None
    assert states[1].superseded.by == ids[2]
    assert states[0].superseded is None


def test_with_the_words_alone_the_old_job_is_not_superseded(tmp_path: Path) -> None:
    """What the kinds from vectors fix: "gig" says no kind of state in so many words."""
    memory, _ = _memory(WORDS_ONLY, tmp_path)
    found = memory.recall("Where do I work these days?", 4, at=datetime(2024, 6, 10), namespace="u")
    assert all(e.superseded is None for e in found)


def test_a_past_month_reads_the_job_then_held_and_not_the_later_one(tmp_path: Path) -> None:
    memory, ids = _memory(IN_OTHER_WORDS, tmp_path)
    found = memory.recall("Where did I work in April?", 4, at=datetime(2024, 8, 1), namespace="u")
    first = found[0]
    assert first.unit.id == ids[0]
    assert any("held through 'in April'" in s for s in first.satisfied)
    assert first.superseded is not None  # replaced in May, and told so
    later = next(e for e in found if e.unit.id == ids[2])
    assert not any("held" in s for s in later.satisfied)


def test_an_earlier_value_question_keeps_the_old_job_first(tmp_path: Path) -> None:
    memory, ids = _memory(IN_OTHER_WORDS, tmp_path)
    order = _ids(memory, "Where did I work previously?", datetime(2024, 6, 10))
    assert order.index(ids[0]) < order.index(ids[2])


def test_kind_vectors_embed_the_prototypes_once() -> None:
    calls: list[int] = []

    class Counting(ThemeEmbedder):
        def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            calls.append(len(texts))
            return super().embed(texts)

    kinds = KindVectors(Counting(), threshold=0.5)
    vectors = ThemeEmbedder().embed(["I work at Acme.", "Baked bread."])
    first = kinds.bits(vectors)
    kinds.bits(vectors)
    assert calls == [sum(len(t) for t in PROTOTYPES.values()) + len(NEUTRAL)]
    assert first[0] != 0
    assert first[1] == 0


@pytest.mark.parametrize(
    ("question", "window"),
    [
        ("What was my job during June?", (datetime(2024, 6, 1), datetime(2024, 6, 30, 23, 59, 59))),
        ("Where was I living in June?", (datetime(2024, 6, 1), datetime(2024, 6, 30, 23, 59, 59))),
    ],
)
def test_during_a_month_is_a_window_not_an_event(
    question: str, window: tuple[datetime, datetime], tmp_path: Path
) -> None:
    memory, _ = _memory(IN_OTHER_WORDS, tmp_path)
    frame = memory.frame(question, at=datetime(2024, 8, 1), namespace="u")
    grounded = [t.window for t in frame.grounded_times]
    assert [(w.start, w.end) for w in grounded if w is not None] == [window]


def test_kinds_from_vectors_are_on_by_default() -> None:
    assert RetrievalConfig().state_kind_vectors is not None
