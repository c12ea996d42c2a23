"""A real MCP server (the official SDK's MCPServer, formerly FastMCP) for the MCP plugin's tests.

Run over stdio as a subprocess (``python -m tests.fakes.mcp_server``, or with ``--tools N`` to
list N extra tools, ``--die-after S`` to exit S seconds after starting, ``--stderr TEXT`` to write
TEXT to its stderr first, ``--noise N`` to write N long lines there after it, ``--journal FILE`` to
write in FILE each path ``delete`` is called with), or served over streamable HTTP or SSE on
loopback (:func:`build` makes it).

Tools: ``weather(city)`` (read-only), ``slow()`` (never answers), ``huge(size)``, ``fail()`` (an
error result), ``garbage()`` (non-MCP lines on stdout first), ``crash()`` (the process exits
mid-call), ``pid()``, ``header(name)``, ``env(name)`` (a variable of the server's environment, or
``<unset>``), ``picture()`` (an image and a text), ``delete(path)`` (destructive: it deletes
nothing, but writes ``path`` in the journal when there is one), ``grow()`` (adds the tool ``late``
and says the list changed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent, TextContent, ToolAnnotations


def build(extra_tools: int = 0, journal: str = "") -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("fake")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}, 21 °C"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def slow() -> str:
        """Never answers."""
        await asyncio.Event().wait()
        return "never"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def huge(size: int = 100_000) -> str:
        """A very long text."""
        return "x" * size

    @server.tool()
    def fail() -> str:
        """Always fails."""
        raise ToolError("the weather station is on fire")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def garbage() -> str:
        """Writes lines that are not MCP to stdout (over stdio), then answers."""
        sys.stdout.buffer.write(b'this is not JSON\n{"jsonrpc": "2.0", "id": 987654, "result": 5}\n')
        sys.stdout.buffer.flush()
        return "said garbage"

    @server.tool()
    def crash() -> str:
        """The server dies mid-call."""
        os._exit(3)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def env(name: str) -> str:
        """A variable of the server's environment."""
        return os.environ.get(name, "<unset>")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def header(name: str, ctx: Context) -> str:
        """A header of the HTTP request that called it (over HTTP and SSE)."""
        return (ctx.headers or {}).get(name.lower(), "<unset>")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def pid() -> str:
        """The server's process id."""
        return str(os.getpid())

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def picture() -> list[TextContent | ImageContent]:
        """A picture and its caption."""
        return [TextContent(text="a cat"), ImageContent(data="aGVsbG8=", mime_type="image/png")]

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    def delete(path: str) -> str:
        """Deletes a file (it does not)."""
        if journal:  # what a test sees of the call having run, from outside the server
            with open(journal, "a", encoding="utf-8") as written:
                written.write(path + "\n")
        return f"deleted {path}"

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Adds the tool ``late`` and tells the client."""

        def late() -> str:
            """Added at run time."""
            return "late but here"

        server.add_tool(late)
        await ctx.session.send_tool_list_changed()
        return "grown"

    for n in range(extra_tools):

        def extra(n: int = n) -> str:
            return str(n)

        server.add_tool(extra, name=f"extra_{n}", description="one of many")
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=0, help="extra tools to list")
    parser.add_argument("--die-after", type=float, default=0.0, help="exit this many seconds after starting")
    parser.add_argument("--stderr", default="", help="write this to stderr first (\\n between lines)")
    parser.add_argument("--noise", type=int, default=0, help="then this many numbered 2,000-character lines")
    parser.add_argument("--journal", default="", help="a file delete() writes each path it is given in")
    args = parser.parse_args()
    if args.stderr:
        sys.stderr.write(args.stderr.replace("\\n", "\n") + "\n")
    for n in range(args.noise):
        sys.stderr.write(f"noise {n} " + "~" * 2_000 + "\n")
    sys.stderr.flush()
    if args.die_after:
        threading.Timer(args.die_after, os._exit, (4,)).start()
    build(args.tools, args.journal).run("stdio")


if __name__ == "__main__":
    main()
