"""End to end on Discord: the daemon, two characters as two bots, the real discord.py and openai
clients against local fakes of Discord and of an OpenAI-compatible API."""

from __future__ import annotations

import asyncio
import json
import logging
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.character import load_character
from bot.daemon import Daemon
from bot.runtime import AgentRuntime
from bot.settings import DaemonSettings
from bot.types import RoomState
from platforms.discord._mapping import discord_id

from ...fakes.discord_server import FakeBot, FakeChannel, FakeDiscord, FakeGuild, FakeUser
from ...fakes.openai_server import FakeOpenAIServer


def plan(text: str, actions: str = "REPLY") -> str:
    return f"<response><thought>ok</thought><actions>{actions}</actions><text>{text}</text></response>"


@dataclass
class Brain:
    """Scripted model answers per character: what it plans, and whether it speaks up unasked."""

    plans: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    decisions: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    prompts: list[str] = field(default_factory=list)

    def answer(self, body: dict[str, Any]) -> str:
        prompt = "\n".join(str(m.get("content")) for m in body["messages"])
        self.prompts.append(prompt)
        for name in ("Ada", "Brann"):
            if f"Write the next turn of {name}" in prompt:
                queue = self.plans[name]
                return queue.pop(0) if queue else plan(f"{name} here.")
            if f"Decide what {name} does" in prompt:
                queue = self.decisions[name]
                return f"<response><action>{queue.pop(0) if queue else 'IGNORE'}</action></response>"
        return "<response><thought>fine</thought><facts></facts><relationships></relationships></response>"


@dataclass
class Scene:
    """A fake Discord world (a guild owned by Sam, with #general and #lounge) and the daemon."""

    fake: FakeDiscord
    brain: Brain
    ada: FakeBot
    brann: FakeBot
    sam: FakeUser
    cleo: FakeUser
    guild: FakeGuild
    general: FakeChannel
    lounge: FakeChannel
    launch: Callable[..., Any]
    daemon: Daemon | None = None
    task: asyncio.Task[int] | None = None

    async def start(self, ada_settings: dict[str, Any] | None = None, *, with_brann: bool = True,
                    brann_token: str = "token-brann", wait: bool = True) -> None:
        self.daemon, self.task = self.launch(ada_settings or {}, with_brann, brann_token)
        if wait:
            await until(lambda: self.daemon.runtimes and self.runtime("Ada").get_service("discord"), timeout=10)

    async def stop(self) -> int:
        assert self.daemon is not None and self.task is not None
        self.daemon.stop()
        return await asyncio.wait_for(self.task, 10)

    def runtime(self, name: str) -> AgentRuntime:
        assert self.daemon is not None
        return next(rt for rt in self.daemon.runtimes if rt.character.name == name)

    async def room_state(self, name: str, channel: FakeChannel) -> RoomState | None:
        rt = self.runtime(name)
        return await rt.store.get_participant_state(discord_id(rt.agent_id, channel.id), rt.agent_id)

    async def state_becomes(self, name: str, channel: FakeChannel, state: RoomState | None) -> None:
        """Actions run after the reply is sent: wait for the state to change."""
        async with asyncio.timeout(5):
            while await self.room_state(name, channel) is not state:
                await asyncio.sleep(0.01)


async def until(check: Callable[[], Any], timeout: float = 5.0) -> Any:
    async with asyncio.timeout(timeout):
        while not (result := check()):
            await asyncio.sleep(0.01)
    return result


def character(tmp_path: Path, name: str, token: str, api_base: str, **settings: Any) -> Path:
    path = tmp_path / f"{name.lower()}.json"
    path.write_text(json.dumps({
        "name": name, "bio": [f"{name} is a test character."],
        "plugins": ["@elizaos/plugin-discord", "@elizaos/plugin-openai"],
        "settings": {"secrets": {"DISCORD_API_TOKEN": token}, "DISCORD_API_BASE": api_base,
                     "DISCORD_GUILD_READY_TIMEOUT_S": "0.05", **settings},
    }))
    return path


@pytest.fixture
async def scene(tmp_path: Path) -> AsyncIterator[Scene]:
    async with FakeDiscord() as fake, FakeOpenAIServer() as openai:
        brain = Brain()
        openai.script_chat(brain.answer)
        environ = {"OPENAI_API_KEY": "sk-e2e-0000", "OPENAI_BASE_URL": openai.url}
        running: list[tuple[Daemon, asyncio.Task[int]]] = []

        def launch(ada_settings: dict[str, Any], with_brann: bool, brann_token: str) -> tuple[Daemon, asyncio.Task[int]]:
            paths = [character(tmp_path, "Ada", "token-ada", fake.api_base, **ada_settings)]
            if with_brann:
                paths.append(character(tmp_path, "Brann", brann_token, fake.api_base))
            results = [load_character(p, environ=environ) for p in paths]
            daemon = Daemon(DaemonSettings(db_path=tmp_path / "troupe.db"), results, environ)
            running.append((daemon, asyncio.create_task(daemon.run())))
            return running[-1]

        ada, brann = fake.add_bot("token-ada", "Ada"), fake.add_bot("token-brann", "Brann")
        sam, cleo = fake.add_user("sam", global_name="Sam"), fake.add_user("cleo")
        guild = fake.add_guild("Writers", owner=sam, members=[ada, brann, cleo])
        yield Scene(fake, brain, ada, brann, sam, cleo, guild, fake.add_channel(guild, "general"),
                    fake.add_channel(guild, "lounge"), launch)
        for daemon, task in running:
            daemon.stop()
            await asyncio.wait_for(task, 10)


async def test_answers_a_mention_with_a_reply_and_a_dm(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [plan("Hello Sam!"), plan("Hi in private.")]
    asked = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} hello?")
    sent = await s.fake.wait_for_sent(s.ada, 1)
    assert sent[0].content == "Hello Sam!" and sent[0].reference is asked
    assert s.ada.typing and s.ada.typing[0] is s.general  # "typing…" while the answer was prepared
    await s.fake.dm(s.sam, s.ada, "psst")
    sent = await s.fake.wait_for_sent(s.ada, 2)
    assert sent[1].content == "Hi in private." and sent[1].channel.is_dm
    # Both conversations are remembered, with the bot's own replies.
    rt = s.runtime("Ada")
    general = await rt.store.get_memories(table="messages", room_id=discord_id(rt.agent_id, s.general.id))
    assert [m.content["text"] for m in reversed(general)] == ["@Ada hello?", "Hello Sam!"]


async def test_unaddressed_chatter_is_left_alone_when_the_model_says_ignore(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.decisions["Ada"].append("IGNORE")
    await s.fake.user_says(s.sam, s.general, "anyone seen my keys?")
    await until(lambda: any("Decide what Ada does" in p for p in s.brain.prompts))
    await asyncio.sleep(0.2)
    assert s.ada.sent == [] and s.ada.typing == []


async def test_follow_and_mute_by_conversation_and_by_slash_command(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [plan("I'll follow along.", "REPLY,FOLLOW_ROOM"), plan("Noted."),
                             plan("Going quiet.", "REPLY,MUTE_ROOM")]
    await s.fake.user_says(s.sam, s.general, "Ada, follow this channel please")
    await s.fake.wait_for_sent(s.ada, 1)
    await s.state_becomes("Ada", s.general, RoomState.FOLLOWED)
    await s.fake.user_says(s.sam, s.general, "the plot needs work")  # followed: answered without being named
    assert (await s.fake.wait_for_sent(s.ada, 2))[1].content == "Noted."
    await s.fake.user_says(s.sam, s.general, "Ada, shush")
    await s.fake.wait_for_sent(s.ada, 3)
    await s.state_becomes("Ada", s.general, RoomState.MUTED)
    await s.fake.user_says(s.sam, s.general, "so anyway")
    await asyncio.sleep(0.2)
    assert len(s.ada.sent) == 3  # muted: silent

    # /troupe: the owner unmutes without asking the model; a member may look but not change.
    interaction = await s.fake.invoke_command(s.sam, s.general, s.ada, "troupe", options={"action": "unmute"})
    response = (await s.fake.wait_for_response(interaction))[0]
    assert response.payload["data"]["content"] == "Done: Ada answers when addressed, and otherwise decides for itself."
    assert response.payload["data"]["flags"] == 64  # ephemeral
    assert await s.room_state("Ada", s.general) is None
    denied = await s.fake.invoke_command(s.cleo, s.general, s.ada, "troupe", options={"action": "follow"})
    assert (await s.fake.wait_for_response(denied))[0].payload["data"]["content"] == (
        "Only the server's owner or an admin can change that.")
    status = await s.fake.invoke_command(s.cleo, s.general, s.ada, "troupe")
    assert "answers when addressed" in (await s.fake.wait_for_response(status))[0].payload["data"]["content"]


async def test_two_characters_converse_until_the_loop_guard(scene) -> None:
    s = scene
    await s.start({"MAX_BOT_TURNS": "2"})
    s.brain.plans["Ada"] += [plan("Brann, what do you think?"), plan("Brann, really?"), plan("Brann, go on.")]
    s.brain.plans["Brann"] += [plan("Ada, I think it works."), plan("Ada, truly."), plan("Ada, and more.")]
    await s.fake.user_says(s.sam, s.general, "Ada, what does the captain think of the ending?")
    await s.fake.wait_for_sent(s.ada, 1)
    await s.fake.wait_for_sent(s.brann, 1)
    await asyncio.sleep(0.5)
    # Ada answered Sam, Brann answered Ada, Ada answered Brann (2 bot turns in a row), then silence.
    assert [m.content for m in s.ada.sent] == ["Brann, what do you think?", "Brann, really?"]
    assert [m.content for m in s.brann.sent] == ["Ada, I think it works."]
    # A human speaking resets the guard.
    await s.fake.user_says(s.sam, s.general, "Brann, your turn")
    assert (await s.fake.wait_for_sent(s.brann, 2))[1].content == "Ada, truly."


async def test_a_long_reply_with_code_arrives_as_valid_messages_and_never_pings_everyone(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    code = "\n".join(f"    total += item_{i}  # accumulate the values" for i in range(40))
    long = "Here you go, @everyone:\n" + "Some explanation. " * 45 + "\n```python\n" + code + "\n```\nDone."
    assert 2400 < len(long) < 2700
    s.brain.plans["Ada"].append(plan(long))
    await s.fake.user_says(s.sam, s.general, "Ada, show me the loop")
    sent = await s.fake.wait_for_sent(s.ada, 2)
    assert all(len(m.content) <= 2000 and m.content.count("```") % 2 == 0 for m in sent)
    assert sent[1].content.startswith("```python") and sent[1].content.endswith("Done.")
    # Only people can be pinged (never @everyone, @here or a role), and not the author replied to.
    assert [m.allowed_mentions for m in sent] == [{"parse": ["users"], "replied_user": False}, {"parse": ["users"]}]
    assert sent[0].reference is not None and sent[1].reference is None


async def test_channel_ids_limit_where_the_bot_listens(scene) -> None:
    s = scene
    await s.start({"CHANNEL_IDS": str(s.lounge.id)}, with_brann=False)
    s.brain.plans["Ada"].append(plan("Lounge only."))
    await s.fake.user_says(s.sam, s.general, "Ada, hello?")
    await s.fake.user_says(s.sam, s.lounge, "Ada, hello?")
    await s.fake.wait_for_sent(s.ada, 1)
    await asyncio.sleep(0.2)
    assert [(m.channel, m.content) for m in s.ada.sent] == [(s.lounge, "Lounge only.")]


async def test_a_dropped_gateway_reconnects_and_the_next_message_is_answered(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [plan("Before."), plan("After.")]
    await s.fake.user_says(s.sam, s.general, "Ada, one")
    await s.fake.wait_for_sent(s.ada, 1)
    await s.fake.drop_gateway(s.ada)
    await s.fake.wait_connected(s.ada)
    await s.fake.user_says(s.sam, s.general, "Ada, two")
    assert (await s.fake.wait_for_sent(s.ada, 2))[1].content == "After."


async def test_rate_limits_and_server_errors_are_retried(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.fake.fail_next("POST", r"/channels/\d+/messages$", status=429, retry_after=0.05, bot=s.ada)
    s.brain.plans["Ada"].append(plan("Eventually."))
    await s.fake.user_says(s.sam, s.general, "Ada?")
    assert (await s.fake.wait_for_sent(s.ada, 1))[0].content == "Eventually."


async def test_missing_message_content_intent_and_a_bad_token_stop_only_that_character(scene, caplog) -> None:
    s = scene
    s.ada.message_content_intent = False
    with caplog.at_level(logging.ERROR):
        await s.start(brann_token="token-nobody", wait=False)
        assert await asyncio.wait_for(s.task, 10) == 78  # nobody could connect: a configuration error
    assert (f"Ada: could not connect to discord: Ada: the Message Content intent is not enabled for the bot Ada; "
            f"enable it at https://discord.com/developers/applications/{s.ada.id}/bot") in caplog.text
    assert "Brann: could not connect to discord: Brann: Discord refused the bot token in DISCORD_API_TOKEN" in caplog.text
    assert "token-nobody" not in caplog.text and s.ada.identifies == []  # stopped before the gateway: no loop


async def test_one_broken_character_does_not_stop_the_other(scene, caplog) -> None:
    s = scene
    s.brann.message_content_intent = False
    s.brain.plans["Ada"].append(plan("Still here."))
    with caplog.at_level(logging.ERROR):
        await s.start()
    await s.fake.user_says(s.sam, s.general, "Ada?")
    assert (await s.fake.wait_for_sent(s.ada, 1))[0].content == "Still here."
    assert "Brann: could not connect to discord" in caplog.text
