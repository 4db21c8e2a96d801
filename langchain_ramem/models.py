"""LangChain embeddings and chat models as RaMem's ``Embedder`` and ``LLM``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable

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
    """Any LangChain chat model as RaMem's ``LLM`` (prompt in, text out).

    Args:
        model: the chat model.
        json_schema: a JSON schema every reply is held to (opt-in; ``None``, the default,
            asks as before), e.g. :data:`~ramem_core.prompts.anchoring.ANCHOR_SCHEMA` for
            an :class:`~ramem_core.anchoring.LLMAnchorer`'s model. It is sent as the
            OpenAI-style ``response_format={"type": "json_schema", ...}``, so it needs a
            chat model that passes that on to a server that enforces it: langchain-openai's
            ``ChatOpenAI``, against OpenAI or an OpenAI-compatible server (llama.cpp's,
            vLLM). Function calling is not used (some local servers return nothing
            through it). The reply is still the model's text, which the stage checks as
            always.
        schema_name: the schema's name in the request (letters, digits, "_" and "-").
        strict: sent as the schema's ``strict`` flag when given (OpenAI's strict mode
            accepts only part of JSON Schema).
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        json_schema: Mapping[str, Any] | None = None,
        schema_name: str = "ramem_reply",
        strict: bool | None = None,
    ) -> None:
        self.model = model
        self.json_schema = json_schema
        self._runnable: Runnable[Any, Any] = model
        if json_schema is not None:
            spec: dict[str, Any] = {"name": schema_name, "schema": dict(json_schema)}
            if strict is not None:
                spec["strict"] = strict
            self._runnable = model.bind(
                response_format={"type": "json_schema", "json_schema": spec}
            )

    def complete(self, prompt: str) -> str:
        """The model's text answer to ``prompt``."""
        reply = self._runnable.invoke(prompt)
        return str(reply.text)


def chat_model_from_spec(spec: str) -> LangChainLLM:
    """RaMem's model provider for ``--llm provider:model`` (LangChain's ``init_chat_model``);
    registered as the ``langchain`` entry of the ``ramem.llm`` entry-point group."""
    from langchain.chat_models import init_chat_model

    return LangChainLLM(init_chat_model(spec))
