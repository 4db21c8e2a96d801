"""Write the results page, docs/results.md, and the README's headline table from the JSON
results under benchmarks/results/: measurements live there and nowhere in prose.

From the repository root::

    python benchmarks/results_page.py           # rewrite both from the results
    python benchmarks/results_page.py --check   # exit 1 when either differs (tests/test_docs.py)

Each section names the command that wrote its file. Rerun a benchmark, then this script.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "results.md"
README = ROOT / "README.md"
HEADLINE_START = "<!-- results:headline -->"
HEADLINE_END = "<!-- /results:headline -->"

LOCOMO_CATEGORIES = ("multi-hop", "temporal", "open-domain", "single-hop")


def load(name: str) -> Any:
    """One results file, by its path under benchmarks/results/."""
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def num(value: float, digits: int = 3) -> str:
    """A figure as the tables print it (``nan``: a dash)."""
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def signed(value: float) -> str:
    """A difference with its sign."""
    return f"{value:+.3f}"


def interval(diff: float, low: float, high: float) -> str:
    """A paired difference with its bootstrap 95% interval."""
    return f"{signed(diff)} [{signed(low)}, {signed(high)}]"


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def _paired(cell: dict[str, float]) -> str:
    """A paired difference stored as ``diff``, ``low``, ``high``."""
    return interval(cell["diff"], cell["low"], cell["high"])


def produced_by(command: str) -> str:
    """The line naming the command that wrote a section's file."""
    return f"Produced by `{command}`."


# ---------------------------------------------------------------- the cross-validated audit

AUDIT = "audit/audit.json"
AUDIT_METRICS = (
    ("R@10", "LoCoMo Recall@10"),
    ("D@1", "LoCoMo D@1, rank 1 from a wrong session (lower is better)"),
    ("turn@1", "LongMemEval_S turn@1"),
    ("turn@10", "LongMemEval_S turn@10"),
    ("session@5", "LongMemEval_S session@5"),
    ("latest_first@10", "Knowledge updates, latest_first@10"),
    ("right_first@10", "Knowledge updates, right_first@10 (the earlier value where asked)"),
)


def _difference(metric: str, cell: dict[str, Any]) -> str:
    """RaMem minus content-only; the audit stores D@1 as a fall (content-only minus RaMem)."""
    diff, low, high = cell["gain"]
    if metric == "D@1":
        diff, low, high = -diff, -high, -low
    return interval(diff, low, high)


def headline() -> list[str]:
    """The README's table: cross-validated RaMem against content-only retrieval."""
    audit = load(AUDIT)
    rows = []
    for metric, label in AUDIT_METRICS:
        cell = audit["ramem_vs_content"][metric]["all"]
        rows.append(
            [label, cell["n"], num(cell["with"]), num(cell["without"]), _difference(metric, cell)]
        )
    return table(
        ["dev questions, cross-validated", "n", "RaMem", "content-only", "difference [95% CI]"],
        rows,
    )


def audit_section() -> list[str]:
    audit = load(AUDIT)
    lines = [
        "## Ranking quality, cross-validated (the figures to quote)",
        "",
        produced_by(audit["command"]) + " Every LoCoMo dev conversation is scored by a system "
        "fitted on the other four, and each fifth of the LongMemEval_S dev questions by one "
        "fitted on the rest: the learned fusion is refitted and every tuned constant chosen "
        "inside the training folds ([evaluation](evaluation.md) says how). Content-only is "
        "dense + BM25 over each memory's own words, on the same memories. Intervals are "
        "paired bootstrap 95%.",
        "",
        *headline(),
        "",
        "Per LoCoMo category (Recall@10, D@1) and LongMemEval_S question type (turn@1):",
        "",
    ]
    rows = []
    for metric in ("R@10", "D@1", "turn@1"):
        for category, cell in audit["ramem_vs_content"][metric].items():
            if category != "all":
                rows.append(
                    [
                        metric,
                        category,
                        cell["n"],
                        num(cell["with"]),
                        num(cell["without"]),
                        _difference(metric, cell),
                    ]
                )
    lines += table(["metric", "category", "n", "RaMem", "content-only", "difference"], rows)

    # the measures the parts are judged by (the audit reports right_first@10 for RaMem only)
    judged = {m for part in audit["passes"].values() for m in part["table"]}
    metrics = [m for m, _ in AUDIT_METRICS if m in judged]
    lines += [
        "",
        "### What each part earns",
        "",
        "The paired CV gain of RaMem with the part over RaMem without it (for D@1, the fall: "
        "positive is better), and the audit's verdict: a part is kept when the lower bound of "
        "its gain is above zero on a metric it exists for, and no group's upper bound is below "
        "-0.01 on any metric.",
        "",
    ]
    rows = []
    for name, part in audit["passes"].items():
        verdict = "keep: " + "; ".join(part["earned_by"]) if part["keep"] else "remove"
        if not part["keep"] and not part["earned_by"]:
            verdict = "remove: earns nothing"
        gains = [interval(*part["table"][m]["all"]["gain"]) for m in metrics]
        rows.append([name, *gains, verdict])
    lines += table(["part", "R@10", "D@1 fall", *metrics[2:], "verdict"], rows)

    lines += ["", "### Tuned constants, chosen per fold", ""]
    rows = []
    for name, constant in audit["constants"].items():
        chosen = ", ".join(str(v) for v in constant["chosen_per_fold"])
        moved = constant["cv_chosen_minus_shipped"]
        rows.append(
            [
                f"`{name}`",
                constant["shipped"],
                chosen,
                *(
                    interval(*moved[m]["all"]["gain"])
                    for m in ("R@10", "turn@1", "latest_first@10")
                ),
            ]
        )
    lines += table(
        [
            "constant",
            "shipped",
            "chosen per fold",
            "chosen minus shipped: R@10",
            "turn@1",
            "latest_first@10",
        ],
        rows,
    )

    lines += ["", "### Recall latency at 10,000 memories, each part removed", ""]
    base = audit["latency_10k"]["ramem"]["p95_ms"]
    rows = [
        [name, num(t["p50_ms"], 1), num(t["p95_ms"], 1), num(t["p95_ms"] / base, 2)]
        for name, t in audit["latency_10k"].items()
    ]
    lines += table(["variant", "p50 ms", "p95 ms", "p95 / RaMem"], rows)
    return lines


# ---------------------------------------------------------------- single-run evaluations


def _reproduce(report: str) -> str:
    """The command a ``ramem eval`` report says reproduces it."""
    text = (RESULTS / report).read_text(encoding="utf-8")
    return text.split("Reproduce with:", 1)[1].strip().splitlines()[0].strip()


def eval_section() -> list[str]:
    locomo = load("locomo/summary.json")
    lines = [
        "## All systems, one run each (`ramem eval`)",
        "",
        "These runs predate the cross-validated audit, and the shipped fusion was fitted on "
        "part of these questions, so RaMem's figures here read higher than the ones above. "
        "`content` is dense + BM25 on each memory's own words; `dense` and `bm25` are its "
        "halves.",
        "",
        "### LoCoMo dev, 760 answerable questions with evidence",
        "",
        produced_by(_reproduce("locomo/report.md")),
        "",
    ]
    rows = []
    for system in locomo["systems"]:
        run = locomo["runs"][system]
        recall = run["recall"]
        rows.append(
            [
                system,
                num(recall["5"]["overall"]),
                num(recall["10"]["overall"]),
                num(recall["20"]["overall"]),
                *(num(recall["10"][c]) for c in LOCOMO_CATEGORIES),
                num(run["d_at_1_all"]),
                num(run["multi_hop_all_evidence"]["10"]),
            ]
        )
    lines += table(
        [
            "system",
            "R@5",
            "R@10",
            "R@20",
            *(f"{c} R@10" for c in LOCOMO_CATEGORIES),
            "D@1",
            "multi-hop all-evidence@10",
        ],
        rows,
    )

    lme = load("longmemeval_s/summary.json")
    skipped = ", ".join(f"{n} {why}" for why, n in lme["skipped"].items())
    lines += [
        "",
        f"### LongMemEval_S dev30 + dev60 + dev120, {lme['runs']['ramem']['questions']} "
        f"questions (skipped: {skipped})",
        "",
        produced_by(_reproduce("longmemeval_s/report.md")),
        "",
    ]
    rows = []
    for system in ("ramem", "content", "dense", "bm25"):
        run = lme["runs"][system]
        rows.append(
            [
                system,
                num(run["turn"]["1"]["recall_any"]),
                num(run["turn"]["10"]["recall_any"]),
                num(run["session"]["5"]["recall_any"]),
            ]
        )
    lines += table(["system", "turn any@1", "turn any@10", "session any@5"], rows)
    return lines


# ---------------------------------------------------------------- states and updates


def updates_section() -> list[str]:
    updates = load("bench_updates.json")
    lines = [
        "## Knowledge updates: the latest statement first?",
        "",
        produced_by(updates["command"]) + " LongMemEval_S dev questions whose evidence spans "
        "sessions of two or more dates (those asking for the earlier value excluded by a list "
        "fixed before any run). `latest_first@10`: the first evidence turn in the top 10 comes "
        "from the latest evidence session. Constants were chosen on the choose part.",
        "",
    ]
    rows = []
    for part, data in updates["parts"].items():
        first = data["latest_first@10"]
        agent = next(v for k, v in data.items() if k.startswith("agent path"))
        rows.append(
            [
                part,
                data["n"],
                num(first["ramem"]),
                num(first["content"]),
                num(first["no-supersession"]),
                num(first["no-restate"]),
                interval(*first["ramem - content"]),
                num(agent["latest_first@10"]),
            ]
        )
    lines += table(
        [
            "part",
            "questions",
            "RaMem",
            "content-only",
            "no supersession",
            "no restated value",
            "RaMem minus content-only",
            "through the agent",
        ],
        rows,
    )
    lines += states_section()
    return lines


def states_section() -> list[str]:
    """The states benches: the fixed phrasings, the fresh ones, the look-alikes, the events."""
    states = load("bench_states.json")
    lines = [
        "",
        "## States said in other words",
        "",
        produced_by(states["command"]) + " 220 fixed scenarios (job, home, partner, trip, ...), "
        "replayed live; the later statements mostly avoid the kind's words. `now_leads`: the "
        "latest statement of the state first among its statements; `past_leads`: the one then "
        "held; `labelled`: every replaced statement shown carries a superseded label (shown only "
        "where such labels are right 95 times in 100: `ramem_core/replacement.py`); "
        "`held_true`: no other statement is told it held at the asked time (through it or during "
        "part of it). The fresh set (`benchmarks/data/fresh/changes.json`, 130 scenarios written "
        "after the models were fixed) is reported whole; the fixed set's report half (odd ids).",
        "",
    ]
    rows = []
    sets = [("fixed, report half", states, "report")]
    if (RESULTS / "bench_states_fresh.json").exists():
        sets.append(("fresh, all", load("bench_states_fresh.json"), "all"))
    for name, data, part in sets:
        for run, entry in data["runs"].items():
            cell = entry["table"][part]
            rows.append(
                [
                    name,
                    run,
                    *(num(cell[m]) for m in ("now_leads", "past_leads", "labelled", "held_true")),
                ]
            )
    lines += table(["set", "run", "now_leads", "past_leads", "labelled", "held_true"], rows)
    looks = [
        (name, load(file))
        for name, file in (
            ("fixed, report half", "bench_unchanged.json"),
            ("fresh, all", "bench_unchanged_fresh.json"),
        )
        if (RESULTS / file).exists()
    ]
    if looks:
        lines += [
            "",
            "Look-alikes that replace nothing (`python benchmarks/bench_unchanged.py`, and "
            "`--phrasings benchmarks/data/fresh/lookalikes.json`): `false_label`, a statement of "
            "the scenario labelled superseded (every label is false there); `leads`, the answer "
            "first. Per kind of look-alike on the fresh set.",
            "",
        ]
        rows = []
        for name, data in looks:
            groups = data["runs"]["ramem"]["table"]
            part = "report" if name.startswith("fixed") else "all"
            chosen = [part, *sorted(g for g in groups if g.startswith("lookalike "))]
            for group in chosen:
                cell = groups[group]
                rows.append([name, group, cell["n"], num(cell["false_label"]), num(cell["leads"])])
        lines += table(["set", "group", "n", "false_label", "leads"], rows)
    if (RESULTS / "bench_events.json").exists():
        events = load("bench_events.json")
        lines += [
            "",
            produced_by(events["command"]) + " 110 one-off events (a day out, a meal, a match), "
            "then a question about a later window: `event_held`, the event told it held during "
            "that window; `window_leads`, what was done in the window first.",
            "",
        ]
        rows = [
            [run, *(num(entry["table"][m]) for m in ("event_held", "event_first", "window_leads"))]
            for run, entry in events["runs"].items()
        ]
        lines += table(["run", "event_held", "event_first", "window_leads"], rows)
    if (RESULTS / "bench_anchor.json").exists():
        anchor = load("bench_anchor.json")
        measures = ("grounded", "within_leads", "anchor_first", "anchor_labelled", "anchor_within")
        lines += [
            "",
            produced_by(anchor["command"]) + " 60 questions about what happened after (40) or "
            "before (20) an event X the user told of: `grounded`, the relation found X's "
            "message; `within_leads`, a message on the asked side of X first; `anchor_first`, "
            "X first; `anchor_labelled`, X shown as the anchor; `anchor_within`, X told it lies "
            "within the relation (each over all 60, the last two where X is shown).",
            "",
        ]
        rows = [
            [run, *(num(entry["table"]["all"][m]) for m in measures)]
            for run, entry in anchor["runs"].items()
        ]
        lines += table(["run", *measures], rows)
    return lines


# ---------------------------------------------------------------- the adapters


def store_section() -> list[str]:
    store = load("bench_store.json")
    lines = [
        "## Through the LangGraph store",
        "",
        produced_by(store["command"]) + " LoCoMo dev: each turn `put` as one item, each "
        "question asked with `store.search(query=...)`; LangGraph's `InMemoryStore` with the "
        'same embedder, content `"speaker: text"`.',
        "",
    ]
    rows = []
    for group, data in store["groups"].items():
        means = data["means"]
        rows.append(
            [
                group,
                data["questions"],
                *(
                    f"{num(means[s]['recall_10'])} / {num(means[s]['d_at_1'])}"
                    for s in ("ramem_store", "ramem", "in_memory_store")
                ),
            ]
        )
    lines += table(
        ["questions", "n", "RaMemStore R@10 / D@1", "RaMem", "InMemoryStore"],
        rows,
    )
    paired = store["groups"]["all"]["paired"]
    cost = store["cost"]
    lines += [
        "",
        *table(
            ["all 760", "RaMemStore minus InMemoryStore", "RaMemStore minus RaMem"],
            [
                [
                    metric,
                    _paired(paired[f"ramem_store minus in_memory_store {key}"]),
                    _paired(paired[f"ramem_store minus ramem {key}"]),
                ]
                for metric, key in (("Recall@10", "recall_10"), ("D@1", "d_at_1"))
            ],
        ),
        "",
        *table(
            ["cost", "store", "core", "ratio"],
            [
                [
                    "`put` / `add_turn` p50 ms",
                    num(cost["put_p50_ms"], 1),
                    num(cost["add_turn_p50_ms"], 1),
                    num(cost["put_over_add_turn_p50"], 2),
                ],
                [
                    "`search` / `recall` p95 ms",
                    num(cost["search_p95_ms"], 1),
                    num(cost["recall_p95_ms"], 1),
                    num(cost["search_over_recall_p95"], 2),
                ],
            ],
        ),
    ]
    return lines


def agent_section() -> list[str]:
    agent = load("bench_agent_path.json")
    lines = [
        "## Through the agent",
        "",
        produced_by(agent["command"]) + " Each conversation is replayed turn by turn with "
        "`add_turn`; every question goes through `create_agent` with `RaMemMiddleware` and a "
        "scripted model that restates the two memories it was shown (a wrong date in every "
        "fifth reply); the exchange is recorded, and every question is asked again (echo). "
        "`recorded at rank 1`: a recorded question or reply ranked first.",
        "",
    ]
    runs = (
        ("bulk", "bulk ingest"),
        ("live", "live replay (`add_turn`)"),
        ("echo default", "after echo"),
        ("echo derived_yield off", "after echo, `derived_yield=False`"),
    )
    groups = agent["groups"]
    locomo, lme = groups["locomo"], groups["longmemeval"]
    rows = []
    for key, label in runs:
        a, b = locomo["table"][key], lme["table"][key]
        rows.append(
            [
                label,
                num(a[locomo["recall"]]),
                num(a["d_at_1"]),
                num(a["derived_at_1"]),
                num(b[lme["recall"]]),
                num(b["d_at_1"]),
                num(b["derived_at_1"]),
            ]
        )
    lines += table(
        [
            "",
            f"LoCoMo ({locomo['questions']}) R@10",
            "D@1",
            "recorded at rank 1",
            f"LongMemEval_S ({lme['questions']}) turn any@10",
            "D@1",
            "recorded at rank 1",
        ],
        rows,
    )
    clock = load("agent_clock_replay.json")
    same = ", ".join(
        f"{part} {data['questions']} questions: {num(data['same_as_recall'])}"
        for part, data in clock.items()
        if part != "command"
    )
    lines += [
        "",
        f"The clock set to each question's own date, the model saw exactly `recall(at=...)`: "
        f"{same} (`{clock['command']}`).",
    ]
    return lines


def scores_section() -> list[str]:
    scores = load("score_calibration.json")
    lines = [
        "## LlamaIndex node scores",
        "",
        produced_by(scores["command"]) + " What `SimilarityPostprocessor(similarity_cutoff=0.5)` "
        f"keeps of RaMem's top 10 on LoCoMo dev's report part ({scores['nodes']['report']} nodes, "
        f"{scores['evidence_share']['report']:.1%} of them evidence); fitted on the choose part.",
        "",
    ]
    rows = [
        [name, num(cell["evidence_kept"]), num(cell["rest_dropped"])]
        for name, cell in scores["cutoff_0.5_report"].items()
    ]
    lines += table(["node score", "evidence nodes kept", "other nodes dropped"], rows)
    return lines


# ---------------------------------------------------------------- cost


def cost_section() -> list[str]:
    core = load("bench_core.json")
    ingest = core["ingest"]
    lines = [
        "## Recall and ingest cost",
        "",
        produced_by("python benchmarks/bench_core.py")
        + f" On {core['machine']['cpus']} CPU cores. Ingest of {ingest['source']}: "
        f"{ingest['ingest_turns_per_s']:.0f} turns/s (embedding alone "
        f"{ingest['embed_texts_per_s']:.0f} texts/s).",
        "",
    ]
    rows = [
        [
            f"{r['memories']:,}",
            num(r["ramem_p50_ms"], 1),
            num(r["ramem_p95_ms"], 1),
            num(r["content_p50_ms"], 1),
            num(r["content_p95_ms"], 1),
            num(r["ratio_p95"], 2),
        ]
        for r in core["recall"]
    ]
    lines += table(
        ["memories", "RaMem p50 ms", "p95 ms", "content-only p50 ms", "p95 ms", "p95 ratio"], rows
    )

    write = load("bench_write_path.json")
    lines += [
        "",
        "### RaMem's own time per `add_turn`",
        "",
        produced_by(write["command"]) + f" Wall time minus the store's and the embedder's; "
        f"p50 and p95 of {write['timed_turns']} turns, the middle of {write['repeats']} runs.",
        "",
    ]
    rows = [
        [
            r["row"],
            num(r["own_ms_p50"], 2),
            num(r["own_ms_p95"], 2),
            num(r["ratio_to_turn_10"], 2),
        ]
        for r in write["rows"]
    ]
    lines += table(["where", "p50 ms", "p95 ms", "p50 / turn 10"], rows)

    snap = load("snapshot_bytes.json")
    lines += [
        "",
        "### Snapshots and snapshot files",
        "",
        produced_by(snap["command"]) + f" {snap['memories']:,} memories (LoCoMo dev).",
        "",
        *table(
            ["", "per memory or time"],
            [
                ["vectors", f"{snap['vector_bytes_per_memory']:,.0f} bytes"],
                [
                    "in-memory snapshot besides vectors",
                    f"{snap['built_bytes_per_memory_besides_vectors']:,.0f} bytes",
                ],
                ["snapshot file", f"{snap['file_bytes_per_memory']:,.0f} bytes"],
                ["build from the store's records", f"{snap['build_ms']:.0f} ms"],
                ["load a snapshot file", f"{snap['file_load_ms']:.0f} ms"],
            ],
        ),
    ]
    return lines


def fleet_section() -> list[str]:
    fleet = load("bench_fleet.json")
    ingest = fleet["ingest"]
    server, local = fleet["add_turn"]["server"], fleet["add_turn"]["local"]

    def ms(key: str) -> str:
        cell = fleet[key]
        return f"{num(cell['p50'], 1)} / {num(cell['p95'], 1)}"

    lines = [
        "## A fleet: one Chroma server, several workers",
        "",
        produced_by("python benchmarks/bench_fleet.py")
        + f" `chroma run`, {fleet['users']} users each holding one LoCoMo dev conversation "
        f"({ingest['memories']:,} memories), {fleet['workers']} worker processes on "
        f"{fleet['cpus']} CPU cores.",
        "",
        *table(
            ["", "measured"],
            [
                ["first recall, rebuilt from Chroma (p50 / p95 ms)", ms("first_recall_rebuilt_ms")],
                ["a bare get of the same records (p50 / p95 ms)", ms("bare_get_ms")],
                [
                    "first recall, shared snapshot file (p50 / p95 ms)",
                    ms("first_recall_from_file_ms"),
                ],
                [
                    "random-user recall, default `cache_bytes` (p50 / p95 ms)",
                    ms("random_user_recall_ms"),
                ],
                ["warm recall (p50 / p95 ms)", ms("warm_recall_ms")],
                ["worker RSS (MB)", ", ".join(str(r) for r in fleet["worker_rss_mb"])],
                ["snapshot bytes per memory", f"{fleet['bytes_per_memory']:,}"],
                [
                    "`add_turn` through the server, p50 ms (over embedding + a bare upsert)",
                    f"{num(server['add_turn_p50_ms'], 1)} "
                    f"({num(server['over_embed_plus_upsert_copy'], 2)}x)",
                ],
                [
                    "`add_turn` on a local directory, p50 ms (over embedding + a bare upsert)",
                    f"{num(local['add_turn_p50_ms'], 1)} "
                    f"({num(local['over_embed_plus_upsert_copy'], 2)}x)",
                ],
                [
                    "ingest through the server, over the embedder alone",
                    num(ingest["ingest_over_embedder"], 2),
                ],
            ],
        ),
    ]
    faults = load("bench_faults.json")
    ambiguous, hostile = faults["ambiguous_writes"], faults["hostile_files"]
    lines += [
        "",
        "### Faults",
        "",
        produced_by(faults["command"]),
        "",
        *table(
            ["fault", "result"],
            [
                [
                    f"{ambiguous['turns']} turns written through injected failures",
                    f"lost {ambiguous['lost']}, duplicated {ambiguous['duplicated']}, "
                    f"hidden {ambiguous['hidden']}",
                ],
                [
                    f"{faults['killed_split_writes']['kills']} split writes killed",
                    f"hidden {faults['killed_split_writes']['hidden']}",
                ],
                [
                    f"{faults['straddled_deletes']['rounds']} deletes straddling a load",
                    f"resurrected {faults['straddled_deletes']['resurrected']}",
                ],
                [
                    "hostile snapshot files",
                    f"{hostile['refused']} of {hostile['tried']} refused",
                ],
            ],
        ),
    ]
    return lines


SECTIONS: tuple[Callable[[], list[str]], ...] = (
    audit_section,
    eval_section,
    updates_section,
    store_section,
    agent_section,
    scores_section,
    cost_section,
    fleet_section,
)


def page() -> str:
    """The whole results page."""
    lines = [
        "# Results",
        "",
        "<!-- Generated by `python benchmarks/results_page.py` from benchmarks/results/; "
        "do not edit by hand. -->",
        "",
        "Every measurement RaMem quotes, read from the JSON files its benchmarks write "
        "(benchmarks/results/ in the repository). [Evaluation](evaluation.md) says how to "
        "run them and how the figures are computed. Sections after the first were measured "
        "with the pipeline of their day: compare the rows of one table with each other, and "
        "quote the cross-validated figures.",
    ]
    for section in SECTIONS:
        lines += ["", *section()]
    return "\n".join(lines) + "\n"


def readme(text: str) -> str:
    """``text`` (the README) with its headline table regenerated between the markers."""
    before, rest = text.split(HEADLINE_START, 1)
    _, after = rest.split(HEADLINE_END, 1)
    return "\n".join([before + HEADLINE_START, *headline(), HEADLINE_END + after])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when a file is stale"
    )
    args = parser.parse_args(argv)
    wanted = {PAGE: page(), README: readme(README.read_text(encoding="utf-8"))}
    stale = [
        path
        for path, text in wanted.items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
    if args.check:
        for path in stale:
            print(f"stale: {path.relative_to(ROOT)} (run python benchmarks/results_page.py)")
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path], encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
