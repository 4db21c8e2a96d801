"""Evaluation: official metrics on hand-checked cases, and the harness end to end on fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ramem_core.evaluation import metrics as m
from ramem_core.evaluation.harness import EvalOptions, evaluate_locomo, evaluate_longmemeval
from ramem_core.evaluation.report import write_report
from ramem_core.testing import HashEmbedder, WordCounter
from tests.conftest import FIXTURES, evaluate_mini


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["D1:3"], ["D1:3"]),
        (["D8:6; D9:17"], ["D8:6", "D9:17"]),
        (["D:11:26"], ["D11:26"]),
        (["D"], []),
        (["D30:05", "D1:3 D2:4"], ["D30:5", "D1:3", "D2:4"]),
        ("D4:36", ["D4:36"]),
        ([None, 7], []),
    ],
)
def test_parse_evidence_is_defensive(raw: object, expected: list[str]) -> None:
    assert m.parse_evidence(raw) == expected


def test_locomo_f1_by_category() -> None:
    assert m.locomo_f1("7 May 2023", "7 May 2023", 2) == 1.0
    assert m.locomo_f1("7 May, 2023.", "7 May 2023", 2) == 1.0  # punctuation ignored
    # one extra token: precision 3/4, recall 1
    assert m.locomo_f1("on 7 May, 2023.", "7 May 2023", 4) == pytest.approx(6 / 7)
    assert m.locomo_f1("painting", "paintings", 4) == 1.0  # Porter stemming
    # category 1: comma-separated parts, best match per gold part, averaged
    assert m.locomo_f1("pottery, camping", "camping, pottery, painting", 1) == pytest.approx(2 / 3)
    # category 3: gold cut at the first ';'
    assert m.locomo_f1("psychology", "psychology; counseling certification", 3) == 1.0
    # category 5: abstention phrases
    assert m.locomo_f1("That is not mentioned in the conversation.", "x", 5) == 1.0
    assert m.locomo_f1("Sweden", "x", 5) == 0.0


def test_bleu1() -> None:
    assert m.bleu1("the cat sat", "the cat sat") == 1.0
    assert m.bleu1("cat", "the cat sat on mat") < 0.5  # brevity penalty
    assert m.bleu1("", "x") == 0.0


def test_longmemeval_ranking_metrics() -> None:
    ranked = ["s3", "s1", "s2"]
    assert m.recall_any(ranked, ["s1"], 1) == 0.0
    assert m.recall_any(ranked, ["s1"], 2) == 1.0
    assert m.recall_all(ranked, ["s1", "s2"], 2) == 0.0
    assert m.recall_all(ranked, ["s1", "s2"], 3) == 1.0
    assert m.ndcg_any(ranked, ["s3"], 3) == 1.0
    assert m.ndcg_any(ranked, ["s1"], 3) == pytest.approx(1 / 1.58496, rel=1e-4)
    assert m.dedupe(["a", "b", "a", "c"]) == ["a", "b", "c"]


def test_confusion_measures() -> None:
    sessions = {"u1": "D1", "u2": "D2", "u3": "D3"}
    # reference ranks a unit of D2 (no evidence) above the evidence unit u1
    assert m.is_confusable(["u2", "u1"], sessions, {"u1"}, {"D1"})
    assert not m.is_confusable(["u1", "u2"], sessions, {"u1"}, {"D1"})
    # a unit of an evidence session that is not itself evidence does not count as distractor
    assert not m.is_confusable(["u3", "u1"], {**sessions, "u3": "D1"}, {"u1"}, {"D1"})
    assert m.confusion(["D2", "D1", "D1"], [False, True, False], {"D1"}) == (1.0, 1)
    assert m.confusion(["D1", "D2"], [True, False], {"D1"}) == (0.0, -1)
    assert m.confusion(["D2", "D3"], [False, False], {"D1"}) == (1.0, 2)


def test_locomo_harness_writes_rescorable_rows_and_a_report(tmp_path: Path) -> None:
    options = EvalOptions(ks=(1, 2), ablations=("shuffle-context", "no-context-synthesis"))
    summary = evaluate_mini(tmp_path, options)
    rows = [json.loads(line) for line in (tmp_path / "questions.jsonl").read_text().splitlines()]
    assert {r["system"] for r in rows} == set(options.runs)
    row = next(r for r in rows if r["system"] == "ramem")
    for key in ("sample_id", "question", "category", "evidence", "retrieved"):
        assert key in row
    assert {"id", "source_ids", "session_id"} <= set(row["retrieved"][0])
    assert row["evidence"] == ["D1:3"]  # an id that does not exist: parsed, scored 0, no crash
    assert summary["runs"]["ramem"]["recall"]["1"]["overall"] == 0.0
    assert (
        summary["runs"]["no-context-synthesis"]["tokens"]["2"]
        < summary["runs"]["ramem"]["tokens"]["2"]
    )
    report = write_report(summary, tmp_path, "ramem eval locomo mini")
    text = report.read_text()
    assert "## Evidence Recall@2" in text
    assert "D@1" in text
    assert (tmp_path / "recall_by_category.png").stat().st_size > 1000
    # rerunning reuses the cached store and embeddings
    again = evaluate_mini(tmp_path, options)
    assert again["runs"]["ramem"]["recall"] == summary["runs"]["ramem"]["recall"]


def test_locomo_harness_scores_evidence(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "locomo_mini.json").read_text())
    data[0]["qa"] = [
        {
            "question": "When did Caroline go to the LGBTQ support group?",
            "answer": "7 May 2023",
            "evidence": ["D1:1"],
            "category": 2,
        },
        {
            "question": "What did Melanie paint?",
            "answer": "a sunrise",
            "evidence": ["D1:2"],
            "category": 4,
        },
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    summary = evaluate_locomo(
        path,
        tmp_path / "out",
        EvalOptions(systems=("ramem", "bm25")),
        embedder=HashEmbedder(),
        counter=WordCounter(),
    )
    assert summary["runs"]["ramem"]["recall"]["5"]["overall"] == 1.0
    assert summary["runs"]["bm25"]["recall"]["5"]["temporal"] == 1.0


def test_locomo_summary_splits_and_pairs_every_headline_figure(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "locomo_mini.json").read_text())
    first = json.loads(json.dumps(data[0]))
    first["qa"] = [
        {"question": "What did Melanie paint?", "evidence": ["D1:2"], "category": 4, "answer": "x"}
    ]
    second = json.loads(json.dumps(first))
    second["sample_id"] = "conv-42"
    second["qa"] = [
        {"question": "Who is Caroline?", "evidence": ["D1:1"], "category": 1, "answer": "x"}
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([first, second]))
    summary = evaluate_locomo(
        path,
        tmp_path / "out",
        EvalOptions(systems=("ramem", "content"), ks=(10,), holdout=("conv-42",)),
        embedder=HashEmbedder(),
        counter=WordCounter(),
    )
    splits = summary["runs"]["ramem"]["splits"]
    assert splits["choose"]["questions"] == 1
    assert splits["report"]["questions"] == 1
    assert splits["report"]["recall"]["10"]["multi-hop"] == 1.0
    assert splits["report"]["recall"]["10"]["single-hop"] is None  # not in that split
    paired = summary["paired_vs_content"]["ramem"]["recall@10"]
    assert paired["all"]["n"] == 2
    assert paired["report split"]["n"] == 1
    assert paired["all"]["low"] <= paired["all"]["diff"] <= paired["all"]["high"]
    report = write_report(summary, tmp_path / "out").read_text()
    assert "ramem minus content-only (paired bootstrap 95% interval)" in report
    assert "| ramem | report | 1 |" in report


def test_paired_bootstrap_interval() -> None:
    from ramem_core.evaluation.stats import paired_bootstrap

    same = paired_bootstrap([1, 0, 1, 1], [1, 0, 1, 1])
    assert same is not None
    assert (same.diff, same.low, same.high) == (0.0, 0.0, 0.0)
    better = paired_bootstrap([1.0] * 50 + [0.0] * 10, [0.0] * 50 + [0.0] * 10)
    assert better is not None
    assert better.diff == pytest.approx(50 / 60)
    assert 0.6 < better.low < better.diff < better.high <= 1.0
    assert paired_bootstrap([], []) is None
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap([1.0], [1.0, 0.0])


def test_longmemeval_harness_uses_user_turns_and_question_date(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from ramem_core.evaluation import harness

    # the hash embedder has no neighbourhoods: the kinds of state from its words alone
    words = replace(harness.SYSTEMS["ramem"], state_kind_vectors=None)
    monkeypatch.setitem(harness.SYSTEMS, "ramem", words)
    summary = evaluate_longmemeval(
        FIXTURES / "longmemeval_mini.json",
        tmp_path,
        EvalOptions(ks=(1, 3)),
        embedder=HashEmbedder(),
        counter=WordCounter(),
    )
    [row] = [
        json.loads(line)
        for line in (tmp_path / "questions.jsonl").read_text().splitlines()
        if '"system": "ramem"' in line
    ]
    assert row["evidence"] == ["sess-b"]
    assert row["evidence_turns"] == ["sess-b:0"]
    assert all(sid.endswith((":0", ":2")) for r in row["retrieved"] for sid in r["source_ids"])
    # "last week" from the question date (30 May) selects the 25 May session first
    assert row["retrieved"][0]["session_id"] == "sess-b"
    assert summary["runs"]["ramem"]["session"]["1"]["recall_any"] == 1.0
    by_type = summary["runs"]["ramem"]["by_type"]
    assert set(by_type) == {row["question_type"]}
    assert by_type[row["question_type"]]["turn recall_any@1"] == 1.0  # always computed
    paired = summary["paired_vs_content"]["ramem"]["turn recall_any@10"]
    assert set(paired) == {"all", row["question_type"]}
    report = write_report(summary, tmp_path).read_text()
    assert "## By question type" in report
    assert (tmp_path / "session_recall.png").exists()


def test_unknown_system_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown system or ablation: magic"):
        EvalOptions(systems=("magic",))


def test_longmemeval_qa_is_judged_per_question_type(tmp_path: Path) -> None:
    from ramem_core.testing import FakeLLM

    def reply(prompt: str) -> str:
        if prompt.startswith("I will give you a question"):
            return "yes" if "Model Response: a new bike" in prompt else "no"
        return "a new bike"

    judge_and_answer = FakeLLM(reply)
    summary = evaluate_longmemeval(
        FIXTURES / "longmemeval_mini.json",
        tmp_path,
        EvalOptions(systems=("ramem",), ks=(1,), llm=judge_and_answer),
        embedder=HashEmbedder(),
        counter=WordCounter(),
    )
    assert summary["runs"]["ramem"]["qa_accuracy"] == {"temporal-reasoning": 1.0, "overall": 1.0}
    judge_prompt = next(p for p in judge_and_answer.prompts if p.startswith("I will give"))
    assert "off-by-one" in judge_prompt  # the temporal-reasoning judge
    assert "## QA accuracy (LLM judge)" in write_report(summary, tmp_path).read_text()


def test_multi_hop_all_evidence_counts_only_complete_multi_hop_answers(tmp_path: Path) -> None:
    from ramem_core.evaluation.harness import summarize_locomo

    def row(category: int, recall: dict[int, float]) -> dict[str, object]:
        return {
            "system": "ramem",
            "category": category,
            "evidence": ["D1:1", "D2:1"],
            "recall": {k: recall[min(k, 2)] for k in range(1, 21)},
            "tokens": {1: 10, 2: 20},
            "split": "choose",
            "top1_wrong_episode": 0.0,
        }

    rows = [row(1, {1: 0.5, 2: 1.0}), row(1, {1: 0.5, 2: 0.5}), row(4, {1: 1.0, 2: 1.0})]
    summary = summarize_locomo(rows, EvalOptions(systems=("ramem",), ks=(1, 2)))
    entry = summary["runs"]["ramem"]
    assert entry["multi_hop_all_evidence"] == {"1": 0.0, "2": 0.5}  # single-hop not counted
    assert entry["splits"]["choose"]["multi_hop_all_evidence"] == {"1": 0.0, "2": 0.5}
    text = write_report(summary, tmp_path).read_text()
    assert "multi-hop all-evidence@2" in text


def test_multi_hop_is_reported_by_the_number_of_evidence_sessions(tmp_path: Path) -> None:
    """Issue 33's table: multi-hop questions grouped by how many sessions their evidence
    spans, with Recall@10, all-evidence@10 and why RaMem missed."""
    from ramem_core.evaluation.harness import summarize_locomo

    def row(evidence: list[str], recall: float) -> dict[str, object]:
        return {
            "system": "ramem",
            "category": 1,  # multi-hop
            "evidence": evidence,
            "recall": dict.fromkeys(range(1, 21), recall),
            "tokens": {10: 10},
            "split": "choose",
            "top1_wrong_episode": 0.0,
        }

    rows = [
        row(["D1:1", "D1:4"], 1.0),  # one session
        row(["D1:1", "D2:1"], 1.0),
        row(["D1:1", "D2:1"], 0.5),
        row(["D1:1", "D2:1", "D3:1"], 0.0),
        row(["D1:1", "D2:1", "D3:1", "D5:2"], 0.5),
    ]
    summary = summarize_locomo(rows, EvalOptions(systems=("ramem",), ks=(10,)))
    groups = summary["runs"]["ramem"]["multi_hop_by_sessions"]
    assert {n: g["questions"] for n, g in groups.items()} == {"1": 1, "2": 2, "3": 1, "4+": 1}
    assert groups["2"]["recall"] == 0.75
    assert groups["2"]["all_evidence"] == 0.5
    assert groups["3"]["failures"] == {"content miss (no grounded frame)": 1}
    text = write_report(summary, tmp_path).read_text()
    assert "## Multi-hop by the number of evidence sessions" in text
    assert "| 4+ | 1 |" in text
