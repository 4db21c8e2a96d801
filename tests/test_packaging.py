"""Adapter packages: every public name resolves, and a missing extra says what to install."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("package", ["langchain_ramem", "llamaindex_ramem"])
def test_every_public_name_resolves(package: str) -> None:
    module = __import__(package)
    for name in module.__all__:
        assert getattr(module, name) is not None


@pytest.mark.parametrize(
    ("package", "framework", "extra"),
    [
        ("langchain_ramem", "langchain_core", "ramem[langchain]"),
        ("llamaindex_ramem", "llama_index", "ramem[llamaindex]"),
    ],
)
def test_missing_extra_names_the_install_command(package: str, framework: str, extra: str) -> None:
    code = (
        f"import sys; sys.modules[{framework!r}] = None\n"
        f"try:\n    import {package}\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert extra in out.stdout
