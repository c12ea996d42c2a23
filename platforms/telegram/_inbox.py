"""Nothing Telegram delivered is lost to a crash, or to a store that cannot write.

python-telegram-bot confirms updates to Telegram with its next ``getUpdates`` call, right after
it has put the last batch in the Application's update queue — long before troupe has stored,
let alone answered, them. :class:`InboxQueue` is that queue: it keeps each update in the store's
inbox *before* queueing it, so by the time Telegram forgets an update, troupe has it. The adapter
drops it from the inbox once it is dealt with; what a killed process left there is delivered
again on the next start (:func:`replay`), where the pipeline's claims make sure nothing is
answered twice.

While the store cannot write (a full disk, a lock held by another process), ``put`` does not
return: the updater awaits it for each update of a batch before it moves its offset on, so
Telegram keeps that update and the rest until the store writes again (``StoreHealth.retry``).
Stopping the updater cancels the wait; the update is then fetched again at the next start.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from telegram import Bot, Update

from bot.sdk import ExponentialBackoff

from ._mapping import SOURCE
from ._request import UpdatesRequest

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["InboxQueue", "replay"]

_log = logging.getLogger(__name__)

# An update whose handling the store failed is handled again after this long, doubling each time.
_AGAIN_FIRST_S = 0.1
_AGAIN_CAP_S = 10.0
# Updates queued in this run are remembered this long (a sweep of the inbox leaves them alone).
_SEEN_FOR_S = 3600.0


class InboxQueue(asyncio.Queue[Any]):
    """The Application's update queue, writing each update to the inbox before it is queued."""

    def __init__(self, runtime: AgentRuntime, polls: UpdatesRequest | None = None) -> None:
        super().__init__()
        self.runtime = runtime
        self._polls = polls  # has the updates' JSON as received: cheaper than serialising them again
        self._held: dict[int, ExponentialBackoff] = {}  # update id -> its delays, while it is held
        self._seen: dict[int, float] = {}  # update id -> when it was queued, in this run
        self._handling: set[int] = set()  # queued and not yet dealt with

    async def put(self, item: Any) -> None:
        if isinstance(item, Update):
            await self._keep(item)
            self._note(item.update_id)
        await super().put(item)

    async def put_kept(self, update: Update) -> None:
        """Queue ``update``, already in the inbox, unless it is being handled now (a webhook's
        update may reach the adapter both directly and from a sweep of the inbox)."""
        if update.update_id in self._handling:
            return
        self._note(update.update_id)
        await super().put(update)

    def seen(self, update_id: int) -> bool:
        """Whether this run has queued ``update_id`` (it is being handled, or was: one whose
        handling failed stays in the inbox, and is tried again at the next start)."""
        return update_id in self._seen

    def _note(self, update_id: int) -> None:
        now = time.monotonic()
        self._handling.add(update_id)
        self._seen[update_id] = now
        if len(self._seen) % 1024 == 0:  # now and then: forget what is long done
            self._seen = {u: t for u, t in self._seen.items() if now - t < _SEEN_FOR_S}

    async def again(self, update: Update) -> None:
        """Queue ``update`` once more: its handling failed because the store could not write. It
        is still in the inbox; it is handled again once the store writes (a little later each
        time, should the store fail it again and again)."""
        backoff = self._held.setdefault(update.update_id, ExponentialBackoff(_AGAIN_FIRST_S, _AGAIN_CAP_S))
        await asyncio.sleep(backoff.delay())
        await self._keep(update)  # waits until the store writes
        await super().put(update)

    def dealt_with(self, update_id: int) -> None:
        """``update_id`` left the inbox: nothing is held for it any more."""
        self._held.pop(update_id, None)
        self._handling.discard(update_id)

    async def _keep(self, update: Update) -> None:
        """Keep ``update`` in the inbox, waiting for as long as the store cannot write."""
        store, event_id = self.runtime.store, str(update.update_id)
        received = self._polls.take(update.update_id) if self._polls is not None else None
        payload = received or update.to_json()
        try:
            await store.health.retry(lambda: store.inbox_put(SOURCE, event_id, payload))
        except Exception as exc:  # not the store's failure (it would wait): handled all the same
            _log.warning(
                "%s: could not keep Telegram update %s in the inbox: %s", self.runtime.character.name, event_id, exc
            )


async def replay(
    runtime: AgentRuntime, bot: Bot, queue: InboxQueue, *, skip: Callable[[int], bool] = lambda _: False
) -> int:
    """Queue what is in the inbox and not yet handled: what a process that died left there, or
    (``skip``: leaving out what this run has queued) what a webhook kept and never handed over.
    Updates older than ``RECOVERY_WINDOW_S`` are logged and dropped. Returns how many were queued."""
    store, name = runtime.store, runtime.character.name
    # Kept by the database's clock (another daemon may have kept them): compared with the same.
    now, window, queued = await store.clock_ms(), runtime.recovery_window_ms, 0
    for event_id, payload, received_at in await store.inbox_pending(SOURCE):
        if event_id.isdigit() and skip(int(event_id)):
            continue
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
        await queue.put_kept(update)
        queued += 1
    if queued:
        _log.info("%s: handling %d Telegram updates kept in the inbox and not handled yet", name, queued)
    return queued
