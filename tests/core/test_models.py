"""The default embedder and token counter: real models, loaded offline from installed files."""

from __future__ import annotations

import numpy as np
import pytest

from ramem_core.embedding import MiniLMEmbedder
from ramem_core.tokens import TiktokenCounter


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_minilm_vectors_are_unit_length_and_semantic(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed(
        ["I adopted a puppy last week.", "We got a new dog recently.", "The stock market fell."]
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    sims = vectors @ vectors.T
    assert sims[0, 1] > 0.5 > sims[0, 2]


def test_minilm_is_independent_of_batching(embedder: MiniLMEmbedder) -> None:
    texts = ["short", "a much longer sentence that needs more padding than the other one"]
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


@pytest.mark.parametrize("spin", [False, True])
def test_minilm_worker_threads_spin_only_when_asked(spin: bool) -> None:
    """A spinning onnxruntime worker keeps a core busy after each call (taken from the vector
    pass and Chroma's writes that follow), so RaMem turns spinning off unless asked."""
    embedder = MiniLMEmbedder(spin=True) if spin else MiniLMEmbedder()
    assert embedder.embed(["still embeds"]).shape == (1, 384)
    entry = "session.intra_op.allow_spinning"
    try:
        spinning = embedder._session.get_session_options().get_session_config_entry(entry) != "0"
    except RuntimeError:  # not set: onnxruntime's default, spinning
        spinning = True
    assert spinning is spin


def test_tiktoken_counter_works_offline() -> None:
    counter = TiktokenCounter()
    assert counter.count("hello world") == 2
    assert counter.count("<|endoftext|>") > 1  # special tokens count as plain text
