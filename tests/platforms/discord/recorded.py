"""Gateway payloads as Discord sends them (trimmed to the fields discord.py reads), and real
discord.py objects built from them without a connection.

``objects()`` returns a discord.py ``ConnectionState`` that knows the guild below, so tests get
the same ``Message``/``Member``/``Thread`` objects the client would, from recorded JSON.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import discord
from discord.state import ConnectionState

if TYPE_CHECKING:  # discord.types imports in a cycle at run time
    from discord.types.channel import DMChannel as DMChannelPayload
    from discord.types.guild import Guild as GuildPayload
    from discord.types.message import Message as MessagePayload
    from discord.types.user import User as UserPayload

BOT_ID = 900  # the character's bot user
OTHER_BOT_ID = 901  # another character's bot
OWNER_ID = 1  # Sam, who owns the guild
ADMIN_ID = 2  # Dee, an administrator
MEMBER_ID = 3  # Cleo
GUILD_ID = 100
GENERAL_ID = 200
VOICE_ID = 201
CATEGORY_ID = 202
FORUM_ID = 203
THREAD_ID = 300
DM_ID = 400
ADMIN_ROLE_ID = 110
BOT_ROLE_ID = 111


def _user(id: int, username: str, global_name: str | None = None, bot: bool = False) -> dict[str, Any]:
    return {
        "id": str(id),
        "username": username,
        "global_name": global_name,
        "discriminator": "0",
        "avatar": None,
        **({"bot": True} if bot else {}),
    }


def _member(user: dict[str, Any], roles: Sequence[int] = (), nick: str | None = None) -> dict[str, Any]:
    return {
        "user": user,
        "roles": [str(r) for r in roles],
        "nick": nick,
        "joined_at": "2026-01-01T00:00:00+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
    }


USERS = {
    "ada": _user(BOT_ID, "ada-bot", "Ada", bot=True),
    "brann": _user(OTHER_BOT_ID, "brann-bot", "Captain Brann", bot=True),
    "sam": _user(OWNER_ID, "sam", "Sam"),
    "dee": _user(ADMIN_ID, "dee", "Dee"),
    "cleo": _user(MEMBER_ID, "cleo_c", None),
}

_ROLE = {"color": 0, "hoist": False, "managed": False, "mentionable": True, "position": 1, "flags": 0}
GUILD_CREATE: dict[str, Any] = {
    "id": str(GUILD_ID),
    "name": "Writers' Room",
    "owner_id": str(OWNER_ID),
    "member_count": 5,
    "features": [],
    "emojis": [],
    "stickers": [],
    "large": False,
    "roles": [
        {**_ROLE, "id": str(GUILD_ID), "name": "@everyone", "permissions": "1071698660929", "position": 0},
        {**_ROLE, "id": str(ADMIN_ROLE_ID), "name": "Admins", "permissions": "8"},
        {**_ROLE, "id": str(BOT_ROLE_ID), "name": "Ada", "permissions": "0", "managed": True},
    ],
    "channels": [
        {
            "id": str(CATEGORY_ID),
            "type": 4,
            "name": "Text Channels",
            "position": 0,
            "permission_overwrites": [],
            "flags": 0,
        },
        {
            "id": str(GENERAL_ID),
            "type": 0,
            "name": "general",
            "position": 1,
            "parent_id": str(CATEGORY_ID),
            "permission_overwrites": [],
            "topic": None,
            "nsfw": False,
            "rate_limit_per_user": 0,
            "flags": 0,
        },
        {
            "id": str(VOICE_ID),
            "type": 2,
            "name": "Lounge",
            "position": 2,
            "permission_overwrites": [],
            "bitrate": 64000,
            "user_limit": 0,
            "rtc_region": None,
            "flags": 0,
        },
        {
            "id": str(FORUM_ID),
            "type": 15,
            "name": "ideas",
            "position": 3,
            "permission_overwrites": [],
            "flags": 0,
            "available_tags": [],
            "default_reaction_emoji": None,
            "default_sort_order": None,
            "default_forum_layout": 0,
        },
    ],
    "threads": [
        {
            "id": str(THREAD_ID),
            "type": 11,
            "name": "plot holes",
            "parent_id": str(GENERAL_ID),
            "guild_id": str(GUILD_ID),
            "owner_id": str(OWNER_ID),
            "flags": 0,
            "member_count": 2,
            "message_count": 4,
            "rate_limit_per_user": 0,
            "last_message_id": None,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": "2026-11-20T10:00:00+00:00",
                "locked": False,
            },
        },
    ],
    "members": [
        _member(USERS["ada"], [BOT_ROLE_ID]),
        _member(USERS["brann"]),
        _member(USERS["sam"], nick="Sam the Owner"),
        _member(USERS["dee"], [ADMIN_ROLE_ID]),
        _member(USERS["cleo"]),
    ],
}


def message_create(
    text: str,
    *,
    author: str = "sam",
    channel: int = GENERAL_ID,
    id: int = 500,
    mentions: Sequence[str] = (),
    mention_roles: Sequence[int] = (),
    reply_to: dict[str, Any] | None = None,
    attachments: Sequence[dict[str, Any]] = (),
    guild: bool = True,
) -> dict[str, Any]:
    """A MESSAGE_CREATE payload, as recorded from the gateway."""
    data: dict[str, Any] = {
        "id": str(id),
        "channel_id": str(channel),
        "author": USERS[author],
        "content": text,
        "timestamp": "2026-11-22T08:00:00.123000+00:00",
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [USERS[m] for m in mentions],
        "mention_roles": [str(r) for r in mention_roles],
        "attachments": list(attachments),
        "embeds": [],
        "pinned": False,
        "type": 19 if reply_to else 0,
        "flags": 0,
        "components": [],
    }
    if guild:
        data["guild_id"] = str(GUILD_ID)
        data["member"] = {k: v for k, v in _member(USERS[author]).items() if k != "user"}
    if reply_to is not None:
        data["message_reference"] = {
            "message_id": reply_to["id"],
            "channel_id": reply_to["channel_id"],
            **({"guild_id": str(GUILD_ID)} if guild else {}),
        }
        data["referenced_message"] = reply_to
    return data


def objects() -> SimpleNamespace:
    """A discord.py state holding the recorded guild, and helpers to turn payloads into objects."""
    http = SimpleNamespace()  # never used: nothing here talks to Discord
    state = ConnectionState(
        dispatch=lambda *a, **k: None,
        handlers={},
        hooks={},
        http=http,  # type: ignore[arg-type]
        intents=discord.Intents.all(),
        chunk_guilds_at_startup=False,
    )
    # The recorded payloads are plain JSON; discord.py types them as TypedDicts.
    state.user = discord.ClientUser(state=state, data=cast("UserPayload", USERS["ada"]))
    guild = state._add_guild_from_data(cast("GuildPayload", copy.deepcopy(GUILD_CREATE)))
    dm_payload = {"id": str(DM_ID), "type": 1, "recipients": [USERS["sam"]], "last_message_id": None}
    dm = state.add_dm_channel(cast("DMChannelPayload", dm_payload))

    def channel(id: int) -> Any:
        return dm if id == DM_ID else guild.get_channel_or_thread(id)

    def message(data: dict[str, Any]) -> discord.Message:
        payload = cast("MessagePayload", copy.deepcopy(data))
        return state.create_message(channel=channel(int(data["channel_id"])), data=payload)

    return SimpleNamespace(state=state, guild=guild, dm=dm, channel=channel, message=message)
