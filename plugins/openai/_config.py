"""Which endpoints, keys and models one agent's openai plugin uses (the settings docs/models.md lists).

Pure: reads settings through ``runtime.get_setting`` and builds a :class:`ProviderConfig`;
it imports no SDK and makes no network call.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from pydantic import SecretStr

from bot.sdk import ConfigError, ModelType, SettingReader, SettingUnset

from ._structured import OutputForm

__all__ = [
    "Endpoint",
    "NO_EMBEDDINGS",
    "ProviderConfig",
    "ServerKind",
    "display_url",
    "is_nearby",
    "model_sets_length",
    "ollama_base_url",
    "resolve_config",
]

OPENAI_BASE_URL = "https://api.openai.com/v1"
OLLAMA_BASE_URL = "http://localhost:11434/v1"
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
# The bound on a text call whose caller gives none (troupe's own calls each give theirs): room
# for a long answer, not for a weak model running on to the end of its context.
_DEFAULT_MAX_TOKENS = 4096

#: The embedding model setting that turns embeddings off: memory and knowledge search by keywords.
NO_EMBEDDINGS = "none"

#: The longest vector ``OPENAI_EMBEDDING_DIMENSIONS`` may ask for (the store's limit).
_MAX_DIMENSIONS = 16000

# What a server that takes no key (Ollama, llama.cpp, vLLM) is sent: the openai client insists
# on some key, and sending the agent's real OpenAI key to another host would leak it.
_NO_KEY = "no-key"

# A server on a CPU takes minutes for a long answer, and one that is still busy with an abandoned
# request would only queue a retry behind it: one try, long enough, and no second one.
_LOCAL_TIMEOUT_S = 300.0
_CLOUD_TIMEOUT_S = 30.0  # 3 tries + back-off stay inside MODEL_TIMEOUT_S (120 s)
# A window smaller than this leaves no room for a prompt and a reply; larger than this is a typo.
_MIN_CONTEXT = 512
_MAX_CONTEXT = 10_000_000

_ALL_TYPES = frozenset(ModelType)
_CHAT_TYPES = frozenset(
    {ModelType.TEXT_SMALL, ModelType.TEXT_LARGE, ModelType.OBJECT_SMALL, ModelType.OBJECT_LARGE, ModelType.TEXT_TOOLS}
)


class _Runtime(Protocol):
    @property
    def agent_id(self) -> str: ...

    @property
    def model_preset(self) -> str | None: ...

    def get_setting(self, key: str) -> str | None: ...


class ServerKind(Enum):
    """How the chat server serves requests (``OPENAI_SERVER``), which sets the defaults."""

    CLOUD = "cloud"
    """Many requests at once; a timed-out request is tried again (OpenAI, OpenRouter, vLLM)."""
    LOCAL = "local"
    """One request at a time, slowly, and on with a request whose client hung up (llama.cpp,
    llama-cpp-python, Ollama on a small machine): requests wait their turn, each try has
    minutes, and a timed-out one is not sent again."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One OpenAI-compatible server and the key it is sent."""

    provider: str
    """Name the handlers register under and errors name (``openai``, ``ollama``, ``openrouter``)."""
    base_url: str
    api_key: SecretStr
    key_setting: str
    """The setting to check when the key is refused."""

    def __repr__(self) -> str:
        return f"Endpoint({self.provider!r}, {display_url(self.base_url)!r}, api_key=<redacted>)"


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """Everything one agent's openai plugin needs to register its handlers."""

    preset: str
    """``openai``, ``ollama`` or ``openrouter``."""
    priority: int
    chat: Endpoint
    embedding: Endpoint | None
    """``None`` when this preset serves no embeddings (the embedding model is ``none``, or
    OpenRouter without an OpenAI key)."""
    types: frozenset[ModelType]
    """The model types to register."""
    small_model: str
    large_model: str
    embedding_model: str
    embedding_dimensions: int | None
    """The vector length asked for (text-embedding-3) or checked; ``None``: the model's own,
    learned from its first answer."""
    transcription_model: str
    image_model: str
    image_max_tokens: int
    max_tokens: int
    """What a text call may write when its caller gives no bound (``OPENAI_MAX_TOKENS``)."""
    drawing_model: str
    """The IMAGE model (``OPENAI_IMAGE_MODEL``, or ``IMAGE_MODEL``): pictures drawn through
    ``/images/generations``."""
    image_size: str
    tts_model: str
    tts_voice: str
    tts_instructions: str | None
    timeout_s: float
    """Each try's limit (``OPENAI_TIMEOUT_S``)."""
    max_retries: int
    """Tries after the first (``OPENAI_MAX_RETRIES``): for 408/409/429/5xx, a refused connection,
    and on a cloud server a timeout."""
    server: ServerKind
    """``OPENAI_SERVER``; the preset's own kind when unset (local for ollama)."""
    max_concurrency: int
    """Requests a server (base URL) is sent at once by all the daemon's characters (``OPENAI_MAX_CONCURRENCY``);
    0 for no limit. The others wait their turn, in order."""

    @property
    def retries_timeouts(self) -> bool:
        """Whether a try that timed out is sent again: not to a local server, still busy with it."""
        return self.server is ServerKind.CLOUD

    structured_output: OutputForm = OutputForm.JSON_SCHEMA
    """The first form a schema is asked in (``OPENAI_STRUCTURED_OUTPUT``); a refused one falls
    back to the next (``_structured``)."""
    context_length: int | None = None
    """``MODEL_CONTEXT_LENGTH``: the text models' context window in tokens; ``None`` when unset
    (the preset's guess, or what the server's refusal says: ``_context``)."""

    def endpoints(self) -> list[Endpoint]:
        """Each distinct endpoint once (chat first)."""
        found = [self.chat]
        if self.embedding is not None and self.embedding != self.chat:
            found.append(self.embedding)
        return found


def model_sets_length(model: str) -> bool:
    """Whether the embedding ``model`` returns vectors of the length it is asked for
    (``dimensions``): OpenAI's text-embedding-3 models."""
    return model.startswith("text-embedding-3")


def display_url(url: str) -> str:
    """``url`` without credentials or query, fit for logs and error messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def is_nearby(url: str) -> bool:
    """Whether ``url`` names this machine or a private network's address (read, not resolved)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private


def ollama_base_url(endpoint: str) -> str:
    """The OpenAI-compatible address for an ``OLLAMA_API_ENDPOINT``.

    elizaOS documents the native API (``…/api``); the openai client needs ``…/v1``.
    """
    url = endpoint.strip().rstrip("/")
    if url.endswith("/api"):
        return url[: -len("/api")] + "/v1"
    if urlsplit(url).path in ("", "/"):
        return url + "/v1"
    return url


def resolve_config(runtime: _Runtime, *, agent: str) -> ProviderConfig:
    """Read this agent's settings for its preset (``runtime.model_preset``).

    ``agent`` is the name messages use. Raises :class:`~bot.kernel.errors.ConfigError` naming the agent
    and the setting to fix; never includes a secret.
    """
    settings = _Settings(runtime.get_setting, agent)
    preset = (runtime.model_preset or "openai").strip().lower()
    if preset == "openai":
        return _openai(settings)
    if preset == "ollama":
        return _ollama(settings)
    if preset == "openrouter":
        return _openrouter(settings)
    raise ConfigError(f"unknown model preset {preset!r} for plugin openai; use ollama, openrouter or none", agent=agent)


class _Settings(SettingReader):
    """Typed, validated reads of one agent's settings, plus the ones only this plugin has."""

    def dimensions(self, model: str) -> int | None:
        """``OPENAI_EMBEDDING_DIMENSIONS``: the length text-embedding-3 models are asked for
        (1536 by default), and checked for others; unset, any model's length is taken."""
        raw = self.optional("OPENAI_EMBEDDING_DIMENSIONS")
        if raw is None:
            return 1536 if model_sets_length(model) else None
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if not 1 <= value <= _MAX_DIMENSIONS:
            raise ConfigError(
                f"OPENAI_EMBEDDING_DIMENSIONS is {raw!r}; use the embedding model's vector length "
                f"(a whole number from 1 to {_MAX_DIMENSIONS}), or leave it unset to take the model's own",
                agent=self.agent,
            )
        return value

    def embedding_model(self, key: str, default: str) -> str | None:
        """The embedding model named by ``key``; None when it is ``none`` (embeddings off)."""
        model = self.get(key, default)
        return None if model.strip().lower() == NO_EMBEDDINGS else model

    def server(self, default: ServerKind) -> ServerKind:
        raw = self.optional("OPENAI_SERVER")
        if raw is None:
            return default
        try:
            return ServerKind(raw.lower())
        except ValueError:
            raise ConfigError(
                f"OPENAI_SERVER must be local (a server that answers one request at a time, such as "
                f"llama.cpp or Ollama on a CPU) or cloud, not {raw!r}",
                agent=self.agent,
            ) from None

    def config(self, *, server: ServerKind = ServerKind.CLOUD, **preset: Any) -> ProviderConfig:
        """A :class:`ProviderConfig` of the preset's fields plus the settings every preset shares;
        ``server`` is the preset's kind of server unless ``OPENAI_SERVER`` says otherwise."""
        kind = self.server(server)
        local = kind is ServerKind.LOCAL
        if not self.flag("OPENAI_TOOLS", True):  # a server that cannot call tools: offered another way
            preset["types"] = preset["types"] - {ModelType.TEXT_TOOLS}
        return ProviderConfig(
            transcription_model=self.get("OPENAI_TRANSCRIPTION_MODEL", "whisper-1"),
            image_max_tokens=self.count("OPENAI_IMAGE_DESCRIPTION_MAX_TOKENS", 8192, minimum=1),
            max_tokens=self.count("OPENAI_MAX_TOKENS", _DEFAULT_MAX_TOKENS, minimum=1),
            drawing_model=self.optional("OPENAI_IMAGE_MODEL") or self.get("IMAGE_MODEL", "dall-e-3"),
            image_size=self.image_size(),
            tts_model=self.get("OPENAI_TTS_MODEL", "gpt-4o-mini-tts"),
            tts_voice=self.get("OPENAI_TTS_VOICE", "nova"),
            tts_instructions=self.optional("OPENAI_TTS_INSTRUCTIONS"),
            timeout_s=self.positive_float("OPENAI_TIMEOUT_S", _LOCAL_TIMEOUT_S if local else _CLOUD_TIMEOUT_S),
            max_retries=self.count("OPENAI_MAX_RETRIES", 2),
            server=kind,
            max_concurrency=self.count("OPENAI_MAX_CONCURRENCY", 1 if local else 0),
            context_length=self.context_length(),
            **preset,
        )

    def structured_output(self, default: OutputForm) -> OutputForm:
        """``OPENAI_STRUCTURED_OUTPUT``: the form a schema is first asked in, or none."""
        raw = self.optional("OPENAI_STRUCTURED_OUTPUT")
        if raw is None:
            return default
        try:
            return OutputForm(raw.strip().lower())
        except ValueError:
            forms = ", ".join(form.value for form in OutputForm)
            raise ConfigError(
                f"OPENAI_STRUCTURED_OUTPUT is {raw!r}; use one of {forms} (json_object_schema for "
                f"llama-cpp-python's server, none for a server that takes no JSON schema)",
                agent=self.agent,
            ) from None

    def context_length(self) -> int | None:
        """``MODEL_CONTEXT_LENGTH``, checked; ``None`` when unset."""
        if self.optional("MODEL_CONTEXT_LENGTH") is None:
            return None
        return self.whole("MODEL_CONTEXT_LENGTH", _MIN_CONTEXT, _MIN_CONTEXT, _MAX_CONTEXT)

    def image_size(self) -> str:
        """``OPENAI_IMAGE_SIZE`` or ``IMAGE_SIZE``: ``<width>x<height>`` or ``auto``."""
        key = "OPENAI_IMAGE_SIZE" if self.optional("OPENAI_IMAGE_SIZE") else "IMAGE_SIZE"
        raw = self.get(key, "1024x1024").lower()
        if raw != "auto" and not re.fullmatch(r"[1-9][0-9]{1,4}x[1-9][0-9]{1,4}", raw):
            raise ConfigError(
                f"{key} is {raw!r}; use a width and height in pixels such as 1024x1024, or auto", agent=self.agent
            )
        return raw

    def openai_embedding(self, *, default_url: str, fallback_key: str | None) -> Endpoint:
        """The embeddings endpoint: ``OPENAI_EMBEDDING_URL`` and ``OPENAI_EMBEDDING_API_KEY`` win."""
        key = self.optional("OPENAI_EMBEDDING_API_KEY")
        return Endpoint(
            provider="openai",
            base_url=self.get("OPENAI_EMBEDDING_URL", default_url),
            api_key=SecretStr(key or fallback_key or _NO_KEY),
            key_setting="OPENAI_EMBEDDING_API_KEY" if key else "OPENAI_API_KEY",
        )


def _openai(s: _Settings) -> ProviderConfig:
    key = s.optional("OPENAI_API_KEY")
    base_url = s.optional("OPENAI_BASE_URL")
    if key is None and base_url is None:
        raise SettingUnset(
            f"no OpenAI-compatible endpoint is configured for plugin openai; set OPENAI_API_KEY, "
            f"or OPENAI_BASE_URL for a local server such as Ollama ({OLLAMA_BASE_URL})",
            settings=("OPENAI_API_KEY", "OPENAI_BASE_URL"),
            agent=s.agent,
        )
    chat = Endpoint("openai", base_url or OPENAI_BASE_URL, SecretStr(key or _NO_KEY), "OPENAI_API_KEY")
    embedding_model = s.embedding_model("OPENAI_EMBEDDING_MODEL", "text-embedding-3-small")
    # OpenAI draws; another server only when an image model is named for it (most local servers
    # have no /images/generations): without one, GENERATE_IMAGE says there is nothing to draw with.
    draws = chat.base_url.rstrip("/") == OPENAI_BASE_URL or bool(
        s.optional("OPENAI_IMAGE_MODEL") or s.optional("IMAGE_MODEL")
    )
    types = _ALL_TYPES if draws else _ALL_TYPES - {ModelType.IMAGE}
    return s.config(
        preset="openai",
        priority=50,
        chat=chat,
        embedding=s.openai_embedding(default_url=chat.base_url, fallback_key=key) if embedding_model else None,
        types=types if embedding_model else types - {ModelType.TEXT_EMBEDDING},
        small_model=s.get("OPENAI_SMALL_MODEL", "gpt-4o-mini"),
        large_model=s.get("OPENAI_LARGE_MODEL", "gpt-4o"),
        embedding_model=embedding_model or NO_EMBEDDINGS,
        embedding_dimensions=s.dimensions(embedding_model) if embedding_model else None,
        image_model=s.get("OPENAI_IMAGE_DESCRIPTION_MODEL", "gpt-4o-mini"),
        # OpenAI takes json_schema; another server (vLLM, llama.cpp) starts there and falls back.
        structured_output=s.structured_output(OutputForm.JSON_SCHEMA),
    )


def _ollama(s: _Settings) -> ProviderConfig:
    # Only OLLAMA_* settings choose the server: OPENAI_BASE_URL in the daemon's environment is
    # meant for the agents that use OpenAI itself.
    endpoint = s.optional("OLLAMA_API_ENDPOINT")
    base_url = ollama_base_url(endpoint) if endpoint else OLLAMA_BASE_URL
    server = Endpoint("ollama", base_url, SecretStr("ollama"), "OLLAMA_API_ENDPOINT")
    embedding_model = s.embedding_model("OLLAMA_EMBEDDING_MODEL", "nomic-embed-text")
    small = s.get("OLLAMA_SMALL_MODEL", "llama3.2")
    return s.config(
        server=ServerKind.LOCAL,  # Ollama on a small machine answers one request at a time
        preset="ollama",
        priority=10,
        chat=server,
        embedding=server if embedding_model else None,
        # Ollama's OpenAI-compatible API has no audio endpoints; other plugins serve those.
        types=_CHAT_TYPES | {ModelType.TEXT_EMBEDDING} if embedding_model else _CHAT_TYPES,
        small_model=small,
        large_model=s.get("OLLAMA_LARGE_MODEL", "llama3.1:70b"),
        embedding_model=embedding_model or NO_EMBEDDINGS,
        embedding_dimensions=s.dimensions(embedding_model) if embedding_model else None,
        image_model=small,
        structured_output=s.structured_output(OutputForm.JSON_SCHEMA),  # Ollama takes it since 0.5
    )


def _openrouter(s: _Settings) -> ProviderConfig:
    key = s.optional("OPENROUTER_API_KEY")
    if key is None:
        raise ConfigError(
            "plugin openrouter needs OPENROUTER_API_KEY (create one at https://openrouter.ai/keys)", agent=s.agent
        )
    chat = Endpoint(
        "openrouter", s.get("OPENROUTER_BASE_URL", OPENROUTER_BASE_URL), SecretStr(key), "OPENROUTER_API_KEY"
    )
    # OpenRouter serves no embeddings; use OpenAI's (or another server's) when one is configured,
    # otherwise register none and let another plugin serve them.
    openai_key = s.optional("OPENAI_API_KEY")
    embedding: Endpoint | None = None
    embedding_model = s.embedding_model("OPENAI_EMBEDDING_MODEL", "text-embedding-3-small")
    wanted = openai_key or s.optional("OPENAI_EMBEDDING_URL") or s.optional("OPENAI_EMBEDDING_API_KEY")
    if embedding_model and wanted:
        embedding = s.openai_embedding(default_url=OPENAI_BASE_URL, fallback_key=openai_key)
    types = _CHAT_TYPES | {ModelType.IMAGE_DESCRIPTION}
    return s.config(
        preset="openrouter",
        priority=50,
        chat=chat,
        embedding=embedding,
        types=types | {ModelType.TEXT_EMBEDDING} if embedding else types,
        small_model=s.get("OPENROUTER_SMALL_MODEL", "google/gemini-2.0-flash-001"),
        large_model=s.get("OPENROUTER_LARGE_MODEL", "google/gemini-2.5-flash-preview-05-20"),
        embedding_model=embedding_model or NO_EMBEDDINGS,
        embedding_dimensions=s.dimensions(embedding_model) if embedding and embedding_model else None,
        image_model=s.get("OPENROUTER_IMAGE_MODEL", "anthropic/claude-3-5-sonnet"),
        # Passed on to the models that take it; a model that does not refuses, and falls back.
        structured_output=s.structured_output(OutputForm.JSON_SCHEMA),
    )
