"""What TRANSCRIBE_MEDIA and CHAT_WITH_ATTACHMENTS share: the attachments a request names.

Not an action itself (the leading underscore keeps it out of discovery).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from bot.sdk import ActionResult, HandlerCallback, Memory, Reply, text_or_file

from .._delivery import ONE_MESSAGE_CHARS
from ._common import source_of

__all__ = ["named_in", "send_answer"]

#: Upstream matches attachment ids by their first five characters, which people copy from prompts.
_ID_PREFIX = 5


def named_in(text: str, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``items`` that ``text`` names by id (or its first characters), title or URL."""
    wanted = text.casefold()
    named = []
    for item in items:
        keys = [item["id"], item["title"], item["url"]]
        if len(item["id"]) > _ID_PREFIX:
            keys.append(item["id"][:_ID_PREFIX])
        if any(len(k) >= 3 and k.casefold() in wanted for k in keys if k):
            named.append(item)
    return named


async def send_answer(
    callback: HandlerCallback,
    message: Memory,
    text: str,
    action: str,
    data: dict[str, Any],
    *,
    long: tuple[str, str, str] | None = None,
) -> ActionResult:
    """Send ``text`` as ``<action>_RESPONSE`` in reply to ``message``; the result says whether it went out.

    ``long``: ``(lead, file name, file text)`` to send instead when ``text`` is longer than one chat
    message (:data:`~plugins.core._delivery.ONE_MESSAGE_CHARS`): the lead, and the text as a file.
    """
    said = Reply(text=text)
    if long is not None:
        lead, filename, body = long
        said = text_or_file(text, limit=ONE_MESSAGE_CHARS, lead=lead, filename=filename, body=body)
    sent = await callback(
        replace(said, actions=(f"{action}_RESPONSE",), in_reply_to=message.id, source=source_of(message))
    )
    if not sent:
        return ActionResult(success=False, error=f"send failed: the platform took none of the {action} answer")
    return ActionResult(text=text, data={"actionName": action, **data})
