"""Snapshot files: a namespace's snapshot kept on disk, so a restarted worker does not rebuild.

Building a snapshot from Chroma costs reading every memory (documents, metadata, vectors) and
keying the episodic index: about 30 s for 100k memories on two cores. A snapshot file holds
the built snapshot in columnar form (:meth:`Snapshot.__getstate__`) and loads in about a
second; units are decoded only when a recall returns them.

A file is used only when it holds the namespace's current write version
(:meth:`~ramem_core.protocols.Store.version`) and was built with the same index settings, file
format and vector dimension, and (checked by :class:`~ramem_core.store.cache.SnapshotCache`)
holds as many memories as the store: a writer killed between its data and its version write
leaves memories no version announces. Anything else (another writer wrote since, other keys, a
damaged or truncated file) falls back to the store, which stays the single source of truth.
Files are written whole and renamed into place, so a crash never leaves half a file behind.

Files are pickles written by RaMem into the memory directory, and trusted like the Chroma
database beside them: whoever can write that directory can change the memories anyway.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ramem_core.store.snapshot import Snapshot
from ramem_core.types import Version

log = logging.getLogger(__name__)

FORMAT = 4
"""Raised whenever what a file holds changes shape; older files are then ignored."""

MIN_MEMORIES = 2_000
"""Snapshots of at least this many memories are written when built from Chroma (smaller ones
rebuild in well under a second, so their files would only cost disk)."""


@dataclass(frozen=True, slots=True)
class Signature:
    """What a snapshot was built with, besides the data: a file built otherwise is ignored."""

    keys: str  # repr of the EpisodicKeys
    dimension: int
    format: int = FORMAT


class SnapshotFiles:
    """The snapshot files of one memory directory (one file per namespace)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def path(self, namespace: str) -> Path:
        digest = hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:32]
        return self.directory / f"{digest}.snapshot"

    def load(self, namespace: str, version: Version, signature: Signature) -> Snapshot | None:
        """The namespace's snapshot at ``version``, or ``None`` when no usable file holds it."""
        path = self.path(namespace)
        try:
            with path.open("rb") as file:
                header = pickle.load(file)
                if header != _header(namespace, version, signature):
                    return None
                snap = pickle.load(file)
        except FileNotFoundError:
            return None
        except Exception as exc:  # a damaged file is a cache miss, never an error
            log.warning("ignoring the unreadable snapshot file %s: %s", path, exc)
            return None
        return snap if isinstance(snap, Snapshot) else None

    def save(self, namespace: str, snap: Snapshot, version: Version, signature: Signature) -> bool:
        """Write the snapshot (whole, then renamed into place); False when it cannot be."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        except OSError as exc:
            log.warning("cannot write snapshot files into %s: %s", self.directory, exc)
            return False
        try:
            with os.fdopen(fd, "wb") as file:
                pickle.dump(_header(namespace, version, signature), file, protocol=5)
                pickle.dump(snap, file, protocol=5)
            os.replace(tmp, self.path(namespace))
            return True
        except Exception as exc:  # a full disk must not fail the recall that built it
            log.warning("cannot write the snapshot file of %r: %s", namespace, exc)
            Path(tmp).unlink(missing_ok=True)
            return False

    def remove(self, namespace: str) -> None:
        """Forget the namespace's file (after a drop)."""
        self.path(namespace).unlink(missing_ok=True)


def _header(namespace: str, version: Version, signature: Signature) -> dict[str, Any]:
    return {
        "namespace": namespace,
        "version": sorted(version),
        "signature": signature,
    }
