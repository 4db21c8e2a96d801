"""What stage 2 may ask of memory (:mod:`ramem_core.retrieval.lookup`): an anchor event is
located only when dense and lexical agree, near the question, in one embedder call."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from ramem_core import (
    ChromaStore,
    EpisodicContext,
    MemoryUnit,
    RaMem,
)
from ramem_core.testing import HashEmbedder, WordCounter
from tests.conftest import two_trips


class SynonymEmbedder(HashEmbedder):
    """The hash embedder, but "vacation" means "holiday trip" (a dense-only match)."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return super().embed([t.replace("vacation", "holiday trip") for t in texts])


def test_an_anchor_event_is_located_only_when_dense_and_lexical_agree(tmp_path: Path) -> None:
    store = ChromaStore.persistent(tmp_path / "db", SynonymEmbedder())
    memory = RaMem(store, counter=WordCounter())
    memory.add_conversation(two_trips())
    found = memory.retriever.lookup(memory.snapshots.get("default")).locate("grilled sardines")
    assert found is not None
    assert found.source_ids == ("S2:1",)
    # dense similarity alone (no word in common) is not enough
    assert memory.snapshots.get("default").index.lexical_scores("vacation").max() == 0
    assert memory.retriever.lookup(memory.snapshots.get("default")).locate("vacation") is None
    # nor is one shared word in a long phrase: the best match is lexically supported (top
    # three) but not similar enough
    phrase = "holiday zebra quartz violin mango"
    assert memory.snapshots.get("default").index.lexical_scores(phrase).max() > 0
    assert memory.retriever.lookup(memory.snapshots.get("default")).locate(phrase) is None


def test_a_relation_question_and_its_anchor_are_embedded_in_one_call(
    memory: RaMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.add_conversation(two_trips())
    calls: list[list[str]] = []
    embed = memory.embedder.embed  # the model behind the retriever's recent-query vectors

    def counted(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        calls.append(list(texts))
        return embed(texts)

    monkeypatch.setattr(memory.embedder, "embed", counted)
    query = "What did Ben eat after the trip to Lisbon?"
    first = memory.recall(query, k=3)
    asked = [c for c in calls if query in c]
    assert len(asked) == 1  # the anchor phrase and the question together
    assert len(asked[0]) == 2
    rest = [c for c in calls if query not in c]
    assert all("I work at a company." in c for c in rest)  # the kinds' prototypes, once
    assert [e.unit.id for e in memory.recall(query, k=3)] == [e.unit.id for e in first]
    assert len(calls) == 1  # asked again: no embedding at all
    memory.retriever.embedder.forget()  # type: ignore[attr-defined]
    memory.recall(query, k=3)
    assert len(calls) == 2


def test_a_relation_question_passes_over_the_vectors_once(
    memory: RaMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The anchor is sought among the question's nearest memories, whose cosines retrieval
    then reuses: one pass over every memory's vector, not one for the anchor and one for the
    question."""
    from ramem_core.index.episodic import EpisodicIndex
    from ramem_core.retrieval import lookup

    memory.add_conversation(two_trips())
    query = "What did Alice do after the Lisbon holiday?"
    everywhere = memory.frame(query)  # a namespace smaller than the bound: a full search
    monkeypatch.setattr(lookup, "ANCHOR_CANDIDATES", 2)
    memory.retriever.embedder.forget()  # type: ignore[attr-defined]
    passes: list[int] = []
    cosines = EpisodicIndex.cosines

    def counted(index: EpisodicIndex, vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        passes.append(len(index.session_of))
        return cosines(index, vector)

    monkeypatch.setattr(EpisodicIndex, "cosines", counted)
    found = memory.recall(query, k=3)
    frame, evidence = found.frame, found.evidence
    assert len(passes) == 1
    assert [t.anchor_id for t in frame.times] == [t.anchor_id for t in everywhere.times]
    assert any(t.anchor_id for t in frame.times)  # the anchor was found among the candidates
    assert evidence[0].contextual
    # a write makes a new snapshot: its cosines are computed again, never reused
    memory.add_turn("Ben", "I ate octopus after the Lisbon holiday.", at=datetime(2023, 9, 1))
    memory.recall(query, k=3)
    assert len(passes) == 2


class PinnedEmbedder(HashEmbedder):
    """The hash embedder, but the texts in ``pinned`` get the vectors given."""

    def __init__(self, pinned: dict[str, npt.NDArray[np.float32]]) -> None:
        super().__init__()
        self.pinned = pinned

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = super().embed(texts)
        for i, text in enumerate(texts):
            if text in self.pinned:
                out[i] = self.pinned[text]
        return out


def _locate_among(contents: list[str], best: int, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """Locate "kiln" among memories (one session each, rows in this order) whose vectors are
    orthogonal but for memory ``best``, which has the phrase's own vector."""
    from ramem_core.index.snapshot import Snapshot
    from ramem_core.retrieval import Retriever

    dimension = HashEmbedder().dimension
    vectors = np.eye(len(contents) + 1, dimension, dtype=np.float32)[1:]
    vectors[best] = np.eye(1, dimension, dtype=np.float32)[0]
    units = [
        MemoryUnit(f"m{i}", text, EpisodicContext(f"S{i}", "c", None, turn_index=0))
        for i, text in enumerate(contents)
    ]
    snap = Snapshot(units, vectors)
    embedder = PinnedEmbedder({"kiln": np.eye(1, dimension, dtype=np.float32)[0]})
    found = Retriever(embedder).lookup(snap).locate("kiln")
    return None if found is None else found.id


def test_an_anchor_must_be_among_the_three_best_lexical_matches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    strong = ["kiln kiln kiln glaze", "kiln kiln kiln clay", "kiln kiln kiln wheel"]
    weak = "the kiln and many other words about something else entirely"
    # the phrase's best dense match is only the fourth lexical match: ambiguous
    assert _locate_among([*strong, weak], best=3, monkeypatch=monkeypatch) is None
    # as the third, it is accepted
    assert _locate_among([*strong[:2], weak], best=2, monkeypatch=monkeypatch) == "m2"
    # ties count in row order (a stable ranking): the fourth of four equal matches is out
    equal = ["kiln glaze", "kiln clay", "kiln wheel", "kiln stool"]
    assert _locate_among(equal, best=3, monkeypatch=monkeypatch) is None
    assert _locate_among(equal, best=2, monkeypatch=monkeypatch) == "m2"
