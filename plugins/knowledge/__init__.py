"""Knowledge: the character answers from its facts, files and folders (elizaOS's plugin-knowledge).

Sources are the character's ``knowledge`` items — facts, files (.md, .txt, .json, .pdf, .docx,
any other UTF-8 text) and folders, relative to the character file, and web pages
(``{"url": …}``, read through the core plugin's links reader) — and ``KNOWLEDGE_PATH``. They
are chunked (about 500 tokens with 100 of overlap), deduplicated by content hash, stored as
``documents`` and ``knowledge`` memories, and embedded when the agent has an embedding model.
Ingestion runs in the background when the agent starts and when a reload leaves it running
(and when a web page comes due, KNOWLEDGE_URL_REFRESH_H after it was read), and is incremental: only new or changed files are read and embedded, removed ones forgotten.
Knowledge belongs to the agent whose settings name it — KNOWLEDGE_PATH too, even from the
environment. Only items a character file marks ``shared`` are stored once, in a scope every
agent reads (bot/store/_knowledge.py says why).

The KNOWLEDGE provider puts the best fragments for each message into the planning prompt —
hybrid search: vectors plus FTS5 keywords, fused and reranked (keywords alone without an
embedding model) — or says that nothing is known about it, so the character says it does not
know. A message that arrives while a sync runs (the first start's) waits for it, at most
KNOWLEDGE_SYNC_WAIT_S. Settings: plugins/knowledge/_config.py.

As tools (``_tools``), the model can search the knowledge itself and an admin can have a document,
a link or a text learned ("learn this").

Loaded for every character (``always``): one with no knowledge of its own still sees shared
knowledge, and one with knowledge needs no plugin entry for it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from bot.sdk import PluginMeta

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["meta", "setup"]

meta = PluginMeta(
    name="knowledge",
    description="answers from the character's facts, files and folders (character.knowledge, KNOWLEDGE_PATH)",
    aliases=("@elizaos/plugin-knowledge",),
    always=True,
    depends=("core",),  # searches with the message's vector that core offers (MESSAGE_VECTORS)
    tools=("search_knowledge", "process_knowledge"),
)


async def setup(runtime: AgentRuntime) -> None:
    """Register the ``knowledge`` service, the KNOWLEDGE provider and the knowledge's tools
    (search_knowledge, process_knowledge: offered as ``TROUPE_TOOLS`` says), and start the first
    sync and the timer of web pages.

    Raises:
        ConfigError: a KNOWLEDGE_* setting is out of range.

    Reads no file here: the sync runs in the background once the runtime has started.
    """
    from bot.sdk import AgentReloaded

    from ._config import resolve_config
    from ._provider import provider
    from ._service import KNOWLEDGE, KnowledgeService
    from ._tools import PROCESS_KNOWLEDGE, SEARCH_KNOWLEDGE

    config = resolve_config(runtime)
    service = KnowledgeService(runtime, config)
    runtime.register_service(KNOWLEDGE, service)
    runtime.register_provider(dataclasses.replace(provider, dynamic=True) if config.dynamic else provider)
    runtime.register_tool(SEARCH_KNOWLEDGE)
    runtime.register_tool(PROCESS_KNOWLEDGE)
    if runtime.home:  # away from home (a daemon serving only Discord shards) the home daemon syncs
        runtime.on(AgentReloaded, service.on_reload)
        service.request_sync()
        service.start_page_timer()
