"""A Markdown report with PNG plots from an evaluation summary.

Plots need matplotlib (``pip install '.[eval]'``); without it the report has the tables only
and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

CATEGORIES = ("multi-hop", "temporal", "open-domain", "single-hop", "overall")

DEFINITIONS = """\
**Definitions.**
*Evidence Recall@K* (LoCoMo's own): the share of a question's gold evidence turn ids
(``D<session>:<turn>``, parsed defensively) covered by the source turn ids of the top-K units;
averaged over questions of categories 1-4 that have evidence ("overall") and per category.
*Context-confusable subset*: questions (categories 1-4) where a fixed reference BM25 (bm25s
defaults, no stemming, over the same units, independent of every system) ranks a unit from a
session holding none of the evidence above every evidence unit.
*D@1*: on that subset, the share of questions whose top-1 unit comes from a session without
evidence (lower is better). *Rank gap*: rank of the first evidence unit minus rank of the best
distractor (missing = depth + 1; lower is better).
*Tokens*: cl100k_base tokens of the top-K memories as handed to the generator (with coordinates,
or plain text for ``no-context-synthesis``).
*LongMemEval*: corpus = user turns; session-level metrics rank the distinct sessions of the
retrieved turns; ``recall_any@k`` = some gold id in the top k, ``recall_all@k`` = all of them,
``ndcg_any@k`` = binary-relevance nDCG; abstention and assistant-only-evidence questions skipped.
"""


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _interval_plot(
    plt: Any, summary: dict[str, Any], out: Path, metric: str, label: str
) -> list[str]:
    """RaMem minus content-only per category / question type, with paired 95% intervals."""
    paired = summary.get("paired_vs_content", {}).get("ramem", {}).get(metric)
    if not paired:
        return []
    groups = [g for g, v in paired.items() if v is not None]
    diffs = [paired[g]["diff"] for g in groups]
    low = [paired[g]["diff"] - paired[g]["low"] for g in groups]
    high = [paired[g]["high"] - paired[g]["diff"] for g in groups]
    fig, ax = plt.subplots(figsize=(7, 0.4 * len(groups) + 1.2))
    y = list(range(len(groups)))[::-1]
    ax.errorbar(diffs, y, xerr=[low, high], fmt="o", color="tab:blue", capsize=3)
    ax.axvline(0.0, color="black", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{g} (n={paired[g]['n']})" for g in groups])
    ax.set_xlabel(f"RaMem minus content-only, {label}\n(paired bootstrap 95% interval)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"{summary['benchmark']}: gain over content-only")
    fig.tight_layout()
    name = "gain_intervals.png"
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return [name]


def _plots(summary: dict[str, Any], out: Path) -> list[str]:
    """The report's figures (names of the files written to ``out``); none without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    if summary["benchmark"] != "locomo":
        written = _interval_plot(plt, summary, out, "turn recall_any@10", "turn recall_any@10")
        return written + _session_recall_plot(plt, summary, out)
    k = "10" if 10 in summary["ks"] else str(max(summary["ks"]))
    written = []
    for plot in (_category_plot, _budget_plot, _confusion_plot, _ablation_plot):
        written += plot(plt, summary, out, k)
    return written + _interval_plot(plt, summary, out, f"recall@{k}", f"Recall@{k}")


def _saved(plt: Any, fig: Any, out: Path, name: str) -> list[str]:
    fig.tight_layout()
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return [name]


def _systems(summary: dict[str, Any]) -> list[str]:
    runs = summary["runs"]
    return [r for r in summary.get("systems") or list(runs) if r in runs]


def _category_plot(plt: Any, summary: dict[str, Any], out: Path, k: str) -> list[str]:
    runs, systems = summary["runs"], _systems(summary)
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / max(1, len(systems))
    for i, run in enumerate(systems):
        values = [runs[run]["recall"][k].get(c) or 0.0 for c in CATEGORIES]
        ax.bar([x + i * width for x in range(len(CATEGORIES))], values, width, label=run)
    ax.set_xticks([x + width * (len(systems) - 1) / 2 for x in range(len(CATEGORIES))])
    ax.set_xticklabels(CATEGORIES)
    ax.set_ylabel(f"evidence Recall@{k}")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(f"LoCoMo: evidence Recall@{k} by category")
    return _saved(plt, fig, out, "recall_by_category.png")


def _budget_plot(plt: Any, summary: dict[str, Any], out: Path, k: str) -> list[str]:
    runs = summary["runs"]
    fig, ax = plt.subplots(figsize=(7, 4))
    for run in summary.get("systems") or list(runs):  # systems only: ablations overlap
        curve = runs[run]["budget_curve"]
        ax.plot(range(1, len(curve) + 1), curve, marker=".", label=run)
    ax.set_xlabel("K (memories handed to the generator)")
    ax.set_ylabel("evidence Recall@K (categories 1-4)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("LoCoMo: K-budget curve")
    return _saved(plt, fig, out, "budget_curve.png")


def _confusion_plot(plt: Any, summary: dict[str, Any], out: Path, k: str) -> list[str]:
    runs = summary["runs"]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    names = list(runs)
    values = [runs[r]["confusable"]["d_at_1"] or 0.0 for r in names]
    ax.bar(names, values, color="tab:red")
    ax.set_ylabel("D@1 (lower is better)")
    ax.set_ylim(0, 1)
    n = next(iter(runs.values()))["confusable"]["questions"]
    ax.set_title(f"LoCoMo: wrong-episode distractor at rank 1 ({n} confusable questions)")
    return _saved(plt, fig, out, "d_at_1.png")


def _ablation_plot(plt: Any, summary: dict[str, Any], out: Path, k: str) -> list[str]:
    runs, systems = summary["runs"], _systems(summary)
    ablated = [r for r in runs if r not in systems]
    if not ablated:
        return []
    names = ["ramem", *ablated] if "ramem" in runs else ablated
    values = [runs[r]["recall"][k]["overall"] or 0.0 for r in names]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(names) + 1.2))
    colors = ["tab:blue" if r == "ramem" else "tab:gray" for r in names]
    ax.barh(names[::-1], values[::-1], color=colors[::-1])
    if "content" in runs:
        ax.axvline(runs["content"]["recall"][k]["overall"], color="tab:orange", ls="--")
        ax.text(runs["content"]["recall"][k]["overall"], -0.9, " content-only", fontsize=8)
    ax.set_xlabel(f"evidence Recall@{k} (categories 1-4)")
    ax.set_xlim(0, 1)
    ax.set_title("LoCoMo: what each part contributes (ablations)")
    return _saved(plt, fig, out, "ablations.png")


def _session_recall_plot(plt: Any, summary: dict[str, Any], out: Path) -> list[str]:
    fig, ax = plt.subplots(figsize=(7, 4))
    ks = summary["ks"]
    for run, entry in summary["runs"].items():
        ax.plot(
            ks, [entry["session"][str(k)]["recall_any"] or 0 for k in ks], marker="o", label=run
        )
    ax.set_xscale("log")
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_xlabel("k")
    ax.set_ylabel("session recall_any@k")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("LongMemEval: session-level recall_any@k")
    return _saved(plt, fig, out, "session_recall.png")


def _interval(entry: dict[str, Any] | None) -> str:
    if not entry:
        return "-"
    return f"{entry['diff']:+.3f} [{entry['low']:+.3f}, {entry['high']:+.3f}] (n={entry['n']})"


def _paired_tables(summary: dict[str, Any]) -> list[str]:
    """One table per compared run: group x metric, each cell ``diff [low, high] (n)``."""
    parts: list[str] = []
    for run, metrics in summary.get("paired_vs_content", {}).items():
        groups = list(dict.fromkeys(g for m in metrics.values() for g in m))
        parts += [f"### {run} minus content-only (paired bootstrap 95% interval)", ""]
        parts.append(
            _table(
                ["questions", *metrics],
                [[g, *(_interval(m.get(g)) for m in metrics.values())] for g in groups],
            )
        )
        parts.append("")
    return parts


def _anchors(summary: dict[str, Any]) -> list[str]:
    anchors = summary.get("anchors")
    if not anchors:
        return []
    return [
        "## Relation anchors",
        "",
        f'Questions whose relation anchor ("after the trip") was located in memory: '
        f"{anchors['questions_with_anchor']}; the relation's window holds gold evidence in "
        f"{anchors['window_holds_evidence']} ({_fmt(anchors['window_share'])}). The anchor "
        f"memory itself is gold evidence in {anchors['on_evidence']} of {anchors['located']} "
        f"({_fmt(anchors['share'])}; same turn on LoCoMo, where gold marks the asked event "
        f"rather than the anchor; same session on LongMemEval). Distance questions (never "
        f"filters): {anchors['distance_questions']}.",
        "",
    ]


def _locomo_recall(summary: dict[str, Any]) -> list[str]:
    parts = []
    for k in summary["ks"]:
        parts += [f"## Evidence Recall@{k}", ""]
        parts.append(
            _table(
                ["system", *CATEGORIES, f"multi-hop all-evidence@{k}", "tokens"],
                [
                    [
                        run,
                        *(_fmt(e["recall"][str(k)].get(c)) for c in CATEGORIES),
                        _fmt(e.get("multi_hop_all_evidence", {}).get(str(k))),
                        f"{e['tokens'][str(k)]:.0f}" if e["tokens"][str(k)] is not None else "-",
                    ]
                    for run, e in summary["runs"].items()
                ],
            )
        )
        parts.append("")
    return parts


def _locomo_splits(summary: dict[str, Any]) -> list[str]:
    k = "10" if 10 in summary["ks"] else str(max(summary["ks"]))
    parts = [f"## Recall@{k} on the choose and report splits", ""]
    parts.append(
        "Parameters were chosen on the choose split and are reported on the other "
        "(the report split's conversations were not used to choose them)."
    )
    parts.append("")
    header = ["system", "split", "questions", *CATEGORIES, f"multi-hop all-evidence@{k}"]
    parts.append(
        _table(
            [*header, "D@1 (all questions)"],
            [
                [
                    run,
                    split,
                    str(e["splits"][split]["questions"]),
                    *(_fmt(e["splits"][split]["recall"][k].get(c)) for c in CATEGORIES),
                    _fmt(e["splits"][split].get("multi_hop_all_evidence", {}).get(k)),
                    _fmt(e["splits"][split]["d_at_1_all"]),
                ]
                for run, e in summary["runs"].items()
                if "splits" in e
                for split in ("choose", "report")
            ],
        )
    )
    parts.append("")
    return parts


def _paired(summary: dict[str, Any]) -> list[str]:
    if not summary.get("paired_vs_content"):
        return []
    return ["## RaMem minus content-only", "", *_paired_tables(summary)]


def _confusable(summary: dict[str, Any]) -> list[str]:
    parts = ["## Context-confusable subset", ""]
    parts.append(
        _table(
            ["system", "questions", "D@1", "rank gap", "D@1 (all questions)"],
            [
                [
                    run,
                    str(e["confusable"]["questions"]),
                    _fmt(e["confusable"]["d_at_1"]),
                    _fmt(e["confusable"]["rank_gap"]),
                    _fmt(e.get("d_at_1_all")),
                ]
                for run, e in summary["runs"].items()
            ],
        )
    )
    parts.append("")
    return parts


def _locomo_qa(summary: dict[str, Any]) -> list[str]:
    runs = summary["runs"]
    if not any("qa" in e for e in runs.values()):
        return []
    cats = ("multi-hop", "temporal", "open-domain", "single-hop", "adversarial", "overall")
    rows = [
        [run, *(f"{_fmt(e['qa'][c]['f1'])} / {_fmt(e['qa'][c]['bleu1'])}" for c in cats)]
        for run, e in runs.items()
        if "qa" in e
    ]
    return ["## QA (official F1 / BLEU-1)", "", _table(["system", *cats], rows), ""]


def _failures(summary: dict[str, Any]) -> list[str]:
    if "ramem_failures_at_10" not in summary:
        return []
    rows = [[kind, str(n)] for kind, n in summary["ramem_failures_at_10"].items()]
    return ["## Why RaMem missed evidence at K=10", "", _table(["kind", "questions"], rows), ""]


def _multi_hop_by_sessions(summary: dict[str, Any]) -> list[str]:
    groups = summary["runs"].get("ramem", {}).get("multi_hop_by_sessions")
    if not groups:
        return []
    kinds = sorted({kind for g in groups.values() for kind in g["failures"]})
    rows = [
        [
            name,
            str(g["questions"]),
            _fmt(g["recall"]),
            _fmt(g["all_evidence"]),
            *(str(g["failures"].get(kind, 0)) for kind in kinds),
        ]
        for name, g in groups.items()
    ]
    header = ["evidence sessions", "questions", "Recall@10", "all evidence@10", *kinds]
    title = "## Multi-hop by the number of evidence sessions (RaMem, K=10)"
    return [title, "", _table(header, rows), ""]


def _skipped(summary: dict[str, Any]) -> list[str]:
    return [f"Skipped: {summary['skipped']}", ""]


def _by_type(summary: dict[str, Any]) -> list[str]:
    runs = summary["runs"]
    types = sorted({t for e in runs.values() for t in e.get("by_type", {})})
    headline = ("turn recall_any@1", "turn recall_any@10", "session recall_any@5")
    rows = [
        [
            t,
            str(e["by_type"][t]["questions"]),
            run,
            *(_fmt(e["by_type"][t].get(h)) for h in headline),
        ]
        for t in types
        for run, e in runs.items()
        if t in e.get("by_type", {})
    ]
    header = ["question type", "questions", "system", *headline]
    return ["## By question type", "", _table(header, rows), ""]


def _longmemeval_qa(summary: dict[str, Any]) -> list[str]:
    runs = summary["runs"]
    if not any("qa_accuracy" in e for e in runs.values()):
        return []
    types = sorted({t for e in runs.values() for t in e.get("qa_accuracy", {})})
    rows = [
        [run, *(_fmt(e["qa_accuracy"].get(t)) for t in types)]
        for run, e in runs.items()
        if "qa_accuracy" in e
    ]
    return ["## QA accuracy (LLM judge)", "", _table(["system", *types], rows), ""]


def _levels(summary: dict[str, Any]) -> list[str]:
    parts = []
    for level in ("session", "turn"):
        header = ["system"] + [f"R_any@{k}" for k in summary["ks"]] + ["nDCG@10"]
        rows = [
            [
                run,
                *(_fmt(e[level][str(k)]["recall_any"]) for k in summary["ks"]),
                _fmt(e[level].get("10", {}).get("ndcg_any")),
            ]
            for run, e in summary["runs"].items()
        ]
        parts += [f"## {level.capitalize()}-level retrieval", "", _table(header, rows), ""]
    return parts


def write_report(summary: dict[str, Any], out: str | Path, command: str = "") -> Path:
    """Write ``report.md`` (tables, definitions, plots) next to the summary; returns its path."""
    out = Path(out)
    parts = [f"# RaMem evaluation: {summary['benchmark']}", ""]
    if command:
        parts += ["Reproduce with:", "", f"    {command}", ""]
    sections: tuple[Callable[[dict[str, Any]], list[str]], ...]
    if summary["benchmark"] == "locomo":
        sections = (_locomo_recall, _locomo_splits, _paired, _anchors, _confusable, _locomo_qa)
        sections += (_failures, _multi_hop_by_sessions)
    else:
        sections = (_skipped, _by_type, _paired, _anchors, _longmemeval_qa, _levels)
    for section in sections:
        parts += section(summary)
    plots = _plots(summary, out)
    if plots:
        parts += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    else:
        parts += ["(plots skipped: matplotlib is not installed; pip install '.[eval]')", ""]
    parts += [DEFINITIONS]
    path = out / "report.md"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
