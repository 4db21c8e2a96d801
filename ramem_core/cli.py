"""The ``ramem`` command: ingest conversations, ask questions, see recall frames, run the demo."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from ramem_core.errors import InvalidInputError, NamespaceNotFoundError, RaMemError
from ramem_core.temporal import describe, parse_timestamp
from ramem_core.types import DEFAULT_K
from ramem_core.validation import check_moment, check_query

if TYPE_CHECKING:
    from rich.console import Console

    from ramem_core.llm import MeteredLLM
    from ramem_core.memory import RaMem
    from ramem_core.types import Evidence, RecallFrame


class RefusedError(Exception):
    """A command that cannot do what was asked (nothing matched, nothing stored): one
    ``error:`` line on stderr and ``status``."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def _open(args: argparse.Namespace, *, reading: bool = False, **kwargs: object) -> RaMem:
    """The memory the global options name; ``reading``: a command that only reads (or
    deletes), which never creates a memory directory."""
    from ramem_core.memory import RaMem, default_path
    from ramem_core.store.chroma import check_namespace

    check_namespace(args.namespace)  # the input first, then where it is
    if reading and args.host is None:
        path = Path(args.path or default_path())
        # a file is left to RaMem.open, which says it is not a memory directory
        if not path.is_file() and not (path / "chroma.sqlite3").is_file():
            msg = f"no memory at {path}: `ramem ingest FILE` (or --path DIR) creates one"
            raise RefusedError(msg)

    if args.host is not None and args.timeout is not None:
        kwargs["timeout"] = args.timeout
    return RaMem.open(args.path, host=args.host, port=args.port, namespace=args.namespace, **kwargs)  # type: ignore[arg-type]


def _at(value: str | None) -> datetime | None:
    if value is None:
        return None
    parsed = parse_timestamp(value)
    if parsed is None:
        msg = f"cannot parse --at {value!r}; use e.g. 2023-08-30 or '2023/05/30 (Tue) 23:40'"
        raise InvalidInputError(msg)
    return check_moment(parsed, "--at")


def print_frame(console: Console, frame: RecallFrame) -> None:
    """Show a recall frame: the need, each constraint and whether it is grounded."""
    console.print(f"[bold]need[/bold]: {escape(frame.need)}")
    if frame.now:
        console.print(f"[bold]now[/bold]: {frame.now.day} {frame.now:%B %Y, %H:%M}")
    for t in frame.times:
        mark = "[green]grounded[/green]" if t.grounded else "[yellow]not used[/yellow]"
        window = describe(t.window) if t.window else "-"
        console.print(
            f"[bold]time[/bold]: {escape(repr(t.text))} -> {window} ({mark}: {escape(t.reason)})"
        )
    if frame.participants:
        console.print(f"[bold]participants[/bold]: {escape(', '.join(frame.participants))}")
    if not frame.is_grounded:
        console.print("[dim]no grounded constraint: content retrieval only[/dim]")


def print_evidence(console: Console, evidence: Sequence[Evidence], title: str = "") -> None:
    """Show evidence as a table with its coordinates and why it is valid."""
    from rich.table import Table

    from ramem_core.synthesis import coordinates, resolved_content

    table = Table(title=title or None, show_lines=True, expand=True)
    for name, ratio in (
        ("#", 1),
        ("said", 4),
        ("event", 4),
        ("who", 3),
        ("memory", 12),
        ("why valid", 6),
    ):
        table.add_column(name, ratio=ratio, overflow="fold")
    for item in evidence:
        coords = coordinates(item.unit, said=item.said)
        table.add_row(
            str(item.rank),
            f"{coords.get('said', '?')}\n[dim]{escape(item.unit.context.session_id)}[/dim]",
            coords.get("event", ""),
            escape(coords.get("who", "")),
            escape(resolved_content(item.unit)),
            escape("\n".join(item.satisfied)) or "[dim]content match[/dim]",
        )
    console.print(table)


def cmd_ingest(args: argparse.Namespace, console: Console) -> int:
    from rich.console import Console
    from rich.progress import Progress

    from ramem_core.loaders import load_conversations

    conversations = load_conversations(args.file, args.format)
    anchorer = None
    if args.llm:
        from ramem_core.anchoring import LLMAnchorer

        anchorer = LLMAnchorer(_metered(args))
    memory = _open(args, anchorer=anchorer)
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("embedding memories", total=None)
        report = memory.add_conversations(
            conversations,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    console.print(
        f"ingested {report.conversations} conversation(s), {report.sessions} sessions, "
        f"{report.turns} turns -> {report.units} memory units ({report.new_units} new) "
        f"in namespace {memory.namespace!r}"
    )
    if anchorer is not None:
        console.print(f"LLM anchoring: {anchorer.report.as_dict()}, {anchorer.llm.usage.as_dict()}")
    return 0


def cmd_ask(args: argparse.Namespace, console: Console) -> int:
    from ramem_core.retrieval import CONTENT_ONLY, RetrievalConfig

    config = RetrievalConfig() if args.system == "ramem" else CONTENT_ONLY
    inducer, llm = None, None
    if args.llm:
        from ramem_core.frames import LLMFrameInducer

        llm = _metered(args)
        inducer = LLMFrameInducer(llm)
    at = _at(args.at)  # the arguments are checked before the store is opened
    check_query(args.question)
    memory = _open(args, reading=True, config=config, inducer=inducer)
    _known_namespace(memory)
    found = memory.recall(args.question, k=args.k, at=at)
    frame = found.frame
    console.rule(escape(args.question))
    print_frame(console, frame)
    print_evidence(console, found)
    block = memory.format(found, max_tokens=args.max_tokens)
    if args.prompt:
        console.print(block.text, markup=False)
    if llm is not None:
        from ramem_core.synthesis import answer

        reply = answer(args.question, block, llm, frame.now).text
        console.print(f"[bold]answer[/bold]: {escape(reply)}")
    return 0


def _known_namespace(memory: Any) -> None:
    """Refuse when the namespace asked about holds no memories (never created, or emptied):
    the API reads it as empty, the command line says why nothing comes back."""
    exists = memory.has_namespace(memory.namespace)
    if exists and memory.count():
        return
    state = "is empty" if exists else "does not exist"
    raise RefusedError(
        f"namespace {memory.namespace!r} {state}: it holds no memories; "
        "ingest into it first (`ramem namespaces` lists the existing ones)"
    )


def cmd_frame(args: argparse.Namespace, console: Console) -> int:
    at = _at(args.at)
    check_query(args.question)
    memory = _open(args, reading=True)
    _known_namespace(memory)
    frame = memory.frame(args.question, at=at)
    print_frame(console, frame)
    return 0


def cmd_namespaces(args: argparse.Namespace, console: Console) -> int:
    memory = _open(args, reading=True)
    names = memory.namespaces()
    if not names:
        console.print("no namespaces yet: `ramem ingest FILE` stores a conversation")
    for ns in names:
        console.print(f"{ns}: {memory.count(namespace=ns)} memories")
    return 0


def _row(unit: Any) -> dict[str, Any]:
    """One memory as ``list`` and ``show`` print it (``--json``: these fields)."""
    from ramem_core.synthesis import coordinates
    from ramem_core.transfer import said_at

    said = said_at(unit)
    coords = coordinates(unit)
    return {
        "id": unit.id,
        "said_at": said.isoformat(timespec="minutes") if said else None,
        "event": coords.get("event"),
        "kind": unit.context.kind.value,
        "conversation_id": unit.context.conversation_id,
        "session_id": unit.context.session_id,
        "speaker": unit.context.speaker,
        "content": unit.content,
    }


def cmd_list(args: argparse.Namespace, console: Console) -> int:
    import json

    since, until = _at(args.since), _at(args.until)
    memory = _open(args, reading=True)
    _known_namespace(memory)
    units = memory.transfer.page(
        conversation_id=args.conversation,
        session_id=args.session,
        kind=args.kind,
        since=since,
        until=until,
        limit=args.limit,
        after=args.after,
    )
    if not units:
        raise RefusedError(f"no memory of namespace {memory.namespace!r} matches the selection")
    out = sys.stdout
    for unit in units:
        row = _row(unit)
        if args.json:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            text = " ".join(unit.content.split())
            text = text if len(text) <= 100 else text[:99] + "…"
            said, event = row["said_at"] or "?", row["event"] or "-"
            out.write(f"{unit.id}  {said}  {event}  {row['kind']}  {text}\n")
    if len(units) == args.limit and not args.json:
        sys.stderr.write(f"more: --after {units[-1].id}\n")
    return 0


def cmd_show(args: argparse.Namespace, console: Console) -> int:
    import json

    from ramem_core.store.codec import to_metadata

    memory = _open(args, reading=True)
    unit = memory.transfer.get(args.id)
    if unit is None:
        raise RefusedError(f"namespace {memory.namespace!r} holds no memory with id {args.id!r}")
    whole = {**_row(unit), "context": to_metadata(unit)}
    if args.json:
        sys.stdout.write(json.dumps(whole, ensure_ascii=False, indent=1) + "\n")
        return 0
    for key, value in whole.items():
        if key != "context":
            sys.stdout.write(f"{key}: {value}\n")
    for key, value in whole["context"].items():
        sys.stdout.write(f"  {key}: {value}\n")
    return 0


def cmd_export(args: argparse.Namespace, console: Console) -> int:
    memory = _open(args, reading=True)
    _known_namespace(memory)
    n = memory.transfer.export(args.out, vectors=args.vectors)
    console.print(f"exported {n} memories of namespace {memory.namespace!r} to {args.out}")
    return 0


def cmd_import(args: argparse.Namespace, console: Console) -> int:
    if not Path(args.file).is_file():
        raise InvalidInputError(f"cannot read file {args.file}: no such file")
    memory = _open(args)
    report = memory.transfer.import_from(args.file)
    console.print(
        f"imported {report.units} memories ({report.new_units} new) into namespace "
        f"{memory.namespace!r}"
    )
    return 0


def cmd_reindex(args: argparse.Namespace, console: Console) -> int:
    import time

    memory = _open(args, reading=True)
    _known_namespace(memory)
    console.print(f"rebuilding the snapshot of namespace {memory.namespace!r} from the store ...")
    began = time.monotonic()
    count, written = memory.snapshots.reindex(memory.namespace)
    where = "its file written" if written else "no file kept for it"
    console.print(
        f"rebuilt the snapshot of {count} memories in {time.monotonic() - began:.1f} s ({where})"
    )
    return 0


def cmd_explain(args: argparse.Namespace, console: Console) -> int:
    at = _at(args.at)
    check_query(args.question)
    from ramem_core import explain

    memory = _open(args, reading=True)
    _known_namespace(memory)
    html = explain.page(memory, args.question, k=args.k, at=at)
    Path(args.out).write_text(html, encoding="utf-8")
    console.print(f"wrote {args.out}: open it in a browser (it loads nothing from the network)")
    return 0


def _tokens(args: argparse.Namespace) -> dict[str, str]:
    """token -> namespace: ``--token`` (or ``RAMEM_MCP_TOKEN``) for ``--namespace``, and the
    JSON object of ``--tokens FILE`` for tokens bound to namespaces of their own."""
    import json
    import os

    from ramem_core.store.chroma import check_namespace

    tokens: dict[str, str] = {}
    if args.tokens:
        try:
            bound = json.loads(Path(args.tokens).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidInputError(f"--tokens {args.tokens}: {exc}") from exc
        if not isinstance(bound, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in bound.items()
        ):
            msg = f'--tokens {args.tokens}: expected a JSON object {{"TOKEN": "NAMESPACE"}}'
            raise InvalidInputError(msg)
        tokens.update({k: check_namespace(v) for k, v in bound.items()})
    token = args.token or os.environ.get("RAMEM_MCP_TOKEN")
    if token:
        tokens[token] = args.namespace
    return tokens


def cmd_mcp(args: argparse.Namespace, console: Console) -> int:
    try:
        from ramem_mcp import serve
        from ramem_mcp.server import Tools
        from ramem_mcp.serving import BANNER, Address, check_tokens, host_block
        from ramem_mcp.sharing import Shared
    except ImportError as exc:
        raise RefusedError(str(exc), status=2) from exc
    import json

    from ramem_core.store.chroma import check_namespace
    from ramem_core.store.opening import default_path

    if args.print_config:
        check_namespace(args.namespace)
        path = None if args.host is not None else Path(args.path or default_path())
        print(json.dumps(host_block(path, args.namespace), indent=2))
        return 0
    address = Address.parse(args.http) if args.http else None
    tokens = _tokens(args)
    if address is not None:
        check_tokens(address, tokens)  # before the store is opened
    elif args.token or args.tokens:
        raise InvalidInputError("--token and --tokens are for --http: over stdio the host runs it")
    served = tokens if address is not None else None
    if args.host is not None:  # a Chroma server: every process opens it for itself
        with _open(args) as memory:
            serve(memory, http=address, tokens=served)
        return 0
    check_namespace(args.namespace)
    path = Path(args.path or default_path()).absolute()
    if path.is_file():
        raise RefusedError(f"--path {path} is a file, not a memory directory", status=2)
    if address is None and sys.stdin.isatty():
        print(BANNER, file=sys.stderr, flush=True)
    # opened (or its owner found) in the background once the host has its initialize answer
    shared = Shared(path, lambda: _open(args), lambda memory: Tools(memory, memory.namespace))
    try:
        serve(shared, namespace=args.namespace, http=address, tokens=served)
    finally:
        shared.close()
    return 0


def cmd_delete(args: argparse.Namespace, console: Console) -> int:
    targets = [bool(args.ids), bool(args.session or args.conversation), args.all]
    if sum(targets) != 1:
        msg = "delete needs memory ids, --session / --conversation, or --all (one of them)"
        raise RefusedError(msg, 2)
    memory = _open(args, reading=True)
    _known_namespace(memory)
    if args.all:
        if not args.yes and not _confirmed(
            f"drop namespace {memory.namespace!r} and its {memory.count()} memories? [y/N] "
        ):
            raise RefusedError("nothing deleted (answer y, or pass --yes to drop without asking)")
        memory.drop()
        console.print(f"dropped namespace {memory.namespace!r}")
        return 0
    if args.ids:
        n = memory.delete(unit_ids=list(args.ids))
        what = f"id {', '.join(args.ids)}"
    else:
        n = memory.delete(session_id=args.session, conversation_id=args.conversation)
        what = " and ".join(
            f"{name} {value!r}"
            for name, value in (("session", args.session), ("conversation", args.conversation))
            if value
        )
    if n == 0:
        msg = f"no memory of namespace {memory.namespace!r} matched {what}: none deleted"
        raise RefusedError(msg)
    console.print(f"deleted {n} memories")
    return 0


def _confirmed(question: str) -> bool:
    """Ask on stderr and read the answer from stdin (a terminal or a pipe: `echo y |`); the
    end of input means no."""
    sys.stderr.write(question)
    sys.stderr.flush()
    try:
        line = sys.stdin.readline() if sys.stdin else ""
    except (OSError, ValueError):
        return False
    return line.strip().lower() in ("y", "yes")


def cmd_demo(args: argparse.Namespace, console: Console) -> int:
    """Ingest the shipped two-friends conversation and compare RaMem with content retrieval."""
    from ramem_core.loaders import demo_conversation
    from ramem_core.memory import RaMem
    from ramem_core.retrieval import CONTENT_ONLY

    given = [name for name in ("path", "host", "timeout") if getattr(args, name)]
    if given:
        named = ", ".join(f"--{name}" for name in given)
        msg = f"the demo always runs in a temporary local store: drop {named}"
        raise RefusedError(msg, 2)
    conversation, questions = demo_conversation()
    with tempfile.TemporaryDirectory(prefix="ramem-demo-") as tmp:
        memory = RaMem.open(Path(tmp), namespace="demo")
        content = RaMem(memory.store, namespace="demo", config=CONTENT_ONLY)
        report = memory.add_conversation(conversation)
        console.print(
            f"[bold]RaMem demo[/bold]: {report.sessions} sessions between Alice and Ben "
            f"(Feb-Nov 2023, two trips, two doctor visits) -> {report.units} situated memories"
        )
        hits = {"ramem": 0, "content": 0}
        for q in questions:
            expected = q["expected_session"]
            console.rule(f"[bold]{q['question']}[/bold]  (answer in session {expected})")
            print_frame(console, memory.frame(q["question"]))
            for name, system in (("ramem", memory), ("content", content)):
                evidence = system.recall(q["question"], k=args.k)
                ok = bool(evidence) and evidence[0].unit.context.session_id == expected
                hits[name] += ok
                label = "RaMem (valid first)" if name == "ramem" else "content-only (dense+BM25)"
                verdict = "[green]right episode[/green]" if ok else "[red]wrong episode[/red]"
                print_evidence(console, evidence, f"{label}: top-1 {verdict}")
        n = len(questions)
        console.rule("summary")
        console.print(
            f"top-1 from the right episode: RaMem {hits['ramem']}/{n}, "
            f"content-only {hits['content']}/{n}"
        )
    return 0


def _metered(args: argparse.Namespace) -> MeteredLLM:
    """The ``--llm`` model, counted and cached next to the memory."""
    from ramem_core.llm import MeteredLLM
    from ramem_core.memory import default_path

    cache = Path(args.path or default_path()) / "llm_cache.sqlite"
    return MeteredLLM(_llm(args.llm), model_name=args.llm, cache_path=cache)  # type: ignore[arg-type]


def _llm(spec: str | None) -> object | None:
    """The ``--llm`` model named ``provider:model``, from an installed model provider
    (``ramem[langchain]`` registers one; the core imports no framework)."""
    if spec is None:
        return None
    from ramem_core.llm import load_llm

    return load_llm(spec)


def cmd_eval(args: argparse.Namespace, console: Console) -> int:
    """Evaluate on LoCoMo or LongMemEval and write questions.jsonl, summary.json, report.md."""
    from rich.console import Console
    from rich.progress import Progress

    from ramem_core.evaluation.harness import (
        LME_KS,
        EvalOptions,
        evaluate_locomo,
        evaluate_longmemeval,
    )
    from ramem_core.evaluation.report import write_report

    default_ks = "5,10,20" if args.benchmark == "locomo" else ",".join(map(str, LME_KS))
    options = EvalOptions(
        systems=tuple(s for s in args.system.split(",") if s),
        ks=_cutoffs(args.k or default_ks),
        ablations=tuple(a for a in (args.ablate or "").split(",") if a),
        limit=args.limit,
        llm=_llm(args.llm),  # type: ignore[arg-type]
        llm_stages=args.llm_stages,
        decompose=args.decompose,
        model_name=args.llm or "llm",
    )
    run = evaluate_locomo if args.benchmark == "locomo" else evaluate_longmemeval
    # the bar appears with the first question, once every file was read and checked
    bar = Progress(console=Console(stderr=True))
    task = bar.add_task(f"{args.benchmark}: questions", total=None)

    def progress(done: int, total: int) -> None:
        if not bar.live.is_started:
            bar.start()
        bar.update(task, completed=done, total=total)

    try:
        summary = run(args.files, args.out, options, progress=progress)
    finally:
        if bar.live.is_started:
            bar.stop()
    command = (
        " ".join(["ramem", "eval", *sys.argv[sys.argv.index("eval") + 1 :]])
        if ("eval" in sys.argv)
        else ""
    )
    report = write_report(summary, args.out, command)
    console.print(report.read_text(encoding="utf-8").split("## Plots")[0], markup=False)
    console.print(f"wrote {report} and summary.json, questions.jsonl in {args.out}", markup=False)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ramem`` command."""
    parser = argparse.ArgumentParser(
        prog="ramem", description=__doc__, parents=[_global_options(argparse.SUPPRESS)]
    )
    parser.set_defaults(path=None, host=None, port=8000, namespace="default", timeout=None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # the global options are accepted after the command too: `ramem ask Q --namespace alice`
    common = [_global_options(argparse.SUPPRESS)]
    for add in (_ingest_command, _question_commands, _memory_commands, _mcp_command):
        add(sub, common)
    for add in (_eval_command, _demo_command):
        add(sub, common)
    return parser


def _ingest_command(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    """``ramem ingest``."""
    p = sub.add_parser("ingest", help="add conversations from a JSON file", parents=common)
    p.add_argument("file", help="a JSON file in RaMem's, LoCoMo's or LongMemEval's format")
    p.add_argument(
        "--format",
        default="auto",
        choices=["auto", "ramem", "locomo", "longmemeval"],
        help="the file's format (default: detected)",
    )
    p.add_argument("--llm", help="anchor with a chat model (provider:model, via LangChain)")
    p.set_defaults(func=cmd_ingest)


def _question_commands(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    """``ramem ask`` and ``ramem frame``."""
    commands = (
        ("ask", cmd_ask, "recall situated evidence for a question"),
        ("frame", cmd_frame, "show the recall frame of a question"),
    )
    for name, func, text in commands:
        p = sub.add_parser(name, help=text, parents=common)
        p.add_argument("question", help="the question, in quotes")
        p.add_argument("--at", help="the question's own time (default: end of the last session)")
        if name == "ask":
            p.add_argument(
                "--k", type=_positive, default=DEFAULT_K, help=f"memories to show ({DEFAULT_K})"
            )
            p.add_argument(
                "--system",
                choices=["ramem", "content"],
                default="ramem",
                help="ramem (valid first) or content (dense + BM25 only); default ramem",
            )
            p.add_argument("--prompt", action="store_true", help="also print the rendered context")
            p.add_argument(
                "--max-tokens", type=_positive, default=2000, help="token budget of the context"
            )
            p.add_argument("--llm", help="induce the frame and answer with a chat model")
        p.set_defaults(func=func)


def _memory_commands(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    """Seeing, moving and deleting memories: ``namespaces``, ``list``, ``show``, ``export``,
    ``explain``, ``import``, ``delete``."""
    p = sub.add_parser("namespaces", help="list namespaces", parents=common)
    p.set_defaults(func=cmd_namespaces)

    p = sub.add_parser("list", help="the namespace's memories, newest first", parents=common)
    p.add_argument("--conversation", help="only this conversation's")
    p.add_argument("--session", help="only this session's")
    p.add_argument("--kind", choices=["statement", "question", "reply"], help="only this kind")
    p.add_argument("--since", help="said at or after this time (e.g. 2023-08-01)")
    p.add_argument("--until", help="said at or before this time")
    p.add_argument("--limit", type=_positive, default=50, help="memories per page (50)")
    p.add_argument("--after", metavar="ID", help="the page after this memory (the last shown)")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", help="one memory with its full context", parents=common)
    p.add_argument("id", help="the memory's id (as `ramem list` shows)")
    p.add_argument("--json", action="store_true", help="as JSON")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("export", help="write the namespace to a JSON-lines file", parents=common)
    p.add_argument("--out", required=True, metavar="FILE", help="the file to write (.jsonl)")
    p.add_argument("--vectors", action="store_true", help="include the vectors")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser(
        "explain", help="write an HTML page: timeline, recall frame, evidence", parents=common
    )
    p.add_argument("question", help="the question, in quotes")
    p.add_argument("--out", default="ramem-explain.html", help="the page (ramem-explain.html)")
    p.add_argument("--at", help="the question's own time (default: end of the last session)")
    p.add_argument("--k", type=_positive, default=10, help="memories ranked (10)")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser(
        "reindex",
        help="rebuild the namespace's snapshot from the store and write its file",
        parents=common,
    )
    p.set_defaults(func=cmd_reindex)

    p = sub.add_parser("import", help="add the memories of an export", parents=common)
    p.add_argument("file", help="a file written by `ramem export`")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser(
        "delete", help="delete memories by id, session or conversation", parents=common
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="memory ids (as `ramem list` shows)")
    p.add_argument("--session", help="a session id (with --conversation when ids repeat)")
    p.add_argument("--conversation", help="a conversation id (all its sessions)")
    p.add_argument("--all", action="store_true", help="drop the whole namespace (asks first)")
    p.add_argument("--yes", action="store_true", help="with --all: drop without asking")
    p.set_defaults(func=cmd_delete)


def _mcp_command(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    """``ramem mcp``."""
    p = sub.add_parser(
        "mcp", help="serve the namespace as an MCP server (stdio, or --http)", parents=common
    )
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="streamable HTTP at http://HOST:PORT/mcp instead of stdio (a token off loopback)",
    )
    p.add_argument("--token", help="bearer token for --namespace (or set RAMEM_MCP_TOKEN)")
    p.add_argument(
        "--tokens", metavar="FILE", help='JSON {"TOKEN": "NAMESPACE"}: tokens bound to namespaces'
    )
    p.add_argument(
        "--print-config",
        action="store_true",
        help="print the block a host's settings need (absolute paths) and exit",
    )
    p.set_defaults(func=cmd_mcp)


def _eval_command(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    """``ramem eval``."""
    p = sub.add_parser(
        "eval", help="evaluate on LoCoMo or LongMemEval (report with plots)", parents=common
    )
    p.add_argument("benchmark", choices=["locomo", "longmemeval"], help="which benchmark")
    p.add_argument(
        "files",
        nargs="+",
        metavar="PATH",
        help="the benchmark's JSON file(s), evaluated together",
    )
    p.add_argument(
        "--system",
        default="ramem,content,dense,bm25",
        help="comma-separated: ramem, content, dense, bm25",
    )
    p.add_argument("--k", help="cut-offs (default 5,10,20; LongMemEval 1,3,5,10,30,50)")
    p.add_argument(
        "--ablate",
        help="comma-separated: shuffle-context, no-session, no-context-ranking, no-keys, "
        "no-neighbours, no-window, no-speaker, no-when, no-slots, no-fusion, no-supersession, "
        "no-restate, "
        "no-second-round, no-context-synthesis",
    )
    p.add_argument("--limit", type=_positive, help="at most this many questions (smoke runs)")
    p.add_argument("--out", default="results/eval", help="output directory")
    p.add_argument("--llm", help="answer with a chat model, e.g. openai:gpt-4o-mini")
    p.add_argument(
        "--llm-stages",
        action="store_true",
        help="also anchor memories and induce frames with --llm",
    )
    p.add_argument(
        "--decompose",
        action="store_true",
        help="with --llm-stages, split questions about several things into parts",
    )
    p.set_defaults(func=cmd_eval)


def _demo_command(sub: Any, common: list[argparse.ArgumentParser]) -> None:
    """``ramem demo``."""
    p = sub.add_parser(
        "demo",
        help="ingest a shipped conversation and compare with content-only (temporary store)",
        parents=common,
    )
    p.add_argument("--k", type=_positive, default=3, help="memories shown per question (3)")
    p.set_defaults(func=cmd_demo)


def _global_options(default: Any) -> argparse.ArgumentParser:
    """The options every command takes, before or after the command's name."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("memory location")
    group.add_argument(
        "--path",
        default=default,
        help="memory directory (default: $RAMEM_HOME or ~/.local/share/ramem)",
    )
    group.add_argument(
        "--host", default=default, help="use a Chroma server (chroma run) at this host"
    )
    group.add_argument(
        "--port", type=_port, default=default, help="Chroma server port (default 8000)"
    )
    group.add_argument(
        "--timeout",
        type=_seconds,
        default=default,
        help="seconds to wait for a Chroma server to connect and to answer (default 5 and 60)",
    )
    group.add_argument("--namespace", default=default, help="tenant (default: default)")
    return parser


def _seconds(value: str) -> float:
    """An argparse type: a positive, finite number of seconds."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value!r}")
    return seconds


def _port(value: str) -> int:
    """An argparse type: a TCP port."""
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 1-65535, got {value!r}")
    return int(value)


def _positive(value: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        msg = f"expected a whole number of at least 1, got {value!r}"
        raise argparse.ArgumentTypeError(msg)
    return number


def _cutoffs(value: str) -> tuple[int, ...]:
    """``--k 5,10,20`` as whole numbers of at least 1."""
    try:
        ks = tuple(_positive(k) for k in value.split(",") if k.strip())
    except argparse.ArgumentTypeError as exc:
        raise InvalidInputError(f"--k: {exc}") from exc
    if not ks:
        raise InvalidInputError(f"--k: no cut-off in {value!r}")
    return ks


def _error(message: object) -> None:
    """One ``error:`` line on stderr, however long or many-lined the message."""
    sys.stderr.write(f"error: {' '.join(str(message).split())}\n")
    sys.stderr.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ramem`` console script: results on stdout; every error one
    ``error:`` line on stderr and a non-zero status (2 bad input, 1 nothing to act on)."""
    from rich.console import Console

    args = build_parser().parse_args(argv)
    console = Console()
    try:
        return int(args.func(args, console))
    except RefusedError as exc:
        _error(exc)
        return exc.status
    except NamespaceNotFoundError as exc:
        _error(exc)
        return 1
    except (RaMemError, OSError) as exc:  # one clear line, never a traceback
        _error(exc)
        return 2
    except KeyboardInterrupt:
        _error("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
