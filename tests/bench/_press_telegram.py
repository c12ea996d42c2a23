"""Time from a button press on Telegram to its acknowledgement, with a slow model.

:func:`press_to_ack` runs the real daemon (one character, its python-telegram-bot Application
polling the fake Bot API, the openai client against the fake OpenAI-compatible server) and
measures, for each press, the seconds from the fake handing the ``callback_query`` update to the
bot's poll to the bot's answerCallbackQuery arriving. Every press also reaches the character as a
message it answers through the model, which takes ``model_latency`` seconds a call: the
acknowledgement must not wait for that (Discord's 3 s is the bar both platforms are held to).

The presses come one after the other (the next once the previous one is acknowledged), in a
private chat, on one message's keyboard; the answers pile up behind the slow model meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup

from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.daemon import Daemon
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegram

__all__ = ["press_to_ack"]

_TOKEN = "7001:token-ada"
_ANSWER = "<response><thought>ok</thought><actions>REPLY</actions><text>Noted.</text></response>"
_KEYBOARD = InlineKeyboardMarkup(
    [[InlineKeyboardButton("One", callback_data="vote:1"), InlineKeyboardButton("Two", callback_data="vote:2")]]
)


def _character(folder: Path, api_root: str) -> Path:
    path = folder / "ada.json"
    path.write_text(
        json.dumps(
            {
                "name": "Ada",
                "bio": ["Ada answers buttons."],
                "plugins": ["@elizaos/plugin-telegram", "@elizaos/plugin-openai"],
                "settings": {
                    "secrets": {"TELEGRAM_BOT_TOKEN": _TOKEN},
                    "TELEGRAM_API_ROOT": api_root,
                    "TELEGRAM_POLL_TIMEOUT_S": "1",
                },
            }
        )
    )
    return path


async def _until(check: Callable[[], object], timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.005)


async def press_to_ack(presses: int, model_latency: float) -> list[float]:
    """Seconds from the delivery of each of ``presses`` presses to its answerCallbackQuery, while
    the model takes ``model_latency`` seconds to answer each (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="troupe-press-") as folder:
        async with FakeTelegram() as fake, FakeOpenAIServer(latency=model_latency) as openai:
            openai.script_chat(lambda body: _ANSWER)
            ada = fake.add_bot(_TOKEN, username="ada_bot", first_name="Ada")
            sam = fake.add_user("Sam", username="samr")
            chat = fake.private(sam, ada)
            environ = {"OPENAI_API_KEY": "sk-bench-0000", "OPENAI_BASE_URL": openai.url}
            loaded = [load_character(_character(Path(folder), fake.url), environ=environ)]
            daemon = Daemon(DaemonSettings(db_path=Path(folder) / "troupe.db"), loaded, environ)
            running = asyncio.create_task(daemon.run())
            try:
                await _until(lambda: daemon.runtimes and daemon.runtimes[0].get_service("telegram"), 30)
                await fake.wait_polling(ada, 10)
                async with Bot(_TOKEN, base_url=f"{fake.url}/bot") as bot:  # the message with the buttons
                    await bot.send_message(chat.id, "Which one?", reply_markup=_KEYBOARD)
                asked = ada.sent[-1]["message"]
                delays = []
                for n in range(presses):
                    query = await fake.user_presses(sam, asked, f"vote:{1 + n % 2}")
                    await _until(partial(fake.answered, query), 30)
                    delays.append(fake.ack_delay(query))
                return delays
            finally:
                await openai.close()  # the answers still waiting for the model end now
                daemon.stop()
                await asyncio.wait_for(running, 60)
