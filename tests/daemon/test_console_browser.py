"""The console in a real browser: Debian's Chromium, driven by Playwright, against a real
``troupe start`` subprocess (the fake Telegram and OpenAI of tests/daemon/test_service.py).

No browser is downloaded: the test uses the ``chromium`` on PATH (``.ci/run`` installs Debian's
package when there is none) and is skipped, saying so, without one.
"""

from __future__ import annotations

from playwright.async_api import Browser, expect

from .console_browser import browser, no_secret_in, open_console, service
from .test_service import Service

__all__ = ["browser", "service"]  # the fixtures, imported to be used here


async def test_log_in_with_the_link_and_see_the_characters(service: Service, browser: Browser) -> None:
    s = service
    site = await open_console(s, "Ada", "Brann")
    token, token_file, console = site.token, site.token_file, site.url

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
    await no_secret_in(page, site)

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
