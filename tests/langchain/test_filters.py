"""The store's filter language on its own: checked with clear errors, then matched."""

from __future__ import annotations

from typing import Any

import pytest

from langchain_ramem.filters import MAX_FILTER_DEPTH, as_time, check_filter, matches
from ramem_core import InvalidInputError

VALUE = {"kind": "note", "n": 3, "on": "2024-05-28T10:00:00Z", "tags": ["a", "b"], "who": {"id": 7}}


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"kind": "note"}, True),
        ({"kind": "todo"}, False),
        ({"n": {"$gt": 2, "$lte": 3}}, True),
        ({"n": {"$lt": 3}}, False),
        ({"n": {"$ne": 4}}, True),
        ({"on": {"$gte": "2024-05-28"}}, True),
        ({"on": {"$lt": "2024-05-28T11:00:00+02:00"}}, False),  # 09:00 UTC
        ({"tags": ["a", "b"]}, True),
        ({"tags": ["b", "a"]}, False),
        ({"who": {"id": 7}}, True),
        ({"$or": [{"kind": "todo"}, {"n": 3}]}, True),
        ({"$and": [{"kind": "note"}, {"n": {"$gt": 5}}]}, False),
        ({"n": {"$gt": "2024-01-01"}}, False),  # a number is never a time
        ({"missing": {"$eq": None}}, True),
    ],
)
def test_matches(flt: dict[str, Any], expected: bool) -> None:
    check_filter(flt)
    assert matches(VALUE, flt) is expected


@pytest.mark.parametrize(
    ("flt", "message"),
    [
        ("kind", "must be a dict"),
        ({1: "x"}, "keys must be strings"),
        ({"$and": []}, "non-empty list"),
        ({"$not": {"kind": "note"}}, "unknown filter operator '$not'"),
        ({"n": {"$in": [1]}}, "unknown filter operator '$in'"),
        ({"n": {"$gt": "soon"}}, "needs a number or an ISO date"),
        ({"n": {"$gt": True}}, "needs a number or an ISO date"),
    ],
)
def test_a_bad_filter_is_a_clear_error(flt: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message.replace("$", r"\$")):
        check_filter(flt)


def test_a_filter_nested_too_deep_is_refused() -> None:
    flt: dict[str, Any] = {"kind": "note"}
    for _ in range(MAX_FILTER_DEPTH + 1):
        flt = {"$and": [flt]}
    with pytest.raises(InvalidInputError, match="nests deeper"):
        check_filter(flt)


def test_times_are_read_as_utc() -> None:
    assert as_time("2024-05-28T12:00:00+02:00") == as_time("2024-05-28T10:00:00Z")
    assert as_time("not a date") is None
    assert as_time(3) is None
