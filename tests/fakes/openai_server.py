"""A fake OpenAI-compatible API: a real HTTP server in the test's event loop.

The real ``openai`` client talks to it, so tests exercise the production code path::

    async with FakeOpenAIServer() as server:
        client = openai.AsyncOpenAI(base_url=server.url, api_key="sk-test-1234")
        server.script_chat(Fail(429, times=1, retry_after=0.01), "hello")
        reply = await client.chat.completions.create(model="gpt-4o", messages=[...])
        assert reply.choices[0].message.content == "hello"
        assert len(server.requests_for("chat")) == 2
        assert server.requests[-1].auth_suffix == "1234"

Endpoints (under ``/v1``), each with its name for scripting and its default reply:

- ``POST /chat/completions`` (``chat``): ``"echo: <last user text>"``, or with
  ``response_format`` json_object ``{"echo": "<last user text>"}``. ``stream: true`` sends SSE
  chunks (one word each) ending with ``data: [DONE]`` (``hold_stream`` stops one halfway); ``stream_options.include_usage`` adds a
  usage chunk. Usage counts words, and so does ``max_tokens``: a longer reply is cut after that
  many words, with ``finish_reason`` ``length``, as a server cuts a model that runs on.
- ``POST /embeddings`` (``embeddings``): per input a unit vector derived from the text's SHA-256,
  of length ``dimensions`` from the request or else ``embedding_dimensions``; floats, or base64
  when ``encoding_format`` asks for it (the openai client's default). ``base64="refused"``
  answers a base64 request with HTTP 400, as some gateways do; ``"ignored"`` sends floats anyway.
- ``POST /audio/transcriptions`` (``transcriptions``, multipart):
  ``"transcript of <filename> (<n> bytes)"``; plain text when ``response_format`` is text.
- ``POST /audio/speech`` (``speech``): ``b"FAKE-AUDIO:<format>:<input>"``.
- ``POST /images/generations`` (``images``): per request one picture, as ``b64_json``, or as a
  ``url`` the fake serves (``GET /v1/files/images/<n>``, recorded as ``image_files``) when the
  request asks ``response_format: url`` or the reply is :class:`Served`; ``revised_prompt`` is
  ``"drawn: <prompt>"``. The default picture is :func:`make_png` (1×1).
- ``GET /models`` (``models``): the ``models`` given to the constructor.
- anything else: 404, recorded as endpoint ``unknown``.

Scripting, per endpoint: ``script_chat(*replies)``, ``script_embeddings(*replies)``,
``script_transcription(*replies)``, ``script_speech(*replies)``, ``script_images(*replies)`` (or
``script(endpoint, *replies)``)
replace that endpoint's queue. Each request takes the head of the queue; the last reply repeats,
and an empty queue means the default reply. A reply is:

- chat: a ``str``, or ``callable(request_json) -> str``; or a :class:`ToolCalls` (or a callable
  returning one): the assistant's message then carries ``tool_calls`` (``finish_reason``
  ``tool_calls``), as a model that calls tools answers a request with ``tools``; streamed in
  OpenAI's fragments when asked with ``stream: true``;
- embeddings: a vector (``list[float]``, used for every input) or ``callable(text) -> list[float]``;
- transcriptions: a ``str`` or ``callable(fields) -> str``;
- images: the picture's ``bytes``, a :class:`Served` (the bytes, always answered as a URL), or
  ``callable(request_json)`` returning either;
- speech: ``bytes`` or ``callable(request_json) -> bytes``; or a list of pieces sent one by one
  as a chunked body, each ``bytes`` or an ``asyncio.Event`` to wait for before going on (a
  stream the client closes early is then recorded in ``server.aborted``), or ``CUT`` to drop
  the connection there, mid-body;
- chat and embeddings: a :class:`Body` — sent as it is, with status 200, to see what the client
  makes of a body that is not a chat completion or a list of vectors;
- chat and embeddings: an :class:`Endless` — a body that never ends (chunk after chunk until
  the client goes away), or declares a size it never sends; ``server.endless_sent`` counts the
  bytes written, to show how much the client took before it stopped reading;
- any endpoint: a :class:`Fail` — an OpenAI-style error with ``status``, sent ``times`` times
  (``None``: for ever) before the queue moves on; ``retry_after`` sets ``Retry-After``
  (seconds; the openai client honours it, so ``0.01`` keeps retry tests fast).

A callable may also return a :class:`Fail`.

``server.latency`` (seconds, default 0) delays every response: set it above the client's timeout
to test timeouts. ``server.hold(match)`` keeps the first request that ``match`` accepts waiting
until the test releases it (:class:`Hold`): a reply under way for exactly as long as a test
needs, whatever the machine's speed. ``close()`` cuts any delay or hold short.

Every request is recorded in ``server.requests`` (a :class:`RecordedRequest`: endpoint, method,
path, parsed JSON body or multipart fields, headers without ``Authorization``, whether a bearer
key was sent and its last four characters, the client's port), before any failure or delay, so retries show up.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import math
import random
import re
import struct
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from ._local import LocalServer

__all__ = [
    "CUT",
    "Body",
    "Endless",
    "Fail",
    "FakeOpenAIServer",
    "RecordedRequest",
    "Served",
    "UploadedFile",
    "make_png",
]

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_denied", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}

_AUDIO_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}

DEFAULT_MODELS = ("gpt-4o-mini", "gpt-4o", "text-embedding-3-small", "whisper-1", "gpt-4o-mini-tts")


class Cut:
    """A streamed piece that drops the connection mid-body, as a server that dies or a proxy that
    gives up does: the client reads a body that ends before its last chunk."""


CUT = Cut()


@dataclass(frozen=True)
class Fail:
    """An error reply: ``status`` with an OpenAI-style body, ``times`` times (``None``: always)."""

    status: int
    times: int | None = None
    retry_after: float | str | None = None
    """Sent as ``Retry-After`` when given."""
    message: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.times is not None and self.times < 1:
            raise ValueError("Fail.times is a count of 1 or more, or None for always")


@dataclass(frozen=True)
class ToolCalls:
    """A chat reply that calls tools: each call a ``(name, arguments)`` pair, the arguments a dict
    (sent as JSON text, as OpenAI does) or a ``str`` sent as it is (to send arguments that are
    not JSON). Ids are ``call_<n>`` in order unless ``ids`` names them.

    Asked with ``stream: true``, it is streamed as OpenAI streams calls: ``text`` word by word,
    then per call a first delta with its ``index``, ``id``, ``type`` and ``function.name`` and
    empty arguments, then its arguments in fragments of ``fragment`` characters, each under the
    call's index; the last chunk's ``finish_reason`` is ``tool_calls``. With ``cut``, the
    connection drops halfway through the calls' deltas."""

    calls: tuple[tuple[str, dict[str, Any] | str], ...]
    text: str = ""
    ids: tuple[str, ...] = ()
    fragment: int = 5
    cut: bool = False

    def _calls(self) -> list[tuple[str, str, str]]:
        ids = self.ids or tuple(f"call_{n}" for n in range(len(self.calls)))
        return [
            (call_id, name, args if isinstance(args, str) else json.dumps(args))
            for call_id, (name, args) in zip(ids, self.calls, strict=True)
        ]

    def message(self) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": self.text or None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
                for call_id, name, args in self._calls()
            ],
        }

    def cut_at(self) -> int | None:
        """With ``cut``, the index of the delta the connection drops before: halfway through the calls'."""
        if not self.cut:
            return None
        text = len(_pieces(self.text))
        return text + (len(self.deltas()) - text) // 2

    def deltas(self) -> list[dict[str, Any]]:
        """The deltas of the reply streamed, after the first (the role's)."""
        deltas: list[dict[str, Any]] = [{"content": piece} for piece in _pieces(self.text)]
        for index, (call_id, name, args) in enumerate(self._calls()):
            first = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
            deltas.append({"tool_calls": [first]})
            for start in range(0, len(args), self.fragment):
                piece = args[start : start + self.fragment]
                deltas.append({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        return deltas


@dataclass(frozen=True)
class Body:
    """A chat or embeddings reply sent as it is (status 200): ``text`` in ``content_type``."""

    text: str
    content_type: str = "application/json"


@dataclass(frozen=True)
class Endless:
    """A chat or embeddings reply (status 200) whose body goes on until the client stops reading,
    or until ``bound`` bytes (the test's own safety net); with ``declared``, it announces that
    many bytes as its Content-Length instead of chunking, and sends as much as it is read."""

    declared: int | None = None
    bound: int = 2 * 1024**3


@dataclass(frozen=True)
class Served:
    """An images reply answered as a URL (the fake serves ``data`` there), whatever was asked."""

    data: bytes


class Hold:
    """The first request a predicate accepts, kept waiting: ``await reached.wait()`` until it has
    arrived, then ``release()`` to answer it (``FakeOpenAIServer.hold``)."""

    def __init__(self, match: Callable[[RecordedRequest], bool]) -> None:
        self.match = match
        self.reached = asyncio.Event()
        self.released = asyncio.Event()
        self.request: RecordedRequest | None = None

    def release(self) -> None:
        self.released.set()


def make_png(width: int = 1, height: int = 1, *, padding: int = 0) -> bytes:
    """A valid PNG of ``width`` × ``height`` grey pixels; ``padding`` bytes of an extra chunk make
    it as large as a test needs (an "11 MB picture") without drawing that many pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    extra = chunk(b"tEXt", b"pad\x00" + b"x" * padding) if padding else b""
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + extra
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@dataclass(frozen=True)
class UploadedFile:
    """A file part of a multipart request."""

    filename: str | None
    content_type: str | None
    data: bytes


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it; the key itself is never kept."""

    endpoint: str
    """``chat``, ``embeddings``, ``transcriptions``, ``speech``, ``images``, ``image_files``, ``models`` or ``unknown``."""
    method: str
    path: str
    json: Any = None
    """The parsed JSON body, if it had one."""
    fields: dict[str, Any] | None = None
    """Multipart fields (files as :class:`UploadedFile`), if multipart."""
    headers: dict[str, str] = field(default_factory=dict)
    """Request headers, ``Authorization`` left out."""
    auth: bool = False
    """Whether a bearer key was sent."""
    auth_suffix: str | None = None
    """The key's last four characters."""
    client_port: int | None = None
    """The port of the client's end of the connection: requests with the same one came over one connection."""


class _Queue:
    """Scripted replies for one endpoint (see the module docstring)."""

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._used = 0  # failures already sent by the Fail at the head

    def set(self, replies: Iterable[Any]) -> None:
        self._items, self._used = list(replies), 0

    def take(self) -> Any:
        """The reply for this request; ``None`` for the default."""
        if not self._items:
            return None
        head = self._items[0]
        if isinstance(head, Fail):
            if head.times is not None:
                self._used += 1
                if self._used >= head.times:
                    self._items.pop(0)
                    self._used = 0
            return head
        if len(self._items) > 1:
            self._items.pop(0)
        return head


class FakeOpenAIServer(LocalServer):
    """An OpenAI-compatible server on ``127.0.0.1`` (a free port), in the running loop.

    Use as an async context manager, or ``await start()`` and ``await close()``; ``close()``
    may be called any number of times.
    """

    __test__ = False  # not a test class, whatever pytest thinks of the name

    def __init__(
        self,
        *,
        embedding_dimensions: int = 1536,
        models: Iterable[str] = DEFAULT_MODELS,
        latency: float = 0.0,
        base64: Literal["answered", "refused", "ignored"] = "answered",
    ) -> None:
        self.embedding_dimensions = embedding_dimensions
        self.base64 = base64
        self.models = list(models)
        self.latency = latency
        self.requests: list[RecordedRequest] = []
        self.aborted: list[str] = []
        """Endpoints whose streamed reply the client stopped reading before the end."""
        self.endless_sent = 0
        """Bytes of :class:`Endless` bodies written to clients."""
        super().__init__()
        self._queues = {
            name: _Queue() for name in ("chat", "embeddings", "transcriptions", "speech", "images", "models")
        }
        self.image_files: list[bytes] = []
        """The pictures answered as URLs, served at ``/v1/files/images/<index>``."""
        self._holds: list[Hold] = []
        self._stream_holds: list[Hold] = []

    # -- lifecycle ------------------------------------------------------------------------

    def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/v1/audio/transcriptions", self._transcriptions)
        app.router.add_post("/v1/audio/speech", self._speech)
        app.router.add_post("/v1/images/generations", self._images)
        app.router.add_get("/v1/files/images/{index}", self._image_file)
        app.router.add_get("/v1/models", self._models)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        return app

    @property
    def url(self) -> str:
        """The base URL to give the client (ends in ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def make_url(self, path: str) -> str:
        """An absolute URL for ``path`` under ``/v1``."""
        return f"{self.url}/{path.lstrip('/')}"

    # -- scripting ------------------------------------------------------------------------

    def script(self, endpoint: str, *replies: Any) -> None:
        """Replace ``endpoint``'s queue of replies (see the module docstring)."""
        self._queues[endpoint].set(replies)

    def script_chat(self, *replies: str | ToolCalls | Callable[[dict[str, Any]], Any] | Body | Endless | Fail) -> None:
        self.script("chat", *replies)

    def script_embeddings(self, *replies: list[float] | Callable[[str], Any] | Body | Endless | Fail) -> None:
        self.script("embeddings", *replies)

    def script_transcription(self, *replies: str | Callable[[dict[str, Any]], Any] | Fail) -> None:
        self.script("transcriptions", *replies)

    def script_speech(
        self, *replies: bytes | Sequence[bytes | asyncio.Event | Cut] | Callable[[dict[str, Any]], Any] | Fail
    ) -> None:
        self.script("speech", *replies)

    def script_images(self, *replies: bytes | Served | Callable[[dict[str, Any]], Any] | Body | Fail) -> None:
        self.script("images", *replies)

    def hold(self, match: Callable[[RecordedRequest], bool]) -> Hold:
        """Keep the next request ``match`` accepts (any endpoint) waiting until released."""
        held = Hold(match)
        self._holds.append(held)
        return held

    def hold_stream(self, match: Callable[[dict[str, Any]], bool]) -> Hold:
        """Keep the next streamed chat reply whose request body ``match`` accepts waiting halfway:
        its first half of pieces sent, the rest once released (``reached`` is set at the halfway
        point). A reply of one piece is not held."""
        held = Hold(lambda recorded: match(recorded.json if isinstance(recorded.json, dict) else {}))
        self._stream_holds.append(held)
        return held

    def requests_for(self, endpoint: str) -> list[RecordedRequest]:
        """The recorded requests to one endpoint (``chat``, ``embeddings`` …)."""
        return [r for r in self.requests if r.endpoint == endpoint]

    def clear(self) -> None:
        """Forget recorded requests and every script."""
        self.requests.clear()
        for queue in self._queues.values():
            queue.set(())

    # -- request handling -----------------------------------------------------------------

    async def _record(self, request: web.Request, endpoint: str) -> RecordedRequest:
        headers = {k: v for k, v in request.headers.items() if k.lower() != "authorization"}
        authorization = request.headers.get("Authorization", "")
        key = authorization[len("Bearer ") :] if authorization.startswith("Bearer ") else ""
        body: Any = None
        fields: dict[str, Any] | None = None
        if request.content_type == "multipart/form-data":
            fields = {}
            form = await request.post()
            for name, value in form.items():
                if isinstance(value, web.FileField):
                    fields[name] = UploadedFile(value.filename, value.content_type, value.file.read())
                else:
                    fields[name] = value
        elif request.can_read_body:
            raw = await request.read()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw
        recorded = RecordedRequest(
            endpoint=endpoint,
            method=request.method,
            path=request.path,
            json=body,
            fields=fields,
            headers=headers,
            auth=bool(key),
            auth_suffix=key[-4:] if key else None,
            client_port=_client_port(request),
        )
        self.requests.append(recorded)
        self._changed()  # what wait_for() is woken by
        return recorded

    async def _delay(self, recorded: RecordedRequest) -> None:
        held = next((h for h in self._holds if h.match(recorded)), None)
        if held is not None:
            self._holds.remove(held)
            held.request = recorded
            held.reached.set()
            waits = {asyncio.ensure_future(held.released.wait()), asyncio.ensure_future(self._closed.wait())}
            _, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for waiting in pending:
                waiting.cancel()
        if self.latency > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closed.wait(), self.latency)

    async def _begin(self, request: web.Request, endpoint: str) -> tuple[RecordedRequest, Any]:
        """Record the request, wait out the latency, and take the scripted reply."""
        recorded = await self._record(request, endpoint)
        await self._delay(recorded)
        reply = self._queues[endpoint].take()
        return recorded, reply

    async def _begin_json(self, request: web.Request, endpoint: str) -> tuple[dict[str, Any], Any]:
        """:meth:`_begin` for a JSON request: its body, and the reply (a callable called with it)."""
        recorded, reply = await self._begin(request, endpoint)
        body = recorded.json if isinstance(recorded.json, dict) else {}
        return body, reply(body) if callable(reply) else reply

    async def _endless(self, request: web.Request, reply: Endless) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        if reply.declared is not None:
            response.content_length = reply.declared
        else:
            response.enable_chunked_encoding()
        await response.prepare(request)
        filler = b'{"choices": [' + b" " * (64 * 1024 - 13)
        end = min(reply.bound, reply.declared or reply.bound)
        with contextlib.suppress(ConnectionError):
            while self.endless_sent < end:
                piece = filler[: end - self.endless_sent]
                await response.write(piece)
                self.endless_sent += len(piece)
                filler = b" " * len(filler)
        return response

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body, reply = await self._begin_json(request, "chat")
        if isinstance(reply, Endless):
            return await self._endless(request, reply)
        if (canned := _canned(reply)) is not None:
            return canned
        model = body.get("model", "fake-model")
        if isinstance(reply, ToolCalls) and body.get("stream"):
            completion_id, usage = f"chatcmpl-fake-{len(self.requests)}", _usage(body, reply.text)
            return await self._stream(
                request, body, reply.deltas(), model, completion_id, usage, "tool_calls", reply.cut_at()
            )
        if isinstance(reply, ToolCalls):
            return web.json_response(
                {
                    "id": f"chatcmpl-fake-{len(self.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "message": reply.message(), "finish_reason": "tool_calls"}],
                    "usage": _usage(body, reply.text),
                }
            )
        text, finish = _bounded(reply if isinstance(reply, str) else _echo(body), body.get("max_tokens"))
        completion_id = f"chatcmpl-fake-{len(self.requests)}"
        usage = _usage(body, text)
        if body.get("stream"):
            deltas = [{"content": piece} for piece in _pieces(text)]
            return await self._stream(request, body, deltas, model, completion_id, usage, finish)
        return web.json_response(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": finish,
                        "logprobs": None,
                    }
                ],
                "usage": usage,
            }
        )

    async def _stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        deltas: list[dict[str, Any]],
        model: str,
        completion_id: str,
        usage: dict[str, int],
        finish_reason: str = "stop",
        cut_at: int | None = None,
    ) -> web.StreamResponse:
        """``deltas`` as server-sent chunks; with ``cut_at``, the connection drops before that one."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None, **extra: Any) -> bytes:
            choices = [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
            payload = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": choices,
                **extra,
            }
            return f"data: {json.dumps(payload)}\n\n".encode()

        await response.write(chunk({"role": "assistant", "content": ""}, None))
        held = next((h for h in self._stream_holds if h.match(RecordedRequest("chat", "POST", "", body))), None)
        for index, delta in enumerate(deltas):
            if held is not None and index == len(deltas) // 2 and index > 0:
                self._stream_holds.remove(held)
                held.reached.set()
                await held.released.wait()
            if index == cut_at:
                assert request.transport is not None
                request.transport.close()
                return response
            await response.write(chunk(delta, None))
        await response.write(chunk({}, finish_reason))
        if (body.get("stream_options") or {}).get("include_usage"):
            payload = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": usage,
            }
            await response.write(f"data: {json.dumps(payload)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        recorded, reply = await self._begin(request, "embeddings")
        if isinstance(reply, Endless):
            return await self._endless(request, reply)
        if (canned := _canned(reply)) is not None:
            return canned
        body = recorded.json if isinstance(recorded.json, dict) else {}
        as_base64 = body.get("encoding_format") == "base64" and self.base64 != "ignored"
        if as_base64 and self.base64 == "refused":
            return _error(Fail(400, message="base64 encoding is not currently supported"))
        raw_input = body.get("input", "")
        inputs = [raw_input] if isinstance(raw_input, str) else list(raw_input)
        dimensions = int(body.get("dimensions") or self.embedding_dimensions)
        data = []
        for index, item in enumerate(inputs):
            text = item if isinstance(item, str) else json.dumps(item)
            if callable(reply):
                vector = reply(text)
                if isinstance(vector, Fail):
                    return _error(vector)
            elif reply is not None:
                vector = reply
            else:
                vector = _hash_vector(text, dimensions)
            embedding: Any = list(vector)
            if as_base64:
                embedding = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(len(str(i).split()) for i in inputs)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "fake-embedding"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _transcriptions(self, request: web.Request) -> web.Response:
        recorded, reply = await self._begin(request, "transcriptions")
        fields = recorded.fields or {}
        if callable(reply):
            reply = reply(fields)
        if isinstance(reply, Fail):
            return _error(reply)
        if isinstance(reply, str):
            text = reply
        else:
            upload = fields.get("file")
            name = upload.filename if isinstance(upload, UploadedFile) else None
            size = len(upload.data) if isinstance(upload, UploadedFile) else 0
            text = f"transcript of {name} ({size} bytes)"
        if fields.get("response_format") in ("text", "srt", "vtt"):
            return web.Response(text=text, content_type="text/plain")
        return web.json_response({"text": text})

    async def _speech(self, request: web.Request) -> web.StreamResponse:
        body, reply = await self._begin_json(request, "speech")
        if isinstance(reply, Fail):
            return _error(reply)
        audio_format = body.get("response_format", "mp3")
        if isinstance(reply, (list, tuple)):
            content_type = _AUDIO_TYPES.get(audio_format, "application/octet-stream")
            return await self._pieces(request, "speech", reply, content_type)
        audio = reply if isinstance(reply, bytes) else f"FAKE-AUDIO:{audio_format}:{body.get('input', '')}".encode()
        return web.Response(body=audio, content_type=_AUDIO_TYPES.get(audio_format, "application/octet-stream"))

    async def _pieces(
        self, request: web.Request, endpoint: str, pieces: Iterable[Any], content_type: str
    ) -> web.StreamResponse:
        """Send ``pieces`` as a chunked body, waiting on any ``asyncio.Event`` among them."""
        response = web.StreamResponse(headers={"Content-Type": content_type})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            for piece in pieces:
                if isinstance(piece, asyncio.Event):
                    await piece.wait()
                elif isinstance(piece, Cut):
                    assert request.transport is not None
                    request.transport.close()
                    return response
                else:
                    await response.write(piece)
        except (asyncio.CancelledError, ConnectionResetError):
            # The handler is cancelled when the client goes away (handler_cancellation).
            self.aborted.append(endpoint)
            raise
        await response.write_eof()
        return response

    async def _images(self, request: web.Request) -> web.Response:
        body, reply = await self._begin_json(request, "images")
        if (canned := _canned(reply)) is not None:
            return canned
        picture = reply.data if isinstance(reply, Served) else reply if isinstance(reply, bytes) else make_png()
        item: dict[str, Any] = {"revised_prompt": f"drawn: {body.get('prompt', '')}"}
        if isinstance(reply, Served) or body.get("response_format") == "url":
            self.image_files.append(picture)
            item["url"] = self.make_url(f"files/images/{len(self.image_files) - 1}")
        else:
            item["b64_json"] = base64.b64encode(picture).decode()
        return web.json_response({"created": int(time.time()), "data": [item]})

    async def _image_file(self, request: web.Request) -> web.Response:
        await self._record(request, "image_files")
        index = int(request.match_info["index"])
        if not 0 <= index < len(self.image_files):
            return _error(Fail(404, message="no such file"))
        return web.Response(body=self.image_files[index], content_type="image/png")

    async def _models(self, request: web.Request) -> web.Response:
        _, reply = await self._begin(request, "models")
        if isinstance(reply, Fail):
            return _error(reply)
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    async def _unknown(self, request: web.Request) -> web.Response:
        await self._record(request, "unknown")
        return _error(Fail(404, message=f"Unknown route {request.method} {request.path}"))


def _canned(reply: Any) -> web.Response | None:
    """The response for a scripted failure or raw body; None for a reply the endpoint builds."""
    if isinstance(reply, Fail):
        return _error(reply)
    if isinstance(reply, Body):
        return web.Response(text=reply.text, content_type=reply.content_type)
    return None


def _error(fail: Fail) -> web.Response:
    fallback = ("server_error" if fail.status >= 500 else "invalid_request_error", None)
    kind, code = _ERROR_TYPES.get(fail.status, fallback)
    message = fail.message or f"Fake error {fail.status}"
    headers = dict(fail.headers)
    if fail.retry_after is not None:
        headers["Retry-After"] = str(fail.retry_after)
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return web.json_response(body, status=fail.status, headers=headers)


def _client_port(request: web.Request) -> int | None:
    peer = request.transport.get_extra_info("peername") if request.transport is not None else None
    return int(peer[1]) if isinstance(peer, tuple) and len(peer) >= 2 else None


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _echo(body: dict[str, Any]) -> str:
    text = _last_user_text(body)
    if (body.get("response_format") or {}).get("type") in ("json_object", "json_schema"):
        return json.dumps({"echo": text})
    return f"echo: {text}"


def _bounded(text: str, max_tokens: object) -> tuple[str, str]:
    """``text`` cut after ``max_tokens`` words (the fake's tokens), and the finish reason."""
    if not isinstance(max_tokens, int) or len(text.split()) <= max_tokens:
        return text, "stop"
    words = re.finditer(r"\S+", text)
    end = next(m.end() for i, m in enumerate(words, start=1) if i == max_tokens) if max_tokens > 0 else 0
    return text[:end], "length"


def _usage(body: dict[str, Any], reply: str) -> dict[str, int]:
    prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or [])
    completion = len(reply.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _pieces(text: str) -> list[str]:
    """``text`` cut after each space, so the pieces join back to it exactly."""
    pieces, start = [], 0
    for index, char in enumerate(text):
        if char == " ":
            pieces.append(text[start : index + 1])
            start = index + 1
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _hash_vector(text: str, dimensions: int) -> list[float]:
    """A unit vector that depends only on ``text`` and ``dimensions``."""
    rng = random.Random(hashlib.sha256(text.encode()).digest())
    vector = [rng.uniform(-1.0, 1.0) for _ in range(dimensions)]
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]
