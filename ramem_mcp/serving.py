"""Running the MCP server: stdio, or streamable HTTP with bearer tokens off the loopback."""

from __future__ import annotations

import ipaddress
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ramem_core.errors import InvalidInputError

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

    from ramem_core import RaMem
    from ramem_mcp.sharing import Shared

LOOPBACK_NAMES = frozenset({"localhost"})


@dataclass(frozen=True, slots=True)
class Address:
    """Where the HTTP server listens."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Address:
        """``HOST:PORT`` (``[::1]:8000`` for IPv6).

        Raises:
            InvalidInputError: no port, or a port outside 1-65535.
        """
        host, sep, port = text.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            msg = f"--http needs HOST:PORT with a port 1-65535, e.g. 127.0.0.1:8765; got {text!r}"
            raise InvalidInputError(msg)
        return cls(host, int(port))

    @property
    def loopback(self) -> bool:
        """Only this machine can reach it."""
        if self.host in LOOPBACK_NAMES:
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def check_tokens(address: Address, tokens: Mapping[str, str]) -> None:
    """Refuse to serve beyond the loopback without a token, and refuse weak tokens.

    Raises:
        InvalidInputError: a non-loopback address without tokens; a token shorter than 16
            characters, or with whitespace.
    """
    if not tokens and not address.loopback:
        msg = (
            f"refusing to serve memory on {address.host} without a bearer token: pass --token "
            "or set RAMEM_MCP_TOKEN (or listen on 127.0.0.1)"
        )
        raise InvalidInputError(msg)
    for token, namespace in tokens.items():
        if len(token) < 16 or any(c.isspace() for c in token):
            msg = f"the token for namespace {namespace!r} must be 16+ characters with no spaces"
            raise InvalidInputError(msg)


BANNER = (
    "ramem mcp speaks MCP over stdio: a host (a desktop assistant, an editor) starts it and "
    "talks to it on stdin and stdout; typing here does nothing useful.\n"
    "`ramem mcp --print-config` prints the block for the host's settings. Ctrl-C stops it."
)
"""What ``ramem mcp`` run in a terminal says on stderr, once."""


def executable() -> list[str]:
    """The command that runs ``ramem`` here, absolute: a host does not have a virtualenv's
    ``bin`` on its PATH."""
    script = Path(sys.argv[0])
    if script.name.startswith("ramem") and script.is_file():
        return [str(script.absolute())]
    found = shutil.which("ramem")
    if found is not None:
        return [str(Path(found).absolute())]
    return [sys.executable, "-m", "ramem_core.cli"]


def host_block(path: Path | None, namespace: str | None) -> dict[str, object]:
    """The ``mcpServers`` block of a host's settings (Claude Desktop, Cursor, VS Code's
    ``servers`` take the same entry) that starts ``ramem mcp`` on the memory at ``path`` (a
    Chroma server's when ``None``) and ``namespace``, with absolute paths."""
    command, *first = executable()
    args = [*first, "mcp"]
    if path is not None:
        args += ["--path", str(path.absolute())]
    args += ["--namespace", namespace or "default"]
    return {"mcpServers": {"ramem": {"command": command, "args": args}}}


def serve(
    memory: RaMem | Shared,
    *,
    namespace: str | None = None,
    http: Address | None = None,
    tokens: Mapping[str, str] | None = None,
) -> None:
    """Serve ``memory`` over MCP until interrupted: stdio, or streamable HTTP at ``http``.

    Args:
        memory: the memory to serve (a :class:`~ramem_mcp.sharing.Shared` one: whichever
            process holds its directory).
        namespace: what requests without a bound token read and write (the memory's own).
        http: listen here over streamable HTTP (path ``/mcp``) instead of stdio.
        tokens: token -> namespace; HTTP requests must carry one as ``Authorization: Bearer``.

    Raises:
        InvalidInputError: see :func:`check_tokens`; tokens over stdio.
    """
    from ramem_mcp.server import build_server

    tokens = dict(tokens or {})
    if http is None:
        if tokens:
            raise InvalidInputError("tokens are for --http; stdio is the host's own process")
        build_server(memory, namespace=namespace).run("stdio")
        return
    check_tokens(http, tokens)
    server = build_server(memory, namespace=namespace, tokens=tokens or None, url=http.url)
    server.run("streamable-http", host=http.host, port=http.port, transport_security=guard(http))


def guard(address: Address) -> TransportSecuritySettings | None:
    """The Host and Origin headers a loopback server accepts: its own address and the usual
    names of the loopback, on any port (DNS rebinding: a page of another site reaching a
    server on this machine). The SDK guards 127.0.0.1, localhost and ::1 only; 127.0.0.2 and
    the rest of 127.0.0.0/8 are loopback too. Off the loopback a token is required instead."""
    from mcp.server.transport_security import TransportSecuritySettings

    if not address.loopback:
        return None
    hosts = ["127.0.0.1", "localhost", "[::1]", urlsplit(address.url).netloc.rsplit(":", 1)[0]]
    hosts = list(dict.fromkeys(hosts))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in hosts],
        allowed_origins=[f"http://{h}:*" for h in hosts],
    )
