"""Which platforms each character is to run on, which settings it still lacks for each, and the
start-up report of what cannot run."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import plugins as plugin_registry
from .character import Character, LoadResult
from .logs import agent_context
from .secrets import is_reference
from .settings import character_setting

__all__ = ["PlatformPlan", "plans_for", "report_gaps"]

# The daemon's start-up report: its lines read as they did when this was part of bot/daemon.py.
_log = logging.getLogger("bot.daemon")


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


def plans_for(result: LoadResult, environ: Mapping[str, str]) -> list[PlatformPlan]:
    """A plan per platform the character file asks for; interactive ones (the console) are left out."""
    known = plugin_registry.available()
    character = result.raise_for_problems()
    plans: list[PlatformPlan] = []
    for name in result.platforms:
        meta = known[name]
        if meta.interactive:
            continue
        missing = tuple(
            _describe_missing(character, k) for k in meta.requires if not character_setting(character, k, environ)
        )
        plans.append(PlatformPlan(character.name, name, missing))
    return plans


def _describe_missing(character: Character, key: str) -> str:
    """``KEY``, or ``KEY (env:NAME? resolves to nothing)`` when the file points it at a reference."""
    written = character.secrets.get(key) or character.settings_secrets.get(key)
    return f"{key} ({written} resolves to nothing)" if written and is_reference(written) else key


def report_gaps(characters: Sequence[LoadResult], plans: Sequence[PlatformPlan]) -> bool:
    """Log what keeps characters off their platforms (plugins troupe lacks, settings not set);
    whether any plan is ready. When none is, say what to configure."""
    for result in characters:
        if result.missing_plugins:
            character = result.raise_for_problems()
            with agent_context(character.name):
                job = "" if any(p.agent == character.name for p in plans) else "; it runs on no platform"
                _log.warning(
                    "%s starts without %s, which troupe does not have%s",
                    character.name,
                    ", ".join(result.missing_plugins),
                    job,
                )
    for plan in plans:
        if not plan.ready:
            with agent_context(plan.agent):
                _log.warning("%s: %s", plan.agent, plan.gap)
    if any(p.ready for p in plans):
        return True
    _log.error(
        "no platform configured: no character has a platform it can run on. Add "
        '"@elizaos/plugin-discord" or "@elizaos/plugin-telegram" to a character\'s plugins and '
        "give it DISCORD_API_TOKEN or TELEGRAM_BOT_TOKEN (in its settings.secrets, or the environment)"
    )
    return False
