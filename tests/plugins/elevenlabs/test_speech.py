"""The TEXT_TO_SPEECH handler through the real elevenlabs client against the fake server."""

from __future__ import annotations

import asyncio
import io
import logging
import wave
from collections.abc import Awaitable, Callable

import av
import pytest

from bot.kernel.errors import ModelAuthError, ModelError, ModelRateLimited, ModelUnavailable
from bot.kernel.models import SpeechStream
from plugins.elevenlabs import _speech
from tests.fakes.elevenlabs_server import DEFAULT_VOICE, Fail, FakeElevenLabsServer

from ..fake_runtime import FakeCharacter, FakeRuntime
from .conftest import BAD_KEY, KEY, OTHER_KEY, OTHER_VOICE, secrets_in

MakeRuntime = Callable[..., Awaitable[FakeRuntime]]
SENTENCE = "Good evening, everyone. It is lovely to see you all here tonight."


async def within(awaitable: Awaitable[object]) -> object:
    """Guard against a hang; never a timing assertion."""
    return await asyncio.wait_for(awaitable, 60)


async def until(condition: Callable[[], bool]) -> None:
    """Wait for something the server does in its own time (guarded against hanging)."""
    async with asyncio.timeout(60):
        while not condition():
            await asyncio.sleep(0.005)


def decoded(audio: bytes) -> tuple[str, float]:
    with av.open(io.BytesIO(audio), mode="r") as container:
        stream = container.streams.audio[0]
        samples = sum(frame.samples for frame in container.decode(stream))
        return stream.codec_context.name, samples / stream.codec_context.sample_rate


# -- streaming --------------------------------------------------------------------------------


async def test_a_stream_is_returned_while_the_clip_is_still_being_generated(
    runtime: FakeRuntime, server: FakeElevenLabsServer
) -> None:
    server.hold(after=1)  # the fake makes one chunk, then waits for release()
    stream = await within(runtime.speak({"text": SENTENCE, "stream": True}))
    assert isinstance(stream, SpeechStream)
    assert (stream.format, stream.provider) == ("mp3", "elevenlabs")
    assert stream.first
    (request,) = server.requests
    assert request.streaming and request.events == ["chunk"]  # still generating: no "end" yet
    server.release()
    audio = await within(stream.read())
    assert request.events[-1] == "end" and request.chunks_sent > 1
    codec, seconds = decoded(audio)  # type: ignore[arg-type]
    assert codec.startswith("mp3")
    assert seconds == pytest.approx(len(SENTENCE) * server.seconds_per_character, abs=0.1)


async def test_closing_a_stream_early_lets_go_of_the_connection(
    runtime: FakeRuntime, server: FakeElevenLabsServer
) -> None:
    server.hold(after=1)
    stream = await within(runtime.speak({"text": SENTENCE, "stream": True}))
    assert isinstance(stream, SpeechStream)
    await stream.chunks.aclose()  # type: ignore[attr-defined]
    await until(lambda: "aborted" in server.requests[0].events)
    assert "end" not in server.requests[0].events


async def test_the_request_carries_every_voice_setting(server: FakeElevenLabsServer, make_runtime: MakeRuntime) -> None:
    runtime = await make_runtime(
        {
            "ELEVENLABS_API_KEY": KEY,
            "ELEVENLABS_BASE_URL": server.url,
            "ELEVENLABS_VOICE_ID": OTHER_VOICE,
            "ELEVENLABS_MODEL_ID": "eleven_multilingual_v2",
            "ELEVENLABS_VOICE_STABILITY": "0.3",
            "ELEVENLABS_VOICE_SIMILARITY_BOOST": "0.9",
            "ELEVENLABS_VOICE_STYLE": "0.2",
            "ELEVENLABS_VOICE_USE_SPEAKER_BOOST": "false",
            "ELEVENLABS_OPTIMIZE_STREAMING_LATENCY": "3",
            "ELEVENLABS_OUTPUT_FORMAT": "pcm_16000",
        }
    )
    stream = await runtime.speak({"text": "Hello", "stream": True})
    assert stream.format == "pcm_16000"
    assert len(await stream.read()) == 2 * int(16000 * 5 * server.seconds_per_character)
    (request,) = server.requests
    assert request.path == f"/v1/text-to-speech/{OTHER_VOICE}/stream"
    assert request.query == {"output_format": "pcm_16000", "optimize_streaming_latency": "3"}
    assert request.json == {
        "text": "Hello",
        "model_id": "eleven_multilingual_v2",
        "voice_settings": {"stability": 0.3, "similarity_boost": 0.9, "style": 0.2, "use_speaker_boost": False},
    }
    assert (request.key_known, request.key_suffix) == (True, KEY[-4:])


async def test_defaults_reach_the_server(runtime: FakeRuntime, server: FakeElevenLabsServer) -> None:
    await (await runtime.speak({"text": "Hi", "stream": True})).read()
    (request,) = server.requests
    assert request.voice_id == DEFAULT_VOICE
    assert request.query == {"output_format": "mp3_44100_128", "optimize_streaming_latency": "0"}
    assert request.json["model_id"] == "eleven_flash_v2_5"
    assert request.json["voice_settings"] == {
        "stability": 0.5,
        "similarity_boost": 0.75,
        "style": 0.0,
        "use_speaker_boost": True,
    }


async def test_the_caller_may_choose_the_voice_and_format(runtime: FakeRuntime, server: FakeElevenLabsServer) -> None:
    pcm = await runtime.speak({"text": "Hi", "voice": OTHER_VOICE, "format": "pcm", "stream": True})
    opus = await runtime.speak({"text": "Hi", "format": "opus", "stream": True})
    wav = await runtime.speak({"text": "Hi", "format": "wav", "stream": True})
    assert (pcm.format, opus.format, wav.format) == ("pcm_24000", "opus", "wav")
    assert await pcm.read()
    assert (await opus.read()).startswith(b"OggS")
    assert decoded(await wav.read())[0] == "pcm_s16le"  # the streamed WAV header is readable
    assert [(r.voice_id, r.query["output_format"]) for r in server.requests] == [
        (OTHER_VOICE, "pcm_24000"),
        (DEFAULT_VOICE, "opus_48000_64"),
        (DEFAULT_VOICE, "pcm_24000"),
    ]


# -- bytes ------------------------------------------------------------------------------------


async def test_without_stream_the_whole_clip_comes_back_as_bytes(
    runtime: FakeRuntime, server: FakeElevenLabsServer
) -> None:
    audio = await runtime.speak({"text": "Hello there"})
    assert isinstance(audio, bytes)
    assert decoded(audio)[0].startswith("mp3")
    (request,) = server.requests
    assert request.path == f"/v1/text-to-speech/{DEFAULT_VOICE}" and not request.streaming
    assert request.events[-1] == "end"


async def test_pcm_bytes_come_as_wav_so_they_say_their_rate(
    server: FakeElevenLabsServer, make_runtime: MakeRuntime
) -> None:
    runtime = await make_runtime(
        {"ELEVENLABS_API_KEY": KEY, "ELEVENLABS_BASE_URL": server.url, "ELEVENLABS_OUTPUT_FORMAT": "pcm_22050"}
    )
    audio = await runtime.speak({"text": "Hello"})
    with wave.open(io.BytesIO(audio)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (22050, 1, 2)
        assert wav.getnframes() == int(22050 * 5 * server.seconds_per_character)
    raw = await runtime.speak({"text": "Hello", "format": "pcm"})  # as OpenAI's: 24 kHz, no header
    assert len(raw) == 2 * int(24000 * 5 * server.seconds_per_character)


async def test_a_format_elevenlabs_cannot_make_fails_without_a_request(
    runtime: FakeRuntime, server: FakeElevenLabsServer
) -> None:
    with pytest.raises(ModelError, match=r"^Ada: ElevenLabs cannot produce 'aac' audio"):
        await runtime.speak({"text": "Hi", "format": "aac"})
    with pytest.raises(ModelError, match=r"^Ada: cannot speak empty text"):
        await runtime.speak({"text": "  "})
    assert server.requests == []


async def test_each_agent_speaks_with_its_own_key_and_voice(
    server: FakeElevenLabsServer, make_runtime: MakeRuntime
) -> None:
    ada = await make_runtime({"ELEVENLABS_API_KEY": KEY, "ELEVENLABS_BASE_URL": server.url})
    bob = await make_runtime(
        {"ELEVENLABS_API_KEY": OTHER_KEY, "ELEVENLABS_BASE_URL": server.url, "ELEVENLABS_VOICE_ID": OTHER_VOICE},
        character=FakeCharacter(name="Bob"),
    )
    await ada.speak({"text": "from Ada"})
    await bob.speak({"text": "from Bob"})
    assert [(r.key_suffix, r.voice_id) for r in server.requests] == [
        (KEY[-4:], DEFAULT_VOICE),
        (OTHER_KEY[-4:], OTHER_VOICE),
    ]


# -- failures ---------------------------------------------------------------------------------


async def failure(runtime: FakeRuntime, caplog: pytest.LogCaptureFixture, *, stream: bool = True) -> ModelError:
    """The error a call raises, after checking the one warning line it logged."""
    caplog.clear()
    with pytest.raises(ModelError) as caught:
        await runtime.speak({"text": SENTENCE, "stream": stream})
    warnings = [r for r in caplog.records if r.name == "plugins.elevenlabs" and r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warnings] == [str(caught.value)]
    assert str(caught.value).startswith("Ada: ") and caught.value.agent == "Ada"
    assert not secrets_in(caplog.text) and not secrets_in(str(caught.value)) and not secrets_in(repr(caught.value))
    assert (caught.value.provider, caught.value.model_type) == ("elevenlabs", "TEXT_TO_SPEECH")
    return caught.value


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)  # everything, the SDK's and httpx's too: no key anywhere
    return caplog


@pytest.mark.parametrize("stream", [True, False])
async def test_a_refused_key_is_an_auth_error_naming_the_setting(
    server: FakeElevenLabsServer, make_runtime: MakeRuntime, logs: pytest.LogCaptureFixture, stream: bool
) -> None:
    runtime = await make_runtime({"ELEVENLABS_API_KEY": BAD_KEY, "ELEVENLABS_BASE_URL": server.url})
    error = await failure(runtime, logs, stream=stream)
    assert type(error) is ModelAuthError
    assert str(error) == (
        "Ada: ElevenLabs refused the API key (HTTP 401 invalid_api_key); check ELEVENLABS_API_KEY for this character"
    )
    assert len(server.requests) == 1  # never retried


async def test_an_unknown_voice_says_which(
    server: FakeElevenLabsServer, make_runtime: MakeRuntime, logs: pytest.LogCaptureFixture
) -> None:
    runtime = await make_runtime(
        {"ELEVENLABS_API_KEY": KEY, "ELEVENLABS_BASE_URL": server.url, "ELEVENLABS_VOICE_ID": "NoSuchVoice123"}
    )
    error = await failure(runtime, logs)
    assert type(error) is ModelError
    assert str(error).startswith("Ada: ElevenLabs voice NoSuchVoice123 not found; check ELEVENLABS_VOICE_ID")
    assert len(server.requests) == 1


async def test_an_unknown_voice_is_recognised_by_its_code_whatever_the_status(
    make_runtime: MakeRuntime, logs: pytest.LogCaptureFixture
) -> None:
    async with FakeElevenLabsServer(keys={KEY}, voices=(), voice_not_found_status=400) as server:
        runtime = await make_runtime({"ELEVENLABS_API_KEY": KEY, "ELEVENLABS_BASE_URL": server.url})
        error = await failure(runtime, logs)
    assert f"voice {DEFAULT_VOICE} not found" in str(error)


@pytest.mark.parametrize("status", [401, 429])
async def test_an_exhausted_quota_is_rate_limited_says_so_and_is_not_retried(
    runtime: FakeRuntime, server: FakeElevenLabsServer, logs: pytest.LogCaptureFixture, status: int
) -> None:
    server.fail(Fail.quota_exceeded(status=status))
    error = await failure(runtime, logs)
    assert type(error) is ModelRateLimited
    assert str(error).startswith("Ada: the ElevenLabs quota is exhausted (This request exceeds your quota")
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "busy", [Fail.system_busy(times=2), Fail.too_many_concurrent_requests(times=2), Fail.server_error(502, times=2)]
)
async def test_a_busy_server_is_asked_again_twice_before_any_audio(
    runtime: FakeRuntime, server: FakeElevenLabsServer, logs: pytest.LogCaptureFixture, busy: Fail
) -> None:
    server.fail(busy)
    stream = await runtime.speak({"text": "Hi", "stream": True})
    assert await stream.read()
    assert [r.events[0] for r in server.requests] == [f"error {busy.status}"] * 2 + ["chunk"]
    retries = [r for r in logs.records if r.name == "plugins.elevenlabs" and "asking again" in r.getMessage()]
    assert [r.levelno for r in retries] == [logging.INFO] * 2
    assert not [r for r in logs.records if r.name == "plugins.elevenlabs" and r.levelno >= logging.WARNING]


@pytest.mark.parametrize(
    ("busy", "error_type"),
    [(Fail.system_busy(), ModelRateLimited), (Fail.server_error(500), ModelUnavailable)],
)
async def test_a_server_busy_through_the_retries_fails(
    runtime: FakeRuntime,
    server: FakeElevenLabsServer,
    logs: pytest.LogCaptureFixture,
    busy: Fail,
    error_type: type[ModelError],
) -> None:
    server.fail(busy)
    error = await failure(runtime, logs)
    assert type(error) is error_type
    assert len(server.requests) == 3  # the first try and two retries


async def test_retry_after_is_honoured(runtime: FakeRuntime, server: FakeElevenLabsServer) -> None:
    server.fail(Fail.system_busy(times=1, retry_after=0))
    assert await runtime.speak({"text": "Hi"})
    assert len(server.requests) == 2


async def test_nothing_is_retried_once_audio_has_started(
    runtime: FakeRuntime, server: FakeElevenLabsServer, logs: pytest.LogCaptureFixture
) -> None:
    server.cut(after=1)
    stream = await runtime.speak({"text": SENTENCE, "stream": True})
    assert stream.first
    logs.clear()
    with pytest.raises(ModelUnavailable) as caught:
        await stream.read()
    assert "stopped after audio had started" in str(caught.value)
    assert "the connection to http://127.0.0.1:" in str(caught.value)
    assert len(server.requests) == 1
    warnings = [r.getMessage() for r in logs.records if r.levelno >= logging.WARNING]
    assert warnings == [str(caught.value)]
    assert not secrets_in(logs.text)


async def test_no_first_audio_within_the_timeout_is_unavailable(
    server: FakeElevenLabsServer, make_runtime: MakeRuntime, logs: pytest.LogCaptureFixture
) -> None:
    runtime = await make_runtime(
        # Time for the request to reach the server on a busy machine (it is counted below).
        {"ELEVENLABS_API_KEY": KEY, "ELEVENLABS_BASE_URL": server.url, "ELEVENLABS_TIMEOUT_S": "1"}
    )
    server.first_byte_delay = 30  # cut short when the server closes
    error = await failure(runtime, logs)
    assert type(error) is ModelUnavailable
    assert str(error).endswith("no answer from " + server.url + " within 1 s")
    assert len(server.requests) == 1


async def test_an_unreachable_server_is_unavailable(make_runtime: MakeRuntime, logs: pytest.LogCaptureFixture) -> None:
    async with FakeElevenLabsServer() as gone:
        url = gone.url
    runtime = await make_runtime({"ELEVENLABS_API_KEY": KEY, "ELEVENLABS_BASE_URL": url})
    error = await failure(runtime, logs)
    assert type(error) is ModelUnavailable
    assert str(error).endswith(f"cannot connect to {url}")


async def test_after_close_calls_fail_clearly(runtime: FakeRuntime, server: FakeElevenLabsServer) -> None:
    await runtime.close()
    await runtime.close()
    with pytest.raises(ModelError, match="^Ada: the elevenlabs plugin is closed$"):
        await runtime.speak({"text": "Hi"})
    assert server.requests == []


def test_reprs_never_show_the_key(runtime: FakeRuntime) -> None:
    handler = runtime.models[0].handler
    assert repr(handler.__self__) == f"<ElevenLabsSpeech Ada voice {DEFAULT_VOICE}>"  # type: ignore[attr-defined]
    assert not secrets_in(repr(handler.__self__.config))  # type: ignore[attr-defined]


# -- limits -----------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "stream"])
async def test_audio_that_goes_on_past_the_limit_is_cut_off_with_a_model_error(
    runtime: FakeRuntime, server: FakeElevenLabsServer, monkeypatch: pytest.MonkeyPatch, streaming: bool
) -> None:
    """A voice server that never stops would be read to the end, whole or streamed; the audio
    of one reply is read to a limit (lowered here: the sentence makes about 40 KB of MP3)."""
    monkeypatch.setattr(_speech, "MAX_AUDIO_BYTES", 10_000)
    with pytest.raises(
        ModelError, match=r"^Ada: ElevenLabs' audio for voice \w+ went on past the 10000 bytes troupe reads"
    ):
        spoken = await within(runtime.speak({"text": SENTENCE * 2, "stream": streaming}))
        assert isinstance(spoken, SpeechStream)
        await within(spoken.read())
    assert len(server.requests) == 1  # not asked again
