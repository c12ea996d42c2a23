"""Which platforms and plugins exist, found by looking at the packages themselves.

A platform lives in ``platforms/<name>/`` and a plugin in ``plugins/<name>/``; each package's
``__init__`` declares ``meta = PluginMeta(...)``. Adding a package is all it takes to make its
name (and its elizaOS aliases) valid in a character file: there is no list to edit.

Package ``__init__`` modules stay light (no SDK imports), so discovering them is cheap.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

from bot.kernel.errors import PluginLoadError
from bot.kernel.tables import Table

__all__ = [
    "BUILTIN",
    "PluginMeta",
    "available",
    "for_model_provider",
    "load_order",
    "model_plugin",
    "module_path",
    "platform_names",
    "resolve",
    "with_model_plugin",
]

_log = logging.getLogger(__name__)

Kind = Literal["platform", "plugin"]

#: elizaOS plugin names that troupe provides without any plugin: the store is always there.
BUILTIN: frozenset[str] = frozenset({"@elizaos/plugin-sql", "@elizaos/plugin-pglite", "sql"})


@dataclass(frozen=True, slots=True)
class PluginMeta:
    """What a platform or plugin package says about itself."""

    name: str
    """troupe's name for it: the package name (``discord``, ``openai``)."""
    description: str
    aliases: tuple[str, ...] = ()
    """Other names a character file may use (``@elizaos/plugin-discord``)."""
    presets: dict[str, str] = field(default_factory=dict)
    """Alias → preset name, for aliases that select a flavour (``@elizaos/plugin-ollama`` → ``ollama``)."""
    kind: Kind = "plugin"
    always: bool = False
    """Loaded for every character whether listed or not (the conversation pipeline)."""
    depends: tuple[str, ...] = ()
    """troupe names of plugins that must be set up first."""
    requires: tuple[str, ...] = ()
    """Settings without which it cannot start for a character (a platform's bot token)."""
    interactive: bool = False
    """A platform that talks to the terminal (``troupe chat``), never started by the daemon."""
    with_console: bool = False
    """A platform the console provides (the browser's Chat page): it needs no setting, and every
    character runs on it whenever the console is on (``TROUPE_CONSOLE_PORT`` not 0)."""
    shardable: bool = False
    """A platform whose ``connect`` takes ``shards=`` (:class:`bot.config.shards.Shards`): a bot in many
    servers is split into shards, each leased on its own when several daemons share the troupe."""
    models: bool = False
    """It serves the models every agent needs to think; the first such plugin (by name) is added
    to a character that lists none."""
    model_providers: dict[str, str | None] = field(default_factory=dict)
    """elizaOS ``modelProvider`` values it serves, each with the preset it selects (or ``None``)."""
    models_hint: str = ""
    """Which models it serves and how to reach them ("any OpenAI-compatible endpoint: set …"),
    for a file that asks for a model plugin troupe lacks."""
    tools: tuple[str, ...] = ()
    """The names of troupe's own tools it offers (``runtime.register_tool``), which ``troupe
    check`` lists for a character that is offered them."""
    tables: tuple[Table, ...] = ()
    """The tables of its own it keeps in the store (``bot.kernel.tables``): made, and given the
    columns a newer declaration adds, when an agent loading it starts; ``runtime.table(t)``
    reads and writes them."""


@cache
def available() -> dict[str, PluginMeta]:
    """Every platform and plugin package, by troupe name (platforms first)."""
    found: dict[str, PluginMeta] = {}
    for package_name in ("platforms", "plugins"):
        package = importlib.import_module(package_name)
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
            if not info.ispkg or info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{package_name}.{info.name}")
            meta = getattr(module, "meta", None)
            if not isinstance(meta, PluginMeta):
                _log.debug("%s.%s declares no PluginMeta; skipped", package_name, info.name)
                continue
            found[meta.name] = meta
    return found


@cache
def _by_alias() -> dict[str, tuple[PluginMeta, str | None]]:
    table: dict[str, tuple[PluginMeta, str | None]] = {}
    for meta in available().values():
        table[meta.name.lower()] = (meta, None)
        for alias in meta.aliases:
            table[alias.lower()] = (meta, meta.presets.get(alias))
    return table


def resolve(name: str) -> tuple[PluginMeta, str | None] | None:
    """Find the package a character's plugin name means, and the preset it selects.

    Returns ``None`` for a name nobody declares. Built-in names (:data:`BUILTIN`) are not
    resolved here; callers skip them.
    """
    return _by_alias().get(name.strip().lower())


def model_plugin() -> PluginMeta:
    """The plugin that serves models to an agent whose file names none.

    Raises:
        LookupError: no installed plugin serves models (a broken installation).
    """
    for meta in available().values():
        if meta.models:
            return meta
    raise LookupError("no installed troupe plugin serves models; reinstall troupe")


def with_model_plugin(names: Iterable[str]) -> list[str]:
    """``names`` (a character file's plugins), plus the model plugin when none of them serves
    models: every agent needs one to think."""
    plugins = list(names)
    known = available()
    if any(known[name].models for name in plugins if name in known):
        return plugins
    return [*plugins, model_plugin().name]


def for_model_provider(value: str) -> tuple[PluginMeta, str | None] | None:
    """The plugin serving an elizaOS ``modelProvider`` value, and the preset it selects."""
    wanted = value.strip().lower()
    for meta in available().values():
        if wanted in meta.model_providers:
            return meta, meta.model_providers[wanted]
    return None


def platform_names() -> list[str]:
    """Every platform's troupe name, which is also the ``source`` of the messages heard on it."""
    return [name for name, meta in available().items() if meta.kind == "platform"]


def module_path(name: str) -> str:
    """The module a plugin or platform lives in (``plugins.core``, ``platforms.discord``)."""
    meta = available()[name]
    return f"{'platforms' if meta.kind == 'platform' else 'plugins'}.{name}"


def load_order(requested: Iterable[str]) -> list[str]:
    """Plugins to load, dependencies first, ``always`` plugins included; file order breaks ties.

    Raises:
        PluginLoadError: an unknown dependency or a dependency cycle.
    """
    known = available()
    wanted = [n for n, m in known.items() if m.always and m.kind == "plugin"]
    wanted += [n for n in requested if n not in wanted]
    order: list[str] = []
    visiting: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        if name in visiting:
            cycle = " -> ".join([*visiting[visiting.index(name) :], name])
            raise PluginLoadError(name, None, ValueError(f"dependency cycle: {cycle}"))
        meta = known.get(name)
        if meta is None:
            needed_by = visiting[-1] if visiting else "the character"
            raise PluginLoadError(name, None, ValueError(f"unknown plugin (needed by {needed_by})"))
        visiting.append(name)
        for dep in meta.depends:
            visit(dep)
        visiting.pop()
        order.append(name)

    for name in wanted:
        visit(name)
    return order
