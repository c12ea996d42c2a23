"""``AgentStore``: the SQLite implementation of :class:`~bot.store.Store`, scoped to one agent.

Scoping: every write forces ``agent_id`` to the store's agent, and every read is filtered by it,
except :meth:`AgentStore.get_world`, :meth:`AgentStore.get_agent` and :meth:`AgentStore.get_agents`,
which are cross-agent on purpose. Upstream leaves some reads unscoped (entities by id, rooms by
world, relationships, ``delete_all_memories``); troupe scopes them too, because ids are already
agent-specific (``unique_uuid``) and one character must never read or delete another's data.
The knowledge methods also read (and write their own claims on) the shared-knowledge scope
every agent sees (``_knowledge``).

The methods live in one module per group of tables; this class only puts them together. Most
groups are written once for both backends, behind a dialect (``_dialect``): ``_agents``,
``_entities``, ``_rooms``, ``_records``, ``_knowledge``, ``_inspection``, ``_forgetting``,
``_handling``, ``_memories``, ``_retention``, ``_search``. Where vectors live and how the
nearest are found is SQLite's own (``_sqlite_search``).
"""

from __future__ import annotations

from bot.store._agents import AgentsMixin
from bot.store._entities import EntitiesMixin
from bot.store._forgetting import ForgettingMixin
from bot.store._handling import HandlingMixin
from bot.store._inspection import InspectionMixin
from bot.store._knowledge import KnowledgeMixin
from bot.store._plugin_tables import PluginTablesMixin
from bot.store._records import RecordsMixin
from bot.store._retention import RetentionMixin
from bot.store._rooms import RoomsMixin
from bot.store._scoped import AgentScoped
from bot.store._sqlite_search import SqliteSearchMixin
from bot.store._traces import TracesMixin

__all__ = ["AgentStore"]


class AgentStore(
    AgentsMixin,
    EntitiesMixin,
    RoomsMixin,
    RetentionMixin,
    SqliteSearchMixin,
    InspectionMixin,
    ForgettingMixin,
    RecordsMixin,
    KnowledgeMixin,
    HandlingMixin,
    TracesMixin,
    PluginTablesMixin,
    AgentScoped,
):
    """Everything one agent stores, in the shared :class:`~bot.store.Database`. Implements ``Store``.

    Get one with ``db.for_agent(agent_id)``. Methods raise RuntimeError when the database is not
    open, StoreError when SQLite fails, and ValueError for arguments no call could satisfy. Methods
    documented to return False on failure (as upstream's adapter does) log the cause instead.
    """

    __slots__ = ()
