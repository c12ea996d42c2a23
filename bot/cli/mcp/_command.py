"""Running ``troupe mcp``: one character's runtime, without a platform, serving its own tools."""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from mcp.server import Server

from bot.cli.databases import add_database_argument, database_location
from bot.cli.log_levels import add_log_level_option
from bot.cli.mcp._serving import serve_stdio, tool_server
from bot.config import plugins as plugin_registry
from bot.config.character import LoadResult, find_character, load_characters
from bot.config.settings import DaemonSettings, load_environ
from bot.daemon.chat import runtime_plugins
from bot.daemon.signals import install_signal_handlers, remove_signal_handlers
from bot.kernel import logs, redact
from bot.kernel.errors import EXIT_CONFIG, TroupeError
from bot.runtime.agent import AgentRuntime
from bot.runtime.components import TOOLBOX
from bot.runtime.knowledge_base import KNOWLEDGE_BASE
from bot.runtime.shared import Shared
from bot.runtime.toolboxes import Toolboxes
from bot.store import backend_for

__all__ = ["add_parser", "run"]

_log = logging.getLogger(__name__)

PROG = "troupe mcp"
_DEFAULT_TIMEOUT_S = 120.0
#: The plugin whose tools answer from the character's knowledge: serving one needs some.
_KNOWLEDGE_PLUGIN = "knowledge"
#: Not loaded here: the character's own MCP servers are not served (troupe mcp is no proxy).
_NOT_LOADED = frozenset({"mcp"})


class _Stop(Exception):
    """Ends the command before it serves: the message on stderr, exit status 78."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``mcp`` to the ``troupe`` subparsers ``sub``."""
    mcp = sub.add_parser(
        "mcp",
        help="serve a character's own tools (its knowledge) to other agents over MCP (stdio)",
        description="Serve one character's own tools — search_knowledge, process_knowledge, read_link — "
        "as a Model Context Protocol server on standard input and output, for Claude Desktop, an IDE or "
        "another agent. Runs the character with its plugins but no platform, on the daemon's database; "
        "safe while the daemon runs. Log lines go to standard error.",
        epilog="exit status: 0 the client closed standard input, or SIGTERM; 2 a malformed command line; "
        "78 a configuration problem (the character file, no knowledge, --tools, the database)",
    )
    mcp.add_argument("character", metavar="FILE", help="a character file or name")
    mcp.add_argument(
        "--tools",
        metavar="A,B",
        help="serve only these of the character's tools, separated by commas (default: all of them)",
    )
    mcp.add_argument(
        "--timeout",
        type=float,
        default=_DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"the longest one call may take (default: {_DEFAULT_TIMEOUT_S:g})",
    )
    add_database_argument(mcp)
    add_log_level_option(mcp, "TROUPE_LOG_LEVEL, else INFO; on standard error")


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``troupe mcp`` until the client leaves; returns the exit status."""
    settings = DaemonSettings()
    logs.configure(args.log_level or settings.log_level)  # to stderr: stdout is the protocol's
    try:
        if not args.timeout > 0:
            raise _Stop(f"--timeout must be a number of seconds above 0, not {args.timeout:g}")
        return asyncio.run(_main(args))
    except (_Stop, TroupeError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    finally:
        logs.flush_repeats()


def _character(name: str, environ: Mapping[str, str]) -> LoadResult:
    """The character ``name`` means, loaded; one line naming its problems when it cannot be."""
    (result,) = load_characters([find_character(name)], environ=environ)
    if not result.ok:
        problems = "; ".join(str(p) for p in result.problems)
        raise _Stop(f"{result.source}: {problems} (troupe check {result.source} says more)")
    return result


async def _main(args: argparse.Namespace) -> int:
    environ = load_environ()
    result = _character(args.character, environ)
    character = result.raise_for_problems()
    try:
        location = await database_location(args.db)
    except FileNotFoundError as exc:
        raise _Stop(str(exc)) from None
    shared = Shared()  # the character's secrets, kept out of log lines and results
    with redact.filtering(shared.secrets), logs.agent_context(character.name):
        async with backend_for(location, name=PROG) as db:
            runtime = AgentRuntime(
                character,
                db.for_agent(character.agent_id),
                environ=environ,
                plugins=[name for name in runtime_plugins(result) if name not in _NOT_LOADED],
                model_preset=result.model_preset,
                shared=shared,
            )
            # Not home: the daemon runs the character's stored tasks (memory retention …) and
            # watches for reloads; two processes doing so would do the work twice. Messages are
            # never taken up here either: with no platform, none arrives and none is recovered.
            runtime.home = False
            # Every own tool its plugins offer, whatever TROUPE_TOOLS says for its chats: the
            # operator running this chose to serve them (--tools narrows).
            runtime.set_setting("TROUPE_TOOLS", "all")
            await runtime.start()  # closes itself when it fails
            try:
                served = _served(runtime, args.tools)
                await _check_knowledge(runtime, served)
                _sync_knowledge(runtime)
                server = tool_server(
                    character.name, _toolbox(runtime), served, timeout=args.timeout, secrets=shared.secrets
                )
                _log.info("serving %s over MCP on standard input and output", ", ".join(served))
                await _serve_until_stopped(server)
            finally:
                await runtime.close()
    return 0


def _toolbox(runtime: AgentRuntime) -> Toolboxes:
    box = runtime.get_service(TOOLBOX)
    if not isinstance(box, Toolboxes):
        raise _Stop(f"{runtime.character.name} has no tools of its own: none of its plugins offers one")
    return box


def _served(runtime: AgentRuntime, wanted: str | None) -> list[str]:
    """The tools to serve: the character's own (never its toolboxes'), or those ``--tools`` names."""
    own = _toolbox(runtime).own_names
    if wanted is None:
        return own
    names = [word.strip() for word in wanted.split(",") if word.strip()]
    unknown = [name for name in names if name not in own]
    if unknown or not names:
        named = f"names {', '.join(unknown)}, which {runtime.character.name} does not offer" if names else "is empty"
        raise _Stop(f"--tools {named}: give some of {', '.join(own)}, separated by commas")
    return list(dict.fromkeys(names))


async def _check_knowledge(runtime: AgentRuntime, served: Sequence[str]) -> None:
    """Refuse to serve the knowledge of a character that has none: no knowledge items in its
    file, no folder (a ``directory`` item or KNOWLEDGE_PATH), and nothing stored for it (not even
    shared knowledge)."""
    knowledge_tools = plugin_registry.available()[_KNOWLEDGE_PLUGIN].tools
    if set(knowledge_tools).isdisjoint(served) or runtime.character.knowledge:
        return
    base = runtime.get_service(KNOWLEDGE_BASE)
    if base is not None and await base.upload_folder() is not None:
        return
    if await runtime.store.has_knowledge():
        return
    raise _Stop(
        f"{runtime.character.name} has no knowledge to serve: list facts, files or folders under "
        '"knowledge" in its file (a {"directory": "knowledge"} folder also takes what process_knowledge '
        "learns), or set KNOWLEDGE_PATH; or serve other tools with --tools"
    )


def _sync_knowledge(runtime: AgentRuntime) -> None:
    """Bring the stored knowledge in line with the character's files once, in the background (a
    search meanwhile waits for it, at most KNOWLEDGE_SYNC_WAIT_S).

    Safe beside a daemon on the same database: a sync is incremental (files unchanged since the
    daemon's own sync are not read again), its rows have ids fixed by their content and are
    written with "insert or leave", so two processes syncing the same files agree; and SQLite's
    write-ahead log with a busy timeout (or PostgreSQL) lets both write. Without a daemon, it is
    the only sync there is. It reads the files the daemon would as long as it sees the same
    settings (run it where the daemon's .env is): a KNOWLEDGE_PATH missing here would drop that
    folder's documents until the daemon's next sync.
    """
    base = runtime.get_service(KNOWLEDGE_BASE)
    if base is not None:
        runtime.create_task(base.resync(), "knowledge:sync")


async def _serve_until_stopped(server: Server[Any]) -> None:
    """Serve until standard input ends, or until SIGTERM or SIGINT (then at once)."""
    serving = asyncio.create_task(serve_stdio(server), name="troupe mcp: stdio")
    signalled: list[signal.Signals] = []

    def stop(sig: signal.Signals) -> None:
        signalled.append(sig)
        serving.cancel()

    installed = install_signal_handlers({sig: functools.partial(stop, sig) for sig in (signal.SIGTERM, signal.SIGINT)})
    try:
        await asyncio.wait([serving])
    finally:
        remove_signal_handlers(installed)
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
    if signalled:
        # Cancelled mid-session, the SDK may end with an error of its own streams: the stop was asked for.
        _log.info("stopping (%s)", signalled[0].name)
    elif not serving.cancelled():
        serving.result()  # a failure of the transport is the command's
