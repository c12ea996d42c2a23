"""Finding what a ``troupe memory`` command names: the agent, the room, the person."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.cli.memory._stop import EXIT_NOT_FOUND, PROG, Stop
from bot.kernel.errors import EXIT_CONFIG

if TYPE_CHECKING:
    from bot.kernel.types import Entity
    from bot.store import Store, StoreBackend

__all__ = ["SHARED", "find_agent", "find_entity", "find_room", "label", "roster"]

SHARED = "shared"  # names the shared knowledge scope as AGENT


def roster(db: StoreBackend) -> Store:
    """A store to read the cross-agent roster with (``get_agents`` ignores the store's agent)."""
    return db.for_agent("troupe:memory")


async def find_agent(db: StoreBackend, wanted: str) -> Store:
    from bot.store import SHARED_KNOWLEDGE_ID

    agents = await roster(db).get_agents()
    if wanted.strip().casefold() == SHARED and not any(a.name.casefold() == SHARED for a in agents):
        return db.for_agent(SHARED_KNOWLEDGE_ID)  # an agent really called "shared" wins
    for agent in agents:
        if agent.id == wanted.strip().lower():
            return db.for_agent(agent.id)
    named = [a for a in agents if a.name.casefold() == wanted.strip().casefold()]
    if len(named) == 1:
        return db.for_agent(named[0].id)
    if named:
        listed = ", ".join(f"{a.name} ({a.id})" for a in named)
        raise Stop(EXIT_CONFIG, f"several agents are called {wanted!r}: {listed}; give the id")
    known = ", ".join(f"{a.name} ({a.id})" for a in agents) or "none"
    raise Stop(EXIT_NOT_FOUND, f"no agent {wanted!r} in the database; known agents: {known}")


async def find_room(store: Store, room_id: str | None) -> str | None:
    if room_id is None:
        return None
    room = await store.get_room(room_id.strip().lower())
    if room is None:
        raise Stop(EXIT_NOT_FOUND, f"no room {room_id!r} for this agent; `{PROG} show AGENT` lists its rooms")
    return room.id


def label(entity: Entity) -> str:
    from bot.store import person_label

    return person_label(entity)


async def find_entity(store: Store, wanted: str | None) -> Entity | None:
    from bot.store import AmbiguousPerson, NoSuchPerson, find_person

    if wanted is None:
        return None
    try:
        return await find_person(store, wanted)
    except AmbiguousPerson as exc:
        listed = "\n".join(f"  {label(e)}" for e in exc.candidates)
        raise Stop(
            EXIT_CONFIG, f"{len(exc.candidates)} people are called {wanted!r}; give one of their ids:\n{listed}"
        ) from None
    except NoSuchPerson as exc:
        hint = ""
        if exc.similar:
            hint = "; did you mean: " + "; ".join(label(e) for e in exc.similar[:10])
        raise Stop(EXIT_NOT_FOUND, f"no one called {wanted!r} for this agent{hint}") from None
