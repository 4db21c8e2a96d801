"""The default embedder and token counter: real models, loaded offline from installed files."""

from __future__ import annotations

from pathlib import Path

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


def test_a_long_text_is_embedded_in_passes_of_bounded_size(embedder: MiniLMEmbedder) -> None:
    """onnxruntime keeps the memory of its largest pass for the process's life: a pasted
    document's pieces go through a few at a time (issue 55: 850 MB kept after one large
    ``remember``), short messages still 32 at a time, and every vector is the same."""
    from ramem_core.embedding import TOKENS_PER_PASS

    piece = ("A sentence of a long pasted document about the plan and its budget. " * 20)[:1000]
    short = [f"I met friend {i} for coffee today." for i in range(40)]
    texts = [*short, *[piece] * 20]
    shapes: list[tuple[int, ...]] = []
    session, _ = embedder._load()
    run = session.run

    class Spy:
        def run(self, outputs: object, feeds: dict[str, np.ndarray], options: object) -> object:
            shapes.append(feeds["input_ids"].shape)
            return run(outputs, feeds, options)

    embedder._session = Spy()
    try:
        vectors = embedder.embed(texts)
    finally:
        embedder._session = session
    assert TOKENS_PER_PASS <= 2_048
    assert all(rows * width <= 2_048 for rows, width in shapes)
    assert max(rows for rows, _ in shapes) == 32  # short ones still share a pass
    assert max(width for _, width in shapes) > 200  # a piece is read whole, 8 to a pass
    alone = np.vstack([embedder.embed([t]) for t in (short[0], piece)])
    assert np.allclose(vectors[[0, len(short)]], alone, atol=1e-5)


def test_passes_hold_at_most_their_token_budget() -> None:
    from ramem_core.embedding import _batches

    lengths = np.array([10, 10, 10, 200, 256, 256, 256], dtype=np.int64)
    batches = _batches(list(range(7)), lengths, most=2, tokens=512)
    assert batches == [[0, 1], [2, 3], [4, 5], [6]]
    assert _batches([0], np.array([900], dtype=np.int64), most=2, tokens=512) == [[0]]


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


def test_the_shipped_model_file_has_the_pinned_digest() -> None:
    from ramem_core.embedding import _model_file, check_model

    path = _model_file()
    assert check_model(path) == path


def test_a_tampered_model_file_is_refused_naming_the_file_and_both_digests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    from ramem_core import embedding
    from ramem_core.errors import ModelUnavailableError

    tampered = tmp_path / "model.onnx"
    tampered.write_bytes(b"not the model")
    got = hashlib.sha256(b"not the model").hexdigest()
    with pytest.raises(ModelUnavailableError) as refused:
        embedding.check_model(tampered)
    assert str(tampered) in str(refused.value)
    assert got in str(refused.value)
    assert embedding.MODEL_SHA256 in str(refused.value)
    # the embedder never hands such a file to onnxruntime
    monkeypatch.setattr(embedding, "_model_file", lambda: tampered)
    with pytest.raises(ModelUnavailableError, match="SHA-256"):
        MiniLMEmbedder().embed(["hello"])
    # a file checked once is checked again when it changes
    good = tmp_path / "ok.onnx"
    good.write_bytes(b"v1")
    digest = hashlib.sha256(b"v1").hexdigest()
    assert embedding.check_model(good, digest) == good
    good.write_bytes(b"v2, longer")
    with pytest.raises(ModelUnavailableError):
        embedding.check_model(good, digest)


def test_the_embedder_gives_a_long_texts_memory_back(embedder: MiniLMEmbedder) -> None:
    """A pass wider than ``SHRINK_WIDTH`` (a long text's pieces) runs with onnxruntime's arena
    shrinkage, so its memory is not kept for the process's life; chat messages keep the
    arena's speed (measured in ``benchmarks/bench_embed_memory.py``)."""
    from ramem_core.embedding import SHRINK_WIDTH

    session, _ = embedder._load()
    seen: list[tuple[int, object]] = []
    run = session.run

    class Spy:
        def run(self, outputs: object, feeds: dict[str, np.ndarray], options: object) -> object:
            seen.append((feeds["input_ids"].shape[1], options))
            return run(outputs, feeds, options)

    embedder._session = Spy()
    try:
        embedder.embed(["I met a friend for coffee."])
        embedder.embed(["A long pasted document. " * 60])
    finally:
        embedder._session = session
    (narrow, kept), (wide, shrunk) = sorted(seen, key=lambda s: s[0])
    assert narrow <= SHRINK_WIDTH < wide
    assert kept is None
    assert shrunk is not None
    entry = shrunk.get_run_config_entry  # type: ignore[attr-defined]
    assert entry("memory.enable_memory_arena_shrinkage") == "cpu:0"


def test_the_fixed_sentences_vectors_are_shipped_and_are_the_embedders(
    embedder: MiniLMEmbedder,
) -> None:
    """The kinds' prototypes are read from the shipped file (a fresh process's first recall
    does not embed them), and the file is what the model makes of them: a changed sentence
    or model is caught here (run ``benchmarks/write_fixed_vectors.py``)."""
    from ramem_core.embedding import RecentQueries, fixed_vectors
    from ramem_core.retrieval.kinds import NEUTRAL, PROTOTYPES
    from ramem_core.testing import HashEmbedder

    texts = [*(t for group in PROTOTYPES.values() for t in group), *NEUTRAL]

    def refusing(texts: object) -> np.ndarray:
        raise AssertionError("the fixed sentences were embedded")

    from ramem_core.retrieval.kinds import KindVectors

    default = MiniLMEmbedder()
    default.embed = refusing  # type: ignore[method-assign]
    KindVectors(RecentQueries(default), 0.3).bits(np.zeros((1, 384), dtype=np.float32))
    shipped = fixed_vectors(RecentQueries(default), texts)
    assert shipped.shape == (len(texts), 384)
    assert np.allclose(shipped, embedder.embed(texts), atol=1e-5)
    # another embedder's, or a sentence the file lacks: embedded
    hashed = HashEmbedder(dimension=384)
    assert np.array_equal(fixed_vectors(hashed, texts[:2]), hashed.embed(texts[:2]))
    other = ["A sentence no release of RaMem ships."]
    assert np.allclose(fixed_vectors(embedder, other), embedder.embed(other), atol=1e-6)
