"""``/knowledge``, "Knowledge": a character's knowledge sources, a file uploaded into its knowledge
folder, a resync, and a trial search showing what a question would find.

The knowledge plugin does the work, reached through the runtime as a
:class:`~bot.sdk.KnowledgeBase` (``runtime.get_service(KNOWLEDGE_BASE)``).
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import BodyPartReader, web

from bot.daemon.console._audit import Change
from bot.daemon.console._context import NavItem, console_of, record_change
from bot.daemon.console.pages._characters import CharacterChoice, agent_of, choices, problem, size, when
from bot.runtime.agent import AgentRuntime
from bot.runtime.knowledge_base import KNOWLEDGE_BASE, KnowledgeBase, KnowledgeSync, UploadRefused

__all__ = ["NAV", "routes"]

NAV = NavItem("Knowledge", "/knowledge")

#: Longest trial question the page takes.
_QUERY_LIMIT = 2000
#: How much of an upload is read at a time.
_CHUNK = 64 * 1024


def routes() -> list[web.RouteDef]:
    return [
        web.get("/knowledge", pick),
        web.get("/knowledge/{agent}", page),
        web.post("/knowledge/{agent}/upload", upload),
        web.post("/knowledge/{agent}/resync", resync),
    ]


@dataclass(frozen=True)
class Notice:
    """What the page says after an action: done (a status) or refused (an alert)."""

    text: str
    error: bool = False


def _base_of(request: web.Request, runtime: AgentRuntime) -> KnowledgeBase:
    knowledge = runtime.get_service(KNOWLEDGE_BASE)
    if knowledge is None:
        raise problem(
            request,
            "Knowledge",
            f"{runtime.character.name} runs without the knowledge plugin, so it has no knowledge to show.",
            409,
        )
    return knowledge


def _sync_line(sync: KnowledgeSync | None) -> str:
    if sync is None:
        return "not synced yet"
    parts = [f"{sync.new} new", f"{sync.changed} changed", f"{sync.removed} removed"]
    if sync.skipped:
        parts.append(f"{sync.skipped} skipped (listed below)")
    listed = f"{_count(sync.files, 'file')} and {_count(sync.facts, 'fact')}"
    if sync.pages:
        listed = f"{_count(sync.files, 'file')}, {_count(sync.facts, 'fact')} and {_count(sync.pages, 'web page')}"
    return (
        f"{when(sync.finished_at)}: {listed}, "
        f"{_count(sync.fragments, 'fragment')} ({', '.join(parts)}) in {sync.seconds:.1f} s"
    )


def _kind(source: str) -> str:
    """What a source key names: a ``file:``, a ``url:`` (a web page) or a fact."""
    if source.startswith("file:"):
        return "file"
    return "web page" if source.startswith("url:") else "fact"


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"


def _body(title: str, text: str) -> str:
    """A fragment's text without the title line every fragment of a file starts with."""
    return text.removeprefix(f"[{title}]\n")


async def _render(
    request: web.Request,
    chosen: CharacterChoice,
    knowledge: KnowledgeBase,
    *,
    notice: Notice | None = None,
    status: int = 200,
) -> web.Response:
    query = request.query.get("q", "").strip()
    query_error = ""
    found = None
    if len(query) > _QUERY_LIMIT:
        query_error = f"That question is {len(query)} characters long; ask with at most {_QUERY_LIMIT}."
    elif query:
        found = [
            {
                "title": m.title or "—",
                "text": _body(m.title, m.text),
                "score": f"{m.score:.4f}",
                "similarity": "—" if m.similarity is None else f"{m.similarity:.2f}",
                "keyword": "—" if m.keyword_rank is None else f"#{m.keyword_rank}",
                "vector": "—" if m.vector_rank is None else f"#{m.vector_rank}",
                "shared": m.shared,
            }
            for m in await knowledge.try_search(query)
        ]
    sources = [
        {
            "title": s.title or s.source,
            "kind": _kind(s.source),
            "path": s.source.partition(":")[2] if s.source.startswith(("file:", "url:")) else "",
            "shared": s.shared,
            "fragments": s.fragments,
            "size": size(s.size),
            "stored": when(s.updated_at),
        }
        for s in await knowledge.sources()
    ]
    folder = await knowledge.upload_folder()
    return console_of(request).render(
        request,
        "knowledge.html",
        {
            "characters": choices(request),
            "chosen": chosen,
            "sources": sources,
            "last_sync": _sync_line(knowledge.last_sync),
            "problems": knowledge.last_sync.problems if knowledge.last_sync else (),
            "syncing": knowledge.syncing,
            "folder": str(folder) if folder else "",
            "max_size": size(knowledge.max_file_bytes),
            "query": query,
            "query_error": query_error,
            "found": found,
            "notice": notice,
        },
        status=400 if query_error and status == 200 else status,
    )


async def pick(request: web.Request) -> web.StreamResponse:
    """The characters to choose from; with one, its page at once."""
    characters = choices(request)
    if len(characters) == 1:
        raise web.HTTPSeeOther(f"/knowledge/{characters[0].id}")
    return console_of(request).render(request, "knowledge_pick.html", {"characters": characters, "chosen": None})


async def page(request: web.Request) -> web.StreamResponse:
    """The sources, the upload and resync forms, and a trial search (``?q=``)."""
    chosen, runtime = agent_of(request, "Knowledge")
    return await _render(request, chosen, _base_of(request, runtime))


async def _read_upload(request: web.Request, limit: int) -> tuple[str, bytes | None]:
    """The uploaded file's name and bytes; None for the bytes when it is over ``limit`` (read to
    its end and dropped, so the browser gets the answer rather than a reset connection)."""
    if not request.content_type.startswith("multipart/"):
        raise UploadRefused("send the file as a multipart form (the page's upload form does)")
    reader = await request.multipart()
    filename, data, too_large = "", bytearray(), False
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader) or part.name != "file":
            await part.release()
            continue
        filename = part.filename or ""
        while chunk := await part.read_chunk(_CHUNK):
            if not too_large and len(data) + len(chunk) > limit:
                too_large, data = True, bytearray()
            if not too_large:
                data.extend(chunk)
    if not filename:
        raise UploadRefused("no file came with the form; choose a file to upload")
    return filename, None if too_large else bytes(data)


async def upload(request: web.Request) -> web.StreamResponse:
    """Save an uploaded file in the character's knowledge folder, then sync so it is searchable."""
    chosen, runtime = agent_of(request, "Knowledge")
    knowledge = _base_of(request, runtime)
    limit = knowledge.max_file_bytes
    try:
        filename, data = await _read_upload(request, limit)
        if data is None:
            message = (
                f"{filename} is larger than {size(limit)}, the most {chosen.name}'s knowledge reads "
                "(KNOWLEDGE_MAX_FILE_MB): split it into smaller files, or raise the setting. Nothing was saved."
            )
            return await _render(request, chosen, knowledge, notice=Notice(message, error=True), status=413)
        path = await knowledge.add_file(filename, data)
    except UploadRefused as exc:
        return await _render(request, chosen, knowledge, notice=Notice(f"Not uploaded: {exc}.", error=True), status=400)
    await record_change(request, Change.KNOWLEDGE_UPLOADED, detail=f"{chosen.name}: {path.name}")
    sync = await knowledge.resync()
    text = f"{path.name} saved in {path.parent} and synced: {_sync_line(sync)}."
    return await _render(request, chosen, knowledge, notice=Notice(text))


async def resync(request: web.Request) -> web.StreamResponse:
    """Read the knowledge sources again (only what changed) and say what the sync did."""
    chosen, runtime = agent_of(request, "Knowledge")
    knowledge = _base_of(request, runtime)
    await record_change(request, Change.KNOWLEDGE_RESYNCED, detail=chosen.name)
    sync = await knowledge.resync()
    return await _render(request, chosen, knowledge, notice=Notice(f"Synced: {_sync_line(sync)}."))
