"""Agents: the characters themselves, as stored (never their secrets). Both backends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.kernel.types import AgentRecord, now_ms
from bot.store._agent_fields import (
    AGENT_UPDATABLE,
    agent_changes,
    agent_json_values,
    check_updatable,
    require_own,
)
from bot.store._dialect import Statements, Step, Unit
from bot.store._rows import AGENT_JSON_FIELDS, dumps, loads, row_to_agent

__all__ = ["AgentsMixin"]

_INSERT = (
    f"INSERT INTO agents (id, enabled, created_at, updated_at, name, username, system, {', '.join(AGENT_JSON_FIELDS)}) "
    f"VALUES (?, ?, ?, ?, ?, ?, ?, {', '.join('?' for _ in AGENT_JSON_FIELDS)}) ON CONFLICT (id) DO NOTHING"
)
_TABLES = ("agents",)


class AgentsMixin(Statements):
    """The ``agents`` table: create, read, update (settings deep-merged), delete with cascade."""

    __slots__ = ()

    def _insert_agent(self, agent: AgentRecord) -> Unit[bool]:
        now = now_ms()
        values = agent_json_values(agent)
        done = yield Step(
            _INSERT,
            (
                agent.id,
                self.dialect.boolean(agent.enabled),
                agent.created_at or now,
                now,
                agent.name,
                agent.username,
                agent.system or "",
                *(dumps(values[name]) for name in AGENT_JSON_FIELDS),
            ),
        )
        return done.rowcount == 1

    def _update_agent(self, changes: Mapping[str, Any]) -> Unit[bool]:
        check_updatable(changes)
        done = yield Step("SELECT settings FROM agents WHERE id = ?{for_update}", (self._agent_id,))
        if not done.rows:
            return False
        sets: list[str] = ["updated_at = ?"]
        params: list[object] = [now_ms()]
        for name, value in agent_changes(changes, loads(done.rows[0]["settings"], {})).items():
            sets.append(f"{name} = ?")  # name is from the AGENT_UPDATABLE whitelist
            params.append(dumps(value) if name in AGENT_JSON_FIELDS else value)
        yield Step(f"UPDATE agents SET {', '.join(sets)} WHERE id = ?", (*params, self._agent_id))
        return True

    async def create_agent(self, agent: AgentRecord) -> bool:
        """Store this store's own agent; False if it already exists. ``settings.secrets`` is dropped.

        Raises ValueError if ``agent.id`` is not this store's agent.
        """
        require_own(agent, self._agent_id, "create_agent")
        return await self._write(lambda: self._insert_agent(agent), tables=_TABLES)

    async def upsert_agent(self, agent: AgentRecord) -> AgentRecord:
        """Create this store's agent, or update it from ``agent``; return the stored record.

        On update every public field is replaced and ``settings`` is deep-merged into the stored
        settings (upstream's ensure_agent_exists); ``created_at`` is kept. One transaction.
        Raises ValueError if ``agent.id`` is not this store's agent.
        """
        require_own(agent, self._agent_id, "upsert_agent")

        def upsert() -> Unit[None]:
            if not (yield from self._insert_agent(agent)):
                yield from self._update_agent({name: getattr(agent, name) for name in AGENT_UPDATABLE})

        await self._write(upsert, tables=_TABLES)
        stored = await self.get_agent()
        assert stored is not None  # written above; agents are only deleted by their own store
        return stored

    async def get_agent(self, agent_id: str | None = None) -> AgentRecord | None:
        """An agent by id (this store's agent by default), from any agent's view; None if unknown."""
        row = await self._row("SELECT * FROM agents WHERE id = ?", (agent_id or self._agent_id,))
        return row_to_agent(row) if row else None

    async def get_agents(self) -> list[AgentRecord]:
        """Every agent in the database (cross-agent: the daemon's roster), by name."""
        rows = await self._rows("SELECT * FROM agents ORDER BY name{by_code_point}, id{by_code_point}")
        return [row_to_agent(r) for r in rows]

    async def update_agent(self, changes: Mapping[str, Any]) -> bool:
        """Update this store's agent; False if it does not exist.

        ``changes`` maps AgentRecord field names to new values. ``settings`` is deep-merged into the
        stored settings (a None leaf deletes a key) and ``settings.secrets`` is dropped; everything
        else replaces. ``updated_at`` becomes now. Raises ValueError for unknown or read-only fields.
        """
        check_updatable(changes)  # before waiting for the write lock
        return await self._write(lambda: self._update_agent(changes), tables=_TABLES)

    async def delete_agent(self) -> bool:
        """Delete this store's agent and, by cascade, everything it owns; False if it did not exist."""

        def delete() -> Unit[bool]:
            done = yield Step("DELETE FROM agents WHERE id = ?", (self._agent_id,))
            yield Step("DELETE FROM meta WHERE key = ?", (f"embedding_dimension:{self._agent_id}",))
            return done.rowcount > 0

        deleted = await self._write(delete, tables=None)
        self._after_agent_deleted()
        return deleted
