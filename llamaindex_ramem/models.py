"""LlamaIndex embeddings and LLMs as RaMem's ``Embedder`` and ``LLM``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM

from ramem_core.embedding import normalize


class LlamaIndexEmbedder:
    """Any LlamaIndex ``BaseEmbedding`` as RaMem's embedder (vectors L2-normalised here).

    Args:
        embedding: the LlamaIndex embedding model.
        name: a stable model name, stored with each collection so vectors never mix.
        dimension: the vector length; measured with one call when not given.
    """

    def __init__(self, embedding: BaseEmbedding, name: str, dimension: int | None = None) -> None:
        self.embedding = embedding
        self.name = name
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        if self._dimension is None:
            self._dimension = len(self.embedding.get_text_embedding("dimension probe"))
        return self._dimension

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` with the wrapped model."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return normalize(self.embedding.get_text_embedding_batch(list(texts)))


class LlamaIndexLLM:
    """Any LlamaIndex ``LLM`` as RaMem's ``LLM`` (prompt in, text out)."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    def complete(self, prompt: str) -> str:
        """The model's text answer to ``prompt``."""
        return self.llm.complete(prompt).text
