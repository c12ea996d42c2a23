"""``troupe mcp FILE``: a character's own tools for other agents, as an MCP server over stdio.

::

    troupe mcp CHARACTER [--tools search_knowledge,read_link] [--timeout S] [--db FILE|URL]

Runs the character's runtime with its plugins but no platform, on the daemon's database, and
serves the tools troupe itself offers the character — searching its knowledge, learning a
document, reading a link (every own tool its plugins offer, whatever its ``TROUPE_TOOLS``;
``--tools`` narrows) — over the Model Context Protocol's stdio transport, for Claude Desktop, an
IDE or another agent. The tools of the character's own MCP servers are not served: it is no
proxy. Standard output is the protocol's alone; log lines go to standard error. It ends, closing
the runtime and the database, when the client closes standard input, or on SIGTERM or SIGINT.
Safe while the daemon runs (see :func:`~bot.cli.mcp._command._sync_knowledge` on the one sync it
makes). docs/tools.md, "troupe as an MCP server", shows a client's configuration.

Exit status: 0 the client left, or a signal; 2 a malformed command line; 78 a configuration
problem (a missing or broken character file, a character without knowledge, a name in
``--tools`` the character does not offer, no database), said in one line on standard error.
"""

from __future__ import annotations

from bot.cli.mcp._command import add_parser, run

__all__ = ["add_parser", "run"]
