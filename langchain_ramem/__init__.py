"""LangChain adapters for RaMem: a retriever, chain memory, agent middleware, a recall tool and a
LangGraph store.

Install from a RaMem checkout with ``pip install '.[langchain]'``.
"""

try:
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    msg = "langchain_ramem needs LangChain: pip install '.[langchain]' in a RaMem checkout"
    raise ImportError(msg) from exc

from typing import TYPE_CHECKING

from langchain_ramem.models import LangChainEmbedder, LangChainLLM
from langchain_ramem.retrievers import RaMemRetriever, evidence_to_document

if TYPE_CHECKING:  # imported lazily at run time (see __getattr__)
    from langchain_ramem.memory import RaMemMemory
    from langchain_ramem.middleware import MemoryContext, RaMemMiddleware, recall_tool
    from langchain_ramem.store import RaMemStore

__all__ = [
    "LangChainEmbedder",
    "LangChainLLM",
    "MemoryContext",
    "RaMemMemory",
    "RaMemMiddleware",
    "RaMemRetriever",
    "RaMemStore",
    "evidence_to_document",
    "recall_tool",
]


def __getattr__(name: str) -> object:
    # these need langchain / langchain-classic beyond langchain-core: import on first use
    if name == "RaMemMemory":
        from langchain_ramem.memory import RaMemMemory

        return RaMemMemory
    if name in {"MemoryContext", "RaMemMiddleware", "recall_tool"}:
        from langchain_ramem import middleware

        return getattr(middleware, name)
    if name == "RaMemStore":
        from langchain_ramem.store import RaMemStore

        return RaMemStore
    msg = f"module 'langchain_ramem' has no attribute {name!r}"
    raise AttributeError(msg)
