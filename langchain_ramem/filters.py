"""The filter language of :class:`~langchain_ramem.store.RaMemStore`'s search: LangGraph's
JSON-like matching (``{"kind": "note"}``, ``$eq``, ``$ne``), with ``$gt``/``$gte``/``$lt``/
``$lte`` on numbers and ISO dates or datetimes, and ``$and``/``$or`` lists. Checked before
use (:func:`check_filter`, a clear error naming what is wrong), then applied to an item's
value (:func:`matches`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime, timezone
from typing import Any

from ramem_core import InvalidInputError

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
"""The operators a field's condition may use."""


def as_time(value: Any) -> datetime | None:
    """``value`` as a UTC-naive datetime when it is an ISO date or datetime (or one)."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and re.match(r"^\d{4}-\d{2}-\d{2}", value):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    if moment.tzinfo is not None:
        try:
            moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
        except OverflowError:  # 0001-01-01T00:00+05:00 is before the first UTC day
            return None
    return moment


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _ordered(item: Any, operator: str, operand: Any) -> bool:
    """``item <op> operand`` for numbers or times; a value of another kind never matches."""
    number = _number(operand)
    if number is not None:
        left: Any = _number(item)
        right: Any = number
    else:
        left, right = as_time(item), as_time(operand)
    if left is None or right is None:
        return False
    if operator == "$gt":
        return bool(left > right)
    if operator == "$gte":
        return bool(left >= right)
    if operator == "$lt":
        return bool(left < right)
    return bool(left <= right)


MAX_FILTER_DEPTH = 32
"""How deeply a search filter may nest (``$and`` in ``$and``, or a field's sub-fields):
deeper ones are refused rather than exhausting Python's stack."""


def check_filter(flt: Any, where: str = "filter", depth: int = 0) -> None:
    """Raise :class:`InvalidInputError` naming what is wrong with a search filter: it must be a
    dict nested at most :data:`MAX_FILTER_DEPTH` deep; ``$and``/``$or`` take lists of filters;
    operators are :data:`OPERATORS`, and the ordering ones take a number or an ISO
    date/datetime (within years 1-9999 in UTC)."""
    if depth > MAX_FILTER_DEPTH:
        msg = f"the filter nests deeper than {MAX_FILTER_DEPTH} levels"
        raise InvalidInputError(msg)
    if not isinstance(flt, Mapping):
        msg = f"{where} must be a dict, got {type(flt).__name__}"
        raise InvalidInputError(msg)
    for key, condition in flt.items():
        if not isinstance(key, str):
            msg = f"{where} keys must be strings, got {key!r}"
            raise InvalidInputError(msg)
        if key in ("$and", "$or"):
            if not isinstance(condition, list | tuple) or not condition:
                msg = f"{where}[{key!r}] must be a non-empty list of filters"
                raise InvalidInputError(msg)
            for i, part in enumerate(condition):
                check_filter(part, f"{where}[{key!r}][{i}]", depth + 1)
        elif key.startswith("$"):
            msg = f"unknown filter operator {key!r} in {where}: use $and or $or at this level"
            raise InvalidInputError(msg)
        elif isinstance(condition, Mapping) and any(
            isinstance(k, str) and k.startswith("$") for k in condition
        ):
            for op, operand in condition.items():
                if op not in OPERATORS:
                    msg = (
                        f"unknown filter operator {op!r} for {key!r} in {where}: use one of"
                        f" {', '.join(OPERATORS)}"
                    )
                    raise InvalidInputError(msg)
                if op in ("$eq", "$ne"):
                    continue
                if _number(operand) is None and as_time(operand) is None:
                    msg = (
                        f"{op} for {key!r} in {where} needs a number or an ISO date/datetime"
                        f" (years 1-9999 in UTC), got {operand!r}"
                    )
                    raise InvalidInputError(msg)
        elif isinstance(condition, Mapping):
            check_filter(condition, f"{where}[{key!r}]", depth + 1)
        elif isinstance(condition, list | tuple) and _depth(condition) > MAX_FILTER_DEPTH - depth:
            msg = f"the filter nests deeper than {MAX_FILTER_DEPTH} levels"
            raise InvalidInputError(msg)


def _depth(value: Any, limit: int = MAX_FILTER_DEPTH + 1) -> int:
    """How deeply lists and dicts nest in ``value`` (counting stops past ``limit``)."""
    deepest, level, layer = 0, 0, [value]
    while layer and level <= limit:
        children = []
        for node in layer:
            if isinstance(node, Mapping):
                children += list(node.values())
            elif isinstance(node, list | tuple):
                children += list(node)
        if children:
            level += 1
            deepest = level
        layer = children
    return deepest


def matches(value: Any, flt: Mapping[str, Any]) -> bool:
    """Whether an item's ``value`` satisfies a checked filter (:func:`check_filter`)."""
    for key, condition in flt.items():
        if key == "$and":
            if not all(matches(value, part) for part in condition):
                return False
        elif key == "$or":
            if not any(matches(value, part) for part in condition):
                return False
        elif not _compare(value.get(key) if isinstance(value, Mapping) else None, condition):
            return False
    return True


def _compare(item: Any, condition: Any) -> bool:
    """LangGraph's JSON-like comparison, with ordering on numbers and times."""
    if isinstance(condition, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in condition):
            for op, operand in condition.items():
                if op == "$eq":
                    ok = item == operand
                elif op == "$ne":
                    ok = item != operand
                else:
                    ok = _ordered(item, op, operand)
                if not ok:
                    return False
            return True
        return isinstance(item, Mapping) and matches(item, condition)
    if isinstance(condition, list | tuple):
        return (
            isinstance(item, list | tuple)
            and len(item) == len(condition)
            and all(_compare(i, c) for i, c in zip(item, condition, strict=True))
        )
    return bool(item == condition)
