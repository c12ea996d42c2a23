"""What one agent's knowledge is made of and how it is searched: its settings and its sources.

Pure: reads settings through ``runtime.get_setting`` and the character; no file is touched.

=====================================  =========  =============================================
setting                                default    meaning
=====================================  =========  =============================================
``KNOWLEDGE_PATH``                     unset      a folder (or file) of documents, the agent's
                                                  own (never shared): relative to the character
                                                  file when set there, else to the working folder
``LOAD_DOCS_ON_STARTUP``               unset      ``true`` without KNOWLEDGE_PATH: ``./docs``;
                                                  ``false``: ignore KNOWLEDGE_PATH
``KNOWLEDGE_CHUNK_TOKENS``             500        tokens per chunk (``EMBEDDING_CHUNK_SIZE``)
``KNOWLEDGE_CHUNK_OVERLAP_TOKENS``     100        tokens each chunk repeats from the one before
                                                  (``EMBEDDING_OVERLAP_SIZE``)
``KNOWLEDGE_MAX_TOKENS``               2000       budget of the KNOWLEDGE provider's text
``KNOWLEDGE_MAX_FRAGMENTS``            5          most fragments the provider shows
``KNOWLEDGE_CANDIDATES``               20         fragments each search (vector, keyword) finds
``KNOWLEDGE_MIN_SIMILARITY``           0.25       cosine floor of vector hits
``KNOWLEDGE_EMBED_BATCH``              64         texts per embedding request
``KNOWLEDGE_EMBED_CONCURRENCY``        2          embedding requests at once
``KNOWLEDGE_MAX_FILE_MB``              20         larger files are skipped
``KNOWLEDGE_PROVIDER_DYNAMIC``         false      ``true``: KNOWLEDGE only when the model asks
``KNOWLEDGE_SYNC_WAIT_S``              10         longest a message waits for a sync under way
                                                  (the first start's, a reload's) before the
                                                  provider answers from what is stored so far
``KNOWLEDGE_URL_REFRESH_H``            24         hours before a ``{"url": …}`` page is read
                                                  again (fractions too: 0.5 is 30 minutes); a
                                                  timer reads it when due while the agent runs;
                                                  0: at every sync (start, reload) only
``CTX_KNOWLEDGE_ENABLED``              false      ``true``: each fragment is embedded with a
                                                  short context the small model writes of it in
                                                  its document (contextual embeddings)
``CTX_KNOWLEDGE_CONCURRENCY``          4          those model calls at once
=====================================  =========  =============================================

KNOWLEDGE_MAX_TOKENS defaults to 2000, half of upstream's 4000: the text goes into every
planning prompt of a character with knowledge, and four 500-token chunks (or many short facts)
answer most questions. Raise it for long, dense documents.

KNOWLEDGE_MIN_SIMILARITY depends on the embedding model: 0.25 suits OpenAI's text-embedding-3
models (unrelated texts score 0.0–0.2); models that score everything higher (nomic-embed-text)
want 0.4 or so. A vector hit below it can still come through the keyword search.

KNOWLEDGE_PATH is the agent's own wherever it is set: one set in the environment for one run
(``KNOWLEDGE_PATH=docs troupe chat ada.json``) gives every agent of that run its own copy, and
the next run without it forgets it. Only ``knowledge`` items marked ``shared`` in a character
file are shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.sdk import SettingReader, expand_home

from ._files import Root

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["KnowledgeConfig", "resolve_config", "roots"]

_DEFAULT_DOCS = "docs"


@dataclass(frozen=True, slots=True)
class KnowledgeConfig:
    """One agent's knowledge settings (see the module docstring)."""

    chunk_tokens: int = 500
    overlap_tokens: int = 100
    max_tokens: int = 2000
    max_fragments: int = 5
    candidates: int = 20
    min_similarity: float = 0.25
    embed_batch: int = 64
    embed_concurrency: int = 2
    max_file_mb: float = 20.0
    dynamic: bool = False
    sync_wait_s: float = 10.0
    url_refresh_h: float = 24.0
    contextual: bool = False
    context_concurrency: int = 4

    @property
    def url_refresh_ns(self) -> int:
        return int(self.url_refresh_h * 3600 * 1_000_000_000)

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)

    @property
    def chunking(self) -> str:
        """What a document's fragments depend on besides its bytes: part of its id, so changing
        the chunk settings re-chunks every document (and turning contextual embeddings on or off
        embeds every one again, the other way)."""
        plain = f"{self.chunk_tokens}/{self.overlap_tokens}"
        return f"{plain}/ctx" if self.contextual else plain


def _first(read: SettingReader, *keys: str) -> tuple[str, str | None]:
    for key in keys:
        value = read.optional(key)
        if value is not None:
            return key, value
    return keys[0], None


def resolve_config(runtime: AgentRuntime) -> KnowledgeConfig:
    """This agent's knowledge settings.

    Raises:
        ConfigError: a setting is out of range; the message names the agent and the setting.
    """
    read = SettingReader(runtime.get_setting, runtime.character.name)
    chunk_key, _ = _first(read, "KNOWLEDGE_CHUNK_TOKENS", "EMBEDDING_CHUNK_SIZE")
    overlap_key, _ = _first(read, "KNOWLEDGE_CHUNK_OVERLAP_TOKENS", "EMBEDDING_OVERLAP_SIZE")
    chunk_tokens = read.whole(chunk_key, 500, 50, 8000)
    return KnowledgeConfig(
        chunk_tokens=chunk_tokens,
        overlap_tokens=read.whole(overlap_key, min(100, chunk_tokens // 2), 0, chunk_tokens // 2),
        max_tokens=read.whole("KNOWLEDGE_MAX_TOKENS", 2000, 0, 100_000),
        max_fragments=read.whole("KNOWLEDGE_MAX_FRAGMENTS", 5, 1, 100),
        candidates=read.whole("KNOWLEDGE_CANDIDATES", 20, 1, 1000),
        min_similarity=read.number("KNOWLEDGE_MIN_SIMILARITY", 0.25, -1.0, 1.0),
        embed_batch=read.whole("KNOWLEDGE_EMBED_BATCH", 64, 1, 2048),
        embed_concurrency=read.whole("KNOWLEDGE_EMBED_CONCURRENCY", 2, 1, 32),
        max_file_mb=read.number("KNOWLEDGE_MAX_FILE_MB", 20.0, 0.001, 10_000),
        dynamic=read.flag("KNOWLEDGE_PROVIDER_DYNAMIC"),
        sync_wait_s=read.number("KNOWLEDGE_SYNC_WAIT_S", 10.0, 0.0, 600.0),
        url_refresh_h=read.number("KNOWLEDGE_URL_REFRESH_H", 24.0, 0.0, 24 * 365),
        contextual=read.flag("CTX_KNOWLEDGE_ENABLED"),
        context_concurrency=read.whole("CTX_KNOWLEDGE_CONCURRENCY", 4, 1, 32),
    )


def _from_character(runtime: AgentRuntime, key: str) -> bool:
    character = runtime.character
    return key in character.settings or character.secret(key) is not None


def roots(runtime: AgentRuntime) -> list[Root]:
    """The files and folders this agent's knowledge comes from: the character's ``knowledge``
    paths and directories (relative to the character file), then ``KNOWLEDGE_PATH``."""
    character = runtime.character
    found: list[Root] = []
    for i, item in enumerate(character.knowledge):
        if item.kind in ("path", "directory"):
            found.append(
                Root(character.resolve_path(item.path or item.directory or ""), item.shared, f"knowledge[{i}]")
            )
    read = SettingReader(runtime.get_setting, character.name)
    load = read.optional("LOAD_DOCS_ON_STARTUP")
    enabled = None if load is None else load.lower() not in ("false", "0", "no", "off")
    path = read.optional("KNOWLEDGE_PATH")
    if path is None and enabled:
        path = _DEFAULT_DOCS
    if path is not None and enabled is not False:
        # Never shared, even from the environment: set for one run of one character, it must not
        # reach the others' knowledge nor outlive the run.
        where = character.resolve_path(path) if _from_character(runtime, "KNOWLEDGE_PATH") else expand_home(path)
        found.append(Root(where.absolute(), False, "KNOWLEDGE_PATH"))
    return found
