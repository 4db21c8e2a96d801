"""RaMem core: long-term memory for LLM agents that stays valid, not just relevant.

Four stages: episodic anchoring (:mod:`.anchoring`), recall-condition induction
(:mod:`.frames`), validity-aware retrieval (:mod:`.retrieval`) and context-preserved synthesis
(:mod:`.synthesis`). :class:`RaMem` ties them together over a Chroma store.

The names below load on first use (PEP 562): ``import ramem_core`` reads no model, store or
date parser, and ``ramem --help`` or an MCP server's ``initialize`` do not wait for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ramem_core.anchoring import AnchoringReport, LLMAnchorer, RuleAnchorer
    from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder, RecentQueries
    from ramem_core.errors import (
        ConversationFormatError,
        InvalidInputError,
        MemoryInUseError,
        ModelReplyError,
        ModelUnavailableError,
        NamespaceNotFoundError,
        RaMemError,
        StoreError,
        UncertainWriteError,
        WriteCancelledError,
    )
    from ramem_core.frames import LLMFrameInducer, RuleFrameInducer
    from ramem_core.index.episodic import CONTENT_KEYS, EpisodicKeys
    from ramem_core.index.freshness import Freshness
    from ramem_core.keyed import KeyedMemories
    from ramem_core.llm import LLMUsage, MeteredLLM
    from ramem_core.loaders import conversation_from_dict, load_conversations
    from ramem_core.memory import IngestReport, RaMem, default_path
    from ramem_core.protocols import (
        LLM,
        Anchorer,
        Embedder,
        FrameContext,
        FrameInducer,
        Store,
        TokenCounter,
    )
    from ramem_core.retrieval import CONTENT_ONLY, RetrievalConfig, Retriever
    from ramem_core.store.chroma import ChromaStore
    from ramem_core.store.opening import ServerSettings
    from ramem_core.synthesis import Answer, ContextBlock
    from ramem_core.transfer import Transfer
    from ramem_core.types import (
        DEFAULT_K,
        Conversation,
        EpisodicContext,
        Evidence,
        Granularity,
        Kind,
        Member,
        MemoryUnit,
        Recall,
        RecallFrame,
        Relation,
        Session,
        Supersession,
        TimeConstraint,
        TimeMention,
        TimeSpan,
        Turn,
    )

__version__ = "0.1.0"

__all__ = [
    "CONTENT_KEYS",
    "CONTENT_ONLY",
    "DEFAULT_K",
    "LLM",
    "Anchorer",
    "AnchoringReport",
    "Answer",
    "CachedEmbedder",
    "ChromaStore",
    "ContextBlock",
    "Conversation",
    "ConversationFormatError",
    "Embedder",
    "EpisodicContext",
    "EpisodicKeys",
    "Evidence",
    "FrameContext",
    "FrameInducer",
    "Freshness",
    "Granularity",
    "IngestReport",
    "InvalidInputError",
    "KeyedMemories",
    "Kind",
    "LLMAnchorer",
    "LLMFrameInducer",
    "LLMUsage",
    "Member",
    "MemoryInUseError",
    "MemoryUnit",
    "MeteredLLM",
    "MiniLMEmbedder",
    "ModelReplyError",
    "ModelUnavailableError",
    "NamespaceNotFoundError",
    "RaMem",
    "RaMemError",
    "Recall",
    "RecallFrame",
    "RecentQueries",
    "Relation",
    "RetrievalConfig",
    "Retriever",
    "RuleAnchorer",
    "RuleFrameInducer",
    "ServerSettings",
    "Session",
    "Store",
    "StoreError",
    "Supersession",
    "TimeConstraint",
    "TimeMention",
    "TimeSpan",
    "TokenCounter",
    "Transfer",
    "Turn",
    "UncertainWriteError",
    "WriteCancelledError",
    "__version__",
    "conversation_from_dict",
    "default_path",
    "load_conversations",
]

_WHERE: dict[str, str] = {
    "Anchorer": "ramem_core.protocols",
    "AnchoringReport": "ramem_core.anchoring",
    "Answer": "ramem_core.synthesis",
    "CONTENT_KEYS": "ramem_core.index.episodic",
    "CONTENT_ONLY": "ramem_core.retrieval",
    "CachedEmbedder": "ramem_core.embedding",
    "ChromaStore": "ramem_core.store.chroma",
    "ContextBlock": "ramem_core.synthesis",
    "Conversation": "ramem_core.types",
    "ConversationFormatError": "ramem_core.errors",
    "DEFAULT_K": "ramem_core.types",
    "Embedder": "ramem_core.protocols",
    "EpisodicContext": "ramem_core.types",
    "EpisodicKeys": "ramem_core.index.episodic",
    "Evidence": "ramem_core.types",
    "FrameContext": "ramem_core.protocols",
    "FrameInducer": "ramem_core.protocols",
    "Freshness": "ramem_core.index.freshness",
    "Granularity": "ramem_core.types",
    "IngestReport": "ramem_core.memory",
    "InvalidInputError": "ramem_core.errors",
    "KeyedMemories": "ramem_core.keyed",
    "Kind": "ramem_core.types",
    "LLM": "ramem_core.protocols",
    "LLMAnchorer": "ramem_core.anchoring",
    "LLMFrameInducer": "ramem_core.frames",
    "LLMUsage": "ramem_core.llm",
    "Member": "ramem_core.types",
    "MemoryInUseError": "ramem_core.errors",
    "MemoryUnit": "ramem_core.types",
    "MeteredLLM": "ramem_core.llm",
    "MiniLMEmbedder": "ramem_core.embedding",
    "ModelReplyError": "ramem_core.errors",
    "ModelUnavailableError": "ramem_core.errors",
    "NamespaceNotFoundError": "ramem_core.errors",
    "RaMem": "ramem_core.memory",
    "RaMemError": "ramem_core.errors",
    "Recall": "ramem_core.types",
    "RecallFrame": "ramem_core.types",
    "RecentQueries": "ramem_core.embedding",
    "Relation": "ramem_core.types",
    "RetrievalConfig": "ramem_core.retrieval",
    "Retriever": "ramem_core.retrieval",
    "RuleAnchorer": "ramem_core.anchoring",
    "RuleFrameInducer": "ramem_core.frames",
    "ServerSettings": "ramem_core.store.opening",
    "Session": "ramem_core.types",
    "Store": "ramem_core.protocols",
    "StoreError": "ramem_core.errors",
    "Supersession": "ramem_core.types",
    "TimeConstraint": "ramem_core.types",
    "TimeMention": "ramem_core.types",
    "TimeSpan": "ramem_core.types",
    "TokenCounter": "ramem_core.protocols",
    "Transfer": "ramem_core.transfer",
    "Turn": "ramem_core.types",
    "UncertainWriteError": "ramem_core.errors",
    "WriteCancelledError": "ramem_core.errors",
    "conversation_from_dict": "ramem_core.loaders",
    "default_path": "ramem_core.memory",
    "load_conversations": "ramem_core.loaders",
}
"""Each public name and the module it comes from."""


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        msg = f"module 'ramem_core' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next read is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
