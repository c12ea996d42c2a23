"""TRANSCRIBE_MEDIA and CHAT_WITH_ATTACHMENTS over what was shared in the room."""

from __future__ import annotations

import uuid

from bot.kernel.content import Attachment, Content
from bot.kernel.errors import ModelError
from bot.kernel.types import ChannelType, Memory
from bot.runtime.components import State

from .harness import HUMAN, Harness, plan
from .test_events_and_attachments import media_models


async def shared_earlier(h: Harness, *attachments: Attachment) -> None:
    """A message with ``attachments`` (already read) stored in the room before the request."""
    memory = Memory(
        id=str(uuid.uuid4()),
        entity_id=HUMAN,
        room_id=h.room,
        content=Content(text="here", source="discord", attachments=attachments),
    )
    await h.rt.store.create_memory(memory, "messages")


def request(h: Harness, text: str) -> Memory:
    return Memory(id=str(uuid.uuid4()), entity_id=HUMAN, room_id=h.room, content=Content(text=text))


def sent_texts(h: Harness) -> list[str]:
    return [str(c.get("text")) for c in h.sent]


async def test_transcribe_media_sends_the_transcript_of_the_voice_message_just_shared(harness) -> None:
    h = await harness(ChannelType.DM)
    media_models(h)

    async def fetch(item: dict) -> bytes:
        return b"RIFF-voice"

    h.large.append(plan("Sure.", "REPLY,TRANSCRIBE_MEDIA"))
    attachments = [Attachment(id="v1", url="tg://voice", title="voice.ogg")]
    await h.say("transcribe this please", attachments=attachments, fetch=fetch)
    assert sent_texts(h) == ["Sure.", "Here is the transcript of voice.ogg:\n```md\nsee you at noon\n```"]
    assert h.sent[1]["actions"] == ["TRANSCRIBE_MEDIA_RESPONSE"]


async def test_transcribe_media_picks_the_recording_named_and_reads_a_video_s_words(harness) -> None:
    h = await harness(ChannelType.DM)
    await shared_earlier(
        h,
        Attachment(
            id="clip-1",
            url="x",
            title="standup.mp4",
            content_type="video/mp4",
            text="Transcript of its sound: ship on Friday",
        ),
        Attachment(id="memo-2", url="y", title="memo.ogg", content_type="audio/ogg", text="buy milk"),
    )
    h.large.append(plan("", "TRANSCRIBE_MEDIA"))
    await h.say("what was said in standup.mp4? transcript please")
    assert sent_texts(h) == ["Here is the transcript of standup.mp4:\n```md\nship on Friday\n```"]
    h.large.append(plan("", "TRANSCRIBE_MEDIA"))
    await h.say("and the newest recording?")
    assert sent_texts(h)[-1] == "Here is the transcript of memo.ogg:\n```md\nbuy milk\n```"


async def test_transcribe_media_says_when_a_recording_was_never_heard(harness) -> None:
    h = await harness(ChannelType.DM)
    await shared_earlier(h, Attachment(id="old", url="x", title="old.ogg", content_type="audio/ogg"))
    h.large.append(plan("", "TRANSCRIBE_MEDIA"))
    await h.say("transcribe old.ogg")
    assert sent_texts(h) == [
        "I couldn't hear old.ogg: it came before I was listening, or could not be transcribed. Share it again and ask me."
    ]


async def test_media_actions_are_offered_only_for_their_requests_and_only_with_attachments(harness) -> None:
    h = await harness(ChannelType.DM)
    transcribe, chat = h.rt.actions["TRANSCRIBE_MEDIA"], h.rt.actions["CHAT_WITH_ATTACHMENTS"]
    assert transcribe.validate and chat.validate
    assert not await transcribe.validate(h.rt, request(h, "transcribe this"), State())
    assert not await chat.validate(h.rt, request(h, "summarize the file"), State())
    await shared_earlier(h, Attachment(id="a", url="x", title="a.ogg", content_type="audio/ogg", text="hi"))
    assert await transcribe.validate(h.rt, request(h, "transcribe this"), State())
    assert not await transcribe.validate(h.rt, request(h, "hello"), State())
    assert await chat.validate(h.rt, request(h, "summarize the file"), State())
    assert not await chat.validate(h.rt, request(h, "hello"), State())


REPORT = Attachment(
    id="pdf-1",
    url="https://cdn.example/report.pdf",
    title="report.pdf",
    content_type="application/pdf",
    description="PDF document",
    text="Revenue rose 12 percent. " * 4000,  # ~100,000 characters
)
PAGE = Attachment(id="link-ab", url="https://news.example/a", title="Otters", content_type="link", text="Otters nap.")


async def test_chat_with_attachments_answers_from_their_text_in_one_bounded_call(harness) -> None:
    h = await harness(ChannelType.DM)
    await shared_earlier(h, REPORT, PAGE)
    h.large.append(plan("", "CHAT_WITH_ATTACHMENTS"))
    h.small.append("- Revenue rose 12 percent.\n- Otters nap.")
    await h.say("summarize the attachments")
    assert sent_texts(h) == ["- Revenue rose 12 percent.\n- Otters nap."]
    assert h.sent[0]["actions"] == ["CHAT_WITH_ATTACHMENTS_RESPONSE"]
    assert h.small_calls == 1
    prompt = h.prompts[-1]
    assert "Sam: summarize the attachments" in prompt and "Otters nap." in prompt and "report.pdf" in prompt
    assert len(prompt) < 26_000  # the 100,000-character PDF was cut


async def test_chat_with_attachments_reads_only_the_one_named(harness) -> None:
    h = await harness(ChannelType.DM)
    await shared_earlier(h, REPORT, PAGE)
    h.large.append(plan("", "CHAT_WITH_ATTACHMENTS"))
    h.small.append("They nap.")
    await h.say("what does the link https://news.example/a say about otters?")
    assert "Otters nap." in h.prompts[-1] and "Revenue" not in h.prompts[-1]


async def test_chat_with_attachments_says_so_when_the_model_fails(harness) -> None:
    h = await harness(ChannelType.DM)
    await shared_earlier(h, PAGE)
    h.large.append(plan("", "CHAT_WITH_ATTACHMENTS"))
    h.small.append(ModelError("the small model is down"))
    outcome = await h.say("summarize the link")
    assert outcome.status == "acted"  # the message was handled; the action says what went wrong
    assert sent_texts(h) == ["I couldn't read those just now; ask me again in a moment."]


async def test_a_long_transcript_is_a_line_and_a_markdown_file_of_its_words(harness) -> None:
    h = await harness(ChannelType.DM)
    words = " ".join(f"word{i}" for i in range(400))  # about 3,300 characters
    await shared_earlier(
        h, Attachment(id="m-1", url="x", title="Board Meeting.ogg", content_type="audio/ogg", text=words)
    )
    h.large.append(plan("", "TRANSCRIBE_MEDIA"))
    await h.say("transcribe the meeting")
    [sent] = h.sent
    assert sent["text"] == (
        "Here is the transcript of Board Meeting.ogg (400 words): it is long, so it is in "
        "transcript-board-meeting-ogg.md."
    )
    [file] = sent["files"]
    assert file.filename == "transcript-board-meeting-ogg.md" and file.content_type == "text/markdown"
    assert file.data.decode() == f"# Transcript of Board Meeting.ogg\n\n{words}\n"


async def test_a_long_answer_about_attachments_is_a_line_and_a_markdown_file(harness) -> None:
    h = await harness(ChannelType.DM)
    await shared_earlier(h, REPORT, PAGE)
    h.large.append(plan("", "CHAT_WITH_ATTACHMENTS"))
    answer = "\n".join(f"- finding {i}: " + "detail " * 25 for i in range(12))  # about 2,300 characters
    h.small.append(answer)
    await h.say("summarize the attachments in detail")
    [sent] = h.sent
    assert sent["text"] == "About report.pdf and 1 more: my answer is long, so it is in about-report-pdf.md."
    [file] = sent["files"]
    assert file.filename == "about-report-pdf.md" and file.data.decode() == answer.strip()
