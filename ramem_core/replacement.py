"""Does a later statement replace an earlier one? A model over pair features.

Two statements of one speaker, the later said after the earlier, about the same owner's state
(:mod:`ramem_core.reading`), are a *pair*. The model reads the pair's features
(:data:`FEATURES`: how close the two are, what the later says of itself, whether it names
another value, the time between them) and the later statement's vector (the fit may also
weigh the two vectors multiplied; the shipped one does not), and gives the probability that
the later statement replaced the earlier.

It is a logistic regression fitted by ``benchmarks/fit_replacement.py`` on a corpus of
labelled pairs written for it (``benchmarks/data/replacement_pairs/``), and loaded by name from
the file that script writes (``ramem_core/_data/replacement.json``). The file also holds three
thresholds chosen by cross-validation over that corpus, one writer held out at a time:
:attr:`Replacement.label` (a later statement is *told* to have replaced the earlier one only
at or above it: at least 95 labels in 100 right on a held-out writer's pairs),
:attr:`Replacement.order` (a question about now reads the later statement first at or above
it: an order is not a claim) and :attr:`Replacement.doubt` (a state is told it held through
a time only when no later statement reaches it).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ramem_core.reading import PLAIN, Cue, Mood, Owner, Reading, owner_kind
from ramem_core.types import MemoryUnit, TimeSpan, to_epoch

FEATURES = (
    "cosine",
    "cosine_sq",
    "kind_shared",
    "kind_none",
    "later_question",
    "later_possibility",
    "later_plan",
    "later_past_story",
    "earlier_question",
    "earlier_possibility",
    "earlier_plan",
    "later_adds",
    "later_replaces",
    "later_temporary",
    "later_ended",
    "later_still",
    "later_negated",
    "later_new",
    "earlier_temporary",
    "owner_same_other",
    "owner_to_other",
    "owner_from_other",
    "later_names_other",
    "new_value",
    "same_value",
    "overlap_later",
    "overlap_earlier",
    "log_days",
    "told_earlier",
    "later_ahead",
)
"""The pair features, in the model's order (each in ``[0, 1]`` or a small range):

- ``cosine``, ``cosine_sq``: the two statements' vectors' cosine (and its square);
- ``kind_shared``: both speak of one kind of state (:mod:`ramem_core.retrieval.kinds`);
  ``kind_none``: the later speaks of none;
- the later's moods (:class:`~ramem_core.reading.Mood`) and the earlier's;
- the later's cues (:class:`~ramem_core.reading.Cue`), the earlier's "temporary";
- ``owner_same_other``: both speak of the same owner other than the speaker;
  ``owner_to_other``: the earlier of the speaker's, the later of somebody's else (a name, a
  role: "Carl retired" may end "my manager is Carl"); ``owner_from_other``: the other way;
  ``later_names_other``: the later also speaks of somebody else's state;
- ``new_value``: the later names a value (a proper noun or a number) the earlier does not;
  ``same_value``: they share one; ``overlap_later``: the share of the later's words (stems,
  stop words aside) the earlier holds, ``overlap_earlier``: the other way round (a
  confirmation repeats, a change says something else);
- ``log_days``: ``log1p`` of the days between them, over 6;
- ``told_earlier``: the later tells of a time before the earlier was said (a story);
- ``later_ahead``: the later tells of a time after it was said (a plan with a date).
"""


@dataclass(frozen=True, slots=True)
class Statements:
    """What the model reads of a set of statements, one entry per statement.

    Attributes:
        vectors: their unit vectors.
        owner: whose state each speaks of (:func:`~ramem_core.states.state_key` of the
            owner; 0: the speaker).
        owner_kind: the kind of that owner (:class:`~ramem_core.reading.Owner`).
        others: each speaks of somebody else's state too.
        mood: :class:`~ramem_core.reading.Mood` bits.
        cues: :class:`~ramem_core.reading.Cue` bits.
        kinds: the kinds of state each speaks of (bits).
        said: when each was said (epoch seconds).
        event_start: when what each tells of began (epoch seconds), or 0 when it says no time.
        event_end: when it ended, or 0.
        values: the values each names (proper nouns and numbers, case-folded).
        words: the words each says (stems, stop words and the speaker's name aside).
        texts: each one's own words (the speaker's name aside), as the pair reader reads them.
    """

    vectors: npt.NDArray[np.float32]
    owner: npt.NDArray[np.int64]
    owner_kind: npt.NDArray[np.int64]
    others: npt.NDArray[np.bool_]
    mood: npt.NDArray[np.int64]
    cues: npt.NDArray[np.int64]
    kinds: npt.NDArray[np.int64]
    said: npt.NDArray[np.int64]
    event_start: npt.NDArray[np.int64]
    event_end: npt.NDArray[np.int64]
    values: Sequence[frozenset[str]]
    words: Sequence[frozenset[str]]
    texts: Sequence[str] = ()


def _bit(array: npt.NDArray[np.int64], bit: int) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = ((array & bit) != 0).astype(np.float64)
    return out


def pair_features(
    s: Statements, earlier: npt.NDArray[np.int64], later: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """The :data:`FEATURES` of each pair ``(earlier[k], later[k])`` (indexes into ``s``),
    one row per pair."""
    i, j = earlier, later
    cos = np.einsum("ij,ij->i", s.vectors[i], s.vectors[j]).astype(np.float64)
    mi, mj, cj = s.mood[i], s.mood[j], s.cues[j]
    days = np.maximum(s.said[j] - s.said[i], 0) / 86_400.0
    told = ended_before(s, i, j)
    ahead = (s.event_start[j] != 0) & (s.event_start[j] > s.said[j])
    vi = [s.values[k] for k in i.tolist()]
    vj = [s.values[k] for k in j.tolist()]
    new = np.array([bool(b - a) for a, b in zip(vi, vj, strict=True)], dtype=np.float64)
    same = np.array([bool(a & b) for a, b in zip(vi, vj, strict=True)], dtype=np.float64)
    wi = [s.words[k] for k in i.tolist()]
    wj = [s.words[k] for k in j.tolist()]
    shared = np.array([len(a & b) for a, b in zip(wi, wj, strict=True)], dtype=np.float64)
    size_i = np.array([max(len(a), 1) for a in wi], dtype=np.float64)
    size_j = np.array([max(len(b), 1) for b in wj], dtype=np.float64)
    columns = [
        cos,
        cos * cos,
        ((s.kinds[i] & s.kinds[j]) != 0).astype(np.float64),
        (s.kinds[j] == 0).astype(np.float64),
        _bit(mj, Mood.QUESTION),
        _bit(mj, Mood.POSSIBILITY),
        _bit(mj, Mood.PLAN),
        _bit(mj, Mood.PAST_STORY),
        _bit(mi, Mood.QUESTION),
        _bit(mi, Mood.POSSIBILITY),
        _bit(mi, Mood.PLAN),
        _bit(cj, Cue.ADDS),
        _bit(cj, Cue.REPLACES),
        _bit(cj, Cue.TEMPORARY),
        _bit(cj, Cue.ENDED),
        _bit(cj, Cue.STILL),
        _bit(cj, Cue.NEGATED),
        _bit(cj, Cue.NEW),
        _bit(s.cues[i], Cue.TEMPORARY),
        ((s.owner[i] == s.owner[j]) & (s.owner[j] != 0)).astype(np.float64),
        ((s.owner[i] == 0) & (s.owner[j] != 0)).astype(np.float64),
        ((s.owner[i] != 0) & (s.owner[j] == 0)).astype(np.float64),
        (s.others[j] & (s.owner[j] == 0)).astype(np.float64),
        new,
        same,
        shared / size_j,
        shared / size_i,
        np.log1p(days) / 6.0,
        told.astype(np.float64),
        ahead.astype(np.float64),
    ]
    if not len(i):
        return np.zeros((0, len(FEATURES)))
    return np.stack(columns, axis=1)


def same_owner(
    s: Statements, earlier: npt.NDArray[np.int64], later: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Per pair, whether the two statements may speak of one owner's state: not when either
    speaks of somebody of the speaker's circle (:data:`~ramem_core.reading.KIN_NOUNS`) and
    the other of somebody else ("my husband just started at Initech" never replaces "I work
    at Acme", nor "I moved to York" "my sister lives in Leeds"); a pronoun may be anyone."""
    ki, kj = s.owner_kind[earlier], s.owner_kind[later]
    differ = s.owner[earlier] != s.owner[later]
    pronoun = (ki == Owner.PRONOUN) | (kj == Owner.PRONOUN)
    kin = (ki == Owner.KIN) | (kj == Owner.KIN)
    out: npt.NDArray[np.bool_] = ~(kin & differ & ~(pronoun & (ki != 0) & (kj != 0)))
    return out


def ended_before(
    s: Statements, earlier: npt.NDArray[np.int64], later: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Per pair, whether the later statement's event time (where it has one) ended before
    the earlier one was said (an event time of any year: 0 stands for none)."""
    ended = s.event_end[later]
    out: npt.NDArray[np.bool_] = (ended != 0) & (ended < s.said[earlier])
    return out


def told_before(
    s: Statements, earlier: npt.NDArray[np.int64], later: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Per pair, whether the later statement is a story of a time over before the earlier
    one was said ("Back in 2016 I worked at a bakery", said after "I work at Acme"): what it
    tells had ended by then, so it replaced nothing said after it. Both are read: the story's
    mood (:attr:`~ramem_core.reading.Mood.PAST_STORY`) and its event time; a correction
    ("Actually I moved to Porto last month") is no story and keeps its pair."""
    story = (s.mood[later] & int(Mood.PAST_STORY)) != 0
    out: npt.NDArray[np.bool_] = story & ended_before(s, earlier, later)
    return out


def may_replace(
    s: Statements, earlier: npt.NDArray[np.int64], later: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Per pair, whether the model weighs it at all: the two may speak of one owner's state
    (:func:`same_owner`) and the later is no story of a time before the earlier was said
    (:func:`told_before`); any other pair replaced nothing."""
    out: npt.NDArray[np.bool_] = same_owner(s, earlier, later) & ~told_before(s, earlier, later)
    return out


@runtime_checkable
class PairReader(Protocol):
    """Reads two statements together (the earlier, then the later) and gives the probability
    that the later replaced the earlier: what word features and separate vectors cannot see
    ("barista at Blue Bottle" / "first dinner rush as a line cook at Nopa" name two values of
    one slot; "still at Acme" names the same one)."""

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float64]:
        """Per ``(earlier, later)`` text pair, the probability that the later replaced it."""
        ...


READ_PAIRS = 16
"""The most pairs a pair reader reads for one question, those the features find likeliest
first: a cost bound (one pass of the reader; a recall weighs up to a few hundred pairs). A pair
at or above the floor left unread may only *doubt* a state (no label, no order): its
probability is what the joined thresholds were chosen for only when read."""

READER_TOKENS = 128
"""The most word pieces a pair reader reads of a pair, both statements together (longest
first cut): a design limit, twice a long chat message."""


def pair_tokenizer(max_tokens: int = READER_TOKENS) -> Any:
    """The embedder's word-piece tokenizer (shipped as package data) set for pairs: ``[CLS]
    earlier [SEP] later [SEP]``, cut to ``max_tokens``, padded to the longest of a batch. The
    fitting script encodes with it too, so the reader reads what it was fitted on."""
    from ramem_core.embedding import minilm_tokenizer

    return minilm_tokenizer(max_tokens)


def encode_pairs(
    tokenizer: Any, pairs: Sequence[tuple[str, str]]
) -> dict[str, npt.NDArray[np.int64]]:
    """The model inputs of ``pairs``: word-piece ids, attention mask and segment ids."""
    encodings = tokenizer.encode_batch([(a, b) for a, b in pairs])
    return {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }


def combine(
    features: npt.NDArray[np.float64], read: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """The feature model's and the pair reader's probabilities joined: the mean of their
    log-odds (no weight fitted: the two are each fitted to be calibrated)."""
    eps = 1e-6
    a = np.clip(features, eps, 1 - eps)
    b = np.clip(read, eps, 1 - eps)
    z = (np.log(a / (1 - a)) + np.log(b / (1 - b))) / 2
    out: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-z))
    return out


class CrossEncoder:
    """A :class:`PairReader`: all-MiniLM-L6-v2 fine-tuned to read a pair at once
    (``benchmarks/fit_replacement.py``), as int8 ONNX run with onnxruntime, loaded on first
    use and only when its file's SHA-256 is the one its fit wrote beside it.

    Args:
        path: the ONNX file.
        sha256: its expected digest.
        max_tokens: word pieces read of a pair (:data:`READER_TOKENS`).
        batch_size: pairs per forward pass.
    """

    def __init__(
        self, path: Path, sha256: str, *, max_tokens: int = READER_TOKENS, batch_size: int = 32
    ) -> None:
        self.path = path
        self.sha256 = sha256
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._read: dict[tuple[str, str], float] = {}  # the last READ_CACHE pairs read

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                from ramem_core.embedding import _cpus, check_model, onnx_session

                check_model(self.path, self.sha256, source="RaMem's package data (reinstall it)")
                self._tokenizer = pair_tokenizer(self.max_tokens)
                self._session = onnx_session(self.path, _cpus())
            return self._session, self._tokenizer

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float64]:
        out = np.zeros(len(pairs))
        known = self._read
        new = [k for k, pair in enumerate(pairs) if pair not in known]
        if new:
            session, tokenizer = self._load()
            new.sort(key=lambda k: len(pairs[k][0]) + len(pairs[k][1]))
            for start in range(0, len(new), self.batch_size):
                chunk = new[start : start + self.batch_size]
                feeds = encode_pairs(tokenizer, [pairs[k] for k in chunk])
                logits = np.asarray(session.run(None, feeds)[0], dtype=np.float64).reshape(-1)
                out[chunk] = 1.0 / (1.0 + np.exp(-np.clip(logits, -50, 50)))
            with self._lock:
                if len(known) + len(new) > READ_CACHE:
                    known.clear()
                known.update((pairs[k], float(out[k])) for k in new)
        for k, pair in enumerate(pairs):
            if (seen := known.get(pair)) is not None:
                out[k] = seen
        return out

    def forget(self) -> None:
        """Drop the readings kept (a benchmark times each question's own reading)."""
        with self._lock:
            self._read.clear()


READ_CACHE = 4096
"""Pairs a :class:`CrossEncoder` remembers its reading of (a question asked again, or a
namespace read by every recall, is not read again): a bound, about 1 MB of text."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Replacement:
    """The fitted model: a logistic regression over :data:`FEATURES`, the later statement's
    vector and the two vectors' product.

    Attributes:
        weights: one per feature of :data:`FEATURES`.
        later: weights over the later statement's vector (zeros: unused).
        product: weights over the elementwise product of the two vectors (zeros: unused).
        bias: the intercept.
        label: the probability at or above which a statement is told it was replaced.
        order: the probability at or above which a question about now reads the later first.
        doubt: the probability at or above which a later statement may have replaced the
            earlier: a state is told it held through a time only when none did.
        reader: a pair reader, asked of the pairs the features find at least ``floor``
            likely; its probability and theirs are joined (:func:`combine`). ``None``: the
            features alone.
        floor: see ``reader`` (a cost bound: most pairs a recall weighs are far below it).
        reader_digest: the reader file's SHA-256 (part of :attr:`digest`).
        alone: the label, order and doubt thresholds for the features alone (chosen by the
            same fit on their own held-out probabilities), which :meth:`without_reader`
            takes; ``None``: these thresholds.
    """

    weights: npt.NDArray[np.float64]
    later: npt.NDArray[np.float64]
    product: npt.NDArray[np.float64]
    bias: float
    label: float
    order: float
    doubt: float
    reader: PairReader | None = field(default=None, compare=False)
    floor: float = 1.0
    reader_digest: str = ""
    alone: tuple[float, float, float] | None = None

    @property
    def digest(self) -> str:
        """A short digest of the weights and thresholds (equal models, equal digests)."""
        import hashlib

        h = hashlib.sha256()
        for array in (self.weights, self.later, self.product):
            h.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
        h.update(repr((self.bias, self.label, self.order, self.doubt)).encode())
        h.update(repr((self.floor, self.reader_digest if self.reader else "")).encode())
        return h.hexdigest()[:16]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Replacement) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return (
            f"Replacement({self.digest}, label={self.label}, order={self.order},"
            f" doubt={self.doubt}, reader={self.reader is not None})"
        )

    def probabilities(
        self, s: Statements, earlier: npt.NDArray[np.int64], later: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float64]:
        """The probability that ``later[k]`` replaced ``earlier[k]``, per pair."""
        if not len(earlier):
            return np.zeros(0)
        z = pair_features(s, earlier, later) @ self.weights + self.bias
        dimension = s.vectors.shape[1]  # vector weights of another embedder are not read
        if len(self.later) == dimension:
            z = z + s.vectors[later].astype(np.float64) @ self.later
        if len(self.product) == dimension:
            vi = s.vectors[earlier].astype(np.float64)
            vj = s.vectors[later].astype(np.float64)
            z = z + np.einsum("ij,ij->i", vi * self.product, vj)
        p: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))
        if self.reader is None or not len(s.texts):
            return p
        above = np.flatnonzero(p >= self.floor)
        ask = above[np.argsort(-p[above], kind="stable")[:READ_PAIRS]]
        unread = np.setdiff1d(above, ask)
        p[unread] = np.minimum(p[unread], self.doubt)  # unread: a doubt at most, no claim
        if len(ask):
            texts = [
                (s.texts[a], s.texts[b]) for a, b in zip(earlier[ask], later[ask], strict=True)
            ]
            p[ask] = combine(p[ask], self.reader.probabilities(texts))
        return p

    def without_reader(self) -> Replacement:
        """The same model on its features alone, with their own thresholds."""
        label, order, doubt = self.alone or (self.label, self.order, self.doubt)
        return replace(
            self,
            reader=None,
            floor=1.0,
            reader_digest="",
            label=label,
            order=order,
            doubt=doubt,
            alone=None,
        )

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Replacement:
        """The model in ``data`` (as :func:`load_replacement` reads it); ``ValueError`` when
        its features are not :data:`FEATURES`."""
        if tuple(data["features"]) != FEATURES:
            msg = f"the replacement model's features {data['features']} are not {FEATURES}"
            raise ValueError(msg)
        label, order = float(data["label_threshold"]), float(data["order_threshold"])
        doubt = float(data["doubt_threshold"])
        if not (0.0 < doubt <= order <= label < 1.0) or math.isnan(label + order + doubt):
            msg = (
                "thresholds must satisfy 0 < doubt <= order <= label < 1:"
                f" {doubt}, {order}, {label}"
            )
            raise ValueError(msg)
        reader: PairReader | None = None
        floor, digest = 1.0, ""
        alone = None
        if spec := data.get("reader"):
            cut = spec["features_alone"]
            alone = (float(cut["label"]), float(cut["order"]), float(cut["doubt"]))
            if not (0.0 < alone[2] <= alone[1] <= alone[0] < 1.0):
                msg = (
                    "the features' own thresholds must satisfy 0 < doubt <= order <= label < 1:"
                    f" {alone}"
                )
                raise ValueError(msg)
            floor, digest = float(spec["floor"]), str(spec["sha256"])
            if not 0.0 < floor <= doubt:
                msg = f"the pair reader's floor {floor} must lie in (0, doubt={doubt}]"
                raise ValueError(msg)
            path = resources.files("ramem_core").joinpath("_data").joinpath(spec["file"])
            reader = CrossEncoder(Path(str(path)), digest, max_tokens=int(spec["max_tokens"]))
        return Replacement(
            np.asarray(data["weights"], dtype=np.float64),
            np.asarray(data.get("later") or [], dtype=np.float64),
            np.asarray(data.get("product") or [], dtype=np.float64),
            float(data["bias"]),
            label,
            order,
            doubt,
            reader,
            floor,
            digest,
            alone,
        )


REPLACEMENT_FILE = "replacement.json"


def load_replacement(name: str = REPLACEMENT_FILE) -> Replacement:
    """The model stored in ``ramem_core/_data/<name>`` (written by
    ``benchmarks/fit_replacement.py``)."""
    text = (
        resources.files("ramem_core").joinpath("_data").joinpath(name).read_text(encoding="utf-8")
    )
    return Replacement.from_dict(json.loads(text))


def statements(
    units: Sequence[MemoryUnit], vectors: npt.NDArray[np.float32], kinds: npt.NDArray[np.int64]
) -> Statements:
    """What the model reads of ``units`` (their readings, times and values), with their
    ``vectors`` and the ``kinds`` of state they speak of (bits)."""
    from ramem_core.index.text import Tokenizer
    from ramem_core.states import state_key, values

    tokenize = Tokenizer()

    def reading(unit: MemoryUnit) -> Reading:
        return unit.context.reading or PLAIN

    def epoch(span: TimeSpan | None, end: bool) -> int:
        return 0 if span is None else to_epoch(span.end if end else span.start)

    read = [reading(u) for u in units]
    return Statements(
        vectors=np.asarray(vectors, dtype=np.float32),
        owner=np.array([state_key(r.owner) if r.owner else 0 for r in read], dtype=np.int64),
        owner_kind=np.array([int(owner_kind(r.owner)) for r in read], dtype=np.int64),
        others=np.array([bool(r.others) for r in read], dtype=np.bool_),
        mood=np.array([int(r.mood) for r in read], dtype=np.int64),
        cues=np.array([int(r.cues) for r in read], dtype=np.int64),
        kinds=np.asarray(kinds, dtype=np.int64),
        said=np.array([epoch(u.context.session_span, True) for u in units], dtype=np.int64),
        event_start=np.array([epoch(u.context.event_time, False) for u in units], dtype=np.int64),
        event_end=np.array([epoch(u.context.event_time, True) for u in units], dtype=np.int64),
        values=[
            frozenset(e.casefold() for e in u.context.entities) | values(u.content) for u in units
        ],
        words=[frozenset(tokenize(own_words(u))) for u in units],
        texts=[own_words(u) for u in units],
    )


def own_words(unit: MemoryUnit) -> str:
    """A memory's words without the speaker's name the rule anchorer put first."""
    speaker = unit.context.speaker
    text = unit.content
    return text[len(speaker) + 2 :] if speaker and text.startswith(f"{speaker}: ") else text


LEARNED_REPLACEMENT = load_replacement()
"""Fitted on the whole corpus by ``benchmarks/fit_replacement.py`` (its thresholds chosen by
cross-validation there)."""
