"""Speech with each character's own ElevenLabs voice.

``setup(runtime)`` reads the agent's ``ELEVENLABS_*`` settings (:func:`resolve_config`), opens
one ``elevenlabs.AsyncElevenLabs`` client and registers a TEXT_TO_SPEECH handler as provider
``elevenlabs`` at priority 100, above plugins/openai (50): when ElevenLabs refuses (bad key,
unknown voice, quota exhausted) the runtime falls back to OpenAI's speech.

An agent without ``ELEVENLABS_API_KEY`` gets no handler (one info line says so), so listing the
plugin for every character is harmless. The client closes when the runtime does.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.sdk import PluginMeta

from ._config import DEFAULT_MODEL_ID, DEFAULT_VOICE_ID, OUTPUT_FORMATS, ElevenLabsConfig, resolve_config

if TYPE_CHECKING:
    from bot.sdk import ModelHost, SettingsView

__all__ = [
    "DEFAULT_MODEL_ID",
    "DEFAULT_VOICE_ID",
    "ElevenLabsConfig",
    "OUTPUT_FORMATS",
    "check",
    "meta",
    "resolve_config",
    "setup",
]

_log = logging.getLogger(__name__)

# Tracebacks and reprs show the public path (as bot.store does).
ElevenLabsConfig.__module__ = __name__

meta = PluginMeta(
    name="elevenlabs",
    description="text to speech with the character's ElevenLabs voice (ELEVENLABS_API_KEY, ELEVENLABS_VOICE_ID)",
    aliases=("@elizaos/plugin-elevenlabs",),
)


def check(settings: SettingsView) -> None:
    """Raise :class:`~bot.kernel.errors.ConfigError` if a setting is out of range or not a number."""
    resolve_config(settings, agent=settings.agent)


async def setup(runtime: ModelHost) -> None:
    """Register this agent's TEXT_TO_SPEECH handler, if it has an ElevenLabs key.

    Raises:
        ConfigError: a setting is out of range or not a number; the message names the agent,
            the setting and what it may be.

    Makes no network call: a wrong key or voice shows up at the first speech, and the runtime
    then falls back to the next TEXT_TO_SPEECH provider.
    """
    agent = runtime.character.name
    config = resolve_config(runtime, agent=agent)
    if config is None:
        _log.info("%s: no ELEVENLABS_API_KEY, so no ElevenLabs voice (speech falls back to other plugins)", agent)
        return
    # The SDK is imported here, not at the top, so that discovering ``meta`` stays cheap.
    from ._speech import ElevenLabsSpeech

    speech = ElevenLabsSpeech(config, agent=agent)
    runtime.on_close(speech.aclose)
    speech.register(runtime)
    _log.info("%s: ElevenLabs voice %s (%s, %s)", agent, config.voice_id, config.model_id, config.output_format)
