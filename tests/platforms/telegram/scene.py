"""The Telegram scene for end-to-end tests: the daemon, two characters as two bots (Ada and
Brann), the real python-telegram-bot and openai clients against local fakes of the Bot API and
of an OpenAI-compatible API. ``scene.start()`` runs the daemon; model answers are scripted on
``scene.brain`` (the same Brain as the Discord scene); transcription and speech on
``scene.openai`` (the fake OpenAI-compatible server itself).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from bot.config.character import load_character
from bot.config.settings import DaemonSettings
from bot.daemon.daemon import Daemon
from bot.kernel.types import RoomState
from platforms.telegram._mapping import room_id

from ...fakes.openai_server import FakeOpenAIServer
from ...fakes.telegram_server import FakeTelegram
from ..discord.scene import Brain, Characters, drawing, persona, plan, until

__all__ = ["Scene", "drawing", "plan", "scene", "until"]


def character(tmp_path: Path, name: str, token: str, api_root: str, **settings: Any) -> Path:
    path = tmp_path / f"{name.lower()}.json"
    path.write_text(
        json.dumps(
            {
                "name": name,
                "bio": [f"{name} is a test character."],
                **persona(name),
                "plugins": ["@elizaos/plugin-telegram", "@elizaos/plugin-openai"],
                "settings": {
                    "secrets": {"TELEGRAM_BOT_TOKEN": token},
                    "TELEGRAM_API_ROOT": api_root,
                    "TELEGRAM_POLL_TIMEOUT_S": "1",
                    **settings,
                },
            }
        )
    )
    return path


@dataclass
class Scene(Characters):
    fake: FakeTelegram
    brain: Brain
    ada: Any
    brann: Any
    sam: Any
    cleo: Any
    group: Any
    launch: Callable[..., Any]
    daemon: Daemon | None = None
    task: asyncio.Task[int] | None = None
    openai: FakeOpenAIServer | None = None
    webhook_port: int = 0
    """The daemons' TROUPE_WEBHOOK_PORT (bound only for a character with TELEGRAM_WEBHOOK_URL)."""
    platform: ClassVar[str] = "telegram"

    def webhook_url(self, name: str) -> str:
        """A TELEGRAM_WEBHOOK_URL for character ``name`` on the scene's daemon (no proxy between)."""
        return f"http://127.0.0.1:{self.webhook_port}/telegram/{name.lower()}"

    async def start(
        self,
        ada_settings: dict[str, Any] | None = None,
        *,
        with_brann: bool = True,
        brann_token: str | None = None,
        wait: bool = True,
        brann_settings: dict[str, Any] | None = None,
    ) -> None:
        daemon, self.task = self.launch(
            ada_settings or {}, with_brann, brann_token or self.brann.token, brann_settings or {}
        )
        self.daemon = daemon
        if wait:
            # Every character started (a test looks at them at once); Brann may be made to fail.
            await self.running("Ada")
            if with_brann:
                await self.running("Brann", connected=False)

    async def room_state(self, name: str, chat_id: int, topic: int | None = None) -> RoomState | None:
        rt = self.runtime(name)
        return await rt.store.get_participant_state(room_id(rt.agent_id, chat_id, topic), rt.agent_id)

    async def state_becomes(self, name: str, chat_id: int, state: RoomState | None) -> None:
        async with asyncio.timeout(30):
            while await self.room_state(name, chat_id) is not state:
                await asyncio.sleep(0.01)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
async def scene(tmp_path: Path) -> AsyncIterator[Scene]:
    async with FakeTelegram() as fake, FakeOpenAIServer() as openai:
        brain = Brain()
        openai.script_chat(brain.answer)
        environ = {"OPENAI_API_KEY": "sk-e2e-0000", "OPENAI_BASE_URL": openai.url}
        running: list[tuple[Daemon, asyncio.Task[int]]] = []
        webhook_port = free_port()

        def launch(
            ada_settings: dict[str, Any], with_brann: bool, brann_token: str, brann_settings: dict[str, Any]
        ) -> tuple[Daemon, asyncio.Task[int]]:
            paths = [character(tmp_path, "Ada", ada.token, fake.url, **ada_settings)]
            if with_brann:
                paths.append(character(tmp_path, "Brann", brann_token, fake.url, **brann_settings))
            results = [load_character(p, environ=environ) for p in paths]
            settings = DaemonSettings(
                db_path=tmp_path / "troupe.db", reconnect_base_s=0.05, reconnect_cap_s=0.2, webhook_port=webhook_port
            )
            daemon = Daemon(settings, results, environ)
            running.append((daemon, asyncio.create_task(daemon.run())))
            return running[-1]

        ada = fake.add_bot("7001:token-ada", username="ada_bot", first_name="Ada")
        brann = fake.add_bot("7002:token-brann", username="brann_bot", first_name="Brann")
        sam, cleo = fake.add_user("Sam", username="samr"), fake.add_user("Cleo")
        group = fake.add_group("Writers' Room", members=[sam, cleo, ada, brann], supergroup=True)
        yield Scene(fake, brain, ada, brann, sam, cleo, group, launch, openai=openai, webhook_port=webhook_port)
        for daemon, task in running:
            daemon.stop()
            await asyncio.wait_for(task, 60)
