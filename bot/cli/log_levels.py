"""``--log-level``, as the commands that run characters (``troupe start``, ``chat``, ``mcp``) take it."""

from __future__ import annotations

import argparse

from bot.kernel import logs
from bot.kernel.errors import TroupeError

__all__ = ["add_log_level_option"]


def _log_level(spec: str) -> str:
    try:
        logs.parse_level(spec)
    except TroupeError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return spec


def add_log_level_option(parser: argparse.ArgumentParser, default: str) -> None:
    """``--log-level LEVEL`` (checked as the command line is read); ``default`` says what applies
    without it."""
    parser.add_argument(
        "--log-level",
        type=_log_level,
        metavar="LEVEL",
        help=f"DEBUG, INFO, WARNING, ERROR or CRITICAL for troupe's own lines (default: {default}); "
        "other libraries log from INFO up unless named, as in DEBUG,discord=DEBUG",
    )
