"""A character's MCP servers as its file lists them (``settings.mcp``), checked at the edge.

::

    "settings": {"mcp": {
        "servers": {
            "files":   {"type": "stdio", "command": "uvx", "args": ["mcp-server-filesystem", "/srv"],
                        "env": {"API_KEY": "env:FILES_KEY"}, "cwd": "/srv", "timeout": 30},
            "search":  {"type": "http", "url": "https://mcp.example/mcp",
                        "headers": {"Authorization": "file:search.token"},
                        "tools": ["search"], "confirm": [], "admins": ["reindex"]},
            "legacy":  {"type": "sse", "url": "http://127.0.0.1:9000/sse"}
        },
        "allowedTools": ["files__read_file", "search__search"]
    }}

A bad entry is a :class:`ConfigError` naming its JSON path (``settings.mcp.servers.weather.url``)
and the fix. Values of ``env`` and ``headers`` may be secret references (``env:``, ``file:``,
``credential:``), resolved here; the resolved values are secrets (never logged, never in an error).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from bot.sdk import ConfigError, ToolAccess, is_reference, resolve_secret

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "McpConfig",
    "McpSettings",
    "ServerConfig",
    "ServerPolicy",
    "Transport",
    "parse_settings",
    "resolve_config",
    "shown_url",
]

#: Longest a server may take to start (initialise and list its tools) and a call may take.
DEFAULT_TIMEOUT_S = 30.0

_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


class Transport(StrEnum):
    STDIO = "stdio"
    SSE = "sse"
    HTTP = "http"
    """Streamable HTTP."""


class _Policy(BaseModel):
    """Who may use which of a server's tools (per character)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tools: list[str] | None = Field(default=None, description="the only tools offered (all when absent)")
    confirm: list[str] = Field(default_factory=list, description="tools asked about with buttons first")
    admins: list[str] = Field(default_factory=list, description="tools only the world's owner or admins trigger")
    owner: list[str] = Field(default_factory=list, description="tools only the world's owner triggers")
    timeout: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=3600)


class _Stdio(_Policy):
    type: Literal["stdio"]
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class _Remote(_Policy):
    url: str
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("give an http:// or https:// address")
        return value


class _Sse(_Remote):
    type: Literal["sse"]


class _Http(_Remote):
    type: Literal["http", "streamable-http", "streamableHttp"]


_Server = Annotated[_Stdio | _Sse | _Http, Field(discriminator="type")]
_SERVER = TypeAdapter(_Server)


class McpSettings(BaseModel):
    """``settings.mcp`` of one character."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    servers: dict[str, _Server] = Field(default_factory=dict)
    allowed_tools: list[str] | None = Field(default=None, alias="allowedTools")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """How to reach one server, secrets resolved: what a session is made from. Two characters
    with equal ones share the session (:attr:`fingerprint`)."""

    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str = field(default="", repr=False)  # may hold a key (?key=…): shown through :attr:`where`
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeout: float = DEFAULT_TIMEOUT_S

    @property
    def fingerprint(self) -> str:
        """A digest of everything that makes the session (secrets included, only hashed)."""
        parts = {
            "name": self.name,
            "transport": self.transport.value,
            "command": self.command,
            "args": list(self.args),
            "env": dict(sorted(self.env.items())),
            "cwd": self.cwd,
            "url": self.url,
            "headers": dict(sorted(self.headers.items())),
            "timeout": self.timeout,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

    @property
    def where(self) -> str:
        """Where the server is, for logs, notes and status: the command, or the URL as
        :func:`shown_url` shows it (never an env value, a header or a key in the URL)."""
        return self.command if self.transport is Transport.STDIO else shown_url(self.url)

    referenced: frozenset[str] = field(default=frozenset(), repr=False)
    """The values that came from secret references (``env:`` …): scrubbed from every log."""

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values to keep out of logs: those from references, and every header's (a key
        written inline in ``Authorization`` is still a key)."""
        return (*sorted(self.referenced), *self.headers.values(), *_url_secrets(self.url))


def shown_url(url: str) -> str:
    """``url`` as troupe shows it: each query value, the password (or a lone user name, often a
    token) and the fragment replaced by ``…`` — a key is often passed as ``?key=…``."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user, has_password, _ = userinfo.partition(":")
        netloc = f"{user}:…@{host}" if has_password else f"…@{host}"
    query = "&".join(f"{part.partition('=')[0]}=…" if "=" in part else "…" for part in parts.query.split("&") if part)
    return urlunsplit((parts.scheme, netloc, parts.path, query, "…" if parts.fragment else ""))


def _url_secrets(url: str) -> tuple[str, ...]:
    """What :func:`shown_url` hides of ``url``, as written and decoded: kept out of logs too (an
    HTTP error can quote the whole URL)."""
    parts = urlsplit(url)
    hidden = [part.partition("=")[2] or part for part in parts.query.split("&") if part]
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        hidden.append(userinfo.partition(":")[2] or userinfo)
    if parts.fragment:
        hidden.append(parts.fragment)
    return tuple(dict.fromkeys(form for value in hidden for form in (value, unquote(value)) if form))


@dataclass(frozen=True, slots=True)
class ServerPolicy:
    """What one character may do with one server's tools."""

    only: frozenset[str] | None = None
    confirm: frozenset[str] = frozenset()
    access: Mapping[str, ToolAccess] = field(default_factory=dict)

    def allows(self, tool: str) -> bool:
        return self.only is None or tool in self.only


@dataclass(frozen=True, slots=True)
class McpConfig:
    """One character's servers and what it may do with them."""

    servers: tuple[ServerConfig, ...] = ()
    policies: Mapping[str, ServerPolicy] = field(default_factory=dict)
    allowed_tools: frozenset[str] | None = None
    """Offered names (``server__tool``) the character may use; None: every tool of its servers."""


def parse_settings(raw: object, *, agent: str) -> McpSettings:
    """``settings.mcp`` checked; raises :class:`ConfigError` naming the JSON path and the fix."""
    if raw is None:
        return McpSettings()
    if not isinstance(raw, dict):
        raise ConfigError(f'{agent}: settings.mcp must be an object such as {{"servers": {{...}}}}')
    servers = raw.get("servers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{agent}: settings.mcp.servers must be an object of servers by name")
    parsed: dict[str, _Stdio | _Sse | _Http] = {}
    for name, entry in servers.items():
        where = f"settings.mcp.servers.{name}"
        if not _SERVER_NAME.match(name):
            raise ConfigError(f"{agent}: {where}: a server's name is 1-32 letters, digits, '_' or '-'")
        if isinstance(entry, dict) and "type" not in entry:
            entry = {**entry, "type": "stdio" if "command" in entry else "http"}
        try:
            parsed[name] = _SERVER.validate_python(entry)
        except ValidationError as exc:
            raise ConfigError(f"{agent}: {_explain(where, exc)}") from None
    try:
        allowed = McpSettings.model_validate({"allowedTools": raw.get("allowedTools")}).allowed_tools
    except ValidationError:
        raise ConfigError(f"{agent}: settings.mcp.allowedTools must be a list of tool names") from None
    return McpSettings(servers=parsed, allowedTools=allowed)


def _explain(where: str, exc: ValidationError) -> str:
    """The first problem of a server's entry: its path and what to write instead."""
    error = exc.errors()[0]
    loc = [str(part) for part in error["loc"] if part not in ("stdio", "sse", "http", "streamable-http")]
    path = ".".join([where, *loc])
    kind = error["type"]
    if kind == "union_tag_invalid" or kind == "union_tag_not_found":
        return f'{where}.type: give "stdio" (a command), "http" (streamable HTTP) or "sse" (a URL)'
    if kind == "missing":
        return f"{path} is missing: add it"
    if kind == "extra_forbidden":
        return f"{path}: unknown key; known keys: type, command, args, env, cwd, url, headers, timeout, tools, confirm, admins, owner"
    return f"{path}: {error['msg']}"


def resolve_config(raw: object, *, agent: str, environ: Mapping[str, str], base_dir: Path | None) -> McpConfig:
    """``settings.mcp`` checked and its secret references resolved.

    Raises:
        ConfigError: a bad entry (its JSON path and the fix), or a reference that does not resolve
            (the reference, never the secret).
    """
    settings = parse_settings(raw, agent=agent)
    servers: list[ServerConfig] = []
    policies: dict[str, ServerPolicy] = {}
    for name, entry in settings.servers.items():
        where = f"settings.mcp.servers.{name}"
        referenced: set[str] = set()
        if isinstance(entry, _Stdio):
            server = ServerConfig(
                name=name,
                transport=Transport.STDIO,
                command=entry.command,
                args=tuple(entry.args),
                env=_resolved(
                    entry.env, f"{where}.env", agent=agent, environ=environ, base_dir=base_dir, referenced=referenced
                ),
                cwd=entry.cwd,
                timeout=entry.timeout,
            )
        else:
            server = ServerConfig(
                name=name,
                transport=Transport.SSE if isinstance(entry, _Sse) else Transport.HTTP,
                url=entry.url,
                headers=_resolved(
                    entry.headers,
                    f"{where}.headers",
                    agent=agent,
                    environ=environ,
                    base_dir=base_dir,
                    referenced=referenced,
                ),
                timeout=entry.timeout,
            )
        server = dataclasses.replace(server, referenced=frozenset(referenced))
        servers.append(server)
        access = {tool: ToolAccess.ADMINS for tool in entry.admins}
        access.update({tool: ToolAccess.OWNER for tool in entry.owner})
        policies[name] = ServerPolicy(
            only=frozenset(entry.tools) if entry.tools is not None else None,
            confirm=frozenset(entry.confirm),
            access=access,
        )
    allowed = frozenset(settings.allowed_tools) if settings.allowed_tools is not None else None
    return McpConfig(servers=tuple(servers), policies=policies, allowed_tools=allowed)


def _resolved(
    values: Mapping[str, str],
    where: str,
    *,
    agent: str,
    environ: Mapping[str, str],
    base_dir: Path | None,
    referenced: set[str],
) -> dict[str, str]:
    """``values`` with their secret references resolved (the secrets added to ``referenced``)."""
    resolved: dict[str, str] = {}
    for key, value in values.items():
        try:
            secret = resolve_secret(value, environ=environ, base_dir=base_dir)
        except ConfigError as exc:
            raise ConfigError(f"{agent}: {where}.{key}: {exc}") from None
        if secret is not None:
            resolved[key] = secret.get_secret_value()
            if is_reference(value):
                referenced.add(resolved[key])
    return resolved
