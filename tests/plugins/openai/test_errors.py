"""Failed requests (posted directly or through the SDK) become troupe's ModelError family once,
at the seam, in the same words either way; no key ever leaks."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import openai
import pytest

from bot.kernel.errors import ModelAuthError, ModelError, ModelRateLimited, ModelRequestRejected, ModelUnavailable
from bot.kernel.models import ModelType
from plugins.openai._posting import HttpStatusError, retry_after
from tests.fakes.openai_server import Body, Fail, FakeOpenAIServer

from ..fake_runtime import FakeRuntime
from .conftest import KEY

MakeRuntime = Callable[..., Awaitable[FakeRuntime]]
HI = {"prompt": "hi"}


async def at(server: FakeOpenAIServer, make_runtime: MakeRuntime, **settings: str) -> FakeRuntime:
    return await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, **settings})


def plugin_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "plugins.openai" and r.levelno >= logging.ERROR]


async def test_refused_key_is_an_auth_error_logged_once(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = await at(server, make_runtime)
    server.script_chat(Fail(401, message="Incorrect API key provided."))
    for kind in (ModelType.TEXT_SMALL, ModelType.TEXT_LARGE):
        expected = r"^Ada: openai refused the API key \(HTTP 401\); check OPENAI_API_KEY"
        with pytest.raises(ModelAuthError, match=expected) as info:
            await runtime.use(kind, HI)
        assert (info.value.provider, info.value.model_type) == ("openai", kind)
        cause = info.value.__cause__
        assert isinstance(cause, HttpStatusError) and cause.status == 401
    assert plugin_errors(caplog) == [
        "Ada: openai refused the API key (HTTP 401); check OPENAI_API_KEY for this character"
    ]
    assert len(server.requests) == 2  # a refused key is not retried


async def test_forbidden_is_an_auth_error_too(server: FakeOpenAIServer, make_runtime: MakeRuntime) -> None:
    runtime = await at(server, make_runtime)
    server.script_embeddings(Fail(403))
    with pytest.raises(ModelAuthError, match=r"HTTP 403"):
        await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hi"})


async def test_auth_errors_are_logged_once_per_provider(
    make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    async with FakeOpenAIServer() as router, FakeOpenAIServer() as embedder:
        runtime = await make_runtime(
            {
                "OPENROUTER_API_KEY": "sk-or-bad",
                "OPENROUTER_BASE_URL": router.url,
                "OPENAI_API_KEY": KEY,
                "OPENAI_EMBEDDING_URL": embedder.url,
            },
            model_preset="openrouter",
        )
        router.script_chat(Fail(401))
        embedder.script_embeddings(Fail(401))
        for _ in range(2):
            with pytest.raises(ModelAuthError):
                await runtime.use(ModelType.TEXT_SMALL, HI)
            with pytest.raises(ModelAuthError):
                await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hi"})
        assert plugin_errors(caplog) == [
            "Ada: openrouter refused the API key (HTTP 401); check OPENROUTER_API_KEY for this character",
            "Ada: openai refused the API key (HTTP 401); check OPENAI_API_KEY for this character",
        ]
        await runtime.close()


async def test_rate_limit_is_retried_by_the_client_then_succeeds(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await at(server, make_runtime, OPENAI_MAX_RETRIES="2")
    server.script_chat(Fail(429, times=2, retry_after=0.01), "finally")
    assert await runtime.use(ModelType.TEXT_SMALL, HI) == "finally"
    assert len(server.requests_for("chat")) == 3


async def test_persistent_rate_limit_carries_retry_after(server: FakeOpenAIServer, make_runtime: MakeRuntime) -> None:
    runtime = await at(server, make_runtime, OPENAI_MAX_RETRIES="1")
    server.script_chat(Fail(429, retry_after=0.01, message="Slow down."))
    with pytest.raises(ModelRateLimited, match=r"rate limited; retry after 0\.01 s: Slow down\.") as info:
        await runtime.use(ModelType.TEXT_SMALL, HI)
    assert info.value.retry_after == pytest.approx(0.01)
    assert info.value.provider == "openai"
    assert len(server.requests) == 2


async def test_persistent_server_error_is_unavailable_after_retries(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await at(server, make_runtime, OPENAI_MAX_RETRIES="2")
    server.script_chat(Fail(500, retry_after=0.01, message="The server had an error."))
    expected = r"^Ada: TEXT_LARGE via openai \(gpt-4o\): server error HTTP 500: The server had an error\.$"
    with pytest.raises(ModelUnavailable, match=expected):
        await runtime.use(ModelType.TEXT_LARGE, HI)
    assert len(server.requests) == 3


# A try's timeout long enough for its request to reach the server on a busy machine (with 0.2 s
# the client could give up before the server had read it, and the count below came up short).
@pytest.mark.parametrize(("retries", "tries", "within"), [("0", 1, 3.0), ("2", 3, 6.0)])
async def test_slow_server_is_unavailable_after_the_timeout_of_each_try(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, retries: str, tries: int, within: float
) -> None:
    runtime = await at(server, make_runtime, OPENAI_TIMEOUT_S="1", OPENAI_MAX_RETRIES=retries)
    server.latency = 10.0
    started = time.perf_counter()
    with pytest.raises(ModelUnavailable, match=r"no answer from http://127\.0\.0\.1:\d+/v1 within 1 s") as info:
        await runtime.use(ModelType.TEXT_SMALL, HI)
    # Tries of 1 s each, and back-off of at most 0.5 s then 1 s between them.
    assert time.perf_counter() - started < within
    assert isinstance(info.value.__cause__, TimeoutError)
    assert len(server.requests) == tries


async def test_sdk_calls_fail_in_the_same_words(server: FakeOpenAIServer, make_runtime: MakeRuntime) -> None:
    runtime = await at(server, make_runtime, OPENAI_MAX_RETRIES="0")
    audio = {"audio": b"RIFF-not-really-audio", "filename": "a.wav"}
    server.script_transcription(Fail(500, times=1, message="The server had an error."), Fail(401))
    expected = r"^Ada: TRANSCRIPTION via openai \(whisper-1\): server error HTTP 500: The server had an error\.$"
    with pytest.raises(ModelUnavailable, match=expected) as info:
        await runtime.use(ModelType.TRANSCRIPTION, audio)
    assert isinstance(info.value.__cause__, openai.InternalServerError)
    with pytest.raises(ModelAuthError, match=r"^Ada: openai refused the API key \(HTTP 401\)") as auth:
        await runtime.use(ModelType.TRANSCRIPTION, audio)
    assert isinstance(auth.value.__cause__, openai.AuthenticationError)


async def test_unreachable_server_is_unavailable(make_runtime: MakeRuntime) -> None:
    async with FakeOpenAIServer() as gone:
        url = gone.url
    runtime = await make_runtime({"OPENAI_BASE_URL": url, "OPENAI_MAX_RETRIES": "0"})
    with pytest.raises(ModelUnavailable, match=r"cannot connect to http://127\.0\.0\.1:\d+/v1$") as info:
        await runtime.use(ModelType.TEXT_SMALL, HI)
    assert isinstance(info.value.__cause__, aiohttp.ClientConnectorError)


@contextlib.asynccontextmanager
async def tcp_server(reply: bytes, requests: list[bytes] | None = None) -> AsyncIterator[str]:
    """A base URL whose server reads the request (adding its start to ``requests``), sends
    ``reply`` (not HTTP, or nothing) and hangs up."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.read(1024)
        if requests is not None:
            requests.append(request)
        writer.write(reply)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("reply", [b"", b"SSH-2.0-OpenSSH_9.6\r\n\r\n"], ids=["hangs-up", "not-http"])
async def test_a_server_that_hangs_up_or_does_not_speak_http_is_unavailable(
    make_runtime: MakeRuntime, reply: bytes
) -> None:
    async with tcp_server(reply) as url:
        runtime = await make_runtime({"OPENAI_BASE_URL": url, "OPENAI_MAX_RETRIES": "0"})
        with pytest.raises(
            ModelUnavailable, match=r"^Ada: TEXT_SMALL via openai \(gpt-4o-mini\): cannot connect to http"
        ):
            await runtime.use(ModelType.TEXT_SMALL, HI)


async def test_a_server_that_hangs_up_is_asked_again_as_often_as_configured(make_runtime: MakeRuntime) -> None:
    requests: list[bytes] = []
    async with tcp_server(b"", requests) as url:
        runtime = await make_runtime({"OPENAI_BASE_URL": url, "OPENAI_MAX_RETRIES": "2"})
        with pytest.raises(ModelUnavailable, match=r"cannot connect to http://127\.0\.0\.1:\d+/v1 \(\w+\)$"):
            await runtime.use(ModelType.TEXT_SMALL, HI)
    assert [r.split(b" ", 2)[:2] for r in requests] == [[b"POST", b"/v1/chat/completions"]] * 3


async def test_a_text_stream_that_breaks_off_is_unavailable(make_runtime: MakeRuntime) -> None:
    event = b'data: {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", '
    event += b'"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": null}]}\n\n'
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    # One chunk, then the connection closes before the chunk that ends the body.
    async with tcp_server(head + b"%x\r\n%s\r\n" % (len(event), event)) as url:
        runtime = await make_runtime({"OPENAI_BASE_URL": url, "OPENAI_MAX_RETRIES": "0"})
        pieces: list[str] = []
        with pytest.raises(ModelUnavailable, match=r"^Ada: TEXT_LARGE via openai \(gpt-4o\): cannot connect to http"):
            await runtime.use(ModelType.TEXT_LARGE, {"prompt": "hi", "on_delta": pieces.append})
    assert pieces == ["Hel"]


async def test_other_statuses_are_model_errors_with_the_status(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await at(server, make_runtime)
    server.script_chat(Fail(404, message="The model `gpt-4o-mini` does not exist."))
    with pytest.raises(ModelError, match=r"HTTP 404: The model `gpt-4o-mini` does not exist\.") as info:
        await runtime.use(ModelType.TEXT_SMALL, HI)
    assert type(info.value) is ModelError
    assert len(server.requests) == 1


async def test_no_secret_in_errors_or_logs(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, the SDK's and httpx's included
    runtime = await at(server, make_runtime, OPENAI_MAX_RETRIES="1")
    errors: list[ModelError] = []
    server.script_chat(
        "fine",
        Fail(400, times=1, message=f"Incorrect API key provided: {KEY}."),
        Fail(401, times=1, message=f"Incorrect API key provided: {KEY}."),
        Fail(429, times=2, retry_after=0.01, message=f"Rate limit for key {KEY}"),
        Fail(500, times=2, retry_after=0.01, message=f"Internal error for {KEY}"),
        "fine again",
    )
    for _ in range(6):
        try:
            await runtime.use(ModelType.TEXT_SMALL, {"prompt": "hi"})
        except ModelError as exc:
            errors.append(exc)
    assert [type(e) for e in errors] == [ModelRequestRejected, ModelAuthError, ModelRateLimited, ModelUnavailable]
    assert "<redacted>" in str(errors[0])
    for error in errors:
        assert KEY not in str(error) and KEY not in repr(error)
    assert caplog.records  # the check below means something only if something was logged
    assert KEY not in caplog.text
    assert all(r.auth_suffix == KEY[-4:] for r in server.requests)


async def test_a_short_key_does_not_mangle_errors(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    # Local servers take any key, so people write "x": too short to be a secret worth scrubbing.
    runtime = await at(server, make_runtime, OPENAI_API_KEY="x", OPENAI_MAX_RETRIES="0")
    refusal = "This model's maximum context length is 4096 tokens, however you requested 4645 tokens"
    server.script_chat(Fail(400, message=refusal))
    with pytest.raises(ModelRequestRejected) as info:
        await runtime.use(ModelType.TEXT_SMALL, HI)
    assert refusal in str(info.value)
    assert "<redacted>" not in str(info.value) and "<redacted>" not in caplog.text


@pytest.mark.parametrize(
    ("fail", "expected", "wait"),
    [
        (
            Fail(500, headers={"x-should-retry": "false"}, message="Broken for good."),
            r"server error HTTP 500: Broken for good\.$",
            None,
        ),
        (Fail(429, retry_after=120, message="Quota."), r"rate limited; retry after 120 s: Quota\.$", 120),
    ],
    ids=["x-should-retry-false", "retry-after-above-a-minute"],
)
async def test_a_reply_the_server_says_not_to_retry_is_not_retried(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, fail: Fail, expected: str, wait: float | None
) -> None:
    runtime = await at(server, make_runtime, OPENAI_MAX_RETRIES="2")
    server.script_chat(fail)
    started = time.perf_counter()
    with pytest.raises(ModelUnavailable if wait is None else ModelRateLimited, match=expected) as info:
        await runtime.use(ModelType.TEXT_SMALL, HI)
    assert time.perf_counter() - started < 2
    assert getattr(info.value, "retry_after", None) == wait  # the caller may wait it, or ask another provider
    assert len(server.requests) == 1


async def test_a_server_that_says_retry_is_retried_whatever_the_status(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await at(server, make_runtime, OPENAI_MAX_RETRIES="1")
    server.script_chat(Fail(400, times=1, retry_after=0.01, headers={"x-should-retry": "true"}), "second time")
    assert await runtime.use(ModelType.TEXT_SMALL, HI) == "second time"
    assert len(server.requests) == 2


async def test_retry_after_as_an_http_date(server: FakeOpenAIServer, make_runtime: MakeRuntime) -> None:
    runtime = await at(server, make_runtime, OPENAI_MAX_RETRIES="0")
    server.script_chat(Fail(429, retry_after=email.utils.formatdate(time.time() + 30, usegmt=True)))
    with pytest.raises(ModelRateLimited, match=r"rate limited; retry after \d+(\.\d+)? s") as info:
        await runtime.use(ModelType.TEXT_SMALL, HI)
    assert info.value.retry_after == pytest.approx(30, abs=1.5)


def test_retry_after_prefers_milliseconds_and_reads_seconds_and_dates() -> None:
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after": "1.5"}) == 1.5
    assert retry_after({"retry-after": email.utils.formatdate(time.time() - 60, usegmt=True)}) == 0
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None


async def test_an_error_reply_that_is_not_json_is_quoted_as_text(make_runtime: MakeRuntime) -> None:
    page = b"<html><body>Bad gateway</body></html>"
    head = b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(page)
    async with tcp_server(head + page) as url:
        runtime = await make_runtime({"OPENAI_BASE_URL": url, "OPENAI_MAX_RETRIES": "0"})
        expected = r"server error HTTP 502: <html><body>Bad gateway</body></html>$"
        with pytest.raises(ModelUnavailable, match=expected):
            await runtime.use(ModelType.TEXT_SMALL, HI)


async def test_an_embeddings_reply_that_is_not_json_is_a_model_error(
    server: FakeOpenAIServer, make_runtime: MakeRuntime
) -> None:
    runtime = await at(server, make_runtime)
    server.script_embeddings(Body("<html>Maintenance</html>", content_type="text/html"))
    with pytest.raises(ModelError, match=r"answered something that is not a list of vectors$"):
        await runtime.use(ModelType.TEXT_EMBEDDING, {"text": "hi"})


@pytest.mark.parametrize(
    ("kind", "params"),
    [(ModelType.TEXT_SMALL, HI), (ModelType.TRANSCRIPTION, {"audio": b"RIFF-not-really-audio", "filename": "a.wav"})],
    ids=["direct", "sdk"],
)
async def test_a_base_url_with_a_password_in_it_is_a_clear_error(
    server: FakeOpenAIServer, make_runtime: MakeRuntime, kind: ModelType, params: dict[str, object]
) -> None:
    url = server.url.replace("http://", "http://user:hunter2@")
    runtime = await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": url})
    expected = (
        r"^Ada: the openai base URL http://127\.0\.0\.1:\d+/v1 has a user name or password in it, "
        r"which cannot be sent along with the API key; take them out of the URL$"
    )
    with pytest.raises(ModelError, match=expected) as info:
        await runtime.use(kind, params)
    assert "hunter2" not in str(info.value)
    assert server.requests == []
