"""``SHOULD_RESPOND_BYPASS_TYPES`` and ``SHOULD_RESPOND_BYPASS_SOURCES`` (elizaOS's names): room
types and platforms where the character answers every message without asking the small model.

Each is a comma-separated list (``GROUP, THREAD``), a JSON array (``["group", "thread"]``),
elizaOS's bracketed list (``[group, thread]``), or a list in the character file's ``settings``;
names in any case. They add to what is always answered (DMs, voice DMs, the console's chats), as
in elizaOS; they never open a muted room, a room the character was asked to stay out of, or a bot
conversation past the loop guard (see ``_gate.py``).

They are read when the core plugin is set up, and by ``troupe check``: a name that is no room type
or no platform is an error then, naming the valid ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bot.sdk import ChannelType, Character, ConfigError

__all__ = ["SOURCES", "TYPES", "Bypass", "read_bypass"]

TYPES = "SHOULD_RESPOND_BYPASS_TYPES"
SOURCES = "SHOULD_RESPOND_BYPASS_SOURCES"

# elizaOS's own chat client and its REST API (its default ``client_chat``, and the documented
# ``["client_chat", "api"]``): troupe's counterparts are the console's chats.
_ELIZA_SOURCES = {"client_chat": ("console", "web"), "api": ("console", "web")}


@dataclass(frozen=True, slots=True)
class Bypass:
    """The room types and message sources the character always answers, beyond the built-in ones."""

    types: frozenset[ChannelType] = frozenset()
    sources: frozenset[str] = frozenset()
    """Lowercase platform names (a message's ``content.source``)."""


def read_bypass(get_setting: Callable[[str], str | None], character: Character, platforms: Iterable[str]) -> Bypass:
    """Both settings as ``character`` sees them; ``platforms`` are the valid sources.

    Raises:
        ConfigError: a name that is no room type (or no platform), or a list item that is no name.
    """
    known = sorted(dict.fromkeys(p.lower() for p in platforms))
    types = _names(TYPES, get_setting, character)
    valid_types = {t.value for t in ChannelType}
    bad_types = [t for t in types if t.upper() not in valid_types]
    _refuse(TYPES, bad_types, ("a room type", "room types"), sorted(valid_types), character)
    sources = _names(SOURCES, get_setting, character)
    valid_sources = [*known, *_ELIZA_SOURCES]
    bad_sources = [s for s in sources if s.lower() not in valid_sources]
    _refuse(SOURCES, bad_sources, ("a platform", "platforms"), valid_sources, character)
    found: set[str] = set()
    for source in sources:
        found.update(_ELIZA_SOURCES.get(source.lower(), (source.lower(),)))
    return Bypass(frozenset(ChannelType(t.upper()) for t in types), frozenset(found))


def _names(key: str, get_setting: Callable[[str], str | None], character: Character) -> list[str]:
    """The names the setting lists (none when unset)."""
    listed = character.settings.get(key)
    if isinstance(listed, list):  # written as a list in the character file
        wrong = [item for item in listed if not isinstance(item, str)]
        if wrong:
            raise ConfigError(
                f"{key} lists {', '.join(map(repr, wrong))}, which {'is' if len(wrong) == 1 else 'are'} "
                "not a name; write names as strings",
                agent=character.name,
            )
        items = [str(item) for item in listed]
    else:
        raw = (get_setting(key) or "").strip()
        if raw.startswith("[") and raw.endswith("]"):
            raw = raw[1:-1]
        items = raw.split(",")
    # Quotes are stripped: elizaOS's documented form ``["dm", "api"]`` keeps them, and never matches.
    names = (item.strip().strip("\"'").strip() for item in items)
    return list(dict.fromkeys(name for name in names if name))


def _refuse(key: str, bad: list[str], kind: tuple[str, str], valid: Iterable[str], character: Character) -> None:
    """A ConfigError naming the ``bad`` names, if any, and the ``valid`` ones."""
    if bad:
        one, many = kind
        raise ConfigError(
            f"{key} names {', '.join(map(repr, bad))}, which {f'is not {one}' if len(bad) == 1 else f'are not {many}'}; "
            f"valid: {', '.join(valid)}",
            agent=character.name,
        )
