"""Voice on Telegram, end to end: voice notes, audio files and round videos are transcribed
before the character decides anything, and replies are also spoken as Ogg/Opus voice notes when
the person spoke (or TELEGRAM_VOICE_REPLIES says always)."""

from __future__ import annotations

import array
import asyncio
import logging
import math
from typing import Any

import pytest

from bot.kernel.types import Memory, RoomState
from bot.media.audio import PcmFormat, decode_audio, ogg_opus
from platforms.telegram._mapping import room_id

from ...fakes.openai_server import Fail
from .scene import plan, until

MONO_48K = PcmFormat(48000, 1)


def tone(seconds: float, rate: int = 48000, hz: float = 440.0) -> bytes:
    """``seconds`` of a sine tone as s16le mono PCM."""
    count = int(seconds * rate)
    return array.array("h", (int(9000 * math.sin(2 * math.pi * hz * i / rate)) for i in range(count))).tobytes()


def voice_file(seconds: float = 1.0) -> bytes:
    return ogg_opus(tone(seconds), MONO_48K)


def seconds_of(ogg: bytes) -> float:
    return len(decode_audio(ogg, MONO_48K)) / (MONO_48K.rate * 2)


class Speech:
    """The fake speech endpoint's answers: an Ogg/Opus tone; remembers what it was asked."""

    def __init__(self, seconds: float = 1.5) -> None:
        self.audio = voice_file(seconds)
        self.asked: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> bytes:
        self.asked.append(body)
        return self.audio


async def messages_in(scene: Any, chat_id: int) -> list[Memory]:
    rt = scene.runtime("Ada")
    found = await rt.store.get_memories(table="messages", room_id=room_id(rt.agent_id, chat_id), count=20)
    return list(reversed(found))  # oldest first


async def test_a_voice_note_is_heard_and_answered_in_text_and_as_a_voice_note(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    speech = Speech(1.5)
    s.openai.script_transcription("What's the weather like today?")
    s.openai.script_speech(speech)
    s.brain.plans["Ada"].append(plan("It's **sunny** today."))
    note = voice_file(1.0)
    chat = s.fake.private(s.sam, s.ada)
    asked = await s.fake.user_says(s.sam, chat, voice=(note, 1))

    sent = await s.fake.wait_for_sent(s.ada, 2, timeout=60)
    text, voice = sent
    assert (text["kind"], text["text"], text["reply_to"]) == ("text", "It's sunny today.", asked["message_id"])
    assert (voice["kind"], voice["reply_to"]) == ("voice", asked["message_id"])
    assert voice["voice"].startswith(b"OggS") and b"OpusHead" in voice["voice"]
    assert 1.3 < seconds_of(voice["voice"]) < 1.7 and voice["duration"] == 2
    assert (chat.id, "record_voice") in s.ada.actions

    # Heard once, before the pipeline: the model's prompt has the words.
    heard = s.openai.requests_for("transcriptions")
    assert len(heard) == 1 and heard[0].fields["file"].data == note and heard[0].fields["file"].filename == "voice.ogg"
    assert any("What's the weather like today?" in p and "Write the next turn of Ada" in p for p in s.brain.prompts)
    # The voice note says the reply's words, not its Markdown, and Opus was asked for.
    assert [(a["input"], a["response_format"]) for a in speech.asked] == [("It's sunny today.", "opus")]

    async def stored() -> list[Memory]:
        memories = await messages_in(s, chat.id)
        reply = memories[-1] if memories else None
        return memories if reply is not None and reply.content.attachments else []

    async with asyncio.timeout(60):
        while not (memories := await stored()):
            await asyncio.sleep(0.02)
    incoming, reply = memories[0], memories[-1]
    assert incoming.content.text == "What's the weather like today?" and incoming.content.is_voice_message
    [heard_item] = incoming.content.attachments or ()
    assert heard_item.transcribed and heard_item.text == "What's the weather like today?"
    [spoken] = reply.content.attachments or ()
    assert spoken.id == voice["message"]["voice"]["file_id"] and spoken.text == "It's sunny today."
    assert "token" not in str(spoken) and (spoken.url or "").startswith("telegram:file:")


async def test_a_name_said_aloud_in_a_group_addresses_the_character(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.openai.script_transcription("Ada, can you hear me?")
    s.openai.script_speech(Speech())
    s.brain.plans["Ada"].append(plan("Loud and clear."))
    await s.fake.user_says(s.sam, s.group, voice=(voice_file(), 1))
    sent = await s.fake.wait_for_sent(s.ada, 2, timeout=60)
    assert [m["kind"] for m in sent] == ["text", "voice"] and sent[0]["text"] == "Loud and clear."
    assert not any("Decide what Ada does" in p for p in s.brain.prompts)  # named: no small-model gate


async def test_a_muted_character_stays_quiet_unless_a_voice_note_names_it(scene) -> None:
    s = scene
    await s.start({"TELEGRAM_VOICE_REPLIES": "never"}, with_brann=False)
    s.brain.plans["Ada"] += [plan("Going quiet.", "REPLY,MUTE_ROOM"), plan("Yes?")]
    await s.fake.user_says(s.sam, s.group, "@ada_bot be quiet")
    await s.fake.wait_for_sent(s.ada, 1)
    await s.state_becomes("Ada", s.group.id, RoomState.MUTED)
    s.openai.script_transcription("so anyway, the ending", "Ada, one question")
    await s.fake.user_says(s.sam, s.group, voice=(voice_file(), 1))
    await until(lambda: len(s.openai.requests_for("transcriptions")) == 1)
    await asyncio.sleep(0.3)
    assert len(s.ada.sent) == 1
    await s.fake.user_says(s.sam, s.group, voice=(voice_file(), 1))
    assert (await s.fake.wait_for_sent(s.ada, 2, timeout=60))[1]["text"] == "Yes?"


async def test_a_caption_comes_before_the_transcript(scene) -> None:
    s = scene
    await s.start({"TELEGRAM_VOICE_REPLIES": "never"}, with_brann=False)
    s.openai.script_transcription("and the second half")
    s.brain.plans["Ada"].append(plan("Got both."))
    chat = s.fake.private(s.sam, s.ada)
    await s.fake.user_says(s.sam, chat, "First half", voice=(voice_file(), 1))
    await s.fake.wait_for_sent(s.ada, 1, timeout=60)
    assert any("First half\nand the second half" in p for p in s.brain.prompts)


async def test_voice_replies_never_sends_text_only(scene) -> None:
    s = scene
    await s.start({"TELEGRAM_VOICE_REPLIES": "never"}, with_brann=False)
    s.openai.script_transcription("Hello there")
    s.brain.plans["Ada"].append(plan("Hi Sam."))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), voice=(voice_file(), 1))
    await s.fake.wait_for_sent(s.ada, 1, timeout=60)
    await asyncio.sleep(0.3)
    assert [m["kind"] for m in s.ada.sent] == ["text"] and not s.openai.requests_for("speech")
    assert all(action != "record_voice" for _, action in s.ada.actions)


async def test_voice_replies_always_speaks_a_typed_message_too(scene) -> None:
    s = scene
    await s.start({"TELEGRAM_VOICE_REPLIES": "always"}, with_brann=False)
    s.openai.script_speech(Speech())
    s.brain.plans["Ada"].append(plan("Typed, and spoken."))
    asked = await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "just typing")
    sent = await s.fake.wait_for_sent(s.ada, 2, timeout=60)
    assert [(m["kind"], m["reply_to"]) for m in sent] == [("text", asked["message_id"]), ("voice", asked["message_id"])]
    assert not s.openai.requests_for("transcriptions")


async def test_a_typed_message_gets_no_voice_note_by_default(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(plan("Just text."))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "hello")
    await s.fake.wait_for_sent(s.ada, 1)
    await asyncio.sleep(0.3)
    assert [m["kind"] for m in s.ada.sent] == ["text"] and not s.openai.requests_for("speech")


async def test_an_audio_file_is_transcribed_but_not_answered_by_voice(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.openai.script_transcription("a recorded lecture")
    s.brain.plans["Ada"].append(plan("Nice lecture."))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), audio=("talk.mp3", b"ID3-not-really", "audio/mpeg"))
    await s.fake.wait_for_sent(s.ada, 1, timeout=60)
    await asyncio.sleep(0.3)
    assert [m["kind"] for m in s.ada.sent] == ["text"]  # a shared recording is not the person speaking
    [heard] = s.openai.requests_for("transcriptions")
    assert heard.fields["file"].filename == "talk.mp3"
    assert any("a recorded lecture" in p for p in s.brain.prompts)


async def test_a_round_video_is_heard_and_answered_by_voice(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.openai.script_transcription("look at this")
    s.openai.script_speech(Speech())
    s.brain.plans["Ada"].append(plan("I see it."))
    await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), video_note=(b"\x00\x00\x00\x18ftypmp42", 3))
    sent = await s.fake.wait_for_sent(s.ada, 2, timeout=60)
    assert [m["kind"] for m in sent] == ["text", "voice"]
    assert s.openai.requests_for("transcriptions")[0].fields["file"].filename == "video_note.mp4"


async def test_speech_failing_leaves_the_text_reply_and_a_warning(scene, caplog) -> None:
    s = scene
    await s.start(with_brann=False)
    s.openai.script_transcription("Are you there?")
    s.openai.script_speech(Fail(400, message="voice not available"))
    s.brain.plans["Ada"].append(plan("I am."))
    with caplog.at_level(logging.WARNING):
        await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), voice=(voice_file(), 1))
        await s.fake.wait_for_sent(s.ada, 1, timeout=60)
        await until(lambda: "without a voice note" in caplog.text)
    assert [m["text"] for m in s.ada.sent] == ["I am."]
    assert "Ada: the reply in a private chat" in caplog.text and "went out as text only" in caplog.text


async def test_speech_that_is_not_audio_leaves_the_text_reply(scene, caplog) -> None:
    s = scene
    await s.start({"TELEGRAM_VOICE_REPLIES": "always"}, with_brann=False)  # the fake's default: not audio
    s.brain.plans["Ada"].append(plan("Still here."))
    with caplog.at_level(logging.WARNING):
        await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), "hi")
        await s.fake.wait_for_sent(s.ada, 1, timeout=60)
        await until(lambda: "without a voice note" in caplog.text)
    assert [m["kind"] for m in s.ada.sent] == ["text"] and "cannot decode audio" in caplog.text


async def test_transcription_failing_does_not_lose_the_message(scene, caplog) -> None:
    s = scene
    await s.start(with_brann=False)
    s.openai.script_transcription(Fail(400, message="unsupported audio"))
    s.openai.script_speech(Speech())
    s.brain.plans["Ada"].append(plan("Sorry, I could not listen to that."))
    with caplog.at_level(logging.WARNING):
        await s.fake.user_says(s.sam, s.fake.private(s.sam, s.ada), voice=(voice_file(), 1))
        sent = await s.fake.wait_for_sent(s.ada, 2, timeout=60)
    assert [m["kind"] for m in sent] == ["text", "voice"]
    assert "Ada: could not transcribe a voice message in a private chat" in caplog.text
    # Left to the core, which tried once more when it answered.
    assert len(s.openai.requests_for("transcriptions")) == 2


async def test_nothing_heard_is_a_message_without_words(scene) -> None:
    s = scene
    await s.start({"TELEGRAM_VOICE_REPLIES": "never"}, with_brann=False)
    s.openai.script_transcription("")
    s.brain.plans["Ada"].append(plan("I heard nothing."))
    chat = s.fake.private(s.sam, s.ada)
    await s.fake.user_says(s.sam, chat, voice=(voice_file(), 1))
    await s.fake.wait_for_sent(s.ada, 1, timeout=60)
    assert len(s.openai.requests_for("transcriptions")) == 1  # not transcribed a second time
    incoming = (await messages_in(s, chat.id))[0]
    assert incoming.content.text == "" and (incoming.content.attachments or ())[0].transcribed


async def test_a_voice_note_outside_the_allowed_chats_is_not_even_transcribed(scene) -> None:
    s = scene
    other = s.fake.add_group("Elsewhere", members=[s.sam, s.ada])
    await s.start({"TELEGRAM_ALLOWED_CHATS": f'["{s.group.id}"]'}, with_brann=False)
    s.openai.script_transcription("Ada, hello?")
    await s.fake.user_says(s.sam, other, voice=(voice_file(), 1))
    await until(lambda: s.ada.polls >= 3)
    await asyncio.sleep(0.2)
    assert not s.openai.requests_for("transcriptions") and not s.ada.sent


# -- SEND_MESSAGE: spoken too only with TELEGRAM_VOICE_REPLIES=always ---------------------------

_TO_CLEO = (
    "<response><targetType>user</targetType><target>Cleo</target><source>telegram</source>"
    "<message>The meeting moved to 3pm.</message></response>"
)


async def _cleo_is_known(s: Any) -> Any:
    """Cleo speaks in the group (Ada lets it pass), so Ada can write to her; her private chat."""
    await s.fake.user_says(s.cleo, s.group, "morning all")
    await until(lambda: any("Decide what Ada does" in p for p in s.brain.prompts), timeout=60)
    return s.fake.private(s.cleo, s.ada)


def _kinds(bot: Any, chat: Any) -> list[tuple[str, str]]:
    return [(m["kind"], m["text"]) for m in bot.sent if m["chat_id"] == chat.id]


async def test_voice_replies_always_speaks_what_send_message_delivers_after_its_text(scene) -> None:
    s = scene
    await s.start({"TELEGRAM_VOICE_REPLIES": "always"}, with_brann=False)
    speech = Speech()
    s.openai.script_speech(speech)
    cleo = await _cleo_is_known(s)
    s.brain.plans["Ada"].append(plan("Will do.", "REPLY,SEND_MESSAGE"))
    s.brain.targets = [_TO_CLEO]
    await s.fake.user_says(s.sam, s.group, "@ada_bot tell Cleo the meeting moved to 3pm")

    # Everything Ada sends is spoken: the reply, the message to Cleo, the confirmation.
    await s.fake.wait_for_sent(s.ada, 6, timeout=60)
    assert _kinds(s.ada, cleo) == [("text", "The meeting moved to 3pm."), ("voice", "")]
    assert _kinds(s.ada, s.group) == [
        ("text", "Will do."),
        ("voice", ""),
        ("text", "Message sent to Cleo on telegram."),
        ("voice", ""),
    ]
    to_cleo = [m for m in s.ada.sent if m["chat_id"] == cleo.id]
    assert to_cleo[1]["reply_to"] is None and to_cleo[1]["voice"].startswith(b"OggS")  # unasked: quotes nothing
    assert "The meeting moved to 3pm." in [a["input"] for a in speech.asked]

    async def stored() -> list[Memory]:
        found = await messages_in(s, cleo.id)
        return found if found and found[-1].content.attachments else []

    async with asyncio.timeout(60):
        while not (memories := await stored()):
            await asyncio.sleep(0.02)
    [sent] = memories
    [spoken] = sent.content.attachments or ()
    assert sent.content.text == "The meeting moved to 3pm." and sent.content.actions == ("SEND_MESSAGE",)
    assert spoken.id == to_cleo[1]["message"]["voice"]["file_id"]
    assert spoken.description == "Voice note of this message" and spoken.text == "The meeting moved to 3pm."


async def test_voice_replies_auto_speaks_replies_to_a_voice_message_but_not_what_send_message_delivers(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    speech = Speech()
    s.openai.script_speech(speech)
    cleo = await _cleo_is_known(s)
    s.openai.script_transcription("Ada, tell Cleo the meeting moved to 3pm")
    s.brain.plans["Ada"].append(plan("Will do.", "REPLY,SEND_MESSAGE"))
    s.brain.targets = [_TO_CLEO]
    await s.fake.user_says(s.sam, s.group, voice=(voice_file(), 1))

    await s.fake.wait_for_sent(s.ada, 5, timeout=60)
    await asyncio.sleep(0.3)  # nothing more comes
    assert _kinds(s.ada, cleo) == [("text", "The meeting moved to 3pm.")]  # she did not speak to Ada
    assert _kinds(s.ada, s.group) == [
        ("text", "Will do."),
        ("voice", ""),
        ("text", "Message sent to Cleo on telegram."),
        ("voice", ""),
    ]
    assert "The meeting moved to 3pm." not in [a["input"] for a in speech.asked]


async def test_voice_replies_never_sends_what_send_message_delivers_as_text_only(scene) -> None:
    s = scene
    await s.start({"TELEGRAM_VOICE_REPLIES": "never"}, with_brann=False)
    s.openai.script_speech(Speech())
    cleo = await _cleo_is_known(s)
    s.openai.script_transcription("Ada, tell Cleo the meeting moved to 3pm")
    s.brain.plans["Ada"].append(plan("Will do.", "REPLY,SEND_MESSAGE"))
    s.brain.targets = [_TO_CLEO]
    await s.fake.user_says(s.sam, s.group, voice=(voice_file(), 1))

    await s.fake.wait_for_sent(s.ada, 3, timeout=60)
    await asyncio.sleep(0.3)
    assert _kinds(s.ada, cleo) == [("text", "The meeting moved to 3pm.")]
    assert _kinds(s.ada, s.group) == [("text", "Will do."), ("text", "Message sent to Cleo on telegram.")]
    assert not s.openai.requests_for("speech")


async def test_speech_failing_for_a_send_message_delivery_keeps_the_text_and_warns_once(scene, caplog) -> None:
    s = scene
    await s.start({"TELEGRAM_VOICE_REPLIES": "always"}, with_brann=False)
    s.openai.script_speech(Fail(400, message="voice not available"))
    cleo = await _cleo_is_known(s)
    s.brain.plans["Ada"].append(plan("Will do.", "REPLY,SEND_MESSAGE"))
    s.brain.targets = [_TO_CLEO]
    with caplog.at_level(logging.WARNING, logger="platforms.telegram._adapter"):
        await s.fake.user_says(s.sam, s.group, "@ada_bot tell Cleo the meeting moved to 3pm")
        await until(lambda: ("text", "Message sent to Cleo on telegram.") in _kinds(s.ada, s.group), timeout=60)
        await until(lambda: caplog.text.count("went out as text only") == 3)  # the two replies and the delivery
    assert _kinds(s.ada, cleo) == [("text", "The meeting moved to 3pm.")]
    assert (
        caplog.text.count(
            f"Ada: the message in a private chat (chat {cleo.id}) went out as text only, without a voice note: "
        )
        == 1
    )
    assert [m["kind"] for m in s.ada.sent] == ["text"] * 3


# -- audio over the 20 MB the Bot API lets bots download ------------------------------------

_25_MB = 25 * 1024 * 1024


async def _heard(s: Any, chat: Any) -> Memory:
    """The incoming message as stored (the first in the chat)."""
    async with asyncio.timeout(60):
        while not (found := await messages_in(s, chat.id)):
            await asyncio.sleep(0.02)
    return found[0]


@pytest.mark.parametrize(
    ("kind", "media", "label"),
    [
        ("voice", (b"OggS-only-a-few-bytes", 1800), "voice message"),
        ("audio", ("podcast.mp3", b"ID3-only-a-few-bytes", "audio/mpeg"), "audio file"),
    ],
)
async def test_audio_over_20_mb_is_never_downloaded_and_the_character_is_told(
    scene, caplog, kind: str, media: tuple[Any, ...], label: str
) -> None:
    s = scene
    await s.start({"TELEGRAM_VOICE_REPLIES": "never"}, with_brann=False)
    s.brain.plans["Ada"].append(plan("That one is too long for me to listen to."))
    chat = s.fake.private(s.sam, s.ada)
    with caplog.at_level(logging.INFO, logger="platforms"):
        await s.fake.user_says(s.sam, chat, file_size=_25_MB, **{kind: media})
        sent = await s.fake.wait_for_sent(s.ada, 1, timeout=60)
    assert [m["text"] for m in sent] == ["That one is too long for me to listen to."]
    # Not fetched at all, not even asked about: the update said how big it is.
    assert "getFile" not in [method for method, _ in s.ada.requests] and s.ada.downloads == []
    assert not s.openai.requests_for("transcriptions")
    # What the character saw when it wrote its reply.
    [prompt] = [p for p in s.brain.prompts if "Write the next turn of Ada" in p]
    assert f"A {label} too large to listen to: it is larger than the 20 MB the Telegram Bot API" in prompt
    incoming = await _heard(s, chat)
    [item] = incoming.content.attachments or ()
    assert item.transcribed and item.text == "" and "20 MB" in (item.description or "")
    assert bool(incoming.content.is_voice_message) is (kind == "voice")
    assert caplog.text.count(f"Ada: a {label} in a private chat (chat {chat.id}) is larger than the 20 MB") == 1
    assert "could not read audio attachment" not in caplog.text  # the core did not try again


@pytest.mark.parametrize(
    "max_download",
    [
        20 * 1024 * 1024,  # api.telegram.org: getFile answers 400 "file is too big"
        None,  # a local Bot API server (TELEGRAM_API_ROOT): getFile answers, with the size
    ],
)
async def test_audio_whose_update_has_no_size_is_not_downloaded_when_get_file_says_it_is_over_20_mb(
    scene, caplog, max_download: int | None
) -> None:
    s = scene
    s.fake.max_download = max_download
    await s.start(with_brann=False)
    s.openai.script_speech(Speech())
    s.brain.plans["Ada"].append(plan("Too long for me, sorry."))
    chat = s.fake.private(s.sam, s.ada)
    with caplog.at_level(logging.INFO, logger="platforms"):
        asked = await s.fake.user_says(
            s.sam, chat, voice=(b"OggS-only-a-few-bytes", 1800), file_size=_25_MB, file_size_in_message=False
        )
        sent = await s.fake.wait_for_sent(s.ada, 2, timeout=60)
    assert "file_size" not in asked["voice"]
    # Still a voice message: answered in text, then by voice.
    assert [(m["kind"], m["reply_to"]) for m in sent] == [("text", asked["message_id"]), ("voice", asked["message_id"])]
    # Asked about once (by the adapter; the core did not ask again), never downloaded.
    assert [method for method, _ in s.ada.requests].count("getFile") == 1 and s.ada.downloads == []
    assert not s.openai.requests_for("transcriptions")
    [prompt] = [p for p in s.brain.prompts if "Write the next turn of Ada" in p]
    assert "A voice message too large to listen to" in prompt
    [item] = (await _heard(s, chat)).content.attachments or ()
    assert item.transcribed and "20 MB" in (item.description or "")
    assert caplog.text.count(f"Ada: a voice message in a private chat (chat {chat.id}) is larger than the 20 MB") == 1
    assert "could not transcribe" not in caplog.text
