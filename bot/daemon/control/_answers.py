"""The JSON the daemon answers ``GET /status`` and ``POST /reload`` with, as the daemon builds it.

What comes back over the socket is read as plain JSON (:func:`~bot.daemon.control.call`); these are the
shapes the daemon promises, kept in one place beside :func:`~bot.daemon.control.format_status` and
:func:`~bot.daemon.control.format_reload`, which print them.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from bot.kernel.lifecycle import AgentState, DaemonState

__all__ = [
    "AgentStatus",
    "DaemonStatus",
    "FileProblem",
    "PlatformStatus",
    "ReloadSummary",
    "StoreStatus",
    "TroupeCharacter",
    "TroupeDaemon",
    "ToolServerStatus",
    "ToolsStatus",
    "TroupeStatus",
]


class PlatformStatus(TypedDict):
    """One agent's connection to one platform."""

    state: str
    detail: str


class ToolServerStatus(TypedDict):
    """One server a character's tools come from: up or not, and why not."""

    up: bool
    detail: str


class ToolsStatus(TypedDict):
    """A character's tools: the names it is offered now, and its servers by name."""

    names: list[str]
    servers: dict[str, ToolServerStatus]


class AgentStatus(TypedDict):
    """One agent: its state, why it failed, its replies in flight and its platforms."""

    name: str
    id: str
    state: AgentState
    error: str
    #: The platforms its file asks for that it does not run on, and why ("" when none).
    skipped: str
    in_flight: int
    platforms: dict[str, PlatformStatus]
    #: Only for a character with tools or tool servers.
    tools: NotRequired[ToolsStatus]


class StoreStatus(TypedDict):
    """The database: ``ok``, or why it cannot write (``disk full``, ``locked``, ``corrupt`` …)."""

    state: str
    detail: str


class DaemonStatus(TypedDict):
    """``GET /status``."""

    state: DaemonState
    pid: int
    uptime_s: float
    version: str
    agents: list[AgentStatus]
    #: Whether the database writes (``StoreStatus``: its state and the driver's words).
    store: NotRequired[StoreStatus]
    #: With a database shared by several daemons: the whole troupe (see :class:`TroupeStatus`).
    troupe: NotRequired[TroupeStatus]


class TroupeDaemon(TypedDict):
    """One daemon of the troupe, as it published itself."""

    id: str
    host: str
    pid: int
    version: str
    #: When it started, in milliseconds since the epoch (its own clock).
    started_at: int
    #: Seconds since its last heartbeat, by the database's clock (None: it never published).
    heartbeat_s: float | None
    #: It holds its presence lease: placement counts it.
    alive: bool
    #: The daemon answering (or None when the database was read directly).
    this: bool
    #: Database connections it holds now (None where not known).
    connections: int | None
    #: Characters it serves (holds the lease of).
    serves: int
    #: Discord shards (1 and up) of sharded characters it serves.
    shards: int


class TroupeCharacter(TypedDict):
    """One character of the troupe: who serves it, under which lease."""

    id: str
    name: str
    #: Its file, as the daemon serving it (else the first that has it) names it.
    file: str
    #: ``running``, ``starting`` or ``failed`` on the daemon holding its lease; ``waiting``: nobody holds it.
    state: str
    daemon: str | None
    epoch: int | None
    held_s: float | None
    expires_s: float | None
    #: The daemons whose copies of its file disagree (empty when they all agree).
    differs: list[str]
    #: A sharded Discord character's shards 1 and up (shard 0 goes with the character): shard
    #: number -> the daemon serving it, None for one nobody serves; empty when unsharded.
    shards: dict[str, str | None]


class TroupeStatus(TypedDict):
    """The troupe as its shared database has it."""

    daemons: list[TroupeDaemon]
    characters: list[TroupeCharacter]
    #: One line per character file that differs between daemons.
    warnings: list[str]
    #: Set instead when the database could not be read.
    error: NotRequired[str]


class FileProblem(TypedDict):
    """A character file the reload could not use: kept (its agent runs on as it was) or failed."""

    name: str
    file: str
    reason: str


class ReloadSummary(TypedDict):
    """``POST /reload``: the agents by what the reload did with them."""

    started: list[str]
    stopped: list[str]
    restarted: list[str]
    unchanged: list[str]
    kept: list[FileProblem]
    failed: list[FileProblem]
