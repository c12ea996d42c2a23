"""Speech with each character's own ElevenLabs voice."""

from bot.plugins import PluginMeta

__all__ = ["meta"]

meta = PluginMeta(
    name="elevenlabs",
    description="text to speech with the character's ElevenLabs voice (ELEVENLABS_API_KEY, ELEVENLABS_VOICE_ID)",
    aliases=("@elizaos/plugin-elevenlabs",),
)
