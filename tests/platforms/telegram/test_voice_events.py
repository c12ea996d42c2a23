"""Voice notes as a plugin hears them on Telegram: one heard (VOICE_MESSAGE_RECEIVED, with its
transcript) and the spoken answer (VOICE_MESSAGE_SENT). Copy the test to follow spoken talk."""

from __future__ import annotations

from bot.runtime.events import MessageReceived, VoiceMessageReceived, VoiceMessageSent

from .scene import plan, until
from .test_voice import Speech, voice_file


async def test_a_voice_note_heard_and_answered_aloud(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    rt = s.runtime("Ada")
    heard: list[str] = []

    async def on_message(event: MessageReceived) -> None:
        heard.append(f"message: {event.message.content.text}")

    async def on_voice(event: VoiceMessageReceived) -> None:
        heard.append(f"voice: {event.message.content.text}")

    async def on_spoken(event: VoiceMessageSent) -> None:
        heard.append(f"said: {event.message.content.text}")

    rt.on(MessageReceived, on_message)
    rt.on(VoiceMessageReceived, on_voice)
    rt.on(VoiceMessageSent, on_spoken)
    s.openai.script_transcription("Is it raining?")
    s.openai.script_speech(Speech(1.0))
    s.brain.plans["Ada"].append(plan("Not a drop."))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), voice=(voice_file(1.0), 1))
    await s.fake.wait_for_sent(s.ada, 2, timeout=60)  # the text, then the voice note
    await until(lambda: "said: Not a drop." in heard, timeout=60)
    assert heard == ["message: Is it raining?", "voice: Is it raining?", "said: Not a drop."]
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "typed, not said")
    await until(lambda: "message: typed, not said" in heard, timeout=60)
    assert not any(h.startswith("voice: typed") for h in heard)
