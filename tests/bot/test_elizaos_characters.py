"""elizaOS characters run unchanged: realistic files of both generations (written for these tests
in the shapes elizaOS publishes) load, with warnings only where troupe lacks something."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.main import main
from bot.config.character import find_character, load_characters, scan_character_files

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "elizaos"


def load(name: str):
    [result] = load_characters([FIXTURES / name], environ={})
    assert result.ok, result.problems
    assert not any("check its spelling" in w.message for w in result.warnings), result.warnings
    return result


def test_a_v0_character_with_twitter_spaces_people_and_a_model_provider_troupe_lacks() -> None:
    result = load("harbormaster.character.json")
    assert result.character.name == "Harbormaster" and result.character.lore[0].startswith("keeps a logbook")
    assert result.platforms == ["discord"] and result.plugins == ["openai"]
    assert [w.path for w in result.warnings] == ["$.clients[0]", "$.modelProvider"]
    assert result.character.message_examples[1][1].content.actions == ["NONE"]


def test_a_v0_character_with_a_plugin_troupe_lacks_starts_without_it() -> None:
    result = load("orchardist.character.json")
    assert result.platforms == ["telegram"] and result.model_preset == "openrouter"
    assert result.missing_plugins == ["@elizaos-plugins/plugin-image-generation"]
    assert [w.path for w in result.warnings] == ["$.plugins[0]"]


def test_a_v1_character_with_model_and_platform_plugins_troupe_lacks() -> None:
    result = load("lamplighter.json")
    assert result.platforms == ["discord"] and result.plugins == ["core", "openai"]
    assert result.missing_plugins == ["@elizaos/plugin-anthropic", "@elizaos/plugin-twitter"]
    warnings = {w.path: w.message for w in result.warnings}
    assert "the openai plugin serves any OpenAI-compatible endpoint" in warnings["$.plugins[2]"]
    assert "troupe runs on discord, telegram" in warnings["$.plugins[5]"]
    assert [k.kind for k in result.character.knowledge] == ["text", "path", "directory"]


def test_a_v1_character_with_an_explicit_id_templates_and_top_level_secrets() -> None:
    result = load("archivist.json")
    assert result.character.agent_id == "3f1b8a52-6c1e-4d2a-9b7e-1a2b3c4d5e6f"
    assert result.platforms == ["telegram"] and result.plugins == ["openai", "knowledge"]
    assert result.missing_plugins == ["@elizaos/plugin-evm", "@elizaos/plugin-farcaster"]


def test_check_over_the_folder_passes_and_names_what_it_skips(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the daemon's environment would give every character: tokens and a model key.
    for key, value in {
        "OPENAI_API_KEY": "sk-x",
        "OPENROUTER_API_KEY": "or-x",
        "DISCORD_API_TOKEN": "dc",
        "TELEGRAM_BOT_TOKEN": "1:tg",
    }.items():
        monkeypatch.setenv(key, value)
    assert main(["check", str(FIXTURES)]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert f"{FIXTURES / 'lamplighter-notes.md'}: skipped, not a .json file" in out
    assert f"{FIXTURES / 'lamplighter-routes'}: skipped, not a .json file" in out
    assert out.count(": OK  ") == 4
    assert len(scan_character_files([str(FIXTURES)]).paths) == 4


def test_chat_names_find_character_json_files() -> None:
    assert find_character("harbormaster", search_dir=FIXTURES) == FIXTURES / "harbormaster.character.json"
    assert find_character("archivist", search_dir=FIXTURES) == FIXTURES / "archivist.json"
