"""What the pipeline hands actions as their callback: the platform's reply callback, bounded,
counted and recorded.

Every message the agent sends in answer to a message goes through one :class:`Delivery`. It
- cuts text to ``MAX_REPLY_CHARS`` (a model that writes 300,000 characters must not become 74
  chat messages),
- records the message as ``SENDING`` before the first send, so a crash after it never sends the
  answer again (at most once); gives it back when the character's lease was lost before anything
  went out, so the daemon serving the character now answers it,
- counts the message in, and times it to the first reply that went out,
- knows whether anything was sent, so an outcome can say "send failed" instead of "replied".
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from bot.components import HandlerCallback
from bot.types import Handling, Memory

from ._recovery import say_given_back

if TYPE_CHECKING:
    from bot.runtime import AgentRuntime

__all__ = ["DEFAULT_MAX_REPLY_CHARS", "ONE_MESSAGE_CHARS", "Delivery", "bound_text"]

_log = logging.getLogger(__name__)

DEFAULT_MAX_REPLY_CHARS = 6000
#: An answer longer than this (a summary, a transcript) is "long": more than one chat message
#: (Discord takes 2,000), so it goes as a file after a short lead (:func:`bot.outgoing.text_or_file`).
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
    """The callback actions get for one incoming message (see the module docstring)."""

    def __init__(self, runtime: AgentRuntime, message: Memory, callback: HandlerCallback | None) -> None:
        self.runtime = runtime
        self.message = message
        self.callback = callback
        self.limit = max_reply_chars(runtime)
        self.platform = str(message.content.get("source") or "unknown")
        self.attempted = 0
        """Sends tried (content with text or files)."""
        self.sent = 0
        """Platform messages that went out."""
        self._received = time.perf_counter()
        self._marked = False
        self._released = False

    @property
    def failed(self) -> bool:
        """Something was to be sent and nothing went out."""
        return self.attempted > 0 and self.sent == 0

    async def __call__(self, content: dict[str, Any]) -> list[Memory]:
        if self.callback is None:
            return []
        text = str(content.get("text") or "")
        if text:
            bounded = bound_text(text, self.limit)
            if bounded != text:
                _log.warning(
                    "%s: a reply of %d characters was cut to %d (MAX_REPLY_CHARS)",
                    self.runtime.character.name,
                    len(text),
                    len(bounded),
                )
                content = {**content, "text": bounded}
        if text or content.get("files"):
            self.attempted += 1
        if not self.runtime.may_send():
            # Another daemon serves the character now (this one lost its lease): nothing goes out
            # and nothing is marked, so the message stays for the lease holder to take up.
            _log.warning(
                "%s: not sending a reply: another daemon may serve this character now", self.runtime.character.name
            )
            return []
        if not self._marked and self.message.id is not None:
            store, message_id, runtime = self.runtime.store, self.message.id, self.runtime
            # Recorded before anything goes out (at most once); while the store cannot write, the
            # reply waits for it rather than being lost.
            await store.health.retry(
                lambda: store.mark_message(message_id, Handling.SENDING), going_on=lambda: runtime.accepting
            )
            self._marked = True
        sent = await self.callback(content)
        if not (sent or self.sent or self._released or self.runtime.may_send()) and self.message.id is not None:
            # The lease ran out between marking SENDING and sending (the process was paused):
            # nothing went out, so give the message back (once) for the daemon that holds it now.
            self._released = True
            if await self.runtime.store.release_message(self.message.id):
                _log.warning(
                    "%s: message %s given back unanswered: another daemon serves this character now",
                    self.runtime.character.name,
                    self.message.id,
                )
                await say_given_back(self.runtime, self.platform)
        if sent and not self.sent:
            metrics, agent = self.runtime.metrics, self.runtime.character.name
            metrics.reply_latency.labels(agent=agent, platform=self.platform).observe(
                time.perf_counter() - self._received
            )
        self.sent += len(sent)
        return sent
