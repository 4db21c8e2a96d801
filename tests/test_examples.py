"""Every example runs offline end to end (with the real default embedder) and shows evidence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "expected"),
    [
        (
            "langchain_agent.py",
            [
                "what the model receives:",
                "Asked on: Tuesday 21 November 2023, 09:00.",
                "A: From what you told me on 28 August 2023",
                "memories in 'alice'",
            ],
        ),
        ("lcel_chain.py", ["said 28 August 2023, 21:00", "Ben: Back from Kyoto! Last week"]),
        (
            "langgraph_store.py",
            [
                "agent: From memory: [1.00] My sister Jo visited me in Lisbon yesterday.",
                "thread chat-1 | event 09 June 2024 to 09 June 2024",
                "event 01 March 2024 to 31 March 2024",
            ],
        ),
        (
            "llamaindex_query_engine.py",
            ["the LLM received 2 situated memories", 'said="28 August 2023, 21:00"'],
        ),
        (
            "llamaindex_memory.py",
            [
                "Alice: Biscuit had his vaccinations at the vet yesterday (= 4 December 2023)",
                'said="10 February 2023, 19:05"',
            ],
        ),
    ],
)
def test_example_runs_offline(script: str, expected: list[str], tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script), "--path", str(tmp_path / "memory")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for text in expected:
        assert text in result.stdout, result.stdout[-3000:]


@pytest.mark.slow
def test_an_example_removes_its_temporary_memory(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "lcel_chain.py")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert not list(tmp_path.glob("ramem-example-*"))  # its memory went with it
