"""What the pipeline hands actions as their reply channel (``ActionContext.reply``): the
platform's reply callback, bounded, counted and recorded.

Every message the agent sends in answer to a message goes through one :class:`Delivery`. It
- cuts text to ``MAX_REPLY_CHARS`` (a model that writes 300,000 characters must not become 74
  chat messages),
- records the message as ``SENDING`` before the first send, so a crash after it never sends the
  answer again (at most once) — and sends nothing when that record finds the claim no longer
  this runtime's (taken over by the daemon serving the character now) or already answered;
- gives the message back when the fence refused its send (the character's lease was lost, or
  lapsed for a moment), so the daemon serving the character then answers it: a refused send is
  not a finished message, nor a crash that uses up a retry,
- counts the message in, and times it to the first reply that went out,
- knows whether anything was sent, so an outcome can say "send failed" instead of "replied".
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from bot.sdk import HandlerCallback, Handling, Memory, ReactCallback, Reacted, Reply, StoreError

from ._recovery import say_given_back

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["DEFAULT_MAX_REPLY_CHARS", "ONE_MESSAGE_CHARS", "Delivery", "bound_text"]

_log = logging.getLogger(__name__)

DEFAULT_MAX_REPLY_CHARS = 6000
#: An answer longer than this (a summary, a transcript) is "long": more than one chat message
#: (Discord takes 2,000), so it goes as a file after a short lead (:func:`bot.kernel.outgoing.text_or_file`).
ONE_MESSAGE_CHARS = 1800
_ELLIPSIS = " …"


def bound_text(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at a word boundary when one is near, with an
    ellipsis saying it was cut; unchanged when it fits."""
    if len(text) <= limit:
        return text
    room = max(limit - len(_ELLIPSIS), 1)
    cut = text.rfind(" ", room * 3 // 4, room + 1)
    return text[: cut if cut > 0 else room].rstrip() + _ELLIPSIS


def max_reply_chars(runtime: AgentRuntime) -> int:
    """``MAX_REPLY_CHARS``: how long one reply may be (at least 100 characters)."""
    return max(100, runtime.get_int("MAX_REPLY_CHARS", DEFAULT_MAX_REPLY_CHARS))


class Delivery:
    """The reply channel actions get for one incoming message (see the module docstring)."""

    def __init__(
        self,
        runtime: AgentRuntime,
        message: Memory,
        callback: HandlerCallback,
        react_with: ReactCallback | None = None,
    ) -> None:
        self.runtime = runtime
        self.message = message
        self.callback = callback
        self.react_with = react_with
        """The platform's way to react on the message (its channel's ``react``), if any."""
        self.limit = max_reply_chars(runtime)
        self.platform = message.content.source or "unknown"
        self.attempted = 0
        """Sends tried (content with text or files, reactions)."""
        self.sent = 0
        """Platform messages (and reactions) that went out."""
        self.sent_ids: list[str] = []
        """The ids of those messages, as stored (for the message's trace)."""
        self._received = time.perf_counter()
        self._marked = False
        #: The message was given back (its send refused by the fence): its claim is not to be closed.
        self.given_back = False
        #: The claim was found taken over or answered when marking SENDING: nothing may go out.
        self.not_ours = False

    @property
    def failed(self) -> bool:
        """Something was to be sent and nothing went out."""
        return self.attempted > 0 and self.sent == 0

    async def __call__(self, reply: Reply) -> list[Memory]:
        text = reply.text
        if text:
            bounded = bound_text(text, self.limit)
            if bounded != text:
                _log.warning(
                    "%s: a reply of %d characters was cut to %d (MAX_REPLY_CHARS)",
                    self.runtime.character.name,
                    len(text),
                    len(bounded),
                )
                reply = replace(reply, text=bounded)
        if text or reply.files:
            self.attempted += 1
        asked = time.monotonic()
        if not await self._may_go():
            return []
        sent = await self.callback(reply)
        if not (sent or self.sent) and self.runtime.fenced_since(asked):
            # The fence refused the send (the lease lapsed while it was being marked or sent, even
            # if a late renewal restored it since): nothing went out, so give the message back.
            await self.give_back()
        if sent and not self.sent:
            metrics, agent = self.runtime.metrics, self.runtime.character.name
            metrics.reply_latency.labels(agent=agent, platform=self.platform).observe(
                time.perf_counter() - self._received
            )
        self.sent += len(sent)
        self.sent_ids.extend(m.id for m in sent if m.id is not None)
        return sent

    async def react(self, emoji: str) -> Reacted:
        """Put ``emoji`` on the message being answered through the platform's channel: part of
        the answer, so recorded as ``SENDING`` first like a reply (a redelivery never reacts
        again), counted as something that went out when the platform took it."""
        if self.react_with is None:
            return Reacted.UNSUPPORTED
        asked = time.monotonic()
        if not await self._may_go():
            self.attempted += 1
            return Reacted.NOT_SENT
        reacted = await self.react_with(emoji)
        if reacted is not Reacted.UNSUPPORTED:  # a channel that cannot react tried nothing
            self.attempted += 1
        if reacted is Reacted.DONE:
            self.sent += 1
        elif not self.sent and self.runtime.fenced_since(asked):
            await self.give_back()  # refused by the fence, as a send can be: answered elsewhere
        return reacted

    async def _may_go(self) -> bool:
        """Whether anything may go out now: the character's lease is held, and the message is
        recorded as ``SENDING`` (once, before the first thing goes) and still this runtime's.
        A lease lost gives the message back; a claim taken over or answered stops every send."""
        if self.given_back or self.not_ours:
            return False
        if not self.runtime.may_send():
            _log.warning(
                "%s: not sending a reply: another daemon may serve this character now", self.runtime.character.name
            )
            await self.give_back()
            return False
        if not self._marked and self.message.id is not None:
            self._marked = True
            store, message_id, runtime = self.runtime.store, self.message.id, self.runtime
            # Recorded before anything goes out (at most once); while the store cannot write, the
            # reply waits for it rather than being lost.
            marked = await store.health.retry(
                lambda: store.mark_message(message_id, Handling.SENDING, claimant=runtime.claimant),
                going_on=lambda: runtime.accepting,
            )
            if not marked:
                # Taken over (this runtime was deposed meanwhile) or answered: never send it again.
                self.not_ours = True
                _log.warning(
                    "%s: not sending a reply to message %s: it was taken up elsewhere or answered meanwhile",
                    runtime.character.name,
                    message_id,
                )
                return False
        return True

    async def give_back(self) -> bool:
        """Give the message back unanswered (``Store.release_message``), once, when nothing of its
        reply went out: the daemon serving the character answers it (told on the bus). True if
        it was given back now."""
        if self.given_back or self.sent or self.message.id is None:
            return False
        self.given_back = True
        runtime = self.runtime
        try:
            released = await runtime.store.release_message(self.message.id, claimant=runtime.claimant)
        except StoreError as exc:  # the claim stays this runtime's, idle: the holder's look finds it
            _log.warning("%s: could not give message %s back: %s", runtime.character.name, self.message.id, exc)
            return False
        if released:
            _log.warning(
                "%s: message %s given back unanswered: another daemon serves this character now",
                runtime.character.name,
                self.message.id,
            )
            await say_given_back(runtime, self.platform)
        return released
