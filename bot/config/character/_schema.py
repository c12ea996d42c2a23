"""The character file's schema: elizaOS's fields of both generations, validated by pydantic."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, PrivateAttr, SecretStr, field_validator, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from bot.kernel.files import expand_home
from bot.kernel.ids import string_to_uuid
from bot.kernel.types import AgentRecord

__all__ = [
    "Character",
    "ELIZAOS_FIELDS",
    "ExampleContent",
    "ExampleMessage",
    "KnowledgeSource",
    "SecretValue",
    "Style",
    "json_type",
]

_CAMEL = ConfigDict(alias_generator=to_camel, populate_by_name=True)
# A web page a knowledge item names: http(s), a host, no spaces.
_WEB_LINK = re.compile(r"https?://[^\s/?#]+[^\s]*", re.IGNORECASE)

#: Top-level fields of elizaOS characters (v0 and v1) that troupe reads but does not use.
#: They load without a word: they are real fields, not typos.
ELIZAOS_FIELDS = frozenset(
    {
        "email",
        "imageModelProvider",
        "imageVisionModelProvider",
        "modelEndpointOverride",
        "ragKnowledge",
        "postProcessors",
        "clientConfig",
        "twitterProfile",
        "twitterSpaces",
        "twitterQuery",
        "nft",
        "extends",
        "people",
        "scenarios",
        "voice",
        "avatar",
        "enabled",
        "status",
        "createdAt",
        "updatedAt",
    }
)


def json_type(value: object) -> str:
    match value:
        case bool():
            return "true/false"
        case int() | float():
            return "a number"
        case str():
            return "text"
        case list():
            return "a list"
        case dict():
            return "an object"
        case None:
            return "null"
    return type(value).__name__


def _str_list(value: Any, what: str) -> Any:
    """Accept a single string where a list of strings is expected (common in hand-written files)."""
    if isinstance(value, str):
        return [value]
    if value is None:
        return []
    if not isinstance(value, list):
        raise PydanticCustomError("list_expected", f"must be a list of {what}, not {{got}}", {"got": json_type(value)})
    return value


class Style(BaseModel):
    """How the character writes: rules for everywhere, for chat, and for posts."""

    model_config = ConfigDict(extra="forbid")

    all: list[str] = Field(default_factory=list, description="rules applied everywhere")
    chat: list[str] = Field(default_factory=list, description="rules for chat replies")
    post: list[str] = Field(default_factory=list, description="rules for posts")

    @field_validator("all", "chat", "post", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _str_list(value, "rules (strings)")


class ExampleContent(BaseModel):
    """What an example message says; extra keys (``source``, ``attachments`` …) are kept."""

    model_config = ConfigDict(extra="allow")

    text: str | None = None
    actions: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_action(cls, data: Any) -> Any:
        # elizaOS v0 examples carry one "action" instead of a list of "actions".
        if isinstance(data, dict) and "actions" not in data and isinstance(data.get("action"), str):
            data = {k: v for k, v in data.items() if k != "action"} | {"actions": [data["action"]]}
        return data


class ExampleMessage(BaseModel):
    """One message in an example conversation."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(description="who speaks: the character's name or a placeholder like {{user1}}")
    content: ExampleContent

    @model_validator(mode="before")
    @classmethod
    def _legacy_user(cls, data: Any) -> Any:
        # elizaOS v0 keyed the speaker as "user".
        if isinstance(data, dict) and "name" not in data and "user" in data:
            data = {**data, "name": data["user"]}
            del data["user"]
        return data


class KnowledgeSource(BaseModel):
    """A knowledge item: a fact given inline, a file, a directory of files, or a web page."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    path: str | None = None
    directory: str | None = None
    url: str | None = None
    """A web page read through the links reader (``{"url": "https://…"}``): a plain string is a
    fact even when it is a link, as in elizaOS."""
    shared: bool = False
    """Visible to every agent, not only this one."""

    @model_validator(mode="before")
    @classmethod
    def _from_json(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"text": data}
        if not isinstance(data, dict):
            raise PydanticCustomError(
                "knowledge_item",
                'each knowledge item is a fact (text), {"path": "file.md"}, {"directory": "docs/"} or '
                '{"url": "https://…"}, not {got}',
                {"got": json_type(data)},
            )
        return data

    @field_validator("url")
    @classmethod
    def _web_link(cls, value: str | None) -> str | None:
        if value is None:
            return None
        url = value.strip()
        if not _WEB_LINK.fullmatch(url):
            raise PydanticCustomError(
                "knowledge_url",
                "{got} is not a web link; give one starting with https:// or http://",
                {"got": repr(value)},
            )
        return url

    @model_validator(mode="after")
    def _exactly_one(self) -> KnowledgeSource:
        given = [k for k in ("text", "path", "directory", "url") if getattr(self, k) is not None]
        if len(given) != 1:
            raise PydanticCustomError(
                "knowledge_item", 'give exactly one of "path", "directory" or "url" in a knowledge object'
            )
        return self

    @property
    def kind(self) -> Literal["text", "path", "directory", "url"]:
        if self.text is not None:
            return "text"
        if self.url is not None:
            return "url"
        return "path" if self.path is not None else "directory"

    def to_json(self) -> str | dict[str, str | bool]:
        """The form this item takes in a character file."""
        if self.text is not None:
            return self.text
        key = self.kind
        return {key: getattr(self, key), "shared": self.shared}


SecretValue = str


class Character(BaseModel):
    """A character file, validated and with defaults filled in.

    Secrets (``secrets`` and ``settings.secrets``) are kept as written — values or references
    (:mod:`bot.config.secrets`) — and are never part of ``repr()``. The resolved secrets are read
    with :meth:`secret`.
    """

    model_config = ConfigDict(**_CAMEL, extra="allow")

    name: str = Field(description="display name; also the source of the derived id")
    bio: list[str] = Field(description="who the character is: a string or a list of strings")
    id: str | None = Field(default=None, description="agent id; derived from the name when absent")
    username: str | None = None
    system: str | None = None
    templates: dict[str, str] = Field(default_factory=dict)
    adjectives: list[str] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    lore: list[str] = Field(default_factory=list)
    knowledge: list[KnowledgeSource] = Field(default_factory=list)
    message_examples: list[list[ExampleMessage]] = Field(default_factory=list)
    post_examples: list[str] = Field(default_factory=list)
    style: Style = Field(default_factory=Style)
    plugins: list[str] = Field(default_factory=list)
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    secrets: dict[str, SecretValue] = Field(default_factory=dict, repr=False)
    clients: list[str] = Field(default_factory=list, description="elizaOS v0: platforms to run on")
    model_provider: str | None = Field(default=None, description="elizaOS v0: which model plugin to use")

    _secrets: dict[str, SecretStr] = PrivateAttr(default_factory=dict)
    _base_dir: Path | None = PrivateAttr(default=None)

    # -- field normalisation -------------------------------------------------------------

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            raise PydanticCustomError("name_required", 'Character name is required: give "name" a non-empty value')
        return value.strip() if isinstance(value, str) else value

    @field_validator("bio", mode="before")
    @classmethod
    def _bio(cls, value: Any) -> Any:
        value = _str_list(value, "sentences (strings)")
        if not any(isinstance(v, str) and v.strip() for v in value):
            raise PydanticCustomError(
                "bio_required", 'Character bio is required: give "bio" a sentence or a list of sentences'
            )
        return value

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("adjectives", "topics", "lore", "post_examples", "plugins", "clients", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _str_list(value, "strings")

    @field_validator("settings", "templates", "style", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        # JSON exports of elizaOS characters write unset objects as null.
        return {} if value is None else value

    @field_validator("knowledge", mode="before")
    @classmethod
    def _knowledge(cls, value: Any) -> Any:
        if value is None:
            return []
        if not isinstance(value, list):
            raise PydanticCustomError("list_expected", "must be a list, not {got}", {"got": json_type(value)})
        return value

    @field_validator("message_examples", mode="before")
    @classmethod
    def _examples(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
            raise PydanticCustomError(
                "examples_shape",
                "must be a list of conversations, each a list of messages: wrap each conversation in [ ]",
            )
        return value

    @field_validator("secrets", mode="before")
    @classmethod
    def _secrets_map(cls, value: Any) -> Any:
        return _secret_map(value)

    @field_validator("settings", mode="after")
    @classmethod
    def _settings(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "secrets" in value:
            value["secrets"] = _secret_map(value["secrets"], where="settings.secrets")
        return value

    @model_validator(mode="after")
    def _defaults(self) -> Character:
        if self.username is None:
            self.username = re.sub(r"\s+", "_", self.name.lower())
        # elizaOS's guides put templates in settings.templates too (its examples at the top):
        # both are read, the top level winning.
        nested = self.settings.get("templates")
        if isinstance(nested, dict):
            found = {k: v for k, v in nested.items() if isinstance(v, str)}
            self.templates = {**found, **self.templates}
        return self

    # -- derived values ------------------------------------------------------------------

    @property
    def agent_id(self) -> str:
        """The agent's id: ``id`` if given, else derived from the name exactly as elizaOS does."""
        return string_to_uuid(self.id if self.id else self.name).lower()

    @property
    def settings_secrets(self) -> dict[str, str]:
        """``settings.secrets`` as written (values or references)."""
        secrets = self.settings.get("secrets")
        return secrets if isinstance(secrets, dict) else {}  # type: ignore[return-value]

    def secret(self, key: str) -> SecretStr | None:
        """The resolved secret ``key`` (``secrets`` first, then ``settings.secrets``), if any."""
        return self._secrets.get(key)

    def secret_keys(self) -> list[str]:
        """Names of the secrets that resolved to a value."""
        return sorted(self._secrets)

    def resolve_path(self, path: str) -> Path:
        """A path written in the file (a knowledge ``path`` or ``directory``) as an absolute path.

        Relative paths are relative to the folder of the character file (the working directory
        for a character that was not loaded from a file); ``~`` is expanded.
        """
        target = expand_home(path)
        if target.is_absolute():
            return target
        return (self._base_dir if self._base_dir is not None else Path.cwd()) / target

    def to_record(self) -> AgentRecord:
        """The character as the database keeps it, without any secret."""
        settings = {k: v for k, v in self.settings.items() if k != "secrets"}
        return AgentRecord(
            id=self.agent_id,
            name=self.name,
            username=self.username,
            system=self.system,
            bio=list(self.bio),
            message_examples=[[m.model_dump(exclude_none=True) for m in conv] for conv in self.message_examples],
            post_examples=list(self.post_examples),
            topics=list(self.topics),
            adjectives=list(self.adjectives),
            knowledge=[k.to_json() for k in self.knowledge],
            plugins=list(self.plugins),
            settings=settings,
            style=self.style.model_dump(),
        )

    def __repr_args__(self) -> Iterable[tuple[str | None, Any]]:
        for key, value in super().__repr_args__():
            if key == "settings" and isinstance(value, dict) and "secrets" in value:
                value = {**value, "secrets": {k: "<redacted>" for k in value["secrets"]}}
            yield key, value


def _secret_map(value: object, where: str = "secrets") -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PydanticCustomError(
            "secrets_type",
            f'{where} must be an object like {{"OPENAI_API_KEY": "env:OPENAI_API_KEY"}}, not {{got}}',
            {"got": json_type(value)},
        )
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, bool):
            out[key] = "true" if item else "false"
        elif isinstance(item, (int, float)):
            out[key] = str(item)
        elif isinstance(item, str):
            out[key] = item
        elif item is None:
            continue
        else:
            raise PydanticCustomError(
                "secret_value",
                f"{where}.{key} must be text (a value or a reference like env:NAME), not {{got}}",
                {"got": json_type(item)},
            )
    return out
