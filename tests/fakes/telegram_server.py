"""A fake Telegram Bot API: a real HTTP server in the test's event loop.

An unmodified python-telegram-bot ``Application`` polls it, so tests exercise the production
code path. PTB is pointed at it the way troupe's ``TELEGRAM_API_ROOT`` does::

    async with FakeTelegram() as fake:
        ada = fake.add_bot("7001:token-ada", username="ada_bot", first_name="Ada")
        sam = fake.add_user("Sam", username="samr")
        group = fake.add_group("Writers", members=[sam, ada])
        app = (ApplicationBuilder().token(ada.token)
               .base_url(f"{fake.url}/bot").base_file_url(f"{fake.url}/file/bot").build())
        ...                                   # initialize, start, updater.start_polling
        await fake.user_says(sam, group, "hi @ada_bot")
        sent = await fake.wait_for_sent(ada, 1)

PTB calls ``{base_url}{token}/{method}`` with form fields (objects JSON-encoded) or multipart.

The world: ``add_bot(token, username=, first_name=)`` (the bot's id is the token's number),
``add_user(first_name, username=, last_name=)``, ``add_group(title, members=, supergroup=True,
forum=False, creator=None, admins=())``, ``private(user, bot)`` (the private chat between them),
``add_topic(group, name)`` (a forum topic; returns its thread id).

Acting as users (each returns the message as the API would show it): ``user_says(user, chat, text,
topic=None, reply_to=None, entities=None, photo=None, document=None, voice=None, audio=None,
video_note=None, sticker=None, file_size=None, file_size_in_message=True)``: ``@username`` mentions get
``mention`` entities (UTF-16 offsets) and ``/commands`` get ``bot_command`` ones; files are ``(name,
bytes[, mime])`` tuples served by ``getFile`` and the file URL, except ``voice`` and ``video_note``:
``(bytes, duration)`` (a voice note is ``audio/ogg``; the older ``(name, bytes[, mime])`` form of
``voice`` still works). Text given with a file is its caption. ``file_size=`` is the size Telegram
reports for the message's file (default: its real length), in the message and from getFile, so a
test can send a "25 MB" voice note of a few bytes; ``file_size_in_message=False`` leaves it out of
the message (it is optional there; getFile still reports it). ``user_edits(message, text)``,
``user_reacts(user, message, emoji)``, ``member_joins(chat, user)``, ``group_renamed(chat, title,
by=)``, ``member_status_changes(chat,
user, old, new, by=None, kind="chat_member")``; ``bot_removed(chat, bot, by=, status="kicked")`` and
``bot_added(chat, bot, by=, announce=False)`` (the bot's own ``my_chat_member``, and its membership;
``announce``: then the group's ``new_chat_members`` service message);
``add_channel(title, members=)`` and ``channel_posts(channel, text)`` (a ``channel_post``).
``media_group_id=`` makes a message part of an album; ``user_sends_album(user, chat, items,
caption)`` sends one (one update per photo or document, the caption on the first). A
``sticker`` is ``(emoji or None, "static" | "animated" | "video")``. Updates go to the bots that are
members of the chat (in a private chat, to its bot) whose ``allowed_updates`` take them.
``user_taps(user, chat, answer)`` taps an answer of the reply keyboard a bot shows in the chat
(``chat.keyboard``; a ValueError when none offers it), which sends it as the person's message.
``user_presses(user, message, data, inaccessible=False, inline=False)`` presses a button under a
message a bot sent: a ``callback_query`` for that bot only (``inaccessible``: the message as an
InaccessibleMessage, date 0; ``inline``: an ``inline_message_id`` and no message); it returns the
query's id, and ``answered(id)`` / ``ack_delay(id)`` say how the bot acknowledged it.

Like Telegram, what a bot sends is never delivered to other bots.

Methods: getMe, deleteWebhook, getUpdates (long polling: waits up to ``timeout`` seconds, returns
as soon as an update is queued; a second concurrent poll on one token ends the first with 409
Conflict), sendMessage (``parse_mode=MarkdownV2`` is validated as Telegram does: an unescaped
reserved character or an unclosed entity is 400 "can't parse entities"; text over 4096
characters, counted as Telegram counts them in UTF-16 code units after entity parsing (an emoji
past U+FFFF is two), is 400 "message is too long"), sendVoice (a multipart upload, or the file id of a
stored file; it must be Ogg/Opus — starts with ``OggS`` and holds an ``OpusHead`` — else 400;
Telegram itself also takes MP3 and M4A, which troupe never sends), sendPhoto (PNG, JPEG or WebP
of at most 10 MB, else 400) and sendDocument (any file; over 50 MB is 413, as for every upload),
each with a caption of at most 1024 characters (UTF-16 code units; else 400), sendMediaGroup (2 to 10 photos, each
recorded in ``sent`` as a photo with the album's id as ``album``), sendChatAction, getFile (a file
over ``max_download`` bytes, 20 MB by default, is 400 "file is too big" as on api.telegram.org;
``max_download = None`` serves any size, as a local Bot API server does), getChatAdministrators,
getChatMember, leaveChat (403 when not a member; the bot gets its own ``my_chat_member``, member
→ left, the others in a group the ``left_chat_member`` service message; recorded in its ``left``),
setMessageReaction (one emoji of the Bot API's set on a message the chat has, else 400 as Telegram
says it; recorded per bot in ``reactions``), setMyCommands (names checked as Telegram does; the
menu kept as the bot's ``commands``), deleteMyCommands, close, answerCallbackQuery (recorded per bot in ``answers`` as
``(query id, monotonic time, text)``; an unknown query, one already answered or one older than
``callback_expiry`` seconds, 15 by default, is 400 "query is too old…"). Anything else is 404,
recorded. ``reply_markup`` (an inline keyboard, checked as Telegram does: one of
``callback_data`` of 1-64 bytes or ``url`` per button) is kept on the sent message and recorded; a
reply keyboard (``keyboard`` rows, ``one_time_keyboard``, ``resize_keyboard``) or its removal
(``remove_keyboard``) is recorded and kept as the chat's ``keyboard``, never on the message, as
Telegram returns it; a ForceReply (``force_reply: true``, a placeholder of 1 to 64 characters) is
recorded only (a user answers it with ``user_says(..., reply_to=message)``). editMessageText, editMessageCaption and editMessageReplyMarkup change a bot's
own message (400 for another's, for one not found, for a reply keyboard, and "message is not
modified" for an edit that changes nothing); an edit naming no ``reply_markup`` removes the inline
keyboard, as Telegram does; each is recorded in the bot's ``edits`` (``kind`` ``text``, ``caption``
or ``markup``, ``chat_id``, ``message_id``, ``text`` as shown, ``reply_markup``, ``message``).

``fail_next(method, status=429, retry_after=1, description=None, bot=None, times=1, after=0)`` makes
the next ``times`` matching calls (once ``after`` more have gone through: the second part of a long
reply, say) fail as Telegram does (429 with ``parameters.retry_after``, 400, 403, 5xx).
An unknown token is 401, and so is a known one while ``revoke(bot)`` holds
(``restore(bot)`` ends it): every call then answers 401 Unauthorized, an open long poll at once,
and counts in the bot's ``refused``. Per bot: ``requests``, ``sent`` (each with ``kind`` — ``text`` or
``voice`` —, ``chat_id``, ``text`` as the user sees it (a voice note's caption), ``raw`` as sent,
``parse_mode``, ``reply_to``, ``thread_id``, ``message``; a voice note also ``voice`` (the bytes)
and ``duration``), ``actions``, ``downloads`` (file paths fetched from the file URL),
``webhook_deletions``, ``polls``. A photo or document sent is recorded with ``kind`` ``photo`` or
``document``, its caption as ``text``, and ``photo``/``document`` (the bytes), ``filename``, ``size``.
``wait_for(check)``, ``wait_for_sent``, ``wait_polling``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
from aiohttp import web
from telegram.constants import ReactionEmoji

from ._local import LocalServer

__all__ = ["FakeBot", "FakeChat", "FakeTelegram", "FakeUser", "Webhook", "markdown_v2_plain"]

T = TypeVar("T")
MAX_TEXT = 4096
MAX_DOWNLOAD = 20 * 1024 * 1024
MAX_CAPTION = 1024
MAX_ALBUM = 10
MAX_PHOTO = 10 * 1024 * 1024  # the Bot API's limits for uploads
MAX_UPLOAD = 50 * 1024 * 1024


_PICTURE_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"RIFF")
_RESERVED = set("_*[]()~`>#+-=|{}.!")
MAX_CALLBACK_DATA = 64
_REACTION_EMOJI = frozenset(e.value for e in ReactionEmoji)  # the Bot API's ReactionTypeEmoji set
WEBHOOK_RETRY_S = 0.1  # a webhook post that failed is tried again after this long (Telegram: longer)
CALLBACK_EXPIRY_S = 15.0  # a callback query unanswered for longer is "too old" (Telegram: some 15 s)
_TOO_OLD = "Bad Request: query is too old and response timeout expired or query ID is invalid"


@dataclass(eq=False)
class FakeUser:
    id: int
    first_name: str
    username: str | None = None
    last_name: str | None = None
    is_bot: bool = False

    def payload(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "is_bot": self.is_bot, "first_name": self.first_name}
        if self.username:
            data["username"] = self.username
        if self.last_name:
            data["last_name"] = self.last_name
        return data


@dataclass(eq=False)
class FakeBot(FakeUser):
    token: str = ""
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)
    actions: list[tuple[int, str]] = field(default_factory=list)
    downloads: list[str] = field(default_factory=list)
    webhook_deletions: int = 0
    polls: int = 0
    updates: list[dict[str, Any]] = field(default_factory=list)
    delivered: list[dict[str, Any]] = field(default_factory=list)  # every update ever queued for this bot
    allowed_updates: list[str] | None = None
    poller: asyncio.Future[None] | None = None
    answers: list[tuple[str, float, str | None]] = field(default_factory=list)  # answerCallbackQuery taken
    commands: list[dict[str, Any]] | None = None  # the menu set with setMyCommands (default scope)
    revoked: bool = False  # every call answers 401 (FakeTelegram.revoke)
    refused: int = 0  # calls answered 401 while revoked
    left: list[int] = field(default_factory=list)  # chats it left with leaveChat
    reactions: list[dict[str, Any]] = field(default_factory=list)  # setMessageReaction: chat_id, message_id, emoji
    edits: list[dict[str, Any]] = field(default_factory=list)  # editMessage*: kind, chat_id, message_id, text …
    webhook: Webhook | None = None  # set with setWebhook: updates are posted there, not polled
    webhook_posts: list[tuple[int, int]] = field(default_factory=list)  # (update id, HTTP status or 0)


@dataclass(eq=False)
class FakeChat:
    id: int
    type: str
    title: str | None = None
    members: list[FakeUser] = field(default_factory=list)
    forum: bool = False
    creator: FakeUser | None = None
    admins: list[FakeUser] = field(default_factory=list)
    private_with: FakeUser | None = None  # a private chat: the person
    topics: dict[int, str] = field(default_factory=dict)
    username: str | None = None  # a public channel's @name
    keyboard: dict[str, Any] | None = None  # the reply keyboard a bot shows in place of the phone's

    def payload(self) -> dict[str, Any]:
        if self.type == "private":
            assert self.private_with is not None
            user = self.private_with
            data: dict[str, Any] = {"id": self.id, "type": "private", "first_name": user.first_name}
            if user.username:
                data["username"] = user.username
            return data
        data = {"id": self.id, "type": self.type, "title": self.title}
        if self.username:
            data["username"] = self.username
        if self.forum:
            data["is_forum"] = True
        return data


@dataclass(frozen=True)
class _Posted:
    """A file a bot uploads, with its caption (as shown and as sent), where it goes and what it quotes."""

    kind: str
    data: bytes
    filename: str | None
    mime: str | None
    caption: str
    raw: str
    parse_mode: Any
    reply_to: Any
    thread: Any
    markup: Any = None
    """The inline keyboard it carries (``reply_markup``), if any."""


@dataclass
class Webhook:
    """A bot's webhook (setWebhook): where and how the fake posts its updates."""

    url: str
    secret: str | None
    max_connections: int = 40
    last_error_date: int | None = None
    last_error_message: str | None = None
    sending: set[int] = field(default_factory=set)  # update ids being posted now
    task: asyncio.Task[None] | None = None


@dataclass
class _Failure:
    method: str
    status: int
    retry_after: float | None
    description: str | None
    bot: FakeBot | None
    times: int
    after: int = 0


@dataclass
class _Press:
    """A callback query: when the fake queued it, when a poll handed it over, whether it was answered."""

    bot: FakeBot
    update_id: int
    queued_at: float
    delivered_at: float | None = None
    answered: bool = False


def _markup_problem(markup: Any) -> str | None:
    """What Telegram would refuse in a ``reply_markup``: an inline keyboard, a reply keyboard
    (rows of buttons with a text) or its removal (``remove_keyboard: true``); None when it takes it."""
    if isinstance(markup, dict) and "keyboard" in markup:
        rows = markup["keyboard"]
        if not isinstance(rows, list) or not rows or not all(isinstance(r, list) and r for r in rows):
            return "Bad Request: can't parse reply keyboard markup JSON object"
        for button in (b for row in rows for b in row):
            text = button if isinstance(button, str) else button.get("text") if isinstance(button, dict) else None
            if not isinstance(text, str) or not text.strip():
                return "Bad Request: keyboard button text is empty"
        return None
    if isinstance(markup, dict) and "force_reply" in markup:
        placeholder = markup.get("input_field_placeholder")
        if markup["force_reply"] is not True or (placeholder is not None and not 1 <= len(str(placeholder)) <= 64):
            return "Bad Request: can't parse reply keyboard markup JSON object"
        return None
    if isinstance(markup, dict) and "remove_keyboard" in markup:
        return (
            None if markup["remove_keyboard"] is True else "Bad Request: can't parse reply keyboard markup JSON object"
        )
    return _keyboard_problem(markup)


def _inline(markup: Any) -> bool:
    return isinstance(markup, dict) and "inline_keyboard" in markup


def _keyboard_problem(markup: Any) -> str | None:
    """What Telegram would refuse in an inline keyboard, or None."""
    rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        return "Bad Request: can't parse reply keyboard markup JSON object"
    for button in (b for row in rows for b in row):
        if not isinstance(button, dict) or not str(button.get("text") or "").strip():
            return "Bad Request: text buttons are unallowed in the inline keyboard"
        data, url = button.get("callback_data"), button.get("url")
        if (data is None) == (url is None):
            return "Bad Request: can't parse inline keyboard button: exactly one of the optional fields must be used"
        if data is not None and not 1 <= len(str(data).encode()) <= MAX_CALLBACK_DATA:
            return "Bad Request: BUTTON_DATA_INVALID"
        if url is not None and not str(url).startswith(("http://", "https://", "tg://")):
            return "Bad Request: BUTTON_URL_INVALID"
    return None


def _chat_member(status: str, user: FakeUser) -> dict[str, Any]:
    """A ChatMember of ``status``; a ban (``kicked``) is for ever (``until_date`` 0)."""
    member: dict[str, Any] = {"status": status, "user": user.payload()}
    if status == "kicked":
        member["until_date"] = 0
    return member


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def markdown_v2_plain(text: str) -> str:
    """What a MarkdownV2 text shows, or ValueError with Telegram's description of the problem."""
    out: list[str] = []
    open_marks: list[tuple[str, int]] = []
    i, n = 0, len(text)

    def byte_offset(index: int) -> int:
        return len(text[:index].encode("utf-8"))

    def find(start: int, closing: str) -> int:
        """Index of the next unescaped ``closing`` from ``start`` (``n`` if none)."""
        while start < n and text[start] != closing:
            start += 2 if text[start] == "\\" else 1
        return start

    while i < n:
        ch = text[i]
        if ch == "\\":
            if i + 1 < n:
                out.append(text[i + 1])
            i += 2
            continue
        if text.startswith("```", i):
            end = text.find("```", i + 3)
            if end < 0:
                raise ValueError(f"Can't find end of Pre entity at byte offset {byte_offset(i)}")
            body = text[i + 3 : end]
            body = body.split("\n", 1)[1] if "\n" in body else body
            out.append(body.replace("\\`", "`").replace("\\\\", "\\"))
            i = end + 3
            continue
        if ch == "`":
            end = find(i + 1, "`")
            if end >= n:
                raise ValueError(f"Can't find end of Code entity at byte offset {byte_offset(i)}")
            out.append(text[i + 1 : end].replace("\\`", "`").replace("\\\\", "\\"))
            i = end + 1
            continue
        if ch == "[":
            close = find(i + 1, "]")
            if close >= n or not text.startswith("](", close):
                raise ValueError(f"Can't find end of TextUrl entity at byte offset {byte_offset(i)}")
            end = find(close + 2, ")")
            if end >= n:
                raise ValueError(f"Can't find end of TextUrl entity at byte offset {byte_offset(i)}")
            out.append(markdown_v2_plain(text[i + 1 : close]))
            i = end + 1
            continue
        if ch == ">" and (i == 0 or text[i - 1] == "\n"):
            i += 1  # a blockquote
            continue
        mark = "||" if text.startswith("||", i) else "__" if text.startswith("__", i) else ch
        if mark in ("*", "_", "__", "~", "||"):
            if open_marks and open_marks[-1][0] == mark:
                open_marks.pop()
            elif any(m == mark for m, _ in open_marks):
                raise ValueError(
                    f"Can't find end of the entity starting at byte offset "
                    f"{byte_offset(next(p for m, p in open_marks if m == mark))}"
                )
            else:
                open_marks.append((mark, i))
            i += len(mark)
            continue
        if ch in _RESERVED:
            raise ValueError(f"Character '{ch}' is reserved and must be escaped with the preceding '\\'")
        out.append(ch)
        i += 1
    if open_marks:
        raise ValueError(f"Can't find end of the entity starting at byte offset {byte_offset(open_marks[0][1])}")
    return "".join(out)


class FakeTelegram(LocalServer):
    """The Bot API for several bots at once; see the module docstring."""

    def __init__(self) -> None:
        self.bots: dict[str, FakeBot] = {}
        self.users: list[FakeUser] = []
        self.chats: dict[int, FakeChat] = {}
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        self.files: dict[str, tuple[str, bytes, str]] = {}
        self.file_sizes: dict[str, int] = {}  # sizes reported instead of the real length
        self.max_download: int | None = MAX_DOWNLOAD
        self.unknown: list[str] = []
        self._ids = itertools.count(1000)
        self._message_ids: dict[int, itertools.count[int]] = {}
        self._update_ids = itertools.count(1)
        self._failures: list[_Failure] = []
        self.callback_expiry = CALLBACK_EXPIRY_S
        self.presses: dict[str, _Press] = {}  # callback query id -> the press
        # Not LocalServer's _changed()/_change: this fake's waits also poll (every 50 ms), which
        # checks on state outside the fake rely on.
        self._activity = asyncio.Event()
        self.webhook_retry_s = WEBHOOK_RETRY_S
        self._posting: aiohttp.ClientSession | None = None  # posts to webhooks
        super().__init__()

    # -- server ---------------------------------------------------------------------------

    def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=60 * 1024 * 1024)  # uploads: voice notes, files
        app.router.add_route("*", "/bot{token}/{method}", self._method)
        app.router.add_get("/file/bot{token}/{path:.+}", self._file)
        return app

    async def _closing(self) -> None:
        for bot in self.bots.values():  # end long polls now
            if bot.poller is not None and not bot.poller.done():
                bot.poller.set_result(None)
            await self._stop_webhook(bot)
        if self._posting is not None:
            await self._posting.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- the world ------------------------------------------------------------------------

    def add_bot(self, token: str, *, username: str, first_name: str) -> FakeBot:
        bot = FakeBot(int(token.split(":", 1)[0]), first_name, username, is_bot=True, token=token)
        self.bots[token] = bot
        return bot

    def add_user(self, first_name: str, *, username: str | None = None, last_name: str | None = None) -> FakeUser:
        user = FakeUser(next(self._ids), first_name, username, last_name)
        self.users.append(user)
        return user

    def add_group(
        self,
        title: str,
        *,
        members: Iterable[FakeUser] = (),
        supergroup: bool = True,
        forum: bool = False,
        creator: FakeUser | None = None,
        admins: Iterable[FakeUser] = (),
    ) -> FakeChat:
        chat_id = -1001000000000 - next(self._ids) if supergroup else -next(self._ids)
        members = list(members)
        chat = FakeChat(
            chat_id,
            "supergroup" if supergroup else "group",
            title,
            members,
            forum,
            creator or next((m for m in members if not m.is_bot), None),
            list(admins),
        )
        self.chats[chat_id] = chat
        return chat

    def add_channel(self, title: str, *, members: Iterable[FakeUser] = (), username: str | None = None) -> FakeChat:
        """A channel; its ``members`` are its subscribers and (for bots) administrators who may post."""
        chat_id = -1002000000000 - next(self._ids)
        members = list(members)
        chat = FakeChat(chat_id, "channel", title, members, creator=next((m for m in members if not m.is_bot), None))
        chat.username = username
        self.chats[chat_id] = chat
        return chat

    def private(self, user: FakeUser, bot: FakeBot) -> FakeChat:
        chat = self.chats.get(user.id)
        if chat is None:
            chat = FakeChat(user.id, "private", members=[user, bot], private_with=user)
            self.chats[user.id] = chat
        return chat

    def add_topic(self, group: FakeChat, name: str) -> int:
        thread = self._next_message_id(group.id)
        group.topics[thread] = name
        creator = group.creator or group.members[0]
        self.messages[(group.id, thread)] = {
            "message_id": thread,
            "date": int(time.time()),
            "chat": group.payload(),
            "from": creator.payload(),
            "message_thread_id": thread,
            "forum_topic_created": {"name": name, "icon_color": 7322096},
        }
        return thread

    def _next_message_id(self, chat_id: int) -> int:
        return next(self._message_ids.setdefault(chat_id, itertools.count(1)))

    # -- acting as users ------------------------------------------------------------------

    async def user_says(
        self,
        user: FakeUser,
        chat: FakeChat,
        text: str = "",
        *,
        topic: int | None = None,
        reply_to: dict[str, Any] | None = None,
        entities: list[dict[str, Any]] | None = None,
        photo: tuple[Any, ...] | None = None,
        document: tuple[Any, ...] | None = None,
        voice: tuple[Any, ...] | None = None,
        audio: tuple[Any, ...] | None = None,
        video_note: tuple[bytes, int] | None = None,
        sticker: tuple[str | None, str] | None = None,
        file_size: int | None = None,
        file_size_in_message: bool = True,
        media_group_id: str | None = None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat.id),
            "date": int(time.time()),
            "chat": chat.payload(),
            "from": user.payload(),
        }
        if media_group_id is not None:
            message["media_group_id"] = media_group_id
        media = photo or document or voice or audio or video_note
        key = "caption" if media else "text"
        if text:
            message[key] = text
            found = entities if entities is not None else self._entities(text)
            if found:
                message["caption_entities" if media else "entities"] = found
        if topic is not None:
            message["message_thread_id"] = topic
            message["is_topic_message"] = True
            reply_to = reply_to or self.messages[(chat.id, topic)]
        if reply_to is not None:
            message["reply_to_message"] = reply_to
        if photo:
            file_id = self._store_file(*photo)
            message["photo"] = [
                {"file_id": file_id + "-small", "file_unique_id": "s" + file_id, "width": 90, "height": 90},
                {
                    "file_id": file_id,
                    "file_unique_id": "u" + file_id,
                    "width": 800,
                    "height": 600,
                    "file_size": len(photo[1]),
                },
            ]
        if voice and isinstance(voice[0], (bytes, bytearray)):
            voice = ("voice.oga", bytes(voice[0]), "audio/ogg", voice[1])
        for kind, item in (("document", document), ("voice", voice), ("audio", audio)):
            if item:
                file_id = self._store_file(*item[:3])
                entry = {
                    "file_id": file_id,
                    "file_unique_id": "u" + file_id,
                    "file_size": len(item[1]),
                    "mime_type": item[2] if len(item) > 2 else "application/octet-stream",
                }
                if kind == "document":
                    entry["file_name"] = item[0]
                else:
                    entry["duration"] = int(item[3]) if len(item) > 3 else 2
                    if kind == "audio":
                        entry["file_name"] = item[0]
                message[kind] = entry
        if video_note:
            file_id = self._store_file("video_note.mp4", video_note[0], "video/mp4")
            message["video_note"] = {
                "file_id": file_id,
                "file_unique_id": "u" + file_id,
                "length": 240,
                "duration": int(video_note[1]),
                "file_size": len(video_note[0]),
            }
        if sticker:
            emoji, form = sticker
            message["sticker"] = {
                "file_id": f"sticker-{next(self._ids)}",
                "file_unique_id": f"us-{next(self._ids)}",
                "type": "regular",
                "width": 512,
                "height": 512,
                "is_animated": form == "animated",
                "is_video": form == "video",
                "set_name": "FakeStickers",
                **({"emoji": emoji} if emoji else {}),
            }
        kind_sent = next((k for k in ("document", "voice", "audio", "video_note") if k in message), None)
        file: dict[str, Any] | None = (
            message[kind_sent] if kind_sent else message["photo"][-1] if "photo" in message else None
        )
        if file is not None:
            if file_size is not None:
                file["file_size"] = self.file_sizes[file["file_id"]] = file_size
            if not file_size_in_message:
                del file["file_size"]
        self.messages[(chat.id, message["message_id"])] = message
        self._deliver(chat, "message", message)
        return message

    async def user_presses(
        self,
        user: FakeUser,
        message: dict[str, Any],
        data: str,
        *,
        inaccessible: bool = False,
        inline: bool = False,
    ) -> str:
        """``user`` presses the button carrying ``data`` under ``message`` (one a bot sent): a
        ``callback_query`` update for that bot only. ``inaccessible``: the message is too old for
        the bot to read (an InaccessibleMessage: its chat and id, date 0); ``inline``: a message
        sent in inline mode (an ``inline_message_id``, no message at all). Returns the query's id."""
        bot = next(b for b in self.bots.values() if b.id == message["from"]["id"])
        chat = self.chats[message["chat"]["id"]]
        query_id = str(next(self._ids) * 7919)
        query: dict[str, Any] = {
            "id": query_id,
            "from": user.payload(),
            "chat_instance": f"ci{chat.id}",
            "data": data,
        }
        if inline:
            query["inline_message_id"] = f"inline-{message['message_id']}"
        elif inaccessible:
            query["message"] = {"chat": chat.payload(), "message_id": message["message_id"], "date": 0}
        else:
            query["message"] = self.messages[(chat.id, message["message_id"])]
        update_id = next(self._update_ids)
        self.presses[query_id] = _Press(bot, update_id, time.monotonic())
        update = {"update_id": update_id, "callback_query": query}
        if bot.allowed_updates is None or "callback_query" in bot.allowed_updates:
            bot.updates.append(update)
            bot.delivered.append(update)
        self._activity.set()
        return query_id

    async def user_taps(self, user: FakeUser, chat: FakeChat, answer: str) -> dict[str, Any]:
        """``user`` taps ``answer`` on the reply keyboard a bot shows in ``chat``: its text sent as
        their own message (a one-time keyboard hides then). Raises ValueError when no keyboard
        shown there offers it."""
        rows = (chat.keyboard or {}).get("keyboard") or []
        offered = [b if isinstance(b, str) else b.get("text") for row in rows for b in row]
        if answer not in offered:
            raise ValueError(f"no reply keyboard in chat {chat.id} offers {answer!r} (it offers {offered})")
        if (chat.keyboard or {}).get("one_time_keyboard"):
            chat.keyboard = None
        return await self.user_says(user, chat, answer)

    def answered(self, query_id: str) -> list[tuple[str, float, str | None]]:
        """The answerCallbackQuery calls Telegram took for the query (at most one)."""
        press = self.presses[query_id]
        return [a for a in press.bot.answers if a[0] == query_id]

    def ack_delay(self, query_id: str) -> float:
        """Seconds from a poll handing over the press to the bot's answerCallbackQuery arriving."""
        press = self.presses[query_id]
        ((_, at, _),) = self.answered(query_id)
        assert press.delivered_at is not None
        return at - press.delivered_at

    async def user_sends_album(
        self,
        user: FakeUser,
        chat: FakeChat,
        items: Iterable[tuple[str, tuple[Any, ...]]],
        caption: str = "",
        *,
        topic: int | None = None,
    ) -> list[dict[str, Any]]:
        """An album: one message (one update) per item — ``("photo", (name, bytes))`` or
        ``("document", (name, bytes[, mime]))`` — sharing a new ``media_group_id``, the
        ``caption`` on the first, as Telegram delivers them."""
        group = str(next(self._ids) * 7919)
        sent = []
        for index, (kind, item) in enumerate(items):
            files: dict[str, Any] = {kind: item}
            sent.append(
                await self.user_says(
                    user, chat, caption if index == 0 else "", topic=topic, media_group_id=group, **files
                )
            )
        return sent

    async def user_edits(self, message: dict[str, Any], text: str) -> dict[str, Any]:
        """The user edits ``message``: its text, or a file's caption."""
        words, marks = (
            ("caption", "caption_entities") if "text" not in message and "caption" in message else ("text", "entities")
        )
        edited = {**message, words: text, "edit_date": int(time.time())}
        edited.pop(marks, None)
        if self._entities(text):
            edited[marks] = self._entities(text)
        self.messages[(message["chat"]["id"], message["message_id"])] = edited
        self._deliver(self.chats[message["chat"]["id"]], "edited_message", edited)
        return edited

    async def user_reacts(self, user: FakeUser, message: dict[str, Any], emoji: str) -> None:
        chat = self.chats[message["chat"]["id"]]
        self._deliver(
            chat,
            "message_reaction",
            {
                "chat": chat.payload(),
                "message_id": message["message_id"],
                "user": user.payload(),
                "date": int(time.time()),
                "old_reaction": [],
                "new_reaction": [{"type": "emoji", "emoji": emoji}],
            },
        )

    async def member_joins(self, chat: FakeChat, user: FakeUser) -> dict[str, Any]:
        chat.members.append(user)
        message = {
            "message_id": self._next_message_id(chat.id),
            "date": int(time.time()),
            "chat": chat.payload(),
            "from": user.payload(),
            "new_chat_members": [user.payload()],
        }
        self._deliver(chat, "message", message)
        return message

    async def group_renamed(self, chat: FakeChat, title: str, *, by: FakeUser) -> dict[str, Any]:
        """``by`` renames the group: its title, and the ``new_chat_title`` service message."""
        chat.title = title
        message = {
            "message_id": self._next_message_id(chat.id),
            "date": int(time.time()),
            "chat": chat.payload(),
            "from": by.payload(),
            "new_chat_title": title,
        }
        self._deliver(chat, "message", message)
        return message

    async def member_status_changes(
        self,
        chat: FakeChat,
        user: FakeUser | FakeBot,
        old: str,
        new: str,
        *,
        by: FakeUser | None = None,
        kind: str = "chat_member",
    ) -> None:
        """A ``chat_member`` update (or, with ``kind="my_chat_member"``, the bot's own, for that
        bot alone): ``user``'s status in ``chat`` went from ``old`` to ``new`` (``member``,
        ``left``, ``kicked``; other statuses need fields this does not send), changed by ``by``
        (themselves if not given)."""
        now = int(time.time())
        change = {
            "chat": chat.payload(),
            "from": (by or user).payload(),
            "date": now,
            "old_chat_member": _chat_member(old, user),
            "new_chat_member": _chat_member(new, user),
        }
        if kind != "my_chat_member":
            self._deliver(chat, kind, change)
        elif isinstance(user, FakeBot) and (user.allowed_updates is None or kind in user.allowed_updates):
            self._queue(user, kind, change)

    async def channel_posts(self, channel: FakeChat, text: str) -> dict[str, Any]:
        """The channel posts ``text`` (signed by the channel: ``sender_chat``, no ``from``): a
        ``channel_post`` update for the bots among its members."""
        post: dict[str, Any] = {
            "message_id": self._next_message_id(channel.id),
            "date": int(time.time()),
            "chat": channel.payload(),
            "sender_chat": channel.payload(),
            "text": text,
        }
        if self._entities(text):
            post["entities"] = self._entities(text)
        self.messages[(channel.id, post["message_id"])] = post
        self._deliver(channel, "channel_post", post)
        return post

    async def bot_removed(self, chat: FakeChat, bot: FakeBot, *, by: FakeUser, status: str = "kicked") -> None:
        """An admin ``by`` removes (``kicked``: bans; ``left``: just removes) ``bot`` from ``chat``:
        its ``my_chat_member`` update, then it is no longer a member (nothing more reaches it)."""
        await self.member_status_changes(chat, bot, "member", status, by=by, kind="my_chat_member")
        chat.members = [m for m in chat.members if m is not bot]

    async def bot_added(
        self, chat: FakeChat, bot: FakeBot, *, by: FakeUser, old: str = "left", announce: bool = False
    ) -> None:
        """``by`` adds ``bot`` to ``chat`` (back from ``old``): a member again, and its ``my_chat_member``
        update; ``announce``: then, as Telegram does in a group, the service message saying so
        (``new_chat_members``, from ``by``), for every bot there, the added one too."""
        if not any(m is bot for m in chat.members):
            chat.members.append(bot)
        await self.member_status_changes(chat, bot, old, "member", by=by, kind="my_chat_member")
        if announce:
            message: dict[str, Any] = {
                "message_id": self._next_message_id(chat.id),
                "date": int(time.time()),
                "chat": chat.payload(),
                "from": by.payload(),
                "new_chat_members": [bot.payload()],
            }
            self.messages[(chat.id, message["message_id"])] = message
            self._deliver(chat, "message", message)

    def _entities(self, text: str) -> list[dict[str, Any]]:
        import re

        found = []
        for match in re.finditer(r"(?<![\w@])(@\w{5,32})|(?<![\w/])(/\w+(?:@\w+)?)", text):
            kind = "mention" if match.group(1) else "bot_command"
            found.append(
                {"type": kind, "offset": _utf16_len(text[: match.start()]), "length": _utf16_len(match.group(0))}
            )
        return found

    def _store_file(self, name: str, data: bytes, mime: str | None = None) -> str:
        file_id = f"file-{next(self._ids)}"
        self.files[file_id] = (name, data, mime or "application/octet-stream")
        return file_id

    def _deliver(self, chat: FakeChat, kind: str, payload: dict[str, Any]) -> None:
        for bot in self.bots.values():
            if not any(m is bot for m in chat.members):
                continue
            if bot.allowed_updates is not None and kind not in bot.allowed_updates:
                continue
            sender = payload.get("from") or payload.get("user") or {}
            if sender.get("id") == bot.id:
                continue
            self._queue(bot, kind, payload)
        self._activity.set()

    def _queue(self, bot: FakeBot, kind: str, payload: dict[str, Any]) -> None:
        update = {"update_id": next(self._update_ids), kind: payload}
        bot.updates.append(update)
        bot.delivered.append(update)
        self._activity.set()

    def redeliver(self, bot: FakeBot, update_id: int) -> None:
        """Send ``bot`` an update again, as Telegram does when it never got the confirmation (the
        next getUpdates with a higher offset) — a poll that failed, a process that died."""
        update = next(u for u in bot.delivered if u["update_id"] == update_id)
        if update not in bot.updates:
            bot.updates.append(update)
            bot.updates.sort(key=lambda u: u["update_id"])
        self._activity.set()

    # -- failures, waiting ----------------------------------------------------------------

    def revoke(self, bot: FakeBot) -> None:
        """The bot's token is revoked (@BotFather → Revoke): every call answers 401 until :meth:`restore`."""
        bot.revoked = True
        self._activity.set()  # an open long poll answers 401 now

    def restore(self, bot: FakeBot) -> None:
        """The bot's token works again."""
        bot.revoked = False
        self._activity.set()

    def _refuse(self, bot: FakeBot) -> web.Response:
        bot.refused += 1
        self._activity.set()
        return self._error(401, "Unauthorized")

    def fail_next(
        self,
        method: str,
        *,
        status: int = 429,
        retry_after: float | None = 1,
        description: str | None = None,
        bot: FakeBot | None = None,
        times: int = 1,
        after: int = 0,
    ) -> None:
        self._failures.append(_Failure(method, status, retry_after, description, bot, times, after))

    async def wait_for(self, check: Callable[[], T], timeout: float = 30.0, description: str = "condition") -> T:
        deadline = asyncio.get_running_loop().time() + timeout
        while not (result := check()):
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise TimeoutError(f"timed out waiting for {description}")
            self._activity.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._activity.wait(), min(remaining, 0.05))
        return result

    async def wait_for_sent(
        self, bot: FakeBot, count: int = 1, timeout: float = 30.0, *, chat: FakeChat | None = None
    ) -> list[dict[str, Any]]:
        def sent() -> list[dict[str, Any]]:
            found = [m for m in bot.sent if chat is None or m["chat_id"] == chat.id]
            return found if len(found) >= count else []

        try:
            return await self.wait_for(sent, timeout, f"{count} message(s) from {bot.username}")
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; sent so far: {bot.sent!r}") from None

    async def wait_polling(self, bot: FakeBot, timeout: float = 30.0) -> None:
        await self.wait_for(
            lambda: bot.poller is not None and not bot.poller.done(), timeout, f"{bot.username} polling"
        )

    # -- the API --------------------------------------------------------------------------

    @staticmethod
    def _ok(result: Any) -> web.Response:
        return web.json_response({"ok": True, "result": result})

    @staticmethod
    def _error(status: int, description: str, **parameters: Any) -> web.Response:
        body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
        if parameters:
            body["parameters"] = parameters
        return web.json_response(body, status=status)

    async def _params(self, request: web.Request) -> dict[str, Any]:
        if request.content_type == "application/json":
            return dict(await request.json())
        form = await request.post()
        params: dict[str, Any] = {}
        for key, value in form.items():
            if isinstance(value, str) and key not in ("text", "caption", "parse_mode", "file_id", "action", "emoji"):
                with contextlib.suppress(ValueError):
                    value = json.loads(value)
            params[key] = value
        return params

    async def _method(self, request: web.Request) -> web.StreamResponse:
        bot = self.bots.get(request.match_info["token"])
        method = request.match_info["method"]
        if bot is None:
            return self._error(401, "Unauthorized")
        if bot.revoked:
            return self._refuse(bot)
        params = await self._params(request)
        bot.requests.append((method, params))
        self._activity.set()
        for failure in self._failures:
            if failure.method.lower() == method.lower() and failure.bot in (None, bot) and failure.times > 0:
                if failure.after > 0:
                    failure.after -= 1
                    continue
                failure.times -= 1
                if failure.status == 429:
                    return self._error(
                        429,
                        failure.description or f"Too Many Requests: retry after {failure.retry_after}",
                        retry_after=failure.retry_after,
                    )
                return self._error(failure.status, failure.description or "Internal Server Error")
        handler = getattr(self, f"_api_{method.lower()}", None)
        if handler is None:
            self.unknown.append(method)
            return self._error(404, "Not Found")
        return await handler(bot, params)

    async def _api_getme(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        return self._ok(
            {
                **bot.payload(),
                "can_join_groups": True,
                "can_read_all_group_messages": True,
                "supports_inline_queries": False,
            }
        )

    async def _api_deletewebhook(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        bot.webhook_deletions += 1
        await self._stop_webhook(bot)
        if params.get("drop_pending_updates"):
            bot.updates.clear()
        return self._ok(True)

    async def _api_setwebhook(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        url = str(params.get("url") or "")
        if not url:  # Telegram: an empty URL removes the webhook
            return await self._api_deletewebhook(bot, params)
        if not url.startswith(("http://", "https://")):
            return self._error(400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook")
        secret = params.get("secret_token")
        if secret is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", str(secret)):
            return self._error(400, "Bad Request: secret token contains unallowed characters")
        await self._stop_webhook(bot)
        if params.get("drop_pending_updates"):
            bot.updates.clear()
        bot.allowed_updates = params.get("allowed_updates") or bot.allowed_updates
        bot.webhook = Webhook(url, secret, int(params.get("max_connections") or 40))
        bot.webhook.task = asyncio.create_task(self._post_updates(bot, bot.webhook))
        self._activity.set()
        return self._ok(True)

    async def _api_getwebhookinfo(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        hook = bot.webhook
        info: dict[str, Any] = {"url": hook.url if hook else "", "has_custom_certificate": False}
        info["pending_update_count"] = len(bot.updates)
        if hook is not None:
            info["max_connections"] = hook.max_connections
            if hook.last_error_date is not None:
                info["last_error_date"] = hook.last_error_date
                info["last_error_message"] = hook.last_error_message
        return self._ok(info)

    async def _stop_webhook(self, bot: FakeBot) -> None:
        hook, bot.webhook = bot.webhook, None
        if hook is not None and hook.task is not None:
            hook.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await hook.task

    async def _post_updates(self, bot: FakeBot, hook: Webhook) -> None:
        """Post each pending update to the webhook, up to ``max_connections`` at once, until one
        is answered 200 (then it is confirmed); a failure is retried after ``webhook_retry_s``."""
        self._posting = self._posting or aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
        posts: set[asyncio.Task[None]] = set()
        try:
            # Not only cancelled: Python 3.11's wait_for can swallow a cancellation that meets a
            # wake-up, and this loop is woken all the time.
            while bot.webhook is hook:
                waiting = [u for u in bot.updates if u["update_id"] not in hook.sending]
                for update in waiting[: max(0, hook.max_connections - len(hook.sending))]:
                    hook.sending.add(update["update_id"])
                    post = asyncio.create_task(self._post_update(bot, hook, update))
                    posts.add(post)
                    post.add_done_callback(posts.discard)
                self._activity.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._activity.wait(), 0.05)
        finally:
            for post in list(posts):
                post.cancel()

    async def _post_update(self, bot: FakeBot, hook: Webhook, update: dict[str, Any]) -> None:
        assert self._posting is not None
        headers = {"X-Telegram-Bot-Api-Secret-Token": hook.secret} if hook.secret else {}
        status, error = 0, ""
        try:
            async with self._posting.post(hook.url, json=update, headers=headers) as response:
                status = response.status
                error = f"Wrong response from the webhook: {response.status} {response.reason}"
        except (aiohttp.ClientError, TimeoutError) as exc:
            error = f"Connection refused ({exc.__class__.__name__})"
        bot.webhook_posts.append((update["update_id"], status))
        if status == 200:
            with contextlib.suppress(ValueError):
                bot.updates.remove(update)
            self._mark_delivered([update])
        else:
            hook.last_error_date, hook.last_error_message = int(time.time()), error
            await asyncio.sleep(self.webhook_retry_s)
        hook.sending.discard(update["update_id"])
        self._activity.set()

    def _mark_delivered(self, updates: list[dict[str, Any]]) -> None:
        now = time.monotonic()
        for update in updates:
            press = self.presses.get(str((update.get("callback_query") or {}).get("id")))
            if press is not None and press.delivered_at is None:
                press.delivered_at = now

    async def _api_getupdates(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        if bot.webhook is not None:
            return self._error(
                409,
                "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
            )
        if bot.poller is not None and not bot.poller.done():
            bot.poller.set_exception(_Conflict())  # Telegram ends the older poll
        bot.polls += 1
        bot.allowed_updates = params.get("allowed_updates") or bot.allowed_updates
        offset = int(params.get("offset") or 0)
        bot.updates = [u for u in bot.updates if u["update_id"] >= offset]
        poller: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        bot.poller = poller
        self._activity.set()
        deadline = asyncio.get_running_loop().time() + float(params.get("timeout") or 0)
        try:
            while not bot.updates:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0 or poller.done() or bot.revoked:
                    break
                self._activity.clear()
                woken: list[asyncio.Future[Any]] = [asyncio.ensure_future(self._activity.wait()), poller]
                await asyncio.wait(woken, timeout=min(remaining, 0.05), return_when=asyncio.FIRST_COMPLETED)
            if bot.revoked:
                return self._refuse(bot)
            if poller.done() and poller.exception() is not None:
                return self._error(
                    409,
                    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
                )
        finally:
            if not poller.done():
                poller.set_result(None)
        limit = int(params.get("limit") or 100)
        handed = bot.updates[:limit]
        self._mark_delivered(handed)
        return self._ok(handed)

    async def _api_sendmessage(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        chat = self.chats.get(int(params["chat_id"]))
        if chat is None:
            return self._error(400, "Bad Request: chat not found")
        raw = str(params.get("text") or "")
        parse_mode = params.get("parse_mode")
        shown = raw
        if parse_mode == "MarkdownV2":
            try:
                shown = markdown_v2_plain(raw)
            except ValueError as exc:
                return self._error(400, f"Bad Request: can't parse entities: {exc}")
        if not shown.strip():
            return self._error(400, "Bad Request: message text is empty")
        if _utf16_len(shown) > MAX_TEXT:
            return self._error(400, "Bad Request: message is too long")
        if params.get("reply_markup") is not None and (problem := _markup_problem(params["reply_markup"])):
            return self._error(400, problem)
        reply = params.get("reply_parameters") or {}
        reply_to = reply.get("message_id") if isinstance(reply, dict) else None
        reply_to = reply_to or params.get("reply_to_message_id")
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat.id),
            "date": int(time.time()),
            "chat": chat.payload(),
            "from": bot.payload(),
            "text": shown,
        }
        thread = params.get("message_thread_id")
        if thread is not None:
            message["message_thread_id"] = int(thread)
            message["is_topic_message"] = chat.forum
        if reply_to is not None and (chat.id, int(reply_to)) in self.messages:
            message["reply_to_message"] = self.messages[(chat.id, int(reply_to))]
        markup = params.get("reply_markup")
        self._show_markup(chat, message, markup)
        self.messages[(chat.id, message["message_id"])] = message
        bot.sent.append(
            {
                "kind": "text",
                "chat_id": chat.id,
                "text": shown,
                "raw": raw,
                "parse_mode": parse_mode,
                "reply_to": reply_to,
                "thread_id": thread,
                "reply_markup": markup,
                "message": message,
            }
        )
        self._activity.set()
        return self._ok(message)

    @staticmethod
    def _show_markup(chat: FakeChat, message: dict[str, Any], markup: Any) -> None:
        """An inline keyboard goes on the message (Telegram returns it with the message); a reply
        keyboard replaces the phone's keyboard in the chat, its removal takes it away (neither is
        part of the message Telegram returns)."""
        if markup is None or "force_reply" in markup:  # a ForceReply opens a reply in the app: nothing stays
            return
        if _inline(markup):
            message["reply_markup"] = markup
        elif "keyboard" in markup:
            chat.keyboard = markup
        else:
            chat.keyboard = None

    async def _api_editmessagetext(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        return self._edit(bot, params, "text")

    async def _api_editmessagecaption(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        return self._edit(bot, params, "caption")

    async def _api_editmessagereplymarkup(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        return self._edit(bot, params, "markup")

    def _edit(self, bot: FakeBot, params: dict[str, Any], kind: str) -> web.Response:
        """editMessageText / editMessageCaption / editMessageReplyMarkup as Telegram answers them:
        only a bot's own message, an inline keyboard only (none given: the keyboard goes), and
        an edit that changes nothing is 400 "message is not modified". Recorded in ``edits``."""
        if params.get("inline_message_id") is not None:
            return self._error(400, "Bad Request: troupe's fake keeps no inline-mode messages")
        message = self.messages.get((int(params.get("chat_id") or 0), int(params.get("message_id") or 0)))
        if message is None:
            return self._error(400, "Bad Request: message to edit not found")
        if message["from"]["id"] != bot.id:
            return self._error(400, "Bad Request: message can't be edited")
        markup = params.get("reply_markup")
        if markup is not None and not _inline(markup):
            return self._error(400, "Bad Request: inline keyboard expected")
        if markup is not None and (problem := _keyboard_problem(markup)):
            return self._error(400, problem)
        field_name = {"text": "text", "caption": "caption"}.get(kind)
        shown: str | None = None
        if field_name is not None:
            if field_name not in message:
                return self._error(400, f"Bad Request: there is no {field_name} in the message to edit")
            raw, parse_mode = str(params.get(field_name) or ""), params.get("parse_mode")
            try:
                shown = markdown_v2_plain(raw) if parse_mode == "MarkdownV2" else raw
            except ValueError as exc:
                return self._error(400, f"Bad Request: can't parse entities: {exc}")
            if not shown.strip() and field_name == "text":
                return self._error(400, "Bad Request: message text is empty")
            if _utf16_len(shown) > (MAX_TEXT if field_name == "text" else MAX_CAPTION):
                return self._error(400, f"Bad Request: message {'' if field_name == 'text' else 'caption '}is too long")
        if (shown is None or shown == message.get(field_name or "")) and markup == message.get("reply_markup"):
            return self._error(
                400,
                "Bad Request: message is not modified: specified new message content and reply markup are exactly "
                "the same as a current content and reply markup of the message",
            )
        if shown is not None and field_name is not None:
            message[field_name] = shown
            entities = params.get("entities" if field_name == "text" else "caption_entities")
            message[f"{'entities' if field_name == 'text' else 'caption_entities'}"] = entities or []
        if markup is None:
            message.pop("reply_markup", None)
        else:
            message["reply_markup"] = markup
        message["edit_date"] = int(time.time())
        bot.edits.append(
            {
                "kind": kind,
                "chat_id": message["chat"]["id"],
                "message_id": message["message_id"],
                "text": shown,
                "reply_markup": markup,
                "message": message,
            }
        )
        self._activity.set()
        return self._ok(message)

    async def _api_sendvoice(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        return await self._send_media(bot, params, "voice")

    async def _api_sendphoto(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        return await self._send_media(bot, params, "photo")

    async def _api_senddocument(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        return await self._send_media(bot, params, "document")

    def _check_media(self, kind: str, data: bytes) -> web.Response | None:
        """Telegram's refusal of an upload of ``kind``, or None when it takes it."""
        if kind == "voice" and (not data.startswith(b"OggS") or b"OpusHead" not in data[:4096]):
            return self._error(400, "Bad Request: wrong file type: a voice note must be an .OGG file encoded with OPUS")
        if kind == "photo" and len(data) > MAX_PHOTO:
            return self._error(400, "Bad Request: PHOTO_INVALID_DIMENSIONS")
        if kind == "photo" and not data.startswith(_PICTURE_MAGIC):
            return self._error(400, "Bad Request: IMAGE_PROCESS_FAILED")
        if len(data) > MAX_UPLOAD:
            return self._error(413, "Request Entity Too Large")
        return None

    def _caption(self, raw: str, parse_mode: Any) -> str | web.Response:
        """What a caption shows, or Telegram's refusal of it."""
        caption = raw
        if parse_mode == "MarkdownV2" and raw:
            try:
                caption = markdown_v2_plain(raw)
            except ValueError as exc:
                return self._error(400, f"Bad Request: can't parse entities: {exc}")
        if _utf16_len(caption) > MAX_CAPTION:
            return self._error(400, "Bad Request: message caption is too long")
        return caption

    def _upload(self, upload: Any, kind: str) -> tuple[bytes, str | None, str | None] | web.Response:
        """An uploaded file (or a stored file's id): its bytes, name and type; or the refusal."""
        if isinstance(upload, web.FileField):
            return upload.file.read(), upload.filename, upload.content_type
        if isinstance(upload, str) and upload in self.files:
            filename, data, mime = self.files[upload]
            return data, filename, mime
        if upload is None:
            return self._error(400, f"Bad Request: there is no {kind} in the request")
        return self._error(400, "Bad Request: wrong file identifier/HTTP URL specified")

    async def _send_media(self, bot: FakeBot, params: dict[str, Any], kind: str) -> web.Response:
        """sendVoice, sendPhoto, sendDocument: a multipart upload (or a stored file's id) with a caption."""
        chat = self.chats.get(int(params["chat_id"]))
        if chat is None:
            return self._error(400, "Bad Request: chat not found")
        upload = self._upload(params.get(kind), kind)
        if isinstance(upload, web.Response):
            return upload
        data, filename, mime = upload
        refused = self._check_media(kind, data)
        if refused is not None:
            return refused
        raw = str(params.get("caption") or "")
        parse_mode = params.get("parse_mode")
        caption = self._caption(raw, parse_mode)
        if isinstance(caption, web.Response):
            return caption
        markup = params.get("reply_markup")
        if markup is not None and (problem := _markup_problem(markup)):
            return self._error(400, problem)
        reply = params.get("reply_parameters") or {}
        reply_to = reply.get("message_id") if isinstance(reply, dict) else None
        reply_to = reply_to or params.get("reply_to_message_id")
        sent = _Posted(
            kind, data, filename, mime, caption, raw, parse_mode, reply_to, params.get("message_thread_id"), markup
        )
        return self._ok(self._bot_posts(bot, chat, sent, duration=int(params.get("duration") or 0)))

    def _bot_posts(
        self, bot: FakeBot, chat: FakeChat, sent: _Posted, *, duration: int = 0, album: str | None = None
    ) -> dict[str, Any]:
        """The message a bot's upload makes, stored and recorded in ``bot.sent``."""
        kind, data, filename, mime = sent.kind, sent.data, sent.filename, sent.mime
        if kind == "voice":
            mime = "audio/ogg"
        elif kind == "photo":
            mime = "image/jpeg"  # Telegram re-encodes photos
        file_id = self._store_file("voice.oga" if kind == "voice" else filename or kind, data, mime)
        described = {"file_id": file_id, "file_unique_id": "u" + file_id, "file_size": len(data)}
        media: Any
        if kind == "voice":
            media = {**described, "duration": duration, "mime_type": "audio/ogg"}
        elif kind == "photo":
            media = [{**described, "width": 1, "height": 1}]
        else:
            media = {**described, "file_name": filename or "document", "mime_type": mime or "application/octet-stream"}
        message: dict[str, Any] = {
            "message_id": self._next_message_id(chat.id),
            "date": int(time.time()),
            "chat": chat.payload(),
            "from": bot.payload(),
            kind: media,
        }
        if album is not None:
            message["media_group_id"] = album
        if sent.caption:
            message["caption"] = sent.caption
        thread, reply_to, markup = sent.thread, sent.reply_to, sent.markup
        if thread is not None:
            message["message_thread_id"] = int(thread)
            message["is_topic_message"] = chat.forum
        if reply_to is not None and (chat.id, int(reply_to)) in self.messages:
            message["reply_to_message"] = self.messages[(chat.id, int(reply_to))]
        self._show_markup(chat, message, markup)
        self.messages[(chat.id, message["message_id"])] = message
        record: dict[str, Any] = {
            "reply_markup": markup,
            "kind": kind,
            "chat_id": chat.id,
            "text": sent.caption,
            "raw": sent.raw,
            "parse_mode": sent.parse_mode,
            "reply_to": reply_to,
            "thread_id": thread,
            "message": message,
            kind: data,
            "filename": filename,
            "size": len(data),
        }
        if kind == "voice":
            record["duration"] = duration
        if album is not None:
            record["album"] = album
        bot.sent.append(record)
        self._activity.set()
        return message

    async def _api_sendmediagroup(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        """An album: 2 to 10 photos (``attach://`` uploads or stored file ids), each with its own
        caption; each becomes a message sharing one ``media_group_id`` (recorded with ``album``)."""
        chat = self.chats.get(int(params["chat_id"]))
        if chat is None:
            return self._error(400, "Bad Request: chat not found")
        media = params.get("media")
        if not isinstance(media, list) or not 2 <= len(media) <= MAX_ALBUM:
            return self._error(400, "Bad Request: wrong number of media in the group: must be 2 to 10")
        reply = params.get("reply_parameters") or {}
        reply_to = reply.get("message_id") if isinstance(reply, dict) else None
        items: list[_Posted] = []
        for item in media:
            if item.get("type") != "photo":
                return self._error(400, "Bad Request: only photos are sent as albums by this fake")
            ref = str(item.get("media") or "")
            upload = self._upload(
                params.get(ref.removeprefix("attach://")) if ref.startswith("attach://") else ref, "photo"
            )
            if isinstance(upload, web.Response):
                return upload
            data, filename, mime = upload
            refused = self._check_media("photo", data)
            if refused is not None:
                return refused
            raw, parse_mode = str(item.get("caption") or ""), item.get("parse_mode")
            caption = self._caption(raw, parse_mode)
            if isinstance(caption, web.Response):
                return caption
            items.append(
                _Posted(
                    "photo", data, filename, mime, caption, raw, parse_mode, reply_to, params.get("message_thread_id")
                )
            )
        album = str(next(self._ids) * 104729)
        return self._ok([self._bot_posts(bot, chat, item, album=album) for item in items])

    async def _api_setmessagereaction(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        chat = self.chats.get(int(params["chat_id"]))
        if chat is None:
            return self._error(400, "Bad Request: chat not found")
        message_id = int(params["message_id"])
        if (chat.id, message_id) not in self.messages:
            return self._error(400, "Bad Request: message to react not found")
        reaction = params.get("reaction") or []
        if not isinstance(reaction, list) or any(not isinstance(r, dict) for r in reaction):
            return self._error(400, "Bad Request: can't parse reaction types")
        if len(reaction) > 1:  # bots, like people without Premium, set one
            return self._error(400, "Bad Request: REACTIONS_TOO_MANY")
        emoji = [str(r.get("emoji")) for r in reaction if r.get("type") == "emoji"]
        if len(emoji) != len(reaction) or any(e not in _REACTION_EMOJI for e in emoji):
            return self._error(400, "Bad Request: REACTION_INVALID")
        bot.reactions.append({"chat_id": chat.id, "message_id": message_id, "emoji": emoji})
        self._activity.set()
        return self._ok(True)

    async def _api_sendchataction(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        bot.actions.append((int(params["chat_id"]), str(params.get("action"))))
        self._activity.set()
        return self._ok(True)

    async def _api_getfile(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        file_id = str(params["file_id"])
        if file_id not in self.files:
            return self._error(400, "Bad Request: invalid file_id")
        name, data, _ = self.files[file_id]
        size = self.file_sizes.get(file_id, len(data))
        if self.max_download is not None and size > self.max_download:
            return self._error(400, "Bad Request: file is too big")
        return self._ok(
            {
                "file_id": file_id,
                "file_unique_id": "u" + file_id,
                "file_size": size,
                "file_path": f"documents/{file_id}/{name}",
            }
        )

    async def _file(self, request: web.Request) -> web.StreamResponse:
        bot = self.bots.get(request.match_info["token"])
        if bot is None:
            return web.Response(status=401)
        path = request.match_info["path"]
        bot.downloads.append(path)
        self._activity.set()
        for file_id, (name, data, mime) in self.files.items():
            if path == f"documents/{file_id}/{name}":
                return web.Response(body=data, content_type=mime)
        return web.Response(status=404)

    async def _api_getchatadministrators(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        chat = self.chats[int(params["chat_id"])]
        members = []
        if chat.creator is not None:
            members.append({"status": "creator", "user": chat.creator.payload(), "is_anonymous": False})
        for admin in chat.admins:
            members.append(
                {
                    "status": "administrator",
                    "user": admin.payload(),
                    "can_be_edited": False,
                    "is_anonymous": False,
                    "can_manage_chat": True,
                    "can_delete_messages": True,
                    "can_manage_video_chats": True,
                    "can_restrict_members": True,
                    "can_promote_members": False,
                    "can_change_info": True,
                    "can_invite_users": True,
                    "can_post_stories": False,
                    "can_edit_stories": False,
                    "can_delete_stories": False,
                }
            )
        return self._ok(members)

    async def _api_getchatmember(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        chat = self.chats.get(int(params["chat_id"]))
        user_id = int(params["user_id"])
        member = next((m for m in chat.members if m.id == user_id), None) if chat else None
        status = "member" if member is not None else "left"
        user = member.payload() if member is not None else {"id": user_id, "is_bot": False, "first_name": "?"}
        return self._ok({"status": status, "user": user})

    async def _api_leavechat(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        """The bot leaves a group or channel: no longer a member, its own ``my_chat_member``
        (member → left, by itself), and in a group the service message for the bots still there."""
        chat = self.chats.get(int(params["chat_id"]))
        if chat is None:
            return self._error(400, "Bad Request: chat not found")
        if chat.type == "private":
            return self._error(400, "Bad Request: chat member status can't be changed in private chats")
        if not any(m is bot for m in chat.members):
            return self._error(403, f"Forbidden: bot is not a member of the {chat.type} chat")
        chat.members = [m for m in chat.members if m is not bot]
        bot.left.append(chat.id)
        now = int(time.time())
        change = {
            "chat": chat.payload(),
            "from": bot.payload(),
            "date": now,
            "old_chat_member": _chat_member("member", bot),
            "new_chat_member": _chat_member("left", bot),
        }
        if bot.allowed_updates is None or "my_chat_member" in bot.allowed_updates:
            self._queue(bot, "my_chat_member", change)
        if chat.type != "channel":
            message: dict[str, Any] = {
                "message_id": self._next_message_id(chat.id),
                "date": now,
                "chat": chat.payload(),
                "from": bot.payload(),
                "left_chat_member": bot.payload(),
            }
            self.messages[(chat.id, message["message_id"])] = message
            self._deliver(chat, "message", message)
        return self._ok(True)

    async def _api_answercallbackquery(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        query_id = str(params.get("callback_query_id") or "")
        press = self.presses.get(query_id)
        if press is None or press.bot is not bot or press.answered:
            return self._error(400, _TOO_OLD)
        if time.monotonic() - press.queued_at > self.callback_expiry:
            return self._error(400, _TOO_OLD)
        press.answered = True
        text = params.get("text")
        bot.answers.append((query_id, time.monotonic(), None if text is None else str(text)))
        self._activity.set()
        return self._ok(True)

    async def _api_setmycommands(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        commands = params.get("commands")
        if not isinstance(commands, list) or len(commands) > 100:
            return self._error(400, "Bad Request: commands must be a list of at most 100")
        for command in commands:
            name, description = str(command.get("command") or ""), str(command.get("description") or "")
            if not re.fullmatch(r"[a-z0-9_]{1,32}", name) or not 1 <= len(description) <= 256:
                return self._error(400, "Bad Request: BOT_COMMAND_INVALID")
        bot.commands = commands
        self._activity.set()
        return self._ok(True)

    async def _api_deletemycommands(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        bot.commands = None
        return self._ok(True)

    async def _api_close(self, bot: FakeBot, params: dict[str, Any]) -> web.Response:
        return self._ok(True)


class _Conflict(Exception):
    pass
