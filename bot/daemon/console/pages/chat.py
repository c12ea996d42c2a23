"""``/chat``, "Chat": talk to any character in the browser, on the ``web`` platform.

The page shows a person's conversation with one character (its stored messages), sends what they
type and upload (a multipart POST, at most :data:`MAX_UPLOAD_BYTES`), and receives the reply as it
is written over server-sent events (``/chat/<agent>/events``: ``partial`` with the text so far,
``message`` with a whole message as an HTML fragment, ``typing``). Buttons under a reply are
pressed with a POST the character hears as Telegram's and Discord's presses; "Start over" forgets
the conversation's messages (CHANNEL_CLEARED). Who the person is: the
name they give once, kept in a cookie (one conversation per name and character).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from urllib.parse import quote, unquote

from aiohttp import BodyPartReader, web

from bot.daemon.console._context import NavItem, console_of
from bot.daemon.console._events import KEEP_ALIVE, KEEP_ALIVE_S, open_stream
from bot.daemon.console._events import event as sse_event
from bot.daemon.hosted import HostedAgent
from bot.kernel.errors import SendError
from bot.kernel.lifecycle import AgentState
from platforms.web import (
    ChatEvent,
    Closing,
    Conversation,
    Line,
    Partial,
    Said,
    TooManyListeners,
    Typing,
    Upload,
    WebAdapter,
    person_name,
    web_adapter,
)

__all__ = ["MAX_UPLOAD_BYTES", "NAV", "PERSON_COOKIE", "routes"]

_log = logging.getLogger("bot.daemon.console")

NAV = NavItem("Chat", "/chat")
#: What one message may carry in files, all together.
MAX_UPLOAD_BYTES = 20 * 1024 * 1024
#: The text of one message, at most.
MAX_TEXT_CHARS = 8000
#: The cookie that keeps the name a person gave.
PERSON_COOKIE = "troupe_chat_person"


def routes() -> list[web.RouteDef]:
    return [
        web.get("/chat", index),
        web.post("/chat/name", give_name),
        web.get("/chat/{agent}", page),
        web.get("/chat/{agent}/events", events),
        web.post("/chat/{agent}/send", send),
        web.post("/chat/{agent}/press", press),
        web.post("/chat/{agent}/clear", clear),
        web.get("/chat/{agent}/files/{file}", file),
    ]


@dataclass(frozen=True)
class _Talker:
    """A character one can talk to on the web."""

    agent_id: str
    name: str
    adapter: WebAdapter


def _talkers(request: web.Request) -> list[_Talker]:
    found: list[_Talker] = []
    for agent_id, agent in console_of(request).view.agents.items():
        adapter = _adapter(agent)
        if adapter is not None:
            found.append(_Talker(agent_id, agent.name, adapter))
    return sorted(found, key=lambda t: t.name.casefold())


def _adapter(agent: HostedAgent) -> WebAdapter | None:
    runtime = agent.runtime
    if runtime is None or agent.state is not AgentState.RUNNING:
        return None
    return web_adapter(runtime)


def _talker(request: web.Request) -> _Talker:
    agent_id = request.match_info["agent"]
    agent = console_of(request).view.agents.get(agent_id)
    adapter = _adapter(agent) if agent is not None else None
    if agent is None or adapter is None:
        raise web.HTTPNotFound(text="No such character runs on the web now: pick one on /chat.")
    return _Talker(agent_id, agent.name, adapter)


def _person(request: web.Request) -> str | None:
    raw = request.cookies.get(PERSON_COOKIE)
    return unquote(raw) if raw else None


async def _conversation(request: web.Request, talker: _Talker) -> Conversation:
    person = _person(request)
    if person is None:
        raise web.HTTPForbidden(text="Give your name on the Chat page first.")
    try:
        return await talker.adapter.open(person)
    except ValueError as exc:
        raise web.HTTPBadRequest(text=f"{exc}.") from None


# -- pages ------------------------------------------------------------------------------------


async def index(request: web.Request) -> web.StreamResponse:
    talkers = _talkers(request)
    person = _person(request)
    if person is not None and len(talkers) == 1:
        raise web.HTTPSeeOther(f"/chat/{talkers[0].agent_id}")
    return console_of(request).render(request, "chat_index.html", {"talkers": talkers, "person": person})


async def give_name(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    raw, back = form.get("name"), form.get("next")
    back = back if isinstance(back, str) and back.startswith("/chat") and "//" not in back else "/chat"
    try:
        name = person_name(raw if isinstance(raw, str) else "")
    except ValueError as exc:
        values = {"talkers": _talkers(request), "person": None, "error": f"{exc}."}
        return console_of(request).render(request, "chat_index.html", values, status=400)
    response = web.Response(status=303, headers={"Location": back})
    response.set_cookie(
        PERSON_COOKIE,
        quote(name, safe=""),
        httponly=True,
        samesite="Strict",
        path="/chat",
        secure=request.secure or request.headers.get("X-Forwarded-Proto", "").lower() == "https",
        max_age=365 * 24 * 3600,
    )
    return response


async def page(request: web.Request) -> web.StreamResponse:
    talker = _talker(request)
    person = _person(request)
    console = console_of(request)
    if person is None:
        values: dict[str, object] = {"talkers": _talkers(request), "person": None, "next": request.path}
        return console.render(request, "chat_index.html", values)
    conversation = await _conversation(request, talker)
    lines = await talker.adapter.history(conversation)
    values = {
        "talker": talker,
        "talkers": _talkers(request),
        "person": conversation.person,
        "lines": lines,
        "max_upload_mib": MAX_UPLOAD_BYTES // (1024 * 1024),
    }
    return console.render(request, "chat.html", values)


async def file(request: web.Request) -> web.StreamResponse:
    talker = _talker(request)
    found = talker.adapter.file(request.match_info["file"])
    if found is None:
        raise web.HTTPNotFound(text="That file is gone: files are kept until the daemon restarts.")
    ref = found.ref
    inline = ref.is_picture or ref.is_sound
    disposition = "inline" if inline else "attachment"
    return web.Response(
        body=found.data,
        content_type=ref.content_type if inline else "application/octet-stream",
        headers={
            "Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(ref.name, safe='')}",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "sandbox",  # opened on its own, a file runs nothing
            "Cache-Control": "private, max-age=3600",
        },
    )


# -- talking ----------------------------------------------------------------------------------


async def send(request: web.Request) -> web.StreamResponse:
    """What the person typed and uploaded: the line it makes (an HTML fragment); the reply follows
    on the event stream."""
    talker = _talker(request)
    conversation = await _conversation(request, talker)
    if not request.content_type.startswith("multipart/"):
        return _refused(400, "Send the message as a form (multipart/form-data).")
    text, uploads, problem = await _read_message(request)
    if problem is not None:
        return problem
    if not text.strip() and not uploads:
        return _refused(400, "Write something or attach a file.")
    try:
        line = await talker.adapter.hear(conversation, text, uploads)
    except SendError as exc:
        return _refused(503, f"{exc}.")
    return _fragment(request, talker, line)


async def _read_message(request: web.Request) -> tuple[str, list[Upload], web.Response | None]:
    """The text and files of a multipart message, read up to :data:`MAX_UPLOAD_BYTES`."""
    reader = await request.multipart()
    text, uploads, total = "", [], 0
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader):
            continue
        if part.name == "text":
            text = (await part.read(decode=True)).decode(part.get_charset("utf-8"), errors="replace")
            if len(text) > MAX_TEXT_CHARS:
                return "", [], _refused(413, f"A message is at most {MAX_TEXT_CHARS} characters; send it in parts.")
        elif part.name == "file" and part.filename:
            data = bytearray()
            while chunk := await part.read_chunk():
                data += chunk
                total += len(chunk)
                if total > MAX_UPLOAD_BYTES:
                    mib = MAX_UPLOAD_BYTES // (1024 * 1024)
                    return "", [], _refused(413, f"The files are larger than {mib} MiB together; send smaller ones.")
            if data:
                kind = part.headers.get("Content-Type", "application/octet-stream")
                uploads.append(Upload(part.filename, kind, bytes(data)))
        else:
            await part.release()
    return text, uploads, None


async def press(request: web.Request) -> web.StreamResponse:
    talker = _talker(request)
    conversation = await _conversation(request, talker)
    form = await request.post()
    under, value = form.get("message"), form.get("value")
    if not isinstance(under, str) or not isinstance(value, str):
        return _refused(400, "A press names the message and the button's value.")
    try:
        line = await talker.adapter.press(conversation, under, value)
    except SendError as exc:
        return _refused(503, f"{exc}.")
    if line is None:
        return _refused(404, "That button is not under a message of this conversation.")
    return _fragment(request, talker, line)


async def clear(request: web.Request) -> web.StreamResponse:
    """Start over: the conversation's messages forgotten (CHANNEL_CLEARED), back to the page."""
    talker = _talker(request)
    conversation = await _conversation(request, talker)
    await talker.adapter.clear(conversation)
    raise web.HTTPSeeOther(f"/chat/{talker.agent_id}")


def _refused(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message, content_type="text/plain")


def _fragment(request: web.Request, talker: _Talker, line: Line) -> web.Response:
    return web.Response(text=_line_html(request, talker, line), content_type="text/html", charset="utf-8")


def _line_html(request: web.Request, talker: _Talker, line: Line) -> str:
    template = console_of(request).templates.get_template("chat_line.html")
    return template.render({"line": line, "talker": talker})


# -- the event stream -------------------------------------------------------------------------


async def events(request: web.Request) -> web.StreamResponse:
    """The conversation as it happens, as server-sent events (see the module docstring)."""
    talker = _talker(request)
    conversation = await _conversation(request, talker)
    try:
        with talker.adapter.listen(conversation) as queue:
            response = await open_stream(request)
            await response.write(b": listening\n\n")
            # Until the page goes away (the write fails) or the character stops running here.
            while not isinstance(event := await _next(queue), Closing):
                await response.write(_encode(request, talker, event))
    except TooManyListeners as exc:
        return _refused(429, f"{exc}.")
    return response


async def _next(queue: asyncio.Queue[ChatEvent]) -> ChatEvent | None:
    """The next event; None after a quiet while (a keep-alive is due)."""
    try:
        return await asyncio.wait_for(queue.get(), KEEP_ALIVE_S)
    except TimeoutError:
        return None


def _encode(request: web.Request, talker: _Talker, event: ChatEvent | None) -> bytes:
    if event is None:
        return KEEP_ALIVE
    if isinstance(event, Typing):
        name, data = "typing", ""
    elif isinstance(event, Partial):
        name, data = "partial", json.dumps({"text": event.text})
    else:
        assert isinstance(event, Said)
        html = _line_html(request, talker, event.line)
        line = event.line
        name, data = "message", json.dumps({"id": line.id, "character": line.from_character, "html": html})
    return sse_event(data, name=name)
