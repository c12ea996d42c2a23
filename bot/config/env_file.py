"""Writing settings into a ``.env`` file, as the console's setup page does: merged with what the
file holds (its other lines kept as they are), readable by its owner only (0600), replaced whole
so that a reader never sees half a file."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from bot.kernel.files import write_atomically

__all__ = ["ENV_NAME", "set_env_values"]

#: What a setting's name may be.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _line(name: str, value: str) -> str:
    # Double quotes, with what python-dotenv unescapes in them escaped: the value reads back as given.
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'{name}="{escaped}"'


def _assigns(line: str) -> str | None:
    """The name a line sets (``NAME=…`` or ``export NAME=…``), or None."""
    found = re.match(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=", line)
    return found.group(1) if found else None


def set_env_values(path: Path, values: Mapping[str, str]) -> None:
    """Set each of ``values`` in the file at ``path`` (made if missing), where the file sets it
    already or else at its end; every other line is kept. The file is 0600 afterwards.

    Raises:
        ValueError: a name that is not a setting's, or a value with a line break, a NUL, or
            ``${`` (which .env expands).
        OSError: the file or its folder cannot be written.
    """
    for name, value in values.items():
        if not ENV_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a setting's name")
        if any(c in value for c in "\r\n\0"):
            raise ValueError(f"the value of {name} holds a line break; give it on one line")
        if "${" in value:
            # python-dotenv (and so pydantic-settings) expands ${NAME} in every value, quoted or not.
            raise ValueError(
                f"the value of {name} holds '${{', which .env would expand; set it in the environment instead"
            )
    try:
        old = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        old = []
    lines: list[str] = []
    written: set[str] = set()
    for line in old:
        setting = _assigns(line)
        if setting is not None and setting in values:
            if setting not in written:  # a name set twice keeps one line: the one that counts now
                lines.append(_line(setting, values[setting]))
                written.add(setting)
            continue
        lines.append(line)
    lines += [_line(name, value) for name, value in values.items() if name not in written]
    write_atomically(path, ("\n".join(lines) + "\n").encode("utf-8"), prefix=".env.")  # made 0600
    os.chmod(path, 0o600)
