"""What an agent write stores, whatever the backend: which fields may change, settings without
their secrets, and a settings change deep-merged into the stored settings."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from bot.kernel.types import JSON, AgentRecord
from bot.store._rows import AGENT_JSON_FIELDS

__all__ = ["AGENT_UPDATABLE", "agent_changes", "agent_json_values", "check_updatable", "deep_merge", "require_own"]

_log = logging.getLogger(__name__)


#: The AgentRecord fields ``update_agent`` may change (the others are the store's own).
AGENT_UPDATABLE = frozenset({"name", "username", "enabled", "system", *AGENT_JSON_FIELDS})


def require_own(agent: AgentRecord, agent_id: str, method: str) -> None:
    """Raise ValueError unless ``agent`` is the store's own agent ``agent_id``."""
    if agent.id != agent_id:
        raise ValueError(f"{method}: record id {agent.id!r} is not this store's agent {agent_id!r}")


def check_updatable(changes: Mapping[str, Any]) -> None:
    """Raise ValueError naming the fields of ``changes`` that ``update_agent`` cannot change."""
    unknown = set(changes) - AGENT_UPDATABLE
    if unknown:
        raise ValueError(f"update_agent: cannot update {', '.join(sorted(unknown))}")


def _without_secrets(settings: Mapping[str, Any] | None) -> JSON:
    """A copy of agent settings without ``secrets``: secrets never reach the database."""
    clean = dict(settings or {})
    if clean.pop("secrets", None) is not None:
        _log.debug("dropped settings.secrets before writing an agent")
    return clean


def deep_merge(target: Mapping[str, Any], source: Mapping[str, Any]) -> JSON:
    """Merge ``source`` into ``target``: None deletes a key, dicts merge, anything else replaces.

    A nested dict left empty by the merge is removed, unless ``source`` gave it as an explicit ``{}``.
    """
    out = dict(target)
    for key, value in source.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping):
            if not value:
                out[key] = {}
                continue
            base = out.get(key)
            merged = deep_merge(base if isinstance(base, Mapping) else {}, value)
            if merged:
                out[key] = merged
            else:
                out.pop(key, None)
        else:
            out[key] = value
    return out


def agent_json_values(agent: AgentRecord) -> dict[str, object]:
    """The JSON columns of a new agent row (``settings`` without secrets), in AGENT_JSON_FIELDS order."""
    values = {name: getattr(agent, name) for name in AGENT_JSON_FIELDS}
    values["settings"] = _without_secrets(agent.settings)
    return values


def agent_changes(changes: Mapping[str, Any], stored_settings: Mapping[str, Any]) -> JSON:
    """The new column values ``changes`` give an agent whose settings are ``stored_settings``.

    ``settings`` is deep-merged into the stored settings without secrets; a None JSON field is its
    empty value, ``enabled`` a bool and a None ``system`` the empty prompt. Call check_updatable first.
    """
    values: JSON = {}
    for name, value in changes.items():
        if name == "settings":
            value = deep_merge(stored_settings, _without_secrets(value))
        if name in AGENT_JSON_FIELDS:
            value = value if value is not None else AGENT_JSON_FIELDS[name]
        elif name == "enabled":
            value = bool(value)
        elif name == "system":
            value = value or ""
        values[name] = value
    return values
