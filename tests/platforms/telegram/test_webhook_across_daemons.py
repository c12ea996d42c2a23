"""Updates by webhook with two daemons on one PostgreSQL database: Telegram (here the fake) posts
to whichever daemon the reverse proxy picks; the one that is given an update keeps it and the
one serving the character answers it, once; when the character moves, the webhook stays and the
daemon it moves to answers."""

from __future__ import annotations

import asyncio

from bot.runtime.agent import AgentRuntime
from platforms.telegram._mapping import SOURCE

from ..discord.scene import plan, until
from .scene import character, free_port
from .test_relay_across_daemons import Cluster, cluster

__all__ = ["cluster"]


async def inbox_empty(runtime: AgentRuntime) -> None:
    async with asyncio.timeout(30):
        while await runtime.store.inbox_pending(SOURCE):
            await asyncio.sleep(0.02)


async def test_the_daemon_given_an_update_keeps_it_and_the_serving_one_answers(cluster: Cluster) -> None:
    c = cluster
    one_port, two_port = free_port(), free_port()
    # The proxy sends Ada's updates to the second daemon, which does not serve her.
    url = f"http://127.0.0.1:{two_port}/telegram/ada"
    character(c.workdir, "Ada", c.ada.token, c.fake.url, MAX_BOT_TURNS="2", TELEGRAM_WEBHOOK_URL=url)
    await c.hold("Brann")
    one = c.start(webhook_port=one_port)
    await c.serving(one, "Ada")
    two = c.start(webhook_port=two_port)
    await c.let_go("Brann")
    await c.serving(two, "Brann")
    assert c.ada.webhook is not None and c.ada.webhook.url == url

    c.brain.plans["Ada"] += [plan("Heard you through the other daemon."), plan("Still here, on the second.")]
    await c.fake.user_says(c.sam, c.group, "@ada_bot are you there?")
    sent = await c.fake.wait_for_sent(c.ada, 1, timeout=60)
    assert [m["text"] for m in sent] == ["Heard you through the other daemon."]
    assert [status for _, status in c.ada.webhook_posts] == [200]
    ada = next(rt for rt in one.runtimes if rt.character.name == "Ada")
    await inbox_empty(ada)
    await until(lambda: not any(rt.character.name == "Ada" for rt in two.runtimes))  # served by one only

    # The first daemon stops: Ada moves to the second, and the webhook was left in place for it.
    await c.stop(one)
    await c.serving(two, "Ada")
    assert c.ada.webhook is not None and c.ada.webhook.url == url
    await c.fake.user_says(c.sam, c.group, "@ada_bot and now?")
    sent = await c.fake.wait_for_sent(c.ada, 2, timeout=60)
    assert [m["text"] for m in sent][1] == "Still here, on the second."
    moved = next(rt for rt in two.runtimes if rt.character.name == "Ada")
    await inbox_empty(moved)
    assert len(c.ada.sent) == 2 and ada is not moved
