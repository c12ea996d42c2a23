"""Groups the owner allows: with ``shouldOnlyJoinInAllowedGroups`` on, a bot in a group that is
not in ``allowedGroupIds`` says why, once, and leaves it (``leaveChat``); nothing said there
reaches the character meanwhile. Private chats and channels are not groups: unaffected.

Once, whatever Telegram delivers again and whenever the daemon restarts: the notice is claimed in
the store like a message's answer (``Store.claim_message``, under an id of its own per group) and
marked as going out before it is sent, so a redelivered "added to the group", the message about
it that comes with it, or anything said there before the bot is gone, finds it claimed and sends
nothing. Leaving is done while the bot is still in the group (Telegram is asked when in doubt),
so it happens once per time the bot is added.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from telegram import Chat
from telegram.error import BadRequest, Forbidden, TelegramError

from bot.sdk import ChannelType, Claim, ExponentialBackoff, Handling, Reply, now_ms

from ._mapping import channel_type, message_id, room_id, world_id
from ._outbound import ChatTarget

if TYPE_CHECKING:
    from ._adapter import TelegramAdapter

__all__ = ["GroupGate", "IN_CHAT", "refused_group"]

_log = logging.getLogger(__name__)

_LEAVE_TIMEOUT_S = 15.0
_LEAVE_ATTEMPTS = 3
#: The statuses of a chat member that is in the chat.
IN_CHAT = ("member", "administrator", "creator", "restricted")


def refused_group(chat: object, allowed_groups: frozenset[str] | None) -> bool:
    """Whether ``chat`` is a group (or supergroup) the bot may not stay in: the option is on
    (``allowed_groups`` not ``None``) and the group's id is not on the list."""
    if allowed_groups is None or channel_type(chat) is not ChannelType.GROUP:
        return False
    return str(getattr(chat, "id", "")) not in allowed_groups


class GroupGate:
    """Says why and leaves the groups one character's bot may not stay in."""

    def __init__(self, adapter: TelegramAdapter) -> None:
        self.adapter = adapter
        self._left: set[int] = set()  # groups left in this run (and not added to again since)
        self._lock = asyncio.Lock()  # one group at a time: an update and its companions come together

    def refuses(self, chat: object) -> bool:
        return refused_group(chat, self.adapter.config.allowed_groups)

    async def added(self, chat: Chat) -> None:
        """The bot was just added to ``chat``, a group it may not stay in."""
        await self._refuse(chat, added=True)

    async def seen(self, chat: Chat) -> None:
        """Something happened in ``chat``, a group it may not stay in, that the bot was told of:
        it may still be there (it was in the group before the option was turned on)."""
        await self._refuse(chat, added=False)

    def gone(self, chat: Chat) -> None:
        """The bot is no longer in ``chat`` (it left, or was removed)."""
        self._left.add(chat.id)

    async def _refuse(self, chat: Chat, *, added: bool) -> None:
        adapter = self.adapter
        runtime = adapter.runtime
        store, agent = runtime.store, runtime.agent_id
        async with self._lock:
            if added:
                self._left.discard(chat.id)
            elif chat.id in self._left:
                return  # said there before the bot left, delivered after
            notice = message_id(agent, chat.id, "not-an-allowed-group")
            claim = await store.claim_message(notice, room_id(agent, chat.id), now_ms(), claimant=runtime.claimant)
            first = claim in (Claim.NEW, Claim.RETRY)
            if first and await store.mark_message(notice, Handling.SENDING, claimant=runtime.claimant):
                await self._say_why(chat)  # marked as going out first: never said twice, even after a crash
            # Said before: added again, or a crash came before it left.
            leaving = first or await self._still_in(chat)
            if leaving:
                await self._leave(chat)
            if first:
                await store.mark_message(notice, Handling.DONE, "left", claimant=runtime.claimant)
            self._left.add(chat.id)
        if leaving and await store.get_world(world_id(agent, chat.id)) is not None:
            await adapter.left_chat(chat, "left")  # known from before the option: its rooms are left

    async def _say_why(self, chat: Chat) -> None:
        adapter = self.adapter
        text = (
            f"{adapter.runtime.character.name} only takes part in the groups its owner allows, "
            "and this is not one of them, so I'm leaving."
        )
        _log.info(
            "%s: leaving Telegram group %s (%s): not in allowedGroupIds", adapter.name, chat.id, chat.title or "?"
        )
        await adapter.try_send(ChatTarget(chat.id, None, chat.title), text, Reply(text=text), None)

    async def _still_in(self, chat: Chat) -> bool:
        app = self.adapter.app
        assert app is not None  # updates come only while the app runs
        try:
            async with asyncio.timeout(_LEAVE_TIMEOUT_S):
                member = await app.bot.get_chat_member(chat.id, self.adapter.bot_id)
        except (BadRequest, Forbidden):
            return False  # Telegram no longer shows the group to the bot
        return member.status in IN_CHAT

    async def _leave(self, chat: Chat) -> None:
        """Leave ``chat``, trying again a little later should Telegram not answer.

        Raises:
            TelegramError, TimeoutError: Telegram failed every attempt (the update stays in the
                inbox: the bot leaves at the next start).
        """
        app = self.adapter.app
        assert app is not None  # updates come only while the app runs
        backoff = ExponentialBackoff(1.0, 8.0)
        for attempt in range(1, _LEAVE_ATTEMPTS + 1):
            try:
                async with asyncio.timeout(_LEAVE_TIMEOUT_S):
                    await app.bot.leave_chat(chat.id)
                return
            except (BadRequest, Forbidden) as exc:
                _log.debug("%s: not in Telegram group %s any more: %s", self.adapter.name, chat.id, exc)
                return
            except (TelegramError, TimeoutError):
                if attempt == _LEAVE_ATTEMPTS:
                    raise
                await asyncio.sleep(backoff.delay())
