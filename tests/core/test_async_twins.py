"""Every method of RaMem, of its keyed memories and of its transfer that reads or writes the
store, embeds or calls a model has an async twin made by the one forwarder: the same
parameters, run in a worker thread. The facade keeps a few doors."""

from __future__ import annotations

import inspect
from datetime import datetime

import pytest

from ramem_core import RaMem
from ramem_core.keyed import KeyedMemories
from ramem_core.transfer import Transfer

NOT_IO = {"close", "open", "ephemeral", "counter", "format"}
"""Public names that need no twin: opening and closing, and what touches no store or model."""


def _public(cls: type) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}


@pytest.mark.parametrize("cls", [RaMem, KeyedMemories, Transfer])
def test_every_io_method_has_an_async_twin_with_its_parameters(cls: type) -> None:
    twins = {n for n in _public(cls) if inspect.iscoroutinefunction(getattr(cls, n))}
    sync = _public(cls) - twins - NOT_IO
    assert sync, "no public methods found"
    assert {f"a{n}" for n in sync} == twins
    for name in sync:
        twin = getattr(cls, f"a{name}")
        assert inspect.signature(twin) == inspect.signature(getattr(cls, name)), name
        assert twin.__doc__.startswith(f":meth:`{name}` in a worker thread."), name


def test_the_facade_keeps_a_few_doors() -> None:
    """At most 20 public methods (twins not counted) in a class of at most 450 lines: the
    rest lives in ``memory.keyed``, ``memory.transfer``, ``explain`` and ``store.opening``."""
    methods = {n for n in _public(RaMem) if not inspect.iscoroutinefunction(getattr(RaMem, n))}
    assert len(methods) <= 20, sorted(methods)
    lines, _ = inspect.getsourcelines(RaMem)
    assert len(lines) <= 450


async def test_a_twin_returns_what_its_method_returns(memory: RaMem) -> None:
    unit = await memory.aadd_turn("Ana", "I moved to Porto last week.", at=datetime(2024, 5, 28))
    assert await memory.acount() == memory.count() == 1
    assert [u.id for u in await memory.transfer.apage()] == [unit.id]
    assert (await memory.transfer.aget(unit.id)) == memory.transfer.get(unit.id)
    found = await memory.arecall("Where did Ana move?", at=datetime(2024, 6, 1))
    assert [e.unit.id for e in found] == [unit.id]
    frame = await memory.aframe("Where did Ana move last week?", at=datetime(2024, 6, 1))
    assert frame == memory.frame("Where did Ana move last week?", at=datetime(2024, 6, 1))
    assert await memory.adelete(unit_ids=[unit.id]) == 1
    assert await memory.acount() == 0
