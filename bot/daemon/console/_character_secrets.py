"""A character file's secrets in the console: hidden in the editor, put back on save, and shown
only as set or not set, and where from.

A secret written in the file itself (in ``secrets``, ``settings.secrets``, or a setting named like
a key or a token) is replaced in the editor by :data:`PLACEHOLDER`; a save puts the file's value
back wherever the placeholder was left as it was, and a value typed over it replaces it. A
reference (``env:NAME``, ``file:PATH``, ``credential:NAME``) names no secret: it is shown as written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bot.config.character import Character
from bot.config.secrets import is_reference, resolve_secret
from bot.kernel.errors import Problem, SecretReferenceError

__all__ = [
    "hide_secrets",
    "json_path",
    "PLACEHOLDER",
    "put_back_secrets",
    "secret_statuses",
    "secrets_written_in",
    "SecretStatus",
    "WELL_KNOWN_SECRETS",
]

#: What the editor shows instead of a secret written in the file.
PLACEHOLDER = "••• set in the file •••"
#: The keys every character's page reports on, whether its file names them or not.
WELL_KNOWN_SECRETS = ("DISCORD_API_TOKEN", "ELEVENLABS_API_KEY", "OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN")
# A plain setting with a name like these holds a secret too (character_setting reads it as one).
_SECRET_NAME = re.compile(r"(?:API_KEY|TOKEN|SECRET|PASSWORD)$", re.I)

#: Where a value sits in a character file: its keys (and list indexes) from the top.
Location = tuple[str | int, ...]


@dataclass(frozen=True)
class SecretStatus:
    """One secret as the page shows it: never its value."""

    key: str
    set: bool
    #: Where it comes from (or why it is not set): the file, a reference, the environment, .env.
    source: str


def _written_secret(value: object) -> bool:
    """A value that is a secret itself, not a reference to one (nor nothing)."""
    if isinstance(value, str):
        return bool(value) and not is_reference(value)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def secrets_written_in(data: Mapping[str, object]) -> dict[Location, object]:
    """Each secret written in a character file's JSON (``data``), by where it is."""
    found: dict[Location, object] = {}
    settings = data.get("settings")
    settings = settings if isinstance(settings, dict) else {}
    for where, mapping in ((("secrets",), data.get("secrets")), (("settings", "secrets"), settings.get("secrets"))):
        if isinstance(mapping, dict):
            found.update({(*where, key): value for key, value in mapping.items() if _written_secret(value)})
    for key, value in settings.items():
        if key != "secrets" and _SECRET_NAME.search(key) and _written_secret(value):
            found["settings", key] = value
    return found


def _set(data: object, where: Location, value: object) -> None:
    *parents, last = where
    for part in parents:
        data = data[part]  # type: ignore[index]
    data[last] = value  # type: ignore[index]


def hide_secrets(text: str, written: Mapping[Location, object]) -> str:
    """``text`` (a character file) with each secret in ``written`` replaced by :data:`PLACEHOLDER`.

    A file that parses is written out again (2-space indents) with the placeholders in; one that
    does not has each secret's JSON string replaced where it appears, so even a broken file is
    shown without them.
    """
    if not written:
        return text
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and secrets_written_in(data).keys() >= written.keys():
        for where in written:
            _set(data, where, PLACEHOLDER)
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    for value in written.values():
        if isinstance(value, str):
            for form in {json.dumps(value), json.dumps(value, ensure_ascii=False)}:
                text = text.replace(form, json.dumps(PLACEHOLDER, ensure_ascii=False))
    return text


def _placeholders(value: object, where: Location = ()) -> list[Location]:
    """Where :data:`PLACEHOLDER` is left in a parsed file."""
    if value == PLACEHOLDER:
        return [where]
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _placeholders(item, (*where, key))]
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in _placeholders(item, (*where, i))]
    return []


def json_path(where: Location) -> str:
    """``where`` in the loader's notation (``$.settings.secrets.OPENAI_API_KEY``)."""
    return "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in where)


def put_back_secrets(data: object, written: Mapping[Location, object]) -> tuple[bool, list[Problem]]:
    """Put each secret of ``written`` (the file's, before the edit) back where the edit left its
    placeholder. Returns whether any was put back, and a problem for each placeholder left where
    the file had no secret (moved, or its key renamed): it cannot be written as it is."""
    problems: list[Problem] = []
    restored = False
    for where in _placeholders(data):
        if where in written:
            _set(data, where, written[where])
            restored = True
        else:
            problems.append(
                Problem(
                    json_path(where),
                    "this placeholder stands for a secret that is not here in the file (was its key renamed "
                    "or moved?); type the value, or a reference such as env:NAME",
                )
            )
    return restored, problems


def _reference_source(value: str, where: str, process_env: Mapping[str, str]) -> str:
    scheme, _, target = value.removesuffix("?").partition(":")
    if scheme == "env":
        origin = "the daemon's environment" if process_env.get(target) else ".env"
        return f"{where}: {value}, from {origin}"
    if scheme == "credential":
        return f"{where}: {value}, a systemd credential"
    return f"{where}: {value}"


def _status(
    key: str, character: Character, base_dir: Path, process_env: Mapping[str, str], environ: Mapping[str, str]
) -> SecretStatus:
    """``key`` looked up as :func:`bot.config.settings.character_setting` does, saying where it was found."""
    notes: list[str] = []
    for where, mapping in (("secrets", character.secrets), ("settings.secrets", character.settings_secrets)):
        value = mapping.get(key)
        if not isinstance(value, str) or not value:
            continue
        if not is_reference(value):
            return SecretStatus(key, True, f"in the file ({where})")
        try:
            resolved = resolve_secret(value, environ=environ, base_dir=base_dir)
        except SecretReferenceError:
            return SecretStatus(key, False, f"{where}: {value} does not resolve")
        if resolved is not None:
            return SecretStatus(key, True, _reference_source(value, where, process_env))
        notes.append(f"{where}: {value} finds nothing")
    setting = character.settings.get(key)
    if isinstance(setting, (str, int, float)) and setting != "":
        return SecretStatus(key, True, "in the file (settings)")
    if process_env.get(key):
        return SecretStatus(key, True, "the daemon's environment")
    if environ.get(key):
        return SecretStatus(key, True, ".env")
    return SecretStatus(key, False, "; ".join(notes))


def secret_statuses(
    character: Character, base_dir: Path, process_env: Mapping[str, str], environ: Mapping[str, str]
) -> list[SecretStatus]:
    """Each secret the character's file names, and the well-known keys: set or not, and where from.

    ``process_env`` is the daemon's own environment, ``environ`` that with ``.env`` under it (what
    the loader resolves references against). Reads ``file:`` references: run it in a thread.
    """
    keys = {*WELL_KNOWN_SECRETS, *character.secrets, *character.settings_secrets}
    keys.update(key for key in character.settings if key != "secrets" and _SECRET_NAME.search(key))
    # ElevenLabs has had two key names (ELEVENLABS_XI_API_KEY for plugin-elevenlabs 0.x): show the one set.
    keys.update(key for key in environ if key.startswith("ELEVENLABS_") and _SECRET_NAME.search(key))
    return [_status(key, character, base_dir, process_env, environ) for key in sorted(keys)]
