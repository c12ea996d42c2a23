"""The knowledge as tools (elizaOS's SEARCH_KNOWLEDGE and PROCESS_KNOWLEDGE actions):

- ``search_knowledge``: the model searches the character's knowledge itself, in words of its own
  choosing, beyond what the KNOWLEDGE provider put in the prompt for the message.
- ``process_knowledge``: an owner or admin of the world shares a document, a link or a text and
  says "learn this"; it is saved as a file in the character's knowledge folder (where the
  console's Knowledge page shows it and a sync keeps it) and is searchable once the call returns.
  Only files attached to the message are read, never a path on the daemon's machine, and a link
  is read as the links reader reads one (private addresses refused).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bot.sdk import (
    LINK_READER,
    Attachment,
    LinkNotRead,
    OwnTool,
    ToolAccess,
    ToolContext,
    ToolFailed,
    ToolSpec,
    UploadRefused,
)

from ._service import KNOWLEDGE, KnowledgeService

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["PROCESS_KNOWLEDGE", "SEARCH_KNOWLEDGE"]

_log = logging.getLogger(__name__)

#: Fragments a search gives (elizaOS's action shows three; a tool's caller can take a few more).
SEARCH_RESULTS = 5
_FRAGMENT_CHARS = 1_500
#: The most of a page's text that is learned.
_PAGE_CHARS = 500_000
_MIN_TEXT_CHARS = 20
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def _service(runtime: AgentRuntime) -> KnowledgeService:
    service = runtime.get_service(KNOWLEDGE)
    if service is None:
        raise ToolFailed("this character has no knowledge")
    return service


async def _search(runtime: AgentRuntime, arguments: Mapping[str, Any], context: ToolContext | None) -> str:
    query = " ".join(str(arguments["query"]).split())
    if not query:
        raise ToolFailed("give the words to search the knowledge for")
    service = _service(runtime)
    await service.settle()  # the first sync of a start, at most KNOWLEDGE_SYNC_WAIT_S
    matches = (await service.try_search(query))[:SEARCH_RESULTS]
    name = runtime.character.name
    if not matches:
        return f"Nothing in {name}'s knowledge matches {query!r}."
    found = [f"{len(matches)} passages of {name}'s knowledge for {query!r}, best first:"]
    for n, match in enumerate(matches, 1):
        text = match.text if len(match.text) <= _FRAGMENT_CHARS else match.text[: _FRAGMENT_CHARS - 1] + "…"
        found.append(f"[{n}] {match.title or 'untitled'}:\n{text}")
    return "\n\n".join(found)


async def _learn(runtime: AgentRuntime, arguments: Mapping[str, Any], context: ToolContext | None) -> str:
    given = [key for key in ("text", "url", "attachment") if str(arguments.get(key) or "").strip()]
    if len(given) != 1:
        raise ToolFailed(
            "give exactly one of text (the words to learn), url (a page to read and learn) or attachment "
            "(the name of a file attached to the message)"
        )
    service = _service(runtime)
    title = " ".join(str(arguments.get("title") or "").split())[:120]
    if given == ["attachment"]:
        filename, data = await _attached(str(arguments["attachment"]), context, service.max_file_bytes)
    else:
        if given == ["url"]:
            title, text = await _page(runtime, str(arguments["url"]), title)
        else:
            text = str(arguments["text"]).strip()
            if len(text) < _MIN_TEXT_CHARS:
                raise ToolFailed(f"the text is too short to learn (under {_MIN_TEXT_CHARS} characters)")
        title = title or " ".join(text.split()[:8])[:80] or "note"
        filename, data = _note(title, text)
    try:
        path = await service.add_file(filename, data)
    except UploadRefused as exc:
        raise ToolFailed(f"it was not learned: {exc}") from None
    asker = context.message.entity_id if context is not None else "an MCP client"
    _log.info("%s: knowledge: learned %s at the request of %s", runtime.character.name, path.name, asker)
    sync = await service.resync()
    problems = f" (the sync noted: {'; '.join(sync.problems[:2])})" if sync is not None and sync.problems else ""
    return f"Learned {path.name!r} into {runtime.character.name}'s knowledge; it can be searched now{problems}."


async def _page(runtime: AgentRuntime, url: str, title: str) -> tuple[str, str]:
    reader = runtime.get_service(LINK_READER)
    if reader is None:
        raise ToolFailed("links cannot be read here; give the text instead")
    try:
        page = await reader.read(url, max_chars=_PAGE_CHARS)
    except LinkNotRead as exc:
        raise ToolFailed(f"the link was not read: {exc}; nothing was learned") from None
    if len(page.text.strip()) < _MIN_TEXT_CHARS:
        raise ToolFailed("the page has almost no text; nothing was learned")
    return title or page.title or page.url, f"Source: {page.url}\n\n{page.text}"


async def _attached(name: str, context: ToolContext | None, max_bytes: int) -> tuple[str, bytes]:
    """The file attached to the message under ``name`` (or its only file): its own name and bytes,
    downloaded the platform's way, else the text troupe read in it."""
    carried = (context.message.content.attachments if context is not None else None) or ()
    attachments = [a for a in carried if a.content_type != "link"]
    if not attachments:
        raise ToolFailed("the message has no file attached; ask for the file to be attached to the message")
    wanted = name.strip().lower()
    chosen = next((a for a in attachments if wanted in (str(a.title or "").lower(), str(a.id or "").lower())), None)
    if chosen is None and len(attachments) == 1:
        chosen = attachments[0]
    if chosen is None:
        names = ", ".join(str(a.title or a.id) for a in attachments)
        raise ToolFailed(f"no file named {name!r} is attached; the files are: {names}")
    filename = _file_name(chosen)
    if context is not None and context.fetch is not None and (chosen.size or 0) <= max_bytes:
        try:
            return filename, await context.fetch(chosen.to_json())
        except LookupError:
            pass  # the platform cannot download it again: what was read of it will do
    if not (chosen.text or "").strip():
        raise ToolFailed(f"{filename} could not be read, so nothing was learned")
    return _note(filename.rsplit(".", 1)[0], chosen.text or "")


def _file_name(attachment: Attachment) -> str:
    title = str(attachment.title or attachment.id or "attachment").strip().replace("/", "_").replace("\\", "_")
    return title.lstrip(".") or "attachment"


def _note(title: str, text: str) -> tuple[str, bytes]:
    """A Markdown file for ``text``: named after its title and what it says, so the same text
    learned again replaces itself, and another with the same title does not."""
    slug = _NOT_SLUG.sub("-", title.lower()).strip("-")[:60] or "note"
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{slug}-{digest}.md", f"# {title}\n\n{text.strip()}\n".encode()


SEARCH_KNOWLEDGE = OwnTool(
    ToolSpec(
        name="search_knowledge",
        description="Search your own knowledge (your documents and facts) for passages about something.",
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look for, in a few words"}},
            "required": ["query"],
            "additionalProperties": False,
        },
        source="troupe",
    ),
    _search,
)

PROCESS_KNOWLEDGE = OwnTool(
    ToolSpec(
        name="process_knowledge",
        description=(
            "Learn a document into your knowledge when the person asks you to learn or remember it: the text "
            "itself, a web page's address, or the name of a file attached to their message (exactly one)."
        ),
        parameters={
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The words to learn"},
                "url": {"type": "string", "description": "A web page to read and learn"},
                "attachment": {"type": "string", "description": "The name of a file attached to the message"},
                "title": {"type": "string", "description": "A short title for it"},
            },
            "additionalProperties": False,
        },
        source="troupe",
        access=ToolAccess.ADMINS,
    ),
    _learn,
)
