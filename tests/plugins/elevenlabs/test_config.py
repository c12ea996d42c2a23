"""Settings: defaults, overrides, validation at setup, and registration."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import pytest

import plugins.elevenlabs
from bot.kernel.errors import ConfigError
from bot.kernel.models import ModelType
from plugins.elevenlabs import DEFAULT_MODEL_ID, DEFAULT_VOICE_ID, ElevenLabsConfig, resolve_config

from ..fake_runtime import FakeRuntime
from .conftest import KEY, secrets_in

MakeRuntime = Callable[..., Awaitable[FakeRuntime]]


def config(**settings: str) -> ElevenLabsConfig | None:
    return resolve_config(FakeRuntime(settings=settings), agent="Ada")


def test_defaults_follow_plugin_elevenlabs_except_the_deprecated_model() -> None:
    resolved = config(ELEVENLABS_API_KEY=KEY)
    assert resolved is not None
    assert resolved.api_key.get_secret_value() == KEY
    assert (resolved.voice_id, resolved.model_id) == ("EXAVITQu4vr4xnSDxMaL", "eleven_flash_v2_5")
    assert (resolved.voice_id, resolved.model_id) == (DEFAULT_VOICE_ID, DEFAULT_MODEL_ID)
    assert (resolved.stability, resolved.similarity_boost, resolved.style) == (0.5, 0.75, 0.0)
    assert resolved.use_speaker_boost is True
    assert resolved.optimize_streaming_latency == 0
    assert resolved.output_format == "mp3_44100_128"
    assert resolved.base_url == "https://api.elevenlabs.io"
    assert resolved.timeout_s == 30.0


def test_every_setting_can_be_changed_per_agent() -> None:
    resolved = config(
        ELEVENLABS_API_KEY=KEY,
        ELEVENLABS_VOICE_ID="21m00Tcm4TlvDq8ikWAM",
        ELEVENLABS_MODEL_ID="eleven_multilingual_v2",
        ELEVENLABS_VOICE_STABILITY="0.3",
        ELEVENLABS_VOICE_SIMILARITY_BOOST="1",
        ELEVENLABS_VOICE_STYLE="0.5",
        ELEVENLABS_VOICE_USE_SPEAKER_BOOST="false",
        ELEVENLABS_OPTIMIZE_STREAMING_LATENCY="4",
        ELEVENLABS_OUTPUT_FORMAT="PCM_16000",
        ELEVENLABS_BASE_URL="http://127.0.0.1:9/",
        ELEVENLABS_TIMEOUT_S="2.5",
    )
    assert resolved is not None
    assert (resolved.voice_id, resolved.model_id) == ("21m00Tcm4TlvDq8ikWAM", "eleven_multilingual_v2")
    assert (resolved.stability, resolved.similarity_boost, resolved.style) == (0.3, 1.0, 0.5)
    assert resolved.use_speaker_boost is False
    assert resolved.optimize_streaming_latency == 4
    assert resolved.output_format == "pcm_16000"
    assert resolved.base_url == "http://127.0.0.1:9"
    assert resolved.timeout_s == 2.5


def test_short_format_names_and_the_legacy_key_setting_are_accepted() -> None:
    resolved = config(ELEVENLABS_XI_API_KEY=KEY, ELEVENLABS_OUTPUT_FORMAT="mp3")
    assert resolved is not None
    assert resolved.api_key.get_secret_value() == KEY
    assert resolved.output_format == "mp3_44100_128"
    opus = config(ELEVENLABS_API_KEY=KEY, ELEVENLABS_OUTPUT_FORMAT="opus")
    assert opus is not None and opus.output_format == "opus_48000_64"


def test_no_key_means_no_config() -> None:
    assert config() is None
    assert config(ELEVENLABS_API_KEY="  ", ELEVENLABS_VOICE_STABILITY="not checked without a key") is None


@pytest.mark.parametrize(
    ("setting", "value", "allowed"),
    [
        ("ELEVENLABS_VOICE_STABILITY", "1.5", "a number from 0 to 1"),
        ("ELEVENLABS_VOICE_STABILITY", "-0.1", "a number from 0 to 1"),
        ("ELEVENLABS_VOICE_STABILITY", "steady", "a number from 0 to 1"),
        ("ELEVENLABS_VOICE_STABILITY", "nan", "a number from 0 to 1"),
        ("ELEVENLABS_VOICE_SIMILARITY_BOOST", "75", "a number from 0 to 1"),
        ("ELEVENLABS_VOICE_STYLE", "loud", "a number from 0 to 1"),
        ("ELEVENLABS_OPTIMIZE_STREAMING_LATENCY", "5", "a whole number from 0 to 4"),
        ("ELEVENLABS_OPTIMIZE_STREAMING_LATENCY", "-1", "a whole number from 0 to 4"),
        ("ELEVENLABS_OPTIMIZE_STREAMING_LATENCY", "1.5", "a whole number from 0 to 4"),
        ("ELEVENLABS_OPTIMIZE_STREAMING_LATENCY", "fast", "a whole number from 0 to 4"),
        ("ELEVENLABS_VOICE_USE_SPEAKER_BOOST", "maybe", "true or false"),
        ("ELEVENLABS_TIMEOUT_S", "0", "a positive number"),
        ("ELEVENLABS_TIMEOUT_S", "soon", "a positive number"),
        ("ELEVENLABS_OUTPUT_FORMAT", "ulaw_8000", "use one of mp3_22050_32"),
        ("ELEVENLABS_OUTPUT_FORMAT", "wav", "use one of mp3_22050_32"),
        ("ELEVENLABS_BASE_URL", "api.elevenlabs.io", "an http(s) address"),
    ],
)
def test_a_bad_value_is_a_config_error_naming_agent_setting_and_range(setting: str, value: str, allowed: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config(ELEVENLABS_API_KEY=KEY, **{setting: value})
    message = str(caught.value)
    assert message.startswith(f"Ada: {setting} ")
    assert allowed in message
    assert not secrets_in(message)


def test_the_base_url_is_not_quoted_in_errors_since_it_may_carry_credentials() -> None:
    with pytest.raises(ConfigError) as caught:
        config(ELEVENLABS_API_KEY=KEY, ELEVENLABS_BASE_URL="ftp://user:hunter22@example.com")
    assert "hunter22" not in str(caught.value)


def test_repr_never_shows_the_key() -> None:
    resolved = config(ELEVENLABS_API_KEY=KEY)
    assert "<redacted>" in repr(resolved)
    assert not secrets_in(repr(resolved))
    assert type(resolved).__module__ == "plugins.elevenlabs"


async def test_setup_registers_tts_above_openai(make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="plugins.elevenlabs")
    runtime = await make_runtime({"ELEVENLABS_API_KEY": KEY})
    (registration,) = runtime.models
    assert registration.model_type is ModelType.TEXT_TO_SPEECH
    assert (registration.provider, registration.priority) == ("elevenlabs", 100)
    assert len(runtime.closers) == 1
    assert "Ada: ElevenLabs voice EXAVITQu4vr4xnSDxMaL (eleven_flash_v2_5, mp3_44100_128)" in caplog.messages
    assert not secrets_in(caplog.text)


async def test_setup_without_a_key_registers_nothing_and_says_so_once(
    make_runtime: MakeRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="plugins.elevenlabs")
    runtime = await make_runtime({"ELEVENLABS_VOICE_ID": "21m00Tcm4TlvDq8ikWAM"})
    assert runtime.models == [] and runtime.closers == []
    (record,) = caplog.records
    assert record.levelno == logging.INFO
    assert record.getMessage().startswith("Ada: no ELEVENLABS_API_KEY")


async def test_setup_fails_on_a_bad_setting_before_registering(make_runtime: MakeRuntime) -> None:
    with pytest.raises(ConfigError, match=r"^Ada: ELEVENLABS_VOICE_STYLE must be a number from 0 to 1"):
        await make_runtime({"ELEVENLABS_API_KEY": KEY, "ELEVENLABS_VOICE_STYLE": "2"})


def test_meta_names_the_plugin_and_its_elizaos_alias() -> None:
    assert plugins.elevenlabs.meta.name == "elevenlabs"
    assert "@elizaos/plugin-elevenlabs" in plugins.elevenlabs.meta.aliases
