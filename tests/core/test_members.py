"""The second round (issue 33): for a question about several things of one kind, the
statements holding the words nearest that kind that the list lacks join it after its first
places; nothing else changes."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from ramem_core import (
    ChromaStore,
    Conversation,
    Kind,
    Member,
    RaMem,
    RetrievalConfig,
    Session,
    Turn,
)
from ramem_core.errors import InvalidInputError
from ramem_core.index.bm25 import LexicalIndex
from ramem_core.index.text import Tokenizer
from ramem_core.retrieval.members import (
    SecondRound,
    TermVectors,
    _near,
    asked_kind,
)
from ramem_core.retrieval.passes import SetMembers
from ramem_core.testing import HashEmbedder, WordCounter

# the terms of the martial arts said in the conversation, as the index stems them
MARTIAL = frozenset(Tokenizer()(" ".join(("karate", "taekwondo", "judo"))))


class KindEmbedder(HashEmbedder):
    """The hash embedder (wide, so unrelated words rarely share a bucket), but a martial
    art's term alone means "martial arts": the word vectors of a real embedder, where
    "taekwondo" lies near "martial arts", in a fake. Whole turns embed as the hash does."""

    def __init__(self) -> None:
        super().__init__(dimension=4096)
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        return super().embed(["martial arts" if t in MARTIAL else t for t in texts])


FILLER = [
    "The arts centre opened a new wing downtown.",
    "I have done my homework on the arts council grant.",
    "The arts fair was done by noon, so we left early.",
    "My neighbour teaches arts and crafts at the school.",
    "I bought a book about the history of the arts.",
    "The arts festival had a great jazz band this year.",
    "Our city spends too little on the arts, I think.",
    "I am done with painting for a while, the arts can wait.",
    "The martial music at the parade was loud.",
    "An arts degree taught me to look closely at things.",
    "I read a review of the arts show in the paper.",
    "The arts club meets every Tuesday evening.",
]


def _session(sid: str, when: datetime, turns: list[tuple[str, str]]) -> Session:
    return Session(
        sid, tuple(Turn(f"{sid}:{i}", who, text) for i, (who, text) in enumerate(turns, 1)), when
    )


def martial_arts() -> Conversation:
    """John talks about the arts a lot and mentions karate (May), taekwondo (July) once each,
    in sessions about something else; Maria mentions judo (August)."""
    fill = [("John", text) for text in FILLER]
    return Conversation(
        id="gym",
        participants=("John", "Maria"),
        sessions=(
            _session("S1", datetime(2023, 1, 15, 18), [*fill[:4], ("Maria", "Nice to hear!")]),
            _session("S2", datetime(2023, 3, 12, 18), [*fill[4:8], ("Maria", "Sounds fun.")]),
            _session(
                "S3",
                datetime(2023, 5, 20, 18),
                [("Maria", "How was your week?"), ("John", "I went to karate class tonight.")],
            ),
            _session("S4", datetime(2023, 6, 11, 18), [*fill[8:], ("Maria", "Good for you.")]),
            _session(
                "S5",
                datetime(2023, 7, 9, 18),
                [("Maria", "Any plans?"), ("John", "Off to do some taekwondo with my cousin!")],
            ),
            _session(
                "S6",
                datetime(2023, 8, 6, 18),
                [("Maria", "I love my judo lessons on Saturdays."), ("John", "Cool!")],
            ),
        ),
    )


def _memory(tmp_path: Path, config: RetrievalConfig | None = None) -> RaMem:
    store = ChromaStore.persistent(tmp_path / "db", KindEmbedder())
    memory = RaMem(store, config=config, counter=WordCounter())
    memory.add_conversation(martial_arts())
    return memory


def _terms(memory: RaMem) -> TermVectors:
    """The term vectors the memory's second round keeps."""
    found = memory.retriever.pass_named("set-members")
    assert isinstance(found, SetMembers)
    return found.terms


def _said(memory: RaMem, query: str, k: int = 10) -> list[str]:
    return [e.unit.content for e in memory.recall(query, k=k)]


def _with(said: list[str], word: str) -> list[str]:
    return [text for text in said if word in text.lower()]


@pytest.fixture
def both(tmp_path: Path) -> tuple[RaMem, RaMem]:
    """The same memories read with the second round (the default) and without it."""
    on = _memory(tmp_path)
    off = RaMem(on.store, config=replace(RetrievalConfig(), members=None), counter=WordCounter())
    return on, off


def test_the_kind_a_question_about_several_things_asks_for() -> None:
    assert asked_kind("What martial arts has John done?") == "martial arts"
    assert asked_kind("Which European countries has Maria been to?") == "European countries"
    assert asked_kind("What kind of books does Nate enjoy?") == "books"
    assert asked_kind("What pets does Nate have?") == "pets"
    assert asked_kind("When did John go to the arts fair?") is None
    assert asked_kind("What is John's job?") is None
    assert asked_kind("Where does Maria live?") is None


def test_the_second_round_adds_the_members_the_list_lacks(both: tuple[RaMem, RaMem]) -> None:
    on, off = both
    query = "What martial arts has John done?"
    without = _said(off, query)
    assert not _with(without, "karate")
    assert not _with(without, "taekwondo")
    said = _said(on, query)
    # both members join, in sessions the list lacked, after the list's first eight places
    assert _with(said[8:], "karate")
    assert _with(said[8:], "taekwondo")
    assert said[:8] == without[:8]
    assert not _with(said, "judo")  # Maria's, not John's


def test_a_question_about_another_person_gets_their_members(both: tuple[RaMem, RaMem]) -> None:
    on, _ = both
    said = _said(on, "What martial arts has Maria done?")
    assert _with(said, "judo")
    assert not _with(said, "taekwondo")
    assert not _with(said, "karate")


def test_a_single_fact_question_and_a_short_list_are_left_alone(
    both: tuple[RaMem, RaMem],
) -> None:
    on, off = both
    # the last is as near "martial arts" as a member is, but asks for no set
    for query in ("When did John go to the arts fair?", "Who said martial arts are fun?"):
        assert _said(on, query) == _said(off, query)
    # a list no longer than the places kept is the first round's
    query = "What martial arts has John done?"
    assert _said(on, query, k=8) == _said(off, query, k=8)


def test_the_second_round_respects_the_frames_window(both: tuple[RaMem, RaMem]) -> None:
    on, off = both
    assert _with(_said(on, "What martial arts has John practised?"), "taekwondo")
    query = "What martial arts has John practised in May 2023?"
    frame = on.recall(query, k=10).frame
    assert [t.text for t in frame.grounded_times] == ["May 2023"]
    said = _said(on, query)
    assert _with(said, "karate")  # May (the first round's window places found it)
    assert not _with(said, "taekwondo")  # July: outside the window, not added
    assert said == _said(off, query)


def test_a_member_the_list_holds_already_is_not_added_again(tmp_path: Path) -> None:
    on = _memory(tmp_path)
    on.add_turn("John", "Martial arts? I have done karate for years.", at=datetime(2023, 9, 1))
    said = _said(on, "What martial arts has John done?")
    # karate is in the list's first places now, so only taekwondo is added
    assert _with(said[:8], "karate")
    assert len(_with(said, "karate")) == 1
    assert _with(said[8:], "taekwondo")


def test_each_member_is_added_once_by_its_best_placed_statement(tmp_path: Path) -> None:
    on = _memory(tmp_path)
    gym = "We did taekwondo at the gym near the old station."
    on.add_turn("John", gym, at=datetime(2023, 9, 1))
    off = RaMem(on.store, config=replace(RetrievalConfig(), members=None), counter=WordCounter())
    said = _said(off, "What martial arts has John done?", k=20)  # the first round
    # it places the new taekwondo memory below the list but above the older one
    assert (
        9
        < said.index(f"John: {gym}")
        < said.index("John: Off to do some taekwondo with my cousin!")
    )
    added = _said(on, "What martial arts has John done?")[8:]
    assert added == [f"John: {gym}", "John: I went to karate class tonight."]


def test_a_question_to_the_agent_is_never_a_find(tmp_path: Path) -> None:
    on = _memory(tmp_path, RetrievalConfig(members=SecondRound(slots=3)))
    on.add_turn("John", "Is judo hard to learn?", at=datetime(2023, 9, 1), kind=Kind.QUESTION)
    said = _said(on, "What martial arts has John done?")
    assert _with(said[8:], "karate")
    assert _with(said[8:], "taekwondo")
    assert not _with(said, "judo")  # asking about judo is not having done it


def test_content_only_has_no_second_round() -> None:
    from ramem_core.retrieval import CONTENT_ONLY

    assert CONTENT_ONLY.members is None
    assert RetrievalConfig().members == SecondRound()


def test_a_bad_second_round_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="slots"):
        SecondRound(slots=0)
    with pytest.raises(InvalidInputError, match="similarity"):
        SecondRound(similarity=2.0)


def test_finds_take_places_after_the_kept_ones_and_the_list_keeps_its_length() -> None:
    from ramem_core.retrieval.passes import Pick
    from ramem_core.retrieval.passes.set_members import with_finds

    chosen = [Pick(row) for row in range(10)]
    finds = [Pick(42, valid=True), Pick(7, valid=True)]
    assert with_finds(chosen, finds, 8) == [*chosen[:8], *finds]
    assert with_finds(chosen[:8], finds[:1], 8) == chosen[:8]  # nothing after the kept
    assert with_finds(chosen, [Pick(9)], 8) == [*chosen[:8], Pick(9), Pick(8)]


def test_term_vectors_are_embedded_once_per_term() -> None:
    embedder = KindEmbedder()
    vectors = TermVectors(embedder)
    index = LexicalIndex()
    index.extend([{"karat": 1.0, "art": 1.0}, {"judo": 1.0}])
    terms, matrix = vectors.of(index)
    assert terms == ["karat", "art", "judo"]
    assert np.allclose(matrix, embedder.embed(terms))
    embedder.calls.clear()
    assert vectors.of(index)[0] == terms
    assert embedder.calls == []  # read again: nothing embedded
    grown, _ = index.evolve([], [{"taekwondo": 1.0, "judo": 1.0}])
    assert vectors.of(grown)[0] == [*terms, "taekwondo"]
    assert embedder.calls == [["taekwondo"]]  # only the new term
    embedder.calls.clear()
    reloaded = LexicalIndex()  # the same documents read from a file: a new line of indexes
    reloaded.extend([{"judo": 1.0}, {"taekwondo": 1.0}, {"kickbox": 1.0}])
    assert vectors.of(reloaded)[0] == ["judo", "taekwondo", "kickbox"]
    assert embedder.calls == [["kickbox"]]  # the others come from the line kept


def test_the_members_are_not_the_questions_own_words_in_another_form() -> None:
    embedder = KindEmbedder()
    terms = ["martial", "karat", "parad"]
    kind = embedder.embed(["martial arts"])[0]
    asked = Tokenizer()("What martial arts has John done?")
    near = _near(terms, embedder.embed(terms), kind, asked, SecondRound())
    assert embedder.embed(["martial"])[0] @ kind > SecondRound().similarity
    assert list(near) == ["karat"]  # "martial" is near, but the first round asked for it


class GatedEmbedder(KindEmbedder):
    """The kind embedder, whose calls wait until ``gate`` is set (a slow model)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        assert self.gate.wait(10), "the gate was never opened"
        return super().embed(texts)


def test_a_large_vocabulary_is_embedded_in_the_background() -> None:
    embedder = GatedEmbedder()
    vectors = TermVectors(embedder, inline=2)
    index = LexicalIndex()
    index.extend([{"karat": 1.0, "art": 1.0}, {"judo": 1.0, "taekwondo": 1.0}])
    terms, matrix = vectors.of(index)  # returns without waiting for the model
    assert terms == []
    assert matrix.shape == (0, embedder.dimension)
    embedder.gate.set()
    vectors.join(10)
    terms, matrix = vectors.of(index)
    assert terms == ["karat", "art", "judo", "taekwondo"]
    assert np.allclose(matrix, KindEmbedder().embed(terms))
    # a few new terms (at most ``inline``) are embedded while the question waits
    grown, _ = index.evolve([], [{"kickbox": 1.0, "judo": 1.0}])
    embedder.calls.clear()
    assert vectors.of(grown)[0] == [*terms, "kickbox"]
    assert embedder.calls == [["kickbox"]]


def test_the_second_round_does_not_wait_for_a_large_vocabulary(tmp_path: Path) -> None:
    waiting = RetrievalConfig(members=SecondRound(inline_terms=0))
    on = RaMem(_memory(tmp_path).store, config=waiting, counter=WordCounter())
    off = RaMem(on.store, config=replace(RetrievalConfig(), members=None), counter=WordCounter())
    query = "What martial arts has John done?"
    assert _said(on, query) == _said(off, query)  # no term embedded yet: no finds
    _terms(on).join(10)
    assert _with(_said(on, query)[8:], "taekwondo")


def test_an_evaluation_reads_every_term_vector() -> None:
    from ramem_core.evaluation.harness import SYSTEMS, view_config

    assert view_config("ramem").members == replace(SecondRound(), inline_terms=None)
    assert view_config("content") == SYSTEMS["content"]


def test_the_kind_is_embedded_with_the_question_in_one_pass(tmp_path: Path) -> None:
    on = _memory(tmp_path)
    on.recall("What martial arts has John done?")  # the term vectors
    embedder = _terms(on).embedder
    assert isinstance(embedder, KindEmbedder)
    embedder.calls.clear()
    on.recall("Which sports has Maria done?")
    assert embedder.calls == [["Which sports has Maria done?", "sports"]]


def test_background_embedding_stops_at_exit_after_its_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ramem_core.retrieval import members

    monkeypatch.setattr(members, "_STOPPING", threading.Event())
    embedder = GatedEmbedder()
    vectors = TermVectors(embedder, inline=0)
    vectors.CHUNK = 1
    index = LexicalIndex()
    index.extend([{"karat": 1.0, "art": 1.0}, {"judo": 1.0, "taekwondo": 1.0}])
    assert vectors.of(index)[0] == []  # the background embedding starts, held by the gate
    threading.Timer(0.2, embedder.gate.set).start()
    members._stop_filling()  # what exit runs: the chunk under way ends, no other starts
    assert len(vectors._matrix(index.vocabulary())) == 1


def test_a_find_says_which_member_it_names(tmp_path: Path) -> None:
    from ramem_core.synthesis import evidence_metadata, system_context, validity

    on = _memory(tmp_path)
    found = on.recall("What martial arts has John done?", k=10)
    added = {e.unit.content: e.member for e in found if e.member is not None}
    assert added == {
        "John: I went to karate class tonight.": Member("karate", "martial arts"),
        "John: Off to do some taekwondo with my cousin!": Member("taekwondo", "martial arts"),
    }
    assert all(e.member is None for e in found[:8])  # the first round's memories
    [taekwondo] = [e for e in found if e.member is not None and e.member.word == "taekwondo"]
    assert ("member", "names 'taekwondo', one of the martial arts asked about") in validity(
        taekwondo
    )
    meta = evidence_metadata(taekwondo)
    assert (meta["member"], meta["member_of"]) == ("taekwondo", "martial arts")
    # what a model is told: the line, and the header that says what it means
    told = system_context(on.situate("What martial arts has John done?", k=10))
    assert "member: names 'taekwondo', one of the martial arts asked about" in told
    assert "which one of them it names (member)" in told


def test_a_member_is_shown_as_it_was_said() -> None:
    tokenize = Tokenizer()
    assert tokenize.written("Kickboxing on Friday wore me out.", "kickbox") == "Kickboxing"
    assert tokenize.written("Nothing here.", "kickbox") == "kickbox"


def test_a_settled_config_waits_for_every_term_vector() -> None:
    from ramem_core.retrieval import CONTENT_ONLY

    assert RetrievalConfig().settled().members == replace(SecondRound(), inline_terms=None)
    assert RetrievalConfig().settled().settled() == RetrievalConfig().settled()
    assert CONTENT_ONLY.settled() is CONTENT_ONLY  # no second round: nothing to wait for
