"""The fake ElevenLabs server against the real ``elevenlabs`` client."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator

import av
import httpx
import pytest
from elevenlabs import AsyncElevenLabs, VoiceSettings
from elevenlabs.core.api_error import ApiError

from tests.fakes.elevenlabs_server import DEFAULT_VOICE, Fail, FakeElevenLabsServer, audio_format

from .conftest import KEY


@pytest.fixture
async def client(server: FakeElevenLabsServer) -> AsyncIterator[AsyncElevenLabs]:
    async with httpx.AsyncClient(timeout=5) as http:
        yield AsyncElevenLabs(api_key=KEY, base_url=server.url, httpx_client=http)


def decoded_seconds(audio: bytes) -> tuple[str, float]:
    """The codec and duration of an audio file, decoded with FFmpeg."""
    with av.open(io.BytesIO(audio), mode="r") as container:
        stream = container.streams.audio[0]
        samples = sum(frame.samples for frame in container.decode(stream))
        return stream.codec_context.name, samples / stream.codec_context.sample_rate


def test_output_formats_are_parsed_like_the_api_spells_them() -> None:
    assert audio_format("mp3_44100_128") == ("mp3", 44100, 128)
    assert audio_format("pcm_16000") == ("pcm", 16000, None)
    assert audio_format("opus_48000_64") == ("opus", 48000, 64)
    assert audio_format("ulaw_8000") is None and audio_format("mp3_44101_128") is None


async def test_streams_real_mp3_lasting_in_proportion_to_the_text(
    server: FakeElevenLabsServer, client: AsyncElevenLabs
) -> None:
    text = "Hello there, this is a test of the fake."
    settings = VoiceSettings(stability=0.5, similarity_boost=0.75, style=0.0, use_speaker_boost=True)
    chunks = [
        chunk
        async for chunk in client.text_to_speech.stream(
            DEFAULT_VOICE,
            text=text,
            model_id="eleven_flash_v2_5",
            output_format="mp3_44100_128",
            voice_settings=settings,
            optimize_streaming_latency=2,
        )
    ]
    assert len(chunks) > 1
    codec, seconds = decoded_seconds(b"".join(chunks))
    assert codec.startswith("mp3")
    assert seconds == pytest.approx(len(text) * server.seconds_per_character, abs=0.1)
    (request,) = server.requests
    assert request.path == f"/v1/text-to-speech/{DEFAULT_VOICE}/stream" and request.streaming
    assert request.query == {"output_format": "mp3_44100_128", "optimize_streaming_latency": "2"}
    assert request.json == {
        "text": text,
        "model_id": "eleven_flash_v2_5",
        "voice_settings": {"stability": 0.5, "similarity_boost": 0.75, "style": 0.0, "use_speaker_boost": True},
    }
    assert (request.key_known, request.key_suffix) == (True, KEY[-4:])
    assert "xi-api-key" not in {name.lower() for name in request.headers}
    assert request.events[-1] == "end" and request.chunks_sent > 1


async def test_converts_to_raw_pcm_and_ogg_opus(server: FakeElevenLabsServer, client: AsyncElevenLabs) -> None:
    async def convert(output_format: str) -> bytes:
        chunks = client.text_to_speech.convert(DEFAULT_VOICE, text="Hello", output_format=output_format)
        return b"".join([chunk async for chunk in chunks])

    pcm = await convert("pcm_16000")
    assert len(pcm) == 2 * int(16000 * 5 * server.seconds_per_character)
    opus = await convert("opus_48000_64")
    assert opus.startswith(b"OggS")
    codec, seconds = decoded_seconds(opus)
    assert codec == "opus" and seconds == pytest.approx(0.3, abs=0.05)
    assert [r.streaming for r in server.requests] == [False, False]


@pytest.mark.parametrize(
    ("setup", "status", "code"),
    [
        (lambda s: s.keys.clear(), 401, "invalid_api_key"),
        (lambda s: s.voices.clear(), 404, "voice_not_found"),
        (lambda s: s.fail(Fail.quota_exceeded()), 401, "quota_exceeded"),
        (lambda s: s.fail(Fail.quota_exceeded(status=429)), 429, "quota_exceeded"),
        (lambda s: s.fail(Fail.too_many_concurrent_requests()), 429, "too_many_concurrent_requests"),
        (lambda s: s.fail(Fail.system_busy()), 429, "system_busy"),
        (lambda s: s.fail(Fail.server_error(503)), 503, "internal_server_error"),
    ],
)
async def test_errors_have_the_real_apis_shape(
    server: FakeElevenLabsServer, client: AsyncElevenLabs, setup: object, status: int, code: str
) -> None:
    setup(server)  # type: ignore[operator]
    with pytest.raises(ApiError) as caught:
        async for _ in client.text_to_speech.stream(DEFAULT_VOICE, text="Hello"):
            pass
    assert caught.value.status_code == status
    assert caught.value.body["detail"]["status"] == code
    assert caught.value.body["detail"]["message"]
    assert server.requests[0].events == [f"error {status}"]


async def test_scripted_failures_are_used_up_then_requests_succeed(
    server: FakeElevenLabsServer, client: AsyncElevenLabs
) -> None:
    server.fail(Fail.system_busy(times=1, retry_after=0))
    with pytest.raises(ApiError):
        async for _ in client.text_to_speech.stream(DEFAULT_VOICE, text="Hi"):
            pass
    assert [c async for c in client.text_to_speech.stream(DEFAULT_VOICE, text="Hi")]
    assert [r.events[0] for r in server.requests] == ["error 429", "chunk"]


async def test_hold_stops_generation_until_released(server: FakeElevenLabsServer, client: AsyncElevenLabs) -> None:
    server.hold(after=1)
    chunks = client.text_to_speech.stream(DEFAULT_VOICE, text="A sentence long enough for several chunks.")
    first = await anext(chunks)
    assert first
    await asyncio.sleep(0.05)  # would the server go on? it must not
    assert server.requests[0].events == ["chunk"]
    server.release()
    rest = [c async for c in chunks]
    assert rest and server.requests[0].events[-1] == "end"


async def test_cut_drops_the_connection_mid_stream(server: FakeElevenLabsServer, client: AsyncElevenLabs) -> None:
    server.cut(after=1)
    received = []
    with pytest.raises(Exception, match="incomplete chunked read"):
        async for chunk in client.text_to_speech.stream(DEFAULT_VOICE, text="A sentence long enough for chunks."):
            received.append(chunk)
    assert received and server.requests[0].events == ["chunk", "cut"]


async def test_close_is_idempotent_and_the_url_needs_a_start() -> None:
    fake = FakeElevenLabsServer()
    with pytest.raises(RuntimeError, match="not started"):
        _ = fake.url
    async with fake:
        assert fake.url.startswith("http://127.0.0.1:")
    await fake.close()
    with pytest.raises(RuntimeError, match="started once"):
        await fake.start()
