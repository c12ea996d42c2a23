"""End to end: a link typed in the terminal is read, and its gist reaches the model's prompt."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.chat import chat
from platforms.console import ConsoleAdapter  # noqa: F401  (the adapter chat() drives)

from .fakes.openai_server import FakeOpenAIServer
from .fakes.web_site import FakeWebSite, page
from .test_e2e_console import lines, reply

REPO = Path(__file__).resolve().parents[1]
PAGE = (
    "<html><head><title>Moon phases</title></head><body><p>A waxing gibbous rises in the afternoon.</p></body></html>"
)


async def run(tmp_path: Path, url: str, **extra: str) -> list[str]:
    """Say the link to Iris in the terminal; the prompts of the large model."""
    shutil.copy(REPO / "characters" / "iris.json", tmp_path / "iris.json")
    async with FakeOpenAIServer() as server:
        environ = {"OPENAI_API_KEY": "sk-e2e-key-1234", "OPENAI_BASE_URL": server.url, **extra}
        iris = load_character(tmp_path / "iris.json", environ=environ)
        server.script_chat(lambda body: reply("Lovely."))
        settings = DaemonSettings(db_path=tmp_path / "troupe.db")
        code = await chat(settings, iris, environ, user="sam", output=io.StringIO(), read_line=lines(f"look {url}"))
        assert code == 0
        return [str(r.json["messages"]) for r in server.requests_for("chat") if r.json["model"] == "gpt-4o"]


async def test_a_linked_page_reaches_the_prompt_when_the_daemon_allows_private_addresses(tmp_path: Path) -> None:
    async with FakeWebSite({"/moon": page(PAGE)}) as site:
        prompts = await run(tmp_path, site.url("/moon"), TROUPE_FETCH_ALLOW_PRIVATE="true")
    assert any("A waxing gibbous rises in the afternoon." in p and "Moon phases" in p for p in prompts)


async def test_without_the_setting_the_prompt_says_the_link_was_not_read(tmp_path: Path) -> None:
    async with FakeWebSite({"/moon": page(PAGE)}) as site:
        prompts = await run(tmp_path, site.url("/moon"))
    assert site.paths == []
    assert any("link not read: loopback address" in p for p in prompts)
    assert not any("waxing gibbous" in p for p in prompts)
