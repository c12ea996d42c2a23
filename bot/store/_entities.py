"""Entities (people and bots as one agent knows them) and their components."""

from __future__ import annotations

from collections.abc import Sequence

from bot.errors import StoreError
from bot.store._connect import Connection, Row, casefold
from bot.store._rows import (
    component_filter,
    dumps,
    entities_with_components,
    normalize_names,
    row_to_component,
    row_to_entity,
)
from bot.store._scoped import AgentScoped, json_list, new_id, validate_count
from bot.types import Component, Entity, now_ms

__all__ = ["EntitiesMixin"]

# What each group of writes may change: see Database.write.
_ENTITIES = ("entities",)
_COMPONENTS = ("components",)


class EntitiesMixin(AgentScoped):
    """The ``entities`` and ``components`` tables."""

    __slots__ = ()

    # -- entities ----------------------------------------------------------------------------------

    async def create_entities(self, entities: Sequence[Entity]) -> bool:
        """Insert entities for this agent (existing ids are left alone); False on a database error."""
        if not entities:
            return True
        now = now_ms()
        rows = [
            (
                e.id or new_id(),
                self._agent_id,
                e.created_at or now,
                dumps(normalize_names(e.names)),
                dumps(e.metadata.to_json()),
            )
            for e in entities
        ]
        try:
            await self._write_rows(
                "INSERT INTO entities (id, agent_id, created_at, names, metadata) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO NOTHING",
                rows,
                tables=_ENTITIES,
            )
        except StoreError as exc:
            return self._fail("create_entities", exc)
        return True

    def _with_components(self, conn: Connection, rows: list[Row]) -> list[Entity]:
        """On the reader's thread: entities of ``rows`` with their components attached."""
        components = (
            conn.execute(
                "SELECT * FROM components WHERE agent_id = ? AND entity_id IN (SELECT value FROM json_each(?)) "
                "ORDER BY created_at, rowid",
                (self._agent_id, json_list([r["id"] for r in rows])),
            ).fetchall()
            if rows
            else []
        )
        return entities_with_components(rows, components)

    async def get_entities_by_ids(self, entity_ids: Sequence[str]) -> list[Entity]:
        """This agent's entities with these ids, components attached, in the order asked."""
        if not entity_ids:
            return []

        def read(conn: Connection) -> list[Entity]:  # both queries in one trip to the reader's thread
            rows = conn.execute(
                "SELECT * FROM entities WHERE agent_id = ? AND id IN (SELECT value FROM json_each(?))",
                (self._agent_id, json_list(entity_ids)),
            ).fetchall()
            return self._with_components(conn, rows)

        by_id = {e.id: e for e in await self._db.read(read)}
        return [by_id[i] for i in dict.fromkeys(entity_ids) if i in by_id]

    async def get_entity(self, entity_id: str) -> Entity | None:
        """One of this agent's entities with its components, or None."""
        found = await self.get_entities_by_ids([entity_id])
        return found[0] if found else None

    async def get_entities_by_names(self, names: Sequence[str]) -> list[Entity]:
        """This agent's entities having any of ``names`` exactly (case-sensitive)."""
        if not names:
            return []
        rows = await self._db.fetchall(
            "SELECT * FROM entities e WHERE agent_id = ? AND EXISTS ("
            "  SELECT 1 FROM json_each(e.names) n WHERE n.value IN (SELECT value FROM json_each(?))) "
            "ORDER BY created_at, rowid",
            (self._agent_id, json_list(names)),
        )
        return [row_to_entity(r) for r in rows]

    async def update_entity(self, entity: Entity) -> bool:
        """Overwrite the names and metadata of one of this agent's entities; False if not found.

        Raises ValueError without an id.
        """
        if not entity.id:
            raise ValueError("update_entity needs an entity id")
        changed = await self._write_statement(
            "UPDATE entities SET names = ?, metadata = ? WHERE id = ? AND agent_id = ?",
            (dumps(normalize_names(entity.names)), dumps(entity.metadata.to_json()), entity.id, self._agent_id),
            tables=_ENTITIES,
        )
        return changed > 0

    async def delete_entity(self, entity_id: str) -> bool:
        """Delete one of this agent's entities; cascades to its components (also those it asserted),
        participations, memories, relationships and logs. False if not found."""
        # Cascades to many tables: tables=None tells shared reads that anything may have changed.
        deleted = await self._write_statement(
            "DELETE FROM entities WHERE id = ? AND agent_id = ?", (entity_id, self._agent_id), tables=None
        )
        return deleted > 0

    async def get_entities_for_room(self, room_id: str, include_components: bool = False) -> list[Entity]:
        """This agent's entities taking part in ``room_id``."""

        def read(conn: Connection) -> list[Entity]:  # both queries in one trip to the reader's thread
            rows = conn.execute(
                "SELECT e.* FROM entities e WHERE e.agent_id = ? AND e.id IN ("
                "  SELECT entity_id FROM participants WHERE room_id = ? AND agent_id = ?) "
                "ORDER BY e.created_at, e.rowid",
                (self._agent_id, room_id, self._agent_id),
            ).fetchall()
            return self._with_components(conn, rows) if include_components else [row_to_entity(r) for r in rows]

        return await self._db.read(read)

    async def search_entities_by_name(self, query: str, limit: int = 10) -> list[Entity]:
        """This agent's entities with a name containing ``query`` (Unicode case-insensitive).

        An empty query returns the first ``limit`` entities.
        """
        validate_count(limit, "limit")
        needle = casefold(query.strip()) or ""
        rows = await self._db.fetchall(
            "SELECT * FROM entities e WHERE agent_id = ? AND (? = '' OR EXISTS ("
            "  SELECT 1 FROM json_each(e.names) n WHERE instr(casefold(n.value), ?) > 0)) "
            "ORDER BY created_at, rowid LIMIT ?",
            (self._agent_id, needle, needle, limit),
        )
        return [row_to_entity(r) for r in rows]

    # -- components --------------------------------------------------------------------------------

    async def create_component(self, component: Component) -> bool:
        """Store a component for this agent (a new id if it has none); False on a database error."""
        try:
            await self._write_statement(
                "INSERT INTO components (id, entity_id, agent_id, room_id, world_id, source_entity_id, type, "
                "data, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    component.id or new_id(),
                    component.entity_id,
                    self._agent_id,
                    component.room_id,
                    component.world_id,
                    component.source_entity_id,
                    component.type,
                    dumps(component.data or {}),
                    component.created_at or now_ms(),
                ),
                tables=_COMPONENTS,
            )
        except StoreError as exc:
            return self._fail("create_component", exc)
        return True

    async def get_component(
        self, entity_id: str, type: str, world_id: str | None = None, source_entity_id: str | None = None
    ) -> Component | None:
        """The oldest component of ``type`` on the entity (optionally for a world / asserted by someone), or None."""
        where, params = component_filter(self._agent_id, entity_id, world_id, source_entity_id, mark="?")
        row = await self._db.fetchone(
            f"SELECT * FROM components WHERE {where} AND type = ? ORDER BY created_at, rowid LIMIT 1", (*params, type)
        )
        return row_to_component(row) if row else None

    async def get_components(
        self, entity_id: str, world_id: str | None = None, source_entity_id: str | None = None
    ) -> list[Component]:
        """All components of the entity (optionally for a world / asserted by someone), oldest first."""
        where, params = component_filter(self._agent_id, entity_id, world_id, source_entity_id, mark="?")
        rows = await self._db.fetchall(f"SELECT * FROM components WHERE {where} ORDER BY created_at, rowid", params)
        return [row_to_component(r) for r in rows]

    async def update_component(self, component: Component) -> bool:
        """Overwrite one of this agent's components by id; False if not found or on a database error."""
        try:
            changed = await self._write_statement(
                "UPDATE components SET entity_id = ?, room_id = ?, world_id = ?, source_entity_id = ?, "
                "type = ?, data = ? WHERE id = ? AND agent_id = ?",
                (
                    component.entity_id,
                    component.room_id,
                    component.world_id,
                    component.source_entity_id,
                    component.type,
                    dumps(component.data or {}),
                    component.id,
                    self._agent_id,
                ),
                tables=_COMPONENTS,
            )
            return changed > 0
        except StoreError as exc:
            return self._fail("update_component", exc)

    async def delete_component(self, component_id: str) -> bool:
        """Delete one of this agent's components; False if not found."""
        deleted = await self._write_statement(
            "DELETE FROM components WHERE id = ? AND agent_id = ?", (component_id, self._agent_id), tables=_COMPONENTS
        )
        return deleted > 0
