"""Three real daemons (``troupe start`` subprocesses) on one PostgreSQL serving Discord characters on
the fake Discord: the owner of one is killed with SIGKILL while people write to both; every
message is answered once — those said while nobody was connected as the character too, read
back by the daemon that took it over."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections import Counter
from pathlib import Path

from bot.config.character import load_character

from ..fakes.discord_server import FakeDiscord, FakeMessage
from ..fakes.openai_server import FakeOpenAIServer
from ..platforms.discord.scene import character, plan, until
from .cluster_run import Spawned, lease_owners, start_daemon

LEASE_S = 2.0
MESSAGES = 24


async def test_kill_9_of_the_daemon_serving_a_discord_character_loses_no_message(
    tmp_path: Path, postgres_url: str
) -> None:
    short = Path(tempfile.mkdtemp(prefix="troupe-discord-", dir="/tmp"))  # AF_UNIX paths must be short
    daemons: list[Spawned] = []
    try:
        async with FakeDiscord() as fake, FakeOpenAIServer() as openai:
            openai.script_chat(lambda body: plan("Here I am."))
            sam = fake.add_user("sam", global_name="Sam")
            names = ("Ada", "Brann")
            bots = [fake.add_bot(f"token-{name.lower()}", name) for name in names]
            channel = fake.add_channel(fake.add_guild("Writers", owner=sam, members=bots), "general")
            leases = {}
            (tmp_path / "characters").mkdir()
            for name in names:
                path = character(tmp_path / "characters", name, f"token-{name.lower()}", fake.api_base)
                leases[name] = "agent:" + load_character(path).raise_for_problems().agent_id
            for n in range(3):
                daemons.append(await start_daemon(tmp_path, short, n, postgres_url, openai.url, lease_s=LEASE_S))
            await asyncio.gather(*(d.notify.wait("READY", timeout=60) for d in daemons))
            await until(lambda: len(lease_owners(postgres_url)) == 2, timeout=30)
            await until(lambda: all(fake.is_connected(bot) for bot in bots), timeout=60)  # both identified

            said: list[FakeMessage] = []

            def answers() -> Counter[int]:
                return Counter(m.reference.id for bot in bots for m in bot.sent if m.reference is not None)

            async def write(count: int) -> None:
                for _ in range(count):
                    bot = bots[len(said) % 2]
                    said.append(await fake.user_says(sam, channel, f"{bot.mention} question {len(said)}?"))
                    await asyncio.sleep(0.2)

            await write(MESSAGES // 2)
            # Held now (on a loaded machine a renewal may land a moment after the lease expired).
            owner = await until(lambda: lease_owners(postgres_url).get(leases["Ada"]), timeout=60)
            victim = next(d for d in daemons if f":{d.process.pid}:" in owner)
            victim.process.kill()  # kill -9 while people keep writing
            await victim.process.wait()
            await write(MESSAGES // 2)
            try:
                await until(lambda: all(answers()[m.id] >= 1 for m in said), timeout=60)
            except TimeoutError:
                missing = [(n, m.id, m.content) for n, m in enumerate(said) if not answers()[m.id]]
                raise AssertionError(f"unanswered {missing}; killed {owner}") from None
            await asyncio.sleep(1.5)  # a late second answer would show up now
            counts = [answers()[m.id] for m in said]
            assert counts == [1] * len(said), counts
            # It moved: held by another daemon (waited for, as a renewal may land late on a busy machine).
            await until(lambda: lease_owners(postgres_url).get(leases["Ada"]) not in (None, owner), timeout=60)
    finally:
        for spawned in daemons:
            if spawned.process.returncode is None:
                spawned.process.terminate()
        await asyncio.gather(*(asyncio.wait_for(d.process.wait(), 30) for d in daemons), return_exceptions=True)
        for spawned in daemons:
            spawned.transport.close()
        shutil.rmtree(short, ignore_errors=True)
