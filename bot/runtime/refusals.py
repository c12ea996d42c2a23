"""A bot token the platform refuses while the daemon runs (revoked, or replaced by a new one).

Every call the bot makes then fails the same way, so trying at the usual pace only fills the log.
:class:`TokenRefusal` makes it one state of the link (:attr:`~bot.kernel.links.LinkState.REFUSED`, which
readiness, ``troupe status``, the systemd status line and the metrics show), says so once with
what to do, and asks the platform again slowly (``TROUPE_TOKEN_RETRY_S``, five minutes by
default, the first tries sooner) in case the token is given back; when it works again the link is
connected and the platform's recovery takes up what was left. The agent's other platforms, and
the other agents, carry on meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from bot.config.settings import SettingReader
from bot.kernel.backoff import ExponentialBackoff
from bot.kernel.errors import ConfigError
from bot.kernel.lifecycle import RuntimeState
from bot.kernel.links import LinkState
from bot.runtime.events import PlatformConnected

if TYPE_CHECKING:
    from bot.runtime.agent import AgentRuntime

__all__ = ["TokenRefusal", "TokenRefused"]

_log = logging.getLogger(__name__)

_RETRY_DEFAULT_S = 300.0
# Asking, and on Discord connecting anew, are each bounded on their own; this bounds them together.
_PROBE_TIMEOUT_S = 180.0

#: Asks the platform whether it takes the token now: True yes, False refused; raising means it
#: could not tell (unreachable), and it is asked again later.
Probe = Callable[[], Awaitable[bool]]


class TokenRefused(ConfigError):
    """The platform no longer takes the bot's token (Discord closed the gateway with 4004)."""


class TokenRefusal:
    """One bot's token, refused or not: :meth:`refused_now` when a call is answered 401."""

    def __init__(self, runtime: AgentRuntime, platform: str, label: str, setting: str, probe: Probe) -> None:
        self.runtime = runtime
        self.platform = platform  # the link's name (``telegram``)
        self.label = label  # the platform's name for people (``Telegram``)
        self.setting = setting  # where the token goes (``TELEGRAM_BOT_TOKEN``)
        self._probe = probe
        self._refused = False
        self._detail = ""
        self.retry_s = SettingReader(runtime.get_setting, runtime.character.name).number(
            "TROUPE_TOKEN_RETRY_S", _RETRY_DEFAULT_S, 0.05, 86400
        )

    @property
    def refused(self) -> bool:
        return self._refused

    def refused_now(self, how: str = "401 Unauthorized") -> None:
        """The platform refused the token (``how``: its answer): the link is REFUSED and the token
        asked about again slowly until it works. Said once however many calls were refused."""
        if self._refused or self.runtime.state is RuntimeState.CLOSED:
            return
        self._refused = True
        self._detail = f"{self.label} refused the bot token ({how})"
        name = self.runtime.character.name
        _log.error(
            "%s refused %s's bot token (%s): the token was revoked or is wrong; set a new %s and "
            "run `troupe reload` (restart the service instead when it is set in troupe.env, which a reload "
            "does not read). Asking %s again meanwhile, every %s at the longest",
            self.label,
            name,
            how,
            self.setting,
            self.label,
            _every(self.retry_s),
        )
        self.runtime.links.set(self.platform, LinkState.REFUSED, self._detail)
        self.runtime.create_task(self._watch(), f"{self.platform}:token")

    async def _watch(self) -> None:
        backoff = ExponentialBackoff(self.retry_s / 8, self.retry_s)
        while True:
            await asyncio.sleep(backoff.delay())
            try:
                async with asyncio.timeout(_PROBE_TIMEOUT_S):
                    if not await self._probe():
                        continue
            except Exception as exc:  # noqa: BLE001 - unreachable now: the token may still be good; ask later
                _log.debug("%s: could not ask %s about the token: %s", self.runtime.character.name, self.label, exc)
                # Still refused, as far as anyone can tell (a failed reconnection said otherwise).
                self.runtime.links.set(self.platform, LinkState.REFUSED, self._detail)
                continue
            break
        self._refused = False
        _log.info("%s takes %s's bot token again; %s is back", self.label, self.runtime.character.name, self.label)
        self.runtime.links.set(self.platform, LinkState.CONNECTED)
        # What could not be answered meanwhile is taken up, as after any reconnection.
        await self.runtime.emit(PlatformConnected(source=self.platform))


def _every(seconds: float) -> str:
    return f"{seconds / 60:g} minutes" if seconds >= 120 else f"{seconds:g} s"
