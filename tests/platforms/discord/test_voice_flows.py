"""Discord voice flows end to end, beyond test_voice.py's join-by-asking: ``/join`` and ``/leave``,
joining at start, barge-in, speaking replies to typed text, two characters in one channel with
their own voices, and listening with DAVE (end-to-end encryption) on — the daemon, unmodified
discord.py and the openai client against the local fakes of Discord (voice gateway over TLS, RTP
over UDP) and of an OpenAI-compatible API."""

from __future__ import annotations

import asyncio
import io
import time
import wave
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.media.audio import DISCORD_PCM, OpusDecoder, OpusEncoder, StreamDecoder, frame_level_db
from platforms.discord._mapping import discord_id

from ...bot.audio._signals import encode_file, silence, speech, tone
from ...fakes.discord_voice import FakeVoiceServer, VoicePacket
from .scene import Scene, open_scene, plan, until

FRAMES_PER_S = 50  # 20 ms Opus frames


def voice_settings(s: Scene, **extra: str) -> dict[str, str]:
    return {
        "DISCORD_VOICE_ENABLED": "true",
        "VOICE_SILENCE_S": "0.4",
        "VOICE_MIN_SPEECH_S": "0.3",
        "DISCORD_CA_FILE": s.fake.voice.ca_file,
        **extra,
    }


def clip(seconds: float, freq: float = 330.0) -> bytes:
    """What the fake TTS answers for one sentence: a tone, as mp3."""
    return encode_file(tone(freq, seconds, DISCORD_PCM), DISCORD_PCM, "mp3", "libmp3lame")


def frames_of(mp3: bytes) -> int:
    """How many 20 ms Opus frames ``mp3`` makes when spoken (decoded and encoded as the player does)."""
    decoder, encoder = StreamDecoder("mp3", DISCORD_PCM), OpusEncoder()
    return len(encoder.encode(decoder.feed(mp3) + decoder.flush()) + encoder.flush())


def spoken_packets(seconds: float = 1.5, *, seed: int = 1) -> list[bytes]:
    """A person's speech as Opus frames (about -20 dBFS in its syllables)."""
    encoder = OpusEncoder()
    pcm = speech(seconds, DISCORD_PCM, seed=seed) + silence(0.1, DISCORD_PCM)
    return encoder.encode(pcm) + encoder.flush()


def voice_of(packets: list[VoicePacket]) -> list[VoicePacket]:
    return [p for p in packets if not p.silence]


def level_db(packets: list[VoicePacket]) -> float:
    decoder = OpusDecoder()
    return frame_level_db(b"".join(decoder.decode(p.opus) for p in packets))


def speech_requests(s: Scene) -> list[dict[str, Any]]:
    assert s.openai is not None
    return [r.json for r in s.openai.requests_for("speech")]


async def ask_aloud(s: Scene, person: Any, transcript: str, *, seconds: float = 1.0) -> None:
    """``person`` says something in voice that the fake transcribes as ``transcript``."""
    assert s.openai is not None
    s.openai.script_transcription(transcript)
    await s.fake.voice.user_speaks(person, spoken_packets(seconds), pace=0.005, silence_frames=0)


# -- /join and /leave -------------------------------------------------------------------------


async def test_slash_join_follows_the_person_or_the_option_and_slash_leave_leaves(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    quiet = s.fake.add_channel(s.guild, "Quiet room", "voice")
    await s.start(voice_settings(s), with_brann=False)

    # Cleo is in no voice channel and names none: nothing to join, said privately.
    nowhere = await s.fake.invoke_command(s.cleo, s.general, s.ada, "join")
    answer = (await s.fake.wait_for_response(nowhere))[0]
    assert answer.payload["data"]["content"] == "Join which voice channel? Name one, or join one first."
    assert answer.payload["data"]["flags"] == 64
    assert s.fake.voice.session(s.ada) is None

    # Sam is in General: /join without an option joins him there.
    await s.fake.user_joins_voice(s.sam, voice_general)
    joined = await s.fake.invoke_command(s.sam, s.general, s.ada, "join")
    first = await s.fake.voice.wait_connected(s.ada, voice_general, timeout=60)
    deferred, followup = await s.fake.wait_for_response(joined, 2)
    assert (deferred.kind, deferred.type) == ("callback", 5)  # "thinking…" while connecting
    assert followup.kind == "followup" and followup.payload["content"] == "Joined General."
    assert s.fake.voice_state(s.ada, s.guild).channel is voice_general
    adapter = s.runtime("Ada").get_service("discord")
    assert adapter.voice.sessions[s.guild.id].text_channel.id == s.general.id  # its text side: where /join was

    # The option names another channel: Ada moves there (one voice connection per server).
    moved = await s.fake.invoke_command(s.sam, s.general, s.ada, "join", options={"channel": quiet})
    second = await s.fake.voice.wait_connected(s.ada, quiet, timeout=60)
    assert second is not first and first.ended
    assert (await s.fake.wait_for_response(moved, 2))[1].payload["content"] == "Joined Quiet room."
    assert s.fake.voice_state(s.ada, s.guild).channel is quiet

    left = await s.fake.invoke_command(s.sam, s.general, s.ada, "leave")
    answer = (await s.fake.wait_for_response(left))[0]
    assert answer.payload["data"]["content"] == "Left Quiet room." and answer.payload["data"]["flags"] == 64
    await until(lambda: not s.fake.voice.is_connected(s.ada))
    assert s.fake.voice_state(s.ada, s.guild) is None and s.guild.id not in adapter.voice.sessions

    again = await s.fake.invoke_command(s.sam, s.general, s.ada, "leave")
    assert (await s.fake.wait_for_response(again))[0].payload["data"]["content"] == "I'm not in a voice channel here."


# -- joining at start -------------------------------------------------------------------------


async def test_the_voice_channel_in_the_settings_is_joined_at_start_when_someone_is_there(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    await s.fake.user_joins_voice(s.sam, voice_general)  # before the character starts
    # DISCORD_VOICE_CHANNEL_ID alone switches voice on: no DISCORD_VOICE_ENABLED.
    await s.start(
        {"DISCORD_VOICE_CHANNEL_ID": str(voice_general.id), "DISCORD_CA_FILE": s.fake.voice.ca_file}, with_brann=False
    )
    session = await s.fake.voice.wait_connected(s.ada, voice_general, timeout=60)
    assert session.mode == "aead_xchacha20_poly1305_rtpsize"
    assert s.fake.voice_state(s.ada, s.guild).channel is voice_general
    # Nobody asked: no message anywhere, no model call.
    assert s.ada.sent == [] and s.fake.messages_in(s.general) == [] and s.openai.requests_for("chat") == []
    rt = s.runtime("Ada")
    voice = await until(lambda: rt.get_service("discord").voice.sessions.get(s.guild.id))
    assert voice.channel.id == voice_general.id and voice.room_id == discord_id(rt.agent_id, voice_general.id)
    assert voice.text_channel is voice.channel  # no text channel asked it in: it writes in the voice channel's chat
    assert voice.receiver is not None  # listening (DISCORD_VOICE_LISTEN defaults to on)

    # Stopping the daemon leaves the channel, without waiting for a confirmation that cannot come.
    began = time.monotonic()
    assert await s.stop() == 0
    assert time.monotonic() - began < 2.0  # no 3 s wait for a confirmation that cannot come
    assert session.ended and s.fake.voice_state(s.ada, s.guild) is None


# -- barge-in ---------------------------------------------------------------------------------

LONG_REPLY = "First we gather the whole crew. Then we load the ship with food. At dawn we sail for the islands."
SENTENCE_S = 0.6
SENTENCE = clip(SENTENCE_S)
FULL_REPLY_FRAMES = 3 * frames_of(SENTENCE)  # 1.8 s and a little padding


async def started_a_long_reply(s: Scene, extra: dict[str, str]) -> tuple[Any, Any]:
    """Ada in voice, asked aloud by Sam, speaking LONG_REPLY (three sentences of SENTENCE_S each)."""
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    await s.start(voice_settings(s, DISCORD_VOICE_CHANNEL_ID=str(voice_general.id), **extra), with_brann=False)
    await s.fake.user_joins_voice(s.sam, voice_general)  # she joins him there
    session = await s.fake.voice.wait_connected(s.ada, voice_general, timeout=60)
    # Cleo listens in: with Sam alone with Ada, all he says would be for her (test_voice_presence.py).
    await s.fake.user_joins_voice(s.cleo, voice_general)
    s.brain.plans["Ada"].append(plan(LONG_REPLY))
    assert s.openai is not None
    s.openai.script_speech(SENTENCE)
    await ask_aloud(s, s.sam, "Ada, what is the plan?")
    await s.fake.voice.wait_for_packets(s.ada, 10, timeout=60)  # she is speaking
    assert [r["input"] for r in speech_requests(s)] == [
        "First we gather the whole crew.",
        "Then we load the ship with food.",
        "At dawn we sail for the islands.",
    ]
    # What Sam says over her is not for Ada: heard, transcribed, and (small model) ignored.
    s.openai.script_transcription("hold on, let me think")
    return session, s.runtime("Ada").get_service("discord").voice.sessions[s.guild.id].player


async def test_speaking_over_the_character_stops_it(scene) -> None:
    s = scene
    session, player = await started_a_long_reply(s, {})  # VOICE_BARGE_IN_DB: -40 dBFS by default
    started = voice_of(session.packets)[0].arrived
    await s.fake.voice.user_speaks(s.sam, spoken_packets(0.8), pace=0.02)  # about -20 dBFS, real time
    # Stopped: discord.py says SPEAKING 0 when its player ends, and nothing more is queued.
    await until(lambda: session.speaking[-1].get("speaking") == 0 and not player.speaking)
    sent = len(voice_of(session.packets))
    assert 10 <= sent < FULL_REPLY_FRAMES * 2 // 3, sent
    # By when the whole reply would have been over, none of the rest of it came.
    remaining = started + FULL_REPLY_FRAMES / FRAMES_PER_S + 0.3 - time.monotonic()
    await asyncio.sleep(max(0.0, remaining))
    assert len(voice_of(session.packets)) == sent
    await until(lambda: len(s.openai.requests_for("transcriptions")) == 2)  # Sam was still heard


async def test_talking_over_a_reply_as_it_starts_stops_it_and_the_character_still_speaks_afterwards(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    await s.start(voice_settings(s), with_brann=False)
    await s.fake.user_joins_voice(s.sam, voice_general)
    joined = await s.fake.invoke_command(s.sam, s.general, s.ada, "join")
    session = await s.fake.voice.wait_connected(s.ada, voice_general, timeout=60)
    await s.fake.wait_for_response(joined, 2)
    player = s.runtime("Ada").get_service("discord").voice.sessions[s.guild.id].player
    s.openai.script_speech(clip(1.0), clip(0.4))
    await s.fake.user_joins_voice(s.cleo, voice_general)  # not alone with Sam: his "mm-hm" is not for her
    s.openai.script_transcription("mm-hm, right")  # what Sam says is not for Ada: ignored

    # Sam is talking (steadily, -20 dBFS) when Ada starts to answer what he typed: 200 ms into her
    # answer she stops, before its one sentence is over and while no more sentences are coming.
    encoder = OpusEncoder()
    talking = encoder.encode(tone(180.0, 1.5, DISCORD_PCM, level_db=-20)) + encoder.flush()
    talking_over = asyncio.create_task(s.fake.voice.user_speaks(s.sam, talking, pace=0.02))
    await until(lambda: s.fake.voice.participant_ssrc(s.sam) in session.announced)
    s.brain.plans["Ada"].append(plan("We sail at dawn, all of us together."))
    await s.fake.user_says(s.sam, s.general, "Ada, what's the plan?")
    await s.fake.wait_for_sent(s.ada, 1)
    await until(lambda: session.speaking[-1].get("speaking") == 0 and not player.speaking)
    stopped_at = len(voice_of(session.packets))
    assert stopped_at < FRAMES_PER_S * 3 // 4, stopped_at  # well before the 1 s sentence's end
    await talking_over

    # She can still speak: the next answer (0.4 s) is heard in full.
    s.brain.plans["Ada"].append(plan("Yes, at dawn."))
    await s.fake.user_says(s.sam, s.general, "Ada, when?")
    assert (await s.fake.wait_for_sent(s.ada, 2))[1].content == "Yes, at dawn."
    frames = await s.fake.voice.wait_for_packets(s.ada, stopped_at + 20 - 2, timeout=60)
    assert level_db(frames[stopped_at:]) > -40
    assert [r["input"] for r in speech_requests(s)] == ["We sail at dawn, all of us together.", "Yes, at dawn."]


@pytest.mark.parametrize(
    "threshold",
    [{"VOICE_BARGE_IN_DB": "-10"}, {"VOICE_ACTIVITY_THRESHOLD": "0.3"}],  # 0.3 of full scale: -10.5 dBFS
    ids=["dBFS", "elizaOS amplitude"],
)
async def test_speaking_over_the_character_more_quietly_than_the_barge_in_threshold_does_not_stop_it(
    scene, threshold: dict[str, str]
) -> None:
    s = scene
    # Sam's voice peaks about -18 dBFS: below a -10 dBFS threshold it never interrupts.
    session, player = await started_a_long_reply(s, threshold)
    await s.fake.voice.user_speaks(s.sam, spoken_packets(0.8), pace=0.02)
    assert len(voice_of(session.packets)) < FULL_REPLY_FRAMES - 10  # he spoke over her, all the time
    await until(lambda: session.speaking[-1].get("speaking") == 0 and not player.speaking, timeout=60)
    frames = voice_of(session.packets)
    assert len(frames) == FULL_REPLY_FRAMES  # the whole reply
    assert level_db(frames) > -40
    await until(lambda: len(s.openai.requests_for("transcriptions")) == 2)  # and he was heard


# -- typed text in the linked text channel is spoken too --------------------------------------


async def test_replies_in_the_text_channel_linked_to_voice_are_also_spoken(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    await s.start(voice_settings(s), with_brann=False)
    await s.fake.user_joins_voice(s.sam, voice_general)
    joined = await s.fake.invoke_command(s.sam, s.general, s.ada, "join")  # from #general
    session = await s.fake.voice.wait_connected(s.ada, voice_general, timeout=60)
    await s.fake.wait_for_response(joined, 2)
    s.openai.script_speech(clip(0.5))

    # #lounge is not the voice session's text side: answered in writing only.
    s.brain.plans["Ada"].append(plan("Just writing here."))
    await s.fake.user_says(s.sam, s.lounge, "Ada, are you around?")
    assert (await s.fake.wait_for_sent(s.ada, 1))[0].content == "Just writing here."

    s.brain.plans["Ada"].append(plan("We sail at dawn. The sea will be kind to us."))
    await s.fake.user_says(s.sam, s.general, "Ada, tell me about the voyage")
    reply = (await s.fake.wait_for_sent(s.ada, 2))[1]
    assert reply.channel is s.general and reply.content == "We sail at dawn. The sea will be kind to us."
    frames = await s.fake.voice.wait_for_packets(s.ada, 40, timeout=60)
    assert level_db(frames) > -40  # the reply's audio, not silence
    assert [r["input"] for r in speech_requests(s)] == ["We sail at dawn.", "The sea will be kind to us."]
    assert session.speaking and any(p.get("speaking") for p in session.speaking)


# -- two characters, each in its own voice ----------------------------------------------------


async def test_two_characters_in_one_voice_channel_answer_aloud_each_in_its_own_voice(scene) -> None:
    s = scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    join = voice_settings(s, DISCORD_VOICE_CHANNEL_ID=str(voice_general.id))
    await s.start({**join, "OPENAI_TTS_VOICE": "shimmer"}, brann_settings={**join, "OPENAI_TTS_VOICE": "onyx"})
    await s.fake.user_joins_voice(s.sam, voice_general)  # both join him: it is each one's channel
    await s.fake.voice.wait_connected(s.ada, voice_general, timeout=60)
    await s.fake.voice.wait_connected(s.brann, voice_general, timeout=60)
    s.brain.plans["Ada"].append(plan("Hello from Ada, the navigator."))
    s.brain.plans["Brann"].append(plan("Brann here, ready to sail."))
    s.openai.script_speech(clip(0.5, 330.0))

    await ask_aloud(s, s.sam, "Ada and Brann, say hello")
    ada_frames = await s.fake.voice.wait_for_packets(s.ada, 20, timeout=60)
    brann_frames = await s.fake.voice.wait_for_packets(s.brann, 20, timeout=60)
    assert level_db(ada_frames) > -40 and level_db(brann_frames) > -40
    assert sorted((r["input"], r["voice"]) for r in speech_requests(s)) == [
        ("Brann here, ready to sail.", "onyx"),
        ("Hello from Ada, the navigator.", "shimmer"),
    ]

    # Each heard Sam once, and neither transcribes the other character: the fake relays each
    # bot's audio to the other, but bots are not listened to. Once both are done speaking, an
    # utterance would end VOICE_SILENCE_S later.
    players = [s.runtime(n).get_service("discord").voice.sessions[s.guild.id].player for n in ("Ada", "Brann")]
    await until(lambda: not any(p.speaking for p in players))
    await asyncio.sleep(0.4 + 0.3)
    assert len(s.openai.requests_for("transcriptions")) == 2


# -- DAVE -------------------------------------------------------------------------------------


@pytest.fixture
async def dave_scene(tmp_path: Path) -> AsyncIterator[Scene]:
    async with open_scene(tmp_path, voice=FakeVoiceServer(dave=True)) as opened:
        yield opened


def wav_level_and_duration(data: bytes) -> tuple[float, float]:
    with wave.open(io.BytesIO(data)) as w:
        frames, rate = w.readframes(w.getnframes()), w.getframerate()
        assert w.getsampwidth() == 2
        return frame_level_db(frames), w.getnframes() / rate


async def test_listening_and_answering_with_dave_end_to_end_encryption(dave_scene) -> None:
    s = dave_scene
    voice_general = s.fake.add_channel(s.guild, "General", "voice")
    await s.start(voice_settings(s, DISCORD_VOICE_CHANNEL_ID=str(voice_general.id)), with_brann=False)
    await s.fake.user_joins_voice(s.sam, voice_general)
    session = await s.fake.voice.wait_connected(s.ada, voice_general, timeout=60)
    assert session.identify["max_dave_protocol_version"] == 1 and session.dave_protocol_version == 1
    await s.fake.voice.wait_dave(s.ada)  # Ada and Sam in one MLS group, its transition executed
    assert sorted(s.fake.voice.dave_members(s.guild, voice_general)) == sorted([s.ada.id, s.sam.id])
    assert s.fake.voice.participant_dave(s.sam).ready  # so Sam's frames go out end-to-end encrypted

    s.brain.plans["Ada"].append(plan("I hear you through the encryption."))
    s.openai.script_speech(clip(0.5))
    await ask_aloud(s, s.sam, "Ada, can you hear me?", seconds=1.2)
    frames = await s.fake.voice.wait_for_packets(s.ada, 20, timeout=60)

    # Heard: Sam's DAVE frames were decrypted into his speech, not fed to the decoder as they came.
    (transcription,) = s.openai.requests_for("transcriptions")
    level, seconds = wav_level_and_duration(transcription.fields["file"].data)
    assert level > -35 and 0.8 < seconds < 2.5, (level, seconds)
    receiver = s.runtime("Ada").get_service("discord").voice.sessions[s.guild.id].receiver
    assert receiver.packets >= 50 and receiver.dropped == 0 and receiver._dave_failures == 0
    # Answered aloud, end to end: every frame of the reply was a DAVE frame Sam's client could open.
    assert all(p.dave and p.dave_error is None for p in frames)
    assert level_db(frames) > -40
    assert [r["input"] for r in speech_requests(s)] == ["I hear you through the encryption."]
    assert not s.fake.voice.dave_errors
