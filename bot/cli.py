"""The ``troupe`` command.

``troupe check [FILES…]``  validate character files; exit 0 when all are valid, 78 when not.
``troupe start [FILES…]``  run the daemon with these characters (default: ``characters/``).
``troupe chat FILE``       talk to one character in the terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from typing import TextIO

from .character import LoadResult, load_characters, resolve_character_paths
from .errors import EXIT_CONFIG, TroupeError
from .settings import DaemonSettings, load_environ

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="troupe", description="Run a troupe of AI characters on Discord and Telegram.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = sub.add_parser("check", help="validate character files")
    check.add_argument("characters", nargs="*", default=["characters"], metavar="FILE",
                       help="character files, folders of them, or names (default: characters/)")

    start = sub.add_parser("start", help="run the daemon")
    start.add_argument("characters", nargs="*", default=["characters"], metavar="FILE",
                       help="character files, folders of them, or names (default: characters/)")

    chat = sub.add_parser("chat", help="talk to one character in the terminal")
    chat.add_argument("character", metavar="FILE", help="a character file or name")
    chat.add_argument("--as", dest="user", default="you", help="your name in the conversation (default: you)")
    return parser


def _report(results: Sequence[LoadResult], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    for result in results:
        if result.ok:
            assert result.character is not None
            runs_on = ", ".join(result.platforms) or "no platform"
            print(f"{result.source}: OK  {result.character.name} ({result.character.agent_id}; {runs_on})", file=out)
        else:
            count = len(result.problems)
            print(f"{result.source}: {count} problem{'s' if count != 1 else ''}", file=out)
            for problem in result.problems:
                print(f"  {problem}", file=out)
        for warning in result.warnings:
            print(f"  warning: {warning}", file=out)


def _configure_logging(level: str) -> None:
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)-7s %(name)s: %(message)s", force=True)
    # HTTP client libraries log every request at INFO; that is noise in a daemon's journal.
    for noisy in ("httpx", "httpx2", "httpcore", "httpcore2", "openai"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))


def _check(args: argparse.Namespace) -> int:
    paths = resolve_character_paths(args.characters)
    if not paths:
        print("troupe check: no character files found; give .json files or a folder of them", file=sys.stderr)
        return EXIT_CONFIG
    results = load_characters(paths, environ=load_environ())
    _report(results)
    return 0 if all(r.ok for r in results) else EXIT_CONFIG


def _start(args: argparse.Namespace) -> int:
    from .daemon import Daemon

    settings = DaemonSettings()
    _configure_logging(settings.log_level.upper())
    environ = load_environ()
    paths = resolve_character_paths(args.characters)
    if not paths:
        print("troupe start: no character files found; give .json files or a folder of them", file=sys.stderr)
        return EXIT_CONFIG
    results = load_characters(paths, environ=environ)
    bad = [r for r in results if not r.ok]
    if bad:
        _report(bad, out=sys.stderr)
    good = [r for r in results if r.ok]
    if not good:
        print("troupe start: no valid character to run; fix the problems above (troupe check)", file=sys.stderr)
        return EXIT_CONFIG
    return asyncio.run(Daemon(settings, good, environ).run())


def _chat(args: argparse.Namespace) -> int:
    from .chat import chat

    settings = DaemonSettings()
    # The terminal is for the conversation: only warnings unless asked for more.
    _configure_logging(settings.log_level.upper() if settings.log_level.upper() != "INFO" else "WARNING")
    environ = load_environ()
    results = load_characters(resolve_character_paths([args.character]), environ=environ)
    bad = [r for r in results if not r.ok]
    if bad or not results:
        _report(bad, out=sys.stderr)
        return EXIT_CONFIG
    return asyncio.run(chat(settings, results[0], environ, user=args.user))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``troupe`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "chat":
            return _chat(args)
        return _start(args)
    except TroupeError as exc:
        print(f"troupe: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
