"""PDFs and videos shared in chat: made in the tests, read before answering, bounded, never crashing."""

from __future__ import annotations

from typing import Any

import pytest

import plugins.openai
from bot.kernel.content import Attachment
from bot.kernel.types import ChannelType
from plugins.core import _attachments
from tests.fakes.openai_server import FakeOpenAIServer
from tests.media_files import encrypted_pdf, make_docx, make_pdf, make_video, protected_docx

from .harness import Harness, plan


def fetcher(files: dict[str, bytes]) -> Any:
    async def fetch(item: dict) -> bytes:
        return files[item["id"]]

    return fetch


def counting_fetcher() -> tuple[Any, list[str]]:
    """A fetch that downloads nothing, and the ids it was asked for."""
    fetched: list[str] = []

    async def fetch(item: dict) -> bytes:
        fetched.append(item["id"])
        return b""

    return fetch, fetched


async def stored(h: Harness) -> dict[str | None, Attachment]:
    messages = await h.rt.store.get_memories(table="messages", room_id=h.room)
    return {a.id: a for m in messages for a in m.content.attachments or ()}


async def test_a_pdf_in_chat_is_read_into_the_prompt(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(plan("A short report."))
    attachments = [Attachment(id="p", url="https://cdn.example/report.pdf", title="report.pdf")]
    await h.say("summary?", attachments=attachments, fetch=fetcher({"p": make_pdf("Sales rose by 12 percent")}))
    assert "Sales rose by 12 percent" in h.prompts[-1]
    assert (await stored(h))["p"].description == "PDF document"


async def test_encrypted_and_broken_pdfs_are_described_and_the_reply_goes_out(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(plan("I cannot open those."))
    files = {"locked": encrypted_pdf(), "broken": b"%PDF-1.4\nnot really a pdf"}
    attachments = [
        Attachment(id="locked", url="x", content_type="application/pdf"),
        Attachment(id="broken", url="y", title="broken.pdf"),
    ]
    outcome = await h.say("read these", attachments=attachments, fetch=fetcher(files))
    assert outcome.status == "replied"
    by_id = await stored(h)
    assert by_id["locked"].description == (
        "PDF not read: an encrypted PDF that needs a password; save an unencrypted copy"
    )
    assert (by_id["broken"].description or "").startswith("PDF not read: not a readable PDF")
    assert "PDF not read: an encrypted PDF" in h.prompts[-1]


async def test_a_word_document_in_chat_is_read_into_the_prompt_and_a_bad_one_described(harness) -> None:
    h = await harness(ChannelType.DM)
    h.large.append(plan("A short plan."))
    files = {
        "w": make_docx("# Plan", "Sales rose by 12 percent.", [["Quarter", "Sales"], ["Q3", "140"]]),
        "locked": protected_docx(),
        "broken": b"PK\x03\x04 not really a docx",
    }
    attachments = [
        Attachment(id="w", url="https://cdn.example/plan.docx", title="plan.docx"),
        Attachment(
            id="locked",
            url="x",
            content_type="application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        Attachment(id="broken", url="y", title="broken.docx"),
    ]
    outcome = await h.say("summary?", attachments=attachments, fetch=fetcher(files))
    assert outcome.status == "replied"
    assert "# Plan\n\nSales rose by 12 percent.\n\n| Quarter | Sales |\n| --- | --- |\n| Q3 | 140 |" in h.prompts[-1]
    by_id = await stored(h)
    assert by_id["w"].description == "Word document"
    assert by_id["locked"].description == (
        "Word document not read: a Word document protected by a password; save an unprotected copy"
    )
    assert by_id["broken"].description == (
        "Word document not read: not a Word document (.docx files are zip archives, this is not one)"
    )


def looks_at_images(body: dict) -> bool:
    content = body["messages"][-1]["content"]
    return isinstance(content, list) and any(part.get("type") == "image_url" for part in content)


def answers(description: str, reply: str) -> Any:
    """The fake server's chat: the description for an image, else a plan replying ``reply``."""
    return lambda body: description if looks_at_images(body) else plan(reply)


def prompts(server: FakeOpenAIServer) -> str:
    return "\n".join(str(r.json["messages"]) for r in server.requests_for("chat") if not looks_at_images(r.json))


@pytest.fixture
async def openai_media(harness) -> Any:
    """A harness whose models (all of them: the plugin's handlers come first) are the OpenAI
    plugin's, talking to the fake server."""
    async with FakeOpenAIServer() as server:
        h = await harness(ChannelType.DM)
        h.rt.set_setting("OPENAI_API_KEY", "sk-test-media-0001")
        h.rt.set_setting("OPENAI_BASE_URL", server.url)
        await plugins.openai.setup(h.rt)
        yield h, server


async def test_a_short_video_is_heard_and_looked_at_through_the_model_server(openai_media) -> None:
    h, server = openai_media
    server.script_chat(
        *[answers('{"title": "Orange", "description": "An orange rectangle fills the frame."}', "Nice tone.")] * 3
    )
    attachments = [Attachment(id="v", url="https://cdn.example/clip.mp4", content_type="video/mp4")]
    await h.say("what's in this?", attachments=attachments, fetch=fetcher({"v": make_video(1.0)}))

    (upload,) = server.requests_for("transcriptions")
    assert upload.fields is not None
    assert upload.fields["file"].filename == "video-sound.wav" and upload.fields["file"].data.startswith(b"RIFF")
    (look,) = [r for r in server.requests_for("chat") if looks_at_images(r.json)]
    image = next(p for p in look.json["messages"][-1]["content"] if p.get("type") == "image_url")
    assert image["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    video = (await stored(h))["v"]
    assert video.description == "Video (1 s). A frame from its middle: An orange rectangle fills the frame."
    assert (video.text or "").startswith("Transcript of its sound: transcript of video-sound.wav (")
    assert "An orange rectangle fills the frame." in prompts(server)


async def test_videos_over_the_limits_are_described_by_size_and_length_only(openai_media, monkeypatch) -> None:
    h, server = openai_media
    monkeypatch.setattr(_attachments, "MAX_VIDEO_S", 1)
    server.script_chat(*[answers("", "Too long for me.")] * 3)
    files = {"long": make_video(2.0), "huge": b"\0" * (25 * 1024 * 1024 + 1)}
    attachments = [
        Attachment(id="long", url="x", title="long.mp4"),
        Attachment(id="huge", url="y", content_type="video/quicktime"),
    ]
    outcome = await h.say("watch", attachments=attachments, fetch=fetcher(files))
    assert outcome.status == "replied"
    assert server.requests_for("transcriptions") == []
    assert not any(looks_at_images(r.json) for r in server.requests_for("chat"))
    by_id = await stored(h)
    assert (by_id["long"].description or "").endswith("2 s long: too long to watch (the limit is 1 s)")
    assert by_id["huge"].description == "Video, 25.0 MB: too large to watch (the limit is 25.0 MB)"


async def test_a_silent_video_and_a_broken_one_do_not_crash(openai_media) -> None:
    h, server = openai_media
    server.script_chat(*[answers('{"title": "Orange", "description": "Orange."}', "Seen.")] * 3)
    files = {"mute": make_video(1.0, sound=False), "bad": b"\x00\x00\x00\x18ftypmp42 broken"}
    attachments = [
        Attachment(id="mute", url="x", content_type="video/mp4"),
        Attachment(id="bad", url="y", content_type="video/mp4"),
    ]
    assert (await h.say("clips", attachments=attachments, fetch=fetcher(files))).status == "replied"
    by_id = await stored(h)
    assert by_id["mute"].text == "Nothing was heard in it." and server.requests_for("transcriptions") == []
    assert (by_id["bad"].description or "").startswith("Video not read: cannot open the video")


async def test_a_video_declared_too_large_is_described_without_downloading_it(harness) -> None:
    h = await harness(ChannelType.DM)
    fetch, fetched = counting_fetcher()
    h.large.append(plan("Too big."))
    attachments = [Attachment(id="big", url="x", content_type="video/mp4", size=300 * 1024 * 1024)]
    await h.say("look", attachments=attachments, fetch=fetch)
    assert fetched == []
    assert (await stored(h))["big"].description == "Video, 300.0 MB: too large to watch (the limit is 25.0 MB)"


async def test_no_attachment_declared_over_its_limit_is_downloaded(harness, caplog) -> None:
    h = await harness(ChannelType.DM)
    fetch, fetched = counting_fetcher()
    h.large.append(plan("Too big."))
    attachments = [
        Attachment(id="pdf", url="x", content_type="application/pdf", size=21 * 1024 * 1024),
        Attachment(id="img", url="y", content_type="image/png", size=11 * 1024 * 1024, private=True),
    ]
    assert (await h.say("look", attachments=attachments, fetch=fetch)).status == "replied"
    assert fetched == []
    assert "could not read pdf attachment pdf: 22020096 bytes, more than the 20971520 read for pdf" in caplog.text
