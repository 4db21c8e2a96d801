"""Async twins: one forwarder makes ``amethod`` of ``method`` for every class that has them."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


def in_thread(
    method: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """An async twin of ``method`` that runs it in a worker thread (the event loop is never
    blocked by a store call or an embedding), with the same parameters and docs."""

    @functools.wraps(method)
    async def twin(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(getattr(self, method.__name__), *args, **kwargs)

    twin.__doc__ = f":meth:`{method.__name__}` in a worker thread.\n\n{method.__doc__}"
    return twin


def cancellable_in_thread(
    method: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """:func:`in_thread` for a write that takes ``cancelled=``: when the awaiting task is
    cancelled, the write in the worker thread is told so (it stores nothing if it has not
    begun writing; a ``cancelled`` passed in is asked too)."""

    @functools.wraps(method)
    async def twin(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        stop = threading.Event()
        asked = kwargs.pop("cancelled", None)
        if asked is not None and not callable(asked):
            kwargs["cancelled"] = asked  # refused by the method, naming it
            return await asyncio.to_thread(getattr(self, method.__name__), *args, **kwargs)
        also: Callable[[], object] | None = asked

        def cancelled() -> bool:
            return stop.is_set() or (also is not None and bool(also()))

        call = functools.partial(getattr(self, method.__name__), cancelled=cancelled)
        try:
            return await asyncio.to_thread(call, *args, **kwargs)
        except asyncio.CancelledError:
            stop.set()
            raise

    twin.__doc__ = (
        f":meth:`{method.__name__}` in a worker thread. Cancelling the task cancels the write"
        f" if it has not begun.\n\n{method.__doc__}"
    )
    return twin
