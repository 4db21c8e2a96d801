"""The README's Python snippets run as written, from a clean directory (issue 32)."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")


def _block(after: str) -> str:
    """The first ```python block after the heading ``after``."""
    return README.split(after, 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


@pytest.fixture
def clean(tmp_path: Path) -> object:
    here = Path.cwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(here)


def test_the_python_api_snippet_runs_twice_and_stores_its_turn_once(clean: Path) -> None:
    from ramem_core import RaMem

    code = _block("## Python API")
    for _ in range(2):  # re-running the snippet stores nothing twice
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            exec(code, {})
    assert "Dr. Patel" in printed.getvalue()  # the August appointment was found
    with RaMem.open(clean / "memory") as memory:
        assert sum("adopted a cat" in u.content for u in memory.store.get("default")) == 1


def test_the_see_move_explain_snippet_runs(clean: Path) -> None:
    from ramem_core import RaMem

    scope: dict[str, object] = {}
    exec(_block("## Python API"), scope)
    memory = RaMem.open(clean / "memory")
    scope = {"memory": memory, "RaMem": RaMem}
    exec(_block("### See, move and explain memory"), scope)
    assert len(scope["page"]) == 20  # type: ignore[arg-type]
    assert "<svg" in scope["html"]  # type: ignore[operator]
    with RaMem.open(clean / "moved") as moved:
        assert moved.count() == memory.count()
    memory.close()


def test_the_readmes_list_of_passes_is_the_pipeline() -> None:
    """The README's architecture section names the default pipeline's passes, in order."""
    import re

    from ramem_core.retrieval import RetrievalConfig, Retriever
    from ramem_core.testing import HashEmbedder

    listed = README.split("<!-- passes -->", 1)[1].split("<!-- /passes -->", 1)[0]
    names = re.findall(r"`([a-z-]+)`", listed)
    assert names == [p.name for p in Retriever(HashEmbedder(), RetrievalConfig()).passes]
