"""Which platforms each character is to run on, which settings it still lacks for each, whether
its plugins' and platforms' settings can work (:func:`preflight`), and the start-up report of
what cannot run. ``troupe check`` and ``troupe start`` make the same checks, through here, before
anything is opened or connected."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.config import plugins as plugin_registry
from bot.config.character import Character, LoadResult
from bot.config.secrets import is_reference
from bot.config.settings import SettingsView, character_setting
from bot.kernel.errors import ConfigError, PluginLoadError, SettingUnset
from bot.kernel.logs import agent_context
from bot.kernel.tables import check_tables
from bot.runtime.toolboxes import OwnToolChoice

__all__ = [
    "CONSOLE_OFF",
    "PlatformPlan",
    "Preflight",
    "plans_for",
    "preflight",
    "refusal",
    "report_gaps",
    "setup_needs",
]

# The daemon's start-up report: its lines read as they did when this was part of bot/daemon/daemon.py.
_log = logging.getLogger("bot.daemon.daemon")


@dataclass(frozen=True, slots=True)
class PlatformPlan:
    """One character on one platform, and what it still lacks."""

    agent: str
    platform: str
    missing: tuple[str, ...]

    @property
    def ready(self) -> bool:
        return not self.missing

    @property
    def gap(self) -> str:
        """Why it does not run: ``telegram skipped, TELEGRAM_BOT_TOKEN not set``."""
        return f"{self.platform} skipped, {' and '.join(self.missing)} not set"


#: What a platform the console provides lacks while the console is off.
CONSOLE_OFF = "TROUPE_CONSOLE_PORT (the console is off)"


def plans_for(result: LoadResult, environ: Mapping[str, str], *, console: bool = False) -> list[PlatformPlan]:
    """A plan per platform the character file asks for; interactive ones (the terminal's) are left out.

    With the ``console`` on, every character also runs on the platforms the console provides
    (``with_console``: the browser's Chat page), listed in its file or not: a character with a
    model key and no platform token can still be talked to. With it off, such a platform the
    file lists lacks the console (:data:`CONSOLE_OFF`).
    """
    known = plugin_registry.available()
    character = result.raise_for_problems()
    plans: list[PlatformPlan] = []
    names = list(result.platforms)
    if console:
        names += [name for name, meta in known.items() if meta.with_console and name not in names]
    for name in names:
        meta = known[name]
        if meta.interactive:
            continue
        if meta.with_console:
            plans.append(PlatformPlan(character.name, name, () if console else (CONSOLE_OFF,)))
            continue
        missing = tuple(
            _describe_missing(character, k) for k in meta.requires if not character_setting(character, k, environ)
        )
        plans.append(PlatformPlan(character.name, name, missing))
    return plans


@dataclass(frozen=True, slots=True)
class Preflight:
    """What one valid character file needs before it can run, found without opening or
    connecting anything."""

    agent: str
    plans: tuple[PlatformPlan, ...]
    problems: tuple[str, ...]
    """Settings its plugins or its platforms cannot work with, each saying what to do."""
    notes: tuple[str, ...] = ()
    """What it runs without on purpose, as its settings say (embeddings turned off)."""
    unset: tuple[tuple[str, ...], ...] = ()
    """Of its problems, those that are only a setting not set: for each, the settings any one of
    which would do (:class:`~bot.kernel.errors.SettingUnset`: the model key)."""

    @property
    def runs(self) -> bool:
        """It can start and run on at least one platform."""
        return not self.problems and any(p.ready for p in self.plans)

    @property
    def findings(self) -> list[str]:
        """What keeps it from running at all: its problems, and the settings of its platforms
        when it lacks them for every one."""
        if any(p.ready for p in self.plans):
            return list(self.problems)
        return [*self.problems, *(f"{p.platform}: {' and '.join(p.missing)} not set" for p in self.plans)]

    @property
    def skipped(self) -> list[str]:
        """Platforms it runs without (another of its platforms is ready)."""
        return [p.gap for p in self.plans if not p.ready] if any(p.ready for p in self.plans) else []


def preflight(result: LoadResult, environ: Mapping[str, str], *, console: bool = False) -> Preflight:
    """Check one valid character file as its agent would start: the settings each platform
    requires, then each plugin's and each ready platform's own ``check(settings)`` (a package
    function raising :class:`~bot.kernel.errors.ConfigError`; the model key, a value of the wrong form)
    and the tables it declares.
    A ``check`` may return notes: what the character runs without on purpose. ``console``: the
    console is on (see :func:`plans_for`)."""
    character = result.raise_for_problems()
    plans = tuple(plans_for(result, environ, console=console))
    view = SettingsView(character, environ, result.model_preset)
    problems: list[str] = []
    notes: list[str] = []
    unset: list[tuple[str, ...]] = []
    try:
        names = plugin_registry.load_order(plugin_registry.with_model_plugin(result.plugins))
    except (PluginLoadError, LookupError) as exc:
        problems.append(str(exc))
        names = []
    for name in [*names, *(p.platform for p in plans if p.ready)]:
        try:  # what the store could not make (a name another plugin has shows only at start)
            check_tables(name, plugin_registry.available()[name].tables)
        except ConfigError as exc:
            problems.append(str(exc))
        check = getattr(importlib.import_module(plugin_registry.module_path(name)), "check", None)
        try:
            if check is not None:
                notes.extend(check(view) or ())
        except ConfigError as exc:
            problems.append(exc.reason_for(character.name))
            if isinstance(exc, SettingUnset):
                unset.append(exc.settings)
    try:
        notes.extend(_own_tools(view, names))
    except ConfigError as exc:
        problems.append(exc.reason_for(character.name))
    return Preflight(character.name, plans, tuple(problems), tuple(notes), tuple(unset))


def _own_tools(view: SettingsView, plugins: Sequence[str]) -> list[str]:
    """Notes naming troupe's own tools the character is offered (``TROUPE_TOOLS``), and the names
    it gives that none of its plugins offers. Raises ConfigError for a value that is no list."""
    own = [tool for name in plugins for tool in plugin_registry.available()[name].tools]
    choice = OwnToolChoice.parse(view.get_setting("TROUPE_TOOLS"), uses_tools="mcp" in plugins, agent=view.agent)
    offered = [tool for tool in own if choice.allows(tool)]
    unknown = choice.unknown(own)
    notes = [f"troupe's own tools: {', '.join(offered)}"] if offered else []
    if unknown:
        notes.append(
            f"TROUPE_TOOLS names {', '.join(unknown)}, which none of its plugins offers (they offer: {', '.join(own)})"
        )
    return notes


def setup_needs(checks: Sequence[Preflight]) -> tuple[tuple[str, ...], ...]:
    """What to set so that characters can run, when nothing is configured yet: no character can
    run, and every problem of every one is only a setting not set (the model key). For each, the
    settings any one of which would do, each group once. Empty when anything else is wrong (that
    is invalid configuration) or a character can run."""
    if not checks or any(c.runs for c in checks):
        return ()
    if any(not c.problems or len(c.unset) != len(c.problems) for c in checks):
        return ()
    return tuple(dict.fromkeys(group for c in checks for group in c.unset))


def refusal(checks: Sequence[Preflight]) -> str | None:
    """Why ``troupe start`` cannot run these characters at all, in one message naming every
    setting to fix; ``None`` when at least one can run."""
    if any(c.runs for c in checks):
        return None
    found = [f"{c.agent}: {finding}" for c in checks for finding in c.findings]
    platformless = [c.agent for c in checks if not c.plans]
    if platformless:
        found.append(
            f"{', '.join(platformless)} {'lists' if len(platformless) == 1 else 'list'} no platform: add "
            '"@elizaos/plugin-discord" or "@elizaos/plugin-telegram" to the plugins'
        )
    return (
        f"no character can run, so troupe does not start. {'; '.join(found)}. Set what is missing in the "
        "character's settings.secrets or in the environment (.env, or the systemd environment file)"
    )


def _describe_missing(character: Character, key: str) -> str:
    """``KEY``, or ``KEY (env:NAME? resolves to nothing)`` when the file points it at a reference."""
    written = character.secrets.get(key) or character.settings_secrets.get(key)
    return f"{key} ({written} resolves to nothing)" if written and is_reference(written) else key


def report_gaps(characters: Sequence[LoadResult], checks: Sequence[Preflight]) -> str | None:
    """Log what keeps characters off their platforms (plugins troupe lacks, settings not set or
    that cannot work); when none can run, say only that, in one message, and return it."""
    refused = refusal(checks)
    if refused is not None:
        _log.error("%s", refused)
        return refused
    for result in characters:
        if result.missing_plugins:
            character = result.raise_for_problems()
            with agent_context(character.name):
                job = "" if any(c.agent == character.name and c.plans for c in checks) else "; it runs on no platform"
                _log.warning(
                    "%s starts without %s, which troupe does not have%s",
                    character.name,
                    ", ".join(result.missing_plugins),
                    job,
                )
    # A character whose settings cannot work says so as it fails to start or connect.
    for check in checks:
        with agent_context(check.agent):
            for plan in check.plans:
                if not plan.ready:
                    _log.warning("%s: %s", check.agent, plan.gap)
    return None
