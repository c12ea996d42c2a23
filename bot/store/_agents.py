"""Agents: the characters themselves, as stored (never their secrets)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import aiosqlite

from bot.store._connect import SQLValue
from bot.store._rows import AGENT_JSON_FIELDS, dumps, loads, row_to_agent
from bot.store._scoped import JSON, AgentScoped
from bot.types import AgentRecord, now_ms

__all__ = ["AgentsMixin", "deep_merge"]

_log = logging.getLogger(__name__)

_AGENT_UPDATABLE = frozenset({"name", "username", "enabled", "system", *AGENT_JSON_FIELDS})


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


class AgentsMixin(AgentScoped):
    """The ``agents`` table: create, read, update (settings deep-merged), delete with cascade."""

    __slots__ = ()

    def _check_own(self, agent: AgentRecord, method: str) -> None:
        if agent.id != self._agent_id:
            raise ValueError(f"{method}: record id {agent.id!r} is not this store's agent {self._agent_id!r}")

    async def _insert_agent(self, conn: aiosqlite.Connection, agent: AgentRecord) -> bool:
        now = now_ms()
        values = {name: getattr(agent, name) for name in AGENT_JSON_FIELDS}
        values["settings"] = _without_secrets(agent.settings)
        columns = ", ".join(AGENT_JSON_FIELDS)
        marks = ", ".join("?" for _ in AGENT_JSON_FIELDS)
        cur = await conn.execute(
            f"INSERT INTO agents (id, enabled, created_at, updated_at, name, username, system, {columns}) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?, {marks}) ON CONFLICT(id) DO NOTHING",
            (
                agent.id,
                int(agent.enabled),
                agent.created_at or now,
                now,
                agent.name,
                agent.username,
                agent.system or "",
                *(dumps(values[name]) for name in AGENT_JSON_FIELDS),
            ),
        )
        return cur.rowcount == 1

    async def _update_agent(self, conn: aiosqlite.Connection, changes: Mapping[str, Any]) -> bool:
        unknown = set(changes) - _AGENT_UPDATABLE
        if unknown:
            raise ValueError(f"update_agent: cannot update {', '.join(sorted(unknown))}")
        async with conn.execute("SELECT settings FROM agents WHERE id = ?", (self._agent_id,)) as cur:
            row = await cur.fetchone()
        if row is None:
            return False
        sets: list[str] = ["updated_at = ?"]
        params: list[SQLValue] = [now_ms()]
        for name, value in changes.items():
            if name == "settings":
                value = deep_merge(loads(row["settings"], {}), _without_secrets(value))
            if name in AGENT_JSON_FIELDS:
                value = dumps(value if value is not None else AGENT_JSON_FIELDS[name])
            elif name == "enabled":
                value = int(bool(value))
            elif name == "system":
                value = value or ""
            sets.append(f"{name} = ?")  # name is from the _AGENT_UPDATABLE whitelist
            params.append(value)
        await conn.execute(f"UPDATE agents SET {', '.join(sets)} WHERE id = ?", (*params, self._agent_id))
        return True

    async def create_agent(self, agent: AgentRecord) -> bool:
        """Store this store's own agent; False if it already exists. ``settings.secrets`` is dropped.

        Raises ValueError if ``agent.id`` is not this store's agent.
        """
        self._check_own(agent, "create_agent")
        async with self._db.transaction() as conn:
            return await self._insert_agent(conn, agent)

    async def upsert_agent(self, agent: AgentRecord) -> AgentRecord:
        """Create this store's agent, or update it from ``agent``; return the stored record.

        On update every public field is replaced and ``settings`` is deep-merged into the stored
        settings (upstream's ensure_agent_exists); ``created_at`` is kept. One transaction.
        Raises ValueError if ``agent.id`` is not this store's agent.
        """
        self._check_own(agent, "upsert_agent")
        async with self._db.transaction() as conn:
            if not await self._insert_agent(conn, agent):
                changes = {name: getattr(agent, name) for name in _AGENT_UPDATABLE}
                await self._update_agent(conn, changes)
        stored = await self.get_agent()
        assert stored is not None  # written above; agents are only deleted by their own store
        return stored

    async def get_agent(self, agent_id: str | None = None) -> AgentRecord | None:
        """An agent by id (this store's agent by default), from any agent's view; None if unknown."""
        row = await self._db.fetchone("SELECT * FROM agents WHERE id = ?", (agent_id or self._agent_id,))
        return row_to_agent(row) if row else None

    async def get_agents(self) -> list[AgentRecord]:
        """Every agent in the database (cross-agent: the daemon's roster), by name."""
        rows = await self._db.fetchall("SELECT * FROM agents ORDER BY name, id")
        return [row_to_agent(r) for r in rows]

    async def update_agent(self, changes: Mapping[str, Any]) -> bool:
        """Update this store's agent; False if it does not exist.

        ``changes`` maps AgentRecord field names to new values. ``settings`` is deep-merged into the
        stored settings (a None leaf deletes a key) and ``settings.secrets`` is dropped; everything
        else replaces. ``updated_at`` becomes now. Raises ValueError for unknown or read-only fields.
        """
        if set(changes) - _AGENT_UPDATABLE:  # check before waiting for the write lock
            raise ValueError(f"update_agent: cannot update {', '.join(sorted(set(changes) - _AGENT_UPDATABLE))}")
        async with self._db.transaction() as conn:
            return await self._update_agent(conn, changes)

    async def delete_agent(self) -> bool:
        """Delete this store's agent and, by cascade, everything it owns; False if it did not exist."""
        async with self._db.transaction() as conn:
            cur = await conn.execute("DELETE FROM agents WHERE id = ?", (self._agent_id,))
            await conn.execute("DELETE FROM meta WHERE key = ?", (f"embedding_dimension:{self._agent_id}",))
            deleted = cur.rowcount > 0
        self._db.forget_agent(self._agent_id)
        return deleted
