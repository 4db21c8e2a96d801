"""What the examples share: a memory holding the demo conversation, and printing."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from ramem_core import Evidence, RaMem
from ramem_core.loaders import demo_conversation
from ramem_core.synthesis import coordinates


def demo_memory(path: str | None, namespace: str = "alice") -> tuple[RaMem, list[dict[str, str]]]:
    """A memory (in ``path`` or a temporary directory, removed at exit) holding the demo
    conversation."""
    directory = Path(path) if path else Path(tempfile.mkdtemp(prefix="ramem-example-"))
    memory = RaMem.open(directory, namespace=namespace)

    def clean_up() -> None:
        memory.close()
        if not path:
            shutil.rmtree(directory, ignore_errors=True)

    atexit.register(clean_up)
    conversation, questions = demo_conversation()
    memory.add_conversation(conversation)
    return memory, questions


def show_evidence(evidence: list[Evidence]) -> None:
    """Print evidence the way a person wants to see it: when, who, what, why valid."""
    for e in evidence:
        where = coordinates(e.unit)
        print(
            f"  [{e.rank}] said {where.get('said', '?')} | event {where.get('event', '-')}"
            f" | who {where.get('who', '-')}"
        )
        print(f"      {e.unit.content}")
        if e.satisfied:
            print(f"      valid: {'; '.join(e.satisfied)}")
