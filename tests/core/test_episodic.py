"""The episodic keys (stage 3): neighbour turns, dense windows, the speaker key, and the
fusion's ranks."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from ramem_core import MemoryUnit
from ramem_core.index.episodic import CONTENT_KEYS, EpisodicIndex, EpisodicKeys
from ramem_core.retrieval import ranks
from tests.conftest import unit_at

UNITS = [
    # rows out of turn order on purpose: the index orders sessions by turn_index
    unit_at("a2", "A", 1, "Ben: It was wonderful."),
    unit_at("a1", "A", 0, "Alice: I joined a pottery class."),
    unit_at("a3", "A", 2, "Alice: We made bowls."),
    unit_at("b1", "B", 0, "Ben: The river was cold.", day=9),
]


def test_lexical_keys_carry_neighbour_turns_with_their_weights() -> None:
    index = EpisodicIndex(UNITS, keys=EpisodicKeys(neighbours=(0.5, 0.25)))
    scores = index.lexical_scores("pottery")
    a1, a2, a3, b1 = (scores[i] for i in (1, 0, 2, 3))
    assert a1 > a2 > a3 > 0.0  # own words, then distance 1, then distance 2
    assert b1 == 0.0  # never across sessions
    plain = EpisodicIndex(UNITS, keys=CONTENT_KEYS).lexical_scores("pottery")
    assert plain[0] == 0.0
    assert plain[2] == 0.0


@pytest.mark.parametrize("weights", [(0.5, 0.25), (0.3, 0.7, 0.1), (0.1, 0.7), (0.0, 0.4), ()])
def test_a_build_keys_each_row_as_the_live_update_does(weights: tuple[float, ...]) -> None:
    """The build makes every key at once from columns; a live update makes a few keys one at
    a time: the same terms in the same order with the same weights, so the same lengths,
    whatever the neighbour weights (a session of one turn, a turn of stop words only)."""
    units = [
        *UNITS,
        unit_at("a4", "A", 3, "Alice: Bowls and cups, bowls again."),
        unit_at("a5", "A", 4, "Ben: Cold cups of tea with Alice."),
        unit_at("a6", "A", 5, "and then the"),
        unit_at("a7", "A", 6, "Cup cat, tea cup and a bowl."),
        unit_at("b2", "B", 1, "Alice: The river, the river!", day=9),
        unit_at("c1", "C", 0, "Ben: Tea alone.", day=10),
    ]
    index = EpisodicIndex(units, keys=EpisodicKeys(neighbours=weights))
    for rows in index.session_rows:
        for row, key in zip(rows.tolist(), index._session_keys(rows), strict=True):
            doc = int(index.row_doc[row])
            built = index.lexical.document(doc)
            assert built is not None
            assert list(built.items()) == list(key.items())
            assert index.lexical.lengths(np.array([doc]))[0] == sum(key.values())


def test_episodic_key_weights_must_be_finite_and_non_negative() -> None:
    for bad in ({"neighbours": (0.5, float("nan"))}, {"speaker_weight": -1.0}):
        with pytest.raises(ValueError, match="finite and non-negative"):
            EpisodicKeys(**bad)  # type: ignore[arg-type]


def test_dense_key_adds_the_window_cosine() -> None:
    vectors = np.eye(4, dtype=np.float32)  # a2, a1, a3, b1 orthogonal
    index = EpisodicIndex(UNITS, vectors, EpisodicKeys(window=1))
    query = vectors[1]  # the vector of a1
    scores = index.dense_scores(query)
    # a1: cos 1 + window (a1+a2)/sqrt2 -> 1 + 1/sqrt2; a2: 0 + (a1+a2+a3)/sqrt3 -> 1/sqrt3
    assert scores[1] == pytest.approx(1 + 1 / math.sqrt(2))
    assert scores[0] == pytest.approx(1 / math.sqrt(3))
    assert scores[2] == pytest.approx(0.0)  # a3's window is a2 + a3: a1 is two turns away
    assert scores[3] == pytest.approx(0.0)
    plain = EpisodicIndex(UNITS, vectors, CONTENT_KEYS).dense_scores(query)
    np.testing.assert_allclose(plain, [0, 1, 0, 0])


def test_ranks_put_everything_past_depth_in_the_tail() -> None:
    scores = np.array([0.5, 3.0, 0.0, 2.0, 1.0], dtype=np.float32)
    np.testing.assert_array_equal(ranks(scores, 2), [2, 0, 2, 1, 2])
    np.testing.assert_array_equal(ranks(scores, 10), [3, 0, 10, 1, 2])  # 0 is not ranked
    np.testing.assert_array_equal(
        ranks(np.array([-0.5, -0.1], dtype=np.float32), 5, positive=False), [1, 0]
    )


def _fused(
    units: list[MemoryUnit], keys: EpisodicKeys, query: str, speakers: tuple[str, ...] = ()
) -> npt.NDArray[np.float32]:
    """The retriever's fused ranking of ``units`` (hash vectors) under ``keys``."""
    from ramem_core.index.snapshot import Snapshot
    from ramem_core.retrieval import RetrievalConfig, Retriever
    from ramem_core.testing import HashEmbedder

    embedder = HashEmbedder()
    snap = Snapshot(units, embedder.embed([u.content for u in units]), keys)
    retriever = Retriever(embedder, RetrievalConfig(keys=keys))
    return retriever.rank(snap, query, embedder.embed([query])[0], speakers=speakers).fused


def test_a_memory_said_by_the_person_the_query_names_ranks_first() -> None:
    from dataclasses import replace

    from ramem_core.index.snapshot import Snapshot
    from ramem_core.retrieval import RetrievalConfig, Retriever
    from ramem_core.testing import HashEmbedder

    def said(uid: str, session: str, speaker: str) -> MemoryUnit:
        unit = unit_at(uid, session, 0, "I painted a sunset over the lake.")
        return MemoryUnit(uid, unit.content, replace(unit.context, speaker=speaker))

    # the same words thrice; Melanie's first, so ties would go her way
    units = [said("mel", "B", "Melanie"), said("ben", "A", "Ben"), said("both", "C", "Ann, Ben")]
    embedder = HashEmbedder()
    vectors = embedder.embed([u.content for u in units])
    retriever = Retriever.__new__(Retriever)
    query = "What has Ben painted?"
    for weight in (0.5, 0.0):
        retriever.config = RetrievalConfig(keys=EpisodicKeys(speaker_weight=weight))
        snap = Snapshot(units, vectors, retriever.config.keys)
        fused = retriever.rank(snap, query, embedder.embed([query])[0], speakers=("Ben",)).fused
        if weight:
            assert fused[1] > fused[0]  # Ben's sunset above Melanie's identical one
            assert fused[2] > fused[0]  # "Ann, Ben": said by Ben too
        else:
            assert fused[0] >= fused[1]
    keys, off = EpisodicKeys(speaker_weight=0.5), EpisodicKeys(speaker_weight=0)
    several = "What have melanie's friends Ann and Ben painted?"
    both = _fused(units, keys, several, ("Melanie", "Ann", "Ben")) - _fused(units, keys, several)
    np.testing.assert_allclose(both, [0.5 / 61] * 3, rtol=1e-5)  # once per memory, not per name
    carol = "What has Carol painted?"
    np.testing.assert_array_equal(
        _fused(units, keys, carol, ("Carol",)), _fused(units, keys, carol)
    )
    np.testing.assert_array_equal(_fused(units, off, query, ("Ben",)), _fused(units, off, query))
