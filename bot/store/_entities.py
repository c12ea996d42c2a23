"""Entities (people and bots as one agent knows them) and their components. Both backends."""

from __future__ import annotations

import json
from collections.abc import Sequence

from bot.kernel.errors import StoreError
from bot.kernel.types import Component, Entity, now_ms
from bot.store._connect import casefold
from bot.store._dialect import Statements
from bot.store._rows import (
    Row,
    component_filter,
    dumps,
    entities_with_components,
    fold_names,
    normalize_names,
    row_to_component,
    row_to_entity,
)
from bot.store._scoped import new_id, validate_count

__all__ = ["EntitiesMixin"]

# What each group of writes may change: see Database.write.
_ENTITIES = ("entities",)
_COMPONENTS = ("components",)


def _json_rows(value: object) -> list[Row]:
    """Rows aggregated as JSON: SQLite's JSON text, or what PostgreSQL's driver read of it."""
    rows: list[Row] | None = json.loads(value) if isinstance(value, str) else value  # type: ignore[assignment]
    return rows or []


class EntitiesMixin(Statements):
    """The ``entities`` and ``components`` tables."""

    __slots__ = ()

    # -- entities ----------------------------------------------------------------------------------

    async def create_entities(self, entities: Sequence[Entity]) -> bool:
        """Insert entities for this agent (existing ids are left alone); False on a database error."""
        if not entities:
            return True
        now = now_ms()
        rows = [
            (e.id or new_id(), self._agent_id, e.created_at or now, *self._names(e), dumps(e.metadata.to_json()))
            for e in entities
        ]
        try:
            await self._run_many(
                "INSERT INTO entities (id, agent_id, created_at, {entity_names}, metadata) "
                "VALUES (?, ?, ?, {entity_name_marks}, ?) ON CONFLICT (id) DO NOTHING",
                rows,
                tables=_ENTITIES,
            )
        except StoreError as exc:
            return self._fail("create_entities", exc)
        return True

    def _names(self, entity: Entity) -> tuple[object, ...]:
        """The ``{entity_names}`` columns of an entity: its names (and, where kept, casefolded)."""
        names = normalize_names(entity.names)
        return (dumps(names), fold_names(names)) if self.dialect.folded_names else (dumps(names),)

    async def _with_components(self, where: str, params: Sequence[object]) -> list[Entity]:
        """The entities ``where`` (a condition, and an ORDER BY if any) picks, components attached:
        one query, each entity's components in a JSON array."""
        rows = await self._rows(f"SELECT e.*, {{components}} AS components FROM entities e WHERE {where}", params)
        components = (c for r in rows for c in _json_rows(r["components"]))
        return entities_with_components(rows, components)

    async def get_entities_by_ids(self, entity_ids: Sequence[str]) -> list[Entity]:
        """This agent's entities with these ids, components attached, in the order asked."""
        if not entity_ids:
            return []

        found = await self._with_components(
            "e.agent_id = ? AND e.id {in_list}", (self._agent_id, self.dialect.id_list(entity_ids))
        )
        by_id = {e.id: e for e in found}
        return [by_id[i] for i in dict.fromkeys(entity_ids) if i in by_id]

    async def get_entity(self, entity_id: str) -> Entity | None:
        """One of this agent's entities with its components, or None."""
        found = await self.get_entities_by_ids([entity_id])
        return found[0] if found else None

    async def get_entities_by_names(self, names: Sequence[str]) -> list[Entity]:
        """This agent's entities having any of ``names`` exactly (case-sensitive)."""
        if not self.dialect.text_holds_nul:
            names = [n for n in names if "\x00" not in n]  # no stored name holds one
        if not names:
            return []
        rows = await self._rows(
            "SELECT * FROM entities WHERE agent_id = ? AND {has_any:names} ORDER BY created_at, {seq}",
            (self._agent_id, self.dialect.id_list(names)),
        )
        return [row_to_entity(r) for r in rows]

    async def update_entity(self, entity: Entity) -> bool:
        """Overwrite the names and metadata of one of this agent's entities; False if not found.

        Raises ValueError without an id.
        """
        if not entity.id:
            raise ValueError("update_entity needs an entity id")
        changed = await self._run(
            "UPDATE entities SET {set_entity_names}, metadata = ? WHERE id = ? AND agent_id = ?",
            (*self._names(entity), dumps(entity.metadata.to_json()), entity.id, self._agent_id),
            tables=_ENTITIES,
        )
        return changed > 0

    async def delete_entity(self, entity_id: str) -> bool:
        """Delete one of this agent's entities; cascades to its components (also those it asserted),
        participations, memories, relationships and logs. False if not found."""
        # Cascades to many tables: tables=None tells shared reads that anything may have changed.
        deleted = await self._run(
            "DELETE FROM entities WHERE id = ? AND agent_id = ?", (entity_id, self._agent_id), tables=None
        )
        return deleted > 0

    async def get_entities_for_room(self, room_id: str, include_components: bool = False) -> list[Entity]:
        """This agent's entities taking part in ``room_id``."""

        where = (
            "e.agent_id = ? AND e.id IN (SELECT entity_id FROM participants WHERE room_id = ? AND agent_id = ?) "
            "ORDER BY e.created_at, e.{seq}"
        )
        params = (self._agent_id, room_id, self._agent_id)
        if include_components:
            return await self._with_components(where, params)
        return [row_to_entity(r) for r in await self._rows(f"SELECT e.* FROM entities e WHERE {where}", params)]

    async def search_entities_by_name(self, query: str, limit: int = 10) -> list[Entity]:
        """This agent's entities with a name containing ``query`` (Unicode case-insensitive).

        An empty query returns the first ``limit`` entities.
        """
        validate_count(limit, "limit")
        needle = casefold(query.strip()) or ""
        if "\x00" in needle and not self.dialect.text_holds_nul:
            return []  # no stored name holds one
        rows = await self._rows(
            "SELECT * FROM entities e WHERE agent_id = ? AND (? = '' OR {name_contains}) "
            "ORDER BY created_at, {seq} LIMIT ?",
            (self._agent_id, needle, needle, limit),
        )
        return [row_to_entity(r) for r in rows]

    # -- components --------------------------------------------------------------------------------

    async def create_component(self, component: Component) -> bool:
        """Store a component for this agent (a new id if it has none); False on a database error."""
        try:
            await self._run(
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
        where, params = component_filter(self._agent_id, entity_id, world_id, source_entity_id)
        row = await self._row(
            f"SELECT * FROM components WHERE {where} AND type = ? ORDER BY created_at, {{seq}} LIMIT 1", (*params, type)
        )
        return row_to_component(row) if row else None

    async def get_components(
        self, entity_id: str, world_id: str | None = None, source_entity_id: str | None = None
    ) -> list[Component]:
        """All components of the entity (optionally for a world / asserted by someone), oldest first."""
        where, params = component_filter(self._agent_id, entity_id, world_id, source_entity_id)
        rows = await self._rows(f"SELECT * FROM components WHERE {where} ORDER BY created_at, {{seq}}", params)
        return [row_to_component(r) for r in rows]

    async def update_component(self, component: Component) -> bool:
        """Overwrite one of this agent's components by id; False if not found or on a database error."""
        try:
            changed = await self._run(
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
        deleted = await self._run(
            "DELETE FROM components WHERE id = ? AND agent_id = ?", (component_id, self._agent_id), tables=_COMPONENTS
        )
        return deleted > 0
