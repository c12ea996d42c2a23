"""Entities (people and bots as one agent knows them), their components, and relationships between
them, in PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence

from bot.errors import StoreError
from bot.record_metadata import RelationshipMetadata
from bot.store._connect import casefold
from bot.store._rows import (
    component_filter,
    dumps,
    entities_with_components,
    fold_names,
    normalize_names,
    row_to_component,
    row_to_entity,
    row_to_relationship,
)
from bot.store._scoped import new_id, validate_count
from bot.store.postgres._scoped import PgScoped
from bot.types import Component, Entity, Relationship, now_ms

__all__ = ["PgEntitiesMixin"]

_NUL = "\x00"
# Entities with their components in one query (one round trip, as SQLite's one trip to its reader):
# each entity's components as a JSON array of rows, ``data`` as its JSON text as the converter reads it.
_WITH_COMPONENTS = (
    "SELECT e.*, (SELECT json_agg(json_build_object("
    "'id', c.id, 'entity_id', c.entity_id, 'agent_id', c.agent_id, 'room_id', c.room_id, 'world_id', c.world_id, "
    "'source_entity_id', c.source_entity_id, 'type', c.type, 'data', c.data::text, 'created_at', c.created_at"
    ") ORDER BY c.created_at, c.seq) FROM components c WHERE c.agent_id = e.agent_id AND c.entity_id = e.id"
    ") AS components FROM entities e"
)


def _names(entity: Entity) -> tuple[str, list[str]]:
    """The ``names`` and ``folded_names`` columns of an entity: names as given, and as a search
    by name compares them (Python's casefold, whatever the server's locale)."""
    names = normalize_names(entity.names)
    return dumps(names), fold_names(names)


class PgEntitiesMixin(PgScoped):
    """The ``entities``, ``components`` and ``relationships`` tables. Each method does what its
    SQLite twin in ``bot/store/_entities.py`` (relationships: ``_records.py``) does; the contract suite
    holds both to it."""

    __slots__ = ()

    # -- entities ----------------------------------------------------------------------------------

    async def create_entities(self, entities: Sequence[Entity]) -> bool:
        """Insert entities for this agent (existing ids are left alone); False on a database error."""
        if not entities:
            return True
        now = now_ms()
        rows = [
            (e.id or new_id(), self._agent_id, e.created_at or now, *_names(e), dumps(e.metadata.to_json()))
            for e in entities
        ]
        try:
            await self._write_rows(
                "INSERT INTO entities (id, agent_id, created_at, names, folded_names, metadata) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                rows,
            )
        except StoreError as exc:
            return self._fail("create_entities", exc)
        return True

    async def _with_components(self, where: str, params: Sequence[object]) -> list[Entity]:
        """The entities ``where`` (a condition, and an ORDER BY if any) picks, components attached."""
        rows = await self._db.fetchall(f"{_WITH_COMPONENTS} WHERE {where}", params)
        return entities_with_components(rows, [c for r in rows for c in r["components"] or ()])

    async def get_entities_by_ids(self, entity_ids: Sequence[str]) -> list[Entity]:
        """This agent's entities with these ids, components attached, in the order asked."""
        if not entity_ids:
            return []
        found = await self._with_components("e.agent_id = %s AND e.id = ANY(%s)", (self._agent_id, list(entity_ids)))
        by_id = {e.id: e for e in found}
        return [by_id[i] for i in dict.fromkeys(entity_ids) if i in by_id]

    async def get_entity(self, entity_id: str) -> Entity | None:
        """One of this agent's entities with its components, or None."""
        found = await self.get_entities_by_ids([entity_id])
        return found[0] if found else None

    async def get_entities_by_names(self, names: Sequence[str]) -> list[Entity]:
        """This agent's entities having any of ``names`` exactly (case-sensitive)."""
        names = [n for n in names if _NUL not in n]  # no stored name holds one: PostgreSQL's text cannot
        if not names:
            return []
        rows = await self._db.fetchall(
            # ?|: the jsonb array has any of these strings as an element.
            "SELECT * FROM entities WHERE agent_id = %s AND names ?| %s ORDER BY created_at, seq",
            (self._agent_id, list(names)),
        )
        return [row_to_entity(r) for r in rows]

    async def update_entity(self, entity: Entity) -> bool:
        """Overwrite the names and metadata of one of this agent's entities; False if not found.

        Raises ValueError without an id.
        """
        if not entity.id:
            raise ValueError("update_entity needs an entity id")
        changed = await self._db.execute(
            "UPDATE entities SET names = %s, folded_names = %s, metadata = %s WHERE id = %s AND agent_id = %s",
            (*_names(entity), dumps(entity.metadata.to_json()), entity.id, self._agent_id),
        )
        return changed > 0

    async def delete_entity(self, entity_id: str) -> bool:
        """Delete one of this agent's entities; cascades to its components (also those it asserted),
        participations, memories, relationships and logs. False if not found."""
        deleted = await self._db.execute(
            "DELETE FROM entities WHERE id = %s AND agent_id = %s", (entity_id, self._agent_id)
        )
        return deleted > 0

    async def get_entities_for_room(self, room_id: str, include_components: bool = False) -> list[Entity]:
        """This agent's entities taking part in ``room_id``."""
        where = (
            "e.agent_id = %s AND e.id IN (SELECT entity_id FROM participants WHERE room_id = %s AND agent_id = %s) "
            "ORDER BY e.created_at, e.seq"
        )
        params = (self._agent_id, room_id, self._agent_id)
        if include_components:
            return await self._with_components(where, params)
        return [row_to_entity(r) for r in await self._db.fetchall(f"SELECT e.* FROM entities e WHERE {where}", params)]

    async def search_entities_by_name(self, query: str, limit: int = 10) -> list[Entity]:
        """This agent's entities with a name containing ``query`` (Unicode case-insensitive).

        An empty query returns the first ``limit`` entities.
        """
        validate_count(limit, "limit")
        needle = casefold(query.strip()) or ""
        if _NUL in needle:
            return []  # no stored name holds one: PostgreSQL's text cannot
        rows = await self._db.fetchall(
            # strpos compares code points: the same match as SQLite's instr, whatever the locale.
            "SELECT * FROM entities e WHERE agent_id = %s AND (%s = '' OR EXISTS ("
            "  SELECT 1 FROM unnest(e.folded_names) n WHERE strpos(n, %s) > 0)) "
            "ORDER BY created_at, seq LIMIT %s",
            (self._agent_id, needle, needle, limit),
        )
        return [row_to_entity(r) for r in rows]

    # -- components --------------------------------------------------------------------------------

    async def create_component(self, component: Component) -> bool:
        """Store a component for this agent (a new id if it has none); False on a database error."""
        try:
            await self._db.execute(
                "INSERT INTO components (id, entity_id, agent_id, room_id, world_id, source_entity_id, type, "
                "data, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
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
            )
        except StoreError as exc:
            return self._fail("create_component", exc)
        return True

    async def get_component(
        self, entity_id: str, type: str, world_id: str | None = None, source_entity_id: str | None = None
    ) -> Component | None:
        """The oldest component of ``type`` on the entity (optionally for a world / asserted by someone), or None."""
        where, params = component_filter(self._agent_id, entity_id, world_id, source_entity_id, mark="%s")
        row = await self._db.fetchone(
            f"SELECT * FROM components WHERE {where} AND type = %s ORDER BY created_at, seq LIMIT 1", (*params, type)
        )
        return row_to_component(row) if row else None

    async def get_components(
        self, entity_id: str, world_id: str | None = None, source_entity_id: str | None = None
    ) -> list[Component]:
        """All components of the entity (optionally for a world / asserted by someone), oldest first."""
        where, params = component_filter(self._agent_id, entity_id, world_id, source_entity_id, mark="%s")
        rows = await self._db.fetchall(f"SELECT * FROM components WHERE {where} ORDER BY created_at, seq", params)
        return [row_to_component(r) for r in rows]

    async def update_component(self, component: Component) -> bool:
        """Overwrite one of this agent's components by id; False if not found or on a database error."""
        try:
            changed = await self._db.execute(
                "UPDATE components SET entity_id = %s, room_id = %s, world_id = %s, source_entity_id = %s, "
                "type = %s, data = %s WHERE id = %s AND agent_id = %s",
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
            )
        except StoreError as exc:
            return self._fail("update_component", exc)
        return changed > 0

    async def delete_component(self, component_id: str) -> bool:
        """Delete one of this agent's components; False if not found."""
        deleted = await self._db.execute(
            "DELETE FROM components WHERE id = %s AND agent_id = %s", (component_id, self._agent_id)
        )
        return deleted > 0

    # -- relationships -----------------------------------------------------------------------------

    async def create_relationship(
        self,
        source_entity_id: str,
        target_entity_id: str,
        *,
        tags: Sequence[str] | None = None,
        metadata: RelationshipMetadata | None = None,
    ) -> bool:
        """Store a directed relationship for this agent; False on error, including when it exists."""
        try:
            await self._db.execute(
                "INSERT INTO relationships (id, source_entity_id, target_entity_id, agent_id, tags, metadata, "
                "created_at) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (
                    new_id(),
                    source_entity_id,
                    target_entity_id,
                    self._agent_id,
                    dumps(list(tags or [])),
                    dumps((metadata or RelationshipMetadata()).to_json()),
                    now_ms(),
                ),
            )
        except StoreError as exc:
            return self._fail("create_relationship", exc)
        return True

    async def update_relationship(self, relationship: Relationship) -> bool:
        """Overwrite tags and metadata of one of this agent's relationships by id; False if not found."""
        changed = await self._db.execute(
            "UPDATE relationships SET tags = %s, metadata = %s WHERE id = %s AND agent_id = %s",
            (dumps(list(relationship.tags)), dumps(relationship.metadata.to_json()), relationship.id, self._agent_id),
        )
        return changed > 0

    async def get_relationship(self, source_entity_id: str, target_entity_id: str) -> Relationship | None:
        """This agent's relationship from ``source_entity_id`` to ``target_entity_id`` (directional), or None."""
        row = await self._db.fetchone(
            "SELECT * FROM relationships WHERE source_entity_id = %s AND target_entity_id = %s AND agent_id = %s",
            (source_entity_id, target_entity_id, self._agent_id),
        )
        return row_to_relationship(row) if row else None

    async def get_relationships(self, entity_id: str, tags: Sequence[str] | None = None) -> list[Relationship]:
        """This agent's relationships where ``entity_id`` is source or target, having any of ``tags`` if given."""
        sql = "SELECT * FROM relationships WHERE agent_id = %s AND (source_entity_id = %s OR target_entity_id = %s)"
        params: list[object] = [self._agent_id, entity_id, entity_id]
        if tags:
            sql += " AND tags ?| %s"  # the tags array has any of these strings
            params.append(list(tags))
        rows = await self._db.fetchall(sql + " ORDER BY created_at, seq", params)
        return [row_to_relationship(r) for r in rows]
