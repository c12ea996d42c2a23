"""Time from a button press on Discord to its acknowledgement, with a slow model.

:func:`press_to_ack` runs the real daemon (one character, its discord.py client against the fake
Discord, the openai client against the fake OpenAI-compatible server) and measures, for each
press, the seconds from the fake writing INTERACTION_CREATE to the bot's socket to the bot's
interaction callback (the deferral) arriving. Every press also reaches the character as a message
it answers through the model, which takes ``model_latency`` seconds a call: the deferral must not
wait for that (Discord forgets an interaction not answered within 3 s).

The presses come one after the other (the next once the previous one is deferred), in a server
channel, on one message's buttons; the answers pile up behind the slow model meanwhile.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import discord

from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.daemon import Daemon
from bot.kernel.buttons import buttons_in
from platforms.discord._presses import components_of
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer
from tests.platforms.discord.scene import character

__all__ = ["press_to_ack"]

_TOKEN = "token-ada"
_ANSWER = "<response><thought>ok</thought><actions>REPLY</actions><text>Noted.</text></response>"
_BUTTONS = [{"label": "One", "value": "vote:1"}, {"label": "Two", "value": "vote:2"}]


async def _until(check: Callable[[], object], timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.005)


async def _post_buttons(channel_id: int) -> None:
    """The message with the buttons, as the bot posts it (over REST, without a second gateway
    session that would take the interactions)."""
    poster = discord.Client(intents=discord.Intents.none())
    try:
        await poster.login(_TOKEN)
        channel = await poster.fetch_channel(channel_id)
        assert isinstance(channel, discord.TextChannel)
        view = components_of(buttons_in({"buttons": _BUTTONS}))
        assert view is not None
        await channel.send("Which one?", view=view)
    finally:
        await poster.close()


async def press_to_ack(presses: int, model_latency: float) -> list[float]:
    """Seconds from the dispatch of each of ``presses`` presses to its deferral, while the model
    takes ``model_latency`` seconds to answer each (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="troupe-press-") as folder:
        async with FakeDiscord() as fake, FakeOpenAIServer(latency=model_latency) as openai:
            openai.script_chat(lambda body: _ANSWER)
            fake.patch_discord()
            ada = fake.add_bot(_TOKEN, "Ada")
            sam = fake.add_user("sam", global_name="Sam")
            guild = fake.add_guild("Voters", owner=sam, members=[ada])
            general = fake.add_channel(guild, "general")
            environ = {"OPENAI_API_KEY": "sk-bench-0000", "OPENAI_BASE_URL": openai.url}
            loaded = [load_character(character(Path(folder), "Ada", _TOKEN, fake.api_base), environ=environ)]
            daemon = Daemon(DaemonSettings(db_path=Path(folder) / "troupe.db"), loaded, environ)
            running = asyncio.create_task(daemon.run())
            try:
                await _until(lambda: daemon.runtimes and daemon.runtimes[0].get_service("discord"), 30)
                await _post_buttons(general.id)
                (asked,) = await fake.wait_for_sent(ada, 1)
                delays = []
                for n in range(presses):
                    click = await fake.user_clicks(sam, asked, f"troupe:vote:{1 + n % 2}")
                    (deferral,) = await fake.wait_for_response(click, timeout=30)
                    delays.append(deferral.at - click.dispatched[0])
                return delays
            finally:
                await openai.close()  # the answers still waiting for the model end now
                daemon.stop()
                await asyncio.wait_for(running, 60)
