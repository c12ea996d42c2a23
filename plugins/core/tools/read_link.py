"""read_link: the model reads a web page — a link someone gave, or one a search tool found — as
the links reader reads links in messages (bounded, private addresses refused)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bot.sdk import LINK_READER, MAX_RESULT_CHARS, LinkNotRead, OwnTool, ToolContext, ToolFailed, ToolSpec

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["tool"]

NAME = "read_link"


async def _run(runtime: AgentRuntime, arguments: Mapping[str, Any], context: ToolContext | None) -> str:
    reader = runtime.get_service(LINK_READER)
    if reader is None:
        raise ToolFailed("links cannot be read here: the character has no links reader")
    url = str(arguments["url"])
    try:
        page = await reader.read(url, max_chars=MAX_RESULT_CHARS - 200)
    except LinkNotRead as exc:
        raise ToolFailed(f"the link was not read: {exc}") from None
    heading = f"# {page.title}\n" if page.title else ""
    return f"{heading}{page.url}\n\n{page.text}"


tool = OwnTool(
    ToolSpec(
        name=NAME,
        description="Read a web page and get its text: a link someone gave, or one another tool found.",
        parameters={
            "type": "object",
            "properties": {"url": {"type": "string", "description": "The page's address, starting with https://"}},
            "required": ["url"],
            "additionalProperties": False,
        },
        source="troupe",
    ),
    _run,
)
