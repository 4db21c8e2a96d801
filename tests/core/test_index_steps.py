"""The live index's update (``EpisodicIndex.updated``: this index plus these writes), one
named step at a time: each step is run on the state the steps before it leave, and checked
against an index built from scratch on all the memories."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from ramem_core.index.episodic import EpisodicIndex, EpisodicKeys
from ramem_core.index.text import term_counts
from ramem_core.testing import HashEmbedder
from ramem_core.types import MemoryUnit
from tests.conftest import unit_at

KEYS = EpisodicKeys()  # every part built: keys, own words, windows


def _history() -> list[MemoryUnit]:
    """Session A (turns 0-5) and session B (turns 0-3), said on two days."""
    a = [unit_at(f"a{i}", "A", i, f"Ann: pottery turn {i} about bowls", day=1) for i in range(6)]
    b = [unit_at(f"b{i}", "B", i, f"Ben: garden turn {i} about tulips", day=2) for i in range(4)]
    return a + b


def _live() -> list[MemoryUnit]:
    """Two turns after session B's last one, and a new session C."""
    return [
        unit_at("b4", "B", 4, "Ben: the tulips bloomed and the roses too", day=2),
        unit_at("b5", "B", 5, "Ben: sardine lunch in the garden", day=2),
        unit_at("c0", "C", 0, "Cam: I moved to Porto", day=3),
    ]


@dataclass
class Case:
    old: EpisodicIndex
    new: EpisodicIndex
    units: list[MemoryUnit]
    vectors: Any
    n_old: int


@pytest.fixture
def case() -> Case:
    embedder = HashEmbedder()
    old_units = _history()
    units = old_units + _live()
    vectors = embedder.embed([u.content for u in units])
    old = EpisodicIndex(old_units, vectors[: len(old_units)], KEYS)
    new = EpisodicIndex.__new__(EpisodicIndex)
    new.__dict__.update(old.__dict__)
    return Case(old, new, units, vectors, len(old_units))


def _scratch(case: Case) -> EpisodicIndex:
    return EpisodicIndex(case.units, case.vectors, KEYS)


def _through(case: Case, last: str) -> Any:
    """Run the steps in order up to ``last`` on ``case.new``; what the last one returns."""
    c, new = case, case.new
    new.own_counts = c.old._own_counts_with(c.units)
    if last == "own counts":
        return new.own_counts
    touched, fresh = new._renumber_sessions(c.old, c.units, [])
    if last == "renumber":
        return touched, fresh
    rekeyed = new._rekey_sessions(c.old, c.units, [], touched, fresh)
    if last == "rekey":
        return rekeyed
    new._extend_lexical_keys(c.old, rekeyed, len(c.units))
    if last == "lexical":
        return rekeyed
    new._extend_own_index(c.old, c.n_old, len(c.units))
    if last == "own index":
        return rekeyed
    new._patch_windows(c.old, c.vectors, c.n_old, len(c.units), touched, rekeyed.tails)
    return rekeyed


def test_step_1_the_new_rows_own_words_are_appended(case: Case) -> None:
    old_counts = list(case.old.own_counts)
    counts = _through(case, "own counts")
    assert counts[: case.n_old] == old_counts
    assert counts[case.n_old :] == [
        term_counts(case.old.tokenize(u.content)) for u in case.units[case.n_old :]
    ]


def test_step_2_sessions_are_renumbered(case: Case) -> None:
    touched, fresh = _through(case, "renumber")
    b, c = case.old.session_number[("c", "B")], case.new.session_number[("c", "C")]
    assert c == len(case.old.session_number)  # a new session takes the next number
    assert touched == {b, c}
    assert fresh == {b: [10, 11], c: [12]}
    assert case.new.session_of.tolist() == _scratch(case).session_of.tolist()
    assert len(case.old.session_of) == case.n_old  # the old index is left as it was


def test_step_3_a_live_session_is_rekeyed_at_its_tail_only(case: Case) -> None:
    rekeyed = _through(case, "rekey")
    b = case.old.session_number[("c", "B")]
    assert rekeyed.tails == {b: 4}  # the new turns came after B's last one
    reach = len(KEYS.neighbours)
    # the tail and the rows whose neighbours see it; the new session's one row
    assert sorted(rekeyed.key_rows) == [*range(10 - reach, 12), 12]


def test_step_4_every_row_has_its_scratch_key(case: Case) -> None:
    _through(case, "lexical")
    scratch = _scratch(case)
    for row in range(len(case.units)):
        assert case.new.lexical.document(int(case.new.row_doc[row])) == scratch.lexical.document(
            int(scratch.row_doc[row])
        )


def test_step_5_the_own_words_index_holds_each_new_row(case: Case) -> None:
    _through(case, "own index")
    assert case.new.own is not None
    for row in range(case.n_old, len(case.units)):
        expected = {t: tf for t, tf in case.new.own_counts[row].items() if tf > 0}
        assert case.new.own.document(int(case.new.own_doc[row])) == expected


def test_step_6_windows_are_the_scratch_ones_and_only_changed_rows_are_patched(
    case: Case,
) -> None:
    _through(case, "windows")
    scratch = _scratch(case)
    assert scratch.neighbours is not None
    assert case.new.neighbours is not None
    new_rows = np.arange(case.n_old, len(case.units))
    assert (case.new.neighbours[new_rows] == scratch.neighbours[new_rows]).all()
    # B's former last turns (within the window) see the new turns now: only they are patched
    for row, (window, _) in case.new._patch.items():
        assert (window == scratch.neighbours[row]).all()
    assert KEYS.window >= 1
    assert set(case.new._patch) == set(range(10 - KEYS.window, 10))


def test_the_steps_make_what_updated_makes(case: Case) -> None:
    _through(case, "windows")
    whole = case.old.updated(case.units, case.vectors, [])
    assert case.new.row_doc.tolist() == whole.row_doc.tolist()
    assert case.new.own_doc.tolist() == whole.own_doc.tolist()
    assert set(case.new._patch) == set(whole._patch)


def test_an_updated_index_scores_windows_as_one_built_from_scratch(case: Case) -> None:
    # the old index has scored a question (its window columns are made); the updated one
    # must read its own neighbours, not the columns it was copied with
    query = HashEmbedder().embed(["tulips in the garden"])[0]
    case.old.dense_scores(query)
    updated = case.old.updated(case.units, case.vectors, [])
    np.testing.assert_array_equal(updated.dense_scores(query), _scratch(case).dense_scores(query))
    assert "_columns" not in updated.__getstate__()  # made on first use, never saved
