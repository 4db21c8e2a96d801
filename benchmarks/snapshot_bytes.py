"""Bytes per memory of a namespace snapshot, built and loaded from its file, on LoCoMo dev.

    python benchmarks/snapshot_bytes.py

Anchors the five LoCoMo dev conversations (rule anchorer), gives each memory a random unit
vector of the default embedder's dimension (384; the bytes do not depend on the values), and
measures with ``tracemalloc`` what a built snapshot holds (its units included) and what one
loaded from its snapshot file holds, besides the vectors; also the time to build one and to
save and load its file (and, for comparison, to unpickle it: the format before). Writes
``benchmarks/results/snapshot_bytes.json``; the figure backs
``ramem_core.index.snapshot.PER_MEMORY_BYTES``.
"""

from __future__ import annotations

import gc
import json
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from ramem_core.anchoring import RuleAnchorer
from ramem_core.index.episodic import EpisodicKeys
from ramem_core.index.files import Signature, SnapshotFiles
from ramem_core.index.snapshot import PER_MEMORY_BYTES, Snapshot
from ramem_core.loaders import locomo_conversation

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"
DIMENSION = 384


def _held(make: object) -> tuple[object, int, float]:
    """What ``make()`` returns, the bytes it allocated and kept, and the seconds it took."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    began = time.perf_counter()
    value = make()  # type: ignore[operator]
    seconds = time.perf_counter() - began
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return value, held, seconds


def main() -> None:
    if not DATA.exists():
        print("LoCoMo dev data not found under ../shared/data: nothing to run")
        return
    samples = json.loads(DATA.read_text(encoding="utf-8"))
    rng = np.random.default_rng(0)
    units, n = None, 0

    def anchored() -> list[object]:
        out = []
        for sample in samples:
            out += RuleAnchorer().anchor(locomo_conversation(sample, sample["sample_id"]))
        return out

    units, unit_bytes, _ = _held(anchored)
    n = len(units)  # type: ignore[arg-type]
    vectors = rng.standard_normal((n, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    snap, built_bytes, build_s = _held(lambda: Snapshot(units, vectors, EpisodicKeys()))  # type: ignore[arg-type]
    signature = Signature(repr(EpisodicKeys()), DIMENSION)
    with tempfile.TemporaryDirectory() as tmp:
        files = SnapshotFiles(tmp)
        began = time.perf_counter()
        files.save("bench", snap, frozenset(), signature)  # type: ignore[arg-type]
        save_s = time.perf_counter() - began
        file_bytes = files.path("bench").stat().st_size
        loaded, loaded_bytes, load_s = _held(lambda: files.load("bench", frozenset(), signature))
        assert loaded is not None
        began = time.perf_counter()  # timed again without tracemalloc, which slows it
        files.load("bench", frozenset(), signature)
        load_s = time.perf_counter() - began
        began = time.perf_counter()
        Snapshot(units, vectors, EpisodicKeys())  # type: ignore[arg-type]
        build_s = time.perf_counter() - began
        import pickle  # the format before FORMAT 5, timed for comparison only

        pickled = pickle.dumps(snap, protocol=5)
        began = time.perf_counter()
        pickle.loads(pickled)
        pickle_s = time.perf_counter() - began
    vector_bytes = vectors.nbytes
    result = {
        "command": "python benchmarks/snapshot_bytes.py",
        "memories": n,
        "dimension": DIMENSION,
        "vector_bytes_per_memory": vector_bytes / n,
        "built_bytes_per_memory_besides_vectors": (built_bytes + unit_bytes) / n,
        "built_index_bytes_per_memory": built_bytes / n,
        "unit_object_bytes_per_memory": unit_bytes / n,
        "loaded_bytes_per_memory_besides_vectors": (loaded_bytes - vector_bytes) / n,
        "file_bytes_per_memory": file_bytes / n,
        "build_ms": 1000 * build_s,
        "file_save_ms": 1000 * save_s,
        "file_load_ms": 1000 * load_s,
        "pickle_load_ms_before": 1000 * pickle_s,
        "PER_MEMORY_BYTES": PER_MEMORY_BYTES,
    }
    for key, value in result.items():
        print(f"{key:42} {value:.1f}" if isinstance(value, float) else f"{key:42} {value}")
    path = ROOT / "benchmarks" / "results" / "snapshot_bytes.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
