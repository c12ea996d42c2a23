"""Which plugin serves models comes from the plugins' own metadata, not from names in bot/."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import plugins as plugin_registry
from bot.config.character import load_character
from bot.config.plugins import PluginMeta
from bot.daemon.chat import runtime_plugins


def test_the_model_plugin_is_the_one_that_says_it_serves_models() -> None:
    assert plugin_registry.model_plugin().name == "openai"
    assert plugin_registry.for_model_provider(" Ollama ") == (plugin_registry.available()["openai"], "ollama")
    assert plugin_registry.for_model_provider("anthropic") is None


def test_another_model_plugin_replaces_openai_without_touching_bot(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    metas = {name: meta for name, meta in plugin_registry.available().items() if name != "openai"}
    metas["brains"] = PluginMeta(
        name="brains",
        description="fake models",
        models=True,
        model_providers={"brainco": "fast"},
        models_hint="Brains: set BRAINS_KEY",
    )
    monkeypatch.setattr(plugin_registry, "available", lambda: metas)
    monkeypatch.setattr(plugin_registry, "_by_alias", lambda: {n: (m, None) for n, m in metas.items()})

    path = tmp_path / "ada.json"
    path.write_text('{"name": "Ada", "bio": "x", "modelProvider": "brainco"}')
    chosen = load_character(path, environ={})
    assert chosen.plugins[-1] == "brains" and chosen.model_preset == "fast"

    path.write_text('{"name": "Ada", "bio": "x", "modelProvider": "somewhere-else"}')
    fallback = load_character(path, environ={})
    assert fallback.plugins[-1] == "brains"
    assert [w.message for w in fallback.warnings] == [
        "no troupe plugin for 'somewhere-else'; the brains plugin is used instead, and serves Brains: set BRAINS_KEY"
    ]

    path.write_text('{"name": "Ada", "bio": "x"}')
    assert runtime_plugins(load_character(path, environ={}))[-1] == "brains"  # every agent gets one to think


def test_a_character_that_names_a_model_plugin_gets_no_second_one(tmp_path: Path) -> None:
    path = tmp_path / "ada.json"
    path.write_text('{"name": "Ada", "bio": "x", "plugins": ["@elizaos/plugin-ollama"]}')
    assert runtime_plugins(load_character(path, environ={})).count("openai") == 1
