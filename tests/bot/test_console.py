"""The console's server over real loopback HTTP: login, the session cookie, CSRF, Host and Origin,
the status page, the token file, the audit log, and no secret in any page or log line."""

from __future__ import annotations

import io
import json
import logging
import re
import socket
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.config.settings import DaemonSettings
from bot.daemon.console import AUDIT_FILE, TOKEN_FILE, ConsoleServer
from bot.daemon.console._sessions import Sessions
from bot.daemon.console._token import ConsoleToken
from bot.kernel.errors import ConfigError

from .daemon_views import STATUS, FakeDaemon

__all__ = ["STATUS", "FakeDaemon"]  # shared with the tests of the console's pages

TOKEN = "console-token-for-tests-0123456789"
HEALTH_TOKEN = "health-token-never-shown-0123456789"


def settings(tmp_path: Path, **values: Any) -> DaemonSettings:
    return DaemonSettings(
        _env_file=None, data_dir=tmp_path / "data", console_port=0, health_token=HEALTH_TOKEN, **values
    )


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[ConsoleServer]:
    server = ConsoleServer(FakeDaemon(), settings(tmp_path, console_token=TOKEN))
    await server.start()
    assert server.console is not None
    server.console.failed_login_delay_s = 0.0  # the delay is the server's; the test waits for the answer
    yield server
    await server.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # unsafe=True: the jar keeps cookies of an IP address (127.0.0.1), as a browser does.
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        yield session


async def log_in(http: aiohttp.ClientSession, console: ConsoleServer) -> str:
    """Log in with the form; the page's CSRF token."""
    async with http.post(f"{console.url}login", data={"token": TOKEN}) as response:
        assert response.status == 200 and response.url.path == "/", await response.text()
        page = await response.text()
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None, page
    return found.group(1)


def audit(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "data" / AUDIT_FILE).read_text().splitlines()]


async def test_without_a_session_a_page_goes_to_login_and_htmx_gets_401(
    console: ConsoleServer, http: aiohttp.ClientSession
) -> None:
    async with http.get(console.url, allow_redirects=False) as response:
        assert response.status == 303 and response.headers["Location"] == "/login"
    async with http.get(console.url) as response:
        assert response.url.path == "/login" and "Log in" in await response.text()
    async with http.get(f"{console.url}parts/status", headers={"HX-Request": "true"}) as response:
        assert response.status == 401
    async with http.get(f"{console.url}parts/status", headers={"Accept": "application/json"}) as response:
        assert response.status == 401 and "login" in (await response.json())["error"]
    async with http.get(f"{console.url}static/htmx.min.js") as response:
        assert response.status == 200 and "htmx" in await response.text()


async def test_a_wrong_token_is_refused_with_a_message_logged_without_the_token(
    console: ConsoleServer, http: aiohttp.ClientSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "bot.daemon.console")
    wrong = "not-the-token-but-a-guess-0123456789"
    async with http.post(f"{console.url}login", data={"token": wrong}) as response:
        assert response.status == 401
        page = await response.text()
    assert "That token is not the console&#39;s" in page and "TROUPE_CONSOLE_TOKEN" in page
    assert wrong not in page and TOKEN not in page
    assert "set-cookie" not in response.headers
    async with http.get(console.url, allow_redirects=False) as response:
        assert response.status == 303  # still not logged in
    assert any("wrong login token from 127.0.0.1" in r.getMessage() for r in caplog.records)
    assert all(wrong not in r.getMessage() for r in caplog.records)
    assert [(e["what"], e["remote"]) for e in audit(tmp_path)] == [("failed login", "127.0.0.1")]


async def test_login_sets_a_strict_http_only_cookie_secure_behind_https(
    console: ConsoleServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    async with http.post(f"{console.url}login", data={"token": TOKEN}, allow_redirects=False) as response:
        assert response.status == 303 and response.headers["Location"] == "/"
        cookie = response.headers["Set-Cookie"]
    assert re.match(r"troupe_console=[\w-]{40,};", cookie), cookie
    flags = {part.strip().split("=")[0].lower(): part.strip() for part in cookie.split(";")[1:]}
    assert flags["httponly"] and flags["samesite"] == "SameSite=Strict" and flags["path"] == "Path=/"
    assert "secure" not in flags  # plain HTTP on loopback
    async with http.get(console.url) as response:
        assert response.status == 200 and "Ada" in await response.text()

    # Behind an HTTPS reverse proxy (docs/console.md): the cookie is Secure.
    async with (
        aiohttp.ClientSession() as other,
        other.post(
            f"{console.url}login",
            data={"token": TOKEN},
            headers={"X-Forwarded-Proto": "https"},
            allow_redirects=False,
        ) as response,
    ):
        assert "Secure" in response.headers["Set-Cookie"].split("; ")
    entries = audit(tmp_path)
    assert [e["what"] for e in entries] == ["login", "login"]
    assert all(len(e["session"]) == 8 and e["when"].endswith("+00:00") for e in entries)


async def test_the_link_with_the_token_logs_in_and_drops_the_token_from_the_address(
    console: ConsoleServer, http: aiohttp.ClientSession
) -> None:
    async with http.get(console.login_link()) as response:
        assert response.status == 200 and response.url.path == "/" and not response.url.query
        assert "Brann" in await response.text()


async def test_the_status_page_shows_each_character_its_platforms_and_the_store(
    console: ConsoleServer, http: aiohttp.ClientSession
) -> None:
    await log_in(http, console)
    async with http.get(console.url) as response:
        page = await response.text()
    assert 'hx-get="/parts/status"' in page and "/static/htmx.min.js" in page
    async with http.get(f"{console.url}parts/status", headers={"HX-Request": "true"}) as response:
        part = await response.text()
    assert "<html" not in part  # the fragment htmx swaps in
    for text in (page, part):
        ada = re.search(r'data-agent="Ada".*?</tr>', text, re.S)
        brann = re.search(r'data-agent="Brann".*?</tr>', text, re.S)
        assert ada is not None and brann is not None
        assert re.search(r"discord:\s*<span[^>]*>connected", ada.group(0))
        assert re.search(r"telegram:\s*<span[^>]*>retrying", ada.group(0))
        assert "502 Bad Gateway; next try in 8 s" in ada.group(0)
        assert re.search(r"telegram:\s*<span[^>]*>connected", brann.group(0))
        assert re.search(r"Store:\s*<span[^>]*>ok", text) and "pid 4242" in text


async def test_the_status_page_shows_a_characters_tools_and_their_servers_only_when_it_has_any(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    daemon = FakeDaemon()
    ada = {
        **STATUS["agents"][0],
        "tools": {
            "names": ["weather__forecast", "files__read"],
            "servers": {
                "weather": {"up": True, "detail": ""},
                "files": {"up": False, "detail": "connection refused"},
            },
        },
    }
    daemon.answer = {**STATUS, "agents": [ada, STATUS["agents"][1]]}
    server = ConsoleServer(daemon, settings(tmp_path, console_token=TOKEN))
    await server.start()
    try:
        await log_in(http, server)
        async with http.get(f"{server.url}parts/status", headers={"HX-Request": "true"}) as response:
            part = await response.text()
    finally:
        await server.close()
    ada_row = re.search(r'data-agent="Ada".*?</tr>', part, re.S)
    brann_row = re.search(r'data-agent="Brann".*?</tr>', part, re.S)
    assert ada_row is not None and brann_row is not None
    assert re.search(r"<summary>2 tools</summary>", ada_row.group(0))
    assert "weather__forecast, files__read" in ada_row.group(0)
    assert re.search(r"weather:\s*<span[^>]*>up", ada_row.group(0))
    assert re.search(r"files:\s*<span[^>]*>down</span>\s*<span class=\"note\">connection refused", ada_row.group(0))
    assert "tool" not in brann_row.group(0)  # no tools: no line for them


async def test_a_post_without_or_with_a_wrong_csrf_token_is_refused(
    console: ConsoleServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    csrf = await log_in(http, console)
    for data, headers in (({}, {}), ({"csrf": "forged"}, {}), ({}, {"X-CSRF-Token": "forged"})):
        async with http.post(f"{console.url}logout", data=data, headers=headers, allow_redirects=False) as response:
            assert response.status == 403
            assert "stale or forged" in await response.text() and "Reload" in await response.text()
    async with http.get(console.url, allow_redirects=False) as response:
        assert response.status == 200  # still logged in
    # The right token, as htmx sends it: the session ends.
    async with http.post(f"{console.url}logout", headers={"X-CSRF-Token": csrf}, allow_redirects=False) as response:
        assert response.status == 303 and response.headers["Location"] == "/login"
    async with http.get(console.url, allow_redirects=False) as response:
        assert response.status == 303
    assert [e["what"] for e in audit(tmp_path)] == ["login", "logout"]


async def test_a_session_cookie_alone_cannot_post_another_sessions_csrf(
    console: ConsoleServer, http: aiohttp.ClientSession
) -> None:
    first = await log_in(http, console)
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as other:
        second = await log_in(other, console)
        assert first != second
        async with other.post(f"{console.url}logout", data={"csrf": first}) as response:
            assert response.status == 403


async def test_a_foreign_host_or_origin_is_refused(console: ConsoleServer, http: aiohttp.ClientSession) -> None:
    async with http.get(console.url, headers={"Host": "evil.example"}) as response:
        assert response.status == 403
    async with http.post(
        f"{console.url}login", data={"token": TOKEN}, headers={"Origin": "http://evil.example"}
    ) as response:
        assert response.status == 403
    async with http.get(console.url, headers={"Sec-Fetch-Site": "cross-site"}) as response:
        assert response.status == 403
    async with http.get(console.url, allow_redirects=False) as response:
        assert response.status == 303  # the refused login set no session


async def test_no_secret_in_any_page(console: ConsoleServer, http: aiohttp.ClientSession) -> None:
    pages = []
    async with http.post(f"{console.url}login", data={"token": "wrong-token-0123456789"}) as response:
        pages.append(await response.text())
    csrf = await log_in(http, console)
    for path in ("", "parts/status", "login"):
        async with http.get(f"{console.url}{path}") as response:
            pages.append(await response.text())
    async with http.post(f"{console.url}logout", data={"csrf": "forged"}) as response:
        pages.append(await response.text())
    async with http.post(f"{console.url}logout", data={"csrf": csrf}) as response:
        pages.append(await response.text())
    assert len(pages) == 6
    for page in pages:
        assert TOKEN not in page and HEALTH_TOKEN not in page


async def test_the_token_file_is_made_0600_once_and_the_log_names_it_not_the_token(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "bot.daemon.console")
    first = ConsoleServer(FakeDaemon(), settings(tmp_path))
    await first.start()
    await first.close()
    path = tmp_path / "data" / TOKEN_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    token = path.read_text().strip()
    assert len(token) >= 43 and first.token == token
    started = [r.getMessage() for r in caplog.records if r.getMessage().startswith("console at ")]
    assert started == [f"console at {first.url} (login token in {path})"]
    assert all(token not in r.getMessage() for r in caplog.records)

    path.chmod(0o644)  # loosened by hand: tightened, and the same token kept
    second = ConsoleServer(FakeDaemon(), settings(tmp_path))
    await second.start()
    await second.close()
    assert second.token == token and stat.S_IMODE(path.stat().st_mode) == 0o600

    from_env = ConsoleServer(FakeDaemon(), settings(tmp_path, console_token=TOKEN))
    await from_env.start()
    await from_env.close()
    assert from_env.token == TOKEN
    assert caplog.records[-1].getMessage().endswith("(login token in TROUPE_CONSOLE_TOKEN)")


async def test_the_audit_log_is_private(console: ConsoleServer, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    await log_in(http, console)
    assert stat.S_IMODE((tmp_path / "data" / AUDIT_FILE).stat().st_mode) == 0o600


async def test_a_port_in_use_is_a_config_error_naming_the_port_and_the_setting(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = ConsoleServer(
            FakeDaemon(), settings(tmp_path, console_token=TOKEN).model_copy(update={"console_port": port})
        )
        with pytest.raises(ConfigError) as caught:
            await server.start()
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message and "TROUPE_CONSOLE_PORT" in message and "\n" not in message


def test_console_settings_default_to_loopback_port_8420(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TROUPE_CONSOLE_PORT")
    defaults = DaemonSettings(_env_file=None)
    assert (defaults.console_port, defaults.console_host, defaults.console_token) == (8420, "127.0.0.1", None)
    monkeypatch.setenv("TROUPE_CONSOLE_PORT", "99999")
    with pytest.raises(ConfigError, match="TROUPE_CONSOLE_PORT"):
        DaemonSettings(_env_file=None)


def test_a_session_ends_after_twelve_idle_hours() -> None:
    now = [0.0]
    sessions = Sessions(clock=lambda: now[0])
    session = sessions.open()
    now[0] = 11 * 3600.0
    assert sessions.find(session.id) is session  # used: its idle time starts again
    now[0] += 12 * 3600.0 - 1
    assert sessions.find(session.id) is session
    now[0] += 12 * 3600.0 + 1
    assert sessions.find(session.id) is None and len(sessions) == 0
    assert sessions.find("") is None and sessions.find(None) is None


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("tty", [True, False])
async def test_the_link_with_the_token_is_printed_once_on_a_terminal_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tty: bool
) -> None:
    stderr = Terminal() if tty else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    server = ConsoleServer(FakeDaemon(), settings(tmp_path, console_token=TOKEN))
    await server.start()
    await server.close()
    printed = stderr.getvalue()
    if tty:
        assert printed.count(TOKEN) == 1
        assert f"Open the troupe console: http://127.0.0.1:{server.port}/login?token={TOKEN}" in printed
    else:
        assert printed == ""


def test_a_bind_beyond_loopback_is_logged_as_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # What start() says once bound (binding beyond loopback here would open a port to the network).
    server = ConsoleServer(FakeDaemon(), settings(tmp_path, console_host="0.0.0.0"))
    server.port = 8420
    server._announce(ConsoleToken(TOKEN, "TROUPE_CONSOLE_TOKEN"))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "the console listens on 0.0.0.0, beyond this machine (TROUPE_CONSOLE_HOST): serve it behind "
        "HTTPS (see docs/console.md)"
    ]
    assert not any(TOKEN in r.getMessage() for r in caplog.records)

    caplog.clear()
    local = ConsoleServer(FakeDaemon(), settings(tmp_path, console_host="localhost"))
    local.port = 8420
    local._announce(ConsoleToken(TOKEN, "TROUPE_CONSOLE_TOKEN"))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_an_audit_entry_names_what_was_changed(tmp_path: Path) -> None:
    from bot.daemon.console import Change
    from bot.daemon.console._audit import AuditLog

    log = AuditLog(tmp_path / "data" / AUDIT_FILE)
    await log.record(Change.CHARACTER_SAVED, session="ab12", remote="127.0.0.1", detail="Ada")
    await log.record(Change.LOGOUT, session="ab12", remote="127.0.0.1")
    entries = audit(tmp_path)
    assert [(e["what"], e.get("detail")) for e in entries] == [("character saved", "Ada"), ("logout", None)]
