"""RaMemStore, the LangGraph store: a differential suite against LangGraph's InMemoryStore for
everything the BaseStore contract fixes, then what RaMem adds (episodic search, time filters,
$and/$or, kept created_at), TTL, agents and langmem's tools."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.messages import AIMessage
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore as ReferenceStore

from langchain_ramem.store import RaMemStore, decode_tenant, encode_tenant
from langchain_ramem.testing import ScriptedChatModel
from ramem_core import ChromaStore, InvalidInputError, RaMem
from ramem_core.testing import HashEmbedder, InMemoryStore, WordCounter
from tests.conftest import ticking_clock

START = datetime(2024, 1, 1, 9, 0)


def ramem_store(**kwargs: Any) -> RaMemStore:
    memory = RaMem(InMemoryStore(HashEmbedder()), counter=WordCounter())
    return RaMemStore(memory, clock=kwargs.pop("clock", ticking_clock(START)), **kwargs)


@pytest.fixture(params=["reference", "ramem", "ramem-chroma"])
def either(request: pytest.FixtureRequest, memory: RaMem) -> BaseStore:
    """The same scenario against LangGraph's InMemoryStore and RaMemStore (fake and Chroma)."""
    if request.param == "reference":
        return ReferenceStore()
    if request.param == "ramem":
        return ramem_store()
    return RaMemStore(memory, clock=ticking_clock(START))


def keys(items: list[Any]) -> set[tuple[tuple[str, ...], str]]:
    return {(tuple(i.namespace), i.key) for i in items}


# ---------------------------------------------------------------- the contract, differentially


def test_values_round_trip_exactly(either: BaseStore) -> None:
    value = {"content": "Jo likes tea", "nested": {"a": [1, 2.5, None, True]}, "é": "ü"}
    either.put(("memories", "u1"), "k1", value)
    item = either.get(("memories", "u1"), "k1")
    assert item is not None
    assert item.value == value
    assert (item.namespace, item.key) == (("memories", "u1"), "k1")
    assert either.get(("memories", "u1"), "missing") is None
    assert either.get(("memories", "u2"), "k1") is None


def test_update_replaces_and_delete_removes(either: BaseStore) -> None:
    either.put(("memories", "u1"), "k1", {"content": "old"})
    either.put(("memories", "u1"), "k1", {"content": "new", "extra": 1})
    item = either.get(("memories", "u1"), "k1")
    assert item is not None
    assert item.value == {"content": "new", "extra": 1}
    assert len(either.search(("memories",))) == 1
    either.delete(("memories", "u1"), "k1")
    either.delete(("memories", "u1"), "never-there")
    assert either.get(("memories", "u1"), "k1") is None
    assert either.search(("memories",)) == []


def _fill(store: BaseStore) -> None:
    store.put(("foo",), "a", {"content": "alpha", "n": 1, "tag": "x", "meta": {"lang": "en"}})
    store.put(("foo", "x"), "b", {"content": "beta", "n": 5, "tag": "y", "meta": {"lang": "de"}})
    store.put(("foo", "x", "deep"), "c", {"content": "gamma", "n": 9, "tag": "x"})
    store.put(("foobar",), "d", {"content": "delta", "n": 3, "tag": "x"})
    store.put(("other", "u"), "e", {"content": "eps", "n": 7, "list": [1, 2]})


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ((), {"a", "b", "c", "d", "e"}),
        (("foo",), {"a", "b", "c"}),  # whole labels: not ("foobar",)
        (("foo", "x"), {"b", "c"}),
        (("foo", "x", "deep"), {"c"}),
        (("foob",), set()),
        (("foo", "x", "dee"), set()),  # inside a tenant too
        (("nothing",), set()),
    ],
)
def test_prefixes_match_whole_labels(
    either: BaseStore, prefix: tuple[str, ...], expected: set[str]
) -> None:
    _fill(either)
    assert {i.key for i in either.search(prefix, limit=50)} == expected


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"tag": "x"}, {"a", "c", "d"}),
        ({"meta": {"lang": "de"}}, {"b"}),
        ({"list": [1, 2]}, {"e"}),
        ({"n": {"$eq": 5}}, {"b"}),
        ({"n": {"$ne": 5}}, {"a", "c", "d", "e"}),
        ({"n": {"$gt": 5}}, {"c", "e"}),
        ({"n": {"$gte": 5}}, {"b", "c", "e"}),
        ({"n": {"$lt": 5}}, {"a", "d"}),
        ({"n": {"$lte": 5}}, {"a", "b", "d"}),
        ({"n": {"$gt": 1, "$lt": 9}}, {"b", "d", "e"}),
        ({"tag": "x", "n": {"$gte": 3}}, {"c", "d"}),
        ({"tag": "nope"}, set()),
    ],
)
def test_filters_match_as_langgraph_does(
    either: BaseStore, flt: dict[str, Any], expected: set[str]
) -> None:
    _fill(either)
    assert {i.key for i in either.search((), filter=flt, limit=50)} == expected


def test_limit_and_offset_page_through_filtered_results(either: BaseStore) -> None:
    _fill(either)
    pages = [either.search((), filter={"tag": "x"}, limit=2, offset=o) for o in (0, 2, 4)]
    assert [len(p) for p in pages] == [2, 1, 0]
    assert set().union(*(keys(p) for p in pages)) == keys(
        either.search((), filter={"tag": "x"}, limit=10)
    )
    assert all(i.score is None for p in pages for i in p)  # no query: no score


def test_batch_answers_each_op_in_order_reads_before_writes(either: BaseStore) -> None:
    ns = ("memories", "u1")
    either.put(ns, "k", {"content": "before"})
    results = either.batch(
        [
            PutOp(ns, "k", {"content": "first"}),
            GetOp(ns, "k"),
            PutOp(ns, "k", {"content": "last"}),  # the last put to a key wins
            SearchOp(("memories",), limit=5),
            ListNamespacesOp(),
            PutOp(ns, "gone", None),
        ]
    )
    assert len(results) == 6
    assert results[0] is None
    assert results[2] is None
    assert results[5] is None
    got, found = results[1], results[3]
    assert isinstance(got, Item)
    assert got.value == {"content": "before"}
    assert isinstance(found, list)
    assert [i.value for i in found] == [{"content": "before"}]  # type: ignore[union-attr]
    assert results[4] == [ns]
    item = either.get(ns, "k")
    assert item is not None
    assert item.value == {"content": "last"}


@pytest.mark.parametrize("namespace", [(), ("a.b",), ("memories", ""), ("langgraph", "x")])
def test_bad_namespaces_are_refused(either: BaseStore, namespace: tuple[str, ...]) -> None:
    with pytest.raises(InvalidNamespaceError):
        either.put(namespace, "k", {"content": "x"})
    assert either.list_namespaces() == []


def test_listing_namespaces(either: BaseStore) -> None:
    _fill(either)
    everything = [("foo",), ("foo", "x"), ("foo", "x", "deep"), ("foobar",), ("other", "u")]
    assert either.list_namespaces() == everything
    assert either.list_namespaces(prefix=("foo",)) == everything[:3]
    assert either.list_namespaces(prefix=("foo", "*")) == everything[1:3]
    assert either.list_namespaces(suffix=("x",)) == [("foo", "x")]
    assert either.list_namespaces(suffix=("*", "deep")) == [("foo", "x", "deep")]
    assert either.list_namespaces(max_depth=1) == [("foo",), ("foobar",), ("other",)]
    assert either.list_namespaces(limit=2, offset=1) == everything[1:3]
    either.delete(("foobar",), "d")
    # a documented difference: the reference keeps listing a namespace it emptied
    emptied_listed = not isinstance(either, RaMemStore)
    assert (("foobar",) in either.list_namespaces()) is emptied_listed


# ---------------------------------------------------------------- where RaMemStore differs


def test_created_at_is_kept_and_updated_at_moves() -> None:
    store = ramem_store()
    store.put(("memories", "u1"), "k", {"content": "v1"})
    first = store.get(("memories", "u1"), "k")
    store.put(("memories", "u1"), "k", {"content": "v2"})
    second = store.get(("memories", "u1"), "k")
    assert first is not None
    assert second is not None
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert second.created_at.tzinfo is timezone.utc


def test_queryless_search_lists_the_latest_first() -> None:
    store = ramem_store()
    for key in ("a", "b", "c"):
        store.put(("memories", "u1"), key, {"content": key})
    store.put(("memories", "u1"), "a", {"content": "a again"})
    assert [i.key for i in store.search(("memories",))] == ["a", "c", "b"]


def test_time_filters_compare_times_not_text() -> None:
    store = ramem_store()
    store.put(("m", "u"), "early", {"content": "x", "when": "2024-03-01"})
    store.put(("m", "u"), "late", {"content": "y", "when": "2024-11-20T10:00:00+00:00"})
    store.put(("m", "u"), "zoned", {"content": "z", "when": "2024-11-20T09:00:00-05:00"})
    store.put(("m", "u"), "none", {"content": "w"})
    after = store.search(("m",), filter={"when": {"$gt": "2024-11-20T12:00:00Z"}})
    assert {i.key for i in after} == {"zoned"}  # 14:00 UTC: later, though "09" < "12" as text
    spring = store.search(("m",), filter={"when": {"$gte": "2024-01-01", "$lt": "2024-06-01"}})
    assert {i.key for i in spring} == {"early"}
    reference = ReferenceStore()
    reference.put(("m", "u"), "early", {"when": "2024-03-01"})
    with pytest.raises(ValueError, match="could not convert"):  # the bug it fixes
        reference.search(("m",), filter={"when": {"$gt": "2024-01-01"}})


def test_and_or_filters_work_and_bad_filters_are_clear_errors() -> None:
    store = ramem_store()
    _fill(store)
    either_of = store.search((), filter={"$or": [{"tag": "y"}, {"n": {"$gte": 7}}]})
    assert {i.key for i in either_of} == {"b", "c", "e"}
    both = store.search((), filter={"$and": [{"tag": "x"}, {"n": {"$lt": 5}}]})
    assert {i.key for i in both} == {"a", "d"}
    for bad, message in [
        ({"n": {"$regex": "a"}}, "unknown filter operator '\\$regex'"),
        ({"$nor": [{"n": 1}]}, "unknown filter operator '\\$nor'"),
        ({"$or": {"n": 1}}, "non-empty list of filters"),
        ({"n": {"$gt": "soon"}}, "needs a number or an ISO date"),
        ("n=1", "filter must be a dict"),
    ]:
        with pytest.raises(InvalidInputError, match=message):
            store.search((), filter=bad)  # type: ignore[arg-type]


def test_a_bad_op_fails_the_batch_before_anything_is_written() -> None:
    store = ramem_store()
    with pytest.raises(InvalidInputError, match="unknown filter operator"):
        store.batch(
            [
                PutOp(("m", "u"), "k", {"content": "x"}),
                SearchOp(("m",), filter={"n": {"$like": 1}}),
            ]
        )
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("m", "u"), "k", {"content": "x"}), GetOp(("a.b",), "k")])
    assert store.get(("m", "u"), "k") is None
    assert store.list_namespaces() == []


def test_unindexed_items_are_stored_but_found_only_after_ranked_ones() -> None:
    store = ramem_store()
    store.put(("m", "u"), "plain", {"content": "camping in the Alps"}, index=False)
    store.put(("m", "u"), "found", {"content": "camping in the Alps with Jo"})
    store.put(("m", "u"), "other", {"content": "sourdough bread"})
    hits = store.search(("m",), query="camping in the Alps", limit=3)
    assert [i.key for i in hits][-1] == "plain"
    assert hits[-1].score is None
    assert all(i.score is not None for i in hits[:-1])
    assert [i.key for i in store.search(("m",), query="camping", limit=2)] == ["found", "other"]
    plain = store.get(("m", "u"), "plain")
    assert plain is not None
    assert plain.value == {"content": "camping in the Alps"}


def test_query_search_is_episodic_and_scores_fall_with_rank() -> None:
    store = ramem_store()
    ns = ("memories", "u1")
    store.put(ns, "aug", {"content": "I planned a trip to Lisbon.", "said_at": "2023-08-10"})
    store.put(ns, "mar", {"content": "I planned a trip to Rome.", "said_at": "2024-03-02"})
    store.put(ns, "nov", {"content": "I planned a trip to Oslo.", "said_at": "2023-11-05"})
    hits = store.search(ns, query="What trip did I plan last August?")
    assert hits[0].key == "aug"
    scores = [i.score for i in hits]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert scores[0] == 1.0
    window = "I like tea. " * 2000 + "What trip did I plan last August?"
    assert store.search(ns, query=window)[0].key == "aug"  # the window's last characters


def test_texts_come_from_fields_langmem_content_or_the_whole_value() -> None:
    store = ramem_store()
    ns = ("m", "u")
    store.put(ns, "plain", {"content": "sailing on the lake"})
    store.put(ns, "langmem", {"content": {"content": "knitting a red scarf"}})
    store.put(ns, "other", {"hobby": "birdwatching in spring"})
    store.put(ns, "chosen", {"note": "pottery classes", "content": "x"}, index=["note"])
    for query, key in [
        ("sailing lake", "plain"),
        ("knitting scarf", "langmem"),
        ("birdwatching", "other"),
        ("pottery classes", "chosen"),
    ]:
        assert store.search(ns, query=query, limit=1)[0].key == key
    stored = {u.content for u in store.memory.store.get(encode_tenant(ns))}
    assert not any("said_at" in c or '"ns"' in c for c in stored)  # no RaMem keys leak


def test_a_search_across_tenants_interleaves_them_by_rank() -> None:
    store = ramem_store()
    for user in ("u1", "u2"):
        store.put(("memories", user), "tea", {"content": f"{user} drinks green tea daily"})
        store.put(("memories", user), "bike", {"content": f"{user} rides a bike"})
    hits = store.search(("memories",), query="green tea", limit=4)
    assert [i.key for i in hits[:2]] == ["tea", "tea"]
    assert {i.namespace for i in hits[:2]} == {("memories", "u1"), ("memories", "u2")}
    assert [i.score for i in hits] == [1.0, 1.0, 0.5, 0.5]


def test_tenants_map_to_ramem_namespaces_reversibly_and_can_be_dropped() -> None:
    for tenant in [("memories", "u-42"), ("a b", "x_y", "é-"), ("-x-",), ("n", "x" * 200)]:
        name = encode_tenant(tenant)
        assert len(name) <= 122
        assert decode_tenant(name) in (tenant, None)
    assert decode_tenant(encode_tenant(("memories", "u-42"))) == ("memories", "u-42")
    store = ramem_store()
    store.put(("memories", "x" * 200), "k", {"content": "long id"})
    store.put(("memories", "u1"), "k", {"content": "one"})
    store.put(("memories", "u1", "deep"), "k", {"content": "two"})
    assert store.list_namespaces(prefix=("memories",)) == [
        ("memories", "u1"),
        ("memories", "u1", "deep"),
        ("memories", "x" * 200),
    ]
    assert store.drop_namespace(("memories", "u1", "deep")) == 1
    assert store.get(("memories", "u1"), "k") is not None
    assert store.drop_namespace(("memories",)) == 2
    assert store.list_namespaces() == []


async def test_abatch_runs_off_the_event_loop() -> None:
    store = ramem_store()
    loop_thread = threading.get_ident()
    seen: list[int] = []
    batch = store.batch

    def spy(ops: Any) -> Any:
        seen.append(threading.get_ident())
        return batch(ops)

    store.batch = spy  # type: ignore[method-assign]
    await store.aput(("m", "u"), "k", {"content": "x"})
    got, listed = await asyncio.gather(store.aget(("m", "u"), "k"), store.alist_namespaces())
    assert got is not None
    assert listed == [("m", "u")]
    assert seen
    assert loop_thread not in seen


def test_a_put_is_an_episode_of_its_thread_owner_and_time() -> None:
    store = ramem_store(clock=lambda: datetime(2024, 5, 2, 9))
    store.put(("memories", "ana"), "k", {"content": "I sold my bike yesterday."})
    [unit] = store.memory.store.get(encode_tenant(("memories", "ana")))
    assert unit.context.speaker == "ana"
    assert unit.context.conversation_id == "store"  # no run: no thread
    assert unit.context.session_span is not None
    assert unit.context.session_span.start == datetime(2024, 5, 2, 9)
    assert unit.context.event_time is not None
    assert unit.context.event_time.start.date() == datetime(2024, 5, 1).date()
    store.put(("memories", "ana"), "j", {"content": "Ben says hi", "speaker": "Ben"})
    said = {u.content for u in store.memory.store.get(encode_tenant(("memories", "ana")))}
    assert "Ben: Ben says hi" in said


# ---------------------------------------------------------------- TTL
# LangGraph's InMemoryStore has no TTL (supports_ttl is False and put(..., ttl=5) raises
# NotImplementedError), so these follow LangGraph's documented semantics instead (BaseStore.put,
# PutOp.ttl, TTLConfig): ttl is minutes from the last write or refreshing read; None never
# expires; a put that names no ttl takes TTLConfig.default_ttl; refresh_ttl (default
# TTLConfig.refresh_on_read, else True) refreshes on get and search; expired items are omitted
# from reads (TTLConfig.omit_expired, always on here) before a sweep deletes them.


class Clock:
    """A clock a test moves by hand (naive UTC)."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += timedelta(minutes=minutes)


Timed = Callable[..., tuple[RaMemStore, Clock]]


@pytest.fixture(params=["ramem", "ramem-chroma"])
def timed(request: pytest.FixtureRequest, memory: RaMem) -> Timed:
    """Makes a RaMemStore on a hand-moved clock, over the fake store or Chroma."""

    def make(**kwargs: Any) -> tuple[RaMemStore, Clock]:
        clock = Clock()
        if request.param == "ramem":
            return ramem_store(clock=clock, **kwargs), clock
        return RaMemStore(memory, clock=clock, **kwargs), clock

    return make


def _stored(store: RaMemStore, namespace: tuple[str, ...]) -> int:
    """How many memory units RaMem holds for a tenant (swept or not)."""
    return store.memory.count(namespace=encode_tenant(namespace))


def test_the_reference_has_no_ttl_so_ttl_follows_langgraphs_docs() -> None:
    reference = ReferenceStore()
    assert not reference.supports_ttl
    with pytest.raises(NotImplementedError, match="TTL is not supported"):
        reference.put(("m", "u"), "k", {"content": "x"}, ttl=5)
    assert ramem_store().supports_ttl


def test_before_expiry_a_store_with_ttl_answers_as_the_reference() -> None:
    store, reference = ramem_store(clock=Clock(), ttl={"default_ttl": 60}), ReferenceStore()
    _fill(store)
    _fill(reference)
    got, expected = store.get(("foo",), "a"), reference.get(("foo",), "a")
    assert got is not None
    assert expected is not None
    assert got.value == expected.value
    for prefix in [(), ("foo",), ("foo", "x")]:
        assert keys(store.search(prefix, limit=50)) == keys(reference.search(prefix, limit=50))
    assert store.list_namespaces() == reference.list_namespaces()


@pytest.mark.parametrize("use_async", [True, False])
async def test_an_expired_item_is_hidden_from_every_read_at_once(
    timed: Timed, use_async: bool
) -> None:
    store, clock = timed()
    if use_async:
        await store.aput(("m", "u"), "brief", {"content": "the door code is 1234"}, ttl=5)
    else:
        store.put(("m", "u"), "brief", {"content": "the door code is 1234"}, ttl=5)
    store.put(("m", "u"), "kept", {"content": "the door is blue"})
    store.put(("m", "v"), "alone", {"content": "the door code is 9876"}, ttl=5)
    clock.advance(4.99)
    assert store.get(("m", "u"), "brief", refresh_ttl=False) is not None
    clock.advance(0.01)  # exactly 5 minutes after the put: expired
    stored = _stored(store, ("m", "u"))
    if use_async:
        assert await store.aget(("m", "u"), "brief") is None
    else:
        assert store.get(("m", "u"), "brief") is None
    assert store.get(("m", "v"), "alone") is None
    assert [i.key for i in store.search(("m",))] == ["kept"]
    assert [i.key for i in store.search(("m",), query="door code")] == ["kept"]
    assert store.list_namespaces() == [("m", "u")]
    assert _stored(store, ("m", "u")) == stored  # hidden before any sweep, not deleted
    assert store.drop_namespace(("m", "v")) == 0  # nothing that was still there went


def test_default_ttl_applies_to_puts_that_name_none_and_none_never_expires(timed: Timed) -> None:
    store, clock = timed(ttl={"default_ttl": 10})
    ns = ("m", "u")
    store.put(ns, "default", {"content": "a"})
    store.put(ns, "never", {"content": "b"}, ttl=None)
    store.put(ns, "own", {"content": "c"}, ttl=30)
    clock.advance(10)
    assert {i.key for i in store.search(ns, refresh_ttl=False)} == {"never", "own"}
    clock.advance(20)
    assert {i.key for i in store.search(ns, refresh_ttl=False)} == {"never"}
    clock.advance(10**8)
    assert store.sweep_ttl() == 2  # "default" and "own"
    assert store.get(ns, "never") is not None


@pytest.mark.parametrize(
    "read",
    [
        lambda s: s.get(("m", "u"), "k"),
        lambda s: s.search(("m",)),
        lambda s: s.search(("m",), query="sourdough"),
    ],
    ids=["get", "search", "search a query"],
)
def test_a_read_refreshes_the_expiry(timed: Timed, read: Callable[[RaMemStore], Any]) -> None:
    store, clock = timed()
    store.put(("m", "u"), "k", {"content": "a sourdough starter in the fridge"}, ttl=5)
    clock.advance(4)
    assert read(store)
    clock.advance(4)  # 8 minutes after the put, 4 after the read
    assert store.get(("m", "u"), "k", refresh_ttl=False) is not None
    clock.advance(1)
    assert store.get(("m", "u"), "k") is None


def test_refresh_ttl_false_leaves_the_expiry(timed: Timed) -> None:
    store, clock = timed()
    store.put(("m", "u"), "k", {"content": "x"}, ttl=5)
    clock.advance(4)
    assert store.get(("m", "u"), "k", refresh_ttl=False) is not None
    assert store.search(("m",), refresh_ttl=False)
    clock.advance(1)
    assert store.get(("m", "u"), "k") is None


def test_refresh_on_read_false_is_the_default_a_read_can_override(memory: RaMem) -> None:
    clock = Clock()
    store = RaMemStore(memory, clock=clock, ttl={"refresh_on_read": False})
    store.put(("m", "u"), "plain", {"content": "x"}, ttl=5)
    store.put(("m", "u"), "asked", {"content": "y"}, ttl=5)
    clock.advance(4)
    assert store.get(("m", "u"), "plain") is not None
    assert store.get(("m", "u"), "asked", refresh_ttl=True) is not None
    clock.advance(1)
    assert store.get(("m", "u"), "plain") is None
    assert store.get(("m", "u"), "asked") is not None


def test_a_refresh_rewrites_every_piece_and_keeps_the_episode(timed: Timed) -> None:
    store, clock = timed()
    ns = ("m", "u")
    text = " ".join(f"On day {n} I watered the tomatoes." for n in range(200))
    store.put(ns, "long", {"content": text, "said_at": "2023-05-01"}, ttl=5)
    before = sorted(store.memory.store.get(encode_tenant(ns)), key=lambda u: u.id)
    assert len(before) > 2
    clock.advance(3)
    assert store.get(ns, "long") is not None
    after = sorted(store.memory.store.get(encode_tenant(ns)), key=lambda u: u.id)
    expires = {json.loads(u.payload)["expires"] for u in after}
    assert expires == {datetime(2024, 1, 1, 9, 8, tzinfo=timezone.utc).isoformat()}
    assert [(u.id, u.content, u.context) for u in after] == [
        (u.id, u.content, u.context) for u in before
    ]
    clock.advance(4)  # past the first expiry: every piece says the item lives
    assert store.search(ns, query="watered the tomatoes day 199", limit=1)[0].key == "long"


def test_a_refreshing_read_embeds_nothing() -> None:
    """A refresh moves an expiry, never a text: every piece keeps its stored vector."""
    asked: list[str] = []

    class Counting(HashEmbedder):
        def embed(self, texts: Sequence[str]) -> Any:
            asked.extend(texts)
            return super().embed(texts)

    embedder = Counting()
    clock = Clock()
    store = RaMemStore(RaMem(InMemoryStore(embedder), counter=WordCounter()), clock=clock)
    text = " ".join(f"On day {n} I watered the tomatoes." for n in range(200))
    store.put(("m", "u"), "long", {"content": text}, ttl=5)
    clock.advance(3)
    asked.clear()
    assert store.get(("m", "u"), "long") is not None
    assert store.search(("m",), query="tomatoes day 3")
    assert "tomatoes day 3" in asked  # the query is embedded, no piece again
    assert not [t for t in asked if "watered" in t]
    clock.advance(4)  # past the first expiry: the refresh moved it
    assert store.get(("m", "u"), "long", refresh_ttl=False) is not None


def test_a_refresh_never_undoes_a_put_made_after_the_read(memory: RaMem) -> None:
    clock = Clock()
    store, other = RaMemStore(memory, clock=clock), RaMemStore(memory, clock=clock)
    store.put(("m", "u"), "k", {"content": "v1"}, ttl=5)
    clock.advance(1)
    reads = 0
    keyed = store.memory.keyed
    read_keyed = keyed.get

    def another_worker_puts_between(keys: Any, *, namespace: Any = None) -> Any:
        nonlocal reads
        reads += 1
        if reads == 2:  # the refresh's own read: another worker wrote since the get
            keyed.get = read_keyed  # type: ignore[method-assign]  # (its own reads: not ours)
            other.put(("m", "u"), "k", {"content": "v2"}, ttl=None)
            keyed.get = another_worker_puts_between  # type: ignore[method-assign]
        return read_keyed(keys, namespace=namespace)

    keyed.get = another_worker_puts_between  # type: ignore[method-assign]
    got = store.get(("m", "u"), "k")
    assert got is not None
    assert got.value == {"content": "v1"}
    assert reads == 2
    keyed.get = read_keyed  # type: ignore[method-assign]
    clock.advance(10**6)
    item = store.get(("m", "u"), "k")
    assert item is not None
    assert item.value == {"content": "v2"}


def test_a_put_over_an_expired_item_starts_a_new_item(timed: Timed) -> None:
    store, clock = timed()
    store.put(("m", "u"), "k", {"content": "old"}, ttl=5)
    clock.advance(6)
    store.put(("m", "u"), "k", {"content": "new"})
    item = store.get(("m", "u"), "k")
    assert item is not None
    assert item.created_at == datetime(2024, 1, 1, 9, 6, tzinfo=timezone.utc)


def test_a_sweep_deletes_expired_items_from_chroma(memory: RaMem) -> None:
    clock = Clock()
    store = RaMemStore(memory, clock=clock, ttl={"default_ttl": 5})
    ns = ("m", "u")
    long = " ".join(f"Note {n}: buy more coffee beans." for n in range(100))
    store.put(ns, "long", {"content": long})
    store.put(ns, "short", {"content": "call the plumber"})
    store.put(ns, "kept", {"content": "the wifi password is on the fridge"}, ttl=None)
    store.put(("m", "v"), "other", {"content": "a dentist visit"}, ttl=60)
    units = memory.count(namespace=encode_tenant(ns))
    assert units > 3  # the long item is several pieces
    assert store.sweep_ttl() == 0
    clock.advance(5)
    assert store.sweep_ttl() == 2
    assert memory.store.count(encode_tenant(ns)) == 1  # Chroma holds only the kept item
    assert memory.count(namespace=encode_tenant(("m", "v"))) == 1
    assert store.sweep_ttl() == 0
    assert {i.key for i in store.search(("m",))} == {"other", "kept"}


def test_expiry_and_its_refresh_survive_reopening_the_store(tmp_path: Path) -> None:
    def opened(at: datetime) -> tuple[ChromaStore, RaMemStore]:
        chroma = ChromaStore.persistent(tmp_path / "db", HashEmbedder())
        return chroma, RaMemStore(RaMem(chroma, counter=WordCounter()), clock=lambda: at)

    chroma, store = opened(START)
    store.put(("m", "u"), "read", {"content": "x"}, ttl=5)
    store.put(("m", "u"), "unread", {"content": "y"}, ttl=5)
    chroma.close()
    chroma, store = opened(START + timedelta(minutes=4))
    assert store.get(("m", "u"), "read") is not None  # expires at 9 minutes now
    chroma.close()
    chroma, store = opened(START + timedelta(minutes=6))
    assert store.get(("m", "u"), "unread", refresh_ttl=False) is None
    assert store.get(("m", "u"), "read", refresh_ttl=False) is not None
    chroma.close()
    chroma, store = opened(START + timedelta(minutes=9))
    assert store.sweep_ttl() == 2
    assert store.memory.count(namespace=encode_tenant(("m", "u"))) == 0
    chroma.close()


def test_the_sweeper_thread_sweeps_until_stopped(memory: RaMem) -> None:
    clock = Clock()
    store = RaMemStore(memory, clock=clock)
    store.put(("m", "u"), "k", {"content": "x"}, ttl=1)
    clock.advance(2)
    done = store.start_ttl_sweeper(sweep_interval_minutes=0.001)  # every 60 ms
    assert store.start_ttl_sweeper() is done  # one sweeper at a time
    deadline = time.monotonic() + 10
    while memory.count(namespace=encode_tenant(("m", "u"))) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert memory.count(namespace=encode_tenant(("m", "u"))) == 0
    assert not done.done()
    assert store.stop_ttl_sweeper(timeout=10)
    assert done.done()
    assert store.stop_ttl_sweeper()  # none runs: nothing to stop
    cancelled = store.start_ttl_sweeper(sweep_interval_minutes=0.001)
    assert cancelled is not done
    assert cancelled.cancel()  # cancelling the future stops its thread too

    def sweeping() -> bool:
        return any(t.name == "ttl-sweeper" for t in threading.enumerate())

    deadline = time.monotonic() + 10
    while sweeping() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not sweeping()
    assert store.stop_ttl_sweeper(timeout=0)


@pytest.mark.parametrize(
    ("ttl", "message"),
    [
        ({"default_ttl": -5}, "default_ttl must be a positive number of minutes or None, got -5"),
        ({"default_ttl": "5"}, "default_ttl must be a positive number of minutes"),
        ({"defualt_ttl": 5}, "unknown TTL setting 'defualt_ttl'"),
        ({"refresh_on_read": "yes"}, "refresh_on_read must be True or False, got 'yes'"),
        ({"sweep_interval_minutes": 0}, "sweep_interval_minutes must be a positive number"),
        ({"omit_expired": False}, "omit_expired must be True"),
        (5, "ttl must be a TTLConfig dict, got int"),
    ],
)
def test_a_bad_ttl_config_is_a_clear_error(memory: RaMem, ttl: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        RaMemStore(memory, ttl=ttl)


# ---------------------------------------------------------------- agents and langmem


def test_create_agent_saves_and_finds_memories_through_runtime_store() -> None:
    @tool
    def save(fact: str, runtime: ToolRuntime) -> str:
        """Save a fact about the user."""
        assert runtime.store is not None
        runtime.store.put(("memories", "u1"), f"f{len(fact)}", {"content": fact})
        return "saved"

    @tool
    def find(query: str, runtime: ToolRuntime) -> str:
        """Find facts about the user."""
        assert runtime.store is not None
        return "; ".join(
            i.value["content"]
            for i in runtime.store.search(("memories", "u1"), query=query, limit=1)
        )

    model = ScriptedChatModel(
        replies=[
            AIMessage(
                "",
                tool_calls=[
                    {"name": "save", "args": {"fact": "I keep bees in the garden"}, "id": "1"}
                ],
            ),
            "Saved.",
            AIMessage("", tool_calls=[{"name": "find", "args": {"query": "bees"}, "id": "2"}]),
            lambda messages: f"You told me: {messages[-1].content}",
        ]
    )
    store = ramem_store()
    agent = create_agent(model, tools=[save, find], store=store)
    agent.invoke(
        {"messages": [("user", "Remember that I keep bees.")]},
        config={"configurable": {"thread_id": "t-7"}},
    )
    [unit] = store.memory.store.get(encode_tenant(("memories", "u1")))
    assert unit.context.conversation_id == "t-7"  # the run's thread is the conversation
    reply = agent.invoke({"messages": [("user", "What do I keep?")]})
    assert reply["messages"][-1].content == "You told me: I keep bees in the garden"


def test_langmem_tools_work_unchanged_and_users_stay_apart() -> None:
    langmem = pytest.importorskip("langmem")
    store = ramem_store()
    manage = langmem.create_manage_memory_tool(
        namespace=("memories", "{langgraph_user_id}"), store=store
    )
    search = langmem.create_search_memory_tool(
        namespace=("memories", "{langgraph_user_id}"), store=store
    )

    def config(user: str) -> dict[str, Any]:
        return {"configurable": {"langgraph_user_id": user}}

    manage.invoke({"content": "Prefers window seats on flights"}, config=config("ana"))
    manage.invoke({"content": "Allergic to peanuts"}, config=config("ben"))
    created = manage.invoke({"content": "Has a dog named Rex"}, config=config("ana"))
    memory_id = created.split()[-1]
    manage.invoke(
        {"content": "Has two dogs, Rex and Fido", "action": "update", "id": memory_id},
        config=config("ana"),
    )
    found = search.invoke({"query": "dogs"}, config=config("ana"))
    assert "Rex and Fido" in found
    assert "peanuts" not in found
    assert "peanuts" in search.invoke({"query": "food allergy"}, config=config("ben"))
    assert "window" not in search.invoke({"query": "seats"}, config=config("ben"))
    manage.invoke({"action": "delete", "id": memory_id}, config=config("ana"))
    assert "Rex" not in search.invoke({"query": "dogs"}, config=config("ana"))


# ---------------------------------------------------------------- bad inputs (issue 31)


def _nested(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = {"k": leaf}
    return leaf


def _deep_and(depth: int) -> Any:
    flt: Any = {"n": 1}
    for _ in range(depth):
        flt = {"$and": [flt]}
    return flt


@pytest.mark.parametrize(
    ("name", "call", "error", "message"),
    [
        ("drop every tenant", lambda s: s.drop_namespace(()), InvalidNamespaceError, "every"),
        ("drop a string", lambda s: s.drop_namespace("u1"), InvalidNamespaceError, "tuple"),
        (
            "a time before the first UTC day",
            lambda s: s.search(("m",), filter={"when": {"$gt": "0001-01-01T00:00:00+05:00"}}),
            InvalidInputError,
            "years 1-9999 in UTC",
        ),
        (
            "a 3,000-deep $and",
            lambda s: s.search(("m",), filter=_deep_and(3000)),
            InvalidInputError,
            "nests deeper than 32",
        ),
        (
            "a 3,000-deep field filter",
            lambda s: s.search(("m",), filter={"a": _nested(3000, "v")}),
            InvalidInputError,
            "nests deeper than 32",
        ),
        (
            "a 3,000-deep list filter",
            lambda s: s.search(("m",), filter={"a": [_nested(3000, "v")]}),
            InvalidInputError,
            "nests deeper than 32",
        ),
        (
            "a 5,000-deep value",
            lambda s: s.put(("m", "u1"), "deep", {"v": _nested(5000, "v")}),
            InvalidInputError,
            "nests too deeply",
        ),
        (
            "list_namespaces max_depth -1",
            lambda s: s.list_namespaces(max_depth=-1),
            InvalidInputError,
            "max_depth must be a non-negative integer",
        ),
        (
            "list_namespaces limit -1",
            lambda s: s.list_namespaces(limit=-1),
            InvalidInputError,
            "limit must be a non-negative integer",
        ),
        (
            "a negative ttl over a stored item",
            lambda s: s.put(("m", "u1"), "a", {"content": "milk"}, ttl=-1),
            InvalidInputError,
            "ttl must be a positive number of minutes or None, got -1",
        ),
        (
            "a ttl of 0 minutes",
            lambda s: s.put(("m", "u1"), "c", {"content": "x"}, ttl=0),
            InvalidInputError,
            "ttl must be a positive number of minutes",
        ),
        (
            "a ttl that is text",
            lambda s: s.put(("m", "u1"), "a", {"content": "milk"}, ttl="5"),
            InvalidInputError,
            "ttl must be a positive number of minutes or None, got '5'",
        ),
        (
            "a ttl that is not finite",
            lambda s: s.put(("m", "u1"), "a", {"content": "milk"}, ttl=float("inf")),
            InvalidInputError,
            "ttl must be a positive number of minutes",
        ),
        (
            "a ttl that is a bool",
            lambda s: s.put(("m", "u1"), "a", {"content": "milk"}, ttl=True),
            InvalidInputError,
            "ttl must be a positive number of minutes",
        ),
        (
            "a refresh_ttl that is text",
            lambda s: s.get(("m", "u1"), "a", refresh_ttl="no"),
            InvalidInputError,
            "refresh_ttl must be True, False or None, got 'no'",
        ),
        (
            "a sweep interval of 0",
            lambda s: s.start_ttl_sweeper(0),
            InvalidInputError,
            "sweep_interval_minutes must be a positive number of minutes",
        ),
    ],
)
def test_bad_store_inputs_are_clear_errors_and_lose_nothing(
    name: str, call: Any, error: type[Exception], message: str
) -> None:
    store = ramem_store(tenant_depth=2)
    store.put(("m", "u1"), "a", {"content": "tea"})
    store.put(("m", "u2"), "b", {"content": "coffee"})
    with pytest.raises(error, match=message):
        call(store)
    assert {i.key for i in store.search(("m",))} == {"a", "b"}
    kept = store.get(("m", "u1"), "a")
    assert kept is not None
    assert kept.value == {"content": "tea"}


@pytest.mark.parametrize("said", ["1800-01-01", "0001-01-01T00:00:00+05:00"])
def test_a_valid_item_the_reference_accepts_is_accepted(said: str) -> None:
    """Any JSON value the reference store takes is stored; a time RaMem does not place
    (before 1900, before the first UTC day) leaves the item at its write time."""
    store, reference = ramem_store(), ReferenceStore()
    for either in (store, reference):
        either.put(("m", "u1"), "old", {"content": "a letter", "said_at": said})
    item = store.get(("m", "u1"), "old")
    assert item is not None
    assert item.value == reference.get(("m", "u1"), "old").value  # type: ignore[union-attr]


def test_items_of_any_size_move_through_an_export(tmp_path: Path) -> None:
    """A LangGraph item of any size the store accepts exports and imports elsewhere whole: the
    import accepts every memory the store itself accepts."""
    from ramem_core.store.chroma import ChromaStore

    source = RaMem(ChromaStore.persistent(tmp_path / "a", HashEmbedder()))
    values = {f"k{n}": {"text": "x" * n, "n": n} for n in (10, 20_000, 200_000)}
    for key, value in values.items():
        RaMemStore(source).put(("u1", "notes"), key, value)
    [namespace] = source.store.namespaces()
    source.transfer.export(tmp_path / "notes.jsonl", namespace=namespace)
    target = RaMem(ChromaStore.persistent(tmp_path / "b", HashEmbedder()))
    target.transfer.import_from(tmp_path / "notes.jsonl", namespace=namespace)
    moved = RaMemStore(target)
    for key, value in values.items():
        item = moved.get(("u1", "notes"), key)
        assert item is not None
        assert item.value == value
