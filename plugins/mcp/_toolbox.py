"""One character's tools from its MCP servers (the ``toolbox`` runtime service).

A tool is offered as ``<server>__<tool>`` (letters, digits, ``_`` and ``-``, at most 64
characters, unique); only the tools the character's allow-lists let through, of the servers that
are up. A call never raises for the tool's failure: an unknown tool, arguments that fail the
tool's schema, a server that is down, gone mid-call, hanging or answering garbage each give a
:class:`ToolResult` with ``ok=False`` and a text saying what went wrong.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import mcp.types as types
from mcp import MCPError
from pydantic import ValidationError

from bot.sdk import (
    MAX_RESULT_CHARS,
    ArgumentCheck,
    ToolAccess,
    ToolCall,
    ToolContext,
    ToolResult,
    ToolServer,
    ToolSpec,
    cut_result,
    one_line,
)

from ._config import McpConfig, ServerPolicy
from ._connection import MAX_TOOLS, ServerConnection, ServerDown, ServerState
from ._results import result_text

__all__ = ["McpToolbox", "offered_name"]

_log = logging.getLogger(__name__)

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64
_MAX_DESCRIPTION = 1_000


def offered_name(server: str, tool: str, taken: set[str]) -> str:
    """``server__tool`` as the model is offered it: sanitised, at most 64 characters, not in
    ``taken``."""
    base = _NOT_ALLOWED.sub("_", f"{server}__{tool}")[:_MAX_NAME] or "tool"
    name, n = base, 1
    while name in taken:
        n += 1
        suffix = f"_{n}"
        name = base[: _MAX_NAME - len(suffix)] + suffix
    return name


@dataclass(frozen=True, slots=True)
class _Offered:
    spec: ToolSpec
    connection: ServerConnection
    tool: str
    """The tool's own name on its server."""
    arguments: ArgumentCheck


class McpToolbox:
    """The tools one character may use from its servers."""

    def __init__(
        self,
        agent: str,
        config: McpConfig,
        connections: Sequence[ServerConnection],
        *,
        max_result_chars: int = MAX_RESULT_CHARS,
    ) -> None:
        self.agent = agent
        self._config = config
        self._connections = tuple(connections)
        self._max_result_chars = max_result_chars
        self._offered: dict[str, _Offered] = {}
        self._versions: tuple[int, ...] = ()
        self._warned = False  # about more tools than are offered

    def __repr__(self) -> str:
        return f"<McpToolbox {self.agent}: {len(self.tools())} tools>"

    @property
    def connections(self) -> tuple[ServerConnection, ...]:
        return self._connections

    def tools(self) -> Sequence[ToolSpec]:
        return [offered.spec for offered in self._current().values()]

    def servers(self) -> Sequence[ToolServer]:
        """Each of the character's servers and whether it is up (for ``troupe status``)."""
        return [_server(connection) for connection in self._connections]

    async def settled(self) -> None:
        await asyncio.gather(*(connection.tried() for connection in self._connections))

    async def call(self, call: ToolCall, *, timeout: float, context: ToolContext | None = None) -> ToolResult:
        started = time.perf_counter()
        text, ok, truncated = await self._call(call, timeout)
        return ToolResult(
            call=call,
            text=text,
            ok=ok,
            duration_ms=(time.perf_counter() - started) * 1000,
            truncated=truncated,
        )

    async def _call(self, call: ToolCall, timeout: float) -> tuple[str, bool, bool]:
        offered = self._current().get(call.name)
        if offered is None:
            return self._unknown(call.name), False, False
        if not isinstance(call.arguments, Mapping):
            return f"the arguments of {call.name} must be a JSON object", False, False
        problem = offered.arguments.problem(call.arguments)
        if problem is not None:
            return (
                f"the arguments do not fit {call.name}: {problem}; call it again with arguments that do",
                False,
                False,
            )
        server = offered.connection.name
        limit = min(timeout, offered.connection.config.timeout)
        try:
            result = await offered.connection.call(offered.tool, call.arguments, timeout=limit)
        except asyncio.CancelledError:
            raise
        except ServerDown as exc:
            return f"the MCP server {server} is down ({exc}); its tools cannot be used now", False, False
        except TimeoutError:
            return f"{call.name} did not answer within {limit:g} s; it was given up", False, False
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                return f"the MCP server {server} went away during the call; try again later", False, False
            return (
                f"the MCP server {server} refused the call: {one_line(offered.connection.clean(exc.message))}",
                False,
                False,
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            return (
                f"the MCP server {server} answered {call.name} with something that is not a tool's result "
                f"({where}: {one_line(first['msg'], 120)})",
                False,
                False,
            )
        except Exception as exc:  # a broken transport: the result says it, never a raise
            why = one_line(offered.connection.clean(str(exc)))  # an HTTP error may quote the URL
            _log.info("%s: mcp call %s failed: %s: %s", self.agent, call.name, type(exc).__name__, why)
            return f"the call to {call.name} failed: {type(exc).__name__}: {why}", False, False
        text, truncated = cut_result(result_text(result), self._max_result_chars)
        if result.is_error:
            return (text or f"{call.name} failed and said nothing more"), False, truncated
        return text, True, truncated

    def _too_many(self) -> None:
        if not self._warned:
            self._warned = True
            _log.warning("%s", _too_many_note(self.agent))

    def _unknown(self, name: str) -> str:
        names = sorted(self._current())
        listed = ", ".join(names[:20]) + (" …" if len(names) > 20 else "")
        if not names:
            return f"there is no tool named {name}: no tool is available now"
        return f"there is no tool named {name}; the tools are: {listed}"

    def _current(self) -> dict[str, _Offered]:
        """The offered tools, rebuilt when a server's list moved (up, down, changed)."""
        versions = tuple(connection.version for connection in self._connections)
        if versions != self._versions:
            self._offered = self._build()
            self._versions = versions
        return self._offered

    def _build(self) -> dict[str, _Offered]:
        offered: dict[str, _Offered] = {}
        allowed = self._config.allowed_tools
        for connection in self._connections:
            policy = self._config.policies.get(connection.name, ServerPolicy())
            for tool in connection.tools:
                if not policy.allows(tool.name):
                    continue
                if len(offered) >= MAX_TOOLS:
                    self._too_many()
                    return offered
                name = offered_name(connection.name, tool.name, set(offered))
                if allowed is not None and name not in allowed and f"{connection.name}__{tool.name}" not in allowed:
                    continue
                offered[name] = _Offered(
                    spec=ToolSpec(
                        name=name,
                        description=one_line(tool.description or tool.title or tool.name, _MAX_DESCRIPTION),
                        parameters=tool.input_schema,
                        source=connection.name,
                        changes_things=tool.name in policy.confirm or _changes_things(tool),
                        access=policy.access.get(tool.name, ToolAccess.ANYONE),
                    ),
                    connection=connection,
                    tool=tool.name,
                    arguments=ArgumentCheck(tool.input_schema),
                )
        return offered


def _server(connection: ServerConnection) -> ToolServer:
    if connection.state is ServerState.UP:
        return ToolServer(connection.name, up=True)
    detail = connection.reason if connection.state is ServerState.DOWN and connection.reason else connection.state.value
    return ToolServer(connection.name, up=False, detail=detail)


def _too_many_note(agent: str) -> str:
    return (
        f"{agent}: its MCP servers offer more than {MAX_TOOLS} tools; only the first {MAX_TOOLS} are "
        'offered (name the ones wanted in each server\'s "tools" or in settings.mcp.allowedTools)'
    )


def _changes_things(tool: types.Tool) -> bool:
    """Not marked read-only: it may change something (MCP's default when a server says nothing)."""
    hints = tool.annotations
    if hints is None:
        return True
    return not hints.read_only_hint or bool(hints.destructive_hint)
