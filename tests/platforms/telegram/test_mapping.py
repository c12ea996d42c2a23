"""Telegram → troupe mapping on python-telegram-bot objects built from recorded updates."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from bot.kernel.ids import unique_uuid
from bot.kernel.record_metadata import Ownership
from bot.kernel.types import ChannelType
from platforms.telegram._mapping import (
    channel_type,
    entity_for_user,
    memory_for_message,
    message_id,
    room_for_message,
    said_at,
    translate,
    world_for_chat,
)
from platforms.telegram._message_ref import TelegramMessageRef

from .recorded import (
    BOT,
    CHANNEL,
    CLEO,
    FORUM,
    GROUP,
    OTHER_BOT,
    PRIVATE,
    message,
    received,
)

AGENT = "11111111-1111-1111-1111-111111111111"


def memory(data: dict, **kwargs):
    return memory_for_message(AGENT, received(data), bot_id=BOT["id"], bot_username=BOT["username"])


def test_ids_never_collide_across_chats_or_kinds() -> None:
    assert message_id(AGENT, 1, 10) != message_id(AGENT, 2, 10)  # message ids repeat in every chat
    private = received(message(PRIVATE, "hi"))
    m = memory(message(PRIVATE, "hi"))
    assert len({m.room_id, m.entity_id, m.world_id}) == 3  # a DM's chat id is its user's id
    assert m.id == unique_uuid(AGENT, "telegram:message:1001:10")
    assert m.room_id == room_for_message(AGENT, private).id


def test_chat_types() -> None:
    assert [channel_type(received(message(c, "x")).chat) for c in (PRIVATE, GROUP, FORUM, CHANNEL)] == [
        ChannelType.DM,
        ChannelType.GROUP,
        ChannelType.GROUP,
        ChannelType.FEED,
    ]


def test_a_private_chat_is_a_world_the_person_owns() -> None:
    chat = received(message(PRIVATE, "x")).chat
    world = world_for_chat(AGENT, chat)
    sam = unique_uuid(AGENT, "telegram:user:1001")
    assert world.name == "Chat with Sam Reyes" and world.server_id == "1001"
    assert world.metadata.ownership == Ownership(owner_id=sam) and world.metadata.roles == {sam: "OWNER"}


def test_a_group_world_has_its_creator_and_admins() -> None:
    chat = received(message(GROUP, "x")).chat
    world = world_for_chat(AGENT, chat, owner_id=1001, admin_ids=[1002])
    assert world.name == "Writers' Room"
    assert world.metadata.roles == {
        unique_uuid(AGENT, "telegram:user:1001"): "OWNER",
        unique_uuid(AGENT, "telegram:user:1002"): "ADMIN",
    }


def test_forum_topics_are_rooms_of_their_own() -> None:
    created = message(FORUM, None, id=50, thread=50, forum_topic_created={"name": "Plot", "icon_color": 7322096})
    in_topic = received(message(FORUM, "hello", id=51, thread=50, reply_to=created))
    general = received(message(FORUM, "hello", id=52))
    topic_room, main_room = room_for_message(AGENT, in_topic), room_for_message(AGENT, general)
    assert topic_room.id != main_room.id and topic_room.world_id == main_room.world_id
    assert topic_room.name == "Guild › Plot" and topic_room.metadata.thread_id == 50
    assert topic_room.type is ChannelType.GROUP
    m = memory(message(FORUM, "hello", id=51, thread=50, reply_to=created))
    assert "inReplyTo" not in m.content.to_json()  # the topic's first message is not what it replies to
    assert (ref := TelegramMessageRef.of(m)) is not None and ref.thread_id == 50


def test_reply_threads_in_an_ordinary_supergroup_are_not_topics() -> None:
    original = message(GROUP, "first", id=60)
    reply = received(message(GROUP, "second", id=61, reply_to=original, message_thread_id=60))
    assert room_for_message(AGENT, reply).id == room_for_message(AGENT, received(original)).id


def test_mentions_text_mentions_commands_and_replies_to_the_bot() -> None:
    text = "🎭 hey @ada_bot look"
    offset = len("🎭 hey ".encode("utf-16-le")) // 2  # Telegram counts UTF-16 code units
    m = memory(message(GROUP, text, entities=[{"type": "mention", "offset": offset, "length": 8}]))
    assert m.metadata.is_mention is True and m.metadata.is_reply is False
    other = memory(message(GROUP, "@brann_bot hi", entities=[{"type": "mention", "offset": 0, "length": 10}]))
    assert other.metadata.is_mention is False
    text_mention = memory(
        message(GROUP, "Ada, hi", entities=[{"type": "text_mention", "offset": 0, "length": 3, "user": BOT}])
    )
    assert text_mention.metadata.is_mention is True
    command = memory(message(GROUP, "/help@ada_bot", entities=[{"type": "bot_command", "offset": 0, "length": 13}]))
    assert command.metadata.is_mention is True
    reply = memory(message(GROUP, "really?", id=71, reply_to=message(GROUP, "I am Ada", id=70, sender=BOT)))
    assert reply.metadata.is_reply is True and reply.content.in_reply_to == message_id(AGENT, GROUP["id"], 70)


def test_users_and_bots() -> None:
    sam = entity_for_user(AGENT, received(message(PRIVATE, "x")).from_user)
    assert sam.names == ["Sam Reyes", "Sam", "@samr"]
    assert sam.metadata.to_json()["telegram"] == {"id": "1001", "username": "samr", "name": "Sam Reyes", "bot": False}
    cleo = entity_for_user(AGENT, received(message(GROUP, "x", sender=CLEO)).from_user)
    assert cleo.names == ["Cleo"] and cleo.metadata.username == ""
    from_bot = memory(message(GROUP, "Ahoy", sender=OTHER_BOT))
    assert from_bot.metadata.author_is_bot is True and from_bot.metadata.entity_name == "Brann"
    assert from_bot.created_at == 1795334400010 and from_bot.content.channel_type == "GROUP"  # message 10


def test_messages_of_one_second_are_dated_in_the_order_the_chat_numbered_them() -> None:
    # Telegram dates to the second: heard in any order (a relayed or redelivered one comes late),
    # a room's history must still read in the order they were said.
    times = [memory(message(GROUP, f"line {n}", id=n)).created_at for n in (7001, 7002, 7003)]
    assert times == [1795334400001, 1795334400002, 1795334400003]  # within the second they were said
    assert said_at(received(message(GROUP, "x", id=7999))) == 1795334400999


def test_text_and_names_no_encoder_takes_are_repaired() -> None:
    broken_sam = {**CLEO, "first_name": "Cl\ud800eo"}
    m = memory(message({**GROUP, "title": "Writers\udc00"}, "odd \ud83d text, a \ud83d\ude00 smile", sender=broken_sam))
    assert m.content.text == "odd \ufffd text, a \U0001f600 smile"
    assert m.metadata.entity_name == "Cl\ufffdeo"
    chat = received(message({**GROUP, "title": "Writers\udc00"}, "x")).chat
    assert world_for_chat(AGENT, chat).name == "Writers\ufffd"
    assert entity_for_user(AGENT, received(message(GROUP, "x", sender=broken_sam)).from_user).names == ["Cl\ufffdeo"]
    captioned = memory(message(GROUP, caption="photo \udfff", photo=[]))
    assert captioned.content.text == "photo \ufffd"


# -- translate: one call, everything the core needs ----------------------------------------


def translated(data: dict, **kwargs):
    return translate(AGENT, received(data), bot_id=BOT["id"], bot_username=BOT["username"], **kwargs)


def test_a_message_in_a_forum_topic_is_translated_once_into_its_topic_room_author_and_memory() -> None:
    created = message(FORUM, None, id=50, thread=50, forum_topic_created={"name": "Plot", "icon_color": 7322096})
    data = message(FORUM, "hello", id=51, thread=50, reply_to=created)
    seen = translated(data)
    assert (seen.chat_id, seen.message_id, seen.thread_id, seen.title) == (FORUM["id"], 51, 50, "Guild")
    assert seen.is_topic and seen.spoken is None and seen.attachments == ()
    assert seen.room == room_for_message(AGENT, received(data)) and seen.room.name == "Guild › Plot"
    assert seen.main_room == room_for_message(AGENT, received(message(FORUM, "in General", id=52)))
    assert seen.room.metadata.parent_room_id == seen.main_room.id
    assert seen.entity == entity_for_user(AGENT, received(data).from_user)
    assert seen.memory == memory(data)  # the same memory, worked out in the same call
    assert seen.memory.room_id == seen.room.id and seen.memory.entity_id == seen.entity.id


def test_outside_forum_topics_a_message_has_no_thread_and_its_room_is_the_main_room() -> None:
    seen = translated(message(GROUP, "second", id=61, reply_to=message(GROUP, "first", id=60), message_thread_id=60))
    assert seen.thread_id is None and not seen.is_topic
    assert (
        seen.room == seen.main_room
        and (ref := TelegramMessageRef.of(seen.memory)) is not None
        and ref.thread_id is None
    )
    private = translated(message(PRIVATE, "hi"))
    assert private.title is None and private.main_room.type is ChannelType.DM


def test_files_are_attachments_by_file_id_and_spoken_media_is_named_for_transcription() -> None:
    voice = {"file_id": "VOICE-1", "file_unique_id": "u-voice", "duration": 3, "mime_type": "audio/ogg", "file_size": 9}
    photo = [
        {"file_id": "SMALL", "file_unique_id": "u-small", "width": 90, "height": 90},
        {"file_id": "LARGE", "file_unique_id": "u-large", "width": 800, "height": 800, "file_size": 5000},
    ]
    heard = translated(message(PRIVATE, caption="listen", voice=voice))
    assert heard.memory.content.attachments == heard.attachments
    assert [a.to_json() for a in heard.attachments] == [
        {
            "id": "VOICE-1",
            "title": "voice.ogg",
            "contentType": "audio/ogg",
            "private": True,
            "url": "telegram:file:u-voice",
            "size": 9,
            "source": "telegram",
        }
    ]
    assert heard.spoken is not None and (heard.spoken.file_id, heard.spoken.filename) == ("VOICE-1", "voice.ogg")
    assert heard.spoken.said and heard.memory.content.text == "listen"
    pictured = translated(message(GROUP, caption="look", photo=photo))
    assert [a.id for a in pictured.attachments] == ["LARGE"] and pictured.spoken is None
    assert "token" not in str(pictured.attachments)  # file URLs carry the bot token: never kept
    assert "attachments" not in translated(message(GROUP, "words only")).memory.content.to_json()


def test_a_video_is_an_attachment_the_core_can_watch() -> None:
    video = {"file_id": "VID", "file_unique_id": "u-vid", "duration": 4, "width": 64, "height": 48, "file_size": 7}
    seen = translated(message(PRIVATE, caption="our dog", video=video))
    assert [a.to_json() for a in seen.attachments] == [
        {
            "id": "VID",
            "title": "video.mp4",
            "contentType": "video/mp4",
            "private": True,
            "url": "telegram:file:u-vid",
            "size": 7,
            "source": "telegram",
        }
    ]
    assert seen.spoken is None  # not a voice message: its words are heard by the core, if it answers


def test_an_edit_carries_the_words_and_never_the_files() -> None:
    document = {"file_id": "DOC", "file_unique_id": "u-doc", "file_name": "notes.txt", "mime_type": "text/plain"}
    seen = translated(message(GROUP, caption="notes, fixed", document=document))
    edit = seen.edit()
    assert "attachments" not in edit.content.to_json() and edit.content.text == "notes, fixed"
    assert edit.id == seen.memory.id and [a.id for a in seen.memory.content.attachments or ()] == ["DOC"]
    with pytest.raises(FrozenInstanceError):  # the translation is left as it was: nothing can change it
        edit.metadata.edited_at = 1
    assert seen.memory.metadata.edited_at is None


def test_a_relayed_text_replaces_the_words_and_a_mention_in_it_counts() -> None:
    data = message(GROUP, "first part", sender=OTHER_BOT)
    assert translated(data).memory.metadata.is_mention is False
    relayed = translated(data, text="first part\nand @Ada_Bot, over to you")
    assert relayed.memory.content.text == "first part\nand @Ada_Bot, over to you"
    assert relayed.memory.metadata.is_mention is True and relayed.memory.metadata.author_is_bot is True


def test_translating_leaves_the_native_message_as_it_was() -> None:
    native = received(message(PRIVATE, "hi", voice={"file_id": "V", "file_unique_id": "u", "duration": 1}))
    before = native.to_dict()
    seen = translate(AGENT, native, bot_id=BOT["id"], bot_username=BOT["username"])
    with pytest.raises(FrozenInstanceError):  # nothing the pipeline does to it can reach the native message
        seen.memory.content.text = "changed by the pipeline's listener"  # type: ignore[misc]
    assert native.to_dict() == before


def test_a_sticker_is_its_emoji_and_a_sticker_without_one_still_says_what_it_is() -> None:
    sticker = {"file_id": "s1", "file_unique_id": "us1", "type": "regular", "width": 512, "height": 512}
    animated = {**sticker, "is_animated": True, "is_video": False, "emoji": "🔥"}
    video = {**sticker, "is_animated": False, "is_video": True, "emoji": "🎉"}
    plain = {**sticker, "is_animated": False, "is_video": False}
    assert memory(message(GROUP, sticker=animated)).content.text == "[sticker 🔥]"
    assert memory(message(GROUP, sticker=video)).content.text == "[sticker 🎉]"
    assert memory(message(GROUP, sticker=plain)).content.text == "[sticker]"


def test_a_channel_post_is_signed_by_the_channel() -> None:
    post = message(CHANNEL, "Harbour opens at dawn, @ada_bot", id=70, sender_chat=CHANNEL)
    del post["from"]
    seen = translated(post)
    assert seen.entity.names == ["News", "@newsy"] and seen.memory.content.channel_type == "FEED"
    assert seen.memory.metadata.entity_name == "News" and seen.memory.metadata.is_mention
    assert seen.memory.entity_id == unique_uuid(AGENT, f"telegram:user:{CHANNEL['id']}")
