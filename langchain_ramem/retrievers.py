"""``RaMemRetriever``: RaMem's validity-aware recall as a LangChain ``BaseRetriever``."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from ramem_core import DEFAULT_K, Evidence, RaMem
from ramem_core.synthesis import evidence_metadata, quote, render


def evidence_to_document(
    evidence: Evidence, page_content: Literal["situated", "content"] = "situated"
) -> Document:
    """One piece of evidence as a ``Document`` with flat episodic metadata."""
    # bare content is quoted too: a memory must not be able to close a tag in the prompt
    content = quote(evidence.unit.content)
    text = render(evidence, evidence.rank) if page_content == "situated" else content
    return Document(page_content=text, metadata=evidence_metadata(evidence), id=evidence.unit.id)


class RaMemRetriever(BaseRetriever):
    """Situated memories for a query: valid ones first, relevant ones after.

    Example:
        .. code-block:: python

            retriever = RaMemRetriever(memory=RaMem.open("./memory"), k=5)
            retriever.invoke("What did the doctor say last August?", k=3)

    Each ``Document`` holds the memory rendered with its coordinates (``page_content=
    "content"`` gives the bare content) and the coordinates, scores and "why valid"
    conditions as flat metadata.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: RaMem
    """The RaMem memory to recall from."""
    k: int = DEFAULT_K
    """How many memories to return (``invoke(..., k=3)`` overrides it per call)."""
    namespace: str | None = None
    """The tenant; ``None`` uses the memory's default namespace."""
    at: datetime | None = None
    """The query time; ``None`` means the end of the last session."""
    page_content: Literal["situated", "content"] = "situated"
    """What ``page_content`` holds: the situated rendering or the bare content."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        evidence = self.memory.recall(
            query, kwargs.get("k", self.k), at=kwargs.get("at", self.at), namespace=self.namespace
        )
        return [evidence_to_document(e, self.page_content) for e in evidence]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        evidence = await self.memory.arecall(  # in a worker thread: the loop stays free
            query, kwargs.get("k", self.k), at=kwargs.get("at", self.at), namespace=self.namespace
        )
        return [evidence_to_document(e, self.page_content) for e in evidence]
