"""Structures shared along a line of snapshot versions (:mod:`ramem_core.index.shared`): the
newest version appends in place, an older one into a copy, and no version ever sees another's
rows."""

from __future__ import annotations

import numpy as np
import pytest

from ramem_core.index.bm25 import LexicalIndex
from ramem_core.index.shared import GrownList, GrownMap


def test_a_grown_list_appends_in_place_only_at_the_tip() -> None:
    first: GrownList[str] = GrownList(["a", "b"])
    second = first.copy()
    second.extend(["c"])
    assert list(first) == ["a", "b"]  # the older version keeps its part
    assert list(second) == ["a", "b", "c"]
    assert second._data is first._data  # shared: the append cost one item
    branch = first.copy()  # an older version extended again: a copy of its part
    branch.extend(["x"])
    branch[0] = "A"  # a replaced row is this version's own
    assert list(branch) == ["A", "b", "x"]
    assert list(second) == ["a", "b", "c"]
    assert list(first) == ["a", "b"]
    with pytest.raises(IndexError):
        first[2]


def test_a_grown_map_sees_its_own_rows_only() -> None:
    first = GrownMap.of(["u1", "u2"])
    second = first.appended(["u3"])
    assert "u3" in second
    assert "u3" not in first
    assert first.get("u3") is None
    branch = first.appended(["v3"])  # not the tip any more: a copy
    assert branch["v3"] == 2
    assert second["u3"] == 2
    assert "v3" not in second
    assert sorted(branch) == ["u1", "u2", "v3"]


def test_two_indexes_evolved_from_one_never_see_each_others_documents() -> None:
    base = LexicalIndex()
    base.extend([{"garden": 1.0}, {"piano": 2.0}])
    tip, [a] = base.evolve([0], [{"garden": 2.0, "rose": 1.0}])
    branch, [b] = base.evolve([], [{"tulip": 1.0}])
    assert a == b == 2  # both number their first new document 2
    assert tip.document(a) == {"garden": 2.0, "rose": 1.0}
    assert branch.document(b) == {"tulip": 1.0}
    assert tip.document(0) is None  # removed in the tip only
    assert branch.document(0) == {"garden": 1.0}
    assert base.document(0) == {"garden": 1.0}
    assert base.size == 2
    np.testing.assert_array_equal(base.scores(["tulip", "rose"]), [0.0, 0.0])
    assert tip.scores(["tulip"]).tolist() == [0.0, 0.0, 0.0]
    assert branch.scores(["rose"]).tolist() == [0.0, 0.0, 0.0]
    assert branch.scores(["tulip"])[b] > 0
