"""RaMem as an MCP server (``ramem mcp``): remember, recall, list, show and forget as tools.

Needs the ``mcp`` extra: ``pip install '.[mcp]'`` in a RaMem checkout.
"""

try:
    import mcp  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    msg = "ramem_mcp needs the MCP SDK: pip install '.[mcp]' in a RaMem checkout"
    raise ImportError(msg) from exc

from ramem_mcp.server import Tokens, build_server
from ramem_mcp.serving import serve

__all__ = ["Tokens", "build_server", "serve"]
