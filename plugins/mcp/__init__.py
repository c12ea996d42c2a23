"""MCP: a character uses the tools of the Model Context Protocol servers its file lists
(elizaOS's plugin-mcp).

``settings.mcp.servers`` names each server and how to reach it — a command over stdio, or a URL
over streamable HTTP (``"type": "http"``) or SSE — and, per character, which of its tools may be
used, which need confirmation and which only admins may trigger (plugins/mcp/_config.py; the
page docs/tools.md). The daemon keeps one session per server, shared by the characters that list
it the same way; a server that cannot start or connect is one warning, and the character runs
without its tools until it answers.

The character's tools join its others (``runtime.add_toolbox``: the ``TOOLBOX`` runtime service);
the tool loop of the core plugin asks the model which to call.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from bot.sdk import PluginMeta, SettingsView

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["check", "meta", "setup"]

_log = logging.getLogger(__name__)

meta = PluginMeta(
    name="mcp",
    description="tools from Model Context Protocol servers (settings.mcp.servers: stdio, http, sse)",
    aliases=("@elizaos/plugin-mcp",),
)


def check(settings: SettingsView) -> list[str]:
    """Raise :class:`~bot.kernel.errors.ConfigError` for a bad ``settings.mcp`` (its JSON path and
    the fix) or a secret reference that does not resolve: ``troupe check``. Returns a note naming
    the servers (none is started here)."""
    from ._config import resolve_config

    character = settings.character
    config = resolve_config(
        character.settings.get("mcp"),
        agent=settings.agent,
        environ=settings.environ,
        base_dir=character.resolve_path("."),
    )
    if not config.servers:
        return ["the mcp plugin is on but settings.mcp.servers lists no server: the character has no tools"]
    listed = ", ".join(f"{server.name} ({server.transport.value}: {server.where})" for server in config.servers)
    return [f"MCP servers: {listed}"]


async def setup(runtime: AgentRuntime) -> None:
    """Start (or join) the sessions of the character's servers and add their toolbox.

    Raises:
        ConfigError: ``settings.mcp`` is wrong, or a secret reference in it does not resolve.

    Waits for no server: each connects in the background, its tools offered once it is up.
    """
    from ._config import resolve_config
    from ._pool import ServerPool
    from ._toolbox import McpToolbox

    agent = runtime.character.name
    config = resolve_config(
        runtime.character.settings.get("mcp"),
        agent=agent,
        environ=runtime.environ,
        base_dir=runtime.character.resolve_path("."),
    )
    for server in config.servers:
        for secret in server.secrets:
            runtime.shared.secrets.add(secret)
    pool = runtime.shared.instance_of(ServerPool)
    connections = [pool.acquire(server) for server in config.servers]

    async def release() -> None:
        for server in config.servers:
            await pool.release(server)

    runtime.on_close(release)
    runtime.add_toolbox(McpToolbox(agent, config, connections))
    if config.servers:
        _log.info("%s: MCP servers %s", agent, ", ".join(server.name for server in config.servers))
