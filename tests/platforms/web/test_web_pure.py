"""The web platform's translation as pure functions: names, ids, incoming messages and presses,
stored messages read back as lines, the listeners' bounded queues and the file shelf."""

from __future__ import annotations

import asyncio

import pytest

from bot.kernel.buttons import Button, Press
from bot.kernel.content import Content
from bot.kernel.types import ChannelType, Memory
from platforms.web._events import Closing, Listeners, Partial, Said, TooManyListeners, Typing
from platforms.web._lines import FileRef, Line, file_attachment, file_id_of, line_of
from platforms.web._mapping import (
    entity_for,
    entity_id,
    heard,
    person_name,
    pressed,
    room_for,
    room_id,
    world_id,
)
from platforms.web._shelf import Shelf

AGENT = "00000000-0000-0000-0000-0000000000a1"


def test_a_name_is_tidied_and_a_bad_one_says_what_is_wrong() -> None:
    assert person_name("  Sam   Lee ") == "Sam Lee"
    with pytest.raises(ValueError, match="give a name"):
        person_name("   ")
    with pytest.raises(ValueError, match="at most 40 characters, not 41"):
        person_name("x" * 41)
    with pytest.raises(ValueError, match="control characters"):
        person_name("Sam\u0007")


def test_each_person_has_a_room_and_an_entity_of_their_own_with_stable_ids() -> None:
    assert room_id(AGENT, "Sam") == room_id(AGENT, "Sam") != room_id(AGENT, "Kim")
    assert entity_id(AGENT, "Sam") != entity_id(AGENT, "Kim")
    assert room_id("00000000-0000-0000-0000-0000000000b2", "Sam") != room_id(AGENT, "Sam")  # per character
    room = room_for(AGENT, "Sam", "Ada")
    assert (room.source, room.type, room.channel_id, room.world_id) == ("web", ChannelType.DM, "Sam", world_id(AGENT))
    entity = entity_for(AGENT, "Sam")
    profile = entity.metadata.profile("web")
    assert entity.names == ["Sam"] and profile is not None and profile.id == "Sam"


def test_what_a_person_typed_and_uploaded_is_a_message_of_their_room() -> None:
    note = FileRef("f1", "note.ogg", "audio/ogg", 12)
    message = heard(AGENT, "Sam", "  listen to this ", [note])
    content = message.content
    assert (message.room_id, message.entity_id) == (room_id(AGENT, "Sam"), entity_id(AGENT, "Sam"))
    assert content.text == "listen to this" and content.source == "web"
    assert content.is_voice_message is True  # a sound is a voice note: the pipeline transcribes it
    assert content.attachments is not None
    (attachment,) = content.attachments
    assert (attachment.url, attachment.content_type, attachment.private) == ("web:file:f1", "audio/ogg", True)
    assert message.metadata.entity_name == "Sam"
    assert heard(AGENT, "Sam", "hi").content.is_voice_message is None


def test_a_press_replies_to_the_message_it_was_under() -> None:
    message = pressed(AGENT, "Sam", Press("tea", "Tea"), "m-1")
    assert message.content.text == "Tea" and message.content.in_reply_to == "m-1"
    assert message.content.button == Press("tea", "Tea")
    assert message.metadata.is_reply is True


def test_a_stored_message_reads_back_as_the_line_the_page_shows() -> None:
    picture = FileRef("p1", "cup.png", "image/png", 100)
    said = Memory(
        id="m-1",
        entity_id=AGENT,
        room_id=room_id(AGENT, "Sam"),
        content=Content(
            text="Tea or coffee?",
            attachments=(file_attachment(picture),),
            buttons=(Button("Tea", value="tea"), Button("Menu", url="https://example.com/m")),
        ),
        created_at=5,
    )
    line = line_of(said, AGENT, "Ada", "Sam")
    assert line == Line(
        "m-1",
        "Ada",
        True,
        "Tea or coffee?",
        5,
        (picture,),
        (Button("Tea", value="tea"), Button("Menu", url="https://example.com/m")),
    )
    assert line.files[0].is_picture and not line.files[0].is_sound
    press = line_of(pressed(AGENT, "Sam", Press("tea", "Tea"), "m-1"), AGENT, "Ada", "Sam")
    assert (press.author, press.from_character, press.pressed) == ("Sam", False, "Tea")
    assert file_id_of("web:file:abc") == "abc" and file_id_of("https://example.com/x") is None


async def test_listeners_are_bounded_and_a_whole_message_always_gets_through() -> None:
    listeners = Listeners(queue_size=2, per_room=1)
    line = Line("m", "Ada", True, "done", 1)
    with listeners.listen("r1") as queue:
        with pytest.raises(TooManyListeners), listeners.listen("r1"):
            pass
        listeners.publish("r2", Typing())  # another room: not this page's
        listeners.publish("r1", Partial("a"))
        listeners.publish("r1", Partial("a b"))
        listeners.publish("r1", Partial("a b c"))  # the page is behind: dropped, the next holds it
        listeners.publish("r1", Said(line))  # pushes out the oldest unread
        assert [queue.get_nowait(), queue.get_nowait()] == [Partial("a b"), Said(line)]
        assert queue.empty()
    assert listeners.count("r1") == 0
    with listeners.listen("r1") as again:  # the seat is free again
        assert isinstance(again, asyncio.Queue)
        for text in ("a", "b"):
            listeners.publish("r1", Partial(text))
        listeners.close()  # the character stops here: every page is told, however far behind
        assert [again.get_nowait(), again.get_nowait()] == [Partial("b"), Closing()]


def test_the_shelf_keeps_the_newest_files_within_its_capacity() -> None:
    shelf = Shelf(capacity=10)
    first = shelf.put("a.txt", "text/plain", b"123456")
    second = shelf.put("b.txt", "text/plain", b"7890")
    assert shelf.size == 10 and shelf.get(first.id) is not None
    third = shelf.put("c.txt", "", b"xyz")
    assert shelf.get(first.id) is None and shelf.get(second.id) is not None
    found = shelf.get(third.id)
    assert found is not None and found.data == b"xyz" and found.ref.content_type == "application/octet-stream"
    assert first.id != second.id != third.id
