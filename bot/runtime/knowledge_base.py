"""What a character's knowledge offers beyond the prompt: its sources, a file added, a sync, a
trial search. The knowledge plugin registers it (``runtime.get_service(KNOWLEDGE_BASE)``); the
console's Knowledge page uses it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from bot.runtime.components import ServiceKey

if TYPE_CHECKING:
    from bot.store import StoredKnowledgeSource

__all__ = ["KNOWLEDGE_BASE", "KnowledgeBase", "KnowledgeMatch", "KnowledgeSync", "UploadRefused"]


class UploadRefused(Exception):
    """A file that cannot be added to the knowledge; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class KnowledgeSync:
    """What the last sync of the knowledge did."""

    finished_at: int
    """When it ended (ms since the epoch)."""
    seconds: float
    files: int
    facts: int
    fragments: int
    """Fragments the agent can search afterwards (its own and shared)."""
    new: int
    changed: int
    removed: int
    skipped: int
    problems: tuple[str, ...] = ()
    """What could not be read (a file skipped, a page not read), one line each."""
    pages: int = 0
    """Web pages listed (``{"url": …}``), read this time or not."""


@dataclass(frozen=True, slots=True)
class KnowledgeMatch:
    """One fragment a search found, with how it was found."""

    title: str
    """The document it is part of."""
    text: str
    score: float
    """The fused, reranked score it was ordered by (higher is better)."""
    similarity: float | None
    """Cosine similarity to the question's vector, when the vector search found it."""
    keyword_rank: int | None
    vector_rank: int | None
    shared: bool


@runtime_checkable
class KnowledgeBase(Protocol):
    """One character's knowledge, for whoever manages it."""

    @property
    def max_file_bytes(self) -> int:
        """The largest file it reads (KNOWLEDGE_MAX_FILE_MB)."""
        ...

    @property
    def syncing(self) -> bool:
        """Whether a sync is requested or running."""
        ...

    @property
    def last_sync(self) -> KnowledgeSync | None:
        """What the last finished sync did; None before the first."""
        ...

    async def sources(self) -> list[StoredKnowledgeSource]:
        """The files and facts the knowledge is made of, as stored."""
        ...

    async def upload_folder(self) -> Path | None:
        """The folder a new file goes to: the character's first own knowledge folder; None when
        it has none."""
        ...

    async def add_file(self, filename: str, data: bytes) -> Path:
        """Check ``data`` is a file the knowledge reads and save it as ``filename`` in
        :meth:`upload_folder`, atomically (a file of that name is replaced). It is searchable
        after the next sync (:meth:`resync`).

        Raises:
            UploadRefused: no folder, a name or a kind of file it cannot take, or too large.
        """
        ...

    async def resync(self) -> KnowledgeSync | None:
        """Read the sources again (only what changed) and wait for it; what the sync did."""
        ...

    async def try_search(self, query: str) -> list[KnowledgeMatch]:
        """What the KNOWLEDGE provider would find for a message saying ``query``, best first."""
        ...


#: The service under which the knowledge plugin offers a character's :class:`KnowledgeBase`.
KNOWLEDGE_BASE: ServiceKey[KnowledgeBase] = ServiceKey("knowledge")
