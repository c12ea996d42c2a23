"""Character files: the schema, defaults, elizaOS compatibility and every kind of bad input."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from bot.config.character import (
    Character,
    LoadResult,
    find_character,
    load_character,
    load_characters,
    scan_character_files,
)
from bot.kernel.errors import CharacterError
from bot.kernel.ids import string_to_uuid


@pytest.fixture
def write(tmp_path: Path):
    def _write(data: Any, name: str = "c.json") -> Path:
        path = tmp_path / name
        path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
        return path

    return _write


def character_of(result: LoadResult) -> Character:
    assert result.character is not None, result.problems
    return result.character


def secret_value(character: Character, key: str) -> str:
    secret = character.secret(key)
    assert secret is not None, f"no secret {key}"
    return secret.get_secret_value()


def only_problem(result) -> str:
    assert len(result.problems) == 1, result.problems
    return str(result.problems[0])


# -- valid files ------------------------------------------------------------------------


def test_minimal_character_gets_elizaos_defaults(write) -> None:
    result = load_character(write({"name": "A", "bio": "x"}))
    assert result.ok
    c = character_of(result)
    assert c.agent_id == string_to_uuid("A")
    assert c.username == "a"
    assert c.topics == c.adjectives == c.post_examples == c.plugins == [] and c.message_examples == []
    assert c.style.model_dump() == {"all": [], "chat": [], "post": []}
    assert c.settings == {} and c.secrets == {}
    assert c.knowledge == [] and c.templates == {} and c.system is None


def test_username_and_id_derive_from_the_name(write) -> None:
    c = character_of(load_character(write({"name": "Tech Helper", "bio": ["x"]})))
    assert c.username == "tech_helper"
    assert c.agent_id == "a434324a-2122-0e2b-9553-a0070785fa68"


def test_explicit_id_is_the_agent_id(write) -> None:
    uid = "11111111-2222-0333-8444-555555555555"
    c = character_of(load_character(write({"name": "A", "bio": "x", "id": uid})))
    assert c.agent_id == uid


def test_bio_as_string_or_list_and_partial_style(write) -> None:
    c = character_of(load_character(write({"name": "A", "bio": ["one", "two"], "style": {"all": ["a"]}})))
    assert c.bio == ["one", "two"]
    assert c.style.model_dump() == {"all": ["a"], "chat": [], "post": []}


def test_full_schema_loads(write, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# notes")
    (tmp_path / "docs").mkdir()
    data = {
        "name": "Full",
        "username": "full_bot",
        "bio": ["b1", "b2"],
        "system": "You are Full.",
        "templates": {"messageHandlerTemplate": "{{agentName}} says"},
        "adjectives": ["calm"],
        "topics": ["tea"],
        "knowledge": [
            "A fact.",
            {"path": "notes.md", "shared": True},
            {"directory": "docs"},
            {"path": "docs"},
            {"url": "https://example.org/faq"},
            "https://example.org/a-link-as-a-fact",
        ],
        "messageExamples": [
            [
                {"name": "{{user1}}", "content": {"text": "hi"}},
                {"name": "Full", "content": {"text": "hello", "actions": ["REPLY"]}},
            ]
        ],
        "postExamples": ["a post"],
        "style": {"all": ["a"], "chat": ["c"], "post": ["p"]},
        "plugins": [
            "@elizaos/plugin-bootstrap",
            "@elizaos/plugin-sql",
            "@elizaos/plugin-openai",
            "@elizaos/plugin-discord",
            "@elizaos/plugin-telegram",
            "@elizaos/plugin-elevenlabs",
        ],
        "settings": {"conversationLength": 10, "voice": {"model": "en_US"}, "secrets": {"ELEVENLABS_VOICE_ID": "v1"}},
        "secrets": {"OPENAI_API_KEY": "sk-test"},
    }
    result = load_character(write(data))
    assert result.ok, result.problems
    c = character_of(result)
    assert [k.kind for k in c.knowledge] == ["text", "path", "directory", "path", "url", "text"]
    assert c.knowledge[4].to_json() == {"url": "https://example.org/faq", "shared": False}
    assert c.knowledge[1].shared is True and c.knowledge[2].shared is False
    assert c.message_examples[0][1].content.actions == ["REPLY"]
    assert result.platforms == ["discord", "telegram"]
    assert result.plugins == ["core", "openai", "elevenlabs"]
    assert secret_value(c, "OPENAI_API_KEY") == "sk-test"
    assert secret_value(c, "ELEVENLABS_VOICE_ID") == "v1"
    assert c.settings["conversationLength"] == 10


def test_secret_values_may_be_numbers_or_booleans(write) -> None:
    c = character_of(load_character(write({"name": "A", "bio": "x", "settings": {"secrets": {"X": True, "Y": 0.5}}})))
    assert secret_value(c, "X") == "true"
    assert secret_value(c, "Y") == "0.5"


def test_top_level_secrets_win_over_settings_secrets(write) -> None:
    data = {"name": "A", "bio": "x", "secrets": {"K": "top"}, "settings": {"secrets": {"K": "nested"}}}
    assert secret_value(character_of(load_character(write(data))), "K") == "top"


def test_elizaos_v0_character_loads_unchanged(write) -> None:
    data = {
        "name": "Old",
        "clients": ["discord", "telegram", "direct"],
        "modelProvider": "openrouter",
        "bio": "An old-format character.",
        "lore": ["Once upon a time."],
        "messageExamples": [
            [
                {"user": "{{user1}}", "content": {"text": "hi"}},
                {"user": "Old", "content": {"text": "yo", "action": "CONTINUE"}},
            ]
        ],
        "people": [],
        "settings": {"secrets": {}, "voice": {"model": "en_US-male-medium"}},
    }
    result = load_character(write(data))
    assert result.ok, result.problems
    c = character_of(result)
    assert c.lore == ["Once upon a time."]
    assert c.message_examples[0][0].name == "{{user1}}"
    assert c.message_examples[0][1].content.actions == ["CONTINUE"]
    assert result.platforms == ["discord", "telegram"]
    assert result.plugins == ["openai"]
    assert result.model_preset == "openrouter"
    assert result.warnings == []  # people is a real elizaOS v0 field: no "check its spelling"


@pytest.mark.parametrize(
    ("plugin", "preset"),
    [
        ("@elizaos/plugin-ollama", "ollama"),
        ("@elizaos/plugin-openrouter", "openrouter"),
        ("@elizaos/plugin-openai", None),
    ],
)
def test_model_plugins_map_to_the_openai_plugin_with_a_preset(write, plugin: str, preset: str | None) -> None:
    result = load_character(write({"name": "A", "bio": "x", "plugins": [plugin]}))
    assert result.ok and result.plugins == ["openai"] and result.model_preset == preset


def test_unknown_legacy_client_and_model_provider_warn_but_load(write) -> None:
    result = load_character(write({"name": "A", "bio": "x", "clients": ["twitter"], "modelProvider": "anthropic"}))
    assert result.ok
    assert [w.path for w in result.warnings] == ["$.clients[0]", "$.modelProvider"]
    assert "OpenAI-compatible" in str(result.warnings[1])


def test_utf8_bom_is_accepted(write, tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"name": "A", "bio": "x"}).encode())
    assert load_character(path).ok


# -- bad input: every problem names the field and what to do ------------------------------


def test_invalid_json_reports_line_and_column(write) -> None:
    result = load_character(write('{"name": "x",\n "bio": "y",\n}'))
    # Where the parser stops differs between Pythons (the comma, or the brace after it), and so
    # does its wording: what matters is the place, and the hint.
    problem = only_problem(result)
    assert re.fullmatch(r"\$: invalid JSON at line (2, column 12|3, column 1): .+", problem), problem
    assert problem.endswith(" (a trailing comma or a comment? JSON allows neither)")


def test_missing_name(write) -> None:
    assert only_problem(load_character(write({"bio": "x"}))).startswith('$.name: required field is missing: add "name"')


@pytest.mark.parametrize("name", ["", "   "])
def test_empty_name(write, name: str) -> None:
    assert "Character name is required" in only_problem(load_character(write({"name": name, "bio": "x"})))


@pytest.mark.parametrize("bio", ["", [], ["  "]])
def test_empty_bio(write, bio: Any) -> None:
    assert only_problem(load_character(write({"name": "A", "bio": bio}))).startswith("$.bio: Character bio is required")


def test_missing_bio(write) -> None:
    assert only_problem(load_character(write({"name": "A"}))).startswith("$.bio: required field is missing")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"name": 5, "bio": "x"}, "$.name: must be text (a string in quotes), not a number"),
        ({"name": "A", "bio": 5}, "$.bio: must be a list of sentences (strings), not a number"),
        ({"name": "A", "bio": "x", "topics": {"a": 1}}, "$.topics: must be a list of strings, not an object"),
        (
            {"name": "A", "bio": "x", "adjectives": [1]},
            "$.adjectives[0]: must be text (a string in quotes), not a number",
        ),
        ({"name": "A", "bio": "x", "style": "terse"}, "$.style: must be an object {...}, not text"),
        (
            {"name": "A", "bio": "x", "style": {"chats": []}},
            '$.style.chats: unknown style key; style has "all", "chat" and "post"',
        ),
        ({"name": "A", "bio": "x", "settings": []}, "$.settings: must be an object {...}, not a list"),
        ({"name": "A", "bio": "x", "secrets": ["k"]}, "$.secrets: secrets must be an object like"),
        (
            {"name": "A", "bio": "x", "settings": {"secrets": {"K": {"v": 1}}}},
            "$.settings: settings.secrets.K must be text",
        ),
        ({"name": "A", "bio": "x", "knowledge": [5]}, "$.knowledge[0]: each knowledge item is a fact (text)"),
        (
            {"name": "A", "bio": "x", "knowledge": [{"path": "a", "directory": "b"}]},
            '$.knowledge[0]: give exactly one of "path", "directory" or "url"',
        ),
        (
            {"name": "A", "bio": "x", "knowledge": [{"url": "file:///etc/passwd"}]},
            "$.knowledge[0].url: 'file:///etc/passwd' is not a web link; give one starting with https://",
        ),
        ({"name": "A", "bio": "x", "knowledge": [{"link": "x"}]}, "$.knowledge[0].link: unknown key here"),
        (
            {"name": "A", "bio": "x", "knowledge": [{"path": "a", "shared": "maybe"}]},
            "$.knowledge[0].shared: must be true or false",
        ),
    ],
)
def test_wrong_types_name_the_field_and_the_fix(write, data: dict, expected: str) -> None:
    assert only_problem(load_character(write(data))).startswith(expected)


def test_flat_message_examples_are_rejected_with_the_fix(write) -> None:
    data = {"name": "A", "bio": "x", "messageExamples": [{"name": "u", "content": {"text": "hi"}}]}
    assert "wrap each conversation in [ ]" in only_problem(load_character(write(data)))


def test_message_without_content_is_rejected(write) -> None:
    data = {"name": "A", "bio": "x", "messageExamples": [[{"name": "u"}]]}
    assert only_problem(load_character(write(data))) == (
        '$.messageExamples[0][0].content: required field is missing: add "content": {"text": "..."}'
    )


def test_every_problem_is_reported_at_once(write) -> None:
    data = {"bio": [], "topics": 3, "plugins": ["@elizaos/plugin-twitter"], "secrets": {"T": "env:UNSET_TOKEN"}}
    result = load_character(write(data))
    assert [p.path for p in result.problems] == ["$.name", "$.bio", "$.topics", "$.secrets.T"]
    assert [w.path for w in result.warnings] == ["$.plugins[0]"]


def test_a_bad_message_example_does_not_hide_a_missing_knowledge_folder(write, tmp_path: Path) -> None:
    data = {
        "name": "A",
        "bio": "x",
        "messageExamples": [[{"user": "u"}]],
        "knowledge": ["a fact", {"directory": "docs"}],
        "settings": "oops",
    }
    paths = [p.path for p in load_character(write(data)).problems]
    assert paths == ["$.messageExamples[0][0].content", "$.settings", "$.knowledge[1].directory"]


@pytest.mark.parametrize(
    ("plugin", "instead"),
    [
        ("@elizaos/plugin-solana", "troupe's plugins are core, elevenlabs, knowledge, mcp, openai"),
        ("@elizaos/plugin-anthropic", "the openai plugin serves any OpenAI-compatible endpoint"),
        ("@elizaos/plugin-twitter", "troupe runs on discord, telegram"),
        ("@elizaos/plugin-telegarm", "did you mean '@elizaos/plugin-telegram'?"),
    ],
)
def test_a_plugin_troupe_lacks_is_a_warning_naming_what_it_offers_instead(write, plugin: str, instead: str) -> None:
    result = load_character(write({"name": "A", "bio": "x", "plugins": [plugin, "@elizaos/plugin-discord"]}))
    assert result.ok and result.problems == []
    assert result.missing_plugins == [plugin] and result.platforms == ["discord"]
    [warning] = result.warnings
    assert str(warning).startswith(f"$.plugins[0]: troupe has no plugin {plugin!r}; the character starts without it (")
    assert instead in str(warning)


def test_typescript_character_is_refused_with_an_explanation(tmp_path: Path) -> None:
    path = tmp_path / "eliza.ts"
    path.write_text("export const character = {name: 'Eliza'}")
    message = only_problem(load_character(path))
    assert "reads only JSON character files" in message and "JSON.stringify" in message


def test_missing_file_and_non_json_extension(tmp_path: Path) -> None:
    assert only_problem(load_character(tmp_path / "nope.json")) == "$: no such file; check the path"
    (tmp_path / "c.yaml").write_text("name: A")
    assert only_problem(load_character(tmp_path / "c.yaml")).startswith("$: invalid JSON at line 1, column 1")


@pytest.mark.parametrize("name", ["eliza", "eliza.character.json", "eliza.character", "ELIZA.JSON"])
def test_a_file_given_by_path_is_read_whatever_its_name(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(json.dumps({"name": "Eliza", "bio": "x"}))
    assert load_character(tmp_path / name).ok


def test_an_empty_file_says_it_is_empty(write) -> None:
    assert only_problem(load_character(write(" \n"))).startswith(
        "$: the file is empty; a character file holds one JSON"
    )


def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    assert only_problem(load_character(tmp_path / "pipe.json")) == (
        "$: is a named pipe (FIFO), not a regular file; a character file is a JSON file"
    )


@pytest.mark.parametrize("path", ["~no-such-user-0/notes.md", "~\x00"])
def test_a_knowledge_path_under_an_unknown_home_does_not_exist(write, path: str) -> None:
    result = load_character(write({"name": "A", "bio": "x", "knowledge": [{"path": path}]}))
    message = only_problem(result)
    assert message.startswith("$.knowledge[0].path: ") and "/~" in message
    assert message.endswith(" does not exist; fix the path (relative to the character file)")


def test_paths_too_long_for_the_os_are_problems_not_crashes(write, tmp_path: Path) -> None:
    long = "a" * 5000
    result = load_character(
        write({"name": "A", "bio": "x", "knowledge": [{"directory": long}], "secrets": {"K": f"file:{long}"}})
    )
    assert [p.path for p in result.problems] == ["$.secrets.K", "$.knowledge[0].directory"]
    assert "File name too long" in str(result.problems[0])
    assert result.problems[1].message.endswith(" does not exist; fix the path (relative to the character file)")
    assert only_problem(load_character(tmp_path / long)) == (
        "$: cannot read it: File name too long; a character file is a JSON file"
    )
    assert find_character(long) == Path(long)
    assert scan_character_files([long]).paths == [Path(long)]


def test_a_folder_given_as_a_character_file_says_so(tmp_path: Path) -> None:
    assert only_problem(load_character(tmp_path)) == "$: is a folder, not a regular file; give the .json files in it"


def test_a_file_over_the_size_limit_is_refused(write) -> None:
    path = write('{"name": "A", "bio": "' + "x" * (4 * 1024 * 1024) + '"}')
    assert "is larger than 4096 KiB" in only_problem(load_character(path))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"name": "A", "bio": "x", "settings": "oops"}', "$.settings: must be an object {...}, not text"),
        (
            '{"name": "A", "bio": "x", "settings": {"a": ' + "[" * 70 + "]" * 70 + "}}",
            "nested more than 64 levels deep; flatten it",
        ),
        (
            '{"name": "A", "bio": "x", "settings": {"n": ' + "9" * 4400 + "}}",
            "$.settings.n: a number with 4400 digits; troupe reads numbers of up to 4300 digits",
        ),
        ('{"name": "A\\udc80", "bio": "x"}', "$.name: text with a lone surrogate escape"),
        ('{"name": "A", "bio": "x", "style": {"chta": []}}', "did you mean 'chat'?"),
        ('{"name": "A", "bio": "x", "settings": {"t": NaN}}', "$.settings.t: NaN is not a number JSON allows"),
        ('{"name": "A", "bio": "x", "settings": {"t": [1e999]}}', "$.settings.t[0]: a number too large"),
        ('{"name": "A", "bio": "x", "settings": {"t": -Infinity}}', "$.settings.t: -Infinity is not a number JSON"),
    ],
)
def test_inputs_that_once_crashed_are_problems_with_a_path(write, text: str, expected: str) -> None:
    assert expected in only_problem(load_character(write(text)))


def test_nesting_past_what_the_json_parser_reads_is_a_problem(write) -> None:
    # Python 3.11's parser gives up on it (RecursionError); 3.13's reads it, and troupe's own
    # depth check answers: either way the same advice.
    problem = only_problem(
        load_character(write('{"name": "A", "bio": "x", "settings": {"a": ' + "[" * 1000 + "]" * 1000 + "}}"))
    )
    assert "nested" in problem and "64 levels" in problem and problem.endswith("; flatten it"), problem


def test_null_objects_and_lists_are_empty(write) -> None:
    data = {
        "name": "A",
        "bio": "x",
        "settings": None,
        "templates": None,
        "style": None,
        "secrets": None,
        "knowledge": None,
        "plugins": None,
        "messageExamples": None,
        "topics": None,
    }
    result = load_character(write(data))
    assert result.ok, result.problems
    assert character_of(result).settings == {} and character_of(result).style.all == []


def test_every_elizaos_field_is_known_and_a_close_misspelling_gets_a_suggestion(write) -> None:
    data = {
        "name": "A",
        "bio": "x",
        "twitterSpaces": {"maxSpeakers": 2},
        "people": [],
        "twitterProfile": {},
        "clientConfig": {},
        "nft": {"prompt": "p"},
        "extends": [],
        "imageModelProvider": "openai",
        "messageExamplse": [],
        "Topics": ["t"],
        "zzz": 1,
    }
    result = load_character(write(data))
    assert result.ok
    assert [str(w) for w in result.warnings] == [
        "$.messageExamplse: unknown key, kept but unused; did you mean 'messageExamples'?",
        "$.Topics: unknown key, kept but unused; did you mean 'topics'?",
        "$.zzz: unknown key, kept but unused; check its spelling",
    ]


def test_non_object_top_level(write) -> None:
    assert "not a list" in only_problem(load_character(write([{"name": "A", "bio": "x"}])))


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('{"name": "Zoë", "bio": "x"}'.encode("latin-1"))
    assert "not UTF-8" in only_problem(load_character(path))


def test_paths_in_the_file_are_relative_to_it(write, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("x")
    c = load_character(write({"name": "A", "bio": "x", "knowledge": [{"path": "notes.md"}]})).raise_for_problems()
    assert c.resolve_path("notes.md") == tmp_path.absolute() / "notes.md"
    assert c.resolve_path("/abs/file.md") == Path("/abs/file.md")
    assert Character.model_validate({"name": "B", "bio": "x"}).resolve_path("rel") == Path.cwd() / "rel"


def test_missing_knowledge_file(write) -> None:
    message = only_problem(load_character(write({"name": "A", "bio": "x", "knowledge": [{"path": "gone.md"}]})))
    assert message.startswith("$.knowledge[0].path: ") and "does not exist" in message


def test_knowledge_directory_that_is_a_file(write, tmp_path: Path) -> None:
    (tmp_path / "f.md").write_text("x")
    message = only_problem(load_character(write({"name": "A", "bio": "x", "knowledge": [{"directory": "f.md"}]})))
    assert 'use "path" for a file' in message


def test_unresolvable_secret_reference(write) -> None:
    data = {"name": "A", "bio": "x", "settings": {"secrets": {"DISCORD_API_TOKEN": "env:A_DISCORD_TOKEN"}}}
    message = only_problem(load_character(write(data), environ={}))
    assert message.startswith(
        "$.settings.secrets.DISCORD_API_TOKEN: cannot resolve secret reference 'env:A_DISCORD_TOKEN'"
    )
    assert "A_DISCORD_TOKEN is not set" in message


def test_secret_reference_resolves_from_the_given_environment(write) -> None:
    data = {"name": "A", "bio": "x", "settings": {"secrets": {"DISCORD_API_TOKEN": "env:A_DISCORD_TOKEN"}}}
    c = character_of(load_character(write(data), environ={"A_DISCORD_TOKEN": "tok-123"}))
    assert secret_value(c, "DISCORD_API_TOKEN") == "tok-123"


def test_duplicate_names_and_ids_across_files(write) -> None:
    a = write({"name": "Twin", "bio": "x"}, "a.json")
    b = write({"name": "Twin", "bio": "y"}, "b.json")
    uid = "11111111-2222-0333-8444-555555555555"
    c = write({"name": "C", "bio": "x", "id": uid}, "c.json")
    d = write({"name": "D", "bio": "x", "id": uid}, "d.json")
    e = write({"name": "twin", "bio": "x", "id": "22222222-2222-0333-8444-555555555555"}, "e.json")
    ra, rb, rc, rd, re_ = load_characters([a, b, c, d, e])
    assert ra.ok and rc.ok
    assert str(rb.problems[0]).startswith(f"$.name: agent id {string_to_uuid('Twin')} is already used by {a}")
    assert str(rd.problems[0]).startswith(f"$.id: agent id {uid} is already used by {c}")
    assert str(re_.problems[0]) == f"$.name: {a} already has a character named 'twin'; rename one"


def test_same_file_twice(write) -> None:
    a = write({"name": "A", "bio": "x"})
    assert str(load_characters([a, a])[1].problems[0]) == "$: this file is listed twice"


def test_raise_for_problems(write) -> None:
    with pytest.raises(CharacterError, match=r"c\.json:\n  \$\.bio: Character bio is required"):
        load_character(write({"name": "A", "bio": ""})).raise_for_problems()


# -- secrets stay secret ---------------------------------------------------------------


def test_repr_and_record_never_show_secrets(write) -> None:
    data = {
        "name": "A",
        "bio": "x",
        "secrets": {"K": "sk-top-secret"},
        "settings": {"model": "m", "secrets": {"T": "tok-nested-secret"}},
    }
    result = load_character(write(data))
    character = character_of(result)
    text = repr(character) + repr(result) + str(character.to_record())
    assert "sk-top-secret" not in text and "tok-nested-secret" not in text
    assert character.to_record().settings == {"model": "m"}


def test_character_model_validates_python_objects_too() -> None:
    c = Character.model_validate({"name": "A", "bio": "x", "message_examples": []})
    assert c.name == "A"


# -- command-line paths ----------------------------------------------------------------


def test_arguments_name_folders_files_lists_and_bare_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "characters").mkdir()
    for name in ("b", "a"):
        (tmp_path / "characters" / f"{name}.json").write_text("{}")
    (tmp_path / "solo.json").write_text("{}")
    assert scan_character_files(["characters"]).paths == [Path("characters/a.json"), Path("characters/b.json")]
    assert scan_character_files(["solo,a", "missing"]).paths == [
        Path("solo.json"),
        Path("characters/a.json"),
        Path("missing"),
    ]


def test_a_name_finds_name_json_and_name_character_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "characters").mkdir()
    (tmp_path / "characters" / "eliza.character.json").write_text("{}")
    (tmp_path / "trump.character.json").write_text("{}")
    (tmp_path / "characters" / "c3po.json").write_text("{}")
    assert find_character("eliza") == Path("characters/eliza.character.json")
    assert find_character("trump") == Path("trump.character.json")
    assert find_character("trump.character") == Path("trump.character.json")
    assert find_character("c3po") == Path("characters/c3po.json")
    assert find_character("nobody") == Path("nobody")


def test_a_folder_scan_names_every_entry_it_skips_and_why(tmp_path: Path) -> None:
    (tmp_path / "a.character.json").write_text("{}")
    (tmp_path / "b.json").write_text("{}")
    (tmp_path / "README.md").write_text("notes")
    (tmp_path / "old.json").mkdir()
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "gone.json").symlink_to(tmp_path / "nowhere")
    found = scan_character_files([str(tmp_path)])
    assert found.paths == [tmp_path / "a.character.json", tmp_path / "b.json"]
    assert found.skipped == [
        (tmp_path / "README.md", "not a .json file"),
        (tmp_path / "gone.json", "cannot be read (No such file or directory)"),
        (tmp_path / "old.json", "a folder (folders inside are not searched)"),
        (tmp_path / "pipe.json", "a named pipe (FIFO), not a regular file"),
    ]
