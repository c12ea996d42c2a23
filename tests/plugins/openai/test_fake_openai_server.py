"""The fake OpenAI server behaves like the real API for the real client."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator

import aiohttp
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.fakes.openai_server import Fail, FakeOpenAIServer, UploadedFile, make_png

from .conftest import KEY

USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "tell me a story"}]


@pytest.fixture
async def client(server: FakeOpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=server.url, api_key=KEY, max_retries=0, timeout=5)
    yield client
    await client.close()


async def test_streaming_chat_through_the_real_client(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.script_chat("once upon a time")
    stream = await client.chat.completions.create(
        model="gpt-4o", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    pieces, finish, usage = [], None, None
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            pieces.append(choice.delta.content or "")
            finish = choice.finish_reason or finish
    assert "".join(pieces) == "once upon a time"
    assert len([p for p in pieces if p]) == 4
    assert finish == "stop"
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (4, 4)
    assert server.requests[0].json["stream"] is True


async def test_streaming_without_usage_ends_cleanly(client: openai.AsyncOpenAI) -> None:
    stream = await client.chat.completions.create(model="gpt-4o", messages=USER, stream=True)
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "echo: tell me a story"


async def test_replies_are_taken_in_order_and_the_last_repeats(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.script_chat("one", lambda body: f"two for {body['model']}", Fail(503, times=1), "three")
    replies = []
    for _ in range(5):
        try:
            response = await client.chat.completions.create(model="m", messages=USER)
            replies.append(response.choices[0].message.content)
        except openai.InternalServerError:
            replies.append("503")
    assert replies == ["one", "two for m", "503", "three", "three"]


async def test_a_finite_failure_falls_back_to_the_default(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.script_chat(Fail(400, times=1, message="bad"))
    with pytest.raises(openai.BadRequestError, match="bad"):
        await client.chat.completions.create(model="m", messages=USER)
    response = await client.chat.completions.create(model="m", messages=USER)
    assert response.choices[0].message.content == "echo: tell me a story"


async def test_errors_carry_retry_after_and_extra_headers(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.script_chat(Fail(429, retry_after=7, headers={"x-ratelimit-remaining-requests": "0"}))
    with pytest.raises(openai.RateLimitError) as info:
        await client.chat.completions.create(model="m", messages=USER)
    assert info.value.response.headers["retry-after"] == "7"
    assert info.value.response.headers["x-ratelimit-remaining-requests"] == "0"
    assert info.value.code == "rate_limit_exceeded"


def test_fail_needs_a_positive_count() -> None:
    with pytest.raises(ValueError, match="Fail.times"):
        Fail(500, times=0)


async def test_json_mode_default_reply_is_json(client: openai.AsyncOpenAI) -> None:
    response = await client.chat.completions.create(model="m", messages=USER, response_format={"type": "json_object"})
    assert response.choices[0].message.content == '{"echo": "tell me a story"}'


async def test_embeddings_are_deterministic_unit_vectors_in_either_encoding(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    as_base64 = await client.embeddings.create(model="e", input=["a", "b"])  # the client's default
    as_float = await client.embeddings.create(model="e", input="a", encoding_format="float")
    a, b = (d.embedding for d in as_base64.data)
    assert len(a) == 1536 and a != b
    assert a == pytest.approx(as_float.data[0].embedding, abs=1e-6)
    assert sum(v * v for v in a) == pytest.approx(1.0, abs=1e-4)
    short = await client.embeddings.create(model="e", input="a", dimensions=384, encoding_format="float")
    assert len(short.data[0].embedding) == 384
    assert [r.json["encoding_format"] for r in server.requests] == ["base64", "float", "float"]


async def test_embeddings_can_be_scripted(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.script_embeddings(lambda text: [float(len(text)), 0.0])
    response = await client.embeddings.create(model="e", input=["abc", "de"], encoding_format="float")
    assert [d.embedding for d in response.data] == [[3.0, 0.0], [2.0, 0.0]]


async def test_transcription_records_the_multipart_upload(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    result = await client.audio.transcriptions.create(model="whisper-1", file=("note.ogg", b"OggS1234"), language="en")
    assert result.text == "transcript of note.ogg (8 bytes)"
    fields = server.requests[0].fields
    assert fields is not None
    assert fields["model"] == "whisper-1" and fields["language"] == "en"
    assert isinstance(fields["file"], UploadedFile) and fields["file"].data == b"OggS1234"
    as_text = await client.audio.transcriptions.create(model="whisper-1", file=("n.ogg", b"x"), response_format="text")
    assert as_text.strip() == "transcript of n.ogg (1 bytes)"


async def test_speech_returns_bytes(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    response = await client.audio.speech.create(model="tts", voice="nova", input="hi", response_format="wav")
    assert response.content == b"FAKE-AUDIO:wav:hi"
    assert response.response.headers["content-type"] == "audio/wav"


async def test_models_lists_the_configured_models(client: openai.AsyncOpenAI) -> None:
    models = [m.id async for m in client.models.list()]
    assert models == ["gpt-4o-mini", "gpt-4o", "text-embedding-3-small", "whisper-1", "gpt-4o-mini-tts"]


async def test_requests_record_auth_suffix_but_never_the_key(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    await client.chat.completions.create(model="m", messages=USER)
    (request,) = server.requests
    assert (request.auth, request.auth_suffix) == (True, KEY[-4:])
    assert not any(k.lower() == "authorization" for k in request.headers)
    assert KEY not in repr(request)
    assert request.headers["Content-Type"] == "application/json"


async def test_unknown_routes_are_404_and_recorded(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        await client.moderations.create(input="a cat")
    assert server.requests[0].endpoint == "unknown"


async def test_images_answer_base64_or_a_url_the_fake_serves(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    picture = make_png(3, 2)
    server.script_images(picture)
    drawn = await client.images.generate(prompt="a cat", model="dall-e-3", response_format="b64_json")
    assert drawn.data is not None and base64.b64decode(drawn.data[0].b64_json or "") == picture
    assert drawn.data[0].revised_prompt == "drawn: a cat"
    linked = await client.images.generate(prompt="a dog", response_format="url")
    assert linked.data is not None and linked.data[0].url is not None
    async with aiohttp.ClientSession() as session, session.get(linked.data[0].url) as response:
        assert await response.read() == picture
    assert [r.endpoint for r in server.requests] == ["images", "images", "image_files"]
    assert picture.startswith(b"\x89PNG\r\n\x1a\n") and len(make_png(padding=1000)) > 1000


async def test_latency_delays_and_close_cuts_it_short() -> None:
    server = FakeOpenAIServer(latency=30)
    await server.start()
    client = openai.AsyncOpenAI(base_url=server.url, api_key=KEY, max_retries=0, timeout=60)
    call = asyncio.ensure_future(client.chat.completions.create(model="m", messages=USER))
    while not server.requests:
        await asyncio.sleep(0.01)
    started = time.perf_counter()
    await server.close()
    await asyncio.gather(call, return_exceptions=True)
    assert time.perf_counter() - started < 2
    await client.close()


async def test_a_held_request_waits_for_its_release_and_only_the_first_match_is_held(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    held = server.hold(lambda r: "story" in str(r.json))
    first = asyncio.ensure_future(client.chat.completions.create(model="m", messages=USER))
    await asyncio.wait_for(held.reached.wait(), 5)
    assert held.request is not None and held.request.endpoint == "chat"
    # Meanwhile a second matching request is not held, and the first still waits.
    second = await client.chat.completions.create(model="m", messages=USER)
    assert second.choices[0].message.content == "echo: tell me a story" and not first.done()
    held.release()
    assert (await first).choices[0].message.content == "echo: tell me a story"


async def test_lifecycle_misuse() -> None:
    server = FakeOpenAIServer()
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.url
    async with server:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/v1")
        assert server.make_url("/models") == server.url + "/models"
        with pytest.raises(RuntimeError, match="started once"):
            await server.start()
    await server.close()  # idempotent
    assert FakeOpenAIServer.__test__ is False


async def test_clear_forgets_requests_and_scripts(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.script_chat("scripted")
    await client.chat.completions.create(model="m", messages=USER)
    server.clear()
    assert server.requests == []
    response = await client.chat.completions.create(model="m", messages=USER)
    assert response.choices[0].message.content == "echo: tell me a story"
