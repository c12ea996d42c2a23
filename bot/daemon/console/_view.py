"""What the console needs of the daemon: the control server's view, and the agents themselves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from bot.daemon.control import DaemonView
from bot.daemon.hosted import HostedAgent
from bot.kernel.redact import Redactor

__all__ = ["ConsoleView"]


class ConsoleView(DaemonView, Protocol):
    """The daemon, as the console's pages see it (a page that needs more adds it here)."""

    @property
    def agents(self) -> Mapping[str, HostedAgent]:
        """The agents this daemon runs (or tried to), by agent id, in start order: each with its
        runtime (its store, its character) while it runs."""
        ...

    async def checkpoint(self) -> bool:
        """Empty the database's write-ahead log, so that what was forgotten leaves no copy there:
        True when emptied, False when another reader held it (a later checkpoint finishes)."""
        ...

    @property
    def setup_needs(self) -> tuple[tuple[str, ...], ...]:
        """What is not configured yet, when nothing runs for want of it (the model key): for each
        need, the settings any one of which would do. Empty once configured."""
        ...

    @property
    def redactor(self) -> Redactor:
        """The daemon's secrets, scrubbed from every log line: from the Logs page's too."""
        ...
