"""A character's own tools as an MCP server (the SDK's low-level ``Server``), over stdio.

Each :class:`~bot.kernel.tools.ToolSpec` served is an MCP tool of the same name, description and
input schema; each call goes to the character's toolbox (the ``TOOLBOX`` service) as the tool loop
sends it, and its :class:`~bot.kernel.tools.ToolResult` comes back as the call's text, an error
result (``isError``) when it failed. ``tools/list`` asks the toolbox each time.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, cast

import anyio
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from bot import installed_version
from bot.cli.mcp._stdin import StdinLines
from bot.kernel.tools import ToolAccess, Toolbox, ToolCall, ToolResult, ToolSpec

if TYPE_CHECKING:
    from bot.kernel.redact import Redactor

__all__ = ["as_result", "as_tool", "serve_stdio", "tool_server"]

_log = logging.getLogger(__name__)


def as_tool(spec: ToolSpec) -> types.Tool:
    """``spec`` as an MCP tool. A tool that changes things, or that only the owner or an admin of
    a world may have the character use (learning a document), is not read-only for the client
    either; only one that changes things outside troupe is marked destructive."""
    read_only = not spec.changes_things and spec.access is ToolAccess.ANYONE
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=dict(spec.parameters),
        annotations=types.ToolAnnotations(
            read_only_hint=read_only, destructive_hint=None if read_only else spec.changes_things
        ),
    )


def as_result(result: ToolResult, secrets: Redactor | None = None) -> types.CallToolResult:
    """``result`` as the call's MCP result: its text (secrets scrubbed), an error when it failed."""
    text = secrets.scrub(result.text) if secrets else result.text
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=not result.ok)


def tool_server(
    name: str,
    toolbox: Toolbox,
    served: Collection[str],
    *,
    timeout: float,
    secrets: Redactor | None = None,
) -> Server[Any]:
    """An MCP server of ``toolbox``'s tools named in ``served``, each call given ``timeout`` seconds;
    ``name`` is the character's (the server's name and its instructions)."""
    ids = itertools.count(1)

    def offered() -> Sequence[ToolSpec]:
        return [spec for spec in toolbox.tools() if spec.name in served]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[as_tool(spec) for spec in offered()])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        call = ToolCall(id=f"mcp-{next(ids)}", name=params.name, arguments=params.arguments or {})
        if params.name not in served:  # never another toolbox's tool, even one of the same name
            names = ", ".join(spec.name for spec in offered()) or "none"
            return as_result(
                ToolResult(call, f"there is no tool named {params.name!r}; the tools are: {names}", ok=False)
            )
        result = await toolbox.call(call, timeout=timeout)  # no context: no message, no attachments
        _log.info("mcp: %s %s in %.0f ms", call.name, "ok" if result.ok else "failed", result.duration_ms)
        return as_result(result, secrets)

    return Server(
        f"troupe {name}",
        version=installed_version(),
        instructions=f"The tools of {name}, a troupe character: its knowledge, and what else troupe offers.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` on standard input and output until end of input."""
    stdin = await StdinLines.open()
    try:
        # The SDK points fd 1 at stderr while it serves: a stray print cannot break the protocol.
        async with stdio_server(stdin=cast("anyio.AsyncFile[str] | None", stdin)) as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        if stdin is not None:
            stdin.close()
