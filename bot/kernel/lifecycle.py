"""The states troupe's moving parts go through, as one vocabulary.

They are ``StrEnum``s: a state compares equal to its value and is its value in JSON, so
``troupe status``, ``/status`` and the systemd status line show the same words as always.

::

    DaemonState    starting ─▶ running ⇄ reloading ─▶ stopping
    AgentState     starting ─▶ running ─▶ stopping ─▶ stopped     (an agent in the daemon)
                   starting ─▶ failed                              (did not start; a reload retries it)
    RuntimeState   new ─▶ starting ─▶ running ─▶ closed            (an AgentRuntime; it never restarts)
    AdapterState   new ─▶ starting ─▶ running ─▶ closed            (a platform adapter; the daemon makes a new one to reconnect)
                   starting ─▶ closed                              (did not connect: undone again)

How a platform connection is doing (connected, retrying …) is :class:`bot.kernel.links.LinkState`.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["AdapterState", "AgentState", "DaemonState", "RuntimeState"]


class DaemonState(StrEnum):
    STARTING = "starting"  # opening the database, starting the agents
    RUNNING = "running"
    RELOADING = "reloading"  # re-reading the character files; the agents keep running
    STOPPING = "stopping"  # a stop signal came: draining, then closing


class AgentState(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"  # finishing the replies in flight, then closing
    STOPPED = "stopped"
    FAILED = "failed"  # its runtime did not start; the error says why


class RuntimeState(StrEnum):
    NEW = "new"  # constructed, start() not called
    STARTING = "starting"
    RUNNING = "running"
    CLOSED = "closed"  # close() ran; a runtime does not restart


class AdapterState(StrEnum):
    NEW = "new"  # constructed, start() not called
    STARTING = "starting"  # bot token claimed, connecting
    RUNNING = "running"  # connected, and the runtime's Messenger for its platform
    CLOSED = "closed"  # close() ran; an adapter does not restart
