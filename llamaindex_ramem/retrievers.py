"""``RaMemRetriever``: RaMem's validity-aware recall as a LlamaIndex ``BaseRetriever``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from ramem_core import DEFAULT_K, Evidence, RaMem
from ramem_core.synthesis import calibrated_score, evidence_metadata, quote, render


def evidence_to_node(
    evidence: Evidence,
    text: Literal["situated", "content"] = "situated",
    *,
    embedder: str | None = None,
) -> NodeWithScore:
    """One piece of evidence as a scored ``TextNode`` with flat episodic metadata.

    With ``embedder`` (the memory's embedder's name), the node's score is calibrated on a 0-1
    scale (:func:`ramem_core.synthesis.calibrated_score`): 0.5 separates nodes more like
    evidence from the rest, so ``SimilarityPostprocessor(similarity_cutoff=0.5)`` keeps the
    likely evidence (the calibration is fitted by ``benchmarks/fit_scores.py``). Nodes stay
    in RaMem's order (valid first): scores need not fall with rank. RaMem's own ranking score
    is in ``metadata["score"]``; without ``embedder``, the node's score is that one."""
    # bare content is quoted too: a memory must not be able to close a tag in the prompt
    content = quote(evidence.unit.content)
    body = render(evidence, evidence.rank) if text == "situated" else content
    metadata = evidence_metadata(evidence)
    node = TextNode(
        id_=evidence.unit.id,
        text=body,
        metadata=metadata,
        # the rendering already carries the coordinates: keep metadata out of LLM/embed text
        excluded_llm_metadata_keys=list(metadata),
        excluded_embed_metadata_keys=list(metadata),
    )
    if embedder is None:
        return NodeWithScore(node=node, score=evidence.score)
    return NodeWithScore(node=node, score=calibrated_score(evidence, embedder))


def _nodes(
    evidence: Sequence[Evidence], text: Literal["situated", "content"], embedder: str
) -> list[NodeWithScore]:
    return [evidence_to_node(e, text, embedder=embedder) for e in evidence]


class RaMemRetriever(BaseRetriever):
    """Situated memories for a query: valid ones first, relevant ones after.

    Works wherever a LlamaIndex retriever does, e.g.
    ``RetrieverQueryEngine.from_args(RaMemRetriever(memory, k=5), llm=...)``.

    Args:
        memory: the RaMem memory.
        k: how many memories to return (``similarity_top_k`` is accepted as an alias).
        namespace: the tenant; ``None`` uses the memory's default.
        at: the query time; ``None`` means the end of the last session.
        text: node text: the situated rendering or the bare content.
    """

    def __init__(
        self,
        memory: RaMem,
        k: int = DEFAULT_K,
        *,
        namespace: str | None = None,
        at: datetime | None = None,
        text: Literal["situated", "content"] = "situated",
        similarity_top_k: int | None = None,
        **kwargs: Any,
    ) -> None:
        self.memory = memory
        self.k = similarity_top_k or k
        self.namespace = namespace
        self.at = at
        self.text = text
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        evidence = self.memory.recall(
            query_bundle.query_str, self.k, at=self.at, namespace=self.namespace
        )
        return _nodes(evidence, self.text, self.memory.embedder.name)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        evidence = await self.memory.arecall(  # in a worker thread: the loop stays free
            query_bundle.query_str, self.k, at=self.at, namespace=self.namespace
        )
        return _nodes(evidence, self.text, self.memory.embedder.name)
