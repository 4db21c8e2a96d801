"""Every code block of the README and of docs/ is run or checked, so the docs cannot drift from
the code.

- ```python blocks run from a clean temporary directory; the blocks of one page run in order
  in one namespace, so a page may build on its earlier blocks.
- ```bash blocks: every ``ramem ...`` command is parsed by the CLI's own parser (a wrong flag
  fails) and its ``--system`` / ``--ablate`` names are checked against the evaluation harness;
  every ``pip install`` names only extras pyproject.toml declares; every ``python X.py`` script
  exists.
- ```json blocks parse, and a conversation in RaMem's format loads.
- ```text blocks are layout trees: every file and folder they name exists.
- A block right after ``<!-- not run: why -->`` is skipped. Such blocks are counted and must
  stay rare: they need what a test cannot have (a Chroma server at a fixed address).

The results page and the README's headline table must equal what
``benchmarks/results_page.py`` writes from the JSON results now.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
LANGUAGES = {"python", "bash", "json", "text"}
MAX_NOT_RUN = 2
NOT_RUN = re.compile(r"^<!-- not run: (\S.*?) -->$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int
    language: str
    code: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, in order (indented fences in lists included)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        indent, language = fence.groups()
        start, body = i, []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i].removeprefix(indent))
            i += 1
        marker = NOT_RUN.match(lines[start - 1].strip()) if start else None
        why = marker.group(1) if marker else None
        found.append(Block(page, start + 1, language, "\n".join(body) + "\n", why))
        i += 1
    return found


def of(language: str) -> list[Block]:
    return [b for page in PAGES for b in blocks(page) if b.language == language]


def pages_with(language: str) -> list[Path]:
    return [page for page in PAGES if any(b.language == language for b in blocks(page))]


def _ids(pages: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in pages]


# ---------------------------------------------------------------- every block is checked


def test_every_block_names_a_language_the_tests_check() -> None:
    unchecked = [f"{b.where}: ```{b.language}" for p in PAGES for b in blocks(p)]
    assert [u for u in unchecked if u.split("```")[1] not in LANGUAGES] == []


def test_blocks_that_do_not_run_are_rare_and_say_why() -> None:
    skipped = [f"{b.where}: {b.not_run}" for p in PAGES for b in blocks(p) if b.not_run]
    assert len(skipped) <= MAX_NOT_RUN, skipped
    markers = sum(p.read_text(encoding="utf-8").count("<!-- not run:") for p in PAGES)
    assert markers == len(skipped), "a not-run marker must sit on the line before a fence"


@pytest.fixture
def clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean working directory (each ``RaMem.ephemeral()`` of a page's snippets is a
    memory of its own: it meets no other test's namespaces)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_page(page: Path) -> tuple[dict[str, object], str]:
    """Run the page's python blocks in order in one namespace; returns it and what they
    printed. A failure names the page and line of the block."""
    if re.search(r"^(from|import) langmem\b", page.read_text(encoding="utf-8"), flags=re.M):
        # langmem's own import warns (trustcall imports Send from langgraph.constants,
        # deprecated in LangGraph 1.0): imported as tests/langchain/test_store.py imports it
        pytest.importorskip("langmem")
    scope: dict[str, object] = {"__name__": "__docs__"}
    printed = io.StringIO()
    for block in blocks(page):
        if block.language == "python" and not block.not_run:
            code = compile("\n" * (block.line) + block.code, block.where, "exec")
            with contextlib.redirect_stdout(printed):
                exec(code, scope)
    return scope, printed.getvalue()


@pytest.mark.parametrize("page", pages_with("python"), ids=_ids(pages_with("python")))
def test_python_blocks_run(page: Path, clean: Path) -> None:
    run_page(page)


def _problems(command: list[str], where: str) -> list[str]:
    """What is wrong with one shell command of the docs (nothing for commands not ours)."""
    name, args = command[0], command[1:]
    shown = f"{where}: `{shlex.join(command)}`"
    if name == "ramem":
        return _ramem_problems(args, shown)
    if name in {"pip", "pip3"} or (name.startswith("python") and args[:2] == ["-m", "pip"]):
        return _pip_problems(args[args.index("install") + 1 :] if "install" in args else [], shown)
    if name.startswith("python") and args and args[0].endswith(".py"):
        return [] if (ROOT / args[0]).is_file() else [f"{shown}: no such script"]
    return []


def _ramem_problems(args: list[str], shown: str) -> list[str]:
    from ramem_core.cli import build_parser
    from ramem_core.evaluation.harness import ABLATIONS, SYSTEMS

    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            parsed = build_parser().parse_args(args)
    except SystemExit as exc:
        error = said.getvalue().strip().splitlines()[-1:] or [str(exc.code)]  # argparse's last line
        return [f"{shown}: {error[0]}"] if exc.code else []
    problems = []
    if parsed.command == "eval":
        for option, known in (("system", SYSTEMS), ("ablate", ABLATIONS)):
            names = (getattr(parsed, option) or "").split(",")
            problems += [
                f"{shown}: unknown --{option} {n!r}" for n in names if n and n not in known
            ]
    return problems


def _pip_problems(args: list[str], shown: str) -> list[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = set(project["optional-dependencies"])
    problems = []
    for arg in (a for a in args if not a.startswith("-")):
        # from a checkout: the "ramem" on PyPI is another project
        spec = re.fullmatch(r"(\.)(?:\[([\w,\s-]+)\])?", arg)
        if spec is None:
            problems.append(f"{shown}: installs {arg!r}, not this checkout of RaMem")
            continue
        named = [e.strip() for e in (spec.group(2) or "").split(",") if e.strip()]
        problems += [f"{shown}: no extra {e!r} in pyproject.toml" for e in named if e not in extras]
    return problems


def shell_commands(code: str) -> Iterator[list[str]]:
    """The simple commands of a bash block: comments dropped, lines continued with a
    backslash joined, and ``&&``, ``||``, ``|`` and ``;`` separating commands."""
    for line in code.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        command: list[str] = []
        for token in lexer:
            if token in {"&&", "||", "|", ";"}:
                yield from [command] if command else []
                command = []
            else:
                command.append(token)
        yield from [command] if command else []


@pytest.mark.parametrize("page", pages_with("bash"), ids=_ids(pages_with("bash")))
def test_bash_commands_are_real(page: Path) -> None:
    problems = [
        problem
        for block in blocks(page)
        if block.language == "bash" and not block.not_run
        for command in shell_commands(block.code)
        for problem in _problems(command, block.where)
    ]
    assert problems == []


def test_json_blocks_parse_and_conversations_load() -> None:
    from ramem_core import conversation_from_dict

    checked = 0
    for block in of("json"):
        data = json.loads(block.code)
        if isinstance(data, dict) and "sessions" in data:
            assert conversation_from_dict(data, block.where).sessions
            checked += 1
    assert checked  # the conversation format of the command-line page


def test_layout_trees_name_only_what_exists() -> None:
    missing = []
    for block in of("text"):
        parents: list[tuple[int, Path]] = [(-1, ROOT)]
        for line in block.code.splitlines():
            name = line.split()[0] if line.strip() else ""
            if not (name.endswith(("/", ".py")) and re.fullmatch(r"[\w./]+", name)):
                continue  # a description's continuation
            depth = len(line) - len(line.lstrip())
            while parents[-1][0] >= depth:
                parents.pop()
            path = parents[-1][1] / name
            if not path.exists():
                missing.append(f"{block.where}: {path.relative_to(ROOT)}")
            if name.endswith("/"):
                parents.append((depth, path))
    assert missing == []


# ---------------------------------------------------------------- pages, links, results


def test_the_readme_is_short_and_its_test_command_is_cis() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    quick_start = [b for b in blocks(README) if b.language == "bash"][:2]
    assert [b.code.strip() for b in quick_start] == [
        "pip install . && ramem demo",
        "pip install -e '.[dev]' && python -m pytest",
    ]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert quick_start[1].code.strip() in ci  # CI runs exactly the README's test command


def test_every_page_is_in_the_nav_and_every_link_resolves() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = re.findall(r"^\s*- [^:]+: (\S+\.md)$", config.split("\nnav:", 1)[1], flags=re.M)
    assert sorted(nav) == sorted(p.name for p in DOCS.glob("*.md"))
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            path = target.split("#")[0]
            if re.match(r"[a-z]+:", target) or not path:
                continue
            if not (page.parent / path).exists() or (
                page.parent == DOCS and not (page.parent / path).resolve().is_relative_to(DOCS)
            ):  # a docs page may link only inside docs/: mkdocs --strict refuses the rest
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def _results_page() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "results_page", ROOT / "benchmarks" / "results_page.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_results_page_and_headline_table_are_what_the_results_say_now() -> None:
    results = _results_page()
    assert (DOCS / "results.md").read_text(encoding="utf-8") == results.page(), (
        "docs/results.md is stale: run python benchmarks/results_page.py"
    )
    readme = README.read_text(encoding="utf-8")
    assert readme == results.readme(readme), (
        "the README's headline table is stale: run python benchmarks/results_page.py"
    )


# ---------------------------------------------------------------- what particular snippets do


def _python(page: Path, after: str) -> str:
    """The first python block of ``page`` after the line ``after``."""
    line = page.read_text(encoding="utf-8").splitlines().index(after) + 1
    return next(b.code for b in blocks(page) if b.language == "python" and b.line > line)


def test_the_readme_python_snippet_runs_twice_and_stores_its_turn_once(clean: Path) -> None:
    from ramem_core import RaMem

    code = _python(README, "## Python")
    for _ in range(2):  # re-running the snippet stores nothing twice
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            exec(code, {})
    assert "Dr. Patel" in printed.getvalue()  # the August appointment was found
    with RaMem.open(clean / "memory") as memory:
        assert sum("adopted a cat" in u.content for u in memory.store.get("default")) == 1


def test_the_api_page_lists_moves_and_explains_memory(clean: Path) -> None:
    from ramem_core import RaMem

    scope, printed = run_page(DOCS / "api.md")
    assert "Dr. Patel" in printed
    assert len(scope["page"]) == 20  # type: ignore[arg-type]
    assert "<svg" in scope["html"]  # type: ignore[operator]
    with RaMem.open(clean / "memory") as memory, RaMem.open(clean / "moved") as moved:
        assert moved.count() == memory.count() > 20
    assert "sardines" in printed  # the fake store answered


def test_the_architecture_pages_list_of_passes_is_the_pipeline() -> None:
    """The list of passes names the default pipeline's passes, in order."""
    from ramem_core.retrieval import RetrievalConfig, Retriever
    from ramem_core.testing import HashEmbedder

    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    listed = text.split("<!-- passes -->", 1)[1].split("<!-- /passes -->", 1)[0]
    names = re.findall(r"`([a-z-]+)`", listed)
    assert names == [p.name for p in Retriever(HashEmbedder(), RetrievalConfig()).passes]
