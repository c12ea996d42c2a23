"""Bookkeeping events (reactions, edits, deletions, presence), attachments, and the run timeout."""

from __future__ import annotations

import asyncio
import copy
import logging
import uuid
from typing import Any, cast

from bot.kernel.content import Attachment, Content
from bot.kernel.models import ModelType
from bot.kernel.types import ChannelType, Memory
from bot.runtime.events import (
    ChannelCleared,
    EntityJoined,
    EntityLeft,
    MessageDeleted,
    MessageUpdated,
    ReactionReceived,
    RunTimeout,
)
from plugins.core._attachments import attachment_kind

from .harness import HUMAN, Harness, plan


def memory(h: Harness, text: str, id: str | None = None) -> Memory:
    return Memory(
        id=id or str(uuid.uuid4()), entity_id=HUMAN, room_id=h.room, content=Content(text=text, source="discord")
    )


async def texts(h: Harness) -> list[str]:
    return [cast(str, m.content.text) for m in await h.rt.store.get_memories(table="messages", room_id=h.room)]


# -- bookkeeping events ----------------------------------------------------------------------


async def test_reactions_are_stored_once(harness) -> None:
    h = await harness()
    reaction = memory(h, "*reacted 👍*")
    await h.rt.emit(ReactionReceived(message=reaction, source="discord"))
    await h.rt.emit(ReactionReceived(message=reaction, source="discord"))  # redelivered after a reconnect
    assert await texts(h) == ["*reacted 👍*"]


async def test_edits_replace_the_text_and_unknown_edits_are_stored(harness) -> None:
    h = await harness()
    original = memory(h, "teh cat")
    await h.rt.store.create_memory(original, "messages")
    await h.rt.emit(MessageUpdated(message=memory(h, "the cat", id=original.id), source="discord"))
    stored = await h.rt.store.get_memory(original.id)
    assert stored.content.text == "the cat" and stored.content.source == "discord"
    assert isinstance(stored.metadata.edited_at, int)
    await h.rt.emit(MessageUpdated(message=memory(h, "never seen before"), source="discord"))
    assert sorted(await texts(h)) == ["never seen before", "the cat"]


async def test_deletions_and_cleared_channels_remove_messages(harness, caplog) -> None:
    h = await harness()
    first, second = memory(h, "one"), memory(h, "two")
    for m in (first, second):
        await h.rt.store.create_memory(m, "messages")
    await h.rt.emit(MessageDeleted(message_id=str(first.id), room_id=h.room, source="discord"))
    assert await texts(h) == ["two"]
    with caplog.at_level(logging.ERROR):
        await h.rt.emit(MessageDeleted(message_id="", source="discord"))  # nothing to delete: logged, never raised
    assert "MESSAGE_DELETED without a message id" in caplog.text
    await h.rt.emit(ChannelCleared(room_id=h.room, source="discord"))
    assert await texts(h) == []


async def test_people_leaving_and_coming_back(harness) -> None:
    h = await harness()
    await h.rt.emit(EntityLeft(entity_id=HUMAN, source="discord"))
    sam = await h.rt.store.get_entity(HUMAN)
    assert sam.metadata.status == "INACTIVE" and isinstance(sam.metadata.left_at, int)
    await h.rt.emit(EntityJoined(entity_id=HUMAN, source="discord"))
    assert (await h.rt.store.get_entity(HUMAN)).metadata.status == "ACTIVE"
    await h.rt.emit(EntityLeft(entity_id=str(uuid.uuid4()), source="discord"))  # unknown: nothing to do


# -- attachments -----------------------------------------------------------------------------


def media_models(h: Harness) -> list[tuple[str, Any]]:
    calls: list[tuple[str, Any]] = []

    async def describe(runtime: Any, params: dict) -> dict:
        calls.append(("image", params["image_url"]))
        return {"title": "A cat", "description": "A ginger cat asleep on a keyboard."}

    async def transcribe(runtime: Any, params: dict) -> str:
        calls.append(("audio", params["audio"]))
        return " see you at noon "

    h.rt.register_model(ModelType.IMAGE_DESCRIPTION, describe, "script")
    h.rt.register_model(ModelType.TRANSCRIPTION, transcribe, "script")
    return calls


async def test_attachments_are_described_transcribed_and_read_before_answering(harness) -> None:
    h = await harness(ChannelType.DM)
    calls = media_models(h)
    files = {"a2": b"RIFF-voice", "a3": b"line one\nline two\n", "a4": b"\x89PNG..."}
    fetched: list[str] = []

    async def fetch(item: dict) -> bytes:
        fetched.append(item["id"])
        return files[item["id"]]

    attachments = [
        Attachment(id="a1", url="https://cdn.example/cat.png", content_type="image/png"),
        Attachment(id="a2", url="tg://voice", title="voice.ogg"),
        Attachment(id="a3", url="https://cdn.example/notes.txt", title="notes.txt", content_type="text/plain"),
        Attachment(id="a4", url="https://cdn.example/secret.png", content_type="image/png", private=True),
        Attachment(id="a5", url="https://cdn.example/archive.zip", content_type="application/zip"),
    ]
    h.large.append(plan("Cute cat!"))
    await h.say("look", attachments=attachments, fetch=fetch)
    assert sorted(fetched) == ["a2", "a3", "a4"]  # public images go to the model by URL
    assert ("image", "https://cdn.example/cat.png") in calls and ("audio", b"RIFF-voice") in calls
    assert ("image", "data:image/png;base64,iVBORy4uLg==") in calls
    stored = (await h.rt.store.get_memories(table="messages", room_id=h.room))[-1].content.attachments
    by_id = {a.id: a for a in stored or ()}
    assert by_id["a1"].description == "A ginger cat asleep on a keyboard." and by_id["a1"].title == "A cat"
    assert by_id["a2"].text == "see you at noon"
    assert by_id["a3"].text == "line one\nline two\n" and by_id["a3"].title == "notes.txt"
    assert "description" not in by_id["a5"].to_json()
    # The planning prompt heard about them.
    assert "[a1 - A cat (https://cdn.example/cat.png)]" in h.prompts[-1]


async def test_attachment_failures_leave_the_attachment_and_the_reply_goes_out(harness, caplog) -> None:
    h = await harness(ChannelType.DM)
    media_models(h)

    async def fetch(item: dict) -> bytes:
        if item["id"] == "big":
            return b"x" * (2 * 1024 * 1024)
        raise ConnectionError("https://api.telegram.org/file/bot123:SECRET/voice.ogg unreachable")

    attachments = [
        Attachment(id="v", url="x", content_type="audio/ogg"),
        Attachment(id="big", url="y", title="big.txt"),
    ]
    h.large.append(plan("Sorry, I couldn't open those."))
    with caplog.at_level(logging.WARNING):
        outcome = await h.say("here", attachments=attachments, fetch=fetch)
    assert outcome.status == "replied"
    assert "SECRET" not in caplog.text and "could not read audio attachment v: ConnectionError" in caplog.text
    assert "more than the 1048576 read for text" in caplog.text


async def test_ignored_messages_cost_no_attachment_work(harness) -> None:
    h = await harness()
    calls = media_models(h)
    h.small.append("<response><action>IGNORE</action></response>")
    await h.say("pic for the others", attachments=[Attachment(id="a", url="https://x/y.png", content_type="image/png")])
    assert calls == []


def test_attachment_kinds() -> None:
    assert attachment_kind({"contentType": "image/jpeg"}) == "image"
    assert attachment_kind({"url": "https://x/a.MP3?sig=1"}) == "audio"
    assert attachment_kind({"contentType": "application/json"}) == "text"
    assert attachment_kind({"title": "notes.md"}) == "text"
    assert attachment_kind({"url": "https://x/file.bin"}) is None


# -- run timeout -----------------------------------------------------------------------------


async def test_a_run_that_takes_too_long_is_abandoned_with_run_timeout(harness) -> None:
    h = await harness(ChannelType.DM)
    h.rt.set_setting("RUN_TIMEOUT_S", "0.05")
    seen: list[RunTimeout] = []

    async def record(event: RunTimeout) -> None:
        seen.append(event)

    h.rt.on(RunTimeout, record)

    async def slow(params: dict) -> str:
        await asyncio.sleep(5)
        return plan("too late")

    h.large.append(slow)
    outcome = await h.say("hello?")
    assert outcome.status == "timeout" and len(seen) == 1 and h.sent == []


async def test_the_pipeline_changes_nothing_the_platform_passed_in(harness) -> None:
    h = await harness(ChannelType.DM)
    media_models(h)

    async def fetch(item: dict) -> bytes:
        return b"line one\n"

    attachments = (Attachment(id="t", url="x", title="notes.txt", content_type="text/plain"),)
    message = Memory(
        entity_id=HUMAN, room_id=h.room, content=Content(text="read this", source="discord", attachments=attachments)
    )
    before = copy.deepcopy(message)
    h.large.append(plan("Read it."))
    assert (await h.deliver(message, fetch=fetch)).status == "replied"
    assert message == before  # no id, no agent, no text filled into its attachment
    (heard,) = [m for m in await h.rt.store.get_memories(table="messages", room_id=h.room) if m.entity_id == HUMAN]
    assert (
        heard.content.attachments is not None and heard.content.attachments[0].text == "line one\n"
    )  # the pipeline's own copy was read
