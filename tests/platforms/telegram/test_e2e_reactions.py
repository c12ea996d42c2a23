"""End to end on Telegram, the character's own reactions (REACT, setMessageReaction): an emoji on
the message it answers, once however often Telegram sends the update; only the emoji Telegram lets
bots use (❤️ is its ❤); a reaction refused is logged and the rest of the answer still goes."""

from __future__ import annotations

from .scene import plan, until


def reacting(emoji: str, text: str = "", actions: str = "REACT") -> str:
    return (
        f"<response><thought>a reaction says it</thought><actions>{actions}</actions><text>{text}</text>"
        f"<emoji>{emoji}</emoji></response>"
    )


async def test_a_thank_you_gets_a_thumbs_up_once_however_often_telegram_sends_it(scene) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [reacting("👍"), plan("Still here.")]
    chat = s.fake.private(s.sam, s.ada)
    asked = await s.fake.user_says(s.sam, chat, "thanks!")
    await until(lambda: s.ada.reactions)
    assert s.ada.reactions == [{"chat_id": chat.id, "message_id": asked["message_id"], "emoji": ["👍"]}]
    planning = next(p for p in s.brain.prompts if "Write the next turn of Ada" in p)
    assert "REACT: Put an emoji reaction on the message you answer" in planning  # offered, with its use
    first = s.ada.delivered[-1]["update_id"]
    s.fake.redeliver(s.ada, first)  # its confirmation never reached Telegram
    await until(lambda: not s.ada.updates and s.ada.polls >= 3)
    await s.fake.user_says(s.sam, chat, "you there?")
    assert [m["text"] for m in await s.fake.wait_for_sent(s.ada, 1)] == ["Still here."]
    assert len(s.ada.reactions) == 1  # the reaction was the whole answer, given once


async def test_a_heart_is_telegrams_heart_and_an_emoji_it_refuses_is_said_instead(scene, caplog) -> None:
    s = scene
    await s.start(with_brann=False)
    s.brain.plans["Ada"] += [reacting("❤️"), reacting("✅")]
    chat = s.fake.private(s.sam, s.ada)
    await s.fake.user_says(s.sam, chat, "you're the best")
    await until(lambda: s.ada.reactions)
    assert s.ada.reactions[0]["emoji"] == ["❤"]  # Telegram's spelling, without the selector
    asked = await s.fake.user_says(s.sam, chat, "done, merged")
    sent = await s.fake.wait_for_sent(s.ada, 1)
    assert sent[0]["text"] == "✅" and sent[0]["reply_to"] == asked["message_id"]
    # Refused before asking Telegram: one request only, the heart's.
    assert len(s.ada.reactions) == 1 and [m for m, _ in s.ada.requests].count("setMessageReaction") == 1
    line = next(r.getMessage() for r in caplog.records if "could not react" in r.getMessage())
    assert f"could not react with ✅ in a private chat (chat {chat.id}) to message {asked['message_id']}" in line
    assert "only with its own set of emoji" in line and "Traceback" not in caplog.text


async def test_a_reaction_telegram_refuses_is_logged_and_the_reply_still_goes(scene, caplog) -> None:
    s = scene
    await s.start(with_brann=False)
    s.fake.fail_next("setMessageReaction", status=400, description="Bad Request: message to react not found")
    s.brain.plans["Ada"].append(reacting("👍", "Glad it helped!", "REACT,REPLY"))
    chat = s.fake.private(s.sam, s.ada)
    asked = await s.fake.user_says(s.sam, chat, "that fixed it, thanks")
    sent = await s.fake.wait_for_sent(s.ada, 1)
    assert sent[0]["text"] == "Glad it helped!" and s.ada.reactions == []
    line = next(r.getMessage() for r in caplog.records if "could not react" in r.getMessage())
    assert f"could not react with 👍 in a private chat (chat {chat.id}) to message {asked['message_id']}" in line
    assert "Message to react not found" in line and "Traceback" not in caplog.text
