"""Fuzzing configuration: whatever a character file, a daemon setting or a ``.env`` holds, loading
it gives problems that name the file and field (or a ConfigError naming the setting), never any
other exception.

The suite runs 200 examples per test (a few seconds); ``TROUPE_FUZZ_EXAMPLES=20000`` runs a long search.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import random
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bot.cli.main import _report
from bot.config.character import ELIZAOS_FIELDS, Character, load_character, load_characters
from bot.config.settings import DaemonSettings, load_environ
from bot.daemon.daemon import fingerprint
from bot.kernel.errors import CharacterError, ConfigError
from bot.store._rows import dumps
from plugins.core._character_text import character_context

FUZZ = settings(
    max_examples=int(os.environ.get("TROUPE_FUZZ_EXAMPLES", "200")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

FIELDS = sorted({info.alias or name for name, info in Character.model_fields.items()} | ELIZAOS_FIELDS)

# A number too long for Python to convert: written into the file's text by _encode (neither
# hypothesis nor json.dumps can print such an int).
HUGE = "\x00huge-number"
# Any JSON value: nested, with huge and odd numbers and any text (lone surrogates included).
ordinary = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
lone_surrogates = st.text(st.characters(categories=["Cs"]) | st.characters(), min_size=1, max_size=5).filter(
    lambda text: any(0xD800 <= ord(c) <= 0xDFFF for c in text)
)
odd = st.just(HUGE) | st.sampled_from([math.nan, math.inf, -math.inf]) | lone_surrogates
# One leaf in twenty odd: any more and nearly every file is refused, leaving loaded files unfuzzed.
# (Not 0 or 19: hypothesis favours the ends of a range.)
scalars = st.integers(min_value=0, max_value=19).flatmap(lambda n: odd if n == 7 else ordinary)


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)


json_values = st.recursive(scalars, _nested, max_leaves=20)
# Plausible shapes for the fields a character has, so validation gets past the first error.
texts = st.text(max_size=20) | st.sampled_from(
    [
        "env:NOPE",
        "env:NOPE?",
        "file:missing",
        "credential:X",
        "",
        " ",
        "file:a\x00b",
        "credential:a\x00b",
        "../../etc/passwd",
        "~",
        "~no-such-user/x",
        "file:~no-such-user/x",
        "a" * 5000,
        "file:" + "a" * 5000,
    ]
)
messages = st.fixed_dictionaries(
    {},
    optional={
        "name": texts,
        "user": texts,
        "content": json_values | st.fixed_dictionaries({"text": texts}, optional={"action": texts}),
    },
)
field_values = {
    "name": texts | json_values,
    "bio": texts | st.lists(texts, max_size=3) | json_values,
    "plugins": st.lists(
        texts | st.sampled_from(["@elizaos/plugin-discord", "@elizaos/plugin-twitter", "openai"]), max_size=3
    )
    | json_values,
    "clients": st.lists(st.sampled_from(["discord", "telegram", "twitter", "direct"]) | texts, max_size=3),
    "settings": st.dictionaries(
        texts, json_values | st.dictionaries(texts, texts | json_values, max_size=3), max_size=4
    )
    | json_values,
    "secrets": st.dictionaries(texts, texts | json_values, max_size=3) | json_values,
    "knowledge": st.lists(
        texts
        | st.fixed_dictionaries(
            {}, optional={"path": texts, "directory": texts | texts.map(lambda t: t + "\x00"), "shared": json_values}
        ),
        max_size=3,
    ),
    "messageExamples": st.lists(st.lists(messages | json_values, max_size=3) | messages, max_size=3) | json_values,
    "style": st.dictionaries(st.sampled_from(["all", "chat", "post", "chta"]), st.lists(texts) | json_values),
    "modelProvider": texts | json_values,
}
# A few fields at a time: with all of them, one would nearly always be broken and hide the rest.
optional_fields = st.lists(
    st.sampled_from(FIELDS) | st.sampled_from(sorted(field_values)), max_size=6, unique=True
).flatmap(lambda keys: st.fixed_dictionaries({key: field_values.get(key, json_values) for key in keys}))
extra_keys = st.dictionaries(st.text(max_size=12), json_values, max_size=3)
# Mostly a valid name and bio, so the rest of the file is checked past validation too.
valid_core = st.fixed_dictionaries(
    {"name": st.sampled_from(["Ada", "Zoë", "a b"]), "bio": st.sampled_from(["x", ["y"]])}
)
characters = st.builds(
    lambda extra, known, core: extra | known | core,
    extra_keys,
    optional_fields,
    valid_core | valid_core | valid_core | st.just({}),
)


def _encode(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=True).replace(json.dumps(HUGE), "9" * 4400).encode()


# The bytes of a character file: a generated character, mangled or not, or anything at all.
def _mangle(raw: bytes, cut: int, junk: bytes) -> bytes:
    cut = cut % (len(raw) + 1)
    return raw[:cut] + junk + raw[cut:]


files = (
    characters.map(_encode)
    | st.builds(_mangle, characters.map(_encode), st.integers(min_value=0), st.binary(max_size=4))
    | json_values.map(_encode)
    | st.binary(max_size=200)
    | st.integers(min_value=1, max_value=3000).map(lambda n: b"[" * n + b"]" * n)
)


def _check_result(result: Any, path: Path) -> None:
    """What every load must give: problems with a JSON path, and a usable character when ok."""
    for problem in [*result.problems, *result.warnings]:
        assert problem.path.startswith("$") and problem.message, problem
    event("loaded" if result.ok else "refused")
    if result.ok:
        character = result.character
        fingerprint(result)  # what the daemon computes on start and reload
        dumps(dataclasses.asdict(character.to_record()))  # what the database stores
        for is_post in (False, True):  # what the prompts hold
            character_context(character, rng=random.Random(0), is_post=is_post)
    else:
        with pytest.raises(CharacterError) as refused:
            result.raise_for_problems()
        assert str(path) in str(refused.value) and result.problems


@FUZZ
@given(raw=files)
def test_any_character_file_loads_or_names_its_problems(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.json"
        path.write_bytes(raw)
        [result] = load_characters([path], environ={})
        _check_result(result, path)
        with open(os.devnull, "w", encoding="utf-8") as out:  # the report `troupe check` prints is encodable
            _report([result], out=out)


@FUZZ
@given(data=characters)
def test_any_character_object_loads_or_names_its_problems(data: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.character.json"
        path.write_bytes(_encode(data))
        _check_result(load_character(path, environ={}), path)


env_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=40)
setting_names = st.sampled_from(sorted(f"TROUPE_{name.upper()}" for name in DaemonSettings.model_fields))


odd_settings = st.sampled_from(["-5", "0", "inf", "nan", "1e999", "LOUD", "9" * 5000, "/tmp/x\x00y", "", " "])
# .env lines setting the daemon's own variables, to any text (a file can hold what the environment cannot).
dotenv_settings = st.lists(st.tuples(setting_names, st.text(max_size=20) | odd_settings), max_size=4).map(
    lambda pairs: "\n".join(f"{key}={value}" for key, value in pairs).encode("utf-8", "surrogatepass")
)


@FUZZ
@given(
    env=st.dictionaries(setting_names, env_text | odd_settings.filter(lambda v: "\x00" not in v), max_size=4),
    dotenv=st.none() | st.binary(max_size=80) | env_text.map(str.encode) | dotenv_settings,
)
def test_any_daemon_settings_load_or_name_the_setting(env: dict[str, str], dotenv: bytes | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        env_file = Path(folder) / ".env"
        if dotenv is not None:
            env_file.write_bytes(dotenv)
        with mock.patch.dict(os.environ, env):
            try:
                daemon_settings = DaemonSettings(_env_file=env_file)
            except ConfigError as exc:
                assert "TROUPE_" in str(exc) or str(env_file) in str(exc)
            else:  # the paths the daemon opens are paths the OS accepts (OSError is its answer, not ValueError)
                for path in (daemon_settings.database, daemon_settings.control_path):
                    with contextlib.suppress(OSError):
                        path.stat()
            try:
                load_environ(env_file)
            except ConfigError as exc:
                assert str(env_file) in str(exc)
