"""The people an agent knows and what it remembers of them: the reads ``troupe memory`` and the
console's Memory page share, on top of one agent's :class:`~bot.store.Store`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.kernel.types import Entity, Memory, Relationship
    from bot.store._protocol import Store
    from bot.store._values import Forgotten

__all__ = [
    "AmbiguousPerson",
    "NoSuchPerson",
    "PersonMemory",
    "find_person",
    "forgotten_lines",
    "known_people",
    "person_label",
    "person_name",
    "recall_person",
    "speaker_names",
]

#: More people than anyone reads on one page; the lists stop there.
_PEOPLE_LIMIT = 100_000


class NoSuchPerson(LookupError):
    """No one of that id or name; ``similar`` are the people whose names contain it."""

    def __init__(self, wanted: str, similar: Sequence[Entity]) -> None:
        super().__init__(f"no one called {wanted!r}")
        self.wanted = wanted
        self.similar = list(similar)


class AmbiguousPerson(LookupError):
    """Several people have exactly that name: the id must be given."""

    def __init__(self, wanted: str, candidates: Sequence[Entity]) -> None:
        super().__init__(f"{len(candidates)} people are called {wanted!r}")
        self.wanted = wanted
        self.candidates = list(candidates)


def person_name(entity: Entity) -> str:
    """The name a person is shown by: the first they have, else their id."""
    return next((n for n in entity.names if n), entity.id)


def person_label(entity: Entity) -> str:
    """Every name a person has, and their id: what tells two people of one name apart."""
    names = ", ".join(dict.fromkeys(n for n in entity.names if n)) or "no name"
    return f"{names} ({entity.id})"


async def find_person(store: Store, wanted: str) -> Entity:
    """The person ``wanted`` names: an id, else a name only one person has (any case).

    Raises:
        NoSuchPerson: no one has that id or name.
        AmbiguousPerson: several people have that name.
    """
    text = wanted.strip()
    found = await store.get_entity(text.lower())
    if found is not None:
        return found
    similar = await store.search_entities_by_name(text, limit=1000)
    exact = [e for e in similar if any(n.casefold() == text.casefold() for n in e.names)]
    if len(exact) == 1:
        return exact[0]
    if exact:
        raise AmbiguousPerson(wanted, exact)
    raise NoSuchPerson(wanted, similar)


async def known_people(store: Store) -> list[Entity]:
    """Everyone the agent has met (not the agent itself)."""
    return [e for e in await store.search_entities_by_name("", limit=_PEOPLE_LIMIT) if e.id != store.agent_id]


async def speaker_names(store: Store, memories: Sequence[Memory]) -> dict[str, str]:
    """The name of whoever wrote each of ``memories``, by entity id (the agent's own name too)."""
    ids = list(dict.fromkeys(m.entity_id for m in memories if m.entity_id))
    agent = await store.get_agent()
    names = {store.agent_id: agent.name if agent else "agent"}
    for entity in await store.get_entities_by_ids([i for i in ids if i != store.agent_id]):
        names[entity.id] = person_name(entity)
    return names


@dataclass(frozen=True)
class PersonMemory:
    """What an agent remembers of one person."""

    person: Entity
    facts: list[Memory]
    """Facts learned from or about them, newest first."""
    relationships: list[Relationship]
    messages: list[Memory]
    """What they wrote, newest first."""
    names: dict[str, str] = field(default_factory=dict)
    """Names of the people the relationships and messages mention, by entity id."""


async def recall_person(store: Store, entity_id: str, *, facts: int = 100, messages: int = 20) -> PersonMemory | None:
    """The person with this id and what the agent remembers of them; None if it knows no such person."""
    person = await store.get_entity(entity_id)
    if person is None:
        return None
    learned = await store.list_memories(tables=["facts"], entity_id=person.id, count=facts)
    said = await store.list_memories(tables=["messages"], entity_id=person.id, count=messages)
    said = [m for m in said if m.entity_id == person.id]  # not what others said about them
    relationships = await store.get_relationships(person.id)
    others = {r.source_entity_id for r in relationships} | {r.target_entity_id for r in relationships}
    agent = await store.get_agent()
    names = {store.agent_id: agent.name if agent else "agent", person.id: person_name(person)}
    for entity in await store.get_entities_by_ids(sorted(others - set(names))):
        names[entity.id] = person_name(entity)
    return PersonMemory(person, learned, relationships, said, names)


def forgotten_lines(result: Forgotten) -> list[str]:
    """What a forget deletes (or deleted), one line per kind, with the counts."""
    lines = []
    if result.memories:
        lines.append("memories: " + ", ".join(f"{t} {n}" for t, n in sorted(result.memories.items())))
    if result.rows:
        lines.append("other rows: " + ", ".join(f"{t} {n}" for t, n in sorted(result.rows.items())))
    if result.edited:
        lines.append("kept, with the id removed: " + ", ".join(f"{t} {n}" for t, n in sorted(result.edited.items())))
    return lines
