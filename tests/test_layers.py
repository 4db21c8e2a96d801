"""The layers contract: every module of the three packages imports only its own layer or the
layers below it (adapters -> apps -> facade -> stages -> index -> store -> base).

Imports under ``if TYPE_CHECKING:`` are annotations only and do not count. A module that no
layer names fails the test, so a new module has to be placed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "base",
        (
            "ramem_core.types",
            "ramem_core.errors",
            "ramem_core.validation",
            "ramem_core.temporal",
            "ramem_core.tokens",
            "ramem_core.prompts",
            "ramem_core.protocols",
            "ramem_core.states",
            "ramem_core.reading",
            "ramem_core.twins",
        ),
    ),
    ("store", ("ramem_core.store",)),
    ("index", ("ramem_core.index",)),
    (
        "stages",
        (
            "ramem_core.anchoring",
            "ramem_core.replacement",
            "ramem_core.frames",
            "ramem_core.retrieval",
            "ramem_core.synthesis",
            "ramem_core.embedding",
            "ramem_core.llm",
            "ramem_core.loaders",
            "ramem_core.transfer",
            "ramem_core.writing",
        ),
    ),
    ("facade", ("ramem_core.memory", "ramem_core.keyed", "ramem_core.live")),
    (
        "apps",
        (
            "ramem_core.cli",
            "ramem_core.explain",
            "ramem_core.evaluation",
            "ramem_core.testing",
            "ramem_core",
            "ramem_mcp",
        ),
    ),
    ("adapters", ("langchain_ramem", "llamaindex_ramem")),
)
PACKAGES = ("ramem_core", "langchain_ramem", "llamaindex_ramem", "ramem_mcp")


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of the longest prefix that names ``module``."""
    best: tuple[int, int] | None = None
    for level, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            named = module == prefix or module.startswith(prefix + ".")
            if named and (best is None or len(prefix) > best[0]):
                best = (len(prefix), level)
    return None if best is None else best[1]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _runtime_imports(tree: ast.Module, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, imported module) of every import that runs (not under ``TYPE_CHECKING``)."""
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                typing_only.update(id(n) for n in ast.walk(child))
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            # "from ramem_core import retrieval" imports the submodule, if it is one
            names = [f"{target}.{a.name}" for a in node.names]
            found += [(node.lineno, n if layer_of(n) is not None else target) for n in names]
    return [(line, name) for line, name in found if name.split(".")[0] in PACKAGES]


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def violations() -> list[str]:
    out = []
    for path in _modules():
        module = _module_name(path)
        own = layer_of(module)
        if own is None:
            out.append(f"{module}: in no layer")
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, target in _runtime_imports(tree, module, path.name == "__init__.py"):
            their = layer_of(target)
            if their is not None and their > own:
                out.append(
                    f"{module}:{line} ({LAYERS[own][0]}) imports {target} ({LAYERS[their][0]})"
                )
    return out


def test_every_import_runs_downwards() -> None:
    assert violations() == []


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("ramem_core.store.chroma", "store"),
        ("ramem_core.index.snapshot", "index"),
        ("ramem_core.retrieval.lookup", "stages"),
        ("ramem_core.memory", "facade"),
        ("langchain_ramem.store", "adapters"),
    ],
)
def test_the_layers_place_modules_where_the_readme_says(module: str, layer: str) -> None:
    level = layer_of(module)
    assert level is not None
    assert LAYERS[level][0] == layer


def test_an_upward_import_is_caught(tmp_path: Path) -> None:
    """The checker itself: an index module importing a stage is reported."""
    tree = ast.parse("from ramem_core.retrieval import Retriever\nimport ramem_core.memory\n")
    found = _runtime_imports(tree, "ramem_core.index.bm25", is_package=False)
    assert [layer_of(t) for _, t in found] == [3, 4]
    typed = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import ramem_core.memory\n"
    )
    assert _runtime_imports(typed, "ramem_core.index.bm25", is_package=False) == []


def _all_imports(path: Path, root: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` imports, ``TYPE_CHECKING`` imports included: a
    module named by ``from package import name`` when it is one, else the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    module = ".".join(parts[:-1] if is_package else parts)
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join([*here, *([node.module] if node.module else [])])
            named = [f"{base}.{a.name}" for a in node.names]
            out |= {n if n in known else base for n in named}
    return {m for m in out if m in known and m != module}


def circles(prefix: str, root: Path = ROOT) -> list[list[str]]:
    """Every import circle among the modules under ``prefix`` (a path through them that
    comes back to where it started), ``TYPE_CHECKING`` imports counted."""
    paths = {}
    for path in (root / prefix.split(".")[0]).rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name == prefix or name.startswith(prefix + "."):
            paths[name] = path
    graph = {name: _all_imports(path, root, set(paths)) for name, path in paths.items()}
    found: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle(package: str) -> None:
    assert circles(package) == []


def test_a_circle_is_caught_type_checking_imports_included(tmp_path: Path) -> None:
    """The checker itself: a module importing another under ``TYPE_CHECKING`` while that one
    imports it back (through a third) is a circle; without the typed import there is none."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text("from pkg.fusion import Fusion\n")
    (pkg / "fusion.py").write_text("from pkg import ranking\n")
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.config import C\n"
    (pkg / "ranking.py").write_text(typed)
    assert circles("pkg", tmp_path) == [["pkg.config", "pkg.fusion", "pkg.ranking", "pkg.config"]]
    (pkg / "ranking.py").write_text("import numpy\n")
    assert circles("pkg", tmp_path) == []
