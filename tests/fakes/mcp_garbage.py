"""An MCP server over stdio that answers ``tools/call`` with garbage, for the MCP plugin's tests.

It initialises like any server and lists two tools: a call of ``echo`` gets a result that is not
a tool's result (``content`` is a string, not a list); one of ``count`` gets structured content
that fails the tool's own output schema. Run: ``python -m tests.fakes.mcp_garbage``.
Written by hand (not with the SDK) because the SDK's server never sends such a thing.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS = [
    {"name": "echo", "description": "Echoes (badly).", "inputSchema": {"type": "object", "properties": {}}},
    {
        "name": "count",
        "description": "Counts (badly).",
        "inputSchema": {"type": "object", "properties": {}},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    },
]


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method = request.get("method")
    if "id" not in request:
        return None  # a notification
    if method == "initialize":
        result: Any = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "garbage", "version": "0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and request["params"]["name"] == "count":
        result = {"content": [{"type": "text", "text": "many"}], "structuredContent": {"n": "many"}}
    elif method == "tools/call":
        result = {"content": "this is not a list of content blocks", "isError": "perhaps"}
    else:
        return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no such method"}}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
