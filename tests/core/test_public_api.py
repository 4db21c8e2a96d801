"""The public surface: __all__ is exact, the core imports no framework and stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ramem_core


def test_all_matches_public_names() -> None:
    values = {name: getattr(ramem_core, name) for name in dir(ramem_core)}  # loads them all
    public = {
        name
        for name, value in values.items()
        if not name.startswith("_")
        and (
            getattr(value, "__module__", "").startswith("ramem_core")
            or (name.isupper() and isinstance(value, int | str))  # constants such as DEFAULT_K
        )
    }
    assert set(ramem_core.__all__) - {"__version__"} == public
    assert ramem_core.RaMem.__module__ == "ramem_core.memory"
    with pytest.raises(AttributeError, match="NoSuchName"):
        _ = ramem_core.NoSuchName  # type: ignore[attr-defined]


def test_core_imports_no_framework_and_no_heavy_module() -> None:
    code = (
        "import sys, ramem_core, ramem_core.cli, ramem_core.retrieval, ramem_core.synthesis\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "{'langchain', 'langchain_core', 'llama_index', 'chromadb', 'onnxruntime', 'dateparser'}]\n"
        "print(','.join(sorted(bad)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


HEAVY = ("chromadb", "onnxruntime", "dateparser", "spacy", "numpy")


def _loaded_after(code: str) -> list[str]:
    """The heavy packages a fresh interpreter has imported after running ``code``."""
    probe = (
        f"{code}\nimport sys\nprint('HEAVY:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    [line] = [line for line in out.stdout.splitlines() if line.startswith("HEAVY:")]
    return [m for m in line.removeprefix("HEAVY:").split(",") if m]


def test_import_help_and_an_mcp_initialize_load_no_store_model_or_date_parser() -> None:
    """Issue 56: ``import ramem_core``, ``ramem --help`` and ``ramem mcp`` up to its answer to
    ``initialize`` wait for none of Chroma, onnxruntime, dateparser or spaCy."""
    assert _loaded_after("import ramem_core; from ramem_core import RaMem") == ["numpy"]
    assert _loaded_after("import ramem_core; from ramem_core import InvalidInputError") == []
    helped = (  # what --help reads: the package's names load when used (not even numpy)
        "from ramem_core.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    )
    assert _loaded_after(helped) == []
    initialized = (
        "import asyncio, tempfile\n"
        "from pathlib import Path\n"
        "from mcp import Client\n"
        "from ramem_mcp.server import Tools, build_server\n"
        "from ramem_mcp.sharing import Shared\n"
        "def opened():\n    import chromadb\n    raise AssertionError('opened')\n"
        "shared = Shared(Path(tempfile.mkdtemp()), opened, lambda m: Tools(m, 'me'))\n"
        "async def go():\n"
        "    async with Client(build_server(shared, namespace='me')) as c:\n"
        "        assert c.server_info.name == 'ramem'\n"
        "        assert shared.role == 'starting' and not shared._started\n"
        "asyncio.run(go())"
    )
    assert _loaded_after(initialized) in ([], ["numpy"])  # the tools' modules read numpy


def test_a_first_write_and_recall_import_neither_bm25s_nor_scipy() -> None:
    """The stop words are the core's own (bm25s imports scipy: 0.3-0.4 s of a process's
    first recall)."""
    code = (
        "import sys, tempfile\n"
        "from datetime import datetime\n"
        "from ramem_core import RaMem\n"
        "from ramem_core.store.chroma import ChromaStore\n"
        "from ramem_core.testing import HashEmbedder, WordCounter\n"
        "store = ChromaStore.persistent(tempfile.mkdtemp(), HashEmbedder())\n"
        "memory = RaMem(store, counter=WordCounter())\n"
        "memory.add_turn('user', 'I moved to Porto last week', at=datetime(2024, 5, 28), "
        "namespace='me')\n"
        "assert memory.recall('Where do I live now?', namespace='me')\n"
        "print(','.join(m for m in ('bm25s', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1:] in ([], [""])


def test_errors_form_one_hierarchy() -> None:
    for name in (
        "ConversationFormatError",
        "InvalidInputError",
        "StoreError",
        "UncertainWriteError",
        "WriteCancelledError",
        "ModelUnavailableError",
    ):
        assert issubclass(getattr(ramem_core, name), ramem_core.RaMemError)
    assert issubclass(ramem_core.InvalidInputError, ValueError)


SURFACE = {
    "ramem_core": [
        *("Anchorer", "AnchoringReport", "Answer", "CONTENT_KEYS", "CONTENT_ONLY"),
        *("CachedEmbedder", "ChromaStore", "ContextBlock", "Conversation"),
        *("ConversationFormatError", "DEFAULT_K", "Embedder", "EpisodicContext"),
        *("EpisodicKeys", "Evidence", "FrameContext", "FrameInducer", "Freshness"),
        *("Granularity", "IngestReport", "InvalidInputError", "KeyedMemories", "Kind", "LLM"),
        *("LLMAnchorer", "LLMFrameInducer", "LLMUsage", "Member", "MemoryInUseError"),
        *("MemoryUnit", "MeteredLLM"),
        *("MiniLMEmbedder", "ModelReplyError", "ModelUnavailableError"),
        *("NamespaceNotFoundError", "RaMem", "RaMemError", "Recall", "RecallFrame"),
        *("RecentQueries", "Relation", "RetrievalConfig", "Retriever", "RuleAnchorer"),
        *("RuleFrameInducer", "ServerSettings", "Session", "Store", "StoreError"),
        *("Supersession", "TimeConstraint", "TimeMention", "TimeSpan", "TokenCounter"),
        *("Transfer", "Turn", "UncertainWriteError", "WriteCancelledError", "__version__"),
        *("conversation_from_dict", "default_path", "load_conversations"),
    ],
    "langchain_ramem": [
        *("LangChainEmbedder", "LangChainLLM", "MemoryContext", "RaMemMemory"),
        *("RaMemMiddleware", "RaMemRetriever", "RaMemStore", "evidence_to_document"),
        "recall_tool",
    ],
    "llamaindex_ramem": [
        *("LlamaIndexEmbedder", "LlamaIndexLLM", "RaMemMemoryBlock", "RaMemRetriever"),
        "evidence_to_node",
    ],
    "ramem_mcp": ["Tokens", "build_server", "serve"],
}
"""What users import from each package: a change to it is a change to the API, made here on
purpose (and in the docs), never by accident."""


def test_the_public_surface_is_the_list() -> None:
    import importlib

    for package, names in SURFACE.items():
        module = importlib.import_module(package)
        assert sorted(module.__all__) == sorted(names), package
        for name in names:
            assert getattr(module, name) is not None, f"{package}.{name}"
