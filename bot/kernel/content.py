"""Typed payloads: what a memory says (:class:`Content`), what is known about it
(:class:`MemoryMetadata`) and the files it carried (:class:`Attachment`). What an action sends
in answer is a :class:`~bot.kernel.outgoing.Reply`.

The store keeps content and metadata as JSON objects whose keys are camelCase, as elizaOS
writes them; ``to_json``/``from_json`` here are the one place that maps those keys to fields.
Only keys troupe reads or writes have a field. Every other key (from elizaOS-style plugins,
character files, older rows) is kept in ``extra`` and written back unchanged; so is a known key
whose stored value is not of its field's type (an explicit ``null``, a number where text is
expected), so that reading a row and writing it back never changes what it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final, Protocol

from bot.kernel.buttons import Button, Press
from bot.kernel.frozen_map import NOTHING, FrozenMap

__all__ = ["Attachment", "ChannelType", "Content", "MemoryMetadata", "MemoryType"]


class ChannelType(StrEnum):
    """What kind of room a room is. Values equal names, as upstream."""

    SELF = "SELF"
    DM = "DM"
    GROUP = "GROUP"
    VOICE_DM = "VOICE_DM"
    VOICE_GROUP = "VOICE_GROUP"
    FEED = "FEED"
    THREAD = "THREAD"
    WORLD = "WORLD"
    FORUM = "FORUM"
    API = "API"


class MemoryType(StrEnum):
    """What kind of memory one is (``metadata.type``); the *table* it lives in is a separate name."""

    DOCUMENT = "document"
    FRAGMENT = "fragment"
    MESSAGE = "message"
    DESCRIPTION = "description"
    CUSTOM = "custom"
    REACTION = "reaction"
    DECISION = "decision"  # a turn the character let pass, kept so a redelivery is not answered


_NOTHING: Final[Mapping[str, object]] = NOTHING

# A field's JSON key, its attribute, and how a stored value becomes the field's value: the
# converter returns the value, or raises ValueError/TypeError for a value kept in ``extra``.
_Field = tuple[str, str, Callable[[object], object]]


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    raise TypeError


def _flag(value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise TypeError


def _whole(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError


def _texts(value: object) -> tuple[str, ...]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TypeError


def _channel_type(value: object) -> ChannelType:
    return ChannelType(_text(value))


def _memory_type(value: object) -> MemoryType:
    return MemoryType(_text(value))


def _split(data: Mapping[str, object], fields: Mapping[str, _Field]) -> tuple[dict[str, object], dict[str, object]]:
    """The typed fields ``data`` holds, and the rest of it (``extra``), in its order."""
    values: dict[str, object] = {}
    extra: dict[str, object] = {}
    for key, value in data.items():
        known = fields.get(key)
        if known is not None:
            try:
                values[known[1]] = known[2](value)
                continue
            except (TypeError, ValueError):
                pass
        extra[key] = value
    return values, extra


def _plain(value: object) -> object:
    """A field's value as JSON holds it."""
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Attachment):
        return value.to_json()
    if isinstance(value, (Button, Press)):
        return value.record()
    return value


def _join(fields: Mapping[str, _Field], record: object, extra: Mapping[str, object]) -> dict[str, Any]:
    out: dict[str, Any] = dict(extra)
    for key, attribute, _convert in fields.values():
        value = getattr(record, attribute)
        if value is not None:
            out[key] = _plain(value)
    return out


def _merge(fields: Mapping[str, _Field], under: _Record, over: _Record) -> dict[str, object]:
    """The constructor arguments of ``under`` updated by ``over``, as ``{**under_json,
    **over_json}`` would update them: what ``over`` holds, in a field or in ``extra``, wins."""
    values: dict[str, object] = {}
    extra = dict(under.extra)
    for key, attribute, _convert in fields.values():
        value = getattr(over, attribute)
        if value is not None:
            extra.pop(key, None)
        elif key not in over.extra:
            value = getattr(under, attribute)
        values[attribute] = value
    extra.update(over.extra)
    values["extra"] = FrozenMap(extra) if extra else _NOTHING
    return values


class _Record(Protocol):
    @property
    def extra(self) -> Mapping[str, object]: ...


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file a message carried, as its platform described it (and as troupe read it)."""

    id: str | None = None
    url: str | None = None
    title: str | None = None
    source: str | None = None
    description: str | None = None
    """Alt text, or what troupe saw in it."""
    text: str | None = None
    """What troupe read in it (a transcript, a page's text)."""
    content_type: str | None = None
    size: int | None = None
    transcribed: bool | None = None
    """Its sound was turned into ``text`` (or could not be, and never will): not again."""
    private: bool | None = None
    """Its ``url`` names the file without reaching it (a Telegram file id): only its platform fetches it."""
    extra: Mapping[str, object] = field(default_factory=lambda: _NOTHING)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Attachment:
        values, extra = _split(data, _ATTACHMENT_FIELDS)
        return cls(**values, extra=FrozenMap(extra) if extra else _NOTHING)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, Any]:
        return _join(_ATTACHMENT_FIELDS, self, self.extra)


def _press(value: object) -> Press:
    press = Press.of(value)
    if press is not None and press.record() == value:  # only a record that reads back as it was
        return press
    raise TypeError


def _attachments(value: object) -> tuple[Attachment, ...]:
    if isinstance(value, list) and all(isinstance(v, Mapping) for v in value):
        return tuple(Attachment.from_json(v) for v in value)
    raise TypeError


def _buttons(value: object) -> tuple[Button, ...]:
    if isinstance(value, list):
        found = tuple(Button.parse(v) for v in value)
        # Only records that read back as they were: anything else stays as stored.
        if [b.record() for b in found] == value:
            return found
    raise TypeError


@dataclass(frozen=True, slots=True)
class Content:
    """What a memory says: its text and what came with it."""

    text: str | None = None
    actions: tuple[str, ...] | None = None
    source: str | None = None
    """The platform it came from (``discord``, ``telegram``, ``console`` …)."""
    in_reply_to: str | None = None
    """The id of the memory it answers."""
    channel_type: ChannelType | None = None
    attachments: tuple[Attachment, ...] | None = None
    thought: str | None = None
    is_voice_message: bool | None = None
    url: str | None = None
    """Where the platform shows the message."""
    buttons: tuple[Button, ...] | None = None
    """The buttons it was sent with (as :meth:`Button.record` keeps them), a menu's options first."""
    type: str | None = None
    """What kind of fact it is (``"status"`` …), for facts."""
    image_prompt: str | None = None
    providers: tuple[str, ...] | None = None
    """The providers the plan asked for, kept with what it said."""
    button: Press | None = None
    """The button pressed, for a message that is a press."""
    action: str | None = None
    """The one action of an elizaOS v0 message (newer ones list ``actions``)."""
    emoji: str | None = None
    """The reaction the plan put on the message it answers (REACT)."""
    extra: Mapping[str, object] = field(default_factory=lambda: _NOTHING)
    """Every other key, as stored."""

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Content:
        values, extra = _split(data, _CONTENT_FIELDS)
        return cls(**values, extra=FrozenMap(extra) if extra else _NOTHING)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, Any]:
        """The JSON object the store keeps: the same keys and values it was read from."""
        return _join(_CONTENT_FIELDS, self, self.extra)

    def merged(self, over: Content) -> Content:
        """This, updated by what ``over`` holds (as a dict update of their JSON would)."""
        return Content(**_merge(_CONTENT_FIELDS, self, over))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class MemoryMetadata:
    """What is known about a memory besides what it says: who wrote it, whether it addressed the
    agent, where its platform keeps it, which document a fragment is part of."""

    type: MemoryType | None = None
    entity_name: str | None = None
    entity_user_name: str | None = None
    author_is_bot: bool | None = None
    is_mention: bool | None = None
    is_reply: bool | None = None
    author_id: str | None = None
    """The platform's id of the author (Discord)."""
    channel_id: str | None = None
    """The platform's id of the channel (Discord)."""
    server_id: str | None = None
    """The platform's id of the server (Discord)."""
    discord_message_id: str | None = None
    source: str | None = None
    """Where a document came from (``"file"`` …), for documents and fragments."""
    title: str | None = None
    document_id: str | None = None
    position: int | None = None
    """A fragment's place in its document."""
    timestamp: int | None = None
    entity_ids: tuple[str, ...] | None = None
    """Whom a summary or a fact is about (besides its author)."""
    source_entity_id: str | None = None
    """Who a fact was learnt from."""
    start: int | None = None
    """When the first message a summary covers was said."""
    end: int | None = None
    """When the last message a summary covers was said."""
    edited_at: int | None = None
    emoji: str | None = None
    """The emoji of a reaction."""
    one_to_one: bool | None = None
    """Said in a voice channel where only the speaker and the agent were."""
    interaction_id: str | None = None
    """The platform's id of the button press (Discord)."""
    extra: Mapping[str, object] = field(default_factory=lambda: _NOTHING)
    """Every other key, as stored: the platform's own block (``metadata["telegram"]``) among them."""

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> MemoryMetadata:
        values, extra = _split(data, _METADATA_FIELDS)
        return cls(**values, extra=FrozenMap(extra) if extra else _NOTHING)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, Any]:
        """The JSON object the store keeps: the same keys and values it was read from."""
        return _join(_METADATA_FIELDS, self, self.extra)

    def merged(self, over: MemoryMetadata) -> MemoryMetadata:
        """This, updated by what ``over`` holds (as a dict update of their JSON would)."""
        return MemoryMetadata(**_merge(_METADATA_FIELDS, self, over))  # type: ignore[arg-type]


def _by_key(*fields: _Field) -> Mapping[str, _Field]:
    return MappingProxyType({f[0]: f for f in fields})


_ATTACHMENT_FIELDS: Final[Mapping[str, _Field]] = _by_key(
    ("id", "id", _text),
    ("url", "url", _text),
    ("title", "title", _text),
    ("source", "source", _text),
    ("description", "description", _text),
    ("text", "text", _text),
    ("contentType", "content_type", _text),
    ("size", "size", _whole),
    ("transcribed", "transcribed", _flag),
    ("private", "private", _flag),
)
_CONTENT_FIELDS: Final[Mapping[str, _Field]] = _by_key(
    ("text", "text", _text),
    ("actions", "actions", _texts),
    ("source", "source", _text),
    ("inReplyTo", "in_reply_to", _text),
    ("channelType", "channel_type", _channel_type),
    ("attachments", "attachments", _attachments),
    ("thought", "thought", _text),
    ("isVoiceMessage", "is_voice_message", _flag),
    ("url", "url", _text),
    ("buttons", "buttons", _buttons),
    ("type", "type", _text),
    ("imagePrompt", "image_prompt", _text),
    ("providers", "providers", _texts),
    ("button", "button", _press),
    ("action", "action", _text),
    ("emoji", "emoji", _text),
)
_METADATA_FIELDS: Final[Mapping[str, _Field]] = _by_key(
    ("type", "type", _memory_type),
    ("entityName", "entity_name", _text),
    ("entityUserName", "entity_user_name", _text),
    ("authorIsBot", "author_is_bot", _flag),
    ("isMention", "is_mention", _flag),
    ("isReply", "is_reply", _flag),
    ("authorId", "author_id", _text),
    ("channelId", "channel_id", _text),
    ("serverId", "server_id", _text),
    ("discordMessageId", "discord_message_id", _text),
    ("source", "source", _text),
    ("title", "title", _text),
    ("documentId", "document_id", _text),
    ("position", "position", _whole),
    ("timestamp", "timestamp", _whole),
    ("entityIds", "entity_ids", _texts),
    ("sourceEntityId", "source_entity_id", _text),
    ("start", "start", _whole),
    ("end", "end", _whole),
    ("editedAt", "edited_at", _whole),
    ("emoji", "emoji", _text),
    ("oneToOne", "one_to_one", _flag),
    ("interactionId", "interaction_id", _text),
)
