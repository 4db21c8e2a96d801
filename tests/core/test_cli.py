"""The ``ramem`` command, run in-process on the real default embedder."""

from __future__ import annotations

import json
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
    assert ramem_hits >= content_hits  # six questions: a showcase, not a benchmark


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
    captured = capsys.readouterr()
    assert captured.out == ""  # stdout carries results only
    [line] = captured.err.splitlines()
    assert line.startswith("error: ")
    assert "malformed JSON" in line


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
    out = capsys.readouterr().err
    assert "namespace 'defualt' does not exist" in out
    assert "ramem namespaces" in " ".join(
        out.split()
    )  # where to look, without listing other tenants
    assert main([*db, "--namespace", "defualt", "frame", "Who is Caroline?"]) == 1
    capsys.readouterr()
    assert main([*db, "namespaces"]) == 0
    assert "defualt" not in capsys.readouterr().out  # the read did not create it


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("path-is-a-file", "is a file, not a memory directory"),
        ("eval-missing", "cannot read file"),
        ("eval-malformed", "malformed JSON"),
        ("eval-wrong-format", "not a locomo file"),
        ("eval-bad-k", "--k: expected a whole number"),
        ("eval-unknown-system", "unknown system or ablation: nope"),
    ],
)
def test_bad_arguments_and_files_get_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, expected: str
) -> None:
    ramem_file = tmp_path / "conversation.json"
    ramem_file.write_text('{"id": "c", "sessions": []}', encoding="utf-8")
    malformed = tmp_path / "bad.json"
    malformed.write_text("[{not json", encoding="utf-8")
    locomo = str(FIXTURES / "locomo_mini.json")
    out = str(tmp_path / "out")
    argv = {
        "path-is-a-file": ["--path", str(ramem_file), "namespaces"],
        "eval-missing": ["eval", "locomo", str(tmp_path / "nope.json"), "--out", out],
        "eval-malformed": ["eval", "locomo", str(malformed), "--out", out],
        "eval-wrong-format": ["eval", "locomo", str(ramem_file), "--out", out],
        "eval-bad-k": ["eval", "locomo", locomo, "--k", "0,5", "--out", out],
        "eval-unknown-system": ["eval", "locomo", locomo, "--system", "nope", "--out", out],
    }[case]
    assert main(argv) == 2
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert expected in " ".join(printed.split())
    assert "Traceback" not in printed


def test_k_zero_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--path", str(tmp_path / "db"), "ask", "What did Ben eat?", "--k", "0"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "expected a whole number of at least 1" in err
    assert not (tmp_path / "db").exists()  # nothing opened, no frame printed


def test_the_demo_refuses_a_store_it_would_not_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "mine"
    assert main(["--path", str(store), "demo"]) == 2
    assert main(["demo", "--host", "db.internal"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("always runs in a temporary local store: drop --") == 2
    assert not store.exists()


def test_memory_text_that_looks_like_markup_is_printed_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one table row per memory
    doc = {
        "id": "m",
        "sessions": [
            {
                "id": "s1",
                "time": "2023-05-08T13:56:00",
                "turns": [
                    {"id": "t1", "speaker": "Ann", "text": "My cat [/bold] is [red]fine[/x]."}
                ],
            }
        ],
    }
    path = tmp_path / "markup.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    db = ["--path", str(tmp_path / "db")]
    assert main([*db, "ingest", str(path)]) == 0
    assert main(["ask", "How is the cat [/bold]?", *db, "--k", "1"]) == 0  # options after too
    out = capsys.readouterr().out
    assert "My cat [/bold] is [red]fine[/x]." in out
    assert "How is the cat [/bold]?" in out


def test_a_refused_eval_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    for benchmark in ("locomo", "longmemeval"):
        assert main(["eval", benchmark, "bad.json"]) == 2
        assert main(["eval", benchmark, "nope.json"]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]  # no results/eval
    capsys.readouterr()


def test_ask_on_a_namespace_without_memories_says_so_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The API reads a namespace without memories as empty; the command says why nothing
    comes back and exits non-zero (never named another tenant)."""
    db = ["--path", str(tmp_path / "db")]
    assert main([*db, "ingest", str(FIXTURES / "locomo_mini.json"), "--namespace", "other"]) == 0
    capsys.readouterr()
    assert main([*db, "ask", "When did Caroline go?"]) == 1
    out = capsys.readouterr().err
    assert "'default' does not exist: it holds no memories" in out
    assert "other" not in out.replace("`ramem namespaces`", "")
    assert main([*db, "--namespace", "other", "delete", "--conversation", "conv-mini"]) == 0
    capsys.readouterr()
    assert main([*db, "--namespace", "other", "ask", "When did Caroline go?"]) == 1
    assert "'other' is empty: it holds no memories" in capsys.readouterr().err


def test_timeout_reaches_a_server_and_a_stalled_one_is_one_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--timeout`` is the server's timeout: a server that accepts and never answers is one
    error line within it, not a hang."""
    import socket
    import time

    from ramem_core.cli import main

    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        port = silent.getsockname()[1]
        began = time.monotonic()
        status = main(["--host", "127.0.0.1", "--port", str(port), "--timeout", "1", "namespaces"])
        assert time.monotonic() - began < 10
    assert status != 0
    assert "did not answer within 1 s" in capsys.readouterr().err


def test_a_long_many_lined_error_is_one_line_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--path", str(tmp_path / "db")]
    assert main([*db, "ingest", str(FIXTURES / "locomo_mini.json")]) == 0
    capsys.readouterr()
    assert main([*db, "ask", "Who is Caroline?", "--llm", "nosuch:model"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith("error: cannot load model 'nosuch:model'")


def test_eval_prints_nothing_before_its_input_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "locomo", str(tmp_path / "nope.json"), "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()  # no progress bar before it
    assert "cannot read file" in line


def test_reads_never_create_a_memory_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fresh = tmp_path / "fresh"
    for argv in (["ask", "hi"], ["frame", "hi"], ["namespaces"], ["delete", "--all", "--yes"]):
        assert main(["--path", str(fresh), *argv]) == 1
        assert "no memory at" in capsys.readouterr().err
    assert not fresh.exists()


def test_a_delete_says_what_matched_and_deletes_one_memory_by_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ramem_core import RaMem

    db = ["--path", str(tmp_path / "db")]
    assert main([*db, "ingest", str(FIXTURES / "locomo_mini.json")]) == 0
    assert main([*db, "delete", "--session", "nope"]) == 1
    captured = capsys.readouterr()
    assert "matched session 'nope': none deleted" in captured.err
    with RaMem.open(tmp_path / "db") as memory:
        first, *rest = [u.id for u in memory.store.get("default")]
    assert main([*db, "delete", first]) == 0
    assert "deleted 1 memories" in capsys.readouterr().out
    assert main([*db, "delete", first]) == 1  # gone already
    assert f"matched id {first}" in capsys.readouterr().err
    with RaMem.open(tmp_path / "db") as memory:
        assert sorted(u.id for u in memory.store.get("default")) == sorted(rest)


@pytest.mark.parametrize(("piped", "dropped"), [("y\n", True), ("n\n", False), ("", False)])
def test_a_piped_answer_to_a_confirmation_is_read(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    piped: str,
    dropped: bool,
) -> None:
    import io

    db = ["--path", str(tmp_path / "db")]
    assert main([*db, "ingest", str(FIXTURES / "locomo_mini.json")]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO(piped))  # `echo y | ramem delete --all`
    assert main([*db, "delete", "--all"]) == (0 if dropped else 1)
    captured = capsys.readouterr()
    assert "[y/N]" in captured.err  # the question is not a result
    assert ("dropped namespace 'default'" in captured.out) is dropped
    assert main([*db, "namespaces"]) == 0
    assert ("default" in capsys.readouterr().out) is not dropped


def test_list_show_export_import_and_explain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The four commands a user reaches for next: see, move and explain a namespace."""
    db = ["--path", str(tmp_path / "db")]
    assert main([*db, "ingest", str(FIXTURES / "locomo_mini.json")]) == 0
    capsys.readouterr()
    assert main([*db, "list", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 4
    assert [r["said_at"] for r in rows] == sorted((r["said_at"] for r in rows), reverse=True)
    assert main([*db, "list", "--limit", "1"]) == 0
    captured = capsys.readouterr()
    [line] = captured.out.splitlines()
    assert line.startswith(rows[0]["id"])
    assert f"more: --after {rows[0]['id']}" in captured.err
    assert main([*db, "list", "--limit", "3", "--after", rows[0]["id"], "--json"]) == 0
    assert [json.loads(x)["id"] for x in capsys.readouterr().out.splitlines()] == [
        r["id"] for r in rows[1:]
    ]
    assert main([*db, "show", rows[1]["id"]]) == 0
    shown = capsys.readouterr().out
    assert f"id: {rows[1]['id']}" in shown
    assert "session_start" in shown  # the full context
    assert main([*db, "show", "nope"]) == 1
    assert "no memory with id 'nope'" in capsys.readouterr().err
    export = tmp_path / "m.jsonl"
    assert main([*db, "export", "--out", str(export)]) == 0
    assert main([*db, "--namespace", "copy", "import", str(export)]) == 0
    assert "imported 4 memories (4 new)" in capsys.readouterr().out
    assert main([*db, "--namespace", "copy", "list", "--json"]) == 0
    assert [json.loads(x) for x in capsys.readouterr().out.splitlines()] == rows
    page = tmp_path / "page.html"
    assert main([*db, "explain", "When did Caroline go?", "--out", str(page)]) == 0
    assert "<svg" in page.read_text(encoding="utf-8")
    assert main([*db, "--namespace", "nobody", "list"]) == 1
    assert "'nobody' does not exist" in capsys.readouterr().err


def test_ask_shows_each_live_memory_said_at_its_own_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import datetime

    from ramem_core import RaMem

    with RaMem.open(tmp_path / "db") as memory:
        for minute, text in ((0, "I had coffee with Ana"), (40, "I bought running shoes")):
            memory.add_turn("user", text, at=datetime(2024, 3, 1, 9, minute))
    db = ["--path", str(tmp_path / "db")]
    assert main([*db, "ask", "What did I buy?", "--at", "2024-03-02", "--k", "2"]) == 0
    out = capsys.readouterr().out
    assert "09:40" in out
    assert "09:00" in out


def test_reindex_rebuilds_the_snapshot_from_the_store_and_writes_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 56: `ramem reindex` is the full rebuild on demand: the next process reads the
    file it writes, not every memory from the store."""
    from ramem_core import RaMem
    from ramem_core.index.files import SnapshotFiles

    monkeypatch.setattr("ramem_core.index.files.MIN_MEMORIES", 0)  # files for small ones
    db = ["--path", str(tmp_path / "db")]
    assert main([*db, "ingest", str(FIXTURES / "locomo_mini.json")]) == 0
    files = SnapshotFiles(tmp_path / "db" / "ramem-snapshots")
    files.remove("default")  # a lost file
    capsys.readouterr()
    assert main([*db, "reindex"]) == 0
    assert "rebuilt the snapshot of 4 memories" in capsys.readouterr().out
    assert files.path("default").exists()
    with RaMem.open(tmp_path / "db") as memory:

        def refuse(namespace: str) -> None:
            raise AssertionError("rebuilt from the store")

        monkeypatch.setattr(memory.store, "load", refuse)
        assert memory.recall("When did Caroline go?")
    assert main([*db, "--namespace", "nobody", "reindex"]) == 1
    assert "'nobody' does not exist" in capsys.readouterr().err
