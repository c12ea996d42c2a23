"""Daemon-wide settings, and how one character's setting is looked up.

Daemon settings come from the process environment and ``.env`` (process wins). A character's
setting is looked up, first hit wins (DESIGN.md): its ``secrets``, its ``settings.secrets``,
its ``settings`` (scalars only), then the daemon's environment. An empty value counts as unset.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from dotenv import dotenv_values
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from .character import Character

__all__ = ["DaemonSettings", "character_setting", "load_environ"]


class DaemonSettings(BaseSettings):
    """Settings of the daemon itself (not of any one character)."""

    model_config = SettingsConfigDict(env_prefix="TROUPE_", env_file=".env", extra="ignore")

    data_dir: Path = Field(default=Path("data"), description="where the database and caches live")
    db_path: Path | None = Field(default=None, description="the SQLite file; default <data_dir>/troupe.db")
    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR")

    @property
    def database(self) -> Path:
        """The SQLite file to open."""
        return self.db_path if self.db_path is not None else self.data_dir / "troupe.db"


def load_environ(env_file: str | Path = ".env", base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment characters see: ``.env`` values under the process's (process wins)."""
    import os

    merged = {k: v for k, v in dotenv_values(env_file).items() if v is not None} if Path(env_file).is_file() else {}
    merged.update(os.environ if base is None else base)
    return merged


def character_setting(character: Character, key: str, environ: Mapping[str, str]) -> str | None:
    """One setting as a character sees it, resolving in DESIGN.md's order; ``None`` if unset."""
    secret = character.secret(key)
    if secret is not None:
        return secret.get_secret_value()
    value = character.settings.get(key)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)) and value != "":
        return str(value)
    return environ.get(key) or None
