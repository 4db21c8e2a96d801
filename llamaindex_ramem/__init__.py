"""LlamaIndex adapters for RaMem: a retriever and a memory block for agent ``Memory``.

Install from a RaMem checkout with ``pip install '.[llamaindex]'``.
"""

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    msg = "llamaindex_ramem needs LlamaIndex: pip install '.[llamaindex]' in a RaMem checkout"
    raise ImportError(msg) from exc

from llamaindex_ramem.memory import RaMemMemoryBlock
from llamaindex_ramem.models import LlamaIndexEmbedder, LlamaIndexLLM
from llamaindex_ramem.retrievers import RaMemRetriever, evidence_to_node

__all__ = [
    "LlamaIndexEmbedder",
    "LlamaIndexLLM",
    "RaMemMemoryBlock",
    "RaMemRetriever",
    "evidence_to_node",
]
