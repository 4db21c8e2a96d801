"""Faults, measured: what RaMem loses, duplicates or hides when writes fail ambiguously,
writers are killed, loads straddle deletes and shared snapshot files are hostile; how long a
stalled server takes to become an error; what open/close cycles leave behind; how many
version records writers leave; where the time of a long turn goes.

    python benchmarks/bench_faults.py            # about 5 minutes on two cores

Faults are injected deterministically (a patched Chroma collection, a stalling TCP proxy in
front of a real ``chroma run``), never by timed races. Prints one table per part and writes
``benchmarks/results/bench_faults.json``. Not a test: the tests pin each behaviour
(``tests/core/test_faults.py``); this counts them at scale.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import random
import shutil
import tempfile
import threading
import time
import zipfile
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import chromadb
import numpy as np

from ramem_core import RaMem, StoreError, UncertainWriteError
from ramem_core.index.files import SnapshotFiles
from ramem_core.store.chroma import VERSION_ID, ChromaStore, client_settings
from ramem_core.testing import (
    HashEmbedder,
    StallingProxy,
    WordCounter,
    rewrite_snapshot_file,
    serve_chroma,
)

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "bench_faults.json"
T0 = datetime(2024, 3, 1, 9, 0)
logging.getLogger("ramem_core").setLevel(logging.CRITICAL)  # refusals are counted, not shown


class _Patched:
    def __init__(self, inner: object, **methods: object) -> None:
        self.inner, self.methods = inner, methods

    def __getattr__(self, name: str) -> object:
        return self.methods.get(name) or getattr(self.inner, name)


def _progress(label: str, done: int, total: int) -> None:
    if done == total or done % max(1, total // 10) == 0:
        print(f"\r  {label}: {done}/{total}", end="\n" if done == total else "", flush=True)


# --------------------------------------------------------------------------- writes


def ambiguous_writes(turns: int, seed: int = 0) -> dict[str, Any]:
    """Two workers record one conversation, turn by turn; each write of the first meets a
    fault drawn at random: none, lost before the commit, lost after it (the reply), or lost
    after it with the store unreadable (the outcome unknown). The writer retries as the error
    says. Lost: a turn never stored; duplicated: stored twice; hidden: stored but not served
    by the other worker."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        client = chromadb.PersistentClient(path=tmp, settings=client_settings())
        one, two = (
            RaMem(ChromaStore(client, HashEmbedder()), counter=WordCounter(), refresh_seconds=0)
            for _ in range(2)
        )
        one.add_turn("Ana", "A first note.", at=T0)
        collection = one.store.collection("default")  # type: ignore[attr-defined]
        faults: Counter[str] = Counter()
        state = {"fault": "none", "down": False}

        def upsert(**kwargs: Any) -> None:
            fault = state["fault"]
            if fault == "before":
                raise ConnectionError("connection reset before the request")
            collection.upsert(**kwargs)
            if fault in ("after", "unknown"):
                state["down"] = fault == "unknown"
                raise ConnectionError("connection reset after the commit")

        def get(**kwargs: Any) -> Any:
            if state["down"]:
                raise ConnectionError("server unreachable")
            return collection.get(**kwargs)

        one.store._collections["default"] = _Patched(collection, upsert=upsert, get=get)  # type: ignore[attr-defined]
        intended = ["A first note."]
        errors: Counter[str] = Counter()
        for i in range(turns):
            text = f"Turn {i} of the conversation."
            state["fault"] = rng.choice(["none", "before", "after", "unknown"])
            faults[state["fault"]] += 1
            at = T0 + timedelta(minutes=i + 1)
            writer = one if i % 3 else two
            key = None
            for _attempt in range(3):
                try:
                    writer.add_turn("Ana", text, at=at, idempotency_key=key)
                    break
                except UncertainWriteError as exc:
                    errors["may have been stored"] += 1
                    key = exc.idempotency_key
                except StoreError:
                    errors["not stored"] += 1
                finally:
                    state["fault"], state["down"] = "none", False
            intended.append(text)
            _progress("ambiguous writes", i + 1, turns)
        stored = Counter(u.content.removeprefix("Ana: ") for u in two.store.get("default"))
        served = Counter(
            u.content.removeprefix("Ana: ") for u in two.snapshots.get("default").units
        )
        return {
            "turns": len(intended),
            "faults": dict(faults),
            "errors": dict(errors),
            "lost": sum(1 for t in intended if not stored[t]),
            "duplicated": sum(1 for t in intended if stored[t] > 1),
            "hidden": sum(1 for t in intended if stored[t] and not served[t]),
        }


def killed_writes(kills: int) -> dict[str, Any]:
    """A worker re-ingests (edits) a namespace in split writes and is killed between two
    Chroma calls; a restarted worker must serve what the store holds (from a snapshot file
    when it may). Hidden: an edit stored but not served after the restart."""
    hidden = 0
    with tempfile.TemporaryDirectory() as tmp:
        for kill in range(kills):
            texts = [f"Note {i}: version {kill}." for i in range(12)]
            worker = RaMem.open(tmp, embedder=HashEmbedder(), counter=WordCounter())
            collection = worker.store.collection("default")  # type: ignore[attr-defined]
            calls = [0]
            die_at = 1 + kill % 3

            def upsert(
                collection: Any = collection,
                calls: list[int] = calls,
                die_at: int = die_at,
                **kw: Any,
            ) -> None:
                calls[0] += 1
                if calls[0] > die_at:
                    raise SystemExit("killed")
                collection.upsert(**kw)

            worker.store._collections["default"] = _Patched(collection, upsert=upsert)  # type: ignore[attr-defined]
            from ramem_core import Conversation, Session, Turn

            notes = [
                Conversation(f"c{i}", (Session("s1", (Turn("t1", "Ana", t),), T0),))
                for i, t in enumerate(texts)
            ]
            with mock.patch("ramem_core.store.chroma.max_write_batch", return_value=4):
                try:
                    worker.recall("note")  # a snapshot (and, at close, its file) exists
                    worker.add_conversations(notes)
                except SystemExit:
                    pass
            worker.snapshots.persist()  # the file a killed worker may have left
            worker.store.close()  # killed: no close() of the memory
            with RaMem.open(tmp, embedder=HashEmbedder(), counter=WordCounter()) as restarted:
                stored = {u.content for u in restarted.store.get("default")}
                served = {u.content for u in restarted.snapshots.get("default").units}
                hidden += len(stored - served)
                restarted.recall("note")
            _progress("killed split writes", kill + 1, kills)
    return {"kills": kills, "hidden": hidden}


def straddled_deletes(rounds: int) -> dict[str, Any]:
    """A cold load reads the data, a delete lands, the load finishes: the deleted memory must
    not come back (it once did for about 0.5 s)."""
    resurrected = 0
    with tempfile.TemporaryDirectory() as tmp:
        store = ChromaStore.persistent(tmp, HashEmbedder())
        memory = RaMem(store, counter=WordCounter(), refresh_seconds=3600)
        load = store.load
        for r in range(rounds):
            gone = memory.add_turn("Ana", f"Doomed note {r}.", at=T0 + timedelta(minutes=r))
            memory.snapshots.invalidate()
            loaded, deleted = threading.Event(), threading.Event()

            def straddling(namespace: str, loaded: Any = loaded, deleted: Any = deleted) -> Any:
                found = load(namespace)
                loaded.set()
                deleted.wait(5)
                return found

            store.load = straddling  # type: ignore[method-assign]
            reader = threading.Thread(target=memory.recall, args=("note",))
            reader.start()
            loaded.wait(5)
            memory.delete(unit_ids=[gone.id])
            deleted.set()
            reader.join()
            store.load = load  # type: ignore[method-assign]
            resurrected += gone.id in {u.id for u in memory.snapshots.get("default").units}
            _progress("loads straddling deletes", r + 1, rounds)
        memory.close()
        store.close()
    return {"rounds": rounds, "resurrected": resurrected}


# --------------------------------------------------------------------------- hostile files


_rewrite = rewrite_snapshot_file


def hostile_files() -> dict[str, Any]:
    """Each attack rewrites the snapshot file of a namespace in a shared directory; a worker
    that opens the directory must serve what the store holds, within 30 s. Refused: it did."""
    import pickle

    questions = ["What did Ana buy?", "Where did Ana go in May?", "Who painted the kitchen?"]
    tried: dict[str, bool] = {}

    def vectors(tree: Any) -> str:
        return f"a{tree['s']['m']['vectors']['a']}"

    def swap(tree: Any, arrays: Any) -> None:
        arrays[vectors(tree)] = arrays[vectors(tree)][::-1].copy()

    def garbage(tree: Any, arrays: Any) -> None:
        units = tree["s"]["m"]["units"]["s"]["t"]
        rows = len(arrays[f"a{units[2]['o']}"]) - 1 if "o" in units[2] else len(units[2]["l"])
        units[2] = {"l": ["{not json"] * rows}

    def ballast(tree: Any, arrays: Any) -> None:
        arrays[f"a{len(arrays)}"] = np.ones(8 << 20, np.uint8)

    attacks = {
        "another tenant's file, namespace rewritten": None,
        "contents replaced, digest stale": lambda p: _rewrite(p, swap, digest=False),
        "contents replaced, digest remade, keyed directory": lambda p: _rewrite(p, swap),
        "garbage unit metadata, digest remade": lambda p: _rewrite(p, garbage),
        "a FIFO": lambda p: (p.unlink(), os.mkfifo(p)),
        "a symbolic link": lambda p: (
            p.rename(p.with_suffix(".x")),
            p.symlink_to(p.with_suffix(".x")),
        ),
        "larger than snapshot_max_bytes": lambda p: _rewrite(p, ballast),
        "a zip bomb (1 MB inflating to 1 GiB)": "bomb",
        "a pickle": lambda p: p.write_bytes(pickle.dumps({"a": 1})),
        "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    }
    for name, attack in attacks.items():
        with tempfile.TemporaryDirectory() as tmp:
            options: dict[str, Any] = {"embedder": HashEmbedder(), "counter": WordCounter()}
            if "keyed" in name:
                options["snapshot_key"] = "deployment secret"
            if "max_bytes" in name:
                options["snapshot_max_bytes"] = 4 << 20
            with RaMem.open(tmp, **options) as memory:
                for tenant in ("alice", "bob"):
                    for i, text in enumerate(
                        [
                            f"{tenant} bought a red bicycle.",
                            f"{tenant} went to Lisbon in May.",
                            f"{tenant} painted the kitchen green.",
                        ]
                    ):
                        memory.add_turn("Ana", text, at=T0 + timedelta(days=i), namespace=tenant)
                    memory.recall("warm", namespace=tenant)
            files = SnapshotFiles(Path(tmp) / "ramem-snapshots")
            path = files.path("alice")
            if attack is None:
                _rewrite(
                    files.path("bob"),
                    header_change=lambda h: h.update(namespace="alice"),
                    target=path,
                )
            elif attack == "bomb":
                with np.load(path, allow_pickle=False) as data:
                    header, tree, blob = data["header"], data["tree"], data["data"]
                with path.open("wb") as file:
                    np.savez_compressed(
                        file,
                        header=header,
                        tree=tree,
                        data=np.concatenate([blob, np.zeros(1 << 30, np.uint8)]),
                    )
                with zipfile.ZipFile(path) as archive:
                    assert sum(m.file_size for m in archive.infolist()) > 1 << 30
            else:
                attack(path)
            answers: list[Any] = []
            with RaMem.open(tmp, **options) as memory:

                def ask(memory: RaMem = memory, answers: list[Any] = answers) -> None:
                    answers.append(
                        [
                            [e.unit.content for e in memory.recall(q, k=3, namespace="alice")]
                            for q in questions
                        ]
                    )

                reader = threading.Thread(target=ask, daemon=True)
                reader.start()
                reader.join(timeout=30)
                expected = {
                    f"Ana: alice {t}"
                    for t in (
                        "bought a red bicycle.",
                        "went to Lisbon in May.",
                        "painted the kitchen green.",
                    )
                }
                tried[name] = bool(answers) and all(set(a) <= expected for a in answers[0])
    return {"tried": len(tried), "refused": sum(tried.values()), "attacks": tried}


# --------------------------------------------------------------------------- a server


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def server_faults(cycles: int) -> dict[str, Any]:
    """Against a real ``chroma run``: time to a StoreError when the server stalls (through a
    proxy that stops forwarding), at the default timeout and at 2 s; sockets and memory left
    per 100 open/close cycles, with RaMem's close and with Chroma's close alone (before)."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, serve_chroma(Path(tmp) / "db") as port:
        with StallingProxy(port) as proxy:
            for label, timeout in (("timeout 2 s", 2.0), ("default timeout", None)):
                options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
                memory = RaMem.open(
                    host="127.0.0.1",
                    port=proxy.port,
                    embedder=HashEmbedder(),
                    counter=WordCounter(),
                    namespace="stall",
                    **options,
                )
                memory.add_turn("Ana", "I bought a red bicycle.", at=T0)
                memory.snapshots.invalidate()
                proxy.stalled.set()
                began = time.monotonic()
                try:
                    memory.recall("bicycle")
                    outcome = "answered"
                except StoreError as exc:
                    outcome = type(exc.__cause__).__name__
                out[f"stalled recall, {label}"] = {
                    "seconds": round(time.monotonic() - began, 2),
                    "error": outcome,
                }
                began = time.monotonic()
                try:  # another memory of this process: the shared client, then a first call
                    RaMem.open(
                        host="127.0.0.1", port=proxy.port, embedder=HashEmbedder(), **options
                    ).count()
                    outcome = "answered"
                except StoreError:
                    outcome = "StoreError"
                out[f"stalled open and count, {label}"] = {
                    "seconds": round(time.monotonic() - began, 2),
                    "error": outcome,
                }
                proxy.stalled.clear()
                memory.drop()
                memory.close()
                print(f"  stalled server, {label}: done", flush=True)
        from ramem_core.store import chroma as chroma_store

        variants = (("RaMem now (one shared client)", False), ("a client per open (before)", True))
        for label, per_open in variants:

            def cycle(per_open: bool = per_open) -> None:
                memory = RaMem.open(
                    host="127.0.0.1",
                    port=port,
                    embedder=HashEmbedder(),
                    counter=WordCounter(),
                    namespace="cycles",
                )
                memory.count()
                memory.close()
                if per_open:  # as before: a new HttpClient each open, closed by Chroma alone
                    memory.store.client.close()  # type: ignore[attr-defined]
                    chroma_store._SHARED_CLIENTS.clear()

            for _ in range(10):
                cycle()
            gc.collect()
            fds, rss = _fds(), _rss_mb()
            for i in range(cycles):
                cycle()
                _progress(f"open/close, {label}", i + 1, cycles)
            gc.collect()
            out[f"per 100 cycles, {label}"] = {
                "sockets": round((_fds() - fds) * 100 / cycles, 1),
                "mb": round((_rss_mb() - rss) * 100 / cycles, 1),
            }
    return out


def version_records(lifetimes: int) -> dict[str, Any]:
    """Writer lifetimes (a CLI run each) writing one turn to one namespace: version records
    left and the time of one ``version()`` read, compacted and not (before)."""
    out = {}
    for label, compacting in (("compacted", True), ("never compacted (before)", False)):
        client = chromadb.EphemeralClient(client_settings())
        name = f"vr{int(compacting)}"
        patch = (
            mock.patch.object(ChromaStore, "compact", return_value=0)
            if not compacting
            else mock.patch.object(ChromaStore, "compact", ChromaStore.compact)
        )
        with patch:
            for i in range(lifetimes):
                store = ChromaStore(client, HashEmbedder())
                RaMem(store, counter=WordCounter(), namespace=name).add_turn(
                    "Ana", f"Note {i}.", at=T0 + timedelta(minutes=i)
                )
                _progress(f"writer lifetimes, {label}", i + 1, lifetimes)
        collection = client.get_collection(f"ramem_{name}")
        records = sum(i.startswith(VERSION_ID) for i in collection.get(include=[])["ids"])
        reader = ChromaStore(client, HashEmbedder())
        times = []
        for _ in range(20):
            began = time.perf_counter()
            reader.version(name)
            times.append(time.perf_counter() - began)
        out[label] = {"records": records, "version_ms": round(1000 * sorted(times)[10], 2)}
        client.delete_collection(f"ramem_{name}")
    return out


def long_turns() -> dict[str, Any]:
    """Where the time of one long turn goes: anchoring into pieces, embedding them, the store
    write (a local directory); a 10 KB, 100 KB and 1 MB turn, with the shipped MiniLM
    embedder and with the hash embedder (RaMem's own cost, no model)."""
    from ramem_core.embedding import MiniLMEmbedder

    out = {}
    for name, embedder in (("hash", HashEmbedder()), ("MiniLM", MiniLMEmbedder())):
        out.update({f"{k}, {name}": v for k, v in _long_turns(embedder).items()})
    return out


def _timed(spans: dict[str, float], name: str, fn: Any) -> Any:
    """``fn``, adding the seconds of each call to ``spans[name]``."""

    def inner(*a: Any, **kw: Any) -> Any:
        began = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            spans[name] += time.perf_counter() - began

    return inner


def _long_turns(embedder: Any) -> dict[str, Any]:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        memory = RaMem.open(tmp, embedder=embedder, counter=WordCounter())
        memory.add_turn("Ana", "warm up", at=T0)
        sentence = "We walked along the river and talked about the new bakery on the corner. "
        for label, size in (("10 KB", 10_000), ("100 KB", 100_000), ("1 MB", 1_000_000)):
            text = (sentence * (size // len(sentence) + 1))[:size]
            spans: dict[str, float] = Counter()
            embed = _timed(spans, "embed", memory.embedder.embed)
            with (
                mock.patch.object(
                    memory.anchorer, "anchor", _timed(spans, "anchor", memory.anchorer.anchor)
                ),
                mock.patch.object(memory.embedder, "embed", embed),
                mock.patch.object(
                    memory.snapshots, "write", _timed(spans, "write", memory.snapshots.write)
                ),
            ):
                began = time.perf_counter()
                unit = memory.add_turn("Ana", text, at=T0 + timedelta(minutes=1), new_session=True)
                total = time.perf_counter() - began
            pieces = sum(1 for u in memory.store.get("default") if u.source_ids == unit.source_ids)
            out[label] = {
                "pieces": pieces,
                "total_s": round(total, 2),
                **{f"{k}_s": round(v, 2) for k, v in spans.items()},
            }
            print(f"  long turn {label}: {out[label]}", flush=True)
        memory.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=400, help="turns under ambiguous faults")
    parser.add_argument("--kills", type=int, default=12)
    parser.add_argument("--deletes", type=int, default=50)
    parser.add_argument("--cycles", type=int, default=200, help="open/close cycles per variant")
    parser.add_argument("--lifetimes", type=int, default=1000)
    parser.add_argument("--skip-server", action="store_true")
    parser.add_argument(
        "--only-server", action="store_true", help="rerun the server part into the result file"
    )
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    if args.only_server:
        result = json.loads(args.out.read_text())
        result["server"] = server_faults(args.cycles)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        _print(result)
        return
    result: dict[str, Any] = {
        "command": "python benchmarks/bench_faults.py",
        "cpus": os.cpu_count(),
    }
    result["ambiguous_writes"] = ambiguous_writes(args.turns)
    result["killed_split_writes"] = killed_writes(args.kills)
    result["straddled_deletes"] = straddled_deletes(args.deletes)
    result["hostile_files"] = hostile_files()
    print(
        f"  hostile files: {result['hostile_files']['refused']}/{result['hostile_files']['tried']}"
    )
    if not args.skip_server and shutil.which("chroma"):
        result["server"] = server_faults(args.cycles)
    result["version_records"] = version_records(args.lifetimes)
    result["long_turns"] = long_turns()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    _print(result)


def _print(r: dict[str, Any]) -> None:
    a, k, d, h = (
        r["ambiguous_writes"],
        r["killed_split_writes"],
        r["straddled_deletes"],
        r["hostile_files"],
    )
    print("\n| fault | tried | lost | duplicated | hidden |\n|---|---|---|---|---|")
    print(
        f"| ambiguous write outcomes ({a['faults']}) | {a['turns']} turns | {a['lost']} | "
        f"{a['duplicated']} | {a['hidden']} |"
    )
    print(
        f"| killed between the calls of a split edit | {k['kills']} kills | - | - | {k['hidden']} |"
    )
    print(
        f"| load straddling an own delete | {d['rounds']} | - | - | "
        f"{d['resurrected']} resurrected |"
    )
    print(f"\nhostile snapshot files refused: {h['refused']} of {h['tried']}")
    for name, refused in h["attacks"].items():
        print(f"  {'refused' if refused else 'SERVED '}  {name}")
    if "server" in r:
        print("\n| against a chroma server | value |\n|---|---|")
        for name, value in r["server"].items():
            print(f"| {name} | {value} |")
    print("\n| version records after writer lifetimes | records | version() ms |\n|---|---|---|")
    for name, value in r["version_records"].items():
        print(f"| {name} | {value['records']} | {value['version_ms']} |")
    print(
        "\n| one long turn | pieces | total s | anchor s | embed s | write s |\n"
        "|---|---|---|---|---|---|"
    )
    for name, v in r["long_turns"].items():
        print(
            f"| {name} | {v['pieces']} | {v['total_s']} | {v.get('anchor_s')} | "
            f"{v.get('embed_s')} | {v.get('write_s')} |"
        )


if __name__ == "__main__":
    main()
