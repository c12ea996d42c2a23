"""The web: talk to a character in a browser, on the troupe console's Chat page.

It needs no token and no account anywhere: its "connection" is the console the daemon serves.
So every character runs on it whenever the console is on (``TROUPE_CONSOLE_PORT`` not 0), listed
in its file or not; a character with a model key and no Discord or Telegram bot can be talked to
at once. Each person who gives the console a name has a conversation of their own with each
character (one DM room per person and character). See ``_adapter.py`` for both directions.
"""

from __future__ import annotations

from bot.sdk import AgentRuntime, PluginMeta

from ._adapter import WEB_ADAPTER, Conversation, Upload, WebAdapter
from ._events import ChatEvent, Closing, Partial, Said, TooManyListeners, Typing
from ._lines import FileRef, Line
from ._mapping import person_name

__all__ = [
    "ChatEvent",
    "Closing",
    "connect",
    "Conversation",
    "FileRef",
    "Line",
    "meta",
    "Partial",
    "person_name",
    "Said",
    "TooManyListeners",
    "Typing",
    "Upload",
    "WEB_ADAPTER",
    "web_adapter",
    "WebAdapter",
]

meta = PluginMeta(
    name="web",
    kind="platform",
    with_console=True,
    description="talk to a character in the browser, on the console's Chat page (no token)",
    aliases=("@elizaos/plugin-web", "@elizaos/client-web"),
)


async def connect(runtime: AgentRuntime) -> None:
    """Open ``runtime``'s character to the console's Chat page (the world its conversations live in)."""
    await WebAdapter(runtime).start()


def web_adapter(runtime: AgentRuntime) -> WebAdapter | None:
    """The character's web adapter while it runs on the web (the console's Chat page finds it so)."""
    return runtime.get_service(WEB_ADAPTER)
