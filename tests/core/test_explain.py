"""The explain page: one self-contained HTML file, checked as text and in a real browser
(Debian's headless Chromium; `.ci/run` installs it where it can)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ramem_core import RaMem, explain
from ramem_core.explain import SESSION, WINDOW
from ramem_core.loaders import demo_conversation
from ramem_core.testing import HashEmbedder, WordCounter

QUESTION = "What did the doctor tell Alice in February?"


@pytest.fixture(scope="module")
def page() -> str:
    memory = RaMem.ephemeral(embedder=HashEmbedder(), counter=WordCounter(), namespace="explain")
    conversation, _ = demo_conversation()
    memory.add_conversation(conversation)
    return explain.page(memory, QUESTION, k=10)


def test_the_page_loads_nothing_from_the_network(page: str) -> None:
    assert not re.search(r"<script|<link|<img|<iframe|@import|url\(|src=|href=", page, re.I)
    assert "<script>alert(1)</script>" not in page  # memory text is escaped
    assert "&lt;script&gt;" in page or "alert" not in page


def test_the_page_shows_the_timeline_the_frame_and_both_rankings(page: str) -> None:
    sessions = re.findall(r'class="session"[^>]*><title>session (S\d)', page)
    assert sorted(sessions) == ["S1", "S2", "S3", "S4", "S5", "S6"]  # the demo's six
    assert 'class="window"' in page  # 'in February', grounded
    assert 'class="now"' in page
    assert "-&gt; February 2023 (grounded" in page
    assert "RaMem: valid first" in page
    assert "Content-only (dense + BM25)" in page
    assert "within &#x27;in February&#x27;" in page  # a "why valid" reading


def test_the_anchor_of_a_relation_is_drawn() -> None:
    from dataclasses import replace

    from ramem_core.explain import sessions_of, timeline
    from ramem_core.types import Recall, Relation, TimeConstraint

    memory = RaMem.ephemeral(embedder=HashEmbedder(), counter=WordCounter(), namespace="anch")
    conversation, _ = demo_conversation()
    memory.add_conversation(conversation)
    found = memory.recall("What did the doctor say after the half marathon?")
    anchor = found[0].unit
    assert anchor.context.session_span is not None
    window = replace(anchor.context.session_span, end=found.frame.now)  # type: ignore[arg-type]
    after = TimeConstraint(
        "after the half marathon",
        window,
        True,
        Relation.AFTER,
        "the half marathon",
        "found",
        anchor.id,
    )
    frame = replace(found.frame, times=(after,))
    svg = timeline(sessions_of(memory.store.get("anch")), Recall(frame, found.evidence), [])
    assert 'class="anchor"' in svg
    assert 'class="window"' in svg


def _browser() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip(
            "Debian's chromium is not installed (apt-get install chromium): the explain "
            "page's browser test needs a real browser"
        )
    return found


def test_a_screenshot_of_the_page_shows_the_timeline_and_the_window(
    page: str, tmp_path: Path
) -> None:
    from PIL import Image

    browser = _browser()
    html = tmp_path / "page.html"
    html.write_text(page, encoding="utf-8")
    shot = tmp_path / "shot.png"
    run = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--host-resolver-rules=MAP * ~NOTFOUND",  # nothing could load, had it tried
            "--window-size=1100,800",
            f"--screenshot={shot}",
            html.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.exists(), run.stderr[-2000:]
    import numpy as np

    pixels = np.asarray(Image.open(shot).convert("RGB"), dtype=np.int16)

    def near(color: tuple[int, ...], tolerance: int = 8) -> int:
        close = np.abs(pixels - np.asarray(color, dtype=np.int16)) <= tolerance
        return int(close.all(axis=2).sum())

    session = tuple(int(SESSION[i : i + 2], 16) for i in (1, 3, 5))
    window = tuple(round(0.25 * int(WINDOW[i : i + 2], 16) + 0.75 * 255) for i in (1, 3, 5))
    assert near(session) > 200  # the sessions on the timeline (and the legend's swatch)
    assert near(window) > 2000  # the grounded window: a band across the timeline


def test_the_frame_says_when_a_restated_value_reads_latest_first() -> None:
    from ramem_core.explain import _frame_lines
    from ramem_core.types import RecallFrame

    now = RecallFrame("How many coins do I have?", "How many coins do I have?", asks_now=True)
    assert any("restated on a later day" in line for line in _frame_lines(now))
    untimed = RecallFrame("How many sessions did I attend?", "How many sessions did I attend?")
    assert any("latest restatement first" in line for line in _frame_lines(untimed))
    plain = RecallFrame("What did the doctor say?", "What did the doctor say?")
    assert not any("restate" in line for line in _frame_lines(plain))
    parted = RecallFrame("q", "q", parts=("What did Ana buy?", "What did Ben buy?"))
    assert "part: What did Ben buy?" in _frame_lines(parted)


def test_explain_reads_the_memorys_own_snapshot_not_the_store_again() -> None:
    """The page's content-only ranking is computed over the memory's cached snapshot: once a
    recall has read the namespace, explaining a question reads nothing from the store."""
    memory = RaMem.ephemeral(embedder=HashEmbedder(), counter=WordCounter(), namespace="again")
    memory.add_conversation(demo_conversation()[0])
    memory.recall(QUESTION)  # the namespace's snapshot is cached
    loads: list[str] = []
    load = memory.store.load

    def counted(namespace: str) -> object:
        loads.append(namespace)
        return load(namespace)

    memory.store.load = counted  # type: ignore[method-assign,assignment]
    page = explain.page(memory, QUESTION, k=10)
    assert loads == []
    # the same content-only ranking a content-only memory over the store gives
    from html import escape

    from ramem_core.retrieval import CONTENT_ONLY

    plain = RaMem(memory.store, config=CONTENT_ONLY, namespace="again", files=None)
    expected = [escape(e.unit.content) for e in plain.recall(QUESTION, k=10)]
    table = page.split("<h2>Content-only (dense + BM25)</h2>", 1)[1]
    positions = [table.index(text) for text in expected]
    assert positions == sorted(positions)
    memory.drop()


def test_the_page_shows_each_live_memory_said_at_its_own_time() -> None:
    from datetime import datetime

    memory = RaMem.ephemeral(embedder=HashEmbedder(), counter=WordCounter(), namespace="live")
    for minute, text in ((0, "I had coffee with Ana"), (40, "I bought running shoes")):
        memory.add_turn("user", text, at=datetime(2024, 3, 1, 9, minute))
    page = explain.page(memory, "What did I buy?", k=5, at=datetime(2024, 3, 2))
    assert page.count("1 March 2024, 09:40") >= 2  # in RaMem's table and content-only's
    memory.drop()
