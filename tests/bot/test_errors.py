"""Errors carry the agent they are about as a field; the text shown is composed from it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bot.kernel.errors import (
    ConfigError,
    ModelAuthError,
    ModelRateLimited,
    PluginLoadError,
    ReloadError,
    ReloadFailed,
    TroupeError,
    reason_for,
)
from platforms.telegram._config import read_config
from plugins.openai._config import resolve_config


def test_an_error_about_an_agent_shows_it_first_and_keeps_it_apart() -> None:
    error = ConfigError("TELEGRAM_BOT_TOKEN is not set", agent="Ada")
    assert str(error) == "Ada: TELEGRAM_BOT_TOKEN is not set"
    assert (error.message, error.agent) == ("TELEGRAM_BOT_TOKEN is not set", "Ada")
    assert repr(error) == "ConfigError('TELEGRAM_BOT_TOKEN is not set', agent='Ada')"


def test_an_error_about_no_agent_is_its_message() -> None:
    error = TroupeError("the database is locked")
    assert str(error) == "the database is locked" and error.agent is None
    assert repr(error) == "TroupeError('the database is locked')"


def test_beside_its_agent_the_reason_does_not_repeat_the_name() -> None:
    error = ConfigError("TELEGRAM_BOT_TOKEN is not set", agent="Ada")
    assert reason_for(error, "Ada") == "TELEGRAM_BOT_TOKEN is not set"
    assert reason_for(error, "Bob") == "Ada: TELEGRAM_BOT_TOKEN is not set"  # about someone else: say who
    assert reason_for(ValueError("Ada: not ours"), "Ada") == "Ada: not ours"  # other errors are shown as they are


def test_model_errors_keep_their_fields_next_to_the_agent() -> None:
    error = ModelRateLimited(
        "TEXT_LARGE via openai (gpt): rate limited",
        agent="Ada",
        retry_after=2.0,
        provider="openai",
        model_type="TEXT_LARGE",
    )
    assert str(error) == "Ada: TEXT_LARGE via openai (gpt): rate limited"
    assert (error.agent, error.retry_after, error.provider, error.original) == ("Ada", 2.0, "openai", None)


def test_a_platform_config_error_names_the_agent_as_a_field_and_in_the_text_shown() -> None:
    with pytest.raises(ConfigError, match=r"^Ada: TELEGRAM_BOT_TOKEN is not set; put the token") as info:
        read_config(lambda key: None, "Ada")
    assert info.value.agent == "Ada" and info.value.message.startswith("TELEGRAM_BOT_TOKEN is not set")


def test_a_plugin_config_error_names_the_agent_as_a_field() -> None:
    runtime = SimpleNamespace(get_setting=lambda key: None, model_preset="bogus")
    with pytest.raises(ConfigError, match=r"^Iris: unknown model preset 'bogus' for plugin openai") as info:
        resolve_config(runtime, agent="Iris")
    assert info.value.agent == "Iris"


def test_a_plugin_that_fails_to_load_is_named_once_with_its_agent() -> None:
    error = PluginLoadError("openai", "Iris", ModelAuthError("openai refused the API key", agent="Iris"))
    assert str(error) == "plugin openai for Iris failed to load: openai refused the API key"
    assert (error.plugin, error.agent) == ("openai", "Iris")


def test_a_refused_reload_and_a_failed_one_are_told_apart_by_type() -> None:
    assert issubclass(ReloadFailed, ReloadError) and issubclass(ReloadError, RuntimeError)
    assert not isinstance(ReloadError("a reload is already running"), ReloadFailed)
