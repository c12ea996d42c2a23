"""``troupe store``: move a troupe's storage.

::

    troupe store copy [--from FILE] [--to URL]

``copy`` moves a SQLite troupe (``--from``, default the daemon's file: ``TROUPE_DB_PATH``, else
``TROUPE_DATA_DIR/troupe.db``) into an empty PostgreSQL database (``--to``, default
``TROUPE_DATABASE_URL``), every row in one transaction, then counts each table on both sides.
Stop the daemon first: what it writes meanwhile would not be copied. The SQLite file is left as it
was. Exit status: 0 copied and counted alike; 1 the counts differ; 78 nothing copied (no source
file, no target, a target that already holds a troupe, a database that cannot be opened).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from bot.config.settings import DaemonSettings
from bot.kernel.errors import EXIT_CONFIG, StoreError
from bot.store import copy_store, is_postgres_url, redacted_url

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    store = sub.add_parser("store", help="move the troupe's storage (SQLite to PostgreSQL)")
    actions = store.add_subparsers(dest="store_command", required=True, metavar="ACTION")
    copy = actions.add_parser("copy", help="copy a SQLite troupe into an empty PostgreSQL database")
    copy.add_argument("--from", dest="source", metavar="FILE", help="the SQLite file (default: the daemon's)")
    copy.add_argument("--to", dest="target", metavar="URL", help="postgresql://… (default: TROUPE_DATABASE_URL)")


def run(args: argparse.Namespace) -> int:
    settings = DaemonSettings()
    source = Path(args.source) if args.source else settings.database
    target = args.target or (settings.database_url.get_secret_value() if settings.database_url else None)
    if target is None or not is_postgres_url(target):
        print("troupe store copy: give --to postgresql://… or set TROUPE_DATABASE_URL", file=sys.stderr)
        return EXIT_CONFIG
    if not source.is_file():
        print(f"troupe store copy: there is no SQLite database at {source}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        return asyncio.run(_copy(source, target))
    except StoreError as exc:
        print(f"troupe store copy: nothing was copied: {exc}", file=sys.stderr)
        return EXIT_CONFIG


async def _copy(source: Path, target: str) -> int:
    print(f"copying {source} into {redacted_url(target)}")
    report = await copy_store(source, target)
    width = max(len(t) for t in report.source)
    for table, count in report.source.items():
        found = report.target.get(table)
        note = "" if found == count else f"  (PostgreSQL has {found})"
        print(f"  {table:<{width}}  {count:>9,}{note}")
    if not report.matches:
        print("troupe store copy: the counts differ; see above", file=sys.stderr)
        return 1
    print(f"copied {sum(report.source.values()):,} rows; every table counted alike")
    return 0
