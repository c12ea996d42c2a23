"""End to end on Discord, the character's own reactions (REACT): an emoji on the message it
answers, a server's custom emoji too; once however often the message comes; a reaction Discord
refuses is logged and the reply planned with it still goes."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.kernel.types import Handling
from platforms.discord._mapping import discord_id

from ...fakes.discord_server import Overwrite, Permissions
from .scene import plan, until


def reacting(emoji: str, text: str = "", actions: str = "REACT") -> str:
    return (
        f"<response><thought>a reaction says it</thought><actions>{actions}</actions><text>{text}</text>"
        f"<emoji>{emoji}</emoji></response>"
    )


async def handled(rt: Any, native: int) -> str | None:
    """The outcome of message ``native`` once its handling has finished."""

    async def outcome() -> str | None:
        claim = await rt.store.get_message_handling(discord_id(rt.agent_id, native))
        return claim.outcome if claim is not None and claim.status is Handling.DONE else None

    async with asyncio.timeout(30):
        while (found := await outcome()) is None:
            await asyncio.sleep(0.02)
    return found


async def test_a_thank_you_gets_a_thumbs_up_on_it_once_however_often_it_comes(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [reacting("👍"), plan("Still here."), plan("Back now.")]
    asked = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} thanks!")
    assert await handled(s.runtime("Ada"), asked.id) == "acted"
    assert s.ada.reactions == [(asked, "👍")] and asked.reactions == {"👍": [s.ada.id]}
    assert s.ada.sent == []  # the reaction was the whole answer
    planning = next(p for p in s.brain.prompts if "Write the next turn of Ada" in p)
    assert "REACT: Put an emoji reaction on the message you answer" in planning  # offered, with its use

    # The gateway delivers it again; the next message is answered after it was passed over.
    await s.fake.redeliver_message(asked)
    await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} you there?")
    assert [m.content for m in await s.fake.wait_for_sent(s.ada, 1)] == ["Still here."]
    # A restart reads the channel back: the message was answered, so it is not answered again.
    await s.stop()
    later = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} are you back?")
    await s.start(with_brann=False)
    sent = await s.fake.wait_for_sent(s.ada, 2)
    assert sent[1].content == "Back now." and sent[1].reference is later
    assert s.ada.reactions == [(asked, "👍")] and asked.reactions == {"👍": [s.ada.id]}


async def test_a_servers_own_emoji_goes_on_the_message_by_name_and_id(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"].append(reacting("<:troupe:123456789012345678>", "Welcome aboard!", "REPLY,REACT"))
    asked = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} I just joined")
    assert [m.content for m in await s.fake.wait_for_sent(s.ada, 1)] == ["Welcome aboard!"]
    await until(lambda: s.ada.reactions)
    assert s.ada.reactions == [(asked, "troupe:123456789012345678")]


async def test_a_reaction_discord_refuses_is_logged_and_the_reply_still_goes(scene, caplog) -> None:
    s = scene
    await s.start(with_brann=False)
    s.general.overwrites.append(Overwrite(s.ada, deny=Permissions.ADD_REACTIONS))
    s.brain.plans["Ada"].append(reacting("👍", "Glad it helped!", "REACT,REPLY"))
    asked = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} that fixed it, thanks")
    assert [m.content for m in await s.fake.wait_for_sent(s.ada, 1)] == ["Glad it helped!"]
    assert await handled(s.runtime("Ada"), asked.id) == "replied"
    assert s.ada.reactions == []
    line = next(r.getMessage() for r in caplog.records if "could not react" in r.getMessage())
    assert f"could not react with 👍 in #general (channel {s.general.id}) to message {asked.id}" in line
    assert "403" in line and "Missing Permissions" in line
    assert "Traceback" not in caplog.text


async def test_a_reaction_waits_out_rate_limits_as_a_send_does(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.fake.fail_next("PUT", r"/reactions/[^/]+/@me$", status=429, retry_after=0.05, times=7, bot=s.ada)
    s.brain.plans["Ada"].append(reacting("🎉"))
    asked = await s.fake.user_says(s.sam, s.general, f"{s.ada.mention} we shipped it")
    assert await handled(s.runtime("Ada"), asked.id) == "acted"
    assert s.ada.reactions == [(asked, "🎉")] and s.ada.sent == []
    tries = [r for r in s.ada.requests if r.method == "PUT" and "/reactions/" in r.path]
    assert len(tries) == 8  # seven refused (discord.py's own five tries, then ours), the eighth taken
