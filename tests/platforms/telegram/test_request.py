"""python-telegram-bot's requests through troupe's aiohttp backend (:mod:`platforms.telegram._request`):
against the fake Bot API, and against local servers that stall or drop the connection."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from pydantic import SecretStr
from telegram import Bot, InputFile
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TimedOut

from bot.config.character import load_character
from bot.runtime.agent import AgentRuntime
from bot.store import Database
from platforms.telegram._adapter import TelegramAdapter
from platforms.telegram._config import TelegramConfig
from platforms.telegram._outbound import retry_seconds
from platforms.telegram._request import MAX_BODY, AiohttpRequest, UpdatesRequest

from ...fakes._local import LocalServer
from ...fakes.telegram_server import FakeBot, FakeChat, FakeTelegram, FakeUser

TOKEN = "7001:SECRET-token-ada"
# Every byte value, behind the header the fake (like Telegram) checks a voice note for.
VOICE = b"OggS" + b"\0" * 24 + b"OpusHead" + bytes(range(256)) * 64


class Misbehaving(LocalServer):
    """Answers every Bot API method in one bad way: ``stall`` (no answer until the server closes),
    ``drop`` (the connection is closed without an answer) or ``endless`` (200, and a body that
    goes on until the client stops reading; ``sent`` counts it)."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how
        self.arrived = 0
        self.sent = 0

    def _make_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self._method)
        return app

    async def _method(self, request: web.Request) -> web.StreamResponse:
        self.arrived += 1
        self._changed()
        if self.how == "endless":
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            with contextlib.suppress(ConnectionError):
                while self.sent < 1024**3:  # the test's own bound
                    await response.write(b" " * 65536)
                    self.sent += 65536
            return response
        if self.how == "drop":
            assert request.transport is not None
            request.transport.close()
        await self._closed.wait()
        return web.Response(status=503)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/bot"


def _everything_said(exc: BaseException | None) -> str:
    """What the exception and every exception chained to it (cause or context) say."""
    said = ""
    while exc is not None:
        said += f"{exc!s} {exc!r} "
        exc = exc.__cause__ or exc.__context__
    return said


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as server:
        yield server


@pytest.fixture
def world(fake: FakeTelegram) -> tuple[FakeBot, FakeUser, FakeChat]:
    ada = fake.add_bot(TOKEN, username="ada_bot", first_name="Ada")
    sam = fake.add_user("Sam", username="samr")
    return ada, sam, fake.add_group("Writers", members=[sam, ada])


def _bot(base_url: str, request: AiohttpRequest | None = None, *, file_url: str | None = None) -> Bot:
    return Bot(
        TOKEN,
        base_url=base_url,
        base_file_url=file_url or base_url.replace("/bot", "/file/bot"),
        request=request or AiohttpRequest(),
        get_updates_request=AiohttpRequest(connection_pool_size=1),
    )


async def test_a_reply_goes_out_as_form_fields_and_its_answer_comes_back(fake, world) -> None:
    ada, sam, group = world
    said = await fake.user_says(sam, group, "hi @ada_bot")
    async with _bot(f"{fake.url}/bot") as bot:
        assert bot.username == "ada_bot"
        sent = await bot.send_message(group.id, "Ada here — «on it».", reply_to_message_id=said["message_id"])
    assert sent.text == "Ada here — «on it»." and sent.reply_to_message is not None
    assert ada.sent[0]["text"] == "Ada here — «on it»." and ada.sent[0]["reply_to"] == said["message_id"]


@pytest.mark.parametrize(
    ("status", "error", "message"),
    [(400, BadRequest, "Chat not found"), (403, Forbidden, "Forbidden: bot was kicked")],
)
async def test_telegram_refusing_a_call_raises_ptbs_error_for_it(fake, world, status, error, message) -> None:
    fake.fail_next(
        "sendMessage", status=status, description=f"Bad Request: {message.lower()}" if status == 400 else message
    )
    async with _bot(f"{fake.url}/bot") as bot:
        with pytest.raises(error, match=message):
            await bot.send_message(world[2].id, "hello")


async def test_flood_control_is_a_retry_after_with_telegrams_wait(fake, world) -> None:
    fake.fail_next("sendMessage", status=429, retry_after=7)
    async with _bot(f"{fake.url}/bot") as bot:
        with pytest.raises(RetryAfter) as raised:
            await bot.send_message(world[2].id, "hello")
    assert retry_seconds(raised.value) == 7


@pytest.mark.parametrize("as_file_handle", [False, True])
async def test_a_voice_note_upload_arrives_byte_for_byte(fake, world, as_file_handle) -> None:
    ada, _, group = world
    voice = InputFile(io.BytesIO(VOICE) if as_file_handle else VOICE, filename="réponse.ogg")
    async with _bot(f"{fake.url}/bot") as bot:
        await bot.send_voice(group.id, voice, caption="Écoute — 🎧", duration=3)
    assert ada.sent[0]["voice"] == VOICE
    assert ada.sent[0]["text"] == "Écoute — 🎧" and ada.sent[0]["duration"] == 3


async def test_a_file_downloads_whole(fake, world) -> None:
    ada, sam, group = world
    data = bytes(range(256)) * 4096  # 1 MiB
    said = await fake.user_says(sam, group, "notes", document=("notes.bin", data))
    async with _bot(f"{fake.url}/bot") as bot:
        file = await bot.get_file(said["document"]["file_id"])
        assert bytes(await file.download_as_bytearray()) == data
    assert ada.downloads == [f"documents/{said['document']['file_id']}/notes.bin"]


async def test_a_long_poll_may_outlast_the_read_timeout_by_its_own_wait(fake, world) -> None:
    polls = AiohttpRequest(connection_pool_size=1, read_timeout=0.3)
    async with Bot(TOKEN, base_url=f"{fake.url}/bot", request=AiohttpRequest(), get_updates_request=polls) as bot:
        started = asyncio.get_running_loop().time()
        assert await bot.get_updates(timeout=1) == ()
        assert asyncio.get_running_loop().time() - started >= 0.9


async def test_an_answer_slower_than_the_read_timeout_is_timed_out() -> None:
    async with Misbehaving("stall") as server, AiohttpRequest(read_timeout=0.2) as request:
        with pytest.raises(TimedOut, match="Telegram sent nothing for 0.2 s") as raised:
            await _bot(server.base_url, request).send_message(42, "hello")
    assert "SECRET" not in _everything_said(raised.value)


async def test_an_answer_that_never_ends_is_cut_off_at_the_limit() -> None:
    """Read as it arrives and counted: ``response.read()`` would hold any length in memory."""
    async with Misbehaving("endless") as server, AiohttpRequest(read_timeout=30) as request:
        with pytest.raises(NetworkError, match=rf"^the Bot API's answer went on past the {MAX_BODY} bytes") as raised:
            await _bot(server.base_url, request).send_message(42, "hello")
    assert "SECRET" not in _everything_said(raised.value)
    assert server.sent < MAX_BODY + 16 * 1024 * 1024  # the client stopped reading there


async def test_a_calls_own_read_timeout_overrides_the_default() -> None:
    async with Misbehaving("stall") as server, AiohttpRequest(read_timeout=30) as request:
        with pytest.raises(TimedOut, match="Telegram sent nothing for 0.1 s"):
            await _bot(server.base_url, request).send_message(42, "hello", read_timeout=0.1)


async def test_an_upload_nobody_takes_is_timed_out_by_its_write_and_read_timeouts() -> None:
    uploads = AiohttpRequest(connect_timeout=0.1, pool_timeout=0.1, read_timeout=0.2, media_write_timeout=0.2)
    async with Misbehaving("stall") as server, uploads as request:
        voice = InputFile(VOICE * 4096, filename="voice.ogg")  # 64 MiB: more than the socket buffers take
        with pytest.raises(TimedOut, match="the upload and its answer took over 0.6 s") as raised:
            await _bot(server.base_url, request).send_voice(42, voice)
    assert "SECRET" not in _everything_said(raised.value)


async def test_the_connection_pool_is_bounded_and_a_wait_for_it_times_out() -> None:
    # aiohttp bounds the wait for a pooled connection and the connecting together: 0.1 + 0.1 s.
    pooled = AiohttpRequest(connection_pool_size=1, pool_timeout=0.1, connect_timeout=0.1, read_timeout=30)
    async with Misbehaving("stall") as server, pooled as request:
        bot = _bot(server.base_url, request)
        first = asyncio.create_task(bot.send_message(42, "first"))
        await server.wait_for(lambda: server.arrived == 1, description="the first request")
        with pytest.raises(TimedOut, match="waiting for a free connection in the pool") as raised:
            await bot.send_message(42, "second")
        assert server.arrived == 1
        assert "SECRET" not in _everything_said(raised.value)  # aiohttp's own error quotes the URL
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first


async def test_a_refused_connection_is_a_network_error_that_does_not_show_the_token() -> None:
    async with AiohttpRequest() as request:
        with pytest.raises(NetworkError, match=r"aiohttp\.ClientConnectorError: Cannot connect to host") as raised:
            await _bot(f"http://127.0.0.1:{_free_port()}/bot", request).send_message(42, "hello")
    assert "SECRET" not in _everything_said(raised.value)


async def test_a_dropped_connection_is_a_network_error_that_does_not_show_the_token() -> None:
    async with Misbehaving("drop") as server, AiohttpRequest() as request:
        with pytest.raises(NetworkError, match=r"aiohttp\.ServerDisconnectedError") as raised:
            await _bot(server.base_url, request).send_message(42, "hello")
    assert "SECRET" not in _everything_said(raised.value)


async def test_an_error_quoting_the_url_has_the_token_taken_out() -> None:
    async with AiohttpRequest() as request:
        with pytest.raises(NetworkError, match="aiohttp.NonHttpUrlClientError") as raised:
            await _bot("ftp://127.0.0.1/bot", request).send_message(42, "hello")
    said = _everything_said(raised.value)
    assert "SECRET" not in said and "/<redacted>" in said


async def test_a_request_needs_initialize_and_shutdown_closes_its_session() -> None:
    request = AiohttpRequest()
    with pytest.raises(RuntimeError, match=r"not initialized: call initialize\(\) first"):
        await request.do_request("http://127.0.0.1:1/bot1:x/getMe", "POST")
    await request.initialize()
    assert not request.closed
    await request.shutdown()
    await request.shutdown()  # again is nothing
    assert request.closed


async def test_a_start_that_fails_closes_the_http_sessions(fake, world, tmp_path: Path) -> None:
    fake.fail_next("getMe", status=502, description="Bad Gateway")
    path = tmp_path / "ada.json"
    path.write_text(json.dumps({"name": "Ada", "bio": "x"}))
    character = load_character(path, environ={}).raise_for_problems()
    async with Database(tmp_path / "t.db") as db:
        runtime = AgentRuntime(character, db.for_agent(character.agent_id), environ={})
        adapter = TelegramAdapter(runtime, TelegramConfig(token=SecretStr(TOKEN), api_root=fake.url))
        with pytest.raises(NetworkError, match="Bad Gateway"):
            await adapter.start()
    assert adapter._requests and all(request.closed for request in adapter._requests)


def test_the_long_poll_keeps_each_update_as_received_to_be_taken_once() -> None:
    polls = UpdatesRequest()
    raw = {"update_id": 7, "message": {"message_id": 1, "text": "héllo", "future_field": [1, 2]}}
    data = polls.parse_json_payload(json.dumps({"ok": True, "result": [raw, {"no": "id"}]}).encode())
    assert data["result"][0] == raw  # PTB gets what it always got
    assert json.loads(polls.take(7) or "") == raw
    assert polls.take(7) is None  # once
    polls.parse_json_payload(b'{"ok": false, "error_code": 409, "description": "Conflict"}')
    assert polls.take(409) is None


async def test_a_poll_is_held_back_while_the_daemon_has_lost_the_lease(fake, world) -> None:
    """The next getUpdates would confirm what the last one returned: a daemon without the lease
    must not send it, or the updates never reach the daemon that holds the lease now. Its polls
    find nothing (and a stopping updater's last call returns) without asking Telegram."""
    _ada, sam, group = world
    await fake.user_says(sam, group, "hi @ada_bot")
    allowed = False
    polls = UpdatesRequest(connection_pool_size=1, may_poll=lambda: allowed)
    bot = Bot(TOKEN, base_url=f"{fake.url}/bot", request=AiohttpRequest(), get_updates_request=polls)
    async with bot:
        assert await asyncio.wait_for(bot.get_updates(timeout=0), 5) == ()
        assert await asyncio.wait_for(bot.get_updates(offset=10**6, timeout=0), 5) == ()  # nothing confirmed
        allowed = True
        updates = await asyncio.wait_for(bot.get_updates(timeout=0), 5)
    assert [u.message.text for u in updates if u.message] == ["hi @ada_bot"]
