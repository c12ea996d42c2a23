"""Typed metadata of worlds, rooms, entities, relationships and tasks, and its stored JSON.

Each record keeps the keys troupe reads or writes as fields; every other key (an elizaOS
plugin's, a platform's extra detail) stays in ``extra`` and is written back unchanged. So is a
known key whose value has another type than troupe's: readers see the field unset, the value
survives. ``from_json`` and ``to_json`` are the one place that knows the stored keys, camelCase
as elizaOS's; the store's row mapping calls them. Frozen: a change is ``dataclasses.replace``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields
from enum import StrEnum
from typing import Any, Self

__all__ = [
    "EntityMetadata",
    "Ownership",
    "PlatformProfile",
    "RelationshipMetadata",
    "Role",
    "RoomMetadata",
    "Setting",
    "TaskMetadata",
    "WorldMetadata",
]

#: A stored JSON object. Its values really are any JSON.
JSONObject = Mapping[str, Any]


class Role(StrEnum):
    """A person's role in a world (:attr:`WorldMetadata.roles`)."""

    OWNER = "OWNER"
    ADMIN = "ADMIN"
    NONE = "NONE"

    @classmethod
    def read(cls, value: object) -> Role:
        """The role a stored value names, in any case; NONE for anything else."""
        try:
            return cls(str(value).upper()) if value else cls.NONE
        except ValueError:
            return cls.NONE


def _key(name: str, *types: type) -> dict[str, object]:
    """A field stored under the JSON key ``name`` when its value is one of ``types``."""
    return {"key": name, "types": types}


def _nested(name: str, read: Callable[[object], object | None], write: Callable[[Any], object]) -> dict[str, object]:
    """A field stored under ``name`` as what ``write`` gives; ``read`` gives None for a stored
    value it cannot read, which then stays in ``extra``."""
    return {"key": name, "read": read, "write": write}


def _fits(value: object, types: tuple[type, ...]) -> bool:
    # JSON's true is an int to Python: a count or a time never takes a bool.
    return object in types or (isinstance(value, types) and (bool in types or not isinstance(value, bool)))


#: Each metadata class's keyed fields by JSON key, worked out once.
_KEYED: dict[type, dict[str, Field[Any]]] = {}


@dataclass(frozen=True, slots=True)
class _Stored:
    """What every metadata record shares: the keys it knows, the rest kept in ``extra``."""

    @classmethod
    def _fields_by_key(cls) -> dict[str, Field[Any]]:
        keyed = _KEYED.get(cls)
        if keyed is None:
            keyed = _KEYED[cls] = {f.metadata["key"]: f for f in fields(cls) if "key" in f.metadata}
        return keyed

    @classmethod
    def from_json(cls, stored: object) -> Self:
        """The metadata a stored JSON object holds (anything else: none)."""
        known: dict[str, object] = {}
        extra: dict[str, object] = {}
        by_key = cls._fields_by_key()
        for key, value in stored.items() if isinstance(stored, Mapping) else ():
            spec = by_key.get(key)
            read = spec.metadata.get("read") if spec is not None else None
            typed = read(value) if read is not None else value
            if spec is not None and typed is not None and (read is not None or _fits(value, spec.metadata["types"])):
                known[spec.name] = typed
            else:
                extra[key] = value
        return cls._build(known, extra)

    @classmethod
    def _build(cls, known: dict[str, object], extra: dict[str, object]) -> Self:
        return cls(**known, extra=extra)  # type: ignore[call-arg]

    def _more_json(self) -> dict[str, Any]:
        """Keys a subclass stores besides its keyed fields and ``extra``."""
        return {}

    def to_json(self) -> dict[str, Any]:
        """The JSON object to store: the set fields under their keys, and ``extra``."""
        stored: dict[str, Any] = {**getattr(self, "extra", {}), **self._more_json()}
        for key, spec in self._fields_by_key().items():
            value = getattr(self, spec.name)
            if value is not None:
                write = spec.metadata.get("write")
                stored[key] = write(value) if write is not None else value
        return stored

    def merged(self, newer: Self) -> Self:
        """These keys with ``newer``'s over them (a platform's report over what is stored)."""
        return type(self).from_json({**self.to_json(), **newer.to_json()})


def _read_roles(stored: object) -> dict[str, Role] | None:
    if not isinstance(stored, Mapping):
        return None
    return {str(entity_id): Role.read(role) for entity_id, role in stored.items()}


def _write_roles(roles: Mapping[str, Role]) -> dict[str, str]:
    return {entity_id: Role(role).value for entity_id, role in roles.items()}


@dataclass(frozen=True, slots=True)
class Ownership(_Stored):
    """Who owns a world (``ownership``)."""

    owner_id: str | None = field(default=None, metadata=_key("ownerId", str))
    extra: JSONObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Setting(_Stored):
    """One of a server's settings (``settings.<KEY>``); a bare stored value is its ``value``."""

    value: Any = field(default=None, metadata=_key("value", object))
    """Whatever the owner configured: any JSON."""
    name: str | None = field(default=None, metadata=_key("name", str))
    description: str | None = field(default=None, metadata=_key("description", str))
    usage_description: str | None = field(default=None, metadata=_key("usageDescription", str))
    required: bool | None = field(default=None, metadata=_key("required", bool))
    secret: bool | None = field(default=None, metadata=_key("secret", bool))
    depends_on: str | list[str] | None = field(default=None, metadata=_key("dependsOn", str, list))
    """The keys that must have a value first (one key, or a list)."""
    extra: JSONObject = field(default_factory=dict)
    bare: bool = field(default=False, compare=False, repr=False)
    """Stored as its value alone, not as an object: written back so until changed."""

    @property
    def is_set(self) -> bool:
        return self.value not in (None, "")

    @property
    def dependencies(self) -> list[str]:
        depends = self.depends_on or []
        return [depends] if isinstance(depends, str) else [str(d) for d in depends]


def _read_settings(stored: object) -> dict[str, Setting] | None:
    if not isinstance(stored, Mapping):
        return None
    return {
        str(key): Setting.from_json(spec) if isinstance(spec, Mapping) else Setting(value=spec, bare=True)
        for key, spec in stored.items()
    }


def _write_settings(settings: Mapping[str, Setting]) -> dict[str, Any]:
    return {key: setting.value if setting.bare else setting.to_json() for key, setting in settings.items()}


def _read_ownership(stored: object) -> Ownership | None:
    return Ownership.from_json(stored) if isinstance(stored, Mapping) else None


@dataclass(frozen=True, slots=True)
class WorldMetadata(_Stored):
    """A world's metadata: its people's roles, its owner, its settings."""

    roles: Mapping[str, Role] | None = field(default=None, metadata=_nested("roles", _read_roles, _write_roles))
    """Entity id → role; the platform's (OWNER, ADMIN) and those given through UPDATE_ROLE."""
    ownership: Ownership | None = field(default=None, metadata=_nested("ownership", _read_ownership, Ownership.to_json))
    settings: Mapping[str, Setting] | None = field(
        default=None, metadata=_nested("settings", _read_settings, _write_settings)
    )
    """Setting key → setting; None when the server has none to configure."""
    chat_type: str | None = field(default=None, metadata=_key("chatType", str))
    """Telegram's kind of chat (``private``, ``group``, ``supergroup``, ``channel``)."""
    extra: JSONObject = field(default_factory=dict)

    @property
    def owner_id(self) -> str | None:
        return self.ownership.owner_id if self.ownership is not None else None

    def role_of(self, entity_id: str) -> Role:
        """``entity_id``'s role: OWNER for the recorded owner, else the recorded role, else NONE."""
        if entity_id == self.owner_id:
            return Role.OWNER
        return (self.roles or {}).get(entity_id, Role.NONE)


@dataclass(frozen=True, slots=True)
class RoomMetadata(_Stored):
    """A room's metadata: where it hangs (a thread's channel, a forum topic) and whether the
    agent left it."""

    parent_room_id: str | None = field(default=None, metadata=_key("parentRoomId", str))
    parent_channel_id: str | None = field(default=None, metadata=_key("parentChannelId", str))
    thread_id: int | None = field(default=None, metadata=_key("threadId", int))
    """A Telegram forum topic's id."""
    is_forum_topic: bool | None = field(default=None, metadata=_key("isForumTopic", bool))
    left_at: int | None = field(default=None, metadata=_key("leftAt", int))
    """When the agent left the room's world (or was removed); None while it is in it."""
    left_as: str | None = field(default=None, metadata=_key("leftAs", str))
    """How it left (``kicked``, ``removed``, …)."""
    extra: JSONObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PlatformProfile(_Stored):
    """What a platform says about a person (``<platform>`` in an entity's metadata)."""

    id: str | None = field(default=None, metadata=_key("id", str))
    user_id: str | None = field(default=None, metadata=_key("userId", str))
    username: str | None = field(default=None, metadata=_key("username", str))
    user_name: str | None = field(default=None, metadata=_key("userName", str))
    display_name: str | None = field(default=None, metadata=_key("displayName", str))
    handle: str | None = field(default=None, metadata=_key("handle", str))
    name: str | None = field(default=None, metadata=_key("name", str))
    global_name: str | None = field(default=None, metadata=_key("globalName", str))
    bot: bool | None = field(default=None, metadata=_key("bot", bool))
    extra: JSONObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EntityMetadata(_Stored):
    """An entity's metadata: its profile on each platform, its handle, whether it is in the world."""

    platforms: Mapping[str, PlatformProfile] = field(default_factory=dict)
    """Platform name (``discord``, ``telegram``) → profile: every key whose value is an object."""
    username: str | None = field(default=None, metadata=_key("username", str))
    user_name: str | None = field(default=None, metadata=_key("userName", str))
    display_name: str | None = field(default=None, metadata=_key("displayName", str))
    handle: str | None = field(default=None, metadata=_key("handle", str))
    status: str | None = field(default=None, metadata=_key("status", str))
    """ACTIVE or INACTIVE (left the world); None: never said, so ACTIVE."""
    joined_at: int | None = field(default=None, metadata=_key("joinedAt", int))
    left_at: int | None = field(default=None, metadata=_key("leftAt", int))
    extra: JSONObject = field(default_factory=dict)

    @classmethod
    def _build(cls, known: dict[str, object], extra: dict[str, object]) -> Self:
        profiles = {k: PlatformProfile.from_json(v) for k, v in extra.items() if isinstance(v, Mapping)}
        rest = {k: v for k, v in extra.items() if k not in profiles}
        return cls(**known, platforms=profiles, extra=rest)  # type: ignore[arg-type]

    def _more_json(self) -> dict[str, Any]:
        return {name: profile.to_json() for name, profile in self.platforms.items()}

    def profile(self, platform: str | None) -> PlatformProfile | None:
        return self.platforms.get(platform) if platform else None


@dataclass(frozen=True, slots=True)
class RelationshipMetadata(_Stored):
    """A relationship's metadata: how often and when last the two interacted."""

    interactions: int | None = field(default=None, metadata=_key("interactions", int))
    last_interaction_at: int | None = field(default=None, metadata=_key("lastInteractionAt", int))
    extra: JSONObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TaskMetadata(_Stored):
    """A task's metadata: what its worker gets, and when a repeating task runs."""

    options: Any = field(default=None, metadata=_key("options", dict, list))
    """What the worker gets (an object), or the choices a person is offered (a list)."""
    update_interval: int | None = field(default=None, metadata=_key("updateInterval", int))
    """Milliseconds between runs of a repeating task."""
    updated_at: int | None = field(default=None, metadata=_key("updatedAt", int))
    """When a repeating task last ran."""
    retry_at: int | None = field(default=None, metadata=_key("retryAt", int))
    """Not before this time again, after a failure."""
    failures: int | None = field(default=None, metadata=_key("failures", int))
    """Failures in a row."""
    extra: JSONObject = field(default_factory=dict)
