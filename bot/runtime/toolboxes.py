"""A character's tools from every plugin that offers some, as the one :class:`Toolbox` the
pipeline asks (the ``TOOLBOX`` service): whole toolboxes (the MCP plugin's servers) and troupe's
own abilities, each one :class:`OwnTool` (searching the knowledge, learning a document, reading a
link).

troupe's own tools are offered only to a character whose ``TROUPE_TOOLS`` names them: a tool turn
answers with a reply alone, so a character offered tools no longer plans its other actions
(muting a room, generating a picture) for a message. By default a character with the MCP plugin
(one that uses tools anyway) gets all of them, and any other none.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jsonschema import validators
from jsonschema.exceptions import SchemaError

from bot.kernel.errors import ConfigError
from bot.kernel.text import one_line
from bot.kernel.tools import (
    MAX_RESULT_CHARS,
    Toolbox,
    ToolCall,
    ToolContext,
    ToolFailed,
    ToolResult,
    ToolServer,
    ToolServers,
    ToolSpec,
    cut_result,
)

if TYPE_CHECKING:
    from bot.runtime.agent import AgentRuntime

__all__ = ["ArgumentCheck", "MAX_TOOLS", "OwnTool", "OwnToolChoice", "Toolboxes"]

_log = logging.getLogger(__name__)

#: The most tools a character is offered, from all its toolboxes together.
MAX_TOOLS = 128

#: Runs one of troupe's own tools for a character with its (checked) arguments; returns the
#: result's text or raises :class:`ToolFailed` saying what went wrong.
OwnToolRun = Callable[["AgentRuntime", Mapping[str, Any], ToolContext | None], Awaitable[str]]


class ArgumentCheck:
    """A tool's JSON schema, ready to check a call's arguments against it."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        try:
            cls = validators.validator_for(schema)
            cls.check_schema(schema)
        except (SchemaError, TypeError):
            self._validator: Any = None  # not a schema: whoever runs the tool judges the arguments
        else:
            self._validator = cls(schema)

    def problem(self, arguments: Mapping[str, Any]) -> str | None:
        """What is wrong with ``arguments`` (the first error, where it is), or None."""
        if self._validator is None:
            return None
        errors = sorted(self._validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
        if not errors:
            return None
        first = errors[0]
        where = ".".join(str(part) for part in first.path)
        return one_line(f"{where}: {first.message}" if where else str(first.message))


@dataclass(frozen=True, slots=True)
class OwnTool:
    """One of troupe's own abilities as a tool: what the model is offered, and how it runs."""

    spec: ToolSpec
    run: OwnToolRun


@dataclass(frozen=True, slots=True)
class OwnToolChoice:
    """Which of troupe's own tools a character is offered (``TROUPE_TOOLS``)."""

    names: frozenset[str] | None
    """The tools named; None for all of them."""

    @classmethod
    def parse(cls, value: str | None, *, uses_tools: bool, agent: str) -> OwnToolChoice:
        """``TROUPE_TOOLS``: ``all``, ``none`` or tool names separated by commas; unset, all for a
        character that ``uses_tools`` (has the MCP plugin), none for another.

        Raises:
            ConfigError: a name that is not a tool's name.
        """
        words = [word.strip().lower() for word in (value or "").replace(";", ",").split(",") if word.strip()]
        if not words:
            return cls(None if uses_tools else frozenset())
        if words == ["all"]:
            return cls(None)
        if words == ["none"]:
            return cls(frozenset())
        bad = [word for word in words if not word.replace("_", "").isalnum()]
        if bad:
            raise ConfigError(
                f"{agent}: TROUPE_TOOLS has {bad[0]!r}, which is not a tool's name: write all, none, or names "
                "separated by commas (search_knowledge, process_knowledge, read_link)"
            )
        return cls(frozenset(words))

    def allows(self, name: str) -> bool:
        return self.names is None or name.lower() in self.names

    def unknown(self, offered: Iterable[str]) -> list[str]:
        """The names given that none of ``offered`` has (a typo, or a plugin not listed), sorted."""
        return sorted((self.names or frozenset()) - {name.lower() for name in offered})


class Toolboxes:
    """Every tool of one character, from its toolboxes and its own tools (the ``TOOLBOX``
    service): a call goes to the one that offers its name; troupe's own tools first, then each
    toolbox in the order added; at most :data:`MAX_TOOLS` in all."""

    def __init__(self, runtime: AgentRuntime, *, max_result_chars: int = MAX_RESULT_CHARS) -> None:
        self.runtime = runtime
        self.agent = runtime.character.name
        self._boxes: list[Toolbox] = []
        self._own: dict[str, tuple[OwnTool, ArgumentCheck]] = {}
        self._max_result_chars = max_result_chars
        self._warned = False  # about more tools than are offered

    def __repr__(self) -> str:
        return f"<Toolboxes {self.agent}: {len(self._own)} own, {len(self._boxes)} toolboxes>"

    def add(self, toolbox: Toolbox) -> None:
        self._boxes.append(toolbox)

    def add_tool(self, tool: OwnTool) -> None:
        if tool.spec.name in self._own:
            raise ValueError(f"a tool named {tool.spec.name} is already offered")
        self._own[tool.spec.name] = (tool, ArgumentCheck(tool.spec.parameters))

    @property
    def own_names(self) -> list[str]:
        return list(self._own)

    def tools(self) -> Sequence[ToolSpec]:
        return [spec for spec, _ in self._offered()]

    def servers(self) -> Sequence[ToolServer]:
        return [server for box in self._boxes if isinstance(box, ToolServers) for server in box.servers()]

    async def settled(self) -> None:
        await asyncio.gather(*(box.settled() for box in self._boxes if isinstance(box, ToolServers)))

    async def call(self, call: ToolCall, *, timeout: float, context: ToolContext | None = None) -> ToolResult:
        owner = next((box for spec, box in self._offered() if spec.name == call.name), None)
        if owner is None:
            names = ", ".join(spec.name for spec, _ in self._offered()) or "none now"
            return ToolResult(call, f"there is no tool named {call.name!r}; the tools are: {one_line(names)}", ok=False)
        if owner is not self:
            return await owner.call(call, timeout=timeout, context=context)
        started = time.perf_counter()
        text, ok = await self._run_own(call, timeout, context)
        text, truncated = cut_result(text, self._max_result_chars)
        return ToolResult(call, text, ok=ok, duration_ms=(time.perf_counter() - started) * 1000, truncated=truncated)

    async def _run_own(self, call: ToolCall, timeout: float, context: ToolContext | None) -> tuple[str, bool]:
        tool, check = self._own[call.name]
        problem = check.problem(call.arguments)
        if problem is not None:
            return f"the arguments do not fit {call.name}: {problem}; call it again with arguments that do", False
        try:
            async with asyncio.timeout(timeout):
                return await tool.run(self.runtime, call.arguments, context), True
        except ToolFailed as exc:
            return str(exc), False
        except TimeoutError:
            return f"{call.name} did not finish within {timeout:g} s; it was given up", False
        except Exception as exc:  # noqa: BLE001 - a tool's bug is the call's failure, never the turn's
            _log.warning("%s: tool %s failed", self.agent, call.name, exc_info=True)
            return f"{call.name} failed ({type(exc).__name__}); say it could not be done", False

    def _offered(self) -> Iterable[tuple[ToolSpec, Toolbox]]:
        """Each tool offered with the toolbox that runs it (``self`` for troupe's own)."""
        taken: set[str] = set()
        sources: list[tuple[Iterable[ToolSpec], Toolbox]] = [((tool.spec for tool, _ in self._own.values()), self)]
        sources += [(box.tools(), box) for box in self._boxes]
        for specs, box in sources:
            for spec in specs:
                if spec.name in taken:
                    continue  # the first of two tools named alike is the one offered
                if len(taken) >= MAX_TOOLS:
                    self._too_many()
                    return
                taken.add(spec.name)
                yield spec, box

    def _too_many(self) -> None:
        if not self._warned:
            self._warned = True
            _log.warning(
                "%s: its tools number more than %d; only the first %d are offered (name the ones wanted in "
                "settings.mcp.allowedTools or TROUPE_TOOLS)",
                self.agent,
                MAX_TOOLS,
                MAX_TOOLS,
            )
