"""Shared fixtures: a clean environment and no network for every test."""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
from collections.abc import Iterator

import pytest

from . import postgres

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
def restore_logging() -> Iterator[None]:
    """Logging as the test found it: a test that configures it as a command does (``logs.configure``
    puts a handler on the stderr of the moment, pytest's capture) would otherwise leave a handler on
    a stream closed after the test, and every later line, of any test or thread, fails to print."""
    root = logging.getLogger()
    handlers, level = set(root.handlers), root.level
    loggers = logging.Logger.manager.loggerDict
    levels = {name: logger.level for name, logger in loggers.items() if isinstance(logger, logging.Logger)}
    yield
    for handler in list(root.handlers):
        if handler not in handlers and not type(handler).__module__.startswith("_pytest"):
            root.removeHandler(handler)
    root.setLevel(level)
    for name, logger in list(loggers.items()):
        if isinstance(logger, logging.Logger):
            logger.setLevel(levels.get(name, logging.NOTSET))


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Strip settings a developer's shell might carry, and run where no .env exists."""
    for key in list(os.environ):
        if key.startswith(_PREFIXES):
            monkeypatch.delenv(key)
    # Daemons started in tests leave the console off (its default port would be contended by
    # tests running in parallel); the console's own tests turn it on, on a free port.
    monkeypatch.setenv("TROUPE_CONSOLE_PORT", "0")
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


# Names that never resolve (RFC 2606, RFC 6761): tests use them for addresses that do not exist.
_RESERVED_TLDS = frozenset({"example", "invalid", "test"})


def _is_local_name(host: object) -> bool:
    if host is None or host in ("localhost", b"localhost", ""):
        return True
    name = host.decode() if isinstance(host, bytes) else str(host)
    try:
        return ipaddress.ip_address(name.split("%")[0]).is_loopback
    except ValueError:
        return name.endswith(".localhost")


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail any test that tries to reach anything but this machine: a connection, or the name
    lookup before it (which an offline machine fails quietly, hiding the attempt)."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo
    looked_up: list[str] = []

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.rstrip(".").rsplit(".", 1)[-1] in _RESERVED_TLDS:  # never exists: no need to ask anyone
            raise socket.gaierror(socket.EAI_NONAME, f"{name} does not exist (a reserved name)")
        if not _is_local_name(host):
            # Often called in an executor thread, where a failure would only look like an
            # offline machine: remembered, and the test failed at its end.
            looked_up.append(str(host))
            raise socket.gaierror(socket.EAI_NONAME, f"tests never touch the network (looked up {host!r})")
        return real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]

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
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield
    if looked_up:
        pytest.fail(f"Network access disallowed in tests: looked up {', '.join(sorted(set(looked_up)))}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A real PostgreSQL with pgvector for the whole session (one per pytest-xdist worker); its
    admin URL. Where it comes from, and why each worker can have its own: tests/postgres.py.

    ``TROUPE_TEST_DATABASE_URL`` is read before any test strips the environment. Without a
    PostgreSQL the tests that need one are skipped, saying what to install, unless
    ``TROUPE_TEST_REQUIRE_POSTGRES=1`` (CI's main run), where they fail.
    """
    try:
        with postgres.postgres_server() as url:
            yield url
    except postgres.Unavailable as exc:
        if os.environ.get("TROUPE_TEST_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"TROUPE_TEST_REQUIRE_POSTGRES=1 but {exc}", pytrace=False)
        pytest.skip(str(exc))


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
