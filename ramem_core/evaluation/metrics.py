"""Benchmark metrics: LoCoMo (official QA F1, BLEU-1, evidence recall), LongMemEval retrieval,
and the context-confusion measures of RaMem (D@1 and rank gap on a fixed confusable subset).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
ANSWERABLE = (1, 2, 3, 4)


# --------------------------------------------------------------------------- evidence ids


def parse_evidence(raw: Any) -> list[str]:
    """LoCoMo evidence ids, parsed defensively.

    Handles ``"D8:6; D9:17"``, space-separated lists, ``"D:11:26"`` and drops junk such as
    ``"D"``; ids are normalised to ``D<session>:<turn>`` without leading zeros.
    """
    items = raw if isinstance(raw, list) else [raw]
    found: list[str] = []
    for item in items:
        for m in re.finditer(r"D:?(\d+):(\d+)", str(item)):
            ident = f"D{int(m.group(1))}:{int(m.group(2))}"
            if ident not in found:
                found.append(ident)
    return found


def evidence_recall(gold: Iterable[str], retrieved: Iterable[str]) -> float:
    """Share of the gold evidence ids found among the retrieved source ids (LoCoMo)."""
    gold_set = set(gold)
    if not gold_set:
        return 0.0
    return len(gold_set & set(retrieved)) / len(gold_set)


# --------------------------------------------------------------------------- LoCoMo QA


def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("porter")


_PORTER = None


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = str(text).lower().replace(",", "")
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the|and)\b", " ", text)
    return " ".join(text.split())


def _tokens(text: str) -> list[str]:
    global _PORTER
    if _PORTER is None:
        _PORTER = _stemmer()
    return list(_PORTER.stemWords(normalize_answer(text).split()))


def token_f1(prediction: str, gold: str) -> float:
    """Token F1 of Porter-stemmed, normalised answers (LoCoMo's ``f1_score``)."""
    pred, truth = _tokens(prediction), _tokens(gold)
    common = Counter(pred) & Counter(truth)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(truth)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    """Category 1 (multi-hop): split both on commas, best F1 per gold part, averaged."""
    preds = [p.strip() for p in str(prediction).split(",")]
    golds = [g.strip() for g in str(gold).split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)


def locomo_f1(prediction: str, gold: Any, category: int) -> float:
    """LoCoMo's official QA score for one answer, by category."""
    if category == 5:
        lowered = str(prediction).lower()
        return float("no information available" in lowered or "not mentioned" in lowered)
    gold_text = str(gold)
    if category == 3:
        gold_text = gold_text.split(";")[0].strip()
    if category == 1:
        return multi_answer_f1(prediction, gold_text)
    return token_f1(prediction, gold_text)


def bleu1(prediction: str, gold: str) -> float:
    """BLEU-1 with brevity penalty on normalised tokens."""
    pred, truth = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not truth:
        return 0.0
    clipped = sum((Counter(pred) & Counter(truth)).values())
    precision = clipped / len(pred)
    penalty = 1.0 if len(pred) > len(truth) else math.exp(1 - len(truth) / len(pred))
    return penalty * precision


# --------------------------------------------------------------------------- LongMemEval


def recall_any(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1 if any gold id is in the top ``k``."""
    return float(bool(set(ranked[:k]) & set(gold)))


def recall_all(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1 if every gold id is in the top ``k``."""
    gold_set = set(gold)
    return float(bool(gold_set) and gold_set <= set(ranked[:k]))


def ndcg_any(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """nDCG@k with binary relevance (LongMemEval's ``ndcg_any``)."""
    gold_set = set(gold)
    dcg = sum(1.0 / math.log2(i + 2) for i, r in enumerate(ranked[:k]) if r in gold_set)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(gold_set))))
    return dcg / ideal if ideal else 0.0


def dedupe(items: Iterable[str]) -> list[str]:
    """Items in first-seen order, without repeats (units -> their sessions)."""
    return list(dict.fromkeys(items))


# --------------------------------------------------------------------------- context confusion


class ReferenceBM25:
    """A fixed BM25 (bm25s defaults, no stemming) over unit contents.

    It defines the context-confusable subset independently of every system under test.
    """

    def __init__(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        import bm25s

        self.ids = list(ids)
        self._index = bm25s.BM25()
        self._index.index(bm25s.tokenize(list(texts), show_progress=False), show_progress=False)

    def ranking(self, query: str) -> list[str]:
        """All unit ids that share a word with ``query``, best first."""
        import bm25s
        import numpy as np

        tokens = bm25s.tokenize([query], show_progress=False, allow_empty=True)
        vocab = {index: token for token, index in tokens.vocab.items()}
        words = [vocab[i] for i in tokens.ids[0]] if tokens.ids else []
        if not words:
            return []
        scores = np.asarray(self._index.get_scores(words))
        order = np.argsort(-scores, kind="stable")
        return [self.ids[i] for i in order if scores[i] > 0]


def is_confusable(
    reference_ranking: Sequence[str],
    unit_session: Mapping[str, str],
    evidence_units: set[str],
    evidence_sessions: set[str],
) -> bool:
    """True when the reference ranks a unit of a session without evidence above all evidence."""
    for unit in reference_ranking:
        if unit in evidence_units:
            return False
        if unit_session[unit] not in evidence_sessions:
            return True
    return False


def confusion(
    ranked_sessions: Sequence[str], ranked_is_evidence: Sequence[bool], evidence_sessions: set[str]
) -> tuple[float, int]:
    """(D@1, rank gap) for one system's ranked list.

    D@1 is 1 when the top unit comes from a session holding none of the evidence. The rank gap
    is the rank of the first evidence unit minus the rank of the best distractor (a unit from
    a session without evidence); a missing one counts as rank ``len(list) + 1``.
    """
    missing = len(ranked_sessions) + 1
    first_evidence = next((i + 1 for i, e in enumerate(ranked_is_evidence) if e), missing)
    best_distractor = next(
        (i + 1 for i, s in enumerate(ranked_sessions) if s not in evidence_sessions), missing
    )
    d_at_1 = float(bool(ranked_sessions) and ranked_sessions[0] not in evidence_sessions)
    return d_at_1, first_evidence - best_distractor


def judge(llm: Any, question_type: str, question: str, answer: str, response: str) -> bool:
    """LongMemEval's LLM judge: does ``response`` answer ``question`` correctly?"""
    from ramem_core.prompts.judge import JUDGE_PROMPTS, JUDGE_TEMPLATE

    prompt = JUDGE_TEMPLATE.format(
        instructions=JUDGE_PROMPTS.get(question_type, JUDGE_PROMPTS["default"]),
        question=question,
        answer=answer,
        response=response,
    )
    return str(llm.complete(prompt)).strip().lower().startswith("yes")
