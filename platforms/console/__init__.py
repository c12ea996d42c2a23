"""A terminal conversation with one character, for trying characters locally and for tests."""

from bot.sdk import PluginMeta

from ._adapter import ConsoleAdapter
from ._notices import ConversationLog
from ._terminal import TerminalPrompt

__all__ = ["ConsoleAdapter", "ConversationLog", "TerminalPrompt", "meta"]

meta = PluginMeta(
    name="console",
    kind="platform",
    interactive=True,
    description="talk to a character in the terminal (troupe chat)",
    aliases=("@elizaos/plugin-cli",),
)
