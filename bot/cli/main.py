"""The ``troupe`` command.

``troupe check [FILES…]``  validate character files; exit 0 when all are valid, 78 when not.
``troupe start [FILES…]``  run the daemon with these characters (default: ``characters/``).
``troupe status``          the running daemon's agents, their platforms and their state; with
                           TROUPE_DATABASE_URL, the whole troupe (read from the database when
                           no daemon runs here).
``troupe reload``          make the running daemon read its character files again (like SIGHUP).
``troupe chat FILE``       talk to one character in the terminal.
``troupe mcp FILE``        serve one character's own tools (its knowledge) over MCP on stdio (bot/cli/mcp/).
``troupe memory …``        inspect, export and forget what an agent remembers (bot/cli/memory/).
``troupe store copy``      move a SQLite troupe into PostgreSQL (bot/cli/store.py).
``troupe why ID``          how a message ended and why, or a room's last messages (bot/cli/why.py).
``troupe --version``       the installed version.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from bot import installed_version
from bot.cli import mcp as mcp_cli
from bot.cli import memory as memory_cli
from bot.cli import store as store_cli
from bot.cli import why as why_cli
from bot.cli.log_levels import add_log_level_option
from bot.config.character import LoadResult, find_character, load_characters, scan_character_files
from bot.config.settings import DaemonSettings, load_environ
from bot.daemon.platform_plans import Preflight, preflight, refusal
from bot.kernel import logs
from bot.kernel.errors import EXIT_CONFIG, TroupeError

__all__ = ["main"]

EXIT_UNAVAILABLE = 69  # sysexits EX_UNAVAILABLE: no daemon to talk to
EXIT_CRASH = 70  # sysexits EX_SOFTWARE: a bug; systemd restarts the service
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a command whose reader went away (| head)
_DEFAULT_CHARACTERS = "characters"
_RELOAD_TIMEOUT_S = 120.0  # restarting agents waits for their platforms to be ready


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="troupe", description="Run a troupe of AI characters on Discord and Telegram."
    )
    parser.add_argument("--version", action="version", version=f"troupe {installed_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = sub.add_parser("check", help="validate character files")
    check.add_argument(
        "characters",
        nargs="*",
        default=[_DEFAULT_CHARACTERS],
        metavar="FILE",
        help="character files, folders of them, or names (default: characters/)",
    )

    start = sub.add_parser("start", help="run the daemon")
    start.add_argument(
        "characters",
        nargs="*",
        default=[_DEFAULT_CHARACTERS],
        metavar="FILE",
        help="character files, folders of them, or names (default: characters/)",
    )
    add_log_level_option(start, "TROUPE_LOG_LEVEL, else INFO")

    status = sub.add_parser(
        "status", help="show the running daemon's agents and platforms (and the whole troupe on PostgreSQL)"
    )
    status.add_argument("--json", action="store_true", help="print the daemon's answer as JSON")
    sub.add_parser("reload", help="make the running daemon read its character files again")

    chat = sub.add_parser("chat", help="talk to one character in the terminal")
    chat.add_argument("character", metavar="FILE", help="a character file or name")
    chat.add_argument("--as", dest="user", default="you", help="your name in the conversation (default: you)")
    add_log_level_option(chat, "WARNING")
    mcp_cli.add_parser(sub)
    memory_cli.add_parser(sub)
    store_cli.add_parser(sub)
    why_cli.add_parser(sub)
    return parser


def _report(results: Sequence[LoadResult], out: TextIO | None = None, checks: Sequence[Preflight] = ()) -> None:
    """Each file: OK, or its problems; then its warnings. ``checks``: the valid files'
    :func:`~bot.daemon.platform_plans.preflight`, in order, whose findings are problems too."""
    out = out or sys.stdout
    found = iter(checks)
    for result in results:
        check = next(found) if result.ok and checks else None
        problems = [str(p) for p in result.problems] + (check.findings if check else [])
        if not problems:
            assert result.character is not None
            planned = [p.platform for p in check.plans] if check else []
            runs_on = ", ".join(dict.fromkeys([*result.platforms, *planned])) or "no platform"
            print(f"{result.source}: OK  {result.character.name} ({result.character.agent_id}; {runs_on})", file=out)
        else:
            count = len(problems)
            print(f"{result.source}: {count} problem{'s' if count != 1 else ''}", file=out)
            for problem in problems:
                print(f"  {problem}", file=out)
        for warning in [*result.warnings, *(check.skipped if check else [])]:
            print(f"  warning: {warning}", file=out)
        for note in check.notes if check else ():
            print(f"  note: {note}", file=out)


def _no_characters_folder(args: argparse.Namespace) -> bool:
    """Say so when no file was given and there is no characters/ folder to fall back on."""
    if args.characters != [_DEFAULT_CHARACTERS] or Path(_DEFAULT_CHARACTERS).exists():
        return False
    print(
        f"troupe {args.command}: there is no {_DEFAULT_CHARACTERS}/ folder in {Path.cwd()}; give character files "
        f"or folders of them: troupe {args.command} path/to/character.json",
        file=sys.stderr,
    )
    return True


def _scan(args: argparse.Namespace, out: TextIO) -> list[Path]:
    """The character files the arguments name; says which folder entries it passes over, and why."""
    found = scan_character_files(args.characters)
    for entry, reason in found.skipped:
        print(f"{entry}: skipped, {reason}", file=out)
    if not found.paths:
        print(f"troupe {args.command}: no character files found; give .json files or a folder of them", file=sys.stderr)
    return found.paths


def _check(args: argparse.Namespace) -> int:
    if _no_characters_folder(args):
        return EXIT_CONFIG
    paths = _scan(args, sys.stdout)
    if not paths:
        return EXIT_CONFIG
    environ = load_environ()
    results = load_characters(paths, environ=environ)
    # The checks troupe start makes before it opens anything: a file start would refuse is not OK.
    # With the console on, every character also runs on the web platform (its Chat page).
    console = bool(DaemonSettings().console_port)
    checks = [preflight(r, environ, console=console) for r in results if r.ok]
    _report(results, checks=checks)
    refused = refusal(checks) if checks else None
    if refused is not None:
        print(f"troupe check: {refused}")
    ok = all(r.ok for r in results) and not any(c.findings for c in checks) and refused is None
    return 0 if ok else EXIT_CONFIG


def _start(args: argparse.Namespace) -> int:
    from bot.daemon.daemon import Daemon

    settings = DaemonSettings()
    logs.configure(args.log_level or settings.log_level)
    if _no_characters_folder(args):
        return EXIT_CONFIG
    environ = load_environ()
    paths = _scan(args, sys.stderr)
    if not paths:
        return EXIT_CONFIG
    results = load_characters(paths, environ=environ)
    bad = [r for r in results if not r.ok]
    if bad:
        _report(bad, out=sys.stderr)
    good = [r for r in results if r.ok]
    if not good:
        print("troupe start: no valid character to run; fix the problems above (troupe check)", file=sys.stderr)
        return EXIT_CONFIG
    try:
        return asyncio.run(Daemon(settings, good, environ, sources=args.characters).run())
    finally:
        logs.flush_repeats()


_SERVICE_SOCKET = Path("/run/troupe/control.sock")  # where systemd/troupe.service puts it


def _control_socket(settings: DaemonSettings) -> Path:
    """The daemon's socket: as configured, else the service's if one runs here (an operator's
    shell has no $RUNTIME_DIRECTORY), else next to the default database."""
    if settings.control_socket is None and not os.environ.get("RUNTIME_DIRECTORY") and _SERVICE_SOCKET.exists():
        return _SERVICE_SOCKET
    return settings.control_path


class _NoDaemon(Exception):
    """Nothing answers on the control socket; the message says where it looked."""


def _ask_daemon(method: str, route: str, timeout: float) -> tuple[int, object]:
    from bot.daemon.control import DaemonNotRunning, call  # aiohttp: only for the commands that talk to a daemon

    try:
        return asyncio.run(call(_control_socket(DaemonSettings()), method, route, timeout=timeout))
    except DaemonNotRunning as exc:
        raise _NoDaemon(str(exc)) from None


def _status(args: argparse.Namespace) -> int:
    from bot.daemon.control import format_status

    try:
        code, body = _ask_daemon("GET", "/status", 10.0)
    except _NoDaemon as exc:
        settings = DaemonSettings()
        if settings.database_url is None:
            raise
        return _troupe_from_database(args, settings, str(exc))
    if code != 200 or not isinstance(body, dict):
        print(f"troupe status: the daemon answered {code}: {body}", file=sys.stderr)
        return 1
    print(json.dumps(body, indent=2) if args.json else format_status(body))
    return 0


def _troupe_from_database(args: argparse.Namespace, settings: DaemonSettings, no_daemon: str) -> int:
    """No daemon runs here, but the troupe shares a database: show the troupe as it has it."""
    from bot.cluster.roster import troupe_status
    from bot.daemon.control import TroupeStatus, format_troupe
    from bot.store import backend_for, redacted_url

    # Said first: should the database not answer either, its error follows this line.
    print(f"troupe status: {no_daemon}; the troupe as {redacted_url(settings.store_location)} has it:", file=sys.stderr)

    async def read() -> TroupeStatus:
        async with backend_for(settings.store_location, name="troupe status") as db:
            return await troupe_status(db)

    troupe = asyncio.run(read())
    print(json.dumps({"troupe": troupe}, indent=2) if args.json else format_troupe(dict(troupe)))
    return 0


def _reload(args: argparse.Namespace) -> int:
    from bot.daemon.control import format_reload

    code, body = _ask_daemon("POST", "/reload", _RELOAD_TIMEOUT_S)
    if code != 200 or not isinstance(body, dict):
        error = body.get("error") if isinstance(body, dict) else body
        print(f"troupe reload: {error or f'the daemon answered {code}'}", file=sys.stderr)
        return 1
    print(format_reload(body))
    return 1 if body.get("failed") else 0


def _chat(args: argparse.Namespace) -> int:
    from bot.daemon.chat import chat_in_terminal

    settings = DaemonSettings()
    # The terminal is for the conversation: problems show in it as one line each, and log lines
    # only when asked for (--log-level, or a TROUPE_LOG_LEVEL other than the daemon's INFO).
    log_level = args.log_level or (settings.log_level if settings.log_level.upper() != "INFO" else None)
    logs.configure(log_level or "WARNING")
    environ = load_environ()
    results = load_characters([find_character(args.character)], environ=environ)
    bad = [r for r in results if not r.ok]
    if bad or not results:
        _report(bad, out=sys.stderr)
        return EXIT_CONFIG
    return chat_in_terminal(settings, results[0], environ, user=args.user, log_lines=log_level is not None)


def _run(args: argparse.Namespace) -> int:
    if args.command == "check":
        return _check(args)
    if args.command == "chat":
        return _chat(args)
    if args.command == "mcp":
        return mcp_cli.run(args)
    if args.command == "memory":
        return memory_cli.run(args)
    if args.command == "store":
        return store_cli.run(args)
    if args.command == "why":
        return why_cli.run(args)
    if args.command in ("status", "reload"):
        return _status(args) if args.command == "status" else _reload(args)
    return _start(args)


def _reader_gone() -> int:
    """stdout's reader went away (``troupe check | head``): end quietly, as other commands do."""
    # Whatever is still buffered would fail again when Python flushes stdout at exit.
    devnull = os.open(os.devnull, os.O_WRONLY)
    with contextlib.suppress(OSError, ValueError):  # a stdout without a file descriptor has nothing to flush
        os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``troupe`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        status = _run(args)
        sys.stdout.flush()  # here, so a reader that went away is noticed here and not at exit
        return status
    except BrokenPipeError:
        if args.command == "start":  # the daemon writes to no pipe of a reader's: a bug
            return _crashed(args.command)
        return _reader_gone()
    except TroupeError as exc:
        print(f"troupe: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except _NoDaemon as exc:
        print(f"troupe {args.command}: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except KeyboardInterrupt:
        print(file=sys.stderr)  # the shell's next prompt on a line of its own, not after "^C"
        return 130
    except Exception:
        return _crashed(args.command)


def _crashed(command: str) -> int:
    """A crash: the traceback goes to the log (the journal), at critical priority."""
    logging.getLogger("troupe").critical("troupe %s crashed", command, exc_info=True)
    return EXIT_CRASH


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
