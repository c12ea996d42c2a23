"""The PostgreSQL of the benchmarks that need one: pgserver's, or ``TROUPE_TEST_DATABASE_URL``'s
server, as the tests use (tests/conftest.py), with a new database per run."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
from psycopg import sql


@contextmanager
def postgres_server(data: Path, settings: Mapping[str, str] | None = None) -> Iterator[str]:
    """The admin URL of TROUPE_TEST_DATABASE_URL's server (as it is), or of pgserver's started with
    its data in ``data`` and ``settings`` (``ALTER SYSTEM``, then a restart if they changed
    anything); stopped at the end, its data left there."""
    given = os.environ.get("TROUPE_TEST_DATABASE_URL")
    if given:
        yield given
        return
    import pgserver

    server = pgserver.get_server(data, cleanup_mode="stop")
    try:
        if settings and _configure(server.get_uri(), settings):
            server.cleanup()
            server = pgserver.get_server(data, cleanup_mode="stop")
        yield server.get_uri()
    finally:
        server.cleanup()


def _configure(admin: str, settings: Mapping[str, str]) -> bool:
    """Write ``settings`` for the next start; whether any differs from what the server shows now."""
    changed = False
    with psycopg.connect(admin, autocommit=True) as conn:
        for name, value in settings.items():
            row = conn.execute("SELECT current_setting(%s) AS now", (name,)).fetchone()
            if row is None or row[0] != value:
                conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(value)))
                changed = True
    return changed


def fresh_database(admin: str) -> str:
    """The URL of a new, empty database on ``admin``'s server."""
    name = f"troupe_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return urlsplit(admin)._replace(path=f"/{name}").geturl()


def named_database(admin: str, name: str) -> tuple[str, bool]:
    """The URL of database ``name`` on ``admin``'s server, created when missing; whether it was
    there already (a benchmark's data kept from an earlier run)."""
    with psycopg.connect(admin, autocommit=True) as conn:
        there = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None
        if not there:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return urlsplit(admin)._replace(path=f"/{name}").geturl(), there


def drop_database(admin: str, url: str) -> None:
    """Drop the database of ``url`` (made by :func:`fresh_database`)."""
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {urlsplit(url).path.lstrip('/')} WITH (FORCE)")
