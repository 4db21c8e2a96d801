"""Adapter packages: every public name resolves, and a missing extra says what to install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("package", ["langchain_ramem", "llamaindex_ramem", "ramem_mcp"])
def test_every_public_name_resolves(package: str) -> None:
    module = __import__(package)
    for name in module.__all__:
        assert getattr(module, name) is not None


@pytest.mark.parametrize(
    ("package", "framework", "extra"),
    [
        ("langchain_ramem", "langchain_core", "pip install '.[langchain]'"),
        ("llamaindex_ramem", "llama_index", "pip install '.[llamaindex]'"),
        ("ramem_mcp", "mcp", "pip install '.[mcp]'"),
    ],
)
def test_missing_extra_names_the_install_command(package: str, framework: str, extra: str) -> None:
    code = (
        f"import sys; sys.modules[{framework!r}] = None\n"
        f"try:\n    import {package}\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert extra in out.stdout


def test_the_core_imports_no_framework() -> None:
    import ast

    core = Path(__file__).parents[1] / "ramem_core"
    found = []
    for path in core.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [
                f"{path.name}: {name}"
                for name in names
                if name.split(".")[0]
                in {"langchain", "langchain_core", "langchain_classic", "llama_index"}
                or name.startswith(("langchain_ramem", "llamaindex_ramem"))
            ]
    assert found == []


def test_llm_models_come_from_an_installed_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    from ramem_core.errors import ModelUnavailableError
    from ramem_core.llm import LLM_PROVIDERS, load_llm

    names = [ep.name for ep in importlib.metadata.entry_points(group=LLM_PROVIDERS)]
    assert names == ["langchain"]  # registered by this project's pyproject
    with pytest.raises(ModelUnavailableError, match="provider 'langchain'"):
        load_llm("no-such-provider:model")  # reached LangChain's init_chat_model
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: [])
    with pytest.raises(ModelUnavailableError, match=r"pip install '\.\[langchain\]'"):
        load_llm("openai:gpt-4o-mini")
