"""What the agents of one daemon share, owned by the daemon and handed to each runtime.

Nothing is shared through module globals: two daemons in one process (tests run many) must not
see each other's secrets, bot tokens or Telegram relay. The daemon (or ``troupe chat``) makes one
:class:`Shared` and gives it to every :class:`~bot.runtime.agent.AgentRuntime` it creates; a runtime
made alone gets one of its own. Its :attr:`Shared.bus` reaches the other daemons of the troupe
(the daemon sets it once its database is open; alone, it is a :class:`~bot.kernel.bus.LocalBus`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar, cast
from urllib.parse import quote

from bot.kernel.bus import Bus, LocalBus
from bot.kernel.redact import Redactor

__all__ = ["Shared"]

T = TypeVar("T")


class Shared:
    """One daemon's shared objects: the secrets its logs never show, and one instance of each
    kind a platform keeps across its agents (:meth:`instance_of`)."""

    def __init__(self) -> None:
        self.secrets = Redactor()
        #: Posts to and from the troupe's other daemons (nobody else: a LocalBus).
        self.bus: Bus = LocalBus()
        #: Where the daemon's console answers (``http://127.0.0.1:8420/``), once it has started;
        #: None without one.
        self.console_url: str | None = None
        #: The daemon's data directory (``TROUPE_DATA_DIR``), where characters keep files
        #: (DOWNLOAD_MEDIA); None when no daemon runs them, and nothing is kept.
        self.data_dir: Path | None = None
        self._objects: dict[type[object], object] = {}  # each kind to its instance

    def why_url(self, message_id: str) -> str | None:
        """The console's page of how message ``message_id`` ended; None without a console."""
        if self.console_url is None:
            return None
        return f"{self.console_url}why/{quote(message_id, safe='')}"

    def instance_of(self, kind: type[T]) -> T:
        """This daemon's instance of ``kind`` (made with ``kind()`` on first use): how a platform
        keeps one object for all its agents (the Telegram relay, the bot tokens in use) while
        ``bot/`` knows nothing of the platform."""
        found = self._objects.get(kind)
        if found is None:
            found = self._objects[kind] = kind()
        return cast(T, found)  # stored under its own kind
