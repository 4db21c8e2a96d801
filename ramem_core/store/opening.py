"""How a memory opens its Chroma store: a local directory, a Chroma server reached by
:class:`ServerSettings`, or a ready client that stays the caller's."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from ramem_core.errors import InvalidInputError
from ramem_core.protocols import Embedder
from ramem_core.store.chroma import DEFAULT_TIMEOUT, ChromaStore, timeout_of
from ramem_core.validation import check_server

DEFAULT_PORT = 8000


def default_path() -> Path:
    """Where a persistent memory lives by default: ``$RAMEM_HOME``, else
    ``$XDG_DATA_HOME/ramem``, else ``~/.local/share/ramem``."""
    if home := os.environ.get("RAMEM_HOME"):
        return Path(home)
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "ramem"


class Reach(TypedDict, total=False):
    """How :meth:`ramem_core.RaMem.open` reaches its store: ``host`` and the rest of
    :class:`ServerSettings` for a Chroma server, or a ready ``client`` (which stays yours to
    close); ``snapshot_dir``: where a server's workers keep snapshot files (a local directory
    keeps its own), ``snapshot_key`` the deployment key that authenticates them
    (HMAC-SHA256; default ``$RAMEM_SNAPSHOT_KEY``), ``snapshot_max_bytes`` the largest
    loaded."""

    host: str | None
    port: int
    ssl: bool
    headers: Mapping[str, str] | None
    tenant: str | None
    database: str | None
    timeout: float | tuple[float, float] | None
    client: Any
    snapshot_dir: str | Path | None
    snapshot_key: bytes | str | None
    snapshot_max_bytes: int


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """How to reach a Chroma server started with ``chroma run``, checked when made (before
    any connection). ``ssl``, ``headers``, ``tenant`` and ``database`` go to Chroma's
    ``HttpClient`` as they are; ``timeout``: seconds to connect and to wait for each reply,
    one number or a ``(connect, read)`` pair (a stalled server is then a ``StoreError``)."""

    host: str
    port: int = DEFAULT_PORT
    ssl: bool = False
    headers: Mapping[str, str] | None = None
    tenant: str | None = None
    database: str | None = None
    timeout: float | tuple[float, float] = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        check_server(
            self.host,
            self.port,
            ssl=self.ssl,
            headers=self.headers,
            tenant=self.tenant,
            database=self.database,
        )
        timeout_of(self.timeout)

    def store(self, embedder: Embedder, snapshot_dir: str | Path | None = None) -> ChromaStore:
        """A store on this server (see :meth:`ChromaStore.http`)."""
        return ChromaStore.http(
            self.host,
            self.port,
            embedder,
            snapshot_dir=snapshot_dir,
            ssl=self.ssl,
            headers=self.headers,
            tenant=self.tenant,
            database=self.database,
            timeout=self.timeout,
        )


def open_store(
    path: str | Path | None,
    embedder: Embedder,
    *,
    host: str | None = None,
    port: int = DEFAULT_PORT,
    client: Any = None,
    snapshot_dir: str | Path | None = None,
    **server: Any,
) -> ChromaStore:
    """The store :meth:`ramem_core.RaMem.open` opens: a local directory (``path``, default
    :func:`default_path`), a server at ``host`` (``server``: the rest of
    :class:`ServerSettings`), or a ready ``client``. Ways that contradict each other are
    refused before anything is opened."""
    given = [name for name, value in server.items() if value]
    if port != DEFAULT_PORT or isinstance(port, bool):  # a port only reaches a server
        given.append("port")
    if client is not None and (path is not None or host is not None or given):
        named = ", ".join(["path"] * (path is not None) + ["host"] * (host is not None) + given)
        msg = f"pass either a ready Chroma client or how to reach one, not both ({named})"
        raise InvalidInputError(msg)
    if host is None and client is None and (given or snapshot_dir is not None):
        named = ", ".join(given + ["snapshot_dir"] * (snapshot_dir is not None))
        msg = (
            f"{named} {'is' if ',' not in named else 'are'} for a Chroma server (host=... or"
            " client=...); a local directory keeps its snapshot files in DIR/ramem-snapshots"
        )
        raise InvalidInputError(msg)
    if client is not None:
        return ChromaStore.of_client(client, embedder, snapshot_dir=snapshot_dir)
    if host is not None:
        if server.get("timeout") is None:
            server["timeout"] = DEFAULT_TIMEOUT
        settings = ServerSettings(host, port, **server)
        return settings.store(embedder, snapshot_dir)
    return ChromaStore.persistent(path or default_path(), embedder)
