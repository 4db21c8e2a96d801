"""The issue 33 ceiling (benchmarks/ceiling_multihop.py): what a perfect reorder of the first
places could put in the top 10."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _ceiling() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "ceiling_multihop", ROOT / "benchmarks" / "ceiling_multihop.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _item(*ids: str) -> dict[str, object]:
    return {"source_ids": list(ids), "session_id": ids[0].split(":")[0] if ids else "D0"}


def test_the_oracle_puts_the_evidence_of_the_first_places_first() -> None:
    ceiling = _ceiling()
    found = [_item(f"D1:{i}") for i in range(12)] + [_item("D2:1"), _item("D3:5", "D3:6")]
    found += [_item(f"D5:{i}") for i in range(10)] + [_item("D4:1")]  # D4:1 at place 25
    evidence = {"D1:0", "D2:1", "D3:5", "D3:6", "D4:1", "D9:9"}
    assert ceiling._covered(found, evidence, 10) == {"D1:0"}
    assert ceiling._oracle(found, evidence, 12) == {"D1:0"}  # the rest lie beyond place 12
    assert ceiling._oracle(found, evidence, 20) == {"D1:0", "D2:1", "D3:5", "D3:6"}
    row = {"evidence": sorted(evidence), "retrieved": found}
    figures = ceiling.measure([row])
    assert figures["recall@10"] == round(1 / 6, 3)
    assert figures["oracle_recall@10_of_20"] == round(4 / 6, 3)
    assert figures["oracle_recall@10_of_50"] == round(5 / 6, 3)
    assert figures["all_evidence@10"] == 0.0
    assert figures["missed_at_11_20"] == 0.5  # D2:1, D3:5, D3:6 at places 13-14
    assert figures["missed_at_21_50"] == round(1 / 6, 3)  # D4:1 at place 25
    assert figures["missed_beyond_50"] == round(1 / 6, 3)  # D9:9: no place at all
