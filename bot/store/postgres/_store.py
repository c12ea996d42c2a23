"""``PgAgentStore``: the PostgreSQL implementation of :class:`~bot.store.Store`, scoped to one agent.

Scoping is SQLite's (see ``bot/store/_sqlite.py``): every write forces ``agent_id`` to the
store's agent and every read is filtered by it, except the cross-agent reads named there. The
methods live in one module per group of tables, most of them shared with SQLite (see there);
where vectors live and searches are PostgreSQL's own. This class puts them together.
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
from bot.store._traces import TracesMixin
from bot.store.postgres._scoped import PgScoped
from bot.store.postgres._search import PgSearchMixin

__all__ = ["PgAgentStore"]


class PgAgentStore(
    AgentsMixin,
    EntitiesMixin,
    RoomsMixin,
    RecordsMixin,
    HandlingMixin,
    TracesMixin,
    PluginTablesMixin,
    KnowledgeMixin,
    RetentionMixin,
    InspectionMixin,
    ForgettingMixin,
    PgSearchMixin,
    PgScoped,
):
    """Everything one agent stores in the shared :class:`PostgresDatabase`. Implements ``Store``."""

    __slots__ = ()
