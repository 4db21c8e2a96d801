"""Issue 22 item 5, measured and not merged: bulk ingest with a bounded pipeline (a thread
embeds block k+1 while block k is written) against embedding, then writing.

Run from the repository root with the patch applied (the pipeline is not on main)::

    git apply benchmarks/results/ingest_pipeline/embed_ahead.patch
    python benchmarks/results/ingest_pipeline/ab.py
    git apply -R benchmarks/results/ingest_pipeline/embed_ahead.patch

Interleaved per conversation (LoCoMo dev 0-4, twice), through ``chroma run`` and on a local
directory, with the default embedder (every CPU). Ratio: embedding the conversation's
memories alone / ingesting it.
"""

import json
import pathlib
import statistics
import tempfile
import time

import ramem_core.memory as mm
from ramem_core import RaMem
from ramem_core.embedding import MiniLMEmbedder
from ramem_core.loaders import load_conversations
from ramem_core.testing import serve_chroma

OUT = pathlib.Path("benchmarks/results/ingest_pipeline/ab.json")  # run from the repository root
convs = load_conversations("../shared/data/locomo_dev.json")
res: dict[str, list[float]] = {}
d = pathlib.Path(tempfile.mkdtemp())
n = 0
with serve_chroma(d / "srv") as port:
    for threads in (None,):
        real = MiniLMEmbedder(threads=threads)
        real.embed(["warm"])
        for where in ("server", "local"):
            m = (
                RaMem.open(host="127.0.0.1", port=port, embedder=real)
                if where == "server"
                else RaMem.open(path=d / "loc", embedder=real)
            )
            for _ in range(2):
                for ci in range(5):
                    texts = [u.content for u in m.anchorer.anchor(convs[ci])]
                    t = time.perf_counter()
                    real.embed(texts)
                    e = time.perf_counter() - t
                    for depth in (0, 2):
                        mm._EMBED_AHEAD = depth
                        n += 1
                        t = time.perf_counter()
                        m.add_conversation(convs[ci], namespace=f"u{n}")
                        i = time.perf_counter() - t
                        mode = "pipeline" if depth else "serial"
                        key = f"threads={threads or 'all'} {where} {mode}"
                        res.setdefault(key, []).append(round(e / i, 3))
                        print(key, round(e / i, 3), flush=True)
            m.close()
summary = {
    k: {"mean_ingest_over_embedder": round(statistics.mean(v), 3), "runs": v}
    for k, v in res.items()
}
for k, v in summary.items():
    print(f"{k:40s} {v['mean_ingest_over_embedder']}")
OUT.write_text(json.dumps(summary, indent=1))
