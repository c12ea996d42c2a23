"""Characters: the JSON file that defines one AI character, validated.

The schema is elizaOS's (name, bio, system, templates, adjectives, topics, knowledge,
messageExamples, postExamples, style, plugins, settings, settings.secrets, secrets), and files
written for elizaOS load unchanged, including the older format many published characters use
(``clients``, ``modelProvider``, ``lore``, message examples keyed by ``user``). Every other field
of either generation (``twitterSpaces``, ``people`` …) is known and kept; a plugin troupe does not
have is a warning and the character starts without it, as elizaOS starts an agent whose plugin
failed to import.

Loading never raises a traceback at the user, whatever the file holds: every problem becomes a
:class:`~bot.errors.Problem` with the JSON path of the field and what to do. See :func:`load_character`.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from . import plugins as plugin_registry
from .errors import CharacterError, Problem, SecretReferenceError
from .files import UnreadableFile, describe_kind, expand_home, file_key, mode_of, read_config_file, shown
from .ids import string_to_uuid
from .secrets import resolve_secret
from .types import AgentRecord

__all__ = [
    "Character",
    "CharacterFiles",
    "ELIZAOS_FIELDS",
    "ExampleMessage",
    "KnowledgeSource",
    "LoadResult",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "Style",
    "find_character",
    "load_character",
    "load_characters",
    "scan_character_files",
]

_CAMEL = ConfigDict(alias_generator=to_camel, populate_by_name=True)

# Legacy elizaOS v0 `clients` that troupe has no platform for but which need no warning.
_SILENT_CLIENTS = frozenset({"direct"})

#: The largest character file read (published characters are a few hundred KiB at most).
MAX_FILE_BYTES = 4 * 1024 * 1024
#: The deepest nesting read; elizaOS characters nest about six levels, and validation recurses.
MAX_DEPTH = 64

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

# What troupe offers in place of an elizaOS plugin it does not have, by words in the plugin's name.
_MODEL_PLUGIN_WORDS = (
    "anthropic",
    "google",
    "gemini",
    "groq",
    "local-ai",
    "llama",
    "ollama",
    "openrouter",
    "venice",
    "together",
    "deepseek",
    "mistral",
    "grok",
    "xai",
    "redpill",
    "heurist",
    "nvidia",
)
_PLATFORM_PLUGIN_WORDS = (
    "twitter",
    "farcaster",
    "slack",
    "whatsapp",
    "lens",
    "instagram",
    "bluesky",
    "github",
    "matrix",
    "tiktok",
    "reddit",
    "email",
    "sms",
)


def _json_type(value: Any) -> str:
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
        raise PydanticCustomError("list_expected", f"must be a list of {what}, not {{got}}", {"got": _json_type(value)})
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
    """A knowledge item: a fact given inline, a file, or a directory of files."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    path: str | None = None
    directory: str | None = None
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
                'each knowledge item is a fact (text), {"path": "file.md"} or {"directory": "docs/"}, not {got}',
                {"got": _json_type(data)},
            )
        return data

    @model_validator(mode="after")
    def _exactly_one(self) -> KnowledgeSource:
        given = [k for k in ("text", "path", "directory") if getattr(self, k) is not None]
        if len(given) != 1:
            raise PydanticCustomError(
                "knowledge_item", 'give exactly one of "path" or "directory" in a knowledge object'
            )
        return self

    @property
    def kind(self) -> Literal["text", "path", "directory"]:
        if self.text is not None:
            return "text"
        return "path" if self.path is not None else "directory"

    def to_json(self) -> str | dict[str, Any]:
        """The form this item takes in a character file."""
        if self.text is not None:
            return self.text
        key = "path" if self.path is not None else "directory"
        return {key: getattr(self, key), "shared": self.shared}


SecretValue = str


class Character(BaseModel):
    """A character file, validated and with defaults filled in.

    Secrets (``secrets`` and ``settings.secrets``) are kept as written — values or references
    (:mod:`bot.secrets`) — and are never part of ``repr()``. The resolved secrets are read
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
            raise PydanticCustomError("list_expected", "must be a list, not {got}", {"got": _json_type(value)})
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


def _secret_map(value: Any, where: str = "secrets") -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PydanticCustomError(
            "secrets_type",
            f'{where} must be an object like {{"OPENAI_API_KEY": "env:OPENAI_API_KEY"}}, not {{got}}',
            {"got": _json_type(value)},
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
                {"got": _json_type(item)},
            )
    return out


# -- loading ---------------------------------------------------------------------------


@dataclass(slots=True)
class LoadResult:
    """The outcome of loading one character file."""

    source: Path
    character: Character | None = None
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    platforms: list[str] = field(default_factory=list)
    """troupe platform names the character runs on (``discord``, ``telegram``)."""
    plugins: list[str] = field(default_factory=list)
    """troupe plugin names, in file order, without duplicates."""
    model_preset: str | None = None
    """``ollama`` or ``openrouter`` when the file selects one of those, else ``None``."""
    missing_plugins: list[str] = field(default_factory=list)
    """Plugins the file lists that troupe does not have; the character runs without them."""

    @property
    def ok(self) -> bool:
        return self.character is not None and not self.problems

    def raise_for_problems(self) -> Character:
        """The character, or :class:`~bot.errors.CharacterError` listing every problem."""
        if self.problems or self.character is None:
            raise CharacterError(str(self.source), self.problems)
        return self.character


def _json_path(loc: tuple[int | str, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


_FIELD_HINTS = {
    "name": 'add "name": "the character\'s name"',
    "bio": 'add "bio": "a sentence or a list of sentences about the character"',
    "content": 'add "content": {"text": "..."}',
}


def _problem_from_error(err: Mapping[str, Any]) -> Problem:
    loc = tuple(err["loc"])
    kind = err["type"]
    got = _json_type(err.get("input"))
    if kind == "missing":
        hint = _FIELD_HINTS.get(str(loc[-1]), "add it")
        message = f"required field is missing: {hint}"
    elif kind == "string_type":
        message = f"must be text (a string in quotes), not {got}"
    elif kind == "list_type":
        message = f"must be a list [...], not {got}"
    elif kind in ("dict_type", "model_type", "model_attributes_type"):
        message = f"must be an object {{...}}, not {got}"
    elif kind in ("bool_type", "bool_parsing"):
        message = f"must be true or false, not {got}"
    elif kind == "extra_forbidden":
        message = "unknown key here; remove it or check its spelling"
        if len(loc) >= 2 and loc[-2] == "style":
            close = difflib.get_close_matches(str(loc[-1]).lower(), ["all", "chat", "post"], n=1, cutoff=0.6)
            guess = f"; did you mean {close[0]!r}?" if close else ""
            message = f'unknown style key; style has "all", "chat" and "post"{guess}'
    else:
        message = err["msg"].removeprefix("Value error, ")
    return Problem(_json_path(loc), message)


#: Python converts integers of at most this many digits (sys.get_int_max_str_digits()).
_MAX_DIGITS = 4300


class _HugeNumber(int):
    """An integer too long to convert; stands in for it so it is reported with its path."""

    digits: int = 0


class _BadNumber(float):
    """``NaN`` or ``Infinity``, which Python's JSON reader accepts but JSON (and the database) do
    not; kept with how it was written so it is reported with its path."""

    written: str = ""


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > _MAX_DIGITS:
        huge = _HugeNumber(0)
        huge.digits = digits
        return huge
    return int(text)


def _parse_constant(text: str) -> float:
    bad = _BadNumber("nan")
    bad.written = text
    return bad


def _shape_problems(data: Any) -> list[Problem]:
    """What JSON allows but a character cannot hold: deep nesting, huge numbers, broken text.

    Iterative, so the check itself cannot run out of stack.
    """
    problems: list[Problem] = []
    stack: list[tuple[Any, str, int]] = [(data, "$", 1)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, _HugeNumber):
            problems.append(
                Problem(
                    where,
                    f"a number with {value.digits} digits; troupe reads numbers of up to "
                    f"{_MAX_DIGITS} digits (write it as text in quotes if it must be this long)",
                )
            )
        elif isinstance(value, _BadNumber):
            problems.append(Problem(where, f"{value.written} is not a number JSON allows; write a number or text"))
        elif isinstance(value, float) and not math.isfinite(value):
            problems.append(
                Problem(where, "a number too large to hold (it overflows to infinity); write a smaller number or text")
            )
        elif isinstance(value, str):
            if not _is_unicode(value):
                problems.append(
                    Problem(
                        where,
                        "text with a lone surrogate escape (\\ud800-\\udfff), which is not "
                        "valid Unicode; remove or fix the escape",
                    )
                )
        elif isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                shown = where if len(where) <= 80 else where[:80] + "…"
                problems.append(Problem(shown, f"nested more than {MAX_DEPTH} levels deep; flatten it"))
                continue
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str) and not _is_unicode(key):
                    problems.append(Problem(where, f"a key with a lone surrogate escape ({key!r}); fix the key"))
                    continue
                stack.append((item, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}", depth + 1))
    return sorted(problems, key=lambda p: p.path)


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_json(path: Path) -> tuple[Any, list[Problem]]:
    if path.suffix.lower() in (".ts", ".js", ".mjs", ".cjs"):
        return None, [
            Problem(
                "$",
                "troupe reads only JSON character files; it cannot run TypeScript or JavaScript. "
                "Export the character to JSON (e.g. JSON.stringify(character, null, 2)) and load that file",
            )
        ]
    try:
        raw = read_config_file(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        return None, [Problem("$", "no such file; check the path")]
    except UnreadableFile as exc:
        mode = mode_of(path)
        hint = "; give the .json files in it" if mode and stat.S_ISDIR(mode) else "; a character file is a JSON file"
        return None, [Problem("$", f"{exc}{hint}")]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, [Problem("$", f"not UTF-8 text (bad byte at offset {exc.start}); save the file as UTF-8")]
    if not text.strip():
        return None, [
            Problem(
                "$",
                "the file is empty; a character file holds one JSON object, "
                'such as {"name": "Ada", "bio": "who Ada is"}',
            )
        ]
    try:
        data = json.loads(text, parse_int=_parse_int, parse_constant=_parse_constant)
    except json.JSONDecodeError as exc:
        hint = ""
        if "Expecting property name" in exc.msg or "Expecting value" in exc.msg:
            hint = " (a trailing comma or a comment? JSON allows neither)"
        return None, [Problem("$", f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}{hint}")]
    except RecursionError:
        return None, [Problem("$", f"nested too deeply to read (troupe reads at most {MAX_DEPTH} levels); flatten it")]
    problems = _shape_problems(data)
    return (None, problems) if problems else (data, [])


def load_character(path: str | Path, *, environ: Mapping[str, str] | None = None) -> LoadResult:
    """Read and validate one character file. Never raises for bad input: see ``problems``.

    Every problem is reported at once: the parts of the file that are well-formed (plugins,
    secrets, knowledge paths) are checked even when other fields do not validate.

    Secret references are resolved against ``environ`` (default: the process environment,
    ``.env`` included once the daemon has loaded it).
    """
    path = Path(path)
    result = LoadResult(source=path)
    data, result.problems = _read_json(path)
    if result.problems:
        return result
    if not isinstance(data, dict):
        kind = "a list (several characters in one file?)" if isinstance(data, list) else _json_type(data)
        result.problems.append(Problem("$", f"a character file holds one JSON object {{...}}, not {kind}"))
        return result
    character: Character | None = None
    try:
        character = Character.model_validate(data)
    except ValidationError as exc:
        result.problems = [_problem_from_error(e) for e in exc.errors()]

    if character is not None:
        _resolve_plugins(character.plugins, character.clients, character.model_provider, result)
        secrets = {"settings.secrets": character.settings_secrets, "secrets": character.secrets}
        knowledge = character.knowledge
    else:  # keep going on the parts that are well-formed
        provider = data.get("modelProvider")
        _resolve_plugins(
            _strings(data.get("plugins")),
            _strings(data.get("clients")),
            provider if isinstance(provider, str) else None,
            result,
        )
        settings = data.get("settings")
        secrets = {
            where: {k: v for k, v in raw.items() if isinstance(v, str)}
            for where, raw in (
                ("settings.secrets", settings.get("secrets") if isinstance(settings, dict) else None),
                ("secrets", data.get("secrets")),
            )
            if isinstance(raw, dict)
        }
        knowledge = _well_formed_knowledge(data.get("knowledge"))
    resolved = _resolve_secrets(secrets, path.parent, environ, result)
    _check_knowledge(knowledge, path.parent, result)
    for key in data:
        if key not in _KNOWN_KEYS:
            result.warnings.append(Problem(f"$.{key}", _unknown_key_message(key)))
    if character is not None:
        character._secrets = resolved
        character._base_dir = path.parent.absolute()
        result.character = character
    return result


def _field_names() -> frozenset[str]:
    names = set(ELIZAOS_FIELDS)
    for name, info in Character.model_fields.items():
        names.add(name)
        if info.alias:
            names.add(info.alias)
    return frozenset(names)


_KNOWN_KEYS = _field_names()
_SUGGESTABLE = {name.casefold(): name for name in _KNOWN_KEYS if "_" not in name}


def _unknown_key_message(key: str) -> str:
    """An unknown key's warning, with the field it most likely meant."""
    close = difflib.get_close_matches(key.casefold(), list(_SUGGESTABLE), n=1, cutoff=0.75)
    if close:
        return f"unknown key, kept but unused; did you mean {_SUGGESTABLE[close[0]]!r}?"
    return "unknown key, kept but unused; check its spelling"


def _well_formed_knowledge(value: Any) -> list[KnowledgeSource]:
    """The knowledge items that validate (the others are reported already)."""
    items: list[KnowledgeSource] = []
    for item in value if isinstance(value, list) else []:
        try:
            items.append(KnowledgeSource.model_validate(item))
        except ValidationError:
            items.append(KnowledgeSource(text=""))  # keep the indexes of the items after it
    return items


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _platform_names() -> str:
    """The platforms a character can run on under the daemon, for messages."""
    return ", ".join(n for n, m in plugin_registry.available().items() if m.kind == "platform" and not m.interactive)


def _plugin_tail(name: str) -> str:
    """``@elizaos/plugin-discord`` → ``discord``."""
    return name.lower().rsplit("/", 1)[-1].removeprefix("plugin-").removeprefix("client-")


def _plugin_instead(name: str) -> str:
    """What troupe offers in place of an elizaOS plugin it does not have."""
    lowered = name.strip().lower()
    known = plugin_registry.available()
    # Compared without the package prefix, which every elizaOS name shares.
    by_tail: dict[str, str] = {}
    for meta in known.values():
        for alias in (*meta.aliases, meta.name):  # the elizaOS name first: it is what the file uses
            by_tail.setdefault(_plugin_tail(alias), alias)
    close = difflib.get_close_matches(_plugin_tail(lowered), list(by_tail), n=1, cutoff=0.85)
    if close:
        return f"did you mean {by_tail[close[0]]!r}?"
    if any(word in lowered for word in _MODEL_PLUGIN_WORDS):
        models = plugin_registry.model_plugin()
        return f"for models, the {models.name} plugin serves {models.models_hint}"
    if any(word in lowered for word in _PLATFORM_PLUGIN_WORDS):
        return f"troupe runs on {_platform_names()}"
    plugins = ", ".join(n for n, m in known.items() if m.kind == "plugin")
    return f"troupe's plugins are {plugins}"


def _resolve_plugins(plugins: list[str], clients: list[str], model_provider: str | None, result: LoadResult) -> None:
    seen: set[str] = set()

    def add(meta: plugin_registry.PluginMeta, preset: str | None) -> None:
        if preset:
            result.model_preset = preset
        if meta.name in seen:
            return
        seen.add(meta.name)
        (result.platforms if meta.kind == "platform" else result.plugins).append(meta.name)

    for i, name in enumerate(plugins):
        if name.strip().lower() in plugin_registry.BUILTIN:
            continue
        found = plugin_registry.resolve(name)
        if found is None:
            # elizaOS logs a plugin that fails to import and starts the agent without it; so does troupe.
            result.missing_plugins.append(name)
            result.warnings.append(
                Problem(
                    f"$.plugins[{i}]",
                    f"troupe has no plugin {name!r}; the character starts without it ({_plugin_instead(name)})",
                )
            )
            continue
        add(*found)
    for i, client in enumerate(clients):
        found = plugin_registry.resolve(client)
        if found is not None and found[0].kind == "platform":
            add(*found)
        elif client.lower() not in _SILENT_CLIENTS:
            result.warnings.append(
                Problem(
                    f"$.clients[{i}]", f"no troupe platform {client!r}; ignored (troupe runs on {_platform_names()})"
                )
            )

    if model_provider is not None:
        served = plugin_registry.for_model_provider(model_provider)
        if served is not None:
            add(*served)
        else:
            models = plugin_registry.model_plugin()
            add(models, None)
            result.warnings.append(
                Problem(
                    "$.modelProvider",
                    f"no troupe plugin for {model_provider!r}; the {models.name} plugin is used instead, and "
                    f"serves {models.models_hint}",
                )
            )


def _resolve_secrets(
    sources: dict[str, dict[str, str]], base_dir: Path, environ: Mapping[str, str] | None, result: LoadResult
) -> dict[str, SecretStr]:
    """Resolve every secret; later sources win (``secrets`` over ``settings.secrets``, DESIGN.md)."""
    resolved: dict[str, SecretStr] = {}
    for where, mapping in sources.items():
        for key, value in mapping.items():
            try:
                secret = resolve_secret(value, environ=environ, base_dir=base_dir)
            except SecretReferenceError as exc:
                result.problems.append(Problem(f"$.{where}.{key}", str(exc)))
                continue
            if secret is not None:
                resolved[key] = secret
    return resolved


def _check_knowledge(knowledge: list[KnowledgeSource], base_dir: Path, result: LoadResult) -> None:
    for i, item in enumerate(knowledge):
        if item.kind == "text":
            continue
        target = expand_home(item.path or item.directory or "")
        full = target if target.is_absolute() else base_dir / target
        mode = mode_of(full)
        if mode is None:
            result.problems.append(
                Problem(
                    f"$.knowledge[{i}].{item.kind}",
                    f"{shown(full)} does not exist; fix the path (relative to the character file)",
                )
            )
        elif item.kind == "directory" and not stat.S_ISDIR(mode):
            result.problems.append(
                Problem(f"$.knowledge[{i}].directory", f'{shown(full)} is a file; use "path" for a file')
            )


@dataclass(slots=True)
class CharacterFiles:
    """The character files command-line arguments name, and the folder entries passed over."""

    paths: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    """Entries of a scanned folder that are not read, each with why."""


def find_character(name: str, *, search_dir: Path = Path("characters")) -> Path:
    """The file a character argument means: the path itself when it exists, else the first of
    ``NAME.json``, ``NAME.character.json`` and the same in ``search_dir`` that is a file.

    A name that matches nothing is returned as given, so loading reports it.
    """
    path = Path(name)
    if mode_of(path) is not None:
        return path
    for folder in (Path(), search_dir):
        for candidate in (folder / f"{name}.json", folder / f"{name}.character.json"):
            mode = mode_of(candidate)
            if mode is not None and stat.S_ISREG(mode):
                return candidate
    return path


def _skip_reason(entry: Path) -> str | None:
    """Why a folder scan passes over ``entry``, or ``None`` to read it."""
    if not entry.name.lower().endswith(".json"):
        return "not a .json file"
    try:
        mode = entry.stat().st_mode
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc.__class__.__name__})"
    if stat.S_ISDIR(mode):
        return "a folder (folders inside are not searched)"
    if not stat.S_ISREG(mode):
        return f"{describe_kind(mode)}, not a regular file"
    return None


def scan_character_files(args: Iterable[str], *, search_dir: Path = Path("characters")) -> CharacterFiles:
    """Turn command-line arguments into character files.

    Accepts files (whatever their name), folders (their ``*.json`` regular files; every other
    entry is listed in ``skipped`` with why), comma-separated lists, and bare names (see
    :func:`find_character`).
    """
    found = CharacterFiles()
    for arg in args:
        for part in (p.strip() for p in arg.split(",")):
            if not part:
                continue
            path = Path(part)
            mode = mode_of(path)
            if mode is None or not stat.S_ISDIR(mode):
                found.paths.append(find_character(part, search_dir=search_dir))
                continue
            try:
                entries = sorted(path.iterdir())
            except OSError as exc:
                found.skipped.append((path, f"cannot list the folder ({exc.strerror or exc.__class__.__name__})"))
                continue
            for entry in entries:
                reason = _skip_reason(entry)
                if reason is None:
                    found.paths.append(entry)
                else:
                    found.skipped.append((entry, reason))
    return found


def load_characters(paths: Iterable[str | Path], *, environ: Mapping[str, str] | None = None) -> list[LoadResult]:
    """Load several files and flag characters that would share an agent id or a name."""
    results = [load_character(p, environ=environ) for p in paths]
    by_id: dict[str, LoadResult] = {}
    by_name: dict[str, LoadResult] = {}
    for result in results:
        character = result.character
        if character is None:
            continue
        first = by_id.get(character.agent_id)
        if first is not None and file_key(first.source) == file_key(result.source):
            result.problems.append(Problem("$", "this file is listed twice"))
            continue
        if first is not None:
            result.problems.append(
                Problem(
                    "$.id" if character.id else "$.name",
                    f"agent id {character.agent_id} is already used by {first.source}; "
                    'give one of them a different "name" or an explicit "id"',
                )
            )
        else:
            by_id[character.agent_id] = result
        other = by_name.get(character.name.casefold())
        if other is not None and first is None:
            result.problems.append(
                Problem("$.name", f"{other.source} already has a character named {character.name!r}; rename one")
            )
        else:
            by_name.setdefault(character.name.casefold(), result)
    return results
