"""The console's Characters page in a real browser (Debian's Chromium under Playwright) against a
real ``troupe start`` subprocess with the fake Telegram and OpenAI of tests/daemon/test_service.py:
a character edited and saved, and its next reply uses the change while the other character keeps
its connection; a broken edit shown in place; forged forms refused; no secret on the page."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.async_api import Browser, Page, expect

from .console_browser import ConsoleSite, browser, log_in, no_secret_in, open_console, screenshot, service
from .test_service import OPENAI_KEY, TOKENS, Service

__all__ = ["browser", "service"]  # the fixtures, imported to be used here

BIO = "Ada collects antique clocks and winds them every Sunday."
SYSTEM = "You are Ada, a horologist; you answer in the console's edited voice."


async def _open_ada(page: Page, site: ConsoleSite) -> None:
    await log_in(page, site)
    await page.get_by_role("link", name="Characters").click()
    await expect(page.get_by_role("heading", name="Characters")).to_be_visible()
    await page.get_by_role("link", name="Ada", exact=True).click()
    await expect(page.get_by_role("heading", name="Edit ada.json")).to_be_visible()
    await expect(page.get_by_role("link", name="Characters", exact=True).first).to_have_attribute(
        "aria-current", "page"
    )


async def _forged_forms_are_refused(page: Page, site: ConsoleSite, ada_file: Path) -> None:
    """A save without this session's CSRF token, sent from the page or by editing its hidden field."""
    before = ada_file.read_bytes()
    editor_url = page.url
    form = {"text": json.dumps({"name": "Ada", "bio": "forged"}), "version": "whatever"}
    for csrf in ({}, {"csrf": "not-this-sessions-token"}):
        response = await page.request.post(editor_url, form={**form, **csrf})
        assert response.status == 403 and "stale or forged" in await response.text()
    await page.locator('form.character-editor input[name="csrf"]').evaluate("field => field.value = 'forged'")
    await page.get_by_label("The character's JSON").fill(json.dumps({"name": "Ada", "bio": "forged"}))
    await page.get_by_role("button", name="Save and restart this character").click()
    await expect(page.get_by_role("heading", name="Refused")).to_be_visible()
    await expect(page.get_by_role("alert")).to_contain_text("stale or forged")
    assert ada_file.read_bytes() == before
    await page.goto(site.url)


async def test_a_character_edited_in_the_browser_answers_with_the_change_and_alone_restarts(
    service: Service, browser: Browser, tmp_path: Path
) -> None:
    s = service
    site = await open_console(s, "Ada", "Brann")
    ada_file = s.dir / "characters" / "ada.json"
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    await _open_ada(page, site)
    editor = page.get_by_label("The character's JSON")
    shown = await editor.input_value()
    assert TOKENS["Ada"] not in shown and "••• set in the file •••" in shown
    secrets = page.locator("section.secrets")
    await expect(secrets.locator('tr[data-secret="TELEGRAM_BOT_TOKEN"]')).to_contain_text(
        "in the file (settings.secrets)"
    )
    await expect(secrets.locator('tr[data-secret="OPENAI_API_KEY"]')).to_contain_text("the daemon's environment")
    await no_secret_in(page, site)

    # A broken edit: its problem shown at its field and line, the text kept, the file untouched.
    before = ada_file.read_bytes()
    broken = json.dumps({**json.loads(shown), "bio": 42}, indent=2, ensure_ascii=False)  # bio on line 3
    await editor.fill(broken)
    await page.get_by_role("button", name="Save and restart this character").click()
    alert = page.get_by_role("alert")
    await expect(alert).to_contain_text("Not saved: 1 problem.")
    await expect(alert.locator("li")).to_contain_text(
        "$.bio line 3: must be a list of sentences (strings), not a number"
    )
    assert await editor.input_value() == broken
    assert ada_file.read_bytes() == before
    await screenshot(page, "console-characters.png", tmp_path)
    await no_secret_in(page, site)

    # The edit: Ada restarts with it, Brann keeps its connection.
    brann_getme, ada_getme = s.getme_calls("Brann"), s.getme_calls("Ada")
    edited = json.loads(shown)
    edited["bio"] = [BIO]
    edited["system"] = SYSTEM
    await editor.fill(json.dumps(edited, indent=2, ensure_ascii=False))
    await page.get_by_role("button", name="Save and restart this character").click()
    saved = page.get_by_role("status")
    await expect(saved).to_contain_text("Saved Ada.")
    await expect(saved).to_contain_text("Restarted: Ada")
    await expect(saved).to_contain_text("Unchanged: Brann")
    on_disk = json.loads(ada_file.read_text())
    assert on_disk["bio"] == [BIO] and on_disk["settings"]["secrets"]["TELEGRAM_BOT_TOKEN"] == TOKENS["Ada"]
    await s.notify.wait("READY", count=2)
    assert s.getme_calls("Ada") > ada_getme and s.getme_calls("Brann") == brann_getme
    await no_secret_in(page, site)

    # The next reply's prompt has the new bio and system.
    asked = len(s.openai.requests_for("chat"))
    sam = s.telegram.add_user("Sam", username="sam")
    await s.telegram.user_says(sam, s.telegram.private(sam, s.bots["Ada"]), "hello Ada, what do you collect?")
    await s.telegram.wait_for_sent(s.bots["Ada"], 1, timeout=60)
    prompts = [json.dumps(r.json) for r in s.openai.requests_for("chat")[asked:]]
    assert any(BIO in p and SYSTEM in p for p in prompts)
    assert s.getme_calls("Brann") == brann_getme

    await _forged_forms_are_refused(page, site, ada_file)
    logs = s.logs()
    for secret in [*TOKENS.values(), OPENAI_KEY, site.token]:
        assert secret not in logs
    audit = (s.dir / "data" / "console-audit.log").read_text()
    assert audit.count('"what": "character saved", "detail": "Ada"') == 1
    for secret in [*TOKENS.values(), OPENAI_KEY, site.token]:
        assert secret not in audit
