#!/usr/bin/env bash
# Installs the MCP clients tests/mcp/test_clients.py drives `ramem mcp` with (each from its
# registry; a client that cannot be installed is reported, and its test skips saying why):
# - the TypeScript SDK's client, in tests/mcp/ts/node_modules (npm ci);
# - langchain-mcp-adapters with the MCP SDK 1.x it requires (mcp<2), into .mcp-clients/py1:
#   beside the server's SDK 2.x, so that test puts it first on the client's PYTHONPATH.
set -uo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python}
if command -v npm >/dev/null 2>&1; then
  (cd tests/mcp/ts && npm ci --no-audit --no-fund --silent) \
    || echo "npm ci failed: the TypeScript client test will be skipped"
else
  echo "npm not found: the TypeScript client test will be skipped"
fi
"$PYTHON" -m pip install --quiet --no-deps --target .mcp-clients/py1 \
  "mcp==1.30.0" "langchain-mcp-adapters==0.3.2" "httpx-sse>=0.4" "pydantic-settings>=2.5.2" \
  || echo "pip failed: the langchain-mcp-adapters test will be skipped"
