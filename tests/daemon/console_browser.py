"""What the console's browser tests share: Debian's Chromium under Playwright, a daemon with its
console on, a logged-in page, and screenshots.

No browser is downloaded: the tests use the ``chromium`` on PATH (``.ci/run`` installs Debian's
package when there is none) and are skipped, saying so, without one. A test module imports the
fixtures it uses (``browser``, ``service``) and lists them in its ``__all__``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from .test_service import HEALTH_TOKEN, OPENAI_KEY, TOKENS, Service, _free_port, service

__all__ = [
    "browser",
    "chat_with",
    "CHROMIUM_ARGS",
    "ConsoleSite",
    "log_in",
    "no_secret_in",
    "open_console",
    "screenshot",
    "SCREENSHOTS_SETTING",
    "service",
]

#: Where the screenshots go: the test's own folder, or with TROUPE_TEST_SCREENSHOTS=docs/images
#: the repository's pictures (the README's and docs/console.md's), refreshed from a run.
SCREENSHOTS_SETTING = "TROUPE_TEST_SCREENSHOTS"
# Read as the tests are collected, in the directory pytest started in: every test then runs with
# the TROUPE_ settings stripped, in a directory of its own (tests/conftest.py).
_SCREENSHOTS = Path(os.environ[SCREENSHOTS_SETTING]).resolve() if os.environ.get(SCREENSHOTS_SETTING) else None
#: Without these, Chromium's background connections (updates, sync, QUIC probes) fail loudly on a
#: machine with no network, and it needs a sandbox it cannot have as root in a container.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    executable = shutil.which("chromium")
    if executable is None:
        pytest.skip("no chromium on PATH: apt-get install chromium (Debian's; never `playwright install`)")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        await browser.close()


@dataclass(frozen=True)
class ConsoleSite:
    """A running daemon's console: its address and its login token."""

    url: str
    token: str
    token_file: Path


async def open_console(s: Service, *characters: str, **start_env: str) -> ConsoleSite:
    """Write ``characters`` (names from ``TOKENS``), start the daemon with its console on a free
    port, and wait until it is ready."""
    port = _free_port()
    s.env["TROUPE_CONSOLE_PORT"] = str(port)
    s.env.update(start_env)
    for name in characters:
        s.write(name)
    await s.start()
    await s.notify.wait("READY")
    token_file = s.dir / "data" / "console-token"
    return ConsoleSite(f"http://127.0.0.1:{port}/", token_file.read_text().strip(), token_file)


async def log_in(page: Page, site: ConsoleSite) -> None:
    """Log ``page`` in with the login link (the token leaves the address bar at once)."""
    await page.goto(f"{site.url}login?token={site.token}")
    await expect(page.get_by_role("heading", name="Troupe")).to_be_visible()


async def screenshot(page: Page, name: str, tmp_path: Path) -> Path:
    """Save a full-page screenshot as ``name`` (``console-chat.png``), where SCREENSHOTS_SETTING says."""
    folder = _SCREENSHOTS or tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    await page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0
    return path


async def no_secret_in(page: Page, site: ConsoleSite) -> None:
    """Fail if any secret of the test's troupe is in the page."""
    body = await page.content()
    for secret in [*TOKENS.values(), OPENAI_KEY, HEALTH_TOKEN, site.token]:
        assert secret not in body, f"a secret reached the page: {secret[:6]}…"


async def chat_with(page: Page, name: str, person: str) -> None:
    """From any console page: Chat, give a name, land in the conversation with ``name``."""
    await page.get_by_role("link", name="Chat").click()
    await page.get_by_label("Your name").fill(person)
    await page.get_by_role("button", name="Start talking").click()
    await expect(page.get_by_role("heading", name=f"Chat with {name}")).to_be_visible()
    await expect(page.locator("#conversation[data-live=yes]")).to_be_attached()  # the event stream is open
