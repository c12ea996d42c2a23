"""Discord voice end to end: a character asked in text joins a voice channel, hears a person
(real encrypted RTP packets from the fake voice server), transcribes, answers aloud in 20 ms
Opus frames, and leaves — the daemon, discord.py, and the openai client against local fakes."""

from __future__ import annotations

import asyncio
import itertools

from bot.media.audio import DISCORD_PCM, OpusDecoder, OpusEncoder, frame_level_db
from platforms.discord._mapping import discord_id
from platforms.discord._voice_actions import find_voice_channel

from ...bot.audio._signals import encode_file, silence, speech, tone
from .scene import plan, until

VOICE = {"DISCORD_VOICE_ENABLED": "true", "VOICE_SILENCE_S": "0.4", "VOICE_MIN_SPEECH_S": "0.3"}


def spoken_packets(seconds: float = 1.5) -> list[bytes]:
    encoder = OpusEncoder()
    pcm = speech(seconds, DISCORD_PCM) + silence(0.1, DISCORD_PCM)
    return encoder.encode(pcm) + encoder.flush()


def test_the_voice_channel_is_found_by_name_or_by_where_the_person_is() -> None:
    class Channel:
        def __init__(self, name: str) -> None:
            self.name = name

    general, afk = Channel("General"), Channel("AFK corner")
    assert find_voice_channel([general, afk], "join the general voice channel please") is general
    assert find_voice_channel([general, afk], "come to the AFK-corner!") is afk
    assert find_voice_channel([general, afk], "join the channel I'm in", afk) is afk
    assert find_voice_channel([general, afk], "hello") is None


async def test_join_listen_answer_aloud_and_leave(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    await s.start({**VOICE, "DISCORD_CA_FILE": s.fake.voice.ca_file}, with_brann=False)
    rt = s.runtime("Ada")
    s.brain.plans["Ada"] += [
        plan("Coming!", "REPLY,JOIN_VOICE"),
        plan("The plan is simple. We sail at dawn, all of us."),
    ]
    await s.fake.user_says(s.sam, s.general, "Ada, join the General voice channel")
    await s.fake.voice.wait_connected(s.ada, voice_general, timeout=60)
    assert (await s.fake.wait_for_sent(s.ada, 1))[0].content == "Coming!"

    await s.fake.user_joins_voice(s.sam, voice_general)
    s.openai.script_transcription("Ada, what is the plan?")
    said = encode_file(tone(330.0, 0.6, DISCORD_PCM), DISCORD_PCM, "mp3", "libmp3lame")
    s.openai.script_speech(*[said] * 4)  # one clip per sentence
    await s.fake.voice.user_speaks(s.sam, spoken_packets(), pace=0.005, silence_frames=0)
    frames = await s.fake.voice.wait_for_packets(s.ada, 50, timeout=60)
    steps = {(b.timestamp - a.timestamp) % 2**32 for a, b in itertools.pairwise(frames)}
    assert steps == {960}  # 20 ms Opus frames, back to back
    decoder = OpusDecoder()
    audio = b"".join(decoder.decode(p.opus) for p in frames)
    assert frame_level_db(audio) > -40  # the reply's audio, not silence
    assert len(s.openai.requests_for("transcriptions")) == 1

    room = discord_id(rt.agent_id, voice_general.id)
    async with asyncio.timeout(60):
        while True:
            texts = [m.content.text for m in await rt.store.get_memories(table="messages", room_id=room)]
            if "Ada, what is the plan?" in texts and "The plan is simple. We sail at dawn, all of us." in texts:
                break
            await asyncio.sleep(0.02)
    planning = [p for p in s.brain.prompts if "Write the next turn of Ada" in p]
    assert "Ada, what is the plan?" in planning[-1]

    s.brain.plans["Ada"].append(plan("Bye for now.", "REPLY,LEAVE_VOICE"))
    await s.fake.user_says(s.sam, s.general, "Ada, please leave the voice channel")
    await until(lambda: not s.fake.voice.is_connected(s.ada), timeout=60)
