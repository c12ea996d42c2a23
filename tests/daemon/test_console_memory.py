"""The console's Memory and Knowledge pages in a real browser (Debian's Chromium under
Playwright) against a real ``troupe start`` subprocess, with the fake Telegram and OpenAI of
tests/daemon/test_service.py: a person remembered after a conversation, then forgotten after
the confirmation; a knowledge file uploaded in the browser, then used in the next answer."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, FilePayload, Locator, Page, expect

from .console_browser import browser, log_in, no_secret_in, open_console, screenshot, service
from .test_service import Service, answer

__all__ = ["browser", "service"]  # the fixtures, imported to be used here

FACT = "Sam keeps bees on the roof"
FERRY = "The ferry to Tarrow leaves at 7:40 from pier nine, every day but Sunday."


def remembers_bees(body: dict[str, Any]) -> str:
    """As tests/daemon/test_service.py answers, but reflection learns one fact about the sender."""
    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    if "Look back over the conversation as" in prompt:
        return (
            "<response><thought>fine</thought><facts><fact><claim>" + FACT + "</claim><type>fact</type>"
            "<about></about><in_bio>false</in_bio><already_known>false</already_known></fact></facts>"
            "<relationships></relationships></response>"
        )
    return answer(body)


def prompts(s: Service) -> list[str]:
    return ["\n".join(str(m.get("content")) for m in r.json["messages"]) for r in s.openai.requests_for("chat")]


async def reload_until(page: Page, where: Locator, text: str, timeout: float = 30.0) -> None:
    """Reload ``page`` until ``where`` shows ``text``: what the daemon stores after answering
    (reflection's facts) arrives a moment after the reply; each reload is one look at it."""
    async with asyncio.timeout(timeout):
        while text not in (await where.text_content() or ""):
            await page.reload()


def audit(s: Service) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (s.dir / "data" / "console-audit.log").read_text().splitlines()]


async def test_a_person_remembered_after_a_conversation_is_shown_then_forgotten(
    service: Service, browser: Browser, tmp_path: Path
) -> None:
    s = service
    s.openai.script_chat(remembers_bees)
    s.write("Ada", CONVERSATION_LENGTH="4")  # reflection after the first exchange
    site = await open_console(s)
    sam = s.telegram.add_user("Sam", username="sam")
    chat = s.telegram.private(sam, s.bots["Ada"])
    await s.telegram.user_says(sam, chat, "hello Ada, I keep bees on my roof")
    await s.telegram.wait_for_sent(s.bots["Ada"], 1, timeout=60)

    page = await browser.new_page(viewport={"width": 1100, "height": 760})
    await log_in(page, site)
    await page.get_by_role("link", name="Memory").click()  # one character: its page at once
    await expect(page.get_by_role("heading", name="Memory of Ada")).to_be_visible()
    await page.locator('tr[data-person="Sam"]').get_by_role("link", name="Sam").click()
    await expect(page.get_by_role("heading", name="What Ada remembers of Sam")).to_be_visible()
    await expect(page.locator("section.messages")).to_contain_text("hello Ada, I keep bees on my roof")
    await reload_until(page, page.locator("section.facts"), FACT)
    await screenshot(page, "console-memory.png", tmp_path)
    await no_secret_in(page, site)

    # Forget: first a page saying exactly what goes, counted; then it is gone.
    await page.get_by_role("link", name="Forget this person…").click()
    await expect(page.get_by_role("heading", name=re.compile(r"^Forget Sam.*\?$"))).to_be_visible()
    counts = page.locator("ul.counts")
    await expect(counts).to_contain_text(re.compile(r"memories: facts 1, messages \d+"))
    await expect(counts).to_contain_text("entities 1")
    await page.get_by_role("button", name=re.compile("^Forget Sam")).click()
    await expect(page.get_by_role("heading", name=re.compile("^Ada forgot Sam"))).to_be_visible()
    await expect(page.get_by_role("status")).to_contain_text("memories: facts 1")
    await page.get_by_role("link", name="Back to the people Ada knows").click()
    await expect(page.get_by_role("heading", name="People Ada knows")).to_be_visible()
    await expect(page.locator('tr[data-person="Sam"]')).to_have_count(0)

    # Gone from the store too, as `troupe memory` reads it.
    code, _, err = await s.cli("memory", "list", "Ada", "--entity", "Sam")
    assert code == 1 and "no one called 'Sam'" in err
    code, out, _ = await s.cli("memory", "search", "Ada", "bees")
    assert code == 0 and out.strip() == "no memories match"
    (entry,) = [e for e in audit(s) if e["what"] == "memory forgotten"]
    assert re.fullmatch(r"Ada: Sam.* \([0-9a-f-]{36}\)", entry["detail"]) and "bees" not in json.dumps(audit(s))


async def test_a_knowledge_file_uploaded_in_the_browser_is_used_in_the_next_answer(
    service: Service, browser: Browser, tmp_path: Path
) -> None:
    s = service
    folder = s.dir / "characters" / "ada-knowledge"
    folder.mkdir()
    s.write("Ada", KNOWLEDGE_PATH="ada-knowledge")
    site = await open_console(s)

    page = await browser.new_page(viewport={"width": 1100, "height": 760})
    await log_in(page, site)
    await page.get_by_role("link", name="Knowledge").click()
    await expect(page.get_by_role("heading", name="Knowledge of Ada")).to_be_visible()
    await expect(page.locator("section.sources")).to_contain_text("Ada has no knowledge yet.")

    # A file of a kind knowledge cannot read: a clear message, nothing saved.
    await page.get_by_label("File").set_input_files(
        files=[FilePayload(name="minutes.docx", mimeType="application/octet-stream", buffer=b"PK\x03\x04")]
    )
    await page.get_by_role("button", name="Upload").click()
    await expect(page.get_by_role("alert")).to_contain_text("minutes.docx cannot be used as knowledge")

    await page.get_by_label("File").set_input_files(
        files=[FilePayload(name="ferry.md", mimeType="text/markdown", buffer=FERRY.encode())]
    )
    await page.get_by_role("button", name="Upload").click()
    await expect(page.get_by_role("status")).to_contain_text("ferry.md saved in")
    await expect(page.locator('tr[data-source="ada-knowledge/ferry.md"]')).to_contain_text("1")
    assert (folder / "ferry.md").read_text() == FERRY and sorted(p.name for p in folder.iterdir()) == ["ferry.md"]

    # What would a question find?
    await page.get_by_label("A question").fill("When does the ferry to Tarrow leave?")
    await page.get_by_role("button", name="Search").click()
    await expect(page.locator("table.found")).to_contain_text("pier nine")
    await screenshot(page, "console-knowledge.png", tmp_path)
    await no_secret_in(page, site)

    # The next question on Telegram: the uploaded text is in the prompt the model is given.
    sam = s.telegram.add_user("Sam", username="sam")
    chat = s.telegram.private(sam, s.bots["Ada"])
    await s.telegram.user_says(sam, chat, "When does the ferry to Tarrow leave?")
    await s.telegram.wait_for_sent(s.bots["Ada"], 1, timeout=60)
    assert any(FERRY in p and "When does the ferry to Tarrow leave?" in p for p in prompts(s))
    entries = [(e["what"], e.get("detail")) for e in audit(s)]
    assert ("knowledge uploaded", "Ada: ferry.md") in entries
