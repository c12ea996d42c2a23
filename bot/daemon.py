"""The daemon: every character, one database, one event loop.

This version records each character in the database and works out which platforms each one
can run on. Platform adapters start here as they land (Discord, Telegram); until a character
has a platform it can run on, the daemon stops with a message saying what to configure.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import plugins as plugin_registry
from .character import Character, LoadResult
from .errors import EXIT_CONFIG
from .secrets import is_reference
from .settings import DaemonSettings, character_setting
from .store import Database

__all__ = ["Daemon", "PlatformPlan"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PlatformPlan:
    """One character on one platform, and what it still lacks."""

    agent: str
    platform: str
    missing: tuple[str, ...]

    @property
    def ready(self) -> bool:
        return not self.missing


def _describe_missing(character: Character, key: str) -> str:
    """``KEY``, or ``KEY (env:NAME? is unset)`` when the file points it at a reference."""
    written = character.secrets.get(key) or character.settings_secrets.get(key)
    return f"{key} ({written} resolves to nothing)" if written and is_reference(written) else key


class Daemon:
    """Runs a set of loaded characters until stopped."""

    def __init__(self, settings: DaemonSettings, characters: Sequence[LoadResult], environ: Mapping[str, str]) -> None:
        self.settings = settings
        self.characters = [r for r in characters if r.ok]
        self.environ = environ

    def plan(self) -> list[PlatformPlan]:
        """Every (character, platform) pair the character files ask for, with missing settings."""
        known = plugin_registry.available()
        plans: list[PlatformPlan] = []
        for result in self.characters:
            character = result.raise_for_problems()
            for name in result.platforms:
                meta = known[name]
                if meta.interactive:
                    continue
                missing = tuple(
                    _describe_missing(character, k) for k in meta.requires if not character_setting(character, k, self.environ)
                )
                plans.append(PlatformPlan(character.name, name, missing))
        return plans

    async def run(self) -> int:
        """Open the database, record the characters, run until stopped; returns the exit status."""
        async with Database(self.settings.database) as db:
            for result in self.characters:
                record = result.raise_for_problems().to_record()
                await db.for_agent(record.id).upsert_agent(record)
                _log.info("%s loaded (agent %s)", record.name, record.id)

            plans = self.plan()
            ready = [p for p in plans if p.ready]
            for plan in plans:
                if not plan.ready:
                    _log.warning("%s: %s skipped, %s not set", plan.agent, plan.platform, " and ".join(plan.missing))
            if not ready:
                _log.error(
                    "no platform configured: no character has a platform it can run on. Add "
                    '"@elizaos/plugin-discord" or "@elizaos/plugin-telegram" to a character\'s plugins and '
                    "give it DISCORD_API_TOKEN or TELEGRAM_BOT_TOKEN (in its settings.secrets, or the environment)"
                )
                return EXIT_CONFIG
            for plan in ready:
                _log.error("%s: the %s platform is not available in this build yet", plan.agent, plan.platform)
            return EXIT_CONFIG
