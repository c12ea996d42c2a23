"""The JSON the daemon answers ``GET /status`` and ``POST /reload`` with, as the daemon builds it.

What comes back over the socket is read as plain JSON (:func:`~bot.control.call`); these are the
shapes the daemon promises, kept in one place beside :func:`~bot.control.format_status` and
:func:`~bot.control.format_reload`, which print them.
"""

from __future__ import annotations

from typing import TypedDict

from ..lifecycle import AgentState, DaemonState

__all__ = ["AgentStatus", "DaemonStatus", "FileProblem", "PlatformStatus", "ReloadSummary"]


class PlatformStatus(TypedDict):
    """One agent's connection to one platform."""

    state: str
    detail: str


class AgentStatus(TypedDict):
    """One agent: its state, why it failed, its replies in flight and its platforms."""

    name: str
    id: str
    state: AgentState
    error: str
    in_flight: int
    platforms: dict[str, PlatformStatus]


class DaemonStatus(TypedDict):
    """``GET /status``."""

    state: DaemonState
    pid: int
    uptime_s: float
    version: str
    agents: list[AgentStatus]


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
