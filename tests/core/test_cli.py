"""The ``ramem`` command, run in-process on the real default embedder."""

from __future__ import annotations

from pathlib import Path

import pytest

from ramem_core.cli import main
from tests.conftest import FIXTURES


def test_demo_shows_ramem_beside_content(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "RaMem demo" in out
    assert "content-only" in out
    assert "top-1 from the right episode: RaMem" in out
    ramem_hits = int(out.split("RaMem ")[-1].split("/")[0])
    content_hits = int(out.split("content-only ")[-1].split("/")[0])
    assert ramem_hits > content_hits


def test_ingest_then_ask_and_frame(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--path", str(tmp_path / "db")]
    assert main([*db, "ingest", str(FIXTURES / "locomo_mini.json")]) == 0
    assert "4 turns -> 4 memory units (4 new)" in capsys.readouterr().out
    assert main([*db, "ask", "When did Caroline go to the support group?", "--k", "2"]) == 0
    out = capsys.readouterr().out
    assert "support group" in out
    assert "7 May 2023" in out
    assert main([*db, "frame", "What did Melanie do last week?"]) == 0
    out = capsys.readouterr().out
    assert "need: What did Melanie do?" in out
    assert "grounded" in out
    assert main([*db, "namespaces"]) == 0
    assert "default: 4 memories" in capsys.readouterr().out


def test_cli_reports_bad_input_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert main(["--path", str(tmp_path / "db"), "ingest", str(bad)]) == 2
    out = capsys.readouterr().out
    assert "malformed JSON" in out
    assert "Traceback" not in out


def test_eval_smoke_run_writes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "eval"
    args = [
        "eval",
        "locomo",
        str(FIXTURES / "locomo_mini.json"),
        "--limit",
        "1",
        "--k",
        "1,5",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "Evidence Recall@5" in printed
    assert {p.name for p in out.iterdir()} >= {"questions.jsonl", "summary.json", "report.md"}


def test_llm_options_route_every_stage_through_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import re

    from ramem_core import cli
    from ramem_core.testing import FakeLLM

    def reply(prompt: str) -> str:
        if prompt.startswith("You turn a window"):
            ids = re.findall(r"^(\S+) \| ", prompt, re.MULTILINE)
            return json.dumps(
                {"memories": [{"content": f"LLM memory of {i}", "source_ids": [i]} for i in ids]}
            )
        if prompt.startswith("You split a question"):
            return json.dumps({"need": "support group", "times": [], "participants": []})
        return "7 May 2023"

    monkeypatch.setattr(cli, "_llm", lambda spec: FakeLLM(reply))
    db = ["--path", str(tmp_path / "db")]
    assert main([*db, "ingest", str(FIXTURES / "locomo_mini.json"), "--llm", "fake:model"]) == 0
    assert "'fallback_windows': 0" in capsys.readouterr().out
    assert main([*db, "ask", "When did Caroline go to the support group?", "--llm", "fake:m"]) == 0
    out = capsys.readouterr().out
    assert "LLM memory of D1:1" in out
    assert "answer: 7 May 2023" in out


def test_ask_on_a_mistyped_namespace_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--path", str(tmp_path / "db")]
    assert main([*db, "ingest", str(FIXTURES / "locomo_mini.json")]) == 0
    capsys.readouterr()
    assert main([*db, "--namespace", "defualt", "ask", "Who is Caroline?"]) == 1
    out = capsys.readouterr().out
    assert "namespace 'defualt' does not exist (known: default)" in out
    assert main([*db, "--namespace", "defualt", "frame", "Who is Caroline?"]) == 1
    capsys.readouterr()
    assert main([*db, "namespaces"]) == 0
    assert "defualt" not in capsys.readouterr().out  # the read did not create it
