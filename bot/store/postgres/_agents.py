"""Agents in PostgreSQL: the characters themselves, as stored (never their secrets)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg

from bot.store._agent_fields import (
    AGENT_UPDATABLE,
    agent_changes,
    agent_json_values,
    check_updatable,
    require_own,
)
from bot.store._rows import AGENT_JSON_FIELDS, dumps, loads, row_to_agent
from bot.store.postgres._database import Row
from bot.store.postgres._scoped import PgScoped
from bot.types import AgentRecord, now_ms

__all__ = ["PgAgentsMixin"]

_COLUMNS = ", ".join(AGENT_JSON_FIELDS)
_MARKS = ", ".join("%s" for _ in AGENT_JSON_FIELDS)


class PgAgentsMixin(PgScoped):
    """The ``agents`` table. Each method does what its SQLite twin in ``bot/store/_agents.py`` does;
    the contract suite holds both to it."""

    __slots__ = ()

    async def _insert_agent(self, conn: psycopg.AsyncConnection[Row], agent: AgentRecord) -> bool:
        now = now_ms()
        values = agent_json_values(agent)
        cur = await conn.execute(
            f"INSERT INTO agents (id, enabled, created_at, updated_at, name, username, system, {_COLUMNS}) "
            f"VALUES (%s, %s, %s, %s, %s, %s, %s, {_MARKS}) ON CONFLICT (id) DO NOTHING",
            (
                agent.id,
                bool(agent.enabled),
                agent.created_at or now,
                now,
                agent.name,
                agent.username,
                agent.system or "",
                *(dumps(values[name]) for name in AGENT_JSON_FIELDS),
            ),
        )
        return cur.rowcount == 1

    async def _update_agent(self, conn: psycopg.AsyncConnection[Row], changes: Mapping[str, Any]) -> bool:
        check_updatable(changes)
        # FOR UPDATE: two daemons merging settings into the same agent take turns, losing neither.
        cur = await conn.execute("SELECT settings FROM agents WHERE id = %s FOR UPDATE", (self._agent_id,))
        row = await cur.fetchone()
        if row is None:
            return False
        sets: list[str] = ["updated_at = %s"]
        params: list[object] = [now_ms()]
        for name, value in agent_changes(changes, loads(row["settings"], {})).items():
            sets.append(f"{name} = %s")  # name is from the AGENT_UPDATABLE whitelist
            params.append(dumps(value) if name in AGENT_JSON_FIELDS else value)
        await conn.execute(f"UPDATE agents SET {', '.join(sets)} WHERE id = %s", (*params, self._agent_id))
        return True

    async def create_agent(self, agent: AgentRecord) -> bool:
        """Store this store's own agent; False if it already exists. ``settings.secrets`` is dropped.

        Raises ValueError if ``agent.id`` is not this store's agent.
        """
        require_own(agent, self._agent_id, "create_agent")
        async with self._db.transaction() as conn:
            return await self._insert_agent(conn, agent)

    async def upsert_agent(self, agent: AgentRecord) -> AgentRecord:
        """Create this store's agent, or update it from ``agent``; return the stored record.

        On update every public field is replaced and ``settings`` is deep-merged into the stored
        settings (upstream's ensure_agent_exists); ``created_at`` is kept. One transaction.
        Raises ValueError if ``agent.id`` is not this store's agent.
        """
        require_own(agent, self._agent_id, "upsert_agent")
        async with self._db.transaction() as conn:
            if not await self._insert_agent(conn, agent):
                await self._update_agent(conn, {name: getattr(agent, name) for name in AGENT_UPDATABLE})
        stored = await self.get_agent()
        assert stored is not None  # written above; agents are only deleted by their own store
        return stored

    async def get_agent(self, agent_id: str | None = None) -> AgentRecord | None:
        """An agent by id (this store's agent by default), from any agent's view; None if unknown."""
        row = await self._db.fetchone("SELECT * FROM agents WHERE id = %s", (agent_id or self._agent_id,))
        return row_to_agent(row) if row else None

    async def get_agents(self) -> list[AgentRecord]:
        # COLLATE "C": by code point, as SQLite orders, whatever the database's locale.
        """Every agent in the database (cross-agent: the daemon's roster), by name."""
        rows = await self._db.fetchall('SELECT * FROM agents ORDER BY name COLLATE "C", id COLLATE "C"')
        return [row_to_agent(r) for r in rows]

    async def update_agent(self, changes: Mapping[str, Any]) -> bool:
        """Update this store's agent; False if it does not exist.

        ``changes`` maps AgentRecord field names to new values. ``settings`` is deep-merged into the
        stored settings (a None leaf deletes a key) and ``settings.secrets`` is dropped; everything
        else replaces. ``updated_at`` becomes now. Raises ValueError for unknown or read-only fields.
        """
        check_updatable(changes)
        async with self._db.transaction() as conn:
            return await self._update_agent(conn, changes)

    async def delete_agent(self) -> bool:
        """Delete this store's agent and, by cascade, everything it owns; False if it did not exist."""
        async with self._db.transaction() as conn:
            cur = await conn.execute("DELETE FROM agents WHERE id = %s", (self._agent_id,))
            await conn.execute("DELETE FROM meta WHERE key = %s", (f"embedding_dimension:{self._agent_id}",))
            return cur.rowcount > 0
