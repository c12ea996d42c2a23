"""Daemon-wide settings, and how one character's setting is looked up.

Daemon settings come from the process environment and ``.env`` (process wins). A character's
setting is looked up, first hit wins: its ``secrets``, its ``settings.secrets``,
its ``settings`` (scalars, and lists of them as a JSON array), then the daemon's environment. An
empty value counts as unset.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from dotenv import dotenv_values
from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.config.character import Character
from bot.kernel.errors import ConfigError
from bot.kernel.files import UnreadableFile, read_config_file
from bot.kernel.logs import LEVELS

__all__ = ["DaemonSettings", "SettingReader", "SettingsView", "character_setting", "load_environ"]

_N = TypeVar("_N", int, float)

#: The largest .env read.
_MAX_ENV_BYTES = 1024 * 1024


class DaemonSettings(BaseSettings):
    """Settings of the daemon itself (not of any one character)."""

    model_config = SettingsConfigDict(env_prefix="TROUPE_", env_file=".env", extra="ignore")

    def __init__(self, **values: Any) -> None:
        """Read the settings; a bad value is a :class:`~bot.kernel.errors.ConfigError` naming the variable.

        Raises:
            ConfigError: a setting has a value it cannot take, or ``.env`` cannot be read.
        """
        env_file = values.get("_env_file", ".env")
        if env_file is not None:
            _read_env_file(Path(env_file))  # its problems, said plainly, before pydantic-settings reads it
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise ConfigError(_settings_message(exc)) from None

    data_dir: Path = Field(default=Path("data"), description="where the database and caches live")
    db_path: Path | None = Field(default=None, description="the SQLite file; default <data_dir>/troupe.db")
    database_url: SecretStr | None = Field(
        default=None,
        description="a PostgreSQL database with pgvector (postgresql://…) shared by several daemons; "
        "unset: the SQLite file",
    )
    lease_s: float = Field(
        default=10.0,
        ge=1,
        le=300,
        allow_inf_nan=False,
        description="with TROUPE_DATABASE_URL: how long a daemon holds a character without renewing; "
        "another daemon takes over within this time after it dies",
    )
    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING, ERROR or CRITICAL")
    reconnect_base_s: float = Field(
        default=2.0,
        gt=0,
        allow_inf_nan=False,
        description="first wait before connecting to an unreachable platform again; it doubles on each failure",
    )
    reconnect_cap_s: float = Field(
        default=60.0, gt=0, allow_inf_nan=False, description="longest wait between connection attempts"
    )
    store_wait_s: float = Field(
        default=60.0,
        ge=0,
        allow_inf_nan=False,
        description="at start, how long to wait for a SQLite database another process holds locked before exiting "
        "(75: systemd starts troupe again)",
    )
    stop_timeout_s: float = Field(
        default=20.0,
        gt=0,
        allow_inf_nan=False,
        description="on SIGTERM, how long replies in flight may take to finish before the daemon closes anyway",
    )
    control_socket: Path | None = Field(
        default=None,
        description="the Unix socket `troupe status` and `troupe "
        "reload` talk to; default $RUNTIME_DIRECTORY/control.sock under systemd, "
        "else control.sock next to the database",
    )
    health_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="serve /healthz, /readyz, /metrics and /status over HTTP on this port (unset: off)",
    )
    health_host: str = Field(
        default="127.0.0.1",
        description="the address the health port binds; anything but loopback needs TROUPE_HEALTH_TOKEN",
    )
    health_token: SecretStr | None = Field(
        default=None, description="when set, HTTP requests need `Authorization: Bearer <token>`"
    )

    console_port: int = Field(
        default=8420,
        ge=0,
        le=65535,
        description="serve the web console on this port (0: off)",
    )
    console_host: str = Field(
        default="127.0.0.1",
        description="the address the console binds; anything but loopback is logged as a warning",
    )
    console_token: SecretStr | None = Field(
        default=None,
        description="the console's login token; unset: one generated at first start in <data_dir>/console-token",
    )

    webhook_port: int = Field(
        default=8443,
        ge=0,
        le=65535,
        description="where platforms push updates (TELEGRAM_WEBHOOK_URL), behind your reverse proxy; "
        "bound only when a character takes its updates by webhook",
    )
    webhook_host: str = Field(
        default="127.0.0.1",
        description="the address the webhook port binds (your reverse proxy forwards to it)",
    )

    @field_validator(
        "data_dir", "db_path", "control_socket", "health_host", "console_host", "webhook_host", mode="before"
    )
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # The environment cannot hold one, but .env can; the OS refuses such a path with ValueError.
        if isinstance(value, str) and "\x00" in value:
            raise ValueError("contains a NUL byte; remove it")
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _level(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().upper() in LEVELS:
            return value.strip().upper()
        raise ValueError(f"must be one of {', '.join(LEVELS)}")

    @property
    def control_path(self) -> Path:
        """The control socket's path."""
        if self.control_socket is not None:
            return self.control_socket
        runtime_dir = os.environ.get("RUNTIME_DIRECTORY", "").split(":")[0]
        return Path(runtime_dir) / "control.sock" if runtime_dir else self.database.parent / "control.sock"

    @property
    def database(self) -> Path:
        """The SQLite file to open (also where the control socket and history go by default)."""
        return self.db_path if self.db_path is not None else self.data_dir / "troupe.db"

    @property
    def store_location(self) -> str:
        """What to open: TROUPE_DATABASE_URL when set, else the SQLite file."""
        if self.database_url is not None:
            return self.database_url.get_secret_value()
        return str(self.database)

    @field_validator("database_url", mode="after")
    @classmethod
    def _postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a PostgreSQL URL (postgresql://user:password@host:5432/database)")
        return value


def _settings_message(exc: ValidationError) -> str:
    """Every bad daemon setting, by its environment variable, with what it must be."""
    lines = []
    for err in exc.errors():
        field = str(err["loc"][0]) if err["loc"] else "?"
        reason = err["msg"].removeprefix("Value error, ")
        reason = reason[:1].lower() + reason[1:]
        given = err.get("input")
        if isinstance(given, str):
            shown = f" is {given!r}" if len(given) <= 40 else f" is {given[:30]!r}… ({len(given)} characters)"
        else:
            shown = ""
        lines.append(f"TROUPE_{field.upper()}{shown}: {reason}")
    return "bad daemon setting: " + "; ".join(lines) + ". Fix it in the environment or .env"


def _read_env_file(path: Path) -> str | None:
    """The text of a ``.env`` file, ``None`` when there is none.

    Raises:
        ConfigError: it exists but is not a regular UTF-8 text file of a sensible size.
    """
    try:
        raw = read_config_file(path, _MAX_ENV_BYTES)
    except FileNotFoundError:
        return None
    except UnreadableFile as exc:
        raise ConfigError(f"{path} {exc}; it should hold NAME=value lines") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text (bad byte at offset {exc.start}); save it as UTF-8") from None


def load_environ(env_file: str | Path = ".env", base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment characters see: ``.env`` values under the process's (process wins).

    Raises:
        ConfigError: ``.env`` exists but cannot be read as text.
    """
    text = _read_env_file(Path(env_file))
    merged = {k: v for k, v in dotenv_values(stream=io.StringIO(text)).items() if v is not None} if text else {}
    merged.update(os.environ if base is None else base)
    return merged


def character_setting(character: Character, key: str, environ: Mapping[str, str]) -> str | None:
    """One setting as a character sees it, resolved in the module docstring's order; ``None`` if unset."""
    secret = character.secret(key)
    if secret is not None:
        return secret.get_secret_value()
    value = character.settings.get(key)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)) and value != "":
        return str(value)
    if isinstance(value, list) and value and all(_is_scalar(item) for item in value):
        # As elizaOS character files write id lists (allowedGroupIds: ["-100…"]); every list
        # reader (SettingReader.id_list) takes a JSON array.
        return json.dumps(value)
    return environ.get(key) or None


def _is_scalar(value: object) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class SettingsView:
    """One character's settings as its runtime will read them, before any runtime exists: what a
    plugin's or platform's ``check`` reads (``troupe check``, and ``troupe start`` before it opens
    the database)."""

    character: Character
    environ: Mapping[str, str]
    model_preset: str | None = None

    @property
    def agent(self) -> str:
        return self.character.name

    @property
    def agent_id(self) -> str:
        return self.character.agent_id

    def get_setting(self, key: str) -> str | None:
        return character_setting(self.character, key, self.environ)


class SettingReader:
    """Typed reads of one agent's settings, for plugins and platforms.

    Every value comes through ``get_setting`` (so per-character values win over the daemon's);
    a value of the wrong form raises :class:`~bot.kernel.errors.ConfigError` naming the agent, the
    setting and what is expected, never silently falling back.
    """

    def __init__(self, get_setting: Callable[[str], str | None], agent: str) -> None:
        self._get = get_setting
        self.agent = agent

    def optional(self, key: str) -> str | None:
        """The setting stripped; ``None`` when unset or blank."""
        value = self._get(key)
        return (value.strip() or None) if value is not None else None

    def get(self, key: str, default: str) -> str:
        return self.optional(key) or default

    def flag(self, key: str, default: bool = False) -> bool:
        raw = self.optional(key)
        if raw is None:
            return default
        value = raw.lower()
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        raise ConfigError(f"{key} must be true or false, not {raw!r}", agent=self.agent)

    def positive_float(self, key: str, default: float) -> float:
        return self._checked(key, default, float, lambda v: v > 0, "a positive number")

    def number(self, key: str, default: float, low: float, high: float) -> float:
        """A number from ``low`` to ``high`` inclusive."""
        return self._checked(
            key, default, float, lambda v: low <= v <= high, f"a number from {low:g} to {high:g} (such as {default:g})"
        )

    def whole(self, key: str, default: int, low: int, high: int) -> int:
        """A whole number from ``low`` to ``high`` inclusive."""
        return self._checked(key, default, int, lambda v: low <= v <= high, f"a whole number from {low} to {high}")

    def count(self, key: str, default: int, *, minimum: int = 0) -> int:
        return self._checked(key, default, int, lambda v: v >= minimum, f"a whole number, {minimum} or more")

    def _checked(
        self, key: str, default: _N, parse: Callable[[str], _N], valid: Callable[[_N], bool], expected: str
    ) -> _N:
        """``parse(value)`` when set, else ``default``; a value that does not parse or is not
        ``valid`` (NaN never is: it fails every comparison) is an error saying what is ``expected``."""
        raw = self.optional(key)
        if raw is None:
            return default
        try:
            value = parse(raw)
        except ValueError:
            value = None
        if value is None or not valid(value):
            raise ConfigError(f"{key} must be {expected}, not {raw!r}", agent=self.agent)
        return value

    def id_list(self, key: str, *, pattern: str = r"-?\d+") -> list[str] | None:
        """A list of ids written as a JSON array or a comma-separated list; ``None`` when unset.

        Anything else (a malformed array, an id of the wrong form) is an error, not "allow nothing".
        """
        raw = self.optional(key)
        if raw is None:
            return None
        if raw.startswith("["):
            try:
                items = json.loads(raw)
            except ValueError:
                raise ConfigError(f"{key} is not a valid JSON array: {raw!r}", agent=self.agent) from None
            if not isinstance(items, list):
                raise ConfigError(f"{key} must be a JSON array or a comma-separated list", agent=self.agent)
        else:
            items = raw.split(",")
        ids = [str(item).strip() for item in items if str(item).strip()]
        bad = [i for i in ids if not re.fullmatch(pattern, i)]
        if bad:
            raise ConfigError(
                f"{key} has entries that are not ids: {', '.join(map(repr, bad))}; "
                'write ids as a comma-separated list ("123, 456") or a JSON array',
                agent=self.agent,
            )
        return ids


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
