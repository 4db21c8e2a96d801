"""Write the default embedder's vectors of RaMem's fixed sentences (``ramem_core/_data``).

From the repository root::

    python benchmarks/write_fixed_vectors.py

The sentences are the kinds of state's prototypes and neutral sentences
(``ramem_core.retrieval.kinds``: ``PROTOTYPES``, ``NEUTRAL``), embedded in one call, as
``KindVectors`` embedded them before the file existed. The file names the model file's
SHA-256; ``ramem_core.embedding.fixed_vectors`` reads it only for that model, and embeds
anything it lacks. Run it again whenever those sentences change (a test says so).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ramem_core.embedding import FIXED_VECTORS, MODEL_SHA256, MiniLMEmbedder
from ramem_core.retrieval.kinds import NEUTRAL, PROTOTYPES

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "ramem_core" / "_data" / FIXED_VECTORS


def fixed_texts() -> list[str]:
    """Every fixed sentence, in the order they are embedded."""
    return [*(t for texts in PROTOTYPES.values() for t in texts), *NEUTRAL]


def main() -> None:
    texts = fixed_texts()
    vectors = MiniLMEmbedder().embed(texts)
    with OUT.open("wb") as out:
        np.savez(out, texts=np.array(texts), vectors=vectors, model=np.array(MODEL_SHA256))
    print(f"wrote {OUT}: {len(texts)} sentences, {OUT.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
