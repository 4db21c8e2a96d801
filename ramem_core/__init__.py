"""RaMem core: long-term memory for LLM agents that stays valid, not just relevant.

Four stages: episodic anchoring (:mod:`.anchoring`), recall-condition induction
(:mod:`.frames`), validity-aware retrieval (:mod:`.retrieval`) and context-preserved synthesis
(:mod:`.synthesis`). :class:`RaMem` ties them together over a Chroma store.
"""

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
    "__version__",
    "conversation_from_dict",
    "default_path",
    "load_conversations",
]
