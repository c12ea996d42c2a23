"""Discord → troupe mapping, on real discord.py objects built from recorded gateway payloads."""

from __future__ import annotations

import discord

from bot.kernel.ids import unique_uuid
from bot.kernel.record_metadata import Ownership
from bot.kernel.types import ChannelType
from platforms.discord._mapping import (
    channel_type,
    discord_id,
    entity_for_user,
    memory_for_message,
    room_for_channel,
    sent_attachments,
    world_for_guild,
)

from .recorded import (
    ADMIN_ID,
    BOT_ID,
    BOT_ROLE_ID,
    CATEGORY_ID,
    DM_ID,
    FORUM_ID,
    GENERAL_ID,
    GUILD_ID,
    MEMBER_ID,
    OWNER_ID,
    THREAD_ID,
    VOICE_ID,
    message_create,
    objects,
)

AGENT = "11111111-1111-1111-1111-111111111111"
OTHER_AGENT = "22222222-2222-2222-2222-222222222222"


def test_ids_are_agent_scoped_and_prefixed_by_platform() -> None:
    assert discord_id(AGENT, 123) == discord_id(AGENT, "123") == unique_uuid(AGENT, "discord:123")
    assert discord_id(AGENT, 123) != discord_id(OTHER_AGENT, 123)


def test_guild_is_a_world_with_owner_and_admins() -> None:
    o = objects()
    admins = [m for m in o.guild.members if m.guild_permissions.administrator]
    world = world_for_guild(AGENT, o.guild, admins)
    assert (
        world.id == discord_id(AGENT, GUILD_ID) and world.server_id == str(GUILD_ID) and world.name == "Writers' Room"
    )
    assert world.metadata.ownership == Ownership(owner_id=discord_id(AGENT, OWNER_ID))
    assert world.metadata.roles == {
        discord_id(AGENT, OWNER_ID): "OWNER",
        discord_id(AGENT, ADMIN_ID): "ADMIN",
    }


def test_channel_types() -> None:
    o = objects()
    assert channel_type(o.channel(GENERAL_ID)) is ChannelType.GROUP
    assert channel_type(o.channel(VOICE_ID)) is ChannelType.VOICE_GROUP
    assert channel_type(o.channel(THREAD_ID)) is ChannelType.THREAD
    assert channel_type(o.channel(FORUM_ID)) is ChannelType.FORUM
    assert channel_type(o.channel(DM_ID)) is ChannelType.DM
    assert channel_type(o.channel(CATEGORY_ID)) is None
    assert room_for_channel(AGENT, o.channel(CATEGORY_ID)) is None


def test_rooms_know_their_world_and_threads_their_parent() -> None:
    o = objects()
    general = room_for_channel(AGENT, o.channel(GENERAL_ID))
    assert general is not None
    assert (general.id, general.name, general.type, general.world_id, general.channel_id, general.server_id) == (
        discord_id(AGENT, GENERAL_ID),
        "general",
        ChannelType.GROUP,
        discord_id(AGENT, GUILD_ID),
        str(GENERAL_ID),
        str(GUILD_ID),
    )
    thread = room_for_channel(AGENT, o.channel(THREAD_ID))
    assert thread is not None
    assert thread.type is ChannelType.THREAD and thread.name == "plot holes"
    assert thread.metadata.to_json() == {"parentChannelId": str(GENERAL_ID), "parentRoomId": general.id}
    dm = room_for_channel(AGENT, o.channel(DM_ID), dm_with=o.channel(DM_ID).recipient)
    assert dm is not None
    assert dm.type is ChannelType.DM and dm.world_id is None and dm.name == "DM with Sam" and dm.server_id is None


def test_users_are_entities_with_their_names() -> None:
    o = objects()
    cleo = entity_for_user(AGENT, o.guild.get_member(MEMBER_ID))
    assert cleo.id == discord_id(AGENT, MEMBER_ID) and cleo.names == ["cleo_c"]
    assert cleo.metadata.to_json()["discord"] == {
        "userId": str(MEMBER_ID),
        "username": "cleo_c",
        "name": "cleo_c",
        "globalName": None,
        "bot": False,
    }
    sam = entity_for_user(AGENT, o.guild.get_member(OWNER_ID))
    assert sam.names == ["Sam the Owner", "Sam", "sam"]


def test_a_mention_is_recognised_and_written_as_a_name() -> None:
    o = objects()
    message = o.message(message_create("hey <@900> and <@!3>, look", mentions=["ada", "cleo"]))
    memory = memory_for_message(AGENT, message, bot_user_id=BOT_ID)
    assert memory.content.text == "hey @Ada and @cleo_c, look"
    assert memory.metadata.is_mention is True and memory.metadata.is_reply is False
    assert memory.metadata.author_is_bot is False and memory.metadata.entity_name == "Sam"
    assert memory.id == discord_id(AGENT, 500) and memory.room_id == discord_id(AGENT, GENERAL_ID)
    assert memory.world_id == discord_id(AGENT, GUILD_ID) and memory.entity_id == discord_id(AGENT, 1)
    assert memory.content.source == "discord" and memory.content.channel_type == "GROUP"
    assert memory.content.url == f"https://discord.com/channels/{GUILD_ID}/{GENERAL_ID}/500"
    assert memory.created_at == int(discord.utils.snowflake_time(500).timestamp() * 1000)  # ids carry the time
    assert memory.metadata.channel_id == str(GENERAL_ID) and memory.metadata.server_id == str(GUILD_ID)


def test_a_mention_of_the_bots_role_counts_and_of_another_bot_does_not() -> None:
    o = objects()
    by_role = memory_for_message(
        AGENT, o.message(message_create("<@&111> thoughts?", mention_roles=[BOT_ROLE_ID])), bot_user_id=BOT_ID
    )
    assert by_role.metadata.is_mention is True
    other = memory_for_message(AGENT, o.message(message_create("<@901> hi", mentions=["brann"])), bot_user_id=BOT_ID)
    assert other.metadata.is_mention is False and other.content.text == "@Captain Brann hi"


def test_a_reply_to_the_bot_and_a_bot_author() -> None:
    o = objects()
    original = message_create("I am Ada.", author="ada", id=499)
    reply = memory_for_message(AGENT, o.message(message_create("really?", reply_to=original)), bot_user_id=BOT_ID)
    assert reply.metadata.is_reply is True and reply.content.in_reply_to == discord_id(AGENT, 499)
    from_bot = memory_for_message(AGENT, o.message(message_create("Ahoy", author="brann")), bot_user_id=BOT_ID)
    assert from_bot.metadata.author_is_bot is True
    not_to_us = memory_for_message(
        AGENT,
        o.message(message_create("aye", reply_to=message_create("x", author="brann", id=498))),
        bot_user_id=BOT_ID,
    )
    assert not_to_us.metadata.is_reply is False


def test_dm_and_attachments() -> None:
    o = objects()
    attachment = {
        "id": "700",
        "filename": "cat.png",
        "size": 2048,
        "url": "https://cdn.discordapp.com/attachments/1/700/cat.png",
        "proxy_url": "https://media.discordapp.net/attachments/1/700/cat.png",
        "content_type": "image/png",
    }
    memory = memory_for_message(
        AGENT,
        o.message(message_create("look", channel=DM_ID, guild=False, attachments=[attachment])),
        bot_user_id=BOT_ID,
    )
    assert memory.world_id is None and memory.content.channel_type == "DM" and memory.metadata.server_id is None
    assert [a.to_json() for a in memory.content.attachments or ()] == [
        {
            "id": "700",
            "url": attachment["url"],
            "title": "cat.png",
            "contentType": "image/png",
            "source": "discord",
            "size": 2048,
        }
    ]


def test_what_a_sent_message_carries_keeps_alt_text_and_a_type_for_every_file() -> None:
    o = objects()
    files = [
        {
            "id": "701",
            "filename": "chart.png",
            "size": 10,
            "url": "https://cdn/701",
            "proxy_url": "https://px/701",
            "content_type": "image/png",
        },
        {
            "id": "702",
            "filename": "notes",
            "size": 5,
            "url": "https://cdn/702",
            "proxy_url": "https://px/702",
            "description": "the notes",
        },
    ]
    sent = o.message(message_create("here", attachments=files))
    assert sent_attachments(sent) == [
        {
            "id": "701",
            "url": "https://cdn/701",
            "title": "chart.png",
            "contentType": "image/png",
            "source": "discord",
            "size": 10,
            "description": "",
        },
        {
            "id": "702",
            "url": "https://cdn/702",
            "title": "notes",
            "contentType": "application/octet-stream",
            "source": "discord",
            "size": 5,
            "description": "the notes",
        },
    ]


def test_text_and_names_no_encoder_takes_are_repaired_and_nul_removed() -> None:
    o = objects()
    message = o.message(message_create("odd \ud83d text,\x00 a \ud83d\ude00 smile <@3>", mentions=["cleo"]))
    message.author.nick = "Sam \udfff"
    message.guild.name = "Writers\udc00"
    message.channel.name = "gen\ud800eral"
    memory = memory_for_message(AGENT, message, bot_user_id=BOT_ID)
    assert memory.content.text == "odd \ufffd text, a \U0001f600 smile @cleo_c"
    assert memory.metadata.entity_name == "Sam \ufffd"
    assert entity_for_user(AGENT, message.author).names[0] == "Sam \ufffd"
    assert world_for_guild(AGENT, message.guild).name == "Writers\ufffd"
    room = room_for_channel(AGENT, message.channel)
    assert room is not None and room.name == "gen\ufffderal"
