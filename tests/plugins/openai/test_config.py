"""Settings resolution per agent and preset; setup's registrations and configuration errors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

import plugins.openai
from bot.config.character import Character
from bot.config.settings import SettingsView
from bot.kernel.errors import ConfigError
from bot.kernel.models import ModelType
from plugins.openai import NO_EMBEDDINGS, ProviderConfig, ServerKind, resolve_config
from plugins.openai._config import display_url, is_nearby, ollama_base_url

from ..fake_runtime import FakeRuntime
from .conftest import KEY, OTHER_KEY

MakeRuntime = Callable[..., Awaitable[FakeRuntime]]
CHAT = {
    ModelType.TEXT_SMALL,
    ModelType.TEXT_LARGE,
    ModelType.OBJECT_SMALL,
    ModelType.OBJECT_LARGE,
    ModelType.TEXT_TOOLS,
}


def resolve(settings: dict[str, str], preset: str | None = None) -> ProviderConfig:
    return resolve_config(FakeRuntime(settings=settings, model_preset=preset), agent="Ada")


def test_openai_defaults_follow_the_reference() -> None:
    config = resolve({"OPENAI_API_KEY": KEY})
    assert config.preset == "openai" and config.priority == 50
    assert config.chat.provider == "openai"
    assert config.chat.base_url == "https://api.openai.com/v1"
    assert config.chat.api_key.get_secret_value() == KEY
    assert config.embedding == config.chat
    assert config.types == frozenset(ModelType)
    assert (config.small_model, config.large_model) == ("gpt-4o-mini", "gpt-4o")
    assert (config.embedding_model, config.embedding_dimensions) == ("text-embedding-3-small", 1536)
    assert config.transcription_model == "whisper-1"
    assert config.image_model == "gpt-4o-mini"
    assert (config.tts_model, config.tts_voice, config.tts_instructions) == ("gpt-4o-mini-tts", "nova", None)
    assert (config.timeout_s, config.max_retries) == (30.0, 2)
    assert (config.server, config.max_concurrency, config.retries_timeouts) == (ServerKind.CLOUD, 0, True)


@pytest.mark.parametrize(
    ("settings", "preset"),
    [
        ({"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "OPENAI_SERVER": "local"}, None),
        ({"OPENAI_BASE_URL": "http://gpu-box:8000/v1", "OPENAI_SERVER": " LOCAL "}, None),
        ({}, "ollama"),
    ],
)
def test_a_local_server_takes_one_request_at_a_time_with_minutes_for_each(
    settings: dict[str, str], preset: str | None
) -> None:
    config = resolve(settings, preset)
    assert (config.server, config.max_concurrency, config.timeout_s, config.max_retries) == (
        ServerKind.LOCAL,
        1,
        300.0,
        2,
    )
    assert not config.retries_timeouts


def test_a_local_servers_defaults_give_way_to_settings() -> None:
    overrides = {"OPENAI_MAX_CONCURRENCY": "3", "OPENAI_TIMEOUT_S": "600", "OPENAI_MAX_RETRIES": "0"}
    config = resolve({"OPENAI_SERVER": "local", **overrides}, "ollama")
    assert (config.max_concurrency, config.timeout_s, config.max_retries) == (3, 600.0, 0)
    assert resolve({"OPENAI_SERVER": "cloud"}, "ollama").server is ServerKind.CLOUD  # Ollama on a GPU, say
    unlimited = resolve(
        {"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "OPENAI_SERVER": "local", "OPENAI_MAX_CONCURRENCY": "0"}
    )
    assert (unlimited.max_concurrency, unlimited.retries_timeouts) == (0, False)
    cloud = resolve({"OPENAI_API_KEY": KEY, "OPENAI_MAX_CONCURRENCY": "8"})
    assert (cloud.server, cloud.max_concurrency, cloud.timeout_s) == (ServerKind.CLOUD, 8, 30.0)


@pytest.mark.parametrize(
    ("url", "nearby"),
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://192.168.1.20:8080/v1", True),
        ("http://10.0.0.5/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://gpu-box:8000/v1", False),  # a name is not looked up
        ("http://8.8.8.8/v1", False),
    ],
)
def test_a_server_nearby_is_told_by_its_address(url: str, nearby: bool) -> None:
    assert is_nearby(url) is nearby


def test_openai_settings_override_every_default() -> None:
    config = resolve(
        {
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": "http://vllm:8000/v1",
            "OPENAI_SMALL_MODEL": "small",
            "OPENAI_LARGE_MODEL": "large",
            "OPENAI_EMBEDDING_MODEL": "text-embedding-3-large",
            "OPENAI_EMBEDDING_DIMENSIONS": "3072",
            "OPENAI_EMBEDDING_URL": "http://embed:9000/v1",
            "OPENAI_EMBEDDING_API_KEY": "sk-embedding-key-9999",
            "OPENAI_TRANSCRIPTION_MODEL": "whisper-large",
            "OPENAI_IMAGE_DESCRIPTION_MODEL": "vision",
            "OPENAI_TTS_MODEL": "tts-1",
            "OPENAI_TTS_VOICE": "alloy",
            "OPENAI_TTS_INSTRUCTIONS": "Speak softly.",
            "OPENAI_TIMEOUT_S": "2.5",
            "OPENAI_MAX_RETRIES": "0",
        }
    )
    assert config.chat.base_url == "http://vllm:8000/v1"
    assert config.embedding is not None
    assert config.embedding.base_url == "http://embed:9000/v1"
    assert config.embedding.api_key.get_secret_value() == "sk-embedding-key-9999"
    assert config.embedding.key_setting == "OPENAI_EMBEDDING_API_KEY"
    assert (config.small_model, config.large_model, config.embedding_dimensions) == ("small", "large", 3072)
    assert (config.transcription_model, config.image_model) == ("whisper-large", "vision")
    assert (config.tts_model, config.tts_voice, config.tts_instructions) == ("tts-1", "alloy", "Speak softly.")
    assert (config.timeout_s, config.max_retries) == (2.5, 0)
    assert len(config.endpoints()) == 2


def test_a_base_url_without_a_key_is_enough_for_a_local_server() -> None:
    config = resolve({"OPENAI_BASE_URL": "http://localhost:11434/v1"})
    assert config.chat.base_url == "http://localhost:11434/v1"
    assert config.chat.api_key.get_secret_value() == "no-key"


def test_blank_settings_count_as_unset() -> None:
    config = resolve({"OPENAI_API_KEY": KEY, "OPENAI_SMALL_MODEL": "  ", "OPENAI_BASE_URL": ""})
    assert config.small_model == "gpt-4o-mini"
    assert config.chat.base_url == "https://api.openai.com/v1"


async def test_setup_without_key_or_base_url_says_what_to_set() -> None:
    runtime = FakeRuntime(settings={})
    expected = r"^Ada: .*set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server such as Ollama"
    with pytest.raises(ConfigError, match=expected):
        await plugins.openai.setup(runtime)
    assert runtime.models == [] and runtime.closers == []


@pytest.mark.parametrize("value", ["0", "16001", "lots", "-1"])
def test_embedding_dimensions_no_store_takes_are_refused(value: str) -> None:
    expected = (
        rf"^Ada: OPENAI_EMBEDDING_DIMENSIONS is '{value}'; use the embedding model's vector length "
        r"\(a whole number from 1 to 16000\), or leave it unset to take the model's own$"
    )
    with pytest.raises(ConfigError, match=expected):
        resolve({"OPENAI_API_KEY": KEY, "OPENAI_EMBEDDING_DIMENSIONS": value})


@pytest.mark.parametrize("model", ["nomic-embed-text", "bge-m3", "smollm2-embed"])
def test_any_embedding_model_takes_its_own_length_or_the_one_set(model: str) -> None:
    config = resolve({"OPENAI_API_KEY": KEY, "OPENAI_EMBEDDING_MODEL": model})
    assert config.embedding_dimensions is None  # learned from the model's first answer
    config = resolve({"OPENAI_API_KEY": KEY, "OPENAI_EMBEDDING_MODEL": model, "OPENAI_EMBEDDING_DIMENSIONS": "576"})
    assert config.embedding_dimensions == 576


def test_text_embedding_3_is_asked_for_1536_unless_set() -> None:
    assert (
        resolve({"OPENAI_API_KEY": KEY, "OPENAI_EMBEDDING_MODEL": "text-embedding-3-large"}).embedding_dimensions
        == 1536
    )


@pytest.mark.parametrize(
    ("preset", "settings", "setting"),
    [
        (None, {"OPENAI_API_KEY": KEY, "OPENAI_EMBEDDING_MODEL": "none"}, "OPENAI_EMBEDDING_MODEL"),
        (
            None,
            {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_EMBEDDING_MODEL": "None"},
            "OPENAI_EMBEDDING_MODEL",
        ),
        ("ollama", {"OLLAMA_EMBEDDING_MODEL": "none"}, "OLLAMA_EMBEDDING_MODEL"),
        (
            "openrouter",
            {"OPENROUTER_API_KEY": KEY, "OPENAI_API_KEY": KEY, "OPENAI_EMBEDDING_MODEL": "none"},
            "OPENAI_EMBEDDING_MODEL",
        ),
    ],
)
def test_embedding_model_none_turns_embeddings_off_and_check_says_so(
    preset: str | None, settings: dict[str, str], setting: str
) -> None:
    config = resolve(settings, preset=preset)
    assert config.embedding is None and ModelType.TEXT_EMBEDDING not in config.types
    assert (config.embedding_model, config.embedding_dimensions) == (NO_EMBEDDINGS, None)
    assert config.types & CHAT == CHAT
    ada = Character(name="Ada", bio=["A test character."])
    assert plugins.openai.check(SettingsView(ada, settings, preset)) == [
        f"embeddings are off ({setting} is none): memory and knowledge are searched by keywords alone"
    ]
    assert plugins.openai.check(SettingsView(ada, {"OPENAI_API_KEY": KEY})) == []


async def test_embedding_model_none_registers_no_embedding_handler(make_runtime: MakeRuntime) -> None:
    runtime = await make_runtime({"OPENAI_API_KEY": KEY, "OPENAI_EMBEDDING_MODEL": "none"})
    assert ModelType.TEXT_EMBEDDING not in {r.model_type for r in runtime.models}
    assert ModelType.TEXT_SMALL in {r.model_type for r in runtime.models}


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("OPENAI_TIMEOUT_S", "0", "OPENAI_TIMEOUT_S must be a positive number, not '0'"),
        ("OPENAI_TIMEOUT_S", "soon", "OPENAI_TIMEOUT_S must be a positive number"),
        ("OPENAI_MAX_RETRIES", "-1", "OPENAI_MAX_RETRIES must be a whole number, 0 or more, not '-1'"),
        ("OPENAI_MAX_RETRIES", "2.5", "OPENAI_MAX_RETRIES must be a whole number"),
        ("OPENAI_MAX_CONCURRENCY", "-1", "OPENAI_MAX_CONCURRENCY must be a whole number, 0 or more, not '-1'"),
        ("OPENAI_SERVER", "laptop", "OPENAI_SERVER must be local \\(a server that answers one request at a time"),
    ],
)
def test_bad_numbers_name_the_setting(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=f"^Ada: {message}"):
        resolve({"OPENAI_API_KEY": KEY, key: value})


def test_an_unknown_preset_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown model preset 'anthropic'"):
        resolve({"OPENAI_API_KEY": KEY}, preset="anthropic")


# -- ollama -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "base_url"),
    [
        ("http://localhost:11434/api", "http://localhost:11434/v1"),
        ("http://gpu-box:11434/api/", "http://gpu-box:11434/v1"),
        ("http://gpu-box:11434", "http://gpu-box:11434/v1"),
        ("http://gpu-box:11434/", "http://gpu-box:11434/v1"),
        ("http://gpu-box:11434/v1", "http://gpu-box:11434/v1"),
        ("https://proxy.example/ollama/v1", "https://proxy.example/ollama/v1"),
    ],
)
def test_ollama_endpoint_is_rewritten_to_the_openai_compatible_route(endpoint: str, base_url: str) -> None:
    assert ollama_base_url(endpoint) == base_url
    assert resolve({"OLLAMA_API_ENDPOINT": endpoint}, preset="ollama").chat.base_url == base_url


def test_ollama_defaults() -> None:
    config = resolve({}, preset="ollama")
    assert config.preset == "ollama" and config.priority == 10
    assert config.chat.provider == "ollama"
    assert config.chat.base_url == "http://localhost:11434/v1"
    assert config.chat.api_key.get_secret_value() == "ollama"
    assert config.embedding == config.chat
    assert (config.small_model, config.large_model) == ("llama3.2", "llama3.1:70b")
    assert (config.embedding_model, config.embedding_dimensions) == ("nomic-embed-text", None)
    assert config.types == CHAT | {ModelType.TEXT_EMBEDDING}


def test_ollama_uses_its_own_settings_not_the_daemons_openai_ones() -> None:
    config = resolve(
        {
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": "https://api.openai.com/v1",
            "OLLAMA_SMALL_MODEL": "qwen2.5",
            "OLLAMA_LARGE_MODEL": "qwen2.5:32b",
            "OLLAMA_EMBEDDING_MODEL": "mxbai-embed-large",
        },
        preset="ollama",
    )
    assert config.chat.base_url == "http://localhost:11434/v1"
    assert config.chat.api_key.get_secret_value() == "ollama"
    assert (config.small_model, config.large_model) == ("qwen2.5", "qwen2.5:32b")
    assert (config.embedding_model, config.embedding_dimensions) == ("mxbai-embed-large", None)


def test_ollama_embedding_dimensions_can_be_set() -> None:
    config = resolve({"OPENAI_EMBEDDING_DIMENSIONS": "512"}, preset="ollama")
    assert config.embedding_dimensions == 512


# -- openrouter -------------------------------------------------------------------------------


def test_openrouter_needs_its_key() -> None:
    with pytest.raises(ConfigError, match="^Ada: plugin openrouter needs OPENROUTER_API_KEY"):
        resolve({"OPENAI_API_KEY": KEY}, preset="openrouter")


def test_openrouter_defaults_and_no_embeddings_without_openai() -> None:
    config = resolve({"OPENROUTER_API_KEY": "sk-or-test-key-7777"}, preset="openrouter")
    assert config.preset == "openrouter" and config.priority == 50
    assert config.chat.provider == "openrouter"
    assert config.chat.base_url == "https://openrouter.ai/api/v1"
    assert config.chat.key_setting == "OPENROUTER_API_KEY"
    assert config.small_model == "google/gemini-2.0-flash-001"
    assert config.large_model == "google/gemini-2.5-flash-preview-05-20"
    assert config.image_model == "anthropic/claude-3-5-sonnet"
    assert config.embedding is None
    assert config.types == CHAT | {ModelType.IMAGE_DESCRIPTION}


def test_openrouter_takes_embeddings_from_openai_when_a_key_is_there() -> None:
    config = resolve({"OPENROUTER_API_KEY": "sk-or-test-key-7777", "OPENAI_API_KEY": KEY}, preset="openrouter")
    assert config.embedding is not None
    assert config.embedding.provider == "openai"
    assert config.embedding.base_url == "https://api.openai.com/v1"
    assert config.embedding.api_key.get_secret_value() == KEY
    assert ModelType.TEXT_EMBEDDING in config.types
    assert config.embedding_dimensions == 1536


def test_openrouter_takes_embeddings_from_a_keyless_local_server() -> None:
    config = resolve(
        {
            "OPENROUTER_API_KEY": "sk-or-test-key-7777",
            "OPENAI_EMBEDDING_URL": "http://localhost:11434/v1",
            "OPENAI_EMBEDDING_MODEL": "nomic-embed-text",
        },
        preset="openrouter",
    )
    assert config.embedding is not None
    assert config.embedding.base_url == "http://localhost:11434/v1"
    assert config.embedding.api_key.get_secret_value() == "no-key"
    assert config.embedding_dimensions is None


# -- setup ------------------------------------------------------------------------------------

NOT_DRAWING = [t for t in ModelType if t is not ModelType.IMAGE]


@pytest.mark.parametrize(
    ("preset", "settings", "expected"),
    [
        (None, {"OPENAI_API_KEY": KEY}, {t: ("openai", 50) for t in ModelType}),
        # Another server draws only when an image model is named for it.
        (None, {"OPENAI_BASE_URL": "http://localhost:8080/v1"}, {t: ("openai", 50) for t in NOT_DRAWING}),
        (
            None,
            {"OPENAI_BASE_URL": "http://localhost:8080/v1", "IMAGE_MODEL": "sdxl"},
            {t: ("openai", 50) for t in ModelType},
        ),
        ("ollama", {}, {**{t: ("ollama", 10) for t in CHAT}, ModelType.TEXT_EMBEDDING: ("ollama", 10)}),
        (
            "openrouter",
            {"OPENROUTER_API_KEY": "sk-or-x"},
            {**{t: ("openrouter", 50) for t in CHAT}, ModelType.IMAGE_DESCRIPTION: ("openrouter", 50)},
        ),
        (
            "openrouter",
            {"OPENROUTER_API_KEY": "sk-or-x", "OPENAI_API_KEY": KEY},
            {
                **{t: ("openrouter", 50) for t in CHAT},
                ModelType.IMAGE_DESCRIPTION: ("openrouter", 50),
                ModelType.TEXT_EMBEDDING: ("openai", 50),
            },
        ),
    ],
)
async def test_setup_registers_what_the_preset_serves(
    make_runtime: MakeRuntime, preset: str | None, settings: dict[str, str], expected: dict[ModelType, tuple[str, int]]
) -> None:
    runtime = await make_runtime(settings, model_preset=preset)
    assert {r.model_type: (r.provider, r.priority) for r in runtime.models} == expected
    assert len(runtime.models) == len(expected)
    assert len(runtime.closers) == 1


async def test_setup_makes_no_network_call(make_runtime: MakeRuntime) -> None:
    # Nothing listens on port 9; setup must not notice (the conftest guard allows loopback).
    runtime = await make_runtime({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert runtime.models


async def test_closing_twice_is_harmless(make_runtime: MakeRuntime) -> None:
    runtime = await make_runtime({"OPENAI_API_KEY": KEY})
    closer = runtime.closers[0]
    await closer()
    await closer()


def test_reprs_hide_the_key() -> None:
    config = resolve({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://user:pw@host:8000/v1?token=t"})
    assert KEY not in repr(config)
    assert "<redacted>" in repr(config.chat)
    assert "pw" not in repr(config.chat) and "token" not in repr(config.chat)


def test_display_url_drops_credentials_and_query() -> None:
    assert display_url("https://user:secret@host.example:8443/v1?key=abc#x") == "https://host.example:8443/v1"
    assert display_url("http://localhost:11434/v1") == "http://localhost:11434/v1"


@pytest.mark.parametrize(
    ("settings", "clients"),
    [
        ({"OPENAI_API_KEY": KEY}, 1),
        ({"OPENAI_API_KEY": KEY, "OPENAI_EMBEDDING_API_KEY": KEY}, 1),
        ({"OPENAI_API_KEY": KEY, "OPENAI_EMBEDDING_API_KEY": OTHER_KEY}, 2),
        ({"OPENAI_API_KEY": KEY, "OPENAI_EMBEDDING_URL": "http://127.0.0.1:9/v1"}, 2),
    ],
)
async def test_one_sdk_client_per_base_url_and_key_made_on_first_use(
    make_runtime: MakeRuntime, settings: dict[str, str], clients: int
) -> None:
    runtime = await make_runtime({**settings, "OPENAI_TIMEOUT_S": "2.5", "OPENAI_MAX_RETRIES": "0"})
    models = runtime.closers[0].__self__  # type: ignore[attr-defined]
    assert models._calls.clients == {}  # chat and embeddings need none
    for kind, endpoint in (
        (ModelType.TRANSCRIPTION, models.config.chat),
        (ModelType.TEXT_EMBEDDING, models.config.embedding),
    ):
        assert models._calls.client(kind, endpoint) is models._calls.client(kind, endpoint)
    assert len(models._calls.clients) == clients
    for client in models._calls.clients.values():
        assert (client.timeout, client.max_retries) == (2.5, 0)


def test_image_description_tokens_must_be_positive() -> None:
    assert resolve({"OPENAI_API_KEY": KEY, "OPENAI_IMAGE_DESCRIPTION_MAX_TOKENS": "300"}).image_max_tokens == 300
    with pytest.raises(
        ConfigError, match="OPENAI_IMAGE_DESCRIPTION_MAX_TOKENS must be a whole number, 1 or more, not '0'"
    ):
        resolve({"OPENAI_API_KEY": KEY, "OPENAI_IMAGE_DESCRIPTION_MAX_TOKENS": "0"})


def test_image_model_and_size_settings_with_their_fallbacks() -> None:
    config = resolve({"OPENAI_API_KEY": KEY})
    assert (config.drawing_model, config.image_size) == ("dall-e-3", "1024x1024")
    config = resolve({"OPENAI_API_KEY": KEY, "IMAGE_MODEL": "gpt-image-1", "IMAGE_SIZE": "1536x1024"})
    assert (config.drawing_model, config.image_size) == ("gpt-image-1", "1536x1024")
    config = resolve(
        {"OPENAI_API_KEY": KEY, "OPENAI_IMAGE_MODEL": "dall-e-2", "IMAGE_MODEL": "x", "OPENAI_IMAGE_SIZE": "Auto"}
    )
    assert (config.drawing_model, config.image_size) == ("dall-e-2", "auto")


def test_an_image_size_that_is_no_size_says_what_to_write() -> None:
    with pytest.raises(
        ConfigError, match=r"IMAGE_SIZE is 'big'; use a width and height in pixels such as 1024x1024, or auto"
    ):
        resolve({"OPENAI_API_KEY": KEY, "IMAGE_SIZE": "big"})
