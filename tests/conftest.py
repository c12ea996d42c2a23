"""Shared fixtures: a clean environment and no network for every test."""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_PREFIXES = (
    "TROUPE_",
    "OPENAI_",
    "DISCORD_",
    "TELEGRAM_",
    "ELEVENLABS_",
    "OLLAMA_",
    "OPENROUTER_",
    "CREDENTIALS_DIRECTORY",
)


@pytest.fixture(autouse=True)
def one_discord_server_per_test() -> Iterator[None]:
    """discord.py's REST base is process-wide; each test starts from discord.com's."""
    yield
    from platforms.discord._rest import reset_api_base

    reset_api_base()


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Strip settings a developer's shell might carry, and run where no .env exists."""
    for key in list(os.environ):
        if key.startswith(_PREFIXES):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


def _is_local(address: object) -> bool:
    if not isinstance(address, tuple):
        return True  # AF_UNIX paths
    host = str(address[0])
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail any test that tries to reach anything but this machine."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guard(address: object) -> None:
        if not _is_local(address):
            pytest.fail(f"Network access disallowed in tests: tried to connect to {address!r}")

    def connect(self: socket.socket, address: socket._Address) -> None:
        guard(address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: socket._Address) -> int:
        guard(address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    yield


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A real PostgreSQL with pgvector for the whole session; its admin URL.

    ``TROUPE_TEST_DATABASE_URL`` (read before any test strips the environment) names a server
    to use instead; otherwise pgserver's own PostgreSQL 16 is started here, in a temporary
    directory, and stopped at the end. Each test gets a database of its own (``postgres_url``).
    """
    given = os.environ.get("TROUPE_TEST_DATABASE_URL")
    if given:
        yield given
        return
    import logging

    import pgserver

    # Its clean-up at exit logs through handlers pytest has closed by then.
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    # Not under pytest's temporary directory: another pytest run on the machine prunes old ones,
    # and PostgreSQL stops when its data directory goes away under it.
    data = Path(tempfile.mkdtemp(prefix="troupe-postgres-"))
    server = pgserver.get_server(data, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """The URL of a new, empty database on the session's server, dropped after the test."""
    import uuid
    from urllib.parse import urlsplit

    import psycopg

    name = f"troupe_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield urlsplit(postgres_server)._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
