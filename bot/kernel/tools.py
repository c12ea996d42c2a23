"""Tools a character can use: what one is, a call the model asks for, and what the call gave.

Tools come from MCP servers a character file lists (``settings.mcp.servers``) and from troupe's
own abilities; a :class:`Toolbox` (a runtime service) offers the ones a character may use and
runs a call. The model chooses: a server that can call tools answers a ``TEXT_TOOLS`` request
(:class:`ToolTurnParams`) with a :class:`ToolTurn` — the calls it wants, or its final text — and
the turn loops, bounded, until the text comes. What a tool returns is untrusted input: it reaches a
prompt only marked as such, cut to a bound (:class:`ToolResult` says when it was cut).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict, runtime_checkable

if TYPE_CHECKING:
    from bot.kernel.types import Memory

__all__ = [
    "cut_result",
    "MAX_RESULT_CHARS",
    "ToolAccess",
    "Toolbox",
    "ToolCall",
    "ToolContext",
    "ToolFailed",
    "ToolResult",
    "ToolRound",
    "ToolServer",
    "ToolServers",
    "ToolSpec",
    "ToolTurn",
    "ToolTurnParams",
]


#: The longest text of one tool's result that goes into a prompt.
MAX_RESULT_CHARS = 8_000


class ToolAccess(StrEnum):
    """Who may make the character use a tool."""

    ANYONE = "anyone"
    ADMINS = "admins"
    """The owner or an admin of the world (troupe's roles)."""
    OWNER = "owner"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool, as the model is offered it."""

    name: str
    """Unique among the character's tools (``weather__forecast``: a server's tools carry its name)."""
    description: str
    parameters: Mapping[str, Any]
    """The JSON schema of its arguments (an object schema)."""
    source: str
    """Where it comes from: the MCP server's name in the character file, or ``troupe``."""
    changes_things: bool = False
    """It changes something outside the conversation (the server does not mark it read-only):
    the character asks the person to confirm, with buttons, before it runs."""
    access: ToolAccess = ToolAccess.ANYONE


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for."""

    id: str
    """The model's id for the call (results are matched to calls by it)."""
    name: str
    arguments: Mapping[str, Any]
    """Decoded from the model's JSON; arguments that did not decode are an error result, not this."""
    problem: str = ""
    """Why the call cannot run as asked (its arguments were not a JSON object): the turn answers
    it with this as an error result, without running it, so the model can try again."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a call is made for: the message whose answer asked for it (its person, room and
    attachments). A call from outside a conversation (an MCP client of ``troupe mcp``) has none."""

    message: Memory
    fetch: Callable[[Mapping[str, object]], Awaitable[bytes]] | None = None
    """Downloads one of the message's attachments the platform's own way (its reply channel's
    ``fetch``), when the call is made while the message is answered."""


class ToolFailed(Exception):
    """Raised by one of troupe's own tools that cannot do what was asked: the message (what went
    wrong, and what to do) is the call's error result, for the model and the person."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What one call gave, ready for a prompt (and for the message's trace)."""

    call: ToolCall
    text: str
    """The result as text, cut to the prompt's bound."""
    ok: bool = True
    """False when the call failed (no such tool, bad arguments, the server's error, a timeout):
    ``text`` then says what went wrong, for the model and for the person."""
    duration_ms: float = 0.0
    truncated: bool = False
    """``text`` was cut; it ends with a note saying so."""


@dataclass(frozen=True, slots=True)
class ToolRound:
    """One round of a turn: the calls the model asked for, and their results, in the same order."""

    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]
    text: str = ""
    """What the model wrote alongside its calls, if anything."""


class ToolTurnParams(TypedDict):
    """A ``TEXT_TOOLS`` request: the prompt, the tools on offer, and the rounds so far."""

    prompt: str
    tools: Sequence[ToolSpec]
    rounds: NotRequired[Sequence[ToolRound]]
    """The calls made so far in this turn and what they gave, oldest first."""
    system: NotRequired[str | None]
    temperature: NotRequired[float]
    max_tokens: NotRequired[int]
    on_delta: NotRequired[Callable[[str], None]]
    """Called with each new piece of the answer's text as the model writes it, as the text
    params' ``on_delta`` (handlers that cannot stream never call it); the calls come whole, in
    the :class:`ToolTurn`. Text written before calls is streamed too: it is the reply only when
    the answer has no calls."""


@dataclass(frozen=True, slots=True)
class ToolTurn:
    """A ``TEXT_TOOLS`` answer: the calls the model wants made, or (with none) its final text."""

    text: str = ""
    calls: tuple[ToolCall, ...] = field(default=())

    @property
    def done(self) -> bool:
        return not self.calls


class Toolbox(Protocol):
    """The tools of one character (a runtime service)."""

    def tools(self) -> Sequence[ToolSpec]:
        """Every tool the character may use now (servers that are down offer none)."""
        ...

    async def call(self, call: ToolCall, *, timeout: float, context: ToolContext | None = None) -> ToolResult:
        """Run ``call`` within ``timeout`` seconds, for the message in ``context``; never raises for
        the tool's failure (the result says it), only for cancellation."""
        ...


@dataclass(frozen=True, slots=True)
class ToolServer:
    """One server a character's tools come from, as ``troupe status`` shows it."""

    name: str
    """Its name in the character file."""
    up: bool
    detail: str = ""
    """Why it is not up (starting, or the reason it is down); empty when up."""


@runtime_checkable
class ToolServers(Protocol):
    """A :class:`Toolbox` that can tell its servers and whether each is up (optional: a
    toolbox without servers need not offer it)."""

    def servers(self) -> Sequence[ToolServer]: ...

    async def settled(self) -> None:
        """Until each server has come up, or failed to, once: what it offers is known (``troupe
        chat`` waits for it before the first line; the daemon does not)."""
        ...


def cut_result(text: str, limit: int = MAX_RESULT_CHARS) -> tuple[str, bool]:
    """``text`` at most ``limit`` characters (a note included); True when it was cut."""
    if len(text) <= limit:
        return text, False
    note = f"\n[cut: the result was {len(text):,} characters; only the first part is shown]"
    return text[: max(0, limit - len(note))] + note, True
