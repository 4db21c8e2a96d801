"""Async twins: one forwarder makes ``amethod`` of ``method`` for every class that has them."""

from __future__ import annotations

import asyncio
import functools
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
