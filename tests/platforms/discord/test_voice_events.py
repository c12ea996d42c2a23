"""Voice as a plugin hears it on Discord: what a person says in a voice channel, transcribed
(VOICE_MESSAGE_RECEIVED), and the character's answer said aloud (VOICE_MESSAGE_SENT). Copy the
test to follow spoken talk."""

from __future__ import annotations

from bot.media.audio import DISCORD_PCM
from bot.runtime.events import VoiceMessageReceived, VoiceMessageSent

from ...bot.audio._signals import encode_file, tone
from .scene import plan, until
from .test_voice import VOICE, spoken_packets


async def test_words_heard_and_said_in_a_voice_channel(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    await s.start({**VOICE, "DISCORD_CA_FILE": s.fake.voice.ca_file}, with_brann=False)
    rt = s.runtime("Ada")
    heard: list[str] = []

    async def on_heard(event: VoiceMessageReceived) -> None:
        heard.append(f"heard: {event.message.content.text}")

    async def on_said(event: VoiceMessageSent) -> None:
        heard.append(f"said: {event.message.content.text}")

    rt.on(VoiceMessageReceived, on_heard)
    rt.on(VoiceMessageSent, on_said)
    s.brain.plans["Ada"] += [plan("Coming!", "REPLY,JOIN_VOICE"), plan("We sail at dawn.")]
    await s.fake.user_says(s.sam, s.general, "Ada, join the General voice channel")
    await s.fake.voice.wait_connected(s.ada, voice_general, timeout=60)
    await s.fake.user_joins_voice(s.sam, voice_general)
    s.openai.script_transcription("Ada, what is the plan?")
    s.openai.script_speech(encode_file(tone(330.0, 0.6, DISCORD_PCM), DISCORD_PCM, "mp3", "libmp3lame"))
    await s.fake.voice.user_speaks(s.sam, spoken_packets(), pace=0.005, silence_frames=0)
    await until(lambda: "said: We sail at dawn." in heard, timeout=60)
    assert heard == ["heard: Ada, what is the plan?", "said: We sail at dawn."]  # "Coming!" was typed
