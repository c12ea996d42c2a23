"""Where the tests' PostgreSQL (with pgvector) comes from, in this order:

1. ``TROUPE_TEST_DATABASE_URL``: a server someone runs (its admin URL); used as it is.
2. pgserver's own PostgreSQL 16 (the test extra installs it where it publishes wheels), started
   in a temporary directory.
3. A PostgreSQL found on the machine (``initdb`` and ``pg_ctl`` on PATH or under Debian's
   ``/usr/lib/postgresql/*/bin``), started in a temporary directory; it needs pgvector (Debian:
   ``postgresql-NN-pgvector``).

Otherwise the PostgreSQL tests are skipped with a reason that says what to install or set.

Each server listens on a Unix socket in its own directory, never on a TCP port, so any number of
test processes (pytest-xdist workers, other checkouts) can each start one. Tests take a database
of their own from the ``postgres_url`` fixture (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

__all__ = ["Unavailable", "postgres_server"]

_HINT = (
    "install the test extra on Python 3.11 or 3.12 (pgserver), set TROUPE_TEST_DATABASE_URL to a PostgreSQL "
    "with pgvector, or install PostgreSQL with pgvector (Debian: apt-get install postgresql postgresql-15-pgvector)"
)


class Unavailable(Exception):
    """No PostgreSQL with pgvector can be had here; the message says why and what to do."""


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """The admin URL of a PostgreSQL with pgvector, for as long as the block runs."""
    given = os.environ.get("TROUPE_TEST_DATABASE_URL")
    if given:
        yield given
        return
    # Not under pytest's temporary directory: another pytest run on the machine prunes old ones,
    # and PostgreSQL stops when its data directory goes away under it.
    data = Path(tempfile.mkdtemp(prefix="troupe-postgres-"))
    try:
        try:
            import pgserver
        except ImportError:
            with _machine_postgres(data) as url:
                yield url
            return
        # Its clean-up at exit logs through handlers pytest has closed by then.
        logging.getLogger("pgserver").setLevel(logging.WARNING)
        server = pgserver.get_server(data, cleanup_mode="stop")
        try:
            yield server.get_uri()
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(data, ignore_errors=True)


def _binaries() -> Path | None:
    """The folder of the newest PostgreSQL server programs on this machine."""
    on_path = shutil.which("pg_ctl")
    if on_path:
        return Path(os.path.realpath(on_path)).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


@contextlib.contextmanager
def _machine_postgres(data: Path) -> Iterator[str]:
    binaries = _binaries()
    if binaries is None:
        raise Unavailable(
            f"no PostgreSQL for the tests: pgserver is not installed and none is on this machine; {_HINT}"
        )
    # PostgreSQL refuses to run as root: then it runs as the postgres user Debian's package makes.
    as_user: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            raise Unavailable(f"running as root and runuser is missing, so {binaries} cannot start; {_HINT}")
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(data, "postgres")
    cluster, socket_dir = data / "cluster", data
    log = data / "server.log"

    def run(*args: str) -> None:
        done = subprocess.run([*as_user, *args], capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise Unavailable(f"{args[0]} failed ({done.stderr.strip() or done.stdout.strip()}); {_HINT}")

    run(str(binaries / "initdb"), "-D", str(cluster), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
    options = f"-k {socket_dir} -c listen_addresses='' -c fsync=off"
    run(str(binaries / "pg_ctl"), "-D", str(cluster), "-l", str(log), "-o", options, "-w", "start")
    try:
        url = f"postgresql://postgres@/postgres?host={quote(str(socket_dir))}"
        _require_pgvector(url, binaries)
        yield url
    finally:
        run(str(binaries / "pg_ctl"), "-D", str(cluster), "-m", "immediate", "-w", "stop")


def _require_pgvector(url: str, binaries: Path) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        major = conn.execute("SELECT current_setting('server_version_num')::int / 10000").fetchone()
    if row is None:
        version = major[0] if major else "NN"
        raise Unavailable(
            f"the PostgreSQL in {binaries} has no pgvector: install it (Debian: apt-get install "
            f"postgresql-{version}-pgvector), or set TROUPE_TEST_DATABASE_URL, or use Python 3.11/3.12 (pgserver)"
        )
