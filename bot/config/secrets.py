"""Secret references: keep keys out of character files.

A secret's value in a character file may be the secret itself or a reference to it:

``env:NAME``
    the environment variable ``NAME`` (the daemon's environment, ``.env`` included).
``file:PATH``
    the contents of a file, trailing newline stripped; a relative path is relative to the
    character file's folder.
``credential:NAME``
    a systemd credential (``LoadCredential=NAME:...``), read from ``$CREDENTIALS_DIRECTORY``.

A trailing ``?`` makes a reference optional: ``env:ARIA_DISCORD_TOKEN?`` resolves to nothing
when the variable is unset, so the character simply runs without that platform. Without the
``?`` an unresolvable reference is a configuration error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import SecretStr

from bot.kernel.errors import SecretReferenceError
from bot.kernel.files import UnreadableFile, expand_home, read_config_file, shown

__all__ = ["SCHEMES", "is_reference", "resolve_secret"]

SCHEMES = ("env:", "file:", "credential:")

#: The largest secret file read (keys and tokens are a few hundred bytes).
_MAX_SECRET_BYTES = 64 * 1024


def is_reference(value: str) -> bool:
    """True if ``value`` is a reference rather than a secret."""
    return value.startswith(SCHEMES)


def resolve_secret(
    value: str,
    *,
    environ: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> SecretStr | None:
    """Turn a secret's value from a character file into the secret.

    Returns ``None`` for an optional reference that does not resolve, or an empty value.

    Raises:
        SecretReferenceError: a required reference does not resolve. The message names the
            reference and what to do; it never contains a secret.
    """
    if not is_reference(value):
        return SecretStr(value) if value else None
    optional = value.endswith("?")
    ref = value[:-1] if optional else value
    scheme, _, target = ref.partition(":")
    if not target:
        raise SecretReferenceError(value, f"nothing after '{scheme}:'; write {scheme}:NAME")
    env = os.environ if environ is None else environ
    try:
        if scheme == "env":
            secret = _from_environment(value, target, env)
        else:
            path = _credential(target, env) if scheme == "credential" else _file(target, base_dir)
            secret = _from_file(value, path)
    except _Absent as exc:
        if optional:
            return None
        raise SecretReferenceError(value, str(exc)) from None
    return SecretStr(secret)


class _Absent(Exception):
    """A reference to nothing (unset, no such file, empty): no secret when the reference is
    optional, else an error saying so."""


def _from_environment(value: str, name: str, env: Mapping[str, str]) -> str:
    secret = env.get(name)
    if not secret:
        raise _Absent(
            f"environment variable {name} is not set; export it, add it to .env or the "
            f"systemd environment file, or write {value}? to make it optional"
        )
    return secret


def _credential(name: str, env: Mapping[str, str]) -> Path:
    """Where systemd put the credential ``name``."""
    directory = env.get("CREDENTIALS_DIRECTORY")
    if not directory:
        raise _Absent(
            "$CREDENTIALS_DIRECTORY is not set: credentials exist only when troupe runs under "
            "systemd; with systemd/troupe.service, a file /etc/troupe/credentials/NAME is the "
            "credential troupe_NAME (or add LoadCredential=NAME:/path/to/secret to the unit)"
        )
    return Path(directory) / name


def _file(target: str, base_dir: Path | None) -> Path:
    """A file's path, a relative one taken from the character file's folder."""
    path = expand_home(target)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return path


def _from_file(value: str, path: Path) -> str:
    """The file's text, trailing newline stripped. A file that is there but cannot be read is
    an error even for an optional reference: it is meant to be read."""
    try:
        secret = read_config_file(path, _MAX_SECRET_BYTES).decode("utf-8").rstrip("\r\n")
    except FileNotFoundError:
        raise _Absent(f"no such file: {shown(path)}") from None
    except UnreadableFile as exc:
        raise SecretReferenceError(value, f"{shown(path)} {exc}") from None
    except UnicodeDecodeError:
        raise SecretReferenceError(value, f"{shown(path)} is not UTF-8 text") from None
    if not secret:
        raise _Absent(f"{shown(path)} is empty")
    return secret
