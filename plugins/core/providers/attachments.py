"""ATTACHMENTS (dynamic): images, files and links shared in the message and the recent conversation.

Attachments of messages sent more than an hour before the newest message with attachments keep
their description but have their extracted text hidden, to keep prompts short. Embedded
``data:`` URLs are summarised, never pasted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bot.sdk import Memory, Provider, ProviderResult, State

from ._common import recent_attachments

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["provider"]

_HIDE_AFTER_MS = 60 * 60 * 1000
_HIDDEN = "[Hidden]"
_NONE = "# Attachments\nNo attachments in this conversation."


def _format(item: Mapping[str, Any]) -> str:
    lines = [f"ID: {item['id'] or '(none)'}"]
    for label, key in (
        ("Name", "title"),
        ("URL", "url"),
        ("Type", "contentType"),
        ("Source", "source"),
        ("Description", "description"),
        ("Text", "text"),
    ):
        if item[key]:
            lines.append(f"{label}: {item[key]}")
    return "\n".join(lines)


async def _get(runtime: AgentRuntime, message: Memory, state: State) -> ProviderResult:
    found = await recent_attachments(runtime, message)
    if not found:
        return ProviderResult(text=_NONE, values={"attachments": ""}, data={"attachments": []})
    newest = max((at for at, _ in found if at is not None), default=None)
    items: list[dict[str, Any]] = []
    for at, item in found:
        if newest is not None and at is not None and newest - at > _HIDE_AFTER_MS and item["text"]:
            item["text"] = _HIDDEN
        items.append(item)
    text = "# Attachments\n" + "\n\n".join(_format(i) for i in items)
    return ProviderResult(text=text, values={"attachments": text}, data={"attachments": items})


provider = Provider(
    name="ATTACHMENTS",
    get=_get,
    description="Images, files and links shared in the recent conversation, with their descriptions.",
    dynamic=True,
)
