"""LangChain embeddings and chat models as RaMem's ``Embedder`` and ``LLM``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from ramem_core.embedding import normalize


class LangChainEmbedder:
    """Any LangChain ``Embeddings`` as RaMem's embedder (vectors are L2-normalised here).

    Args:
        embeddings: the LangChain embeddings object.
        name: a stable name of the model; it is stored with each collection so that vectors
            of two models never mix.
        dimension: the vector length; measured with one call when not given.
    """

    def __init__(self, embeddings: Embeddings, name: str, dimension: int | None = None) -> None:
        self.embeddings = embeddings
        self.name = name
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        if self._dimension is None:
            self._dimension = len(self.embeddings.embed_query("dimension probe"))
        return self._dimension

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` with the wrapped model."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return normalize(self.embeddings.embed_documents(list(texts)))


class LangChainLLM:
    """Any LangChain chat model as RaMem's ``LLM`` (prompt in, text out)."""

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model

    def complete(self, prompt: str) -> str:
        """The model's text answer to ``prompt``."""
        return self.model.invoke(prompt).text


def chat_model_from_spec(spec: str) -> LangChainLLM:
    """RaMem's model provider for ``--llm provider:model`` (LangChain's ``init_chat_model``);
    registered as the ``langchain`` entry of the ``ramem.llm`` entry-point group."""
    from langchain.chat_models import init_chat_model

    return LangChainLLM(init_chat_model(spec))
