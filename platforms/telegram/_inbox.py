"""Nothing Telegram delivered is lost to a crash.

python-telegram-bot confirms updates to Telegram with its next ``getUpdates`` call, right after
it has put the last batch in the Application's update queue — long before troupe has stored,
let alone answered, them. :class:`InboxQueue` is that queue: it keeps each update in the store's
inbox *before* queueing it, so by the time Telegram forgets an update, troupe has it. The adapter
drops it from the inbox once it is dealt with; what a killed process left there is delivered
again on the next start (:func:`replay`), where the pipeline's claims make sure nothing is
answered twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

from telegram import Bot, Update

from ._mapping import SOURCE
from ._request import UpdatesRequest

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["InboxQueue", "replay"]

_log = logging.getLogger(__name__)


class InboxQueue(asyncio.Queue[Any]):
    """The Application's update queue, writing each update to the inbox before it is queued."""

    def __init__(self, runtime: AgentRuntime, polls: UpdatesRequest | None = None) -> None:
        super().__init__()
        self.runtime = runtime
        self._polls = polls  # has the updates' JSON as received: cheaper than serialising them again

    async def put(self, item: Any) -> None:
        if isinstance(item, Update):
            try:
                received = self._polls.take(item.update_id) if self._polls is not None else None
                await self.runtime.store.inbox_put(SOURCE, str(item.update_id), received or item.to_json())
            except Exception as exc:  # handled all the same; only a crash in the next moments could lose it
                _log.warning(
                    "%s: could not keep Telegram update %s in the inbox: %s",
                    self.runtime.character.name,
                    item.update_id,
                    exc,
                )
        await super().put(item)


async def replay(runtime: AgentRuntime, bot: Bot, queue: asyncio.Queue[Any]) -> int:
    """Queue again what a process that died left in the inbox (younger than
    ``RECOVERY_WINDOW_S``); older updates are logged and dropped. Returns how many were queued."""
    store, name = runtime.store, runtime.character.name
    # Kept by the database's clock (another daemon may have kept them): compared with the same.
    now, window, queued = await store.clock_ms(), runtime.recovery_window_ms, 0
    for event_id, payload, received_at in await store.inbox_pending(SOURCE):
        age_s = (now - received_at) / 1000
        try:
            update = Update.de_json(json.loads(payload), bot) if now - received_at <= window else None
        except (ValueError, TypeError, KeyError) as exc:
            _log.warning(
                "%s: dropping Telegram update %s kept from before the restart: it no longer reads (%s)",
                name,
                event_id,
                exc.__class__.__name__,
            )
            update = None
        else:
            if update is None:
                _log.info(
                    "%s: not handling Telegram update %s after the restart: it is %.0f s old (more than "
                    "RECOVERY_WINDOW_S)",
                    name,
                    event_id,
                    age_s,
                )
        if update is None:
            await store.inbox_done(SOURCE, event_id)
            continue
        await queue.put(update)
        queued += 1
    if queued:
        _log.info("%s: handling %d Telegram updates that arrived before the restart", name, queued)
    return queued
