"""The console in a real browser: Debian's Chromium, driven by Playwright, against a real
``troupe start`` subprocess (the fake Telegram and OpenAI of tests/daemon/test_service.py).

No browser is downloaded: the test uses the ``chromium`` on PATH (``.ci/run`` installs Debian's
package when there is none) and is skipped, saying so, without one.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright, expect

from .test_service import HEALTH_TOKEN, OPENAI_KEY, TOKENS, Service, _free_port, service

__all__ = ["service"]  # the fixture, imported to be used here

#: Where the screenshots go: the test's own folder, or with TROUPE_TEST_SCREENSHOTS=docs/images
#: the repository's pictures (the README's), refreshed from a run.
SCREENSHOTS_SETTING = "TROUPE_TEST_SCREENSHOTS"
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


async def test_log_in_with_the_link_and_see_the_characters(service: Service, browser: Browser, tmp_path: Path) -> None:
    s = service
    port = _free_port()
    s.env["TROUPE_CONSOLE_PORT"] = str(port)
    for name in ("Ada", "Brann"):
        s.write(name)
    await s.start()
    await s.notify.wait("READY")
    token_file = s.dir / "data" / "console-token"
    token = token_file.read_text().strip()
    console = f"http://127.0.0.1:{port}/"

    page = await browser.new_page(viewport={"width": 1100, "height": 640})
    # Without a login, a page lands on the login form.
    await page.goto(console)
    assert page.url == f"{console}login"
    await expect(page.get_by_role("heading", name="Log in")).to_be_visible()

    # A wrong token: a clear message, still on the form.
    await page.get_by_label("Token").fill("not-the-token-0123456789")
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("alert")).to_contain_text("That token is not the console's")

    # The token: the status page, each character with its platform's true state.
    await page.get_by_label("Token").fill(token)
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("heading", name="Troupe")).to_be_visible()
    assert page.url == console
    for name in ("Ada", "Brann"):
        row = page.locator(f'tr[data-agent="{name}"]')
        await expect(row).to_contain_text("running")
        await expect(row.locator("ul.platforms")).to_contain_text("telegram: connected")
    # htmx refreshes the body in place: wait for one swap (an event, not a time).
    await page.evaluate(
        "() => new Promise(done => document.body.addEventListener('htmx:afterSwap', done, {once: true}))"
    )
    await expect(page.locator('tr[data-agent="Ada"]')).to_contain_text("telegram: connected")
    screenshots = Path(os.environ.get(SCREENSHOTS_SETTING) or tmp_path)
    screenshots.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(screenshots / "console-status.png"), full_page=True)
    assert (screenshots / "console-status.png").stat().st_size > 0

    body = await page.content()
    for secret in [*TOKENS.values(), OPENAI_KEY, HEALTH_TOKEN, token]:
        assert secret not in body, f"a secret reached the page: {secret[:6]}…"

    # The link the daemon prints logs a new browser context in at once.
    other = await browser.new_context()
    linked = await other.new_page()
    await linked.goto(f"{console}login?token={token}")
    await expect(linked.get_by_role("heading", name="Troupe")).to_be_visible()
    assert linked.url == console  # the token left the address bar
    await other.close()

    # Log out: back to the form, and the status page needs a login again.
    await page.get_by_role("button", name="Log out").click()
    await expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    await page.goto(console)
    assert page.url == f"{console}login"

    logs = s.logs()
    assert f"console at {console} (login token in {token_file})" in logs
    assert token not in logs
