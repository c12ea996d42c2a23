"""Two daemons in one process share nothing: each answers its own messages from its own database,
its relay hands messages only to its own characters, and its secrets are its own.

Both daemons run characters named Ada and Brann (so the same agent ids, in different databases),
as four different Telegram bots of one fake Bot API; each daemon talks to its own fake
OpenAI-compatible server, so which daemon's model was asked is plain.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.daemon import Daemon
from bot.kernel.redact import SecretFilter
from bot.runtime.agent import AgentRuntime

from ...fakes.openai_server import FakeOpenAIServer
from ...fakes.telegram_server import FakeBot, FakeTelegram
from ..discord.scene import Brain, plan, until
from .scene import character


@dataclass
class Troupe:
    """One daemon of the two: its characters' bots, its model's script, the daemon."""

    daemon: Daemon
    task: asyncio.Task[int]
    brain: Brain
    ada: FakeBot
    brann: FakeBot

    def runtime(self, name: str) -> AgentRuntime:
        return next(rt for rt in self.daemon.runtimes if rt.character.name == name)

    async def stop(self) -> int:
        self.daemon.stop()
        return await asyncio.wait_for(self.task, 60)


def _online(troupe: Troupe) -> bool:
    runtimes = troupe.daemon.runtimes
    return len(runtimes) == 2 and all(rt.get_service("telegram") for rt in runtimes)


@pytest.fixture
async def troupes(tmp_path: Path) -> AsyncIterator[tuple[Troupe, Troupe, FakeTelegram]]:
    async with FakeTelegram() as fake, FakeOpenAIServer() as openai_one, FakeOpenAIServer() as openai_two:
        started: list[Troupe] = []
        for label, openai in (("one", openai_one), ("two", openai_two)):
            brain = Brain()
            openai.script_chat(brain.answer)
            ada = fake.add_bot(f"70{len(started)}1:token-ada-{label}", username=f"ada_{label}_bot", first_name="Ada")
            brann = fake.add_bot(
                f"70{len(started)}2:token-brann-{label}", username=f"brann_{label}_bot", first_name="Brann"
            )
            folder = tmp_path / label
            folder.mkdir()
            environ = {"OPENAI_API_KEY": f"sk-{label}-0000", "OPENAI_BASE_URL": openai.url}
            paths = [character(folder, "Ada", ada.token, fake.url), character(folder, "Brann", brann.token, fake.url)]
            daemon = Daemon(
                DaemonSettings(db_path=folder / "troupe.db"),
                [load_character(p, environ=environ) for p in paths],
                environ,
            )
            started.append(Troupe(daemon, asyncio.create_task(daemon.run()), brain, ada, brann))
        one, two = started
        for troupe in started:
            await until(partial(_online, troupe), timeout=60)
        try:
            yield one, two, fake
        finally:
            for troupe in started:
                if not troupe.task.done():
                    await troupe.stop()


async def test_each_daemon_answers_its_own_messages_from_its_own_database(troupes) -> None:
    one, two, fake = troupes
    # Two people: the fake keeps one private chat per person.
    sam, cleo = fake.add_user("Sam"), fake.add_user("Cleo")
    one.brain.plans["Ada"].append(plan("Ada of the first troupe."))
    two.brain.plans["Ada"].append(plan("Ada of the second troupe."))
    await fake.user_says(sam, fake.private(sam, one.ada), "hello first")
    await fake.user_says(cleo, fake.private(cleo, two.ada), "hello second")
    assert [m["text"] for m in await fake.wait_for_sent(one.ada, 1)] == ["Ada of the first troupe."]
    assert [m["text"] for m in await fake.wait_for_sent(two.ada, 1)] == ["Ada of the second troupe."]
    # Same character, same agent id, two databases: each holds only what its own daemon heard.
    first, second = one.runtime("Ada"), two.runtime("Ada")
    assert first.agent_id == second.agent_id
    said_to_first = {m.content.text for m in await first.store.get_memories(table="messages", count=10)}
    said_to_second = {m.content.text for m in await second.store.get_memories(table="messages", count=10)}
    assert "hello first" in said_to_first and "hello second" not in said_to_first
    assert "hello second" in said_to_second and "hello first" not in said_to_second


async def test_a_daemons_relay_hands_messages_to_its_own_characters_only(troupes) -> None:
    one, two, fake = troupes
    sam = fake.add_user("Sam")
    group = fake.add_group("Everyone", members=[sam, one.ada, one.brann, two.ada, two.brann])
    question = "@brann_one_bot @brann_two_bot what do you both think?"
    one.brain.plans["Ada"].append(plan(question))
    one.brain.plans["Brann"].append(plan("The first Brann agrees."))
    await fake.user_says(sam, group, "@ada_one_bot ask the Branns")
    await fake.wait_for_sent(one.ada, 1)
    # The first daemon's Brann heard Ada through its relay, as Telegram never delivers it…
    assert [m["text"] for m in await fake.wait_for_sent(one.brann, 1, timeout=60)] == ["The first Brann agrees."]
    await asyncio.sleep(0.5)
    # …and the second daemon's Brann, addressed by name too, never heard it at all.
    assert two.brann.sent == [] and not any(question in prompt for prompt in two.brain.prompts)
    heard = {m.content.text for m in await two.runtime("Brann").store.get_memories(table="messages", count=20)}
    assert question not in heard


async def test_each_daemon_keeps_its_own_secrets_out_of_the_logs(troupes, caplog) -> None:
    one, two, _ = troupes
    caplog.set_level(logging.INFO)
    secrets_one, secrets_two = one.daemon.shared.secrets, two.daemon.shared.secrets
    assert one.ada.token in secrets_one and one.ada.token not in secrets_two
    assert two.ada.token in secrets_two and two.ada.token not in secrets_one
    logging.getLogger("tests.two_daemons").warning("tokens %s and %s", one.ada.token, two.ada.token)
    assert "tokens <redacted> and <redacted>" in caplog.text
    assert one.ada.token not in caplog.text and two.ada.token not in caplog.text

    def owners() -> set[int]:
        return {id(f.secrets) for h in logging.getLogger().handlers for f in h.filters if isinstance(f, SecretFilter)}

    assert {id(secrets_one), id(secrets_two)} <= owners()
    assert await one.stop() == 0
    # The stopped daemon's secrets went with it; the other's filter stays.
    assert id(secrets_one) not in owners() and id(secrets_two) in owners()
    logging.getLogger("tests.two_daemons").warning("still %s", two.brann.token)
    assert "still <redacted>" in caplog.text and two.brann.token not in caplog.text
