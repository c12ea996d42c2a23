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

    @property
    def redactor(self) -> Redactor:
        """The daemon's secrets, scrubbed from every log line: from the Logs page's too."""
        ...
