"""Every method of RaMem that reads or writes the store, embeds or calls a model has an async
twin made by the one forwarder: the same parameters, run in a worker thread."""

from __future__ import annotations

import inspect
from datetime import datetime

from ramem_core import RaMem

NOT_IO = {"close", "open", "ephemeral", "counter", "format"}
"""Public names that need no twin: opening and closing, and what touches no store or model."""


def _public() -> set[str]:
    return {n for n in dir(RaMem) if not n.startswith("_")}


def test_every_io_method_has_an_async_twin_with_its_parameters() -> None:
    twins = {n for n in _public() if inspect.iscoroutinefunction(getattr(RaMem, n))}
    sync = _public() - twins - NOT_IO
    assert sync, "no public methods found"
    assert {f"a{n}" for n in sync} == twins
    for name in sync:
        twin = getattr(RaMem, f"a{name}")
        assert inspect.signature(twin) == inspect.signature(getattr(RaMem, name)), name
        assert twin.__doc__.startswith(f":meth:`{name}` in a worker thread."), name


async def test_a_twin_returns_what_its_method_returns(memory: RaMem) -> None:
    unit = await memory.aadd_turn("Ana", "I moved to Porto last week.", at=datetime(2024, 5, 28))
    assert await memory.acount() == memory.count() == 1
    assert [u.id for u in await memory.amemories()] == [unit.id]
    assert (await memory.amemory(unit.id)) == memory.memory(unit.id)
    found = await memory.arecall("Where did Ana move?", at=datetime(2024, 6, 1))
    assert [e.unit.id for e in found] == [unit.id]
    frame = await memory.aframe("Where did Ana move last week?", at=datetime(2024, 6, 1))
    assert frame == memory.frame("Where did Ana move last week?", at=datetime(2024, 6, 1))
    assert await memory.adelete(unit_ids=[unit.id]) == 1
    assert await memory.acount() == 0
