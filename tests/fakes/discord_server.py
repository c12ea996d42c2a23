"""A fake Discord: REST API and gateway, a real HTTP/websocket server in the test's event loop.

The real, unmodified ``discord.py`` client talks to it, so tests exercise the production code path::

    async with FakeDiscord() as fake:
        ada = fake.add_bot("token-ada", name="Ada")
        sam = fake.add_user("Sam")
        guild = fake.add_guild("Guild", owner=sam, members=[ada])
        general = fake.add_channel(guild, "general")
        fake.patch_discord()                       # Route.BASE and the gateway URL (see below)
        client = discord.Client(intents=intents, guild_ready_timeout=0.1)
        task = asyncio.create_task(client.start("token-ada"))
        ...                                        # wait for on_ready
        await fake.user_says(sam, general, f"hi {ada.mention}")
        sent = await fake.wait_for_sent(ada, count=1)
        assert sent[0].reference is not None and sent[0].content == "hello Sam"

Pointing discord.py at a Discord-compatible server (what troupe's ``DISCORD_API_BASE`` does)
------------------------------------------------------------------------------------------

Two class attributes, set before any client logs in; discord.py itself stays unmodified:

- ``discord.http.Route.BASE = api_base`` (e.g. ``"http://127.0.0.1:8080/api/v10"``, no trailing
  slash). Every REST call, the interaction and webhook routes included, is built from it.
- ``discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)``. A plain
  ``discord.Client`` never asks ``GET /gateway/bot``: it dials ``DEFAULT_GATEWAY``
  (``wss://gateway.discord.gg/``) on the first connect and again after a non-resumable
  INVALID_SESSION; resumes go to READY's ``resume_gateway_url``. Only ``AutoShardedClient``
  reads the URL from ``/gateway/bot``. So production code must take the gateway URL from the
  server, e.g. in ``setup_hook`` (it runs after login, before the gateway connects)::

      discord.http.Route.BASE = settings.discord_api_base
      class TroupeClient(discord.Client):
          async def setup_hook(self) -> None:
              _, url, _ = await self.http.get_bot_gateway()     # GET {api_base}/gateway/bot
              discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)

  Both are process-wide, which suits troupe: every character's client talks to the same server.
  Without the second line the client tries the real Discord gateway. Set them only when
  ``DISCORD_API_BASE`` is configured, so the defaults keep pointing at Discord.

``fake.patch_discord()`` does both for a test and ``close()`` undoes it.

discord.py 2.7 behaviours the fake honours (and tests should know about)
------------------------------------------------------------------------

- Gateway compression: ``discord.Client`` always asks for ``compress=zlib-stream`` (``zstd-stream``
  when ``zstandard`` or ``compression.zstd`` is importable) and offers no switch to turn it off. The
  fake speaks both, one compression context per connection with a sync flush per frame, and
  plain JSON text frames when no ``compress`` is asked.
- JSON answers need exactly ``Content-Type: application/json``: discord.py compares the header
  verbatim, so ``application/json; charset=utf-8`` would reach it as a string.
- A 429 is only retried when the response has a ``Via`` header (without one, discord.py assumes a
  Cloudflare ban and raises). It then sleeps the body's ``retry_after``; ``"global": true`` pauses
  every request of that client. 500/502/504 are retried after ``1 + 2 * try`` seconds, five tries.
- on_ready fires ``guild_ready_timeout`` (default 2 s) after the last GUILD_CREATE, so clients in
  tests should pass a small one (0.1 s is plenty). With the members intent, discord.py chunks
  guilds whose GUILD_CREATE lacks members before on_ready. The fake sends every member (nothing to
  chunk) unless ``members_in_guild_create=False``; REQUEST_GUILD_MEMBERS (startup chunking,
  ``guild.chunk()``, ``query_members``) gets one GUILD_MEMBERS_CHUNK.
- Sharding: IDENTIFY's ``shard: [id, count]`` limits the session to the guilds with
  ``(guild_id >> 22) % count == id`` (DMs: shard 0). A bot with ``shards`` above 1 (set it on the
  ``FakeBot``) is refused with close code 4011 unless it identifies with that many shards or more,
  and ``/gateway/bot`` recommends that count; a shard id not below the count is closed with 4010.
- Close code 4014 becomes ``PrivilegedIntentsRequired``, raised from ``start()`` with no retry;
  4004/4010-4013 end the client too. Other closes and lost connections make discord.py RESUME at
  once. After INVALID_SESSION (not resumable), ``before_identify_hook`` sleeps 5 s before it
  IDENTIFYs again (override the hook in tests); events of the lost session are gone for good.

The world
---------

``add_user(name)``, ``add_bot(token, name, message_content_intent=True, members_intent=True,
presence_intent=True)`` (a bot user and its application, ``application_id == bot.id``),
``add_guild(name, owner=, members=, admins=)`` (roles: ``@everyone`` with
``everyone_permissions`` and ``Admin`` with ADMINISTRATOR for ``admins``), ``add_role``,
``add_channel(guild, name, type="text"|"voice"|"category"|"news"|"forum"|"stage", parent=,
overwrites=[Overwrite(role_or_user, allow=, deny=)])``, ``add_thread(channel, name, private=,
message=, content=)``, ``dm_channel(user, bot)``. Anything added while bots are connected is
dispatched (GUILD_CREATE, CHANNEL_CREATE, THREAD_CREATE, GUILD_MEMBER_ADD); ``rename_channel``
(CHANNEL_UPDATE, THREAD_UPDATE) and ``delete_channel`` (CHANNEL_DELETE) change what was added. Snowflakes are real
(timestamp-based) and strictly increasing.

Acting as users (each returns once the events are written to every socket)
--------------------------------------------------------------------------

- ``user_says(user, channel, content, reply_to=, attachments=, mention_author=True)`` and
  ``dm(user, bot, content, ...)``: MESSAGE_CREATE to every connected bot that can see the
  channel (VIEW_CHANNEL from roles and overwrites; private threads: thread members) and has the
  GUILD_MESSAGES / DIRECT_MESSAGES intent. Like Discord, a session without the MESSAGE_CONTENT
  intent gets empty ``content``/``embeds``/``attachments``/``components`` unless the message is a
  DM, its own, or mentions it. Attachments are served by the fake (``attachment.read()`` works).
  DMs get no CHANNEL_CREATE (Discord stopped sending it to bots in v8; discord.py drops it anyway).
- ``user_reacts`` / ``user_unreacts`` (MESSAGE_REACTION_ADD/REMOVE), ``user_edits``
  (MESSAGE_UPDATE), ``user_deletes`` (MESSAGE_DELETE), ``user_types`` (TYPING_START),
  ``redeliver_message`` (the same MESSAGE_CREATE again),
  ``member_joins`` / ``member_leaves`` (GUILD_MEMBER_ADD/REMOVE; the bot itself gets
  GUILD_CREATE/GUILD_DELETE).
- ``invoke_command(user, channel, bot, "troupe sub", options={...} or [raw options])``:
  INTERACTION_CREATE for a command the bot registered (guild commands first, then global);
  option types and ``resolved`` come from the registered schema. Returns a
  :class:`FakeInteraction` whose ``responses`` record the callback, followups and edits.
  Response messages are dispatched to the bots in the channel unless ephemeral; the first
  followup after a "thinking" defer replaces the loading message, as on Discord.
- ``user_clicks(user, message, custom_id)``: the user presses a button under a bot's message:
  INTERACTION_CREATE of a message component (type 3, ``data.custom_id``/``component_type``) to
  that bot, with the message and its components; a button the message does not show cannot be
  pressed (LookupError). ``user_selects(user, message, values)``: the user chooses ``values`` in
  a string select under it (``component_type`` 3, ``data.values``; values it does not offer, or
  too many or few, LookupError). ``user_submits(user, opened, {input_id: text})``: the user
  submits the modal the bot answered ``opened`` with (a callback of type 9, checked as Discord
  checks a modal): INTERACTION_CREATE of type 5 with the modal's ``custom_id`` and its text
  inputs' values. ``redeliver(interaction)`` sends the same INTERACTION_CREATE again.
  An interaction's ``dispatched`` holds when it went out and each response its ``at``
  (``time.monotonic()``). Its callback is refused like Discord does: 40060 once already answered,
  10062 (unknown interaction) later than ``fake.interaction_window`` (3 s) after the dispatch.
  A callback of type 7 updates the component's message.

REST (under ``/api/v10``; ``Authorization: Bot <token>`` except interaction/webhook routes)
------------------------------------------------------------------------------------------

``/gateway``, ``/gateway/bot``, ``/users/@me`` (401 for an unknown token, which discord.py turns
into LoginFailure; the same for a bot's token while ``revoke(bot)`` holds, until ``restore(bot)``:
every authorised route is 401, the bot's gateway sockets are closed with 4004 and IDENTIFY or
RESUME with it is 4004), ``/oauth2/applications/@me``, ``/users/{id}``, ``/users/@me/guilds``,
``POST /users/@me/channels``; channels: GET, messages GET (history: limit/before/after/around) and
POST (JSON, or multipart with ``payload_json`` and ``files[n]``), message GET/PATCH/DELETE,
``typing``, reactions PUT/DELETE/GET, ``threads`` POST (also from a message),
``thread-members/@me``; guilds: GET, ``channels``, ``roles``, ``members``, ``members/{id}``,
``threads/active``; application commands (global and guild: GET, bulk PUT, POST, PATCH, DELETE);
``POST /interactions/{id}/{token}/callback``; ``/webhooks/{app_id}/{token}`` followups and
``messages/@original``. Errors look like Discord's: ``{"message", "code"}`` with Discord's codes
(50001 Missing Access, 50013 Missing Permissions, 50006 empty message, 50035 over 2000 characters,
10008 Unknown Message, 40060 already acknowledged, 10062 unknown interaction, ...). Message
components (buttons and string selects in action rows) are checked as Discord does (rows,
custom_ids, links, labels, options: 50035 naming the field) and kept on the message. Successful answers carry X-RateLimit
headers that never run out. Unknown routes: 404, recorded.

Scripting failures
------------------

``fail_next(method, path_regex, status=429, retry_after=0.05, times=1, global_=False, bot=None, after=0)``:
the next ``times`` matching requests, once ``after`` more have gone through (``re.search`` on the
path after the API base, e.g. ``r"/channels/\\d+/messages$"``; method ``"*"`` for any) fail like
Discord: 429 with a JSON ``retry_after``/``global`` body, ``Retry-After``, ``X-RateLimit-*`` and the ``Via`` header
discord.py requires before it trusts a 429 (without it, it assumes a Cloudflare ban and raises);
500 as JSON, 502/503/504 as Cloudflare-style HTML. discord.py sleeps ``retry_after`` on 429 and
``1 + 2 * try`` seconds on 500/502/504 before retrying.

Gateway: HELLO, IDENTIFY (4004 bad token, 4013 invalid intents, 4014 privileged intents the
application lacks — discord.py raises PrivilegedIntentsRequired and does not retry), READY then one
GUILD_CREATE per guild, HEARTBEAT/HEARTBEAT_ACK (``heartbeat_interval`` in ms), RESUME (missed
events replayed, then RESUMED; unknown session: INVALID_SESSION false), PRESENCE_UPDATE recorded.
``drop_gateway(bot, code=None, resumable=True)`` cuts the socket (no close frame) or closes it
with ``code``; ``send_reconnect(bot)`` sends op 7; ``invalidate_session(bot, resumable=False)``
sends op 9. Events for a disconnected but resumable session are kept and replayed on RESUME.

Voice (``fake.voice``: a :class:`~tests.fakes.discord_voice.FakeVoiceServer`, see that module)
---------------------------------------------------------------------------------------------

Started and closed with the fake (pass ``voice=FakeVoiceServer(dave=True, ...)`` to configure
it). A bot's gateway op 4 with a voice or stage channel it may CONNECT to gets
VOICE_STATE_UPDATE (to every bot with the ``voice_states`` intent, the bot's own gateway
``session_id`` in it) and then VOICE_SERVER_UPDATE (``token``, ``guild_id``, ``endpoint`` of the
voice server) to that bot only (op 4 for the channel it is already in, a self mute/deafen change,
gets VOICE_STATE_UPDATE alone: the voice connection stays); ``channel_id`` null leaves
(VOICE_STATE_UPDATE with a null channel, the voice token is revoked). Anything else is
ignored, as Discord does: discord.py's ``connect()`` then times out. GUILD_CREATE carries the
current ``voice_states``. The voice gateway is ``wss://`` only: clients trust
``fake.voice.ca_file``. ``user_joins_voice(user, channel, self_mute=, self_deaf=)`` and
``user_leaves_voice(user, guild)`` move simulated people (for a bot, leaving is a server-side
disconnect); ``move_bot_voice(bot, channel)`` is an admin dragging a bot to another voice channel;
``voice_state(user, guild)``; ``voice_server_update(bot, guild)`` sends a fresh
VOICE_SERVER_UPDATE (discord.py reconnects). Per bot: ``voice_state_updates`` (op 4 payloads).
Sound: ``fake.voice.user_speaks(user, opus_packets)`` and ``fake.voice.session(bot).packets``.

Recording
---------

``fake.requests`` (:class:`RecordedRequest`: bot, method, path, query, json, files, status, before
any scripted failure, so retries show up). Per :class:`FakeBot`: ``requests``, ``sent`` (messages
it POSTed, with ``payload``, ``files``, ``reference``, ``allowed_mentions``), ``edits``,
``deletes``, ``reactions``, ``typing`` (channels), ``commands`` (current registration per guild id,
``None`` for global), ``command_registrations`` (history), ``interactions`` and
``interaction_responses``, ``identifies``, ``resumes``, ``heartbeats``, ``presence_updates``,
``member_requests``, ``gateway_closes`` (codes the fake closed its sockets with). Waiting:
``wait_for(check)``, ``wait_for_sent``, ``wait_for_typing``, ``wait_for_response``,
``wait_connected``.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import json
import math
import mimetypes
import re
import secrets
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar
from urllib.parse import quote

from aiohttp import WSMsgType, web

from ._local import LocalServer, QueuedWebSocket
from .discord_voice import FakeVoiceServer

__all__ = [
    "API_VERSION",
    "ChannelType",
    "FailRule",
    "FakeAttachment",
    "FakeBot",
    "FakeChannel",
    "FakeDiscord",
    "FakeGuild",
    "FakeInteraction",
    "FakeMember",
    "FakeMessage",
    "FakeRole",
    "FakeUser",
    "FakeVoiceState",
    "Intents",
    "InteractionResponse",
    "Overwrite",
    "Permissions",
    "RecordedRequest",
    "UploadedFile",
]

T = TypeVar("T")

API_VERSION = 10
DISCORD_EPOCH_MS = 1_420_070_400_000
MAX_CONTENT = 2000
#: Upload limits per file by boost tier, as Discord has them since 2024.
#: Discord forgets an interaction whose first answer (the callback) comes later than this.
INTERACTION_WINDOW_S = 3.0
_COMPONENT_ROW, _COMPONENT_BUTTON, _COMPONENT_SELECT, _COMPONENT_TEXT_INPUT, _LINK_STYLE = 1, 2, 3, 4, 5
_MAX_SELECT_OPTIONS, _MAX_OPTION_TEXT, _MAX_PLACEHOLDER = 25, 100, 150
_MAX_MODAL_TITLE, _MAX_INPUT_LABEL, _MAX_INPUT_TEXT = 45, 45, 4000
_MAX_ROWS, _MAX_ROW_BUTTONS, _MAX_CUSTOM_ID, _MAX_BUTTON_LABEL = 5, 5, 100, 80
UPLOAD_LIMITS = {0: 10 * 1024 * 1024, 1: 10 * 1024 * 1024, 2: 50 * 1024 * 1024, 3: 100 * 1024 * 1024}


def _invalid_form(where: str, message: str, code: str) -> _HTTPError:
    """Discord's 50035 naming the field ``where`` and what is wrong with it."""
    return _HTTPError(400, 50035, "Invalid Form Body", {where: {"_errors": [{"code": code, "message": message}]}})


def _invalid_component(where: str, message: str) -> _HTTPError:
    return _invalid_form(where, message, "COMPONENT_INVALID")


def _validate_select(item: dict[str, Any], where: str) -> None:
    """A string select as Discord takes it (see :meth:`FakeDiscord._validate_components`)."""
    custom_id, options = item.get("custom_id"), item.get("options")
    if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= _MAX_CUSTOM_ID:
        raise _invalid_component(f"{where}.custom_id", f"Must be between 1 and {_MAX_CUSTOM_ID} in length.")
    if not isinstance(options, list) or not 1 <= len(options) <= _MAX_SELECT_OPTIONS:
        raise _invalid_component(f"{where}.options", f"Must be between 1 and {_MAX_SELECT_OPTIONS} in length.")
    values = [o.get("value") if isinstance(o, dict) else None for o in options]
    for o, option in enumerate(options):
        for key in ("label", "value"):
            text = option.get(key) if isinstance(option, dict) else None
            if not isinstance(text, str) or not 1 <= len(text) <= _MAX_OPTION_TEXT:
                raise _invalid_component(
                    f"{where}.options.{o}.{key}", f"Must be between 1 and {_MAX_OPTION_TEXT} in length."
                )
    if len(set(values)) != len(values):
        raise _invalid_component(f"{where}.options", "Select option values must be unique.")
    if len(str(item.get("placeholder") or "")) > _MAX_PLACEHOLDER:
        raise _invalid_component(f"{where}.placeholder", f"Must be {_MAX_PLACEHOLDER} or fewer in length.")
    low, high = item.get("min_values", 1), item.get("max_values", 1)
    if not (isinstance(low, int) and isinstance(high, int) and 0 <= low <= high and 1 <= high <= len(options)):
        raise _invalid_component(f"{where}.max_values", "min_values and max_values do not fit the options.")


class Intents:
    """Gateway intent bits."""

    GUILDS = 1 << 0
    GUILD_MEMBERS = 1 << 1
    GUILD_VOICE_STATES = 1 << 7
    GUILD_PRESENCES = 1 << 8
    GUILD_MESSAGES = 1 << 9
    GUILD_MESSAGE_REACTIONS = 1 << 10
    GUILD_MESSAGE_TYPING = 1 << 11
    DIRECT_MESSAGES = 1 << 12
    DIRECT_MESSAGE_REACTIONS = 1 << 13
    DIRECT_MESSAGE_TYPING = 1 << 14
    MESSAGE_CONTENT = 1 << 15
    VALID = sum(1 << bit for bit in (*range(17), 20, 21, 24, 25))
    PRIVILEGED = GUILD_MEMBERS | GUILD_PRESENCES | MESSAGE_CONTENT


class Permissions:
    """Permission bits."""

    CREATE_INSTANT_INVITE = 1 << 0
    ADMINISTRATOR = 1 << 3
    ADD_REACTIONS = 1 << 6
    STREAM = 1 << 9
    VIEW_CHANNEL = 1 << 10
    SEND_MESSAGES = 1 << 11
    MANAGE_MESSAGES = 1 << 13
    EMBED_LINKS = 1 << 14
    ATTACH_FILES = 1 << 15
    READ_MESSAGE_HISTORY = 1 << 16
    MENTION_EVERYONE = 1 << 17
    USE_EXTERNAL_EMOJIS = 1 << 18
    CONNECT = 1 << 20
    SPEAK = 1 << 21
    USE_VAD = 1 << 25
    CHANGE_NICKNAME = 1 << 26
    USE_APPLICATION_COMMANDS = 1 << 31
    MANAGE_THREADS = 1 << 34
    CREATE_PUBLIC_THREADS = 1 << 35
    CREATE_PRIVATE_THREADS = 1 << 36
    SEND_MESSAGES_IN_THREADS = 1 << 38
    SEND_VOICE_MESSAGES = 1 << 46
    ALL = sum(1 << bit for bit in range(53) if bit != 47)
    DEFAULT_EVERYONE = (
        CREATE_INSTANT_INVITE
        | ADD_REACTIONS
        | STREAM
        | VIEW_CHANNEL
        | SEND_MESSAGES
        | EMBED_LINKS
        | ATTACH_FILES
        | READ_MESSAGE_HISTORY
        | MENTION_EVERYONE
        | USE_EXTERNAL_EMOJIS
        | CONNECT
        | SPEAK
        | USE_VAD
        | CHANGE_NICKNAME
        | USE_APPLICATION_COMMANDS
        | CREATE_PUBLIC_THREADS
        | CREATE_PRIVATE_THREADS
        | SEND_MESSAGES_IN_THREADS
        | SEND_VOICE_MESSAGES
    )
    DM = VIEW_CHANNEL | SEND_MESSAGES | EMBED_LINKS | ATTACH_FILES | READ_MESSAGE_HISTORY | ADD_REACTIONS


class ChannelType:
    TEXT = 0
    DM = 1
    VOICE = 2
    CATEGORY = 4
    NEWS = 5
    NEWS_THREAD = 10
    PUBLIC_THREAD = 11
    PRIVATE_THREAD = 12
    STAGE = 13
    FORUM = 15
    BY_NAME: ClassVar[dict[str, int]] = {
        "text": 0,
        "voice": 2,
        "category": 4,
        "news": 5,
        "announcement": 5,
        "stage": 13,
        "forum": 15,
    }
    THREADS = (NEWS_THREAD, PUBLIC_THREAD, PRIVATE_THREAD)
    MESSAGEABLE = (TEXT, DM, VOICE, NEWS, NEWS_THREAD, PUBLIC_THREAD, PRIVATE_THREAD, STAGE)


_OPTION_SUBCOMMAND, _OPTION_GROUP = 1, 2
_OPTION_USER, _OPTION_CHANNEL, _OPTION_ROLE, _OPTION_MENTIONABLE, _OPTION_ATTACHMENT = 6, 7, 8, 9, 11
_EPHEMERAL, _LOADING = 1 << 6, 1 << 7
_ZSTD: Any = None
try:  # discord.py asks for zstd-stream whenever it can import a zstd module, so match it.
    import zstandard as _zstandard

    _ZSTD = "zstandard"
except ImportError:  # pragma: no cover - depends on the environment
    try:
        from compression import zstd as _stdlib_zstd

        _ZSTD = "compression.zstd"
    except ImportError:
        pass


# -- the world -------------------------------------------------------------------------------


@dataclass(eq=False)
class FakeUser:
    """A Discord user (people and bots alike)."""

    id: int
    name: str
    global_name: str | None = None
    bot: bool = False

    @property
    def mention(self) -> str:
        return f"<@{self.id}>"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.id}>"


@dataclass(eq=False, repr=False)
class FakeBot(FakeUser):
    """A bot account with its application; the recorded traffic lives here."""

    token: str = ""
    application_id: int = 0
    message_content_intent: bool = True
    members_intent: bool = True
    presence_intent: bool = True
    owner: FakeUser | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    sent: list[FakeMessage] = field(default_factory=list)
    """Messages this bot POSTed to channels (interaction messages are in interaction_responses)."""
    edits: list[tuple[FakeMessage, dict[str, Any]]] = field(default_factory=list)
    deletes: list[FakeMessage] = field(default_factory=list)
    reactions: list[tuple[FakeMessage, str]] = field(default_factory=list)
    typing: list[FakeChannel] = field(default_factory=list)
    commands: dict[int | None, list[dict[str, Any]]] = field(default_factory=dict)
    """The registered commands per guild id (``None``: global), as the fake answered them."""
    command_registrations: list[tuple[int | None, list[dict[str, Any]]]] = field(default_factory=list)
    """Every bulk overwrite / create, in order: (guild id or None, commands as sent)."""
    interactions: list[FakeInteraction] = field(default_factory=list)
    interaction_responses: list[InteractionResponse] = field(default_factory=list)
    identifies: list[dict[str, Any]] = field(default_factory=list)
    """IDENTIFY payloads (token left out)."""
    resumes: list[dict[str, Any]] = field(default_factory=list)
    heartbeats: int = 0
    presence_updates: list[dict[str, Any]] = field(default_factory=list)
    member_requests: list[dict[str, Any]] = field(default_factory=list)
    gateway_closes: list[int] = field(default_factory=list)
    revoked: bool = False
    """Its token is refused everywhere (``FakeDiscord.revoke``)."""
    voice_state_updates: list[dict[str, Any]] = field(default_factory=list)
    """Gateway op 4 payloads (join, move, leave voice), in order."""
    shards: int = 1
    """The shard count Discord requires (a bot in many servers): ``/gateway/bot`` recommends it,
    and an IDENTIFY with fewer shards (or none, above 1) is closed with 4011 Sharding required."""

    @property
    def application_flags(self) -> int:
        flags = 1 << 23  # APPLICATION_COMMAND_BADGE
        if self.presence_intent:
            flags |= 1 << 12
        if self.members_intent:
            flags |= 1 << 14
        if self.message_content_intent:
            flags |= 1 << 18
        return flags


@dataclass(eq=False)
class FakeRole:
    id: int
    guild: FakeGuild
    name: str
    permissions: int = 0
    position: int = 0
    color: int = 0
    hoist: bool = False
    mentionable: bool = False

    @property
    def mention(self) -> str:
        return "@everyone" if self.id == self.guild.id else f"<@&{self.id}>"

    def __repr__(self) -> str:
        return f"<FakeRole {self.name} {self.id}>"


@dataclass(eq=False)
class FakeMember:
    user: FakeUser
    guild: FakeGuild
    roles: list[FakeRole] = field(default_factory=list)
    nick: str | None = None
    joined_at: str = ""


@dataclass(frozen=True)
class Overwrite:
    """A channel permission overwrite for a role (``guild.everyone`` included) or a user."""

    target: FakeRole | FakeUser
    allow: int = 0
    deny: int = 0


@dataclass(eq=False)
class FakeGuild:
    id: int
    name: str
    owner: FakeUser
    roles: dict[int, FakeRole] = field(default_factory=dict)
    members: dict[int, FakeMember] = field(default_factory=dict)
    channels: dict[int, FakeChannel] = field(default_factory=dict)
    """Guild channels and threads."""
    voice_states: dict[int, FakeVoiceState] = field(default_factory=dict)
    """Who is in which voice channel, by user id."""
    premium_tier: int = 0
    """The server's boost level: tiers 2 and 3 take larger uploads (:data:`UPLOAD_LIMITS`)."""

    @property
    def upload_limit(self) -> int:
        return UPLOAD_LIMITS[self.premium_tier]

    @property
    def everyone(self) -> FakeRole:
        return self.roles[self.id]

    @property
    def admin_role(self) -> FakeRole:
        return next(r for r in self.roles.values() if r.name == "Admin")

    def __repr__(self) -> str:
        return f"<FakeGuild {self.name} {self.id}>"


@dataclass(eq=False)
class FakeChannel:
    id: int
    type: int
    name: str
    guild: FakeGuild | None = None
    parent: FakeChannel | None = None
    position: int = 0
    topic: str | None = None
    nsfw: bool = False
    overwrites: list[Overwrite] = field(default_factory=list)
    recipients: list[FakeUser] = field(default_factory=list)
    """DM channels: the two ends."""
    owner: FakeUser | None = None
    """Threads: who started it."""
    thread_members: set[int] = field(default_factory=set)
    archived: bool = False
    locked: bool = False
    messages: dict[int, FakeMessage] = field(default_factory=dict)
    last_message_id: int | None = None
    message_count: int = 0

    @property
    def mention(self) -> str:
        return f"<#{self.id}>"

    @property
    def is_thread(self) -> bool:
        return self.type in ChannelType.THREADS

    @property
    def is_dm(self) -> bool:
        return self.type == ChannelType.DM

    def __repr__(self) -> str:
        return f"<FakeChannel {self.name} type={self.type} {self.id}>"


@dataclass(eq=False)
class FakeVoiceState:
    """A user (or bot) in a guild's voice channel."""

    user: FakeUser
    channel: FakeChannel
    session_id: str
    """The gateway session of a bot; a random one for a simulated user."""
    self_mute: bool = False
    self_deaf: bool = False
    mute: bool = False
    deaf: bool = False

    def __repr__(self) -> str:
        return f"<FakeVoiceState {self.user.name} in {self.channel.name}>"


@dataclass(frozen=True)
class UploadedFile:
    """A file part of a multipart request."""

    field: str
    filename: str
    content_type: str | None
    data: bytes


@dataclass(eq=False)
class FakeAttachment:
    id: int
    filename: str
    data: bytes
    content_type: str | None
    url: str
    description: str | None = None

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(eq=False)
class FakeMessage:
    id: int
    channel: FakeChannel
    author: FakeUser
    content: str = ""
    type: int = 0
    attachments: list[FakeAttachment] = field(default_factory=list)
    embeds: list[dict[str, Any]] = field(default_factory=list)
    components: list[dict[str, Any]] = field(default_factory=list)
    reference: FakeMessage | None = None
    """The message this one replies to."""
    mentions: list[FakeUser] = field(default_factory=list)
    mention_roles: list[int] = field(default_factory=list)
    mention_everyone: bool = False
    tts: bool = False
    nonce: int | str | None = None
    flags: int = 0
    edited_timestamp: str | None = None
    webhook_id: int | None = None
    application_id: int | None = None
    interaction: FakeInteraction | None = None
    reactions: dict[str, list[int]] = field(default_factory=dict)
    """Emoji (``"👍"`` or ``"name:id"``) to the ids of users who reacted."""
    deleted: bool = False
    payload: dict[str, Any] | None = None
    """What the bot sent (JSON body or ``payload_json``), for bot-authored messages."""
    files: list[UploadedFile] = field(default_factory=list)

    @property
    def allowed_mentions(self) -> dict[str, Any] | None:
        return (self.payload or {}).get("allowed_mentions")

    @property
    def message_reference(self) -> dict[str, Any] | None:
        return (self.payload or {}).get("message_reference")

    @property
    def guild(self) -> FakeGuild | None:
        return self.channel.guild

    def __repr__(self) -> str:
        return f"<FakeMessage {self.id} by {self.author.name} in {self.channel.name}: {self.content!r}>"


@dataclass(frozen=True)
class InteractionResponse:
    """One answer of a bot to an interaction."""

    interaction: FakeInteraction
    kind: str
    """``callback``, ``followup``, ``edit`` (of the original or a followup) or ``delete``."""
    type: int | None
    """The callback type (4 message, 5 deferred, 6/7 component, 8 autocomplete, 9 modal)."""
    payload: dict[str, Any]
    files: list[UploadedFile]
    message: FakeMessage | None
    at: float = field(default_factory=time.monotonic)
    """When it arrived (``time.monotonic()``)."""


@dataclass(eq=False)
class FakeInteraction:
    id: int
    token: str
    bot: FakeBot
    user: FakeUser
    channel: FakeChannel
    command: dict[str, Any]
    """The command invoked (``{}`` for a component interaction)."""
    data: dict[str, Any]
    """The ``data`` object of INTERACTION_CREATE (name, options, resolved ...; custom_id and
    component_type for a component)."""
    acknowledged: bool = False
    original: FakeMessage | None = None
    followups: list[FakeMessage] = field(default_factory=list)
    responses: list[InteractionResponse] = field(default_factory=list)
    type: int = 2
    """2 an application command, 3 a message component, 5 a modal submitted."""
    message: FakeMessage | None = None
    """The message whose component was used (component interactions, and a modal opened from one)."""
    modal: dict[str, Any] | None = None
    """The modal the bot answered it with (a callback of type 9), which the user may submit."""
    payload: dict[str, Any] = field(default_factory=dict)
    """The INTERACTION_CREATE as dispatched (what :meth:`FakeDiscord.redeliver` sends again)."""
    dispatched: list[float] = field(default_factory=list)
    """When INTERACTION_CREATE was written to the bot's socket (``time.monotonic()``), each time."""


@dataclass
class RecordedRequest:
    """One REST request as the server saw it; the token itself is never kept."""

    bot: FakeBot | None
    method: str
    path: str
    """The path after the API base, e.g. ``/channels/123/messages``."""
    query: dict[str, str]
    json: Any
    """The JSON body, or the parsed ``payload_json`` of a multipart body."""
    files: list[UploadedFile]
    headers: dict[str, str]
    status: int | None = None


@dataclass
class FailRule:
    method: str
    pattern: re.Pattern[str]
    status: int
    retry_after: float
    times: int | None
    global_: bool
    bot: FakeBot | None
    code: int | None
    message: str | None
    hits: int = 0
    after: int = 0
    """Matching requests to let through before failing (the second part of a long reply, say)."""

    def matches(self, method: str, path: str, bot: FakeBot | None) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if self.method not in ("*", method):
            return False
        if self.bot is not None and self.bot is not bot:
            return False
        return self.pattern.search(path) is not None


class _HTTPError(Exception):
    def __init__(self, status: int, code: int, message: str, errors: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.errors = status, code, message, errors


def _json_response(data: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """JSON with exactly ``Content-Type: application/json``, as Discord sends it: discord.py's
    ``json_or_text`` compares the header verbatim, so aiohttp's ``; charset=utf-8`` would turn
    every answer into a string."""
    body = json.dumps(data, ensure_ascii=False).encode()
    return web.Response(body=body, status=status, headers={**(headers or {}), "Content-Type": "application/json"})


def _unknown(kind: str, code: int) -> _HTTPError:
    return _HTTPError(404, code, f"Unknown {kind}")


# -- gateway plumbing ------------------------------------------------------------------------


class _Connection(QueuedWebSocket):
    """One gateway websocket, its frames compressed as the client asked."""

    def __init__(self, ws: web.WebSocketResponse, request: web.Request, compress: str | None) -> None:
        self.compress = compress
        self.session: _Session | None = None
        self.bot: FakeBot | None = None
        self._zlib = zlib.compressobj() if compress == "zlib-stream" else None
        self._zstd: Any = None
        if compress == "zstd-stream":
            if _ZSTD == "zstandard":
                self._zstd = _zstandard.ZstdCompressor().compressobj()
            else:
                self._zstd = _stdlib_zstd.ZstdCompressor()
        super().__init__(ws, request)

    def abort(self) -> None:
        """Cut the TCP connection without a close frame."""
        self.alive = False
        transport = self.request.transport
        if transport is not None:
            transport.abort()

    def _encode(self, frame: dict[str, Any]) -> str | bytes:
        text = json.dumps(frame, separators=(",", ":"), ensure_ascii=False)
        if self._zlib is not None:
            return self._zlib.compress(text.encode()) + self._zlib.flush(zlib.Z_SYNC_FLUSH)
        if self._zstd is not None:
            if _ZSTD == "zstandard":
                return self._zstd.compress(text.encode()) + self._zstd.flush(_zstandard.COMPRESSOBJ_FLUSH_BLOCK)
            return self._zstd.compress(text.encode(), mode=_stdlib_zstd.ZstdCompressor.FLUSH_BLOCK)
        return text


@dataclass(eq=False)
class _Session:
    id: str
    bot: FakeBot
    intents: int
    shard: tuple[int, int] | None
    seq: int = 0
    buffer: list[dict[str, Any]] = field(default_factory=list)
    conn: _Connection | None = None

    def covers(self, guild_id: int | None) -> bool:
        if self.shard is None:
            return True
        shard_id, count = self.shard
        if guild_id is None:
            return shard_id == 0
        return (guild_id >> 22) % count == shard_id

    def has(self, intent: int) -> bool:
        return bool(self.intents & intent)


_Handler = Callable[..., Any]


# -- the server ------------------------------------------------------------------------------


class FakeDiscord(LocalServer):
    """Discord's REST API and gateway on ``127.0.0.1`` (a free port), in the running loop.

    Use as an async context manager, or ``await start()`` and ``await close()``; ``close()``
    may be called any number of times.
    """

    __test__ = False

    def __init__(
        self,
        *,
        heartbeat_interval: int = 41_250,
        ack_heartbeats: bool = True,
        members_in_guild_create: bool = True,
        voice: FakeVoiceServer | None = None,
    ) -> None:
        self.voice = voice if voice is not None else FakeVoiceServer()
        """The voice server VOICE_SERVER_UPDATE points at, started and closed with this one
        (see tests/fakes/discord_voice.py); pass one to configure it (DAVE, modes, ...)."""
        self.heartbeat_interval = heartbeat_interval
        """HELLO's heartbeat interval, in milliseconds."""
        self.ack_heartbeats = ack_heartbeats
        """Answer HEARTBEAT with HEARTBEAT_ACK (turn off to test zombie-connection handling)."""
        self.members_in_guild_create = members_in_guild_create
        self.interaction_window = INTERACTION_WINDOW_S
        """Seconds after its first dispatch within which an interaction may be answered (its
        callback); later, Discord no longer knows it (10062). Tests may shorten it."""
        """With the members intent, put every member in GUILD_CREATE (so discord.py has nothing to
        chunk). ``False`` sends only the bot's own member, as Discord does for large guilds:
        discord.py then sends REQUEST_GUILD_MEMBERS before on_ready."""
        self.requests: list[RecordedRequest] = []
        self.users: dict[int, FakeUser] = {}
        self.bots: dict[str, FakeBot] = {}
        self.guilds: dict[int, FakeGuild] = {}
        self.channels: dict[int, FakeChannel] = {}
        self.messages: dict[int, FakeMessage] = {}
        self.gateway_connections = 0
        self.gateway_queries: list[dict[str, str]] = []
        """The query string of every gateway connection (``v``, ``encoding``, ``compress``)."""
        self._fail_rules: list[FailRule] = []
        self._sessions: list[_Session] = []
        self._connections: set[_Connection] = set()
        self._dms: dict[frozenset[int], FakeChannel] = {}
        self._interactions: dict[int, FakeInteraction] = {}
        self._attachments: dict[int, FakeAttachment] = {}
        self._last_id = 0
        self._increment = 0
        self._restore: list[tuple[Any, str, Any]] = []
        self._routes = self._route_table()
        super().__init__()

    # -- lifecycle ------------------------------------------------------------------------

    def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/", self._gateway)
        app.router.add_get("/resume", self._gateway)
        app.router.add_get("/attachments/{channel_id}/{attachment_id}/{filename}", self._attachment)
        app.router.add_route("*", "/api/v{version:\\d+}/{tail:.*}", self._rest)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        return app

    async def start(self) -> None:
        """Listen on a free port, and start the voice server. Raises RuntimeError if already started."""
        await super().start()
        await self.voice.start()

    async def _closing(self) -> None:
        for owner, name, value in reversed(self._restore):  # undo patch_discord()
            setattr(owner, name, value)
        self._restore.clear()
        for conn in list(self._connections):
            conn.close(1001, "going away")
        for conn in list(self._connections):
            await conn.flush(0.5)
            await conn.stop()

    async def close(self) -> None:
        """Close every gateway socket and the voice server, stop listening, undo
        patch_discord(). Idempotent."""
        await super().close()
        await self.voice.close()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        """What ``discord.http.Route.BASE`` should be: ``http://127.0.0.1:PORT/api/v10``."""
        return f"{self.url}/api/v{API_VERSION}"

    @property
    def gateway_url(self) -> str:
        """The websocket URL ``/gateway/bot`` answers with: ``ws://127.0.0.1:PORT/``."""
        return f"ws://127.0.0.1:{self.port}/"

    @property
    def resume_gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/resume"

    def patch_discord(self) -> None:
        """Point discord.py here: ``Route.BASE`` and ``DiscordWebSocket.DEFAULT_GATEWAY``.

        ``close()`` restores the previous values.
        """
        import discord.gateway
        import discord.http
        import yarl

        route, socket = discord.http.Route, discord.gateway.DiscordWebSocket
        self._restore.append((route, "BASE", route.BASE))
        self._restore.append((socket, "DEFAULT_GATEWAY", socket.DEFAULT_GATEWAY))
        route.BASE = self.api_base
        socket.DEFAULT_GATEWAY = yarl.URL(self.gateway_url)

    # -- ids, times, waiting --------------------------------------------------------------

    def new_id(self) -> int:
        """A fresh snowflake: timestamp-based, strictly increasing, and at most one per
        millisecond, so that messages said together differ in time, as people's do on Discord
        (troupe orders a room's history by time; a test's burst would otherwise tie)."""
        millis = max(int(time.time() * 1000) - DISCORD_EPOCH_MS, (self._last_id >> 22) + 1)
        self._increment = (self._increment + 1) & 0xFFF
        snowflake = (millis << 22) | (1 << 17) | self._increment
        self._last_id = snowflake
        return snowflake

    @staticmethod
    def _iso(snowflake: int) -> str:
        millis = (snowflake >> 22) + DISCORD_EPOCH_MS
        stamp = datetime.datetime.fromtimestamp(millis / 1000, datetime.UTC)
        return stamp.isoformat(timespec="microseconds")

    @staticmethod
    def _now() -> str:
        return datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds")

    async def wait_for_sent(
        self, bot: FakeBot, count: int = 1, timeout: float = 30.0, *, channel: FakeChannel | None = None
    ) -> list[FakeMessage]:
        """Wait until ``bot`` has POSTed ``count`` messages (in ``channel``); return them all."""

        def sent() -> list[FakeMessage]:
            messages = [m for m in bot.sent if channel is None or m.channel is channel]
            return messages if len(messages) >= count else []

        try:
            return await self.wait_for(sent, timeout, f"{count} message(s) from {bot.name}")
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; sent so far: {bot.sent!r}") from None

    async def wait_for_typing(
        self, bot: FakeBot, count: int = 1, timeout: float = 30.0, *, channel: FakeChannel | None = None
    ) -> list[FakeChannel]:
        def typed() -> list[FakeChannel]:
            calls = [c for c in bot.typing if channel is None or c is channel]
            return calls if len(calls) >= count else []

        return await self.wait_for(typed, timeout, f"{count} typing call(s) from {bot.name}")

    async def wait_for_response(
        self, interaction: FakeInteraction, count: int = 1, timeout: float = 30.0
    ) -> list[InteractionResponse]:
        """Wait until the bot has answered ``interaction`` ``count`` times (callback, followups ...)."""

        def answered() -> list[InteractionResponse]:
            return list(interaction.responses) if len(interaction.responses) >= count else []

        return await self.wait_for(answered, timeout, f"{count} response(s) to interaction {interaction.id}")

    def is_connected(self, bot: FakeBot) -> bool:
        """Whether ``bot`` has a live, identified or resumed gateway session."""
        return any(s.conn is not None and s.conn.alive for s in self._sessions if s.bot is bot)

    async def wait_connected(self, bot: FakeBot, timeout: float = 30.0) -> None:
        await self.wait_for(lambda: self.is_connected(bot), timeout, f"{bot.name} to connect")

    # -- building the world ---------------------------------------------------------------

    def add_user(self, name: str, *, global_name: str | None = None, bot: bool = False) -> FakeUser:
        user = FakeUser(self.new_id(), name, global_name, bot)
        self.users[user.id] = user
        return user

    def add_bot(
        self,
        token: str,
        name: str,
        *,
        message_content_intent: bool = True,
        members_intent: bool = True,
        presence_intent: bool = True,
        owner: FakeUser | None = None,
    ) -> FakeBot:
        """A bot user and its application (same id). The ``*_intent`` flags are the privileged
        intents enabled for the application in the developer portal."""
        if token in self.bots:
            raise ValueError(f"token {token!r} already belongs to {self.bots[token].name}")
        bot_id = self.new_id()
        bot = FakeBot(
            bot_id,
            name,
            None,
            True,
            token=token,
            application_id=bot_id,
            message_content_intent=message_content_intent,
            members_intent=members_intent,
            presence_intent=presence_intent,
            owner=owner or self.add_user(f"{name} developer"),
        )
        self.users[bot.id] = bot
        self.bots[token] = bot
        return bot

    def add_guild(
        self,
        name: str,
        *,
        owner: FakeUser | None = None,
        members: Iterable[FakeUser] = (),
        admins: Iterable[FakeUser] = (),
        everyone_permissions: int = Permissions.DEFAULT_EVERYONE,
    ) -> FakeGuild:
        """A guild with an ``@everyone`` role and an ``Admin`` role (ADMINISTRATOR) given to
        ``admins``. The owner, members and admins all join (owner first)."""
        members, admins = list(members), list(admins)
        if owner is None:
            owner = members[0] if members else self.add_user(f"{name} owner")
        guild = FakeGuild(self.new_id(), name, owner)
        guild.roles[guild.id] = FakeRole(guild.id, guild, "@everyone", everyone_permissions, 0)
        admin = FakeRole(self.new_id(), guild, "Admin", Permissions.ADMINISTRATOR, 1, hoist=True)
        guild.roles[admin.id] = admin
        self.guilds[guild.id] = guild
        for user in [owner, *members, *admins]:
            if user.id not in guild.members:
                guild.members[user.id] = FakeMember(user, guild, joined_at=self._now())
        for user in admins:
            guild.members[user.id].roles.append(admin)
        for session in self._sessions:
            if session.bot.id in guild.members and session.covers(guild.id) and session.has(Intents.GUILDS):
                self._dispatch(session, "GUILD_CREATE", self._guild_create(guild, session))
        return guild

    def add_role(
        self,
        guild: FakeGuild,
        name: str,
        *,
        permissions: int = 0,
        members: Iterable[FakeUser] = (),
        hoist: bool = False,
        mentionable: bool = False,
        color: int = 0,
    ) -> FakeRole:
        position = max(r.position for r in guild.roles.values()) + 1
        role = FakeRole(self.new_id(), guild, name, permissions, position, color, hoist, mentionable)
        guild.roles[role.id] = role
        for user in members:
            guild.members[user.id].roles.append(role)
        self._dispatch_guild(
            guild, Intents.GUILDS, "GUILD_ROLE_CREATE", {"guild_id": str(guild.id), "role": self._role_payload(role)}
        )
        return role

    def add_channel(
        self,
        guild: FakeGuild,
        name: str,
        type: str | int = "text",
        *,
        parent: FakeChannel | None = None,
        topic: str | None = None,
        overwrites: Iterable[Overwrite] = (),
        nsfw: bool = False,
        position: int | None = None,
    ) -> FakeChannel:
        """A guild channel: ``text``, ``voice``, ``category``, ``news``, ``forum``, ``stage``
        (or a channel type number). ``parent`` is a category."""
        kind = ChannelType.BY_NAME[type] if isinstance(type, str) else type
        if position is None:
            position = sum(1 for c in guild.channels.values() if not c.is_thread)
        channel = FakeChannel(self.new_id(), kind, name, guild, parent, position, topic, nsfw, list(overwrites))
        guild.channels[channel.id] = channel
        self.channels[channel.id] = channel
        self._dispatch_guild(guild, Intents.GUILDS, "CHANNEL_CREATE", self._channel_payload(channel))
        return channel

    def add_thread(
        self,
        channel: FakeChannel,
        name: str,
        *,
        owner: FakeUser | None = None,
        private: bool = False,
        members: Iterable[FakeUser] = (),
        message: FakeMessage | None = None,
        content: str | None = None,
    ) -> FakeChannel:
        """A thread in a text, news or forum channel. ``message``: start it from that message
        (the thread gets its id, as on Discord); ``content``: a forum post's first message."""
        guild = channel.guild
        if guild is None or channel.type not in (ChannelType.TEXT, ChannelType.NEWS, ChannelType.FORUM):
            raise ValueError(f"cannot start a thread in {channel!r}")
        owner = owner or guild.owner
        if channel.type == ChannelType.NEWS:
            kind = ChannelType.NEWS_THREAD
        else:
            kind = ChannelType.PRIVATE_THREAD if private else ChannelType.PUBLIC_THREAD
        thread_id = message.id if message is not None else self.new_id()
        thread = FakeChannel(thread_id, kind, name, guild, channel, owner=owner)
        thread.thread_members = {owner.id, *(u.id for u in members)}
        guild.channels[thread.id] = thread
        self.channels[thread.id] = thread
        self._dispatch_thread_create(thread)
        if content is not None:
            starter = self._create_message(thread, owner, content=content, message_id=thread.id)
            self._dispatch_message("MESSAGE_CREATE", starter)
        return thread

    async def rename_channel(self, channel: FakeChannel, name: str) -> None:
        """Rename a guild channel or thread: CHANNEL_UPDATE (THREAD_UPDATE) to bots with GUILDS."""
        if channel.guild is None:
            raise ValueError(f"{channel!r} is not in a server")
        channel.name = name
        event = "THREAD_UPDATE" if channel.is_thread else "CHANNEL_UPDATE"
        self._dispatch_guild(channel.guild, Intents.GUILDS, event, self._channel_payload(channel))
        self._changed()
        await self._flush()

    async def delete_channel(self, channel: FakeChannel) -> None:
        """Delete a guild channel (not a thread): CHANNEL_DELETE to bots with GUILDS."""
        guild = channel.guild
        if guild is None or channel.is_thread:
            raise ValueError(f"cannot delete {channel!r}: only a server's channels")
        payload = self._channel_payload(channel)
        del guild.channels[channel.id], self.channels[channel.id]
        self._dispatch_guild(guild, Intents.GUILDS, "CHANNEL_DELETE", payload)
        self._changed()
        await self._flush()

    def dm_channel(self, user: FakeUser, other: FakeUser) -> FakeChannel:
        """The DM channel between two users, created on first use."""
        key = frozenset((user.id, other.id))
        channel = self._dms.get(key)
        if channel is None:
            channel = FakeChannel(self.new_id(), ChannelType.DM, "", recipients=[user, other])
            self._dms[key] = channel
            self.channels[channel.id] = channel
        return channel

    def get_message(self, message_id: int) -> FakeMessage:
        return self.messages[message_id]

    def messages_in(self, channel: FakeChannel) -> list[FakeMessage]:
        """The channel's messages that were not deleted, oldest first."""
        return [m for m in channel.messages.values() if not m.deleted]

    # -- permissions ----------------------------------------------------------------------

    def guild_permissions(self, user: FakeUser, guild: FakeGuild) -> int:
        """``user``'s guild-wide permissions: @everyone and its roles; everything for the owner
        and administrators."""
        member = guild.members.get(user.id)
        if member is None:
            return 0
        if guild.owner.id == user.id:
            return Permissions.ALL
        perms = guild.everyone.permissions
        for role in member.roles:
            perms |= role.permissions
        return Permissions.ALL if perms & Permissions.ADMINISTRATOR else perms

    def permissions(self, user: FakeUser, channel: FakeChannel) -> int:
        """``user``'s permissions in ``channel``, computed as Discord does."""
        if channel.is_dm:
            return Permissions.DM if any(u.id == user.id for u in channel.recipients) else 0
        guild = channel.guild
        assert guild is not None
        member = guild.members.get(user.id)
        if member is None:
            return 0
        perms = self.guild_permissions(user, guild)
        if perms == Permissions.ALL:
            return perms
        base = channel.parent if channel.is_thread and channel.parent is not None else channel
        role_ids = {r.id for r in member.roles}
        everyone = [o for o in base.overwrites if isinstance(o.target, FakeRole) and o.target.id == guild.id]
        roles = [o for o in base.overwrites if isinstance(o.target, FakeRole) and o.target.id in role_ids]
        users = [o for o in base.overwrites if not isinstance(o.target, FakeRole) and o.target.id == user.id]
        for group in (everyone, roles, users):
            deny = allow = 0
            for overwrite in group:
                deny |= overwrite.deny
                allow |= overwrite.allow
            perms = (perms & ~deny) | allow
        if not perms & Permissions.VIEW_CHANNEL:
            return 0
        private = channel.type == ChannelType.PRIVATE_THREAD and user.id not in channel.thread_members
        if private and not perms & Permissions.MANAGE_THREADS:
            return 0
        return perms

    def can_view(self, user: FakeUser, channel: FakeChannel) -> bool:
        return bool(self.permissions(user, channel) & Permissions.VIEW_CHANNEL)

    # -- payloads -------------------------------------------------------------------------

    @staticmethod
    def _user_payload(user: FakeUser) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "id": str(user.id),
            "username": user.name,
            "discriminator": "0",
            "global_name": user.global_name,
            "avatar": None,
            "avatar_decoration_data": None,
            "collectibles": None,
            "primary_guild": None,
            "public_flags": 0,
        }
        if user.bot:
            payload["bot"] = True
        return payload

    def _self_payload(self, bot: FakeBot) -> dict[str, Any]:
        return {
            **self._user_payload(bot),
            "flags": 0,
            "banner": None,
            "accent_color": None,
            "bio": "",
            "locale": "en-US",
            "mfa_enabled": False,
            "verified": True,
            "email": None,
        }

    def _role_payload(self, role: FakeRole) -> dict[str, Any]:
        return {
            "id": str(role.id),
            "name": role.name,
            "color": role.color,
            "colors": {"primary_color": role.color, "secondary_color": None, "tertiary_color": None},
            "hoist": role.hoist,
            "icon": None,
            "unicode_emoji": None,
            "position": role.position,
            "permissions": str(role.permissions),
            "managed": False,
            "mentionable": role.mentionable,
            "flags": 0,
        }

    def _member_payload(self, member: FakeMember, *, with_user: bool = True) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "roles": [str(r.id) for r in member.roles],
            "nick": member.nick,
            "avatar": None,
            "banner": None,
            "joined_at": member.joined_at,
            "premium_since": None,
            "deaf": False,
            "mute": False,
            "pending": False,
            "flags": 0,
            "communication_disabled_until": None,
        }
        if with_user:
            payload["user"] = self._user_payload(member.user)
        return payload

    def _overwrite_payload(self, overwrite: Overwrite) -> dict[str, Any]:
        kind = 0 if isinstance(overwrite.target, FakeRole) else 1
        return {
            "id": str(overwrite.target.id),
            "type": kind,
            "allow": str(overwrite.allow),
            "deny": str(overwrite.deny),
        }

    def _channel_payload(self, channel: FakeChannel, viewer: FakeUser | None = None) -> dict[str, Any]:
        last = str(channel.last_message_id) if channel.last_message_id else None
        if channel.is_dm:
            others = [u for u in channel.recipients if viewer is None or u.id != viewer.id]
            return {
                "id": str(channel.id),
                "type": ChannelType.DM,
                "last_message_id": last,
                "flags": 0,
                "recipients": [self._user_payload(u) for u in others],
            }
        assert channel.guild is not None
        payload: dict[str, Any] = {
            "id": str(channel.id),
            "type": channel.type,
            "guild_id": str(channel.guild.id),
            "name": channel.name,
            "parent_id": str(channel.parent.id) if channel.parent else None,
            "flags": 0,
        }
        if channel.is_thread:
            assert channel.owner is not None
            metadata: dict[str, Any] = {
                "archived": channel.archived,
                "auto_archive_duration": 1440,
                "archive_timestamp": self._iso(channel.id),
                "locked": channel.locked,
                "create_timestamp": self._iso(channel.id),
            }
            if channel.type == ChannelType.PRIVATE_THREAD:
                metadata["invitable"] = True
            payload.update(
                owner_id=str(channel.owner.id),
                last_message_id=last,
                message_count=channel.message_count,
                total_message_sent=channel.message_count,
                member_count=min(len(channel.thread_members), 50),
                rate_limit_per_user=0,
                thread_metadata=metadata,
            )
            if channel.parent is not None and channel.parent.type == ChannelType.FORUM:
                payload["applied_tags"] = []
            return payload
        payload.update(
            position=channel.position,
            permission_overwrites=[self._overwrite_payload(o) for o in channel.overwrites],
            nsfw=channel.nsfw,
        )
        if channel.type in (ChannelType.TEXT, ChannelType.NEWS):
            payload.update(
                topic=channel.topic, last_message_id=last, rate_limit_per_user=0, default_auto_archive_duration=1440
            )
        elif channel.type in (ChannelType.VOICE, ChannelType.STAGE):
            payload.update(
                bitrate=64000,
                user_limit=0,
                rtc_region=None,
                video_quality_mode=1,
                last_message_id=last,
                rate_limit_per_user=0,
            )
        elif channel.type == ChannelType.FORUM:
            payload.update(
                topic=channel.topic,
                last_message_id=last,
                rate_limit_per_user=0,
                available_tags=[],
                default_reaction_emoji=None,
                default_sort_order=None,
                default_forum_layout=0,
                default_thread_rate_limit_per_user=0,
                default_auto_archive_duration=1440,
            )
        return payload

    def _guild_payload(self, guild: FakeGuild) -> dict[str, Any]:
        return {
            "id": str(guild.id),
            "name": guild.name,
            "icon": None,
            "splash": None,
            "discovery_splash": None,
            "banner": None,
            "description": None,
            "owner_id": str(guild.owner.id),
            "afk_channel_id": None,
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "roles": [self._role_payload(r) for r in guild.roles.values()],
            "emojis": [],
            "stickers": [],
            "features": [],
            "mfa_level": 0,
            "application_id": None,
            "system_channel_id": None,
            "system_channel_flags": 0,
            "rules_channel_id": None,
            "public_updates_channel_id": None,
            "safety_alerts_channel_id": None,
            "max_members": 500000,
            "vanity_url_code": None,
            "premium_tier": guild.premium_tier,
            "premium_subscription_count": 0,
            "premium_progress_bar_enabled": False,
            "preferred_locale": "en-US",
            "nsfw_level": 0,
        }

    def _guild_create(self, guild: FakeGuild, session: _Session, *, startup: bool = False) -> dict[str, Any]:
        bot = session.bot
        if session.has(Intents.GUILD_MEMBERS) and self.members_in_guild_create:
            members = list(guild.members.values())
        else:
            members = [guild.members[bot.id]]
        channels = [c for c in guild.channels.values() if not c.is_thread]
        threads = [c for c in guild.channels.values() if c.is_thread and not c.archived and self.can_view(bot, c)]
        payload = {
            **self._guild_payload(guild),
            "joined_at": guild.members[bot.id].joined_at,
            "large": len(guild.members) >= 250,
            "member_count": len(guild.members),
            "members": [self._member_payload(m) for m in members],
            "channels": [self._channel_payload(c) for c in channels],
            "threads": [self._channel_payload(c) for c in threads],
            "voice_states": [self._voice_state_payload(v, in_guild_create=True) for v in guild.voice_states.values()],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }
        if startup:
            payload["unavailable"] = False
        return payload

    def _attachment_payload(self, attachment: FakeAttachment) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "id": str(attachment.id),
            "filename": attachment.filename,
            "size": attachment.size,
            "url": attachment.url,
            "proxy_url": attachment.url,
            "content_type": attachment.content_type,
        }
        if attachment.description is not None:
            payload["description"] = attachment.description
        return payload

    @staticmethod
    def _emoji_payload(emoji: str) -> dict[str, Any]:
        if ":" in emoji:  # a custom emoji, as discord.py puts it in the URL: name:id
            name, _, emoji_id = emoji.rpartition(":")
            return {"id": emoji_id, "name": name, "animated": False}
        return {"id": None, "name": emoji}

    def _message_payload(
        self, message: FakeMessage, viewer: FakeBot | None = None, content_intent: bool = True, *, nested: bool = True
    ) -> dict[str, Any]:
        channel, guild = message.channel, message.channel.guild
        hidden = (
            viewer is not None
            and not content_intent
            and guild is not None
            and message.author.id != viewer.id
            and all(u.id != viewer.id for u in message.mentions)
        )
        mentions = []
        for user in message.mentions:
            entry = self._user_payload(user)
            if guild is not None and user.id in guild.members:
                entry["member"] = self._member_payload(guild.members[user.id], with_user=False)
            mentions.append(entry)
        payload: dict[str, Any] = {
            "id": str(message.id),
            "channel_id": str(channel.id),
            "type": message.type,
            "content": "" if hidden else message.content,
            "author": self._user_payload(message.author),
            "attachments": [] if hidden else [self._attachment_payload(a) for a in message.attachments],
            "embeds": [] if hidden else list(message.embeds),
            "components": [] if hidden else list(message.components),
            "mentions": mentions,
            "mention_roles": [str(r) for r in message.mention_roles],
            "mention_everyone": message.mention_everyone,
            "pinned": False,
            "tts": message.tts,
            "timestamp": self._iso(message.id),
            "edited_timestamp": message.edited_timestamp,
            "flags": message.flags,
        }
        if message.nonce is not None:
            payload["nonce"] = message.nonce
        if message.reactions:
            payload["reactions"] = [
                {
                    "emoji": self._emoji_payload(emoji),
                    "count": len(users),
                    "count_details": {"burst": 0, "normal": len(users)},
                    "me": viewer is not None and viewer.id in users,
                    "me_burst": False,
                    "burst_colors": [],
                }
                for emoji, users in message.reactions.items()
                if users
            ]
        if guild is not None:
            payload["guild_id"] = str(guild.id)
            member = guild.members.get(message.author.id)
            if member is not None and message.webhook_id is None:
                payload["member"] = self._member_payload(member, with_user=False)
        if message.webhook_id is not None:
            payload["webhook_id"] = str(message.webhook_id)
        if message.application_id is not None:
            payload["application_id"] = str(message.application_id)
        if message.reference is not None:
            ref = message.reference
            payload["message_reference"] = {
                "type": 0,
                "message_id": str(ref.id),
                "channel_id": str(ref.channel.id),
                **({"guild_id": str(ref.channel.guild.id)} if ref.channel.guild else {}),
            }
            if nested:
                payload["referenced_message"] = (
                    None if ref.deleted else self._message_payload(ref, viewer, content_intent, nested=False)
                )
        if message.interaction is not None:
            interaction = message.interaction
            payload["interaction_metadata"] = {
                "id": str(interaction.id),
                "type": interaction.type,
                "name": interaction.data.get("name"),
                "command_type": 1,
                "user": self._user_payload(interaction.user),
                "authorizing_integration_owners": self._integration_owners(interaction.channel),
            }
            payload["interaction"] = {
                "id": str(interaction.id),
                "type": interaction.type,
                "name": interaction.data.get("name"),
                "user": self._user_payload(interaction.user),
            }
        if channel.is_thread:
            payload["position"] = max(channel.message_count - 1, 0)
        return payload

    # -- dispatching ----------------------------------------------------------------------

    def _dispatch(self, session: _Session, event: str, data: dict[str, Any]) -> None:
        session.seq += 1
        frame = {"op": 0, "t": event, "s": session.seq, "d": data}
        session.buffer.append(frame)
        if len(session.buffer) > 2000:
            del session.buffer[:1000]
        if session.conn is not None:
            session.conn.send(frame)

    def _guild_sessions(self, guild: FakeGuild, intent: int) -> list[_Session]:
        return [
            s
            for s in self._sessions
            if s.bot.id in guild.members and s.covers(guild.id) and (intent == 0 or s.has(intent))
        ]

    def _dispatch_guild(self, guild: FakeGuild, intent: int, event: str, data: dict[str, Any]) -> None:
        for session in self._guild_sessions(guild, intent):
            self._dispatch(session, event, data)

    def _channel_sessions(self, channel: FakeChannel, guild_intent: int, dm_intent: int) -> list[_Session]:
        if channel.is_dm:
            ids = {u.id for u in channel.recipients}
            return [s for s in self._sessions if s.bot.id in ids and s.covers(None) and s.has(dm_intent)]
        assert channel.guild is not None
        return [s for s in self._guild_sessions(channel.guild, guild_intent) if self.can_view(s.bot, channel)]

    def _dispatch_message(self, event: str, message: FakeMessage) -> None:
        for session in self._channel_sessions(message.channel, Intents.GUILD_MESSAGES, Intents.DIRECT_MESSAGES):
            if message.flags & _EPHEMERAL:  # only the invoking user's client ever sees those
                continue
            content = session.has(Intents.MESSAGE_CONTENT)
            self._dispatch(session, event, self._message_payload(message, session.bot, content))
        self._changed()

    def _dispatch_thread_create(self, thread: FakeChannel) -> None:
        assert thread.guild is not None
        for session in self._guild_sessions(thread.guild, Intents.GUILDS):
            if self.can_view(session.bot, thread):
                self._dispatch(session, "THREAD_CREATE", {**self._channel_payload(thread), "newly_created": True})

    async def _flush(self) -> None:
        await asyncio.gather(*(c.flush() for c in list(self._connections) if c.alive))

    # -- acting as users ------------------------------------------------------------------

    def _new_attachment(
        self,
        channel: FakeChannel,
        filename: str,
        data: bytes,
        content_type: str | None = None,
        description: str | None = None,
    ) -> FakeAttachment:
        attachment_id = self.new_id()
        content_type = content_type or mimetypes.guess_type(filename)[0] or "application/octet-stream"
        url = f"{self.url}/attachments/{channel.id}/{attachment_id}/{quote(filename)}"
        attachment = FakeAttachment(attachment_id, filename, data, content_type, url, description)
        self._attachments[attachment_id] = attachment
        return attachment

    def _mentions(
        self,
        channel: FakeChannel,
        content: str,
        allowed: dict[str, Any] | None,
        reference: FakeMessage | None,
        default_replied_user: bool,
    ) -> tuple[list[FakeUser], list[int], bool]:
        if allowed is None:
            parse, users, roles, replied = {"users", "roles", "everyone"}, set(), set(), default_replied_user
        else:
            parse = set(allowed.get("parse") or ())
            users = {int(u) for u in allowed.get("users") or ()}
            roles = {int(r) for r in allowed.get("roles") or ()}
            replied = bool(allowed.get("replied_user", False))
        mentioned: list[FakeUser] = []
        for match in re.finditer(r"<@!?(\d+)>", content):
            user = self.users.get(int(match.group(1)))
            if user is not None and ("users" in parse or user.id in users) and user not in mentioned:
                mentioned.append(user)
        if reference is not None and replied and reference.author not in mentioned:
            mentioned.append(reference.author)
        role_ids: list[int] = []
        guild = channel.guild
        for match in re.finditer(r"<@&(\d+)>", content):
            role_id = int(match.group(1))
            mentionable = guild is not None and role_id in guild.roles and ("roles" in parse or role_id in roles)
            if mentionable and role_id not in role_ids:
                role_ids.append(role_id)
        everyone = guild is not None and "everyone" in parse and ("@everyone" in content or "@here" in content)
        return mentioned, role_ids, everyone

    def _create_message(
        self,
        channel: FakeChannel,
        author: FakeUser,
        *,
        content: str = "",
        attachments: Sequence[FakeAttachment] = (),
        embeds: Sequence[dict[str, Any]] = (),
        components: Sequence[dict[str, Any]] = (),
        reference: FakeMessage | None = None,
        allowed_mentions: dict[str, Any] | None = None,
        mention_author: bool = True,
        tts: bool = False,
        nonce: int | str | None = None,
        flags: int = 0,
        message_type: int | None = None,
        webhook_id: int | None = None,
        application_id: int | None = None,
        interaction: FakeInteraction | None = None,
        payload: dict[str, Any] | None = None,
        files: Sequence[UploadedFile] = (),
        message_id: int | None = None,
    ) -> FakeMessage:
        mentions, roles, everyone = self._mentions(channel, content, allowed_mentions, reference, mention_author)
        if message_type is None:
            message_type = 19 if reference is not None else 0
        message = FakeMessage(
            message_id or self.new_id(),
            channel,
            author,
            content,
            message_type,
            list(attachments),
            list(embeds),
            list(components),
            reference,
            mentions,
            roles,
            everyone,
            tts,
            nonce,
            flags,
            webhook_id=webhook_id,
            application_id=application_id,
            interaction=interaction,
            payload=payload,
            files=list(files),
        )
        channel.messages[message.id] = message
        channel.last_message_id = message.id
        if channel.is_thread:
            channel.message_count += 1
        if channel.parent is not None and channel.parent.type == ChannelType.FORUM:
            channel.parent.last_message_id = channel.id
        self.messages[message.id] = message
        return message

    def _user_attachments(self, channel: FakeChannel, attachments: Iterable[Any]) -> list[FakeAttachment]:
        result = []
        for item in attachments:
            if isinstance(item, FakeAttachment):
                result.append(item)
            elif isinstance(item, UploadedFile):
                result.append(self._new_attachment(channel, item.filename, item.data, item.content_type))
            elif isinstance(item, dict):
                result.append(
                    self._new_attachment(
                        channel, item["filename"], item["data"], item.get("content_type"), item.get("description")
                    )
                )
            else:
                result.append(self._new_attachment(channel, *item))
        return result

    async def user_says(
        self,
        user: FakeUser,
        channel: FakeChannel,
        content: str = "",
        *,
        reply_to: FakeMessage | None = None,
        attachments: Iterable[Any] = (),
        embeds: Iterable[dict[str, Any]] = (),
        mention_author: bool = True,
    ) -> FakeMessage:
        """``user`` posts in ``channel``; MESSAGE_CREATE goes to every bot that sees it.

        ``attachments``: ``(filename, data)`` or ``(filename, data, content_type)`` tuples, dicts
        with those keys, or :class:`UploadedFile`. ``mention_author``: whether a reply pings the
        replied-to author (Discord's default for users)."""
        if channel.guild is not None and user.id not in channel.guild.members:
            raise ValueError(f"{user!r} is not a member of {channel.guild!r}")
        if channel.is_dm and all(u.id != user.id for u in channel.recipients):
            raise ValueError(f"{user!r} is not in {channel!r}")
        if channel.type not in ChannelType.MESSAGEABLE:
            raise ValueError(f"cannot post in {channel!r}")
        message = self._create_message(
            channel,
            user,
            content=content,
            attachments=self._user_attachments(channel, attachments),
            embeds=list(embeds),
            reference=reply_to,
            mention_author=mention_author,
        )
        self._dispatch_message("MESSAGE_CREATE", message)
        await self._flush()
        return message

    async def dm(self, user: FakeUser, bot: FakeUser, content: str = "", **kwargs: Any) -> FakeMessage:
        """``user`` DMs ``bot`` (the DM channel is created on first use)."""
        return await self.user_says(user, self.dm_channel(user, bot), content, **kwargs)

    async def user_edits(self, message: FakeMessage, content: str) -> FakeMessage:
        """The author edits ``message``: MESSAGE_UPDATE with the full message."""
        message.content = content
        message.edited_timestamp = self._now()
        message.mentions, message.mention_roles, message.mention_everyone = self._mentions(
            message.channel, content, None, message.reference, True
        )
        self._dispatch_message("MESSAGE_UPDATE", message)
        await self._flush()
        return message

    async def redeliver_message(self, message: FakeMessage) -> None:
        """MESSAGE_CREATE of ``message`` once more (a gateway event delivered again, as a resumed
        session may replay one the client had already handled)."""
        self._dispatch_message("MESSAGE_CREATE", message)
        await self._flush()

    async def user_deletes(self, message: FakeMessage) -> None:
        """The author (or a moderator) deletes ``message``: MESSAGE_DELETE."""
        self._delete_message(message)
        await self._flush()

    def _delete_message(self, message: FakeMessage) -> None:
        message.deleted = True
        channel = message.channel
        data: dict[str, Any] = {"id": str(message.id), "channel_id": str(channel.id)}
        if channel.guild is not None:
            data["guild_id"] = str(channel.guild.id)
        for session in self._channel_sessions(channel, Intents.GUILD_MESSAGES, Intents.DIRECT_MESSAGES):
            self._dispatch(session, "MESSAGE_DELETE", data)
        self._changed()

    def _reaction_event(self, user: FakeUser, message: FakeMessage, emoji: str, add: bool) -> None:
        users = message.reactions.setdefault(emoji, [])
        if add:
            if user.id in users:
                return
            users.append(user.id)
        else:
            if user.id not in users:
                return
            users.remove(user.id)
            if not users:
                del message.reactions[emoji]
        channel = message.channel
        data: dict[str, Any] = {
            "user_id": str(user.id),
            "channel_id": str(channel.id),
            "message_id": str(message.id),
            "emoji": self._emoji_payload(emoji),
            "burst": False,
            "type": 0,
        }
        if channel.guild is not None:
            data["guild_id"] = str(channel.guild.id)
        if add:
            data["message_author_id"] = str(message.author.id)
            data["burst_colors"] = []
            if channel.guild is not None and user.id in channel.guild.members:
                data["member"] = self._member_payload(channel.guild.members[user.id])
        event = "MESSAGE_REACTION_ADD" if add else "MESSAGE_REACTION_REMOVE"
        for session in self._channel_sessions(
            channel, Intents.GUILD_MESSAGE_REACTIONS, Intents.DIRECT_MESSAGE_REACTIONS
        ):
            self._dispatch(session, event, data)
        self._changed()

    async def user_reacts(self, user: FakeUser, message: FakeMessage, emoji: str) -> None:
        """``user`` adds ``emoji`` (``"👍"`` or ``"name:id"``): MESSAGE_REACTION_ADD."""
        self._reaction_event(user, message, emoji, True)
        await self._flush()

    async def user_unreacts(self, user: FakeUser, message: FakeMessage, emoji: str) -> None:
        self._reaction_event(user, message, emoji, False)
        await self._flush()

    async def user_types(self, user: FakeUser, channel: FakeChannel) -> None:
        """TYPING_START from ``user`` in ``channel``."""
        data: dict[str, Any] = {"user_id": str(user.id), "channel_id": str(channel.id), "timestamp": int(time.time())}
        if channel.guild is not None:
            data["guild_id"] = str(channel.guild.id)
            data["member"] = self._member_payload(channel.guild.members[user.id])
        for session in self._channel_sessions(channel, Intents.GUILD_MESSAGE_TYPING, Intents.DIRECT_MESSAGE_TYPING):
            self._dispatch(session, "TYPING_START", data)
        await self._flush()

    async def member_joins(self, guild: FakeGuild, user: FakeUser, *, roles: Iterable[FakeRole] = ()) -> FakeMember:
        """``user`` joins: GUILD_MEMBER_ADD to bots with the members intent; a joining bot gets
        GUILD_CREATE."""
        if user.id in guild.members:
            raise ValueError(f"{user!r} is already in {guild!r}")
        member = FakeMember(user, guild, list(roles), joined_at=self._now())
        guild.members[user.id] = member
        data = {**self._member_payload(member), "guild_id": str(guild.id)}
        for session in self._guild_sessions(guild, 0):
            if session.bot.id == user.id:
                if session.has(Intents.GUILDS):
                    self._dispatch(session, "GUILD_CREATE", self._guild_create(guild, session))
            elif session.has(Intents.GUILD_MEMBERS):
                self._dispatch(session, "GUILD_MEMBER_ADD", data)
        self._changed()
        await self._flush()
        return member

    async def member_leaves(self, guild: FakeGuild, user: FakeUser) -> None:
        """``user`` leaves: GUILD_MEMBER_REMOVE; a leaving bot gets GUILD_DELETE."""
        sessions = self._guild_sessions(guild, 0)
        if user.id in guild.voice_states:
            await self.user_leaves_voice(user, guild)
        del guild.members[user.id]
        data = {"guild_id": str(guild.id), "user": self._user_payload(user)}
        for session in sessions:
            if session.bot.id == user.id:
                if session.has(Intents.GUILDS):
                    self._dispatch(session, "GUILD_DELETE", {"id": str(guild.id)})
            elif session.has(Intents.GUILD_MEMBERS):
                self._dispatch(session, "GUILD_MEMBER_REMOVE", data)
        self._changed()
        await self._flush()

    # -- voice ----------------------------------------------------------------------------

    def voice_state(self, user: FakeUser, guild: FakeGuild) -> FakeVoiceState | None:
        """Where ``user`` is in voice in ``guild``, or None."""
        return guild.voice_states.get(user.id)

    def _voice_state_payload(
        self, state: FakeVoiceState, *, left: bool = False, in_guild_create: bool = False
    ) -> dict[str, Any]:
        guild = state.channel.guild
        assert guild is not None
        payload: dict[str, Any] = {
            "guild_id": str(guild.id),
            "channel_id": None if left else str(state.channel.id),
            "user_id": str(state.user.id),
            "session_id": state.session_id,
            "deaf": state.deaf,
            "mute": state.mute,
            "self_deaf": state.self_deaf,
            "self_mute": state.self_mute,
            "self_video": False,
            "suppress": False,
            "request_to_speak_timestamp": None,
        }
        if in_guild_create:
            del payload["guild_id"]  # GUILD_CREATE's voice states are partial
        member = guild.members.get(state.user.id)
        if member is not None:
            payload["member"] = self._member_payload(member)
        return payload

    def _dispatch_voice_state(self, state: FakeVoiceState, *, left: bool = False) -> None:
        guild = state.channel.guild
        assert guild is not None
        payload = self._voice_state_payload(state, left=left)
        self._dispatch_guild(guild, Intents.GUILD_VOICE_STATES, "VOICE_STATE_UPDATE", payload)
        self._changed()

    def _bot_voice_state(self, session: _Session, data: dict[str, Any]) -> None:
        """Gateway op 4: join, move or (``channel_id`` null) leave a voice channel. Like Discord,
        a request the bot may not make (unknown guild or channel, not a voice channel, no
        CONNECT) is ignored; discord.py's ``connect()`` then times out."""
        bot = session.bot
        bot.voice_state_updates.append(data)
        try:
            guild = self.guilds.get(int(data.get("guild_id") or 0))
        except (TypeError, ValueError):
            return
        if guild is None or bot.id not in guild.members:
            return
        if data.get("channel_id") is None:
            state = guild.voice_states.pop(bot.id, None)
            self.voice.revoke(bot, guild)
            if state is not None:
                self._dispatch_voice_state(state, left=True)
            return
        try:
            channel = guild.channels.get(int(data["channel_id"]))
        except (TypeError, ValueError):
            return
        if channel is None or channel.type not in (ChannelType.VOICE, ChannelType.STAGE):
            return
        needed = Permissions.VIEW_CHANNEL | Permissions.CONNECT
        if self.permissions(bot, channel) & needed != needed:
            return
        old = guild.voice_states.get(bot.id)
        state = FakeVoiceState(bot, channel, session.id, bool(data.get("self_mute")), bool(data.get("self_deaf")))
        guild.voice_states[bot.id] = state
        self._dispatch_voice_state(state)
        same = old is not None and old.channel is channel and old.session_id == session.id
        if same and self.voice.has_grant(bot, guild, channel, session.id):
            return  # a mute/deafen change: no new voice server
        token = self.voice.grant(bot, guild, channel, session.id)
        server = {"token": token, "guild_id": str(guild.id), "endpoint": self.voice.endpoint}
        self._dispatch(session, "VOICE_SERVER_UPDATE", server)

    async def user_joins_voice(
        self, user: FakeUser, channel: FakeChannel, *, self_mute: bool = False, self_deaf: bool = False
    ) -> FakeVoiceState:
        """A simulated user joins (or moves to) a voice channel: VOICE_STATE_UPDATE to the bots
        with the voice states intent; the voice server gives it an SSRC and tells the bots
        connected to that channel (CLIENTS_CONNECT). Then ``fake.voice.user_speaks(user, ...)``.
        Raises ValueError for a bot (bots join through their client) or a non-voice channel."""
        guild = channel.guild
        if isinstance(user, FakeBot):
            raise ValueError(f"{user!r} is a bot: it joins voice with its client (channel.connect())")
        if guild is None or channel.type not in (ChannelType.VOICE, ChannelType.STAGE):
            raise ValueError(f"{channel!r} is not a voice channel")
        if user.id not in guild.members:
            raise ValueError(f"{user!r} is not a member of {guild!r}")
        old = guild.voice_states.get(user.id)
        state = FakeVoiceState(user, channel, old.session_id if old else secrets.token_hex(16), self_mute, self_deaf)
        guild.voice_states[user.id] = state
        self._dispatch_voice_state(state)
        self.voice.participant_joined(user, guild, channel)
        await self._flush()
        return state

    async def voice_server_update(self, bot: FakeBot, guild: FakeGuild) -> None:
        """Move a connected bot to a "new" voice server, as Discord does when one fails: a fresh
        VOICE_SERVER_UPDATE (new token). discord.py closes its voice websocket (4014) and
        identifies again: new SSRC, new secret key. Raises ValueError if it is not in voice."""
        state = guild.voice_states.get(bot.id)
        session = next((s for s in self._live_sessions(bot) if s.id == (state.session_id if state else None)), None)
        if state is None or session is None:
            raise ValueError(f"{bot!r} is not in voice in {guild!r}")
        token = self.voice.grant(bot, guild, state.channel, session.id)
        server = {"token": token, "guild_id": str(guild.id), "endpoint": self.voice.endpoint}
        self._dispatch(session, "VOICE_SERVER_UPDATE", server)
        await self._flush()

    async def move_bot_voice(self, bot: FakeBot, channel: FakeChannel) -> None:
        """An admin drags ``bot``, in voice in ``channel``'s guild, to ``channel``: the bot's new
        VOICE_STATE_UPDATE, then a VOICE_SERVER_UPDATE for the new channel (discord.py keeps its
        VoiceClient, moves it to the channel and reconnects its voice websocket there). Raises
        ValueError if the bot is not in voice there, or ``channel`` is not a voice channel."""
        guild = channel.guild
        state = guild.voice_states.get(bot.id) if guild is not None else None
        if guild is None or state is None or channel.type not in (ChannelType.VOICE, ChannelType.STAGE):
            raise ValueError(
                f"{bot!r} is not in voice in {channel.name}'s guild, or {channel!r} is not a voice channel"
            )
        state.channel = channel
        self._dispatch_voice_state(state)
        await self.voice_server_update(bot, guild)

    async def user_leaves_voice(self, user: FakeUser, guild: FakeGuild) -> None:
        """``user`` leaves voice in ``guild`` (VOICE_STATE_UPDATE with ``channel_id`` null). For
        a bot this is a server-side disconnect: discord.py's VoiceClient disconnects itself."""
        state = guild.voice_states.pop(user.id, None)
        if isinstance(user, FakeBot):
            self.voice.revoke(user, guild)
        else:
            self.voice.participant_left(user, guild)
        if state is not None:
            self._dispatch_voice_state(state, left=True)
        await self._flush()

    # -- application commands -------------------------------------------------------------

    def _integration_owners(self, channel: FakeChannel) -> dict[str, str]:
        return {"0": str(channel.guild.id)} if channel.guild is not None else {"1": "0"}

    def _find_command(self, bot: FakeBot, channel: FakeChannel, name: str) -> dict[str, Any]:
        scopes = ([channel.guild.id] if channel.guild is not None else []) + [None]
        for scope in scopes:
            for command in bot.commands.get(scope, []):
                if command["name"] == name and command.get("type", 1) == 1:
                    return command
        registered = {scope: [c["name"] for c in cmds] for scope, cmds in bot.commands.items()}
        raise LookupError(f"{bot.name} has not registered /{name} here (registered: {registered})")

    def _resolve(
        self, resolved: dict[str, dict[str, Any]], kind: int, value: Any, channel: FakeChannel, invoker: FakeUser
    ) -> str:
        guild = channel.guild
        if isinstance(value, FakeRole) or (kind == _OPTION_ROLE and not isinstance(value, FakeUser)):
            role = value if isinstance(value, FakeRole) else guild.roles[int(value)]  # type: ignore[union-attr]
            resolved.setdefault("roles", {})[str(role.id)] = self._role_payload(role)
            return str(role.id)
        if isinstance(value, FakeChannel) or kind == _OPTION_CHANNEL:
            target = value if isinstance(value, FakeChannel) else self.channels[int(value)]
            entry = {
                "id": str(target.id),
                "name": target.name,
                "type": target.type,
                "permissions": str(self.permissions(invoker, target)),
            }
            if target.parent is not None:
                entry["parent_id"] = str(target.parent.id)
            if target.is_thread:
                entry["thread_metadata"] = self._channel_payload(target)["thread_metadata"]
            resolved.setdefault("channels", {})[str(target.id)] = entry
            return str(target.id)
        user = value if isinstance(value, FakeUser) else self.users[int(value)]
        resolved.setdefault("users", {})[str(user.id)] = self._user_payload(user)
        if guild is not None and user.id in guild.members:
            member = self._member_payload(guild.members[user.id], with_user=False)
            member["permissions"] = str(self.permissions(user, channel))
            resolved.setdefault("members", {})[str(user.id)] = member
        return str(user.id)

    def _build_options(
        self,
        schema: list[dict[str, Any]],
        given: dict[str, Any] | list[dict[str, Any]],
        resolved: dict[str, dict[str, Any]],
        channel: FakeChannel,
        invoker: FakeUser,
    ) -> list[dict[str, Any]]:
        if isinstance(given, list):
            return given
        options = []
        for name, value in given.items():
            spec = next((o for o in schema if o["name"] == name), None)
            if spec is None:
                raise ValueError(f"no option {name!r}; the command has {[o['name'] for o in schema]}")
            kind = spec["type"]
            if kind in (_OPTION_USER, _OPTION_CHANNEL, _OPTION_ROLE, _OPTION_MENTIONABLE):
                value = self._resolve(resolved, kind, value, channel, invoker)
            elif kind == _OPTION_ATTACHMENT:
                attachment = value if isinstance(value, FakeAttachment) else self._user_attachments(channel, [value])[0]
                resolved.setdefault("attachments", {})[str(attachment.id)] = self._attachment_payload(attachment)
                value = str(attachment.id)
            options.append({"name": name, "type": kind, "value": value})
        return options

    async def invoke_command(
        self,
        user: FakeUser,
        channel: FakeChannel,
        bot: FakeBot,
        name: str,
        options: dict[str, Any] | list[dict[str, Any]] | None = None,
    ) -> FakeInteraction:
        """``user`` runs ``/name`` (``"group sub"`` for subcommands) in ``channel``:
        INTERACTION_CREATE to ``bot``. ``options``: ``{name: value}`` (typed from the registered
        schema; users, members, channels, roles and attachments may be fake objects) or raw
        Discord option dicts."""
        path = name.split()
        command = self._find_command(bot, channel, path[0])
        resolved: dict[str, dict[str, Any]] = {}
        schema: list[dict[str, Any]] = command.get("options") or []
        chain: list[dict[str, Any]] = []
        for part in path[1:]:
            spec = next(
                (o for o in schema if o["name"] == part and o["type"] in (_OPTION_SUBCOMMAND, _OPTION_GROUP)), None
            )
            if spec is None:
                raise ValueError(f"/{path[0]} has no subcommand {part!r}")
            chain.append({"name": part, "type": spec["type"]})
            schema = spec.get("options") or []
        leaf = self._build_options(schema, options or {}, resolved, channel, user)
        for entry in reversed(chain):
            entry["options"] = leaf
            leaf = [entry]
        data: dict[str, Any] = {"id": command["id"], "name": path[0], "type": 1, "options": leaf}
        if command.get("guild_id"):
            data["guild_id"] = command["guild_id"]
        if resolved:
            data["resolved"] = resolved
        interaction = FakeInteraction(
            self.new_id(), "itoken-" + secrets.token_urlsafe(24), bot, user, channel, command, data
        )
        await self._create_interaction(interaction)
        return interaction

    async def user_clicks(self, user: FakeUser, message: FakeMessage, custom_id: str) -> FakeInteraction:
        """``user`` presses the button ``custom_id`` under ``message`` (a bot's): INTERACTION_CREATE
        of a message component to that bot, with the message and its components as Discord sends
        them. Returns the :class:`FakeInteraction` (its ``responses`` record the callback and when
        it came).

        Raises:
            LookupError: the message has no enabled button with that custom_id (no one can press it).
        """
        bot = message.author
        if not isinstance(bot, FakeBot):
            raise LookupError(f"{message!r} is no bot's: only an application's messages have buttons to press")
        buttons = [c for row in message.components for c in row.get("components") or ()]
        if not any(b.get("custom_id") == custom_id and not b.get("disabled") for b in buttons):
            shown = [b.get("custom_id") or b.get("url") for b in buttons]
            raise LookupError(f"{message!r} has no button {custom_id!r} to press (it has {shown})")
        data = {"custom_id": custom_id, "component_type": _COMPONENT_BUTTON}
        return await self._component_interaction(bot, user, message, data)

    async def user_selects(
        self, user: FakeUser, message: FakeMessage, values: Sequence[str], custom_id: str | None = None
    ) -> FakeInteraction:
        """``user`` chooses ``values`` in the string select ``custom_id`` (the message's only one
        if None) under ``message`` (a bot's): INTERACTION_CREATE of a message component (type 3,
        ``component_type`` 3, ``values``) to that bot, as :meth:`user_clicks`.

        Raises:
            LookupError: no such select, a value it does not offer, or a count outside its
                min_values to max_values.
        """
        bot = message.author
        if not isinstance(bot, FakeBot):
            raise LookupError(f"{message!r} is no bot's: only an application's messages have selects")
        selects = [
            c
            for row in message.components
            for c in row.get("components") or ()
            if c.get("type") == _COMPONENT_SELECT and custom_id in (None, c.get("custom_id")) and not c.get("disabled")
        ]
        if len(selects) != 1:
            raise LookupError(f"{message!r} has no one select {custom_id or ''!r} to choose in")
        (select,) = selects
        offered = [o["value"] for o in select["options"]]
        if any(v not in offered for v in values) or len(set(values)) != len(values):
            raise LookupError(f"the select offers {offered}, not {list(values)}")
        if not select.get("min_values", 1) <= len(values) <= select.get("max_values", 1):
            raise LookupError(f"the select takes {select.get('min_values', 1)} to {select.get('max_values', 1)} values")
        data = {"custom_id": select["custom_id"], "component_type": _COMPONENT_SELECT, "values": list(values)}
        return await self._component_interaction(bot, user, message, data)

    async def user_submits(self, user: FakeUser, opened: FakeInteraction, answers: dict[str, str]) -> FakeInteraction:
        """``user`` submits the modal the bot answered ``opened`` with, its text inputs filled
        with ``answers`` (``{custom_id: text}``): INTERACTION_CREATE of a modal submit (type 5,
        ``data.custom_id`` the modal's, ``data.components`` its rows of text inputs with their
        ``value``), with the message ``opened`` came from.

        Raises:
            LookupError: ``opened`` was answered with no modal, an answer to no input of it, a
                required input left empty, or an answer longer than its input takes.
        """
        modal = opened.modal
        if modal is None:
            raise LookupError(f"interaction {opened.id} was answered with no modal to submit")
        inputs = [c for row in modal.get("components") or () for c in row.get("components") or ()]
        known = {c["custom_id"] for c in inputs}
        if set(answers) - known:
            raise LookupError(f"the modal has inputs {sorted(known)}, not {sorted(set(answers) - known)}")
        rows: list[dict[str, Any]] = []
        for c in inputs:
            text = answers.get(c["custom_id"], "")
            if c.get("required", True) and not text:
                raise LookupError(f"the modal's input {c['custom_id']!r} is required")
            if len(text) > c.get("max_length", _MAX_INPUT_TEXT):
                raise LookupError(f"the modal's input {c['custom_id']!r} takes {c.get('max_length')} characters")
            rows.append(
                {
                    "type": _COMPONENT_ROW,
                    "components": [{"type": _COMPONENT_TEXT_INPUT, "custom_id": c["custom_id"], "value": text}],
                }
            )
        data = {"custom_id": modal["custom_id"], "components": rows}
        interaction = FakeInteraction(
            self.new_id(),
            "itoken-" + secrets.token_urlsafe(24),
            opened.bot,
            user,
            opened.channel,
            {},
            data,
            type=5,
            message=opened.message,
        )
        await self._create_interaction(interaction)
        return interaction

    async def _component_interaction(
        self, bot: FakeBot, user: FakeUser, message: FakeMessage, data: dict[str, Any]
    ) -> FakeInteraction:
        interaction = FakeInteraction(
            self.new_id(),
            "itoken-" + secrets.token_urlsafe(24),
            bot,
            user,
            message.channel,
            {},
            data,
            type=3,
            message=message,
        )
        await self._create_interaction(interaction)
        return interaction

    async def redeliver(self, interaction: FakeInteraction) -> None:
        """INTERACTION_CREATE of ``interaction`` once more, as first sent (a redelivered event)."""
        await self._deliver_interaction(interaction)

    def _interaction_payload(self, interaction: FakeInteraction) -> dict[str, Any]:
        """INTERACTION_CREATE's data for ``interaction``, as Discord sends it to the bot."""
        bot, user, channel = interaction.bot, interaction.user, interaction.channel
        payload: dict[str, Any] = {
            "id": str(interaction.id),
            "application_id": str(bot.application_id),
            "type": interaction.type,
            "data": interaction.data,
            "channel_id": str(channel.id),
            "channel": self._channel_payload(channel, bot),
            "token": interaction.token,
            "version": 1,
            "app_permissions": str(self.permissions(bot, channel)),
            "locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": self._integration_owners(channel),
            "context": 0 if channel.guild is not None else 1,
            "attachment_size_limit": 10 * 1024 * 1024,
        }
        if interaction.message is not None:
            payload["message"] = self._message_payload(interaction.message, bot, True)
        if channel.guild is not None:
            member = self._member_payload(channel.guild.members[user.id])
            member["permissions"] = str(self.permissions(user, channel))
            payload.update(
                guild_id=str(channel.guild.id),
                guild_locale="en-US",
                guild={"id": str(channel.guild.id), "locale": "en-US", "features": []},
                member=member,
            )
        else:
            payload["user"] = self._user_payload(user)
        return payload

    async def _create_interaction(self, interaction: FakeInteraction) -> None:
        self._interactions[interaction.id] = interaction
        interaction.bot.interactions.append(interaction)
        interaction.payload = self._interaction_payload(interaction)
        await self._deliver_interaction(interaction)

    async def _deliver_interaction(self, interaction: FakeInteraction) -> None:
        guild = interaction.channel.guild
        sessions = [s for s in self._sessions if s.bot is interaction.bot and s.covers(guild.id if guild else None)]
        if not sessions:
            raise RuntimeError(f"{interaction.bot.name} has no gateway session to receive the interaction")
        self._dispatch(sessions[0], "INTERACTION_CREATE", interaction.payload)
        interaction.dispatched.append(time.monotonic())
        self._changed()
        await self._flush()

    # -- failure scripting and gateway control ---------------------------------------------

    def fail_next(
        self,
        method: str,
        path_regex: str,
        status: int = 429,
        retry_after: float = 0.05,
        times: int | None = 1,
        global_: bool = False,
        *,
        bot: FakeBot | None = None,
        code: int | None = None,
        message: str | None = None,
        after: int = 0,
    ) -> FailRule:
        """Fail the next ``times`` (``None``: every) matching request like Discord would, once
        ``after`` more have gone through."""
        rule = FailRule(
            method.upper(), re.compile(path_regex), status, retry_after, times, global_, bot, code, message, after=after
        )
        self._fail_rules.append(rule)
        return rule

    def _live_sessions(self, bot: FakeBot) -> list[_Session]:
        return [s for s in self._sessions if s.bot is bot]

    async def drop_gateway(self, bot: FakeBot, code: int | None = None, *, resumable: bool = True) -> None:
        """Cut ``bot``'s gateway sockets: abruptly (``code=None``) or with a close ``code``.
        With ``resumable=False`` the session is forgotten, so RESUME gets INVALID_SESSION."""
        for session in self._live_sessions(bot):
            conn, session.conn = session.conn, None
            if not resumable:
                self._sessions.remove(session)
            if conn is not None:
                conn.session = None
                if code is None:
                    conn.abort()
                else:
                    bot.gateway_closes.append(code)
                    conn.close(code, "dropped by FakeDiscord")
                    await conn.flush()
        self._changed()

    async def revoke(self, bot: FakeBot) -> None:
        """The bot's token is reset on the developer portal: its gateway sockets close with 4004
        (Authentication failed), and REST and IDENTIFY with it are refused until :meth:`restore`."""
        bot.revoked = True
        await self.drop_gateway(bot, 4004, resumable=False)

    def restore(self, bot: FakeBot) -> None:
        """The bot's token works again."""
        bot.revoked = False
        self._changed()

    async def send_reconnect(self, bot: FakeBot) -> None:
        """Op 7 RECONNECT: discord.py closes and resumes."""
        for session in self._live_sessions(bot):
            if session.conn is not None:
                session.conn.send({"op": 7, "d": None, "s": None, "t": None})
        await self._flush()

    async def invalidate_session(self, bot: FakeBot, *, resumable: bool = False, shard: int | None = None) -> None:
        """Op 9 INVALID_SESSION: with ``resumable=False`` discord.py identifies again. With
        ``shard``, only the session of that shard id."""
        for session in self._live_sessions(bot):
            if shard is not None and (session.shard is None or session.shard[0] != shard):
                continue
            conn = session.conn
            if not resumable:
                self._sessions.remove(session)
                session.conn = None
            if conn is not None:
                conn.send({"op": 9, "d": resumable, "s": None, "t": None})
        await self._flush()

    # -- gateway --------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.StreamResponse:
        encoding = request.query.get("encoding", "json")
        compress = request.query.get("compress")
        if encoding != "json":
            return web.Response(status=400, text=f"encoding {encoding!r} is not supported by FakeDiscord")
        if compress not in (None, "zlib-stream") and not (compress == "zstd-stream" and _ZSTD):
            return web.Response(status=400, text=f"compress {compress!r} is not supported")
        ws = web.WebSocketResponse(timeout=2.0, max_msg_size=16 * 1024 * 1024, compress=False)
        await ws.prepare(request)
        conn = _Connection(ws, request, compress)
        self._connections.add(conn)
        self.gateway_connections += 1
        self.gateway_queries.append(dict(request.query))
        version = request.query.get("v")
        if version is not None and version != str(API_VERSION):
            conn.close(4012, "Invalid API version")
        else:
            conn.send(
                {
                    "op": 10,
                    "d": {"heartbeat_interval": self.heartbeat_interval, "_trace": ["fake-gateway"]},
                    "s": None,
                    "t": None,
                }
            )
        self._changed()
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self._on_frame(conn, msg.data)
                elif msg.type == WSMsgType.BINARY:
                    self._on_frame(conn, msg.data.decode("utf-8", "replace"))
        finally:
            self._on_closed(conn, ws.close_code)
            self._connections.discard(conn)
            await conn.stop()
        return ws

    def _on_closed(self, conn: _Connection, code: int | None) -> None:
        conn.alive = False
        session = conn.session
        if session is not None and session.conn is conn:
            session.conn = None
            # A client that closes with 1000/1001 ends its session, as on Discord.
            if conn.server_close_code is None and code in (1000, 1001) and session in self._sessions:
                self._sessions.remove(session)
        self._changed()

    def _close_conn(self, conn: _Connection, code: int, reason: str) -> None:
        if conn.bot is not None:
            conn.bot.gateway_closes.append(code)
        conn.close(code, reason)
        self._changed()

    def _on_frame(self, conn: _Connection, text: str) -> None:
        if not conn.alive:
            return
        try:
            frame = json.loads(text)
            op = frame["op"]
        except (ValueError, KeyError, TypeError):
            self._close_conn(conn, 4002, "Error while decoding payload.")
            return
        data = frame.get("d")
        if op == 1:
            if conn.session is not None:
                conn.session.bot.heartbeats += 1
            if self.ack_heartbeats:
                conn.send({"op": 11, "d": None, "s": None, "t": None})
            return
        if op == 2:
            self._identify(conn, data or {})
        elif op == 6:
            self._resume(conn, data or {})
        elif conn.session is None:
            self._close_conn(conn, 4003, "Not authenticated.")
        elif op == 3:
            conn.session.bot.presence_updates.append(data)
        elif op == 4:
            self._bot_voice_state(conn.session, data or {})
        elif op == 8:
            self._request_members(conn.session, data or {})
        else:
            self._close_conn(conn, 4001, "Unknown opcode.")
        self._changed()

    def _identify(self, conn: _Connection, data: dict[str, Any]) -> None:
        if conn.session is not None:
            self._close_conn(conn, 4005, "Already authenticated.")
            return
        bot = self.bots.get(str(data.get("token", "")).removeprefix("Bot "))
        if bot is None or bot.revoked:
            self._close_conn(conn, 4004, "Authentication failed.")
            return
        conn.bot = bot
        bot.identifies.append({k: v for k, v in data.items() if k != "token"})
        intents = data.get("intents")
        if not isinstance(intents, int) or intents & ~Intents.VALID:
            self._close_conn(conn, 4013, "Invalid intent(s).")
            return
        allowed = Intents.VALID & ~Intents.PRIVILEGED
        allowed |= Intents.GUILD_MEMBERS if bot.members_intent else 0
        allowed |= Intents.GUILD_PRESENCES if bot.presence_intent else 0
        allowed |= Intents.MESSAGE_CONTENT if bot.message_content_intent else 0
        if intents & ~allowed:
            self._close_conn(conn, 4014, "Disallowed intent(s).")
            return
        shard = data.get("shard")
        if shard is not None:
            if not (isinstance(shard, list) and len(shard) == 2 and 0 <= shard[0] < shard[1]):
                self._close_conn(conn, 4010, "Invalid shard.")
                return
            shard = (int(shard[0]), int(shard[1]))
        if (shard[1] if shard is not None else 1) < bot.shards:
            self._close_conn(conn, 4011, "Sharding required.")
            return
        session = _Session(secrets.token_hex(16), bot, intents, shard, conn=conn)
        conn.session = session
        self._sessions.append(session)
        guilds = [g for g in self.guilds.values() if bot.id in g.members and session.covers(g.id)]
        ready: dict[str, Any] = {
            "v": API_VERSION,
            "user": self._self_payload(bot),
            "user_settings": {},
            "guilds": [{"id": str(g.id), "unavailable": True} for g in guilds],
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": ["fake"],
            "session_id": session.id,
            "session_type": "normal",
            "resume_gateway_url": self.resume_gateway_url,
            "application": {"id": str(bot.application_id), "flags": bot.application_flags},
            "auth": {},
            "_trace": ["fake-gateway"],
        }
        if shard is not None:
            ready["shard"] = list(shard)
        self._dispatch(session, "READY", ready)
        if session.has(Intents.GUILDS):
            for guild in guilds:
                self._dispatch(session, "GUILD_CREATE", self._guild_create(guild, session, startup=True))

    def _resume(self, conn: _Connection, data: dict[str, Any]) -> None:
        session = next((s for s in self._sessions if s.id == data.get("session_id")), None)
        token = str(data.get("token", "")).removeprefix("Bot ")
        bot = self.bots.get(token)
        if bot is not None:
            conn.bot = bot
            bot.resumes.append({k: v for k, v in data.items() if k != "token"})
        if bot is None or bot.revoked:
            self._close_conn(conn, 4004, "Authentication failed.")
            return
        seq = data.get("seq") or 0
        first = session.buffer[0]["s"] if session and session.buffer else 1
        if session is None or session.bot is not bot or seq + 1 < first:
            conn.send({"op": 9, "d": False, "s": None, "t": None})
            return
        old = session.conn
        if old is not None and old is not conn:
            old.session = None
            old.close(4000, "Session resumed elsewhere.")
        conn.session = session
        for frame in session.buffer:
            if frame["s"] > seq:
                conn.send(frame)
        session.conn = conn
        self._dispatch(session, "RESUMED", {"_trace": ["fake-gateway"]})

    def _request_members(self, session: _Session, data: dict[str, Any]) -> None:
        session.bot.member_requests.append(data)
        guild_ids = data["guild_id"]  # required in REQUEST_GUILD_MEMBERS
        for guild_id in guild_ids if isinstance(guild_ids, list) else [guild_ids]:
            guild = self.guilds.get(int(guild_id))
            if guild is None or session.bot.id not in guild.members:
                continue
            members = list(guild.members.values())
            not_found: list[str] = []
            if data.get("user_ids"):
                wanted = [int(u) for u in data["user_ids"]]
                not_found = [str(u) for u in wanted if u not in guild.members]
                members = [m for m in members if m.user.id in wanted]
            else:
                query = (data.get("query") or "").lower()
                members = [
                    m
                    for m in members
                    if m.user.name.lower().startswith(query) or (m.nick or "").lower().startswith(query)
                ]
            limit = data.get("limit") or 0
            if limit:
                members = members[:limit]
            chunk: dict[str, Any] = {
                "guild_id": str(guild.id),
                "members": [self._member_payload(m) for m in members],
                "chunk_index": 0,
                "chunk_count": 1,
                "not_found": not_found,
            }
            if data.get("presences"):
                chunk["presences"] = []
            if data.get("nonce") is not None:
                chunk["nonce"] = data["nonce"]
            self._dispatch(session, "GUILD_MEMBERS_CHUNK", chunk)

    # -- REST plumbing --------------------------------------------------------------------

    def _route_table(self) -> list[tuple[str, re.Pattern[str], _Handler, bool]]:
        auth, open_ = True, False
        table: list[tuple[str, str, _Handler, bool]] = [
            ("GET", "/gateway", self._get_gateway, open_),
            ("GET", "/gateway/bot", self._get_gateway_bot, auth),
            ("GET", "/users/@me", self._get_me, auth),
            ("GET", "/users/@me/guilds", self._get_my_guilds, auth),
            ("POST", "/users/@me/channels", self._create_dm, auth),
            ("GET", "/users/{user_id}", self._get_user, auth),
            ("GET", "/oauth2/applications/@me", self._get_application, auth),
            ("GET", "/applications/@me", self._get_application, auth),
            ("GET", "/channels/{channel_id}", self._get_channel, auth),
            ("GET", "/channels/{channel_id}/messages", self._get_messages, auth),
            ("POST", "/channels/{channel_id}/messages", self._post_message, auth),
            ("GET", "/channels/{channel_id}/messages/{message_id}", self._get_message, auth),
            ("PATCH", "/channels/{channel_id}/messages/{message_id}", self._edit_message, auth),
            ("DELETE", "/channels/{channel_id}/messages/{message_id}", self._delete_message_route, auth),
            ("POST", "/channels/{channel_id}/typing", self._typing, auth),
            ("PUT", "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me", self._add_reaction, auth),
            (
                "DELETE",
                "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me",
                self._remove_reaction,
                auth,
            ),
            (
                "DELETE",
                "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/{user_id}",
                self._remove_reaction,
                auth,
            ),
            ("GET", "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}", self._get_reactions, auth),
            ("POST", "/channels/{channel_id}/threads", self._start_thread, auth),
            ("POST", "/channels/{channel_id}/messages/{message_id}/threads", self._start_thread, auth),
            ("PUT", "/channels/{channel_id}/thread-members/@me", self._join_thread, auth),
            ("DELETE", "/channels/{channel_id}/thread-members/@me", self._leave_thread, auth),
            ("GET", "/guilds/{guild_id}", self._get_guild, auth),
            ("GET", "/guilds/{guild_id}/channels", self._get_guild_channels, auth),
            ("GET", "/guilds/{guild_id}/roles", self._get_roles, auth),
            ("GET", "/guilds/{guild_id}/members", self._get_members, auth),
            ("GET", "/guilds/{guild_id}/members/{user_id}", self._get_member, auth),
            ("GET", "/guilds/{guild_id}/threads/active", self._get_active_threads, auth),
            ("GET", "/applications/{application_id}/commands", self._get_commands, auth),
            ("PUT", "/applications/{application_id}/commands", self._put_commands, auth),
            ("POST", "/applications/{application_id}/commands", self._post_command, auth),
            ("GET", "/applications/{application_id}/commands/{command_id}", self._get_command, auth),
            ("PATCH", "/applications/{application_id}/commands/{command_id}", self._patch_command, auth),
            ("DELETE", "/applications/{application_id}/commands/{command_id}", self._delete_command, auth),
            ("GET", "/applications/{application_id}/guilds/{guild_id}/commands", self._get_commands, auth),
            ("PUT", "/applications/{application_id}/guilds/{guild_id}/commands", self._put_commands, auth),
            ("POST", "/applications/{application_id}/guilds/{guild_id}/commands", self._post_command, auth),
            ("GET", "/applications/{application_id}/guilds/{guild_id}/commands/{command_id}", self._get_command, auth),
            (
                "PATCH",
                "/applications/{application_id}/guilds/{guild_id}/commands/{command_id}",
                self._patch_command,
                auth,
            ),
            (
                "DELETE",
                "/applications/{application_id}/guilds/{guild_id}/commands/{command_id}",
                self._delete_command,
                auth,
            ),
            ("POST", "/interactions/{interaction_id}/{token}/callback", self._interaction_callback, open_),
            ("POST", "/webhooks/{application_id}/{token}", self._followup, open_),
            ("GET", "/webhooks/{application_id}/{token}/messages/{message_id}", self._get_webhook_message, open_),
            ("PATCH", "/webhooks/{application_id}/{token}/messages/{message_id}", self._edit_webhook_message, open_),
            ("DELETE", "/webhooks/{application_id}/{token}/messages/{message_id}", self._delete_webhook_message, open_),
        ]
        compiled: list[tuple[str, re.Pattern[str], _Handler, bool]] = []
        for method, template, handler, needs_auth in table:
            pattern = re.escape(template).replace(r"\{", "{").replace(r"\}", "}")
            pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern)
            compiled.append((method, re.compile(pattern), handler, needs_auth))
        return compiled

    async def _read_body(self, request: web.Request) -> tuple[Any, list[UploadedFile]]:
        if request.content_type.startswith("multipart/"):
            files: list[UploadedFile] = []
            fields: dict[str, str] = {}
            reader = await request.multipart()
            async for part in reader:
                data = bytes(await part.read(decode=False))  # type: ignore[union-attr]
                if part.filename is not None:  # type: ignore[union-attr]
                    content_type = part.headers.get("Content-Type")  # type: ignore[union-attr]
                    files.append(UploadedFile(part.name or "", part.filename, content_type, data))  # type: ignore[union-attr]
                else:
                    fields[part.name or ""] = data.decode()  # type: ignore[union-attr]
            body: Any = json.loads(fields["payload_json"]) if "payload_json" in fields else fields
            return body, files
        if not request.can_read_body:
            return None, []
        raw = await request.read()
        if not raw:
            return None, []
        try:
            return json.loads(raw), []
        except ValueError:
            return raw.decode("utf-8", "replace"), []

    @staticmethod
    def _bucket(method: str, template: str) -> str:
        return hashlib.md5(f"{method} {template}".encode()).hexdigest()[:16]

    def _ratelimit_headers(self, bucket: str) -> dict[str, str]:
        return {
            "X-RateLimit-Bucket": bucket,
            "X-RateLimit-Limit": "50",
            "X-RateLimit-Remaining": "49",
            "X-RateLimit-Reset": f"{time.time() + 1:.3f}",
            "X-RateLimit-Reset-After": "1.000",
            "Via": "1.1 google",
        }

    def _failure(self, rule: FailRule, bucket: str) -> web.Response:
        status = rule.status
        if status == 429:
            body = {
                "message": rule.message or "You are being rate limited.",
                "retry_after": rule.retry_after,
                "global": rule.global_,
                "code": rule.code or 0,
            }
            headers = {
                "Retry-After": str(max(1, math.ceil(rule.retry_after))),
                "X-RateLimit-Limit": "5",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset": f"{time.time() + rule.retry_after:.3f}",
                "X-RateLimit-Reset-After": f"{rule.retry_after:.3f}",
                "X-RateLimit-Bucket": bucket,
                "X-RateLimit-Scope": "global" if rule.global_ else "user",
                "Via": "1.1 google",
            }
            if rule.global_:
                headers["X-RateLimit-Global"] = "true"
            return _json_response(body, status=429, headers=headers)
        if status in (502, 503, 504) and rule.message is None:
            html = (
                f"<html><head><title>{status}</title></head><body><center><h1>{status}</h1></center>"
                "<hr><center>cloudflare</center></body></html>"
            )
            return web.Response(status=status, text=html, content_type="text/html", headers={"Via": "1.1 google"})
        defaults = {
            500: "500: Internal Server Error",
            401: "401: Unauthorized",
            403: "Missing Permissions",
            404: "404: Not Found",
        }
        message = rule.message or defaults.get(status, f"{status}: Fake error")
        return _json_response(
            {"message": message, "code": rule.code or 0}, status=status, headers={"Via": "1.1 google"}
        )

    @staticmethod
    def _error_response(error: _HTTPError) -> web.Response:
        body: dict[str, Any] = {"message": error.message, "code": error.code}
        if error.errors is not None:
            body["errors"] = error.errors
        return _json_response(body, status=error.status, headers={"Via": "1.1 google"})

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        method = request.method
        authorization = request.headers.get("Authorization", "")
        bot = self.bots.get(authorization.removeprefix("Bot ")) if authorization.startswith("Bot ") else None
        body, files = await self._read_body(request)
        headers = {k: v for k, v in request.headers.items() if k.lower() != "authorization"}
        record = RecordedRequest(bot, method, path, dict(request.query), body, files, headers)
        self.requests.append(record)
        if bot is not None:
            bot.requests.append(record)
        try:
            response = await self._answer(request, record, authorization)
        except _HTTPError as error:
            response = self._error_response(error)
        record.status = response.status
        self._changed()
        return response

    async def _answer(self, request: web.Request, record: RecordedRequest, authorization: str) -> web.StreamResponse:
        path, method = record.path, record.method
        if request.match_info["version"] != str(API_VERSION):
            raise _HTTPError(400, 50041, "Invalid API version provided.")
        route = next(
            ((h, m, a, t) for (t, p, h, a) in self._routes for m in [p.fullmatch(path)] if m and t == method), None
        )
        template = route[1].re.pattern if route else path
        bucket = self._bucket(method, template)
        for rule in self._fail_rules:
            if rule.matches(method, path, record.bot):
                if rule.after > 0:
                    rule.after -= 1
                    continue
                rule.hits += 1
                return self._failure(rule, bucket)
        if route is None:
            known = any(p.fullmatch(path) for (_, p, _, _) in self._routes)
            if known:
                raise _HTTPError(405, 0, "405: Method Not Allowed")
            raise _HTTPError(404, 0, "404: Not Found")
        handler, match, needs_auth, _ = route
        if needs_auth and (record.bot is None or record.bot.revoked):
            raise _HTTPError(401, 0, "401: Unauthorized")
        params = {k: v for k, v in match.groupdict().items()}
        result = await handler(record, **params)
        if isinstance(result, web.StreamResponse):
            return result
        headers = self._ratelimit_headers(bucket)
        if result is None:
            return web.Response(status=204, headers=headers)
        return _json_response(result, headers=headers)

    async def _not_found(self, request: web.Request) -> web.Response:
        return _json_response({"message": "404: Not Found", "code": 0}, status=404)

    async def _attachment(self, request: web.Request) -> web.Response:
        attachment_id = request.match_info["attachment_id"]
        attachment = self._attachments.get(int(attachment_id)) if attachment_id.isdigit() else None
        if attachment is None:
            return web.Response(status=404, text="Not Found")
        return web.Response(body=attachment.data, content_type=attachment.content_type or "application/octet-stream")

    # -- REST lookups ---------------------------------------------------------------------

    def _channel(self, bot: FakeBot, channel_id: str, needs: int = Permissions.VIEW_CHANNEL) -> FakeChannel:
        channel = self.channels.get(int(channel_id)) if channel_id.isdigit() else None
        if channel is None:
            raise _unknown("Channel", 10003)
        perms = self.permissions(bot, channel)
        if not perms & Permissions.VIEW_CHANNEL:
            raise _HTTPError(403, 50001, "Missing Access")
        if perms & needs != needs:
            raise _HTTPError(403, 50013, "Missing Permissions")
        return channel

    def _message(self, channel: FakeChannel, message_id: str) -> FakeMessage:
        message = channel.messages.get(int(message_id)) if message_id.isdigit() else None
        if message is None or message.deleted:
            raise _unknown("Message", 10008)
        return message

    def _guild(self, bot: FakeBot, guild_id: str) -> FakeGuild:
        guild = self.guilds.get(int(guild_id)) if guild_id.isdigit() else None
        if guild is None or bot.id not in guild.members:
            raise _unknown("Guild", 10004)
        return guild

    @staticmethod
    def _app(bot: FakeBot, application_id: str) -> None:
        if application_id != str(bot.application_id):
            raise _HTTPError(403, 50001, "Missing Access")

    # -- REST handlers: users, gateway, application ---------------------------------------

    async def _get_gateway(self, rec: RecordedRequest) -> Any:
        return {"url": self.gateway_url}

    async def _get_gateway_bot(self, rec: RecordedRequest) -> Any:
        return {
            "url": self.gateway_url,
            "shards": rec.bot.shards if rec.bot is not None else 1,
            "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 86_400_000, "max_concurrency": 1},
        }

    async def _get_me(self, rec: RecordedRequest) -> Any:
        assert rec.bot is not None
        return self._self_payload(rec.bot)

    async def _get_my_guilds(self, rec: RecordedRequest) -> Any:
        bot = rec.bot
        assert bot is not None
        return [
            {
                "id": str(g.id),
                "name": g.name,
                "icon": None,
                "banner": None,
                "owner": g.owner.id == bot.id,
                "permissions": str(self.guild_permissions(bot, g)),
                "features": [],
            }
            for g in self.guilds.values()
            if bot.id in g.members
        ]

    async def _get_user(self, rec: RecordedRequest, user_id: str) -> Any:
        user = self.users.get(int(user_id)) if user_id.isdigit() else None
        if user is None:
            raise _unknown("User", 10013)
        return self._user_payload(user)

    async def _get_application(self, rec: RecordedRequest) -> Any:
        bot = rec.bot
        assert bot is not None
        owner = bot.owner
        assert owner is not None
        return {
            "id": str(bot.application_id),
            "name": bot.name,
            "icon": None,
            "description": "",
            "summary": "",
            "type": None,
            "bot_public": True,
            "bot_require_code_grant": False,
            "verify_key": "0" * 64,
            "flags": bot.application_flags,
            "owner": self._user_payload(owner),
            "team": None,
            "bot": self._user_payload(bot),
            "rpc_origins": [],
            "terms_of_service_url": None,
            "privacy_policy_url": None,
            "interactions_endpoint_url": None,
            "redirect_uris": [],
            "tags": [],
            "approximate_guild_count": sum(1 for g in self.guilds.values() if bot.id in g.members),
        }

    async def _create_dm(self, rec: RecordedRequest) -> Any:
        bot = rec.bot
        assert bot is not None
        body = rec.json or {}
        recipient = self.users.get(int(body.get("recipient_id", 0)))
        if recipient is None:
            raise _HTTPError(
                400,
                50035,
                "Invalid Form Body",
                {"recipient_id": {"_errors": [{"code": "NUMBER_TYPE_COERCE", "message": "Unknown user"}]}},
            )
        return self._channel_payload(self.dm_channel(bot, recipient), bot)

    # -- REST handlers: channels and messages ---------------------------------------------

    async def _get_channel(self, rec: RecordedRequest, channel_id: str) -> Any:
        assert rec.bot is not None
        return self._channel_payload(self._channel(rec.bot, channel_id), rec.bot)

    async def _get_messages(self, rec: RecordedRequest, channel_id: str) -> Any:
        bot = rec.bot
        assert bot is not None
        channel = self._channel(bot, channel_id)
        if not self.permissions(bot, channel) & Permissions.READ_MESSAGE_HISTORY:
            return []
        query = rec.query
        limit = max(1, min(100, int(query.get("limit", 50))))
        messages = self.messages_in(channel)  # oldest first
        if "before" in query:
            messages = [m for m in messages if m.id < int(query["before"])][-limit:]
        elif "after" in query:
            messages = [m for m in messages if m.id > int(query["after"])][:limit]
        elif "around" in query:
            pivot = int(query["around"])
            older = [m for m in messages if m.id <= pivot][-((limit + 1) // 2) :]
            newer = [m for m in messages if m.id > pivot][: limit // 2]
            messages = older + newer
        else:
            messages = messages[-limit:]
        content = bot.message_content_intent
        return [self._message_payload(m, bot, content) for m in reversed(messages)]

    async def _get_message(self, rec: RecordedRequest, channel_id: str, message_id: str) -> Any:
        bot = rec.bot
        assert bot is not None
        channel = self._channel(bot, channel_id, Permissions.VIEW_CHANNEL | Permissions.READ_MESSAGE_HISTORY)
        return self._message_payload(self._message(channel, message_id), bot, bot.message_content_intent)

    def _attachments_for(
        self,
        channel: FakeChannel,
        body: dict[str, Any],
        files: list[UploadedFile],
        existing: Sequence[FakeAttachment] = (),
    ) -> list[FakeAttachment]:
        specs = body.get("attachments")
        by_field = {f.field: f for f in files}
        if specs is None:
            return [*existing, *(self._new_attachment(channel, f.filename, f.data) for f in files)]
        kept = {a.id: a for a in existing}
        result = []
        for spec in specs:
            spec_id = str(spec.get("id"))
            upload = by_field.get(f"files[{spec_id}]")
            if upload is not None:
                filename = spec.get("filename") or upload.filename
                result.append(self._new_attachment(channel, filename, upload.data, None, spec.get("description")))
            elif spec_id.isdigit() and int(spec_id) in kept:
                result.append(kept[int(spec_id)])
        return result

    @staticmethod
    def _validate_content(body: dict[str, Any], attachments: Sequence[Any], *, creating: bool = True) -> None:
        content = body.get("content")
        if content is not None and len(str(content)) > MAX_CONTENT:
            raise _HTTPError(
                400,
                50035,
                "Invalid Form Body",
                {
                    "content": {
                        "_errors": [
                            {"code": "BASE_TYPE_MAX_LENGTH", "message": f"Must be {MAX_CONTENT} or fewer in length."}
                        ]
                    }
                },
            )
        if body.get("components"):
            FakeDiscord._validate_components(body["components"])
        if creating and not (
            content
            or body.get("embeds")
            or attachments
            or body.get("sticker_ids")
            or body.get("poll")
            or body.get("components")
        ):
            raise _HTTPError(400, 50006, "Cannot send an empty message")

    @staticmethod
    def _validate_components(rows: Any) -> None:
        """Action rows as Discord takes them: 5 rows at most, each of 1 to 5 buttons or one string
        select; a link button (style 5) with a url and no custom_id, any other with a unique
        custom_id of 1 to 100 characters and no url, labels of 80 characters at most; a select
        with a unique custom_id, 1 to 25 options of distinct values (labels and values of 100
        characters at most), a placeholder of 150 at most, 0 <= min_values <= max_values <= its
        options (max at least 1); else 50035 naming the field."""
        if not isinstance(rows, list) or len(rows) > _MAX_ROWS:
            raise _invalid_component("components", f"Must be {_MAX_ROWS} or fewer in length.")
        seen: set[str] = set()
        for r, row in enumerate(rows):
            items = row.get("components") if isinstance(row, dict) else None
            if (
                row.get("type") != _COMPONENT_ROW
                or not isinstance(items, list)
                or not 1 <= len(items) <= _MAX_ROW_BUTTONS
            ):
                raise _invalid_component(f"components.{r}", f"An action row holds 1 to {_MAX_ROW_BUTTONS} components.")
            if any(isinstance(i, dict) and i.get("type") == _COMPONENT_SELECT for i in items) and len(items) != 1:
                raise _invalid_component(f"components.{r}", "A select menu takes a whole action row.")
            for b, item in enumerate(items):
                where = f"components.{r}.components.{b}"
                if isinstance(item, dict) and item.get("type") == _COMPONENT_SELECT:
                    _validate_select(item, where)
                    custom_id = item["custom_id"]
                else:
                    custom_id = FakeDiscord._validate_button(item, where)
                if custom_id is None:
                    continue
                if custom_id in seen:
                    raise _invalid_component(f"{where}.custom_id", "Component custom id cannot be duplicated")
                seen.add(custom_id)

    @staticmethod
    def _validate_button(item: Any, where: str) -> str | None:
        """A button as Discord takes it (see :meth:`_validate_components`); its custom_id (None: a link)."""
        if not isinstance(item, dict) or item.get("type") != _COMPONENT_BUTTON:
            raise _invalid_component(where, "Only buttons and string selects are supported here.")
        if len(str(item.get("label") or "")) > _MAX_BUTTON_LABEL:
            raise _invalid_component(f"{where}.label", f"Must be {_MAX_BUTTON_LABEL} or fewer in length.")
        custom_id, url = item.get("custom_id"), item.get("url")
        if item.get("style") == _LINK_STYLE:
            if not url or custom_id is not None:
                raise _invalid_component(where, "A link button has a url and no custom_id.")
            return None
        if url is not None or not isinstance(custom_id, str) or not 1 <= len(custom_id) <= _MAX_CUSTOM_ID:
            raise _invalid_component(f"{where}.custom_id", f"Must be between 1 and {_MAX_CUSTOM_ID} in length.")
        return custom_id

    async def _post_message(self, rec: RecordedRequest, channel_id: str) -> Any:
        bot = rec.bot
        assert bot is not None
        channel = self._channel(bot, channel_id)
        perms = self.permissions(bot, channel)
        needed = Permissions.SEND_MESSAGES_IN_THREADS if channel.is_thread else Permissions.SEND_MESSAGES
        if channel.is_dm:
            other = next(u for u in channel.recipients if u.id != bot.id)
            if other.bot:
                raise _HTTPError(403, 50007, "Cannot send messages to this user")
        elif not perms & needed:
            raise _HTTPError(403, 50013, "Missing Permissions")
        if channel.type not in ChannelType.MESSAGEABLE:
            raise _HTTPError(400, 50008, "Cannot send messages in a non-text channel")
        body = rec.json if isinstance(rec.json, dict) else {}
        if rec.files and not channel.is_dm and not perms & Permissions.ATTACH_FILES:
            raise _HTTPError(403, 50013, "Missing Permissions")
        nonce = body.get("nonce")
        if body.get("enforce_nonce") and nonce is not None:
            # Discord answers a repeated nonce (a retry) with the message it already created.
            for earlier in reversed(list(channel.messages.values())):
                if earlier.author.id == bot.id and earlier.nonce == nonce:
                    return self._message_payload(earlier, bot, True)
        limit = channel.guild.upload_limit if channel.guild is not None else UPLOAD_LIMITS[0]
        if any(len(f.data) > limit for f in rec.files):
            raise _HTTPError(413, 40005, "Request entity too large")
        attachments = self._attachments_for(channel, body, rec.files)
        self._validate_content(body, attachments)
        reference = None
        ref = body.get("message_reference")
        if ref:
            ref_channel = self.channels.get(int(ref.get("channel_id") or channel.id))
            reference = ref_channel.messages.get(int(ref["message_id"])) if ref_channel else None
            if reference is None or reference.deleted:
                if ref.get("fail_if_not_exists", True):
                    raise _HTTPError(
                        400,
                        50035,
                        "Invalid Form Body",
                        {
                            "message_reference": {
                                "_errors": [{"code": "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "message": "Unknown message"}]
                            }
                        },
                    )
                reference = None
        message = self._create_message(
            channel,
            bot,
            content=str(body.get("content") or ""),
            attachments=attachments,
            embeds=body.get("embeds") or [],
            components=body.get("components") or [],
            reference=reference,
            allowed_mentions=body.get("allowed_mentions"),
            mention_author=True,
            tts=bool(body.get("tts")),
            nonce=nonce,
            flags=int(body.get("flags") or 0),
            payload=body,
            files=rec.files,
        )
        bot.sent.append(message)
        self._dispatch_message("MESSAGE_CREATE", message)
        return self._message_payload(message, bot, True)

    async def _edit_message(self, rec: RecordedRequest, channel_id: str, message_id: str) -> Any:
        bot = rec.bot
        assert bot is not None
        channel = self._channel(bot, channel_id)
        message = self._message(channel, message_id)
        body = rec.json if isinstance(rec.json, dict) else {}
        if message.author.id != bot.id and set(body) - {"flags"}:  # others' messages: only flags (suppress embeds)
            raise _HTTPError(403, 50005, "Cannot edit a message authored by another user")
        self._apply_edit(message, body, rec.files)
        bot.edits.append((message, body))
        return self._message_payload(message, bot, True)

    def _apply_edit(self, message: FakeMessage, body: dict[str, Any], files: list[UploadedFile]) -> None:
        channel = message.channel
        if "content" in body:
            content = body["content"] or ""
            self._validate_content(body, [], creating=False)
            message.content = content
            message.mentions, message.mention_roles, message.mention_everyone = self._mentions(
                channel, content, body.get("allowed_mentions"), message.reference, False
            )
        if "embeds" in body:
            message.embeds = body["embeds"] or []
        if "components" in body:
            if body["components"]:
                self._validate_components(body["components"])
            message.components = body["components"] or []
        if "flags" in body and body["flags"] is not None:
            message.flags = (message.flags & (_EPHEMERAL | _LOADING)) | int(body["flags"])
        if "attachments" in body or files:
            message.attachments = self._attachments_for(channel, body, files, message.attachments)
        message.flags &= ~_LOADING
        message.edited_timestamp = self._now()
        self._dispatch_message("MESSAGE_UPDATE", message)

    async def _delete_message_route(self, rec: RecordedRequest, channel_id: str, message_id: str) -> Any:
        bot = rec.bot
        assert bot is not None
        channel = self._channel(bot, channel_id)
        message = self._message(channel, message_id)
        if message.author.id != bot.id and not (
            channel.is_dm is False and self.permissions(bot, channel) & Permissions.MANAGE_MESSAGES
        ):
            raise _HTTPError(403, 50013, "Missing Permissions")
        bot.deletes.append(message)
        self._delete_message(message)
        return None

    async def _typing(self, rec: RecordedRequest, channel_id: str) -> Any:
        bot = rec.bot
        assert bot is not None
        channel = self._channel(bot, channel_id)
        bot.typing.append(channel)
        data: dict[str, Any] = {"user_id": str(bot.id), "channel_id": str(channel.id), "timestamp": int(time.time())}
        if channel.guild is not None:
            data["guild_id"] = str(channel.guild.id)
            data["member"] = self._member_payload(channel.guild.members[bot.id])
        for session in self._channel_sessions(channel, Intents.GUILD_MESSAGE_TYPING, Intents.DIRECT_MESSAGE_TYPING):
            if session.bot is not bot:
                self._dispatch(session, "TYPING_START", data)
        return None

    async def _add_reaction(self, rec: RecordedRequest, channel_id: str, message_id: str, emoji: str) -> Any:
        bot = rec.bot
        assert bot is not None
        channel = self._channel(bot, channel_id, Permissions.VIEW_CHANNEL | Permissions.READ_MESSAGE_HISTORY)
        message = self._message(channel, message_id)
        if (
            emoji not in message.reactions
            and not channel.is_dm
            and not self.permissions(bot, channel) & Permissions.ADD_REACTIONS
        ):
            raise _HTTPError(403, 50013, "Missing Permissions")
        bot.reactions.append((message, emoji))
        self._reaction_event(bot, message, emoji, True)
        return None

    async def _remove_reaction(
        self, rec: RecordedRequest, channel_id: str, message_id: str, emoji: str, user_id: str | None = None
    ) -> Any:
        bot = rec.bot
        assert bot is not None
        channel = self._channel(bot, channel_id)
        message = self._message(channel, message_id)
        user: FakeUser = bot
        if user_id is not None:
            if not self.permissions(bot, channel) & Permissions.MANAGE_MESSAGES:
                raise _HTTPError(403, 50013, "Missing Permissions")
            user = self.users[int(user_id)]
        self._reaction_event(user, message, emoji, False)
        return None

    async def _get_reactions(self, rec: RecordedRequest, channel_id: str, message_id: str, emoji: str) -> Any:
        assert rec.bot is not None
        message = self._message(self._channel(rec.bot, channel_id), message_id)
        if emoji not in message.reactions:
            raise _HTTPError(404, 10014, "Unknown Emoji")
        return [self._user_payload(self.users[u]) for u in message.reactions[emoji]]

    async def _start_thread(self, rec: RecordedRequest, channel_id: str, message_id: str | None = None) -> Any:
        bot = rec.bot
        assert bot is not None
        channel = self._channel(bot, channel_id)
        body = rec.json if isinstance(rec.json, dict) else {}
        message = self._message(channel, message_id) if message_id is not None else None
        private = body.get("type") == ChannelType.PRIVATE_THREAD
        needed = Permissions.CREATE_PRIVATE_THREADS if private else Permissions.CREATE_PUBLIC_THREADS
        if not self.permissions(bot, channel) & needed:
            raise _HTTPError(403, 50013, "Missing Permissions")
        if channel.type == ChannelType.FORUM:
            first = body.get("message") or {}
            thread = self.add_thread(channel, str(body.get("name", "")), owner=bot)
            created = self._create_message(
                thread,
                bot,
                content=str(first.get("content") or ""),
                attachments=self._attachments_for(thread, first, rec.files),
                embeds=first.get("embeds") or [],
                payload=first,
                files=rec.files,
                message_id=thread.id,
            )
            bot.sent.append(created)
            self._dispatch_message("MESSAGE_CREATE", created)
            return {**self._channel_payload(thread), "message": self._message_payload(created, bot, True)}
        thread = self.add_thread(channel, str(body.get("name", "")), owner=bot, private=private, message=message)
        return self._channel_payload(thread)

    async def _join_thread(self, rec: RecordedRequest, channel_id: str) -> Any:
        assert rec.bot is not None
        self._channel(rec.bot, channel_id).thread_members.add(rec.bot.id)
        return None

    async def _leave_thread(self, rec: RecordedRequest, channel_id: str) -> Any:
        assert rec.bot is not None
        self._channel(rec.bot, channel_id).thread_members.discard(rec.bot.id)
        return None

    # -- REST handlers: guilds ------------------------------------------------------------

    async def _get_guild(self, rec: RecordedRequest, guild_id: str) -> Any:
        assert rec.bot is not None
        guild = self._guild(rec.bot, guild_id)
        payload = self._guild_payload(guild)
        if rec.query.get("with_counts") in ("true", "1", "True"):
            payload["approximate_member_count"] = len(guild.members)
            payload["approximate_presence_count"] = len(guild.members)
        return payload

    async def _get_guild_channels(self, rec: RecordedRequest, guild_id: str) -> Any:
        assert rec.bot is not None
        guild = self._guild(rec.bot, guild_id)
        return [self._channel_payload(c) for c in guild.channels.values() if not c.is_thread]

    async def _get_roles(self, rec: RecordedRequest, guild_id: str) -> Any:
        assert rec.bot is not None
        return [self._role_payload(r) for r in self._guild(rec.bot, guild_id).roles.values()]

    async def _get_members(self, rec: RecordedRequest, guild_id: str) -> Any:
        assert rec.bot is not None
        guild = self._guild(rec.bot, guild_id)
        if not rec.bot.members_intent:
            raise _HTTPError(403, 50001, "Missing Access")
        after = int(rec.query.get("after", 0))
        limit = max(1, min(1000, int(rec.query.get("limit", 1))))
        members = sorted((m for m in guild.members.values() if m.user.id > after), key=lambda m: m.user.id)
        return [self._member_payload(m) for m in members[:limit]]

    async def _get_member(self, rec: RecordedRequest, guild_id: str, user_id: str) -> Any:
        assert rec.bot is not None
        guild = self._guild(rec.bot, guild_id)
        member = guild.members.get(int(user_id)) if user_id.isdigit() else None
        if member is None:
            raise _unknown("Member", 10007)
        return self._member_payload(member)

    async def _get_active_threads(self, rec: RecordedRequest, guild_id: str) -> Any:
        bot = rec.bot
        assert bot is not None
        guild = self._guild(bot, guild_id)
        threads = [c for c in guild.channels.values() if c.is_thread and not c.archived and self.can_view(bot, c)]
        members = [
            {"id": str(t.id), "user_id": str(bot.id), "join_timestamp": self._iso(t.id), "flags": 0}
            for t in threads
            if bot.id in t.thread_members
        ]
        return {"threads": [self._channel_payload(t) for t in threads], "members": members}

    # -- REST handlers: application commands ----------------------------------------------

    def _command_payload(
        self, bot: FakeBot, command: dict[str, Any], guild_id: int | None, existing: dict[str, Any] | None
    ) -> dict[str, Any]:
        payload = {
            "type": 1,
            "description": "",
            "options": [],
            "default_member_permissions": None,
            "nsfw": False,
            "contexts": None,
            "integration_types": [0],
            "name_localizations": None,
            "description_localizations": None,
            **command,
            "id": existing["id"] if existing else str(self.new_id()),
            "application_id": str(bot.application_id),
            "version": str(self.new_id()),
        }
        if guild_id is not None:
            payload["guild_id"] = str(guild_id)
        else:
            payload.pop("guild_id", None)
        return payload

    def _command_scope(self, bot: FakeBot, application_id: str, guild_id: str | None) -> int | None:
        self._app(bot, application_id)
        if guild_id is None:
            return None
        return self._guild(bot, guild_id).id

    async def _get_commands(self, rec: RecordedRequest, application_id: str, guild_id: str | None = None) -> Any:
        assert rec.bot is not None
        scope = self._command_scope(rec.bot, application_id, guild_id)
        return rec.bot.commands.get(scope, [])

    async def _put_commands(self, rec: RecordedRequest, application_id: str, guild_id: str | None = None) -> Any:
        bot = rec.bot
        assert bot is not None
        scope = self._command_scope(bot, application_id, guild_id)
        commands = rec.json if isinstance(rec.json, list) else []
        current = {(c["name"], c.get("type", 1)): c for c in bot.commands.get(scope, [])}
        registered = [
            self._command_payload(bot, c, scope, current.get((c["name"], c.get("type", 1)))) for c in commands
        ]
        bot.commands[scope] = registered
        bot.command_registrations.append((scope, commands))
        return registered

    async def _post_command(self, rec: RecordedRequest, application_id: str, guild_id: str | None = None) -> Any:
        bot = rec.bot
        assert bot is not None
        scope = self._command_scope(bot, application_id, guild_id)
        command = rec.json if isinstance(rec.json, dict) else {}
        current = bot.commands.setdefault(scope, [])
        existing = next(
            (c for c in current if c["name"] == command.get("name") and c.get("type", 1) == command.get("type", 1)),
            None,
        )
        payload = self._command_payload(bot, command, scope, existing)
        if existing is not None:
            current[current.index(existing)] = payload
        else:
            current.append(payload)
        bot.command_registrations.append((scope, [command]))
        return payload

    def _command(self, bot: FakeBot, scope: int | None, command_id: str) -> dict[str, Any]:
        command = next((c for c in bot.commands.get(scope, []) if c["id"] == command_id), None)
        if command is None:
            raise _unknown("application command", 10063)
        return command

    async def _get_command(
        self, rec: RecordedRequest, application_id: str, command_id: str, guild_id: str | None = None
    ) -> Any:
        assert rec.bot is not None
        return self._command(rec.bot, self._command_scope(rec.bot, application_id, guild_id), command_id)

    async def _patch_command(
        self, rec: RecordedRequest, application_id: str, command_id: str, guild_id: str | None = None
    ) -> Any:
        bot = rec.bot
        assert bot is not None
        scope = self._command_scope(bot, application_id, guild_id)
        command = self._command(bot, scope, command_id)
        command.update(rec.json if isinstance(rec.json, dict) else {})
        command["version"] = str(self.new_id())
        return command

    async def _delete_command(
        self, rec: RecordedRequest, application_id: str, command_id: str, guild_id: str | None = None
    ) -> Any:
        bot = rec.bot
        assert bot is not None
        scope = self._command_scope(bot, application_id, guild_id)
        command = self._command(bot, scope, command_id)
        bot.commands[scope].remove(command)
        return None

    # -- REST handlers: interactions and webhooks -----------------------------------------

    def _interaction(self, interaction_id: str, token: str) -> FakeInteraction:
        interaction = self._interactions.get(int(interaction_id)) if interaction_id.isdigit() else None
        if interaction is None or interaction.token != token:
            raise _unknown("interaction", 10062)
        return interaction

    def _webhook_interaction(self, application_id: str, token: str) -> FakeInteraction:
        interaction = next((i for i in self._interactions.values() if i.token == token), None)
        if interaction is None or str(interaction.bot.application_id) != application_id:
            raise _unknown("Webhook", 10015)
        if not interaction.acknowledged:
            raise _unknown("Webhook", 10015)
        return interaction

    def _record_response(
        self,
        interaction: FakeInteraction,
        kind: str,
        kind_type: int | None,
        body: dict[str, Any],
        files: list[UploadedFile],
        message: FakeMessage | None,
    ) -> None:
        response = InteractionResponse(interaction, kind, kind_type, body, files, message)
        interaction.responses.append(response)
        interaction.bot.interaction_responses.append(response)
        self._changed()

    def _interaction_message(
        self, interaction: FakeInteraction, body: dict[str, Any], files: list[UploadedFile], *, loading: bool = False
    ) -> FakeMessage:
        channel = interaction.channel
        attachments = self._attachments_for(channel, body, files)
        flags = int(body.get("flags") or 0) & (_EPHEMERAL | (1 << 2) | (1 << 12))
        if loading:
            flags |= _LOADING
        else:
            self._validate_content(body, attachments)
        bot = interaction.bot
        message = self._create_message(
            channel,
            bot,
            content=str(body.get("content") or ""),
            attachments=attachments,
            embeds=body.get("embeds") or [],
            components=body.get("components") or [],
            allowed_mentions=body.get("allowed_mentions"),
            tts=bool(body.get("tts")),
            flags=flags,
            message_type=20,
            webhook_id=bot.application_id,
            application_id=bot.application_id,
            interaction=interaction,
            payload=body,
            files=files,
        )
        self._dispatch_message("MESSAGE_CREATE", message)
        return message

    @staticmethod
    def _checked_modal(interaction: FakeInteraction, data: dict[str, Any]) -> dict[str, Any]:
        """A modal as Discord takes it in a callback of type 9: not in answer to a modal's own
        submission; a custom_id of 1 to 100 characters, a title of 1 to 45, 1 to 5 action rows of
        one text input each (a unique custom_id, a label of 1 to 45, style 1 or 2, a max_length
        of 1 to 4000); else 50035 naming the field."""
        if interaction.type == 5:
            raise _invalid_form("type", "A modal cannot answer a modal.", "INTERACTION_RESPONSE_TYPE_INVALID")
        custom_id, title, rows = data.get("custom_id"), data.get("title"), data.get("components")
        if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= _MAX_CUSTOM_ID:
            raise _invalid_component("data.custom_id", f"Must be between 1 and {_MAX_CUSTOM_ID} in length.")
        if not isinstance(title, str) or not 1 <= len(title) <= _MAX_MODAL_TITLE:
            raise _invalid_component("data.title", f"Must be between 1 and {_MAX_MODAL_TITLE} in length.")
        if not isinstance(rows, list) or not 1 <= len(rows) <= _MAX_ROWS:
            raise _invalid_component("data.components", f"Must be between 1 and {_MAX_ROWS} in length.")
        seen: set[str] = set()
        for r, row in enumerate(rows):
            items = row.get("components") if isinstance(row, dict) else None
            if not isinstance(items, list) or len(items) != 1 or items[0].get("type") != _COMPONENT_TEXT_INPUT:
                raise _invalid_component(f"data.components.{r}", "A modal's action row holds one text input.")
            item = items[0]
            if not isinstance(item.get("custom_id"), str) or item["custom_id"] in seen:
                raise _invalid_component(f"data.components.{r}.components.0.custom_id", "Must be unique.")
            seen.add(item["custom_id"])
            if not isinstance(item.get("label"), str) or not 1 <= len(item["label"]) <= _MAX_INPUT_LABEL:
                raise _invalid_component(
                    f"data.components.{r}.components.0.label", f"Must be between 1 and {_MAX_INPUT_LABEL} in length."
                )
            if item.get("style") not in (1, 2) or not 1 <= item.get("max_length", _MAX_INPUT_TEXT) <= _MAX_INPUT_TEXT:
                raise _invalid_component(
                    f"data.components.{r}.components.0", "A text input's style or max_length is invalid."
                )
        return data

    async def _interaction_callback(self, rec: RecordedRequest, interaction_id: str, token: str) -> Any:
        interaction = self._interaction(interaction_id, token)
        body = rec.json if isinstance(rec.json, dict) else {}
        kind = int(body.get("type", 0))
        data = body.get("data") or {}
        if interaction.dispatched and time.monotonic() - interaction.dispatched[0] > self.interaction_window:
            raise _unknown("interaction", 10062)
        if interaction.acknowledged:
            raise _HTTPError(400, 40060, "Interaction has already been acknowledged.")
        if kind not in (4, 5, 6, 7, 8, 9, 12):
            raise _invalid_form("type", "Value must be one of {4, 5, 6, 7, 8, 9, 12}.", "BASE_TYPE_CHOICES")
        message = None
        if kind == 9:
            interaction.modal = self._checked_modal(interaction, data)
        elif kind == 4:
            message = self._interaction_message(interaction, data, rec.files)
        elif kind == 5:
            message = self._interaction_message(interaction, data, rec.files, loading=True)
        elif kind == 7 and interaction.message is not None:  # the component's message, updated
            self._apply_edit(interaction.message, data, rec.files)
        interaction.acknowledged = True
        interaction.original = message
        self._record_response(interaction, "callback", kind, body, rec.files, message)
        if rec.query.get("with_response") not in ("1", "true", "True"):
            return None
        answer: dict[str, Any] = {
            "interaction": {
                "id": str(interaction.id),
                "type": interaction.type,
                "response_message_loading": kind == 5,
                "response_message_ephemeral": bool(message is not None and message.flags & _EPHEMERAL),
            }
        }
        if message is not None:
            answer["interaction"]["response_message_id"] = str(message.id)
            answer["resource"] = {"type": kind, "message": self._message_payload(message, interaction.bot, True)}
        return answer

    async def _followup(self, rec: RecordedRequest, application_id: str, token: str) -> Any:
        interaction = self._webhook_interaction(application_id, token)
        body = rec.json if isinstance(rec.json, dict) else {}
        original = interaction.original
        if original is not None and original.flags & _LOADING and not interaction.followups:
            # As on Discord: the first followup after a "thinking" defer replaces that message.
            self._apply_edit(original, body, rec.files)
            message = original
        else:
            message = self._interaction_message(interaction, body, rec.files)
        interaction.followups.append(message)
        self._record_response(interaction, "followup", None, body, rec.files, message)
        if rec.query.get("wait") in ("true", "1", "True"):
            return self._message_payload(message, interaction.bot, True)
        return None

    def _webhook_message(self, interaction: FakeInteraction, message_id: str) -> FakeMessage:
        if message_id == "@original":
            if interaction.original is None or interaction.original.deleted:
                raise _unknown("Message", 10008)
            return interaction.original
        message = next((m for m in interaction.followups if str(m.id) == message_id and not m.deleted), None)
        if message is None:
            raise _unknown("Message", 10008)
        return message

    async def _get_webhook_message(self, rec: RecordedRequest, application_id: str, token: str, message_id: str) -> Any:
        interaction = self._webhook_interaction(application_id, token)
        return self._message_payload(self._webhook_message(interaction, message_id), interaction.bot, True)

    async def _edit_webhook_message(
        self, rec: RecordedRequest, application_id: str, token: str, message_id: str
    ) -> Any:
        interaction = self._webhook_interaction(application_id, token)
        body = rec.json if isinstance(rec.json, dict) else {}
        message = self._webhook_message(interaction, message_id)
        self._apply_edit(message, body, rec.files)
        self._record_response(interaction, "edit", None, body, rec.files, message)
        return self._message_payload(message, interaction.bot, True)

    async def _delete_webhook_message(
        self, rec: RecordedRequest, application_id: str, token: str, message_id: str
    ) -> Any:
        interaction = self._webhook_interaction(application_id, token)
        message = self._webhook_message(interaction, message_id)
        self._delete_message(message)
        self._record_response(interaction, "delete", None, {}, [], message)
        return None
