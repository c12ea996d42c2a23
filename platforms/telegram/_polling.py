"""What polling errors mean for the link: python-telegram-bot retries a failed ``getUpdates`` by
itself and says nothing when it works again, a 409 Conflict may be a restarted process's
previous poll still open or another process using the same token, and a 401 means the token was
revoked (:class:`~bot.runtime.refusals.TokenRefusal`: polls are held until Telegram takes it again)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from telegram.error import Conflict, InvalidToken, TelegramError

from bot.sdk import ExponentialBackoff, LinkState, TokenRefusal

from ._mapping import SOURCE

if TYPE_CHECKING:
    from ._adapter import TelegramAdapter

__all__ = ["PollingWatch"]

_log = logging.getLogger(__name__)

_PROBE_TIMEOUT_S = 15.0
# Telegram answers 409 while a previous poll of a restarted process is still open; only a
# conflict that keeps coming back means another process really uses the token.
_CONFLICTS_TO_STOP = 3
_CONFLICT_WINDOW_S = 120.0


class PollingWatch:
    """Follows one bot's polling errors (:meth:`on_error` is the updater's ``error_callback``)."""

    def __init__(self, adapter: TelegramAdapter) -> None:
        self.adapter = adapter
        self._conflicts: list[float] = []
        self._watching: asyncio.Task[None] | None = None
        self.refusal = TokenRefusal(adapter.runtime, SOURCE, "Telegram", "TELEGRAM_BOT_TOKEN", self._token_taken)

    def may_poll(self) -> bool:
        """Polls go to Telegram: the daemon may send (it holds the lease) and the token is not refused."""
        return self.adapter.runtime.may_send() and not self.refusal.refused

    async def _token_taken(self) -> bool:
        """Whether Telegram takes the token now (getMe)."""
        if self.adapter.app is None:
            raise RuntimeError("the bot is not connected")
        try:
            await self.adapter.app.bot.get_me()
        except InvalidToken:
            return False
        return True

    def on_error(self, exc: TelegramError) -> None:
        adapter, runtime = self.adapter, self.adapter.runtime
        if isinstance(exc, Conflict):
            now = time.monotonic()
            self._conflicts = [t for t in self._conflicts if now - t < _CONFLICT_WINDOW_S] + [now]
            if len(self._conflicts) >= _CONFLICTS_TO_STOP:
                _log.error(
                    "%s: another process is polling Telegram with this bot's token (409 Conflict); stopping "
                    "Telegram for this character. Stop the other process (or give each its own bot) and "
                    "restart troupe",
                    adapter.name,
                )
                runtime.links.set(SOURCE, LinkState.FAILED, "another process polls with this bot's token")
                runtime.create_task(adapter.stop_polling(), "telegram:stop-polling")
            return
        _log.warning("%s: Telegram polling error (%s); retrying", adapter.name, exc.__class__.__name__)
        runtime.links.set(SOURCE, LinkState.RETRYING, f"polling failed ({exc.__class__.__name__})")
        if self._watching is None or self._watching.done():
            self._watching = runtime.create_task(self._watch_recovery(), "telegram:recovery")

    async def _watch_recovery(self) -> None:
        """Ask Telegram (getMe) with back-off until it answers; then the link is up again."""
        adapter, backoff = self.adapter, ExponentialBackoff(1.0, 30.0)
        while adapter.app is not None and not adapter.closed:
            await asyncio.sleep(backoff.delay())
            try:
                async with asyncio.timeout(_PROBE_TIMEOUT_S):
                    await adapter.app.bot.get_me()
            except InvalidToken:
                self.refusal.refused_now()  # asked about slowly from now on
                return
            except (TelegramError, TimeoutError):
                continue
            adapter.runtime.links.set(SOURCE, LinkState.CONNECTED)
            return
