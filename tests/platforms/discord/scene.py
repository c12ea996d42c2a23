"""The Discord scene for end-to-end tests: the daemon, two characters as two bots (Ada and
Brann), the real discord.py and openai clients against local fakes of Discord and of an
OpenAI-compatible API. ``scene.start()`` runs the daemon; model answers are scripted on
``scene.brain``.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.daemon import Daemon
from bot.kernel.links import LinkState
from bot.kernel.types import RoomState
from bot.runtime.agent import AgentRuntime
from platforms.discord._mapping import discord_id

from ...fakes.discord_server import (
    FakeBot,
    FakeChannel,
    FakeDiscord,
    FakeGuild,
    FakeUser,
)
from ...fakes.discord_voice import FakeVoiceServer
from ...fakes.openai_server import FakeOpenAIServer


def plan(text: str, actions: str = "REPLY") -> str:
    return f"<response><thought>ok</thought><actions>{actions}</actions><text>{text}</text></response>"


def drawing(text: str, prompt: str = "a ginger cat asleep on a keyboard") -> str:
    """A plan that draws ``prompt`` (GENERATE_IMAGE) with ``text`` as the caption."""
    return (
        "<response><thought>draw</thought><actions>GENERATE_IMAGE</actions>"
        f"<text>{text}</text><imagePrompt>{prompt}</imagePrompt></response>"
    )


@dataclass
class Brain:
    """Scripted model answers per character: what it plans, and whether it speaks up unasked."""

    plans: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    decisions: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    prompts: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)  # SEND_MESSAGE's target extraction answers
    troupe: list[str] = field(default_factory=list)  # the troupe's decisions: who answers, in order ("Brann, Ada")
    summaries: list[str] = field(default_factory=list)  # SUMMARIZE_CONVERSATION's and /summarize's summaries
    #: Instead of ``decisions``, a character's small model as a function of the prompt: for tests
    #: where the order in which it hears two messages is not fixed (one relayed, one polled).
    deciders: dict[str, Callable[[str], str]] = field(default_factory=dict)

    def answer(self, body: dict[str, Any]) -> str:
        parts = [m.get("content") for m in body["messages"]]
        if any(isinstance(p, list) and any(c.get("type") == "image_url" for c in p) for p in parts):
            return '{"title": "A cat", "description": "A ginger cat asleep on a keyboard."}'
        prompt = "\n".join(str(p) for p in parts)
        self.prompts.append(prompt)
        if "Which of these characters should answer" in prompt:
            return f"<response><answer>{self.troupe.pop(0) if self.troupe else ''}</answer></response>"
        if "to sum up the conversation in" in prompt:
            return f"<response><summary>{self.summaries.pop(0) if self.summaries else '- chatter'}</summary></response>"
        if "asked" in prompt and "to send a message to a person or a channel" in prompt and self.targets:
            return self.targets.pop(0)
        for name in ("Ada", "Brann"):
            if f"Write the next turn of {name}" in prompt:
                queue = self.plans[name]
                return queue.pop(0) if queue else plan(f"{name} here.")
            if f"Decide what {name} does" in prompt:
                if name in self.deciders:
                    return f"<response><action>{self.deciders[name](prompt)}</action></response>"
                queue = self.decisions[name]
                return f"<response><action>{queue.pop(0) if queue else 'IGNORE'}</action></response>"
        return "<response><thought>fine</thought><facts></facts><relationships></relationships></response>"


class Characters:
    """A scene's characters in its daemon, found by name."""

    daemon: Daemon | None
    #: The platform a character serves once it is up.
    platform: ClassVar[str]

    async def running(self, name: str, *, connected: bool = True, timeout: float = 60) -> AgentRuntime:
        """``name``'s runtime once the daemon has started it and it serves the scene's platform
        (not ``connected``: once its first try to connect is over, whatever came of it). The
        daemon starts its characters one by one, after ``start`` returns."""

        def up() -> AgentRuntime | None:
            found = self._find(name)
            if found is None:
                return None
            if connected:
                return found if found.get_service(self.platform) else None
            link = found.links.get(self.platform)
            return found if link is not None and link.state is not LinkState.CONNECTING else None

        return await until(up, timeout=timeout)

    def runtime(self, name: str) -> AgentRuntime:
        """``name``'s runtime, which must be running now (``await running(name)`` waits for it)."""
        found = self._find(name)
        assert found is not None, f"{name} is not running in the daemon: await scene.running({name!r}) first"
        return found

    def _find(self, name: str) -> AgentRuntime | None:
        assert self.daemon is not None
        return next((rt for rt in self.daemon.runtimes if rt.character.name == name), None)


@dataclass
class Scene(Characters):
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
    openai: FakeOpenAIServer | None = None
    daemon: Daemon | None = None
    task: asyncio.Task[int] | None = None
    platform: ClassVar[str] = "discord"

    async def start(
        self,
        ada_settings: dict[str, Any] | None = None,
        *,
        with_brann: bool = True,
        brann_token: str = "token-brann",
        wait: bool = True,
        brann_settings: dict[str, Any] | None = None,
    ) -> None:
        daemon, self.task = self.launch(ada_settings or {}, with_brann, brann_token, brann_settings or {})
        self.daemon = daemon
        if wait:
            # Every character started (a test looks at them at once); Brann may be made to fail.
            await self.running("Ada")
            if with_brann:
                await self.running("Brann", connected=False)

    async def stop(self) -> int:
        assert self.daemon is not None and self.task is not None
        self.daemon.stop()
        return await asyncio.wait_for(self.task, 60)

    async def room_state(self, name: str, channel: FakeChannel) -> RoomState | None:
        rt = self.runtime(name)
        return await rt.store.get_participant_state(discord_id(rt.agent_id, channel.id), rt.agent_id)

    async def state_becomes(self, name: str, channel: FakeChannel, state: RoomState | None) -> None:
        """Actions run after the reply is sent: wait for the state to change."""
        async with asyncio.timeout(30):
            while await self.room_state(name, channel) is not state:
                await asyncio.sleep(0.01)


async def until(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    async with asyncio.timeout(timeout):
        while not (result := check()):
            await asyncio.sleep(0.01)
    return result


#: What the prompts show of each character's style and examples in chat, and in a feed of posts.
CHAT_STYLE, POST_STYLE = "Chat as if across a table from a friend.", "Keep posts under 280 characters."
CHAT_EXAMPLE, POST_EXAMPLE = "Reading by the fire, as ever.", "Tonight's reading list, in one line."


def persona(name: str) -> dict[str, Any]:
    """The style and examples of a test character, chat and post alike."""
    return {
        "style": {"chat": [CHAT_STYLE], "post": [POST_STYLE]},
        "messageExamples": [
            [
                {"name": "{{user1}}", "content": {"text": "Plans tonight?"}},
                {"name": name, "content": {"text": CHAT_EXAMPLE}},
            ]
        ],
        "postExamples": [POST_EXAMPLE],
    }


def character(tmp_path: Path, name: str, token: str, api_base: str, **settings: Any) -> Path:
    path = tmp_path / f"{name.lower()}.json"
    path.write_text(
        json.dumps(
            {
                "name": name,
                "bio": [f"{name} is a test character."],
                **persona(name),
                "plugins": ["@elizaos/plugin-discord", "@elizaos/plugin-openai"],
                "settings": {
                    "secrets": {"DISCORD_API_TOKEN": token},
                    "DISCORD_API_BASE": api_base,
                    "DISCORD_GUILD_READY_TIMEOUT_S": "0.05",
                    **settings,
                },
            }
        )
    )
    return path


@asynccontextmanager
async def open_scene(tmp_path: Path, *, voice: FakeVoiceServer | None = None) -> AsyncIterator[Scene]:
    """The scene, on a fake Discord whose voice server is ``voice`` (e.g. DAVE on) if given."""
    async with FakeDiscord(voice=voice) as fake, FakeOpenAIServer() as openai:
        brain = Brain()
        openai.script_chat(brain.answer)
        environ = {"OPENAI_API_KEY": "sk-e2e-0000", "OPENAI_BASE_URL": openai.url}
        running: list[tuple[Daemon, asyncio.Task[int]]] = []

        def launch(
            ada_settings: dict[str, Any], with_brann: bool, brann_token: str, brann_settings: dict[str, Any]
        ) -> tuple[Daemon, asyncio.Task[int]]:
            paths = [character(tmp_path, "Ada", "token-ada", fake.api_base, **ada_settings)]
            if with_brann:
                paths.append(character(tmp_path, "Brann", brann_token, fake.api_base, **brann_settings))
            results = [load_character(p, environ=environ) for p in paths]
            daemon = Daemon(DaemonSettings(db_path=tmp_path / "troupe.db"), results, environ)
            running.append((daemon, asyncio.create_task(daemon.run())))
            return running[-1]

        ada, brann = fake.add_bot("token-ada", "Ada"), fake.add_bot("token-brann", "Brann")
        sam, cleo = fake.add_user("sam", global_name="Sam"), fake.add_user("cleo")
        guild = fake.add_guild("Writers", owner=sam, members=[ada, brann, cleo])
        yield Scene(
            fake,
            brain,
            ada,
            brann,
            sam,
            cleo,
            guild,
            fake.add_channel(guild, "general"),
            fake.add_channel(guild, "lounge"),
            launch,
            openai,
        )
        for daemon, task in running:
            if not task.done():  # a test may have killed one already
                daemon.stop()
                await asyncio.wait_for(task, 60)


@pytest.fixture
async def scene(tmp_path: Path) -> AsyncIterator[Scene]:
    async with open_scene(tmp_path) as opened:
        yield opened
