"""One agent's ElevenLabs settings (as elizaOS's plugin-elevenlabs names them), read and checked.

Pure: reads settings through ``runtime.get_setting`` and builds an :class:`ElevenLabsConfig`;
it imports no SDK and makes no network call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from pydantic import SecretStr

from bot.sdk import ConfigError, SettingReader

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL_ID",
    "DEFAULT_VOICE_ID",
    "ElevenLabsConfig",
    "OUTPUT_FORMATS",
    "resolve_config",
]

DEFAULT_BASE_URL = "https://api.elevenlabs.io"
#: "Sarah", the voice plugin-elevenlabs speaks with when none is set.
DEFAULT_VOICE_ID = "EXAVITQu4vr4xnSDxMaL"
#: Upstream defaults to eleven_monolingual_v1, which ElevenLabs has deprecated. Flash v2.5 is
#: its low-latency model (~75 ms to first audio, 32 languages, half the credits per character
#: of multilingual_v2): a character in a voice channel is answering a live conversation, where
#: the time to the first word matters more than the last bit of expressiveness. Characters
#: that read long passages can set ELEVENLABS_MODEL_ID=eleven_multilingual_v2.
DEFAULT_MODEL_ID = "eleven_flash_v2_5"

#: The output formats this plugin can hand on: MP3, Ogg/Opus and raw 16-bit mono PCM (what
#: bot.kernel.models.SpeechStream can describe). μ-law and A-law exist upstream for telephony only.
OUTPUT_FORMATS: tuple[str, ...] = (
    "mp3_22050_32",
    "mp3_24000_48",
    "mp3_44100_32",
    "mp3_44100_64",
    "mp3_44100_96",
    "mp3_44100_128",
    "mp3_44100_192",
    "pcm_8000",
    "pcm_16000",
    "pcm_22050",
    "pcm_24000",
    "pcm_32000",
    "pcm_44100",
    "pcm_48000",
    "opus_48000_32",
    "opus_48000_64",
    "opus_48000_96",
    "opus_48000_128",
    "opus_48000_192",
)
# Short names upstream accepts ("mp3" → mp3_44100_128).
_FORMAT_ALIASES = {"mp3": "mp3_44100_128", "opus": "opus_48000_64", "pcm": "pcm_24000"}


class _Runtime(Protocol):
    def get_setting(self, key: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class ElevenLabsConfig:
    """Everything one agent's ElevenLabs voice needs."""

    api_key: SecretStr
    voice_id: str
    model_id: str
    stability: float
    similarity_boost: float
    style: float
    use_speaker_boost: bool
    optimize_streaming_latency: int
    """0 (best quality) to 4 (fastest; the text normaliser is off, so numbers may be misread)."""
    output_format: str
    """One of :data:`OUTPUT_FORMATS`."""
    base_url: str
    timeout_s: float
    """Longest wait for the connection or for the next piece of audio."""

    def __repr__(self) -> str:
        return (
            f"ElevenLabsConfig(voice_id={self.voice_id!r}, model_id={self.model_id!r}, "
            f"output_format={self.output_format!r}, base_url={self.base_url!r}, api_key=<redacted>)"
        )


def resolve_config(runtime: _Runtime, *, agent: str) -> ElevenLabsConfig | None:
    """This agent's ElevenLabs settings; ``None`` when it has no ``ELEVENLABS_API_KEY``.

    ``agent`` is the name messages use. Raises :class:`~bot.kernel.errors.ConfigError` naming the
    agent, the setting and what it may be; the message never includes the key.
    """
    s = _Settings(runtime.get_setting, agent)
    # ELEVENLABS_XI_API_KEY is what plugin-elevenlabs 0.x read; old character files still carry it.
    key = s.optional("ELEVENLABS_API_KEY") or s.optional("ELEVENLABS_XI_API_KEY")
    if key is None:
        return None
    return ElevenLabsConfig(
        api_key=SecretStr(key),
        voice_id=s.get("ELEVENLABS_VOICE_ID", DEFAULT_VOICE_ID),
        model_id=s.get("ELEVENLABS_MODEL_ID", DEFAULT_MODEL_ID),
        stability=s.number("ELEVENLABS_VOICE_STABILITY", 0.5, 0, 1),
        similarity_boost=s.number("ELEVENLABS_VOICE_SIMILARITY_BOOST", 0.75, 0, 1),
        style=s.number("ELEVENLABS_VOICE_STYLE", 0.0, 0, 1),
        use_speaker_boost=s.flag("ELEVENLABS_VOICE_USE_SPEAKER_BOOST", True),
        optimize_streaming_latency=s.whole("ELEVENLABS_OPTIMIZE_STREAMING_LATENCY", 0, 0, 4),
        output_format=s.output_format("ELEVENLABS_OUTPUT_FORMAT", "mp3_44100_128"),
        base_url=s.url("ELEVENLABS_BASE_URL", DEFAULT_BASE_URL),
        timeout_s=s.positive_float("ELEVENLABS_TIMEOUT_S", 30.0),
    )


class _Settings(SettingReader):
    """Typed, validated reads, plus the shapes only this plugin has."""

    def output_format(self, key: str, default: str) -> str:
        raw = self.get(key, default)
        value = _FORMAT_ALIASES.get(raw.lower(), raw.lower())
        if value not in OUTPUT_FORMATS:
            raise ConfigError(f"{key} is {raw!r}; use one of {', '.join(OUTPUT_FORMATS)}", agent=self.agent)
        return value

    def url(self, key: str, default: str) -> str:
        raw = self.get(key, default)
        parts = urlsplit(raw)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            # The value is not quoted: an address can carry credentials.
            raise ConfigError(f"{key} must be an http(s) address such as {default}", agent=self.agent)
        return raw.rstrip("/")
