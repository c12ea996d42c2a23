"""Retrieval over a character's documents and knowledge snippets."""

from bot.plugins import PluginMeta

__all__ = ["meta"]

meta = PluginMeta(
    name="knowledge",
    description="retrieval over the character's documents (character.knowledge, docs folder)",
    aliases=("@elizaos/plugin-knowledge",),
)
