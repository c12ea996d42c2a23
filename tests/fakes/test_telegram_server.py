"""The fake Bot API against the real python-telegram-bot."""

from __future__ import annotations

import pytest
from telegram import Bot
from telegram.error import BadRequest, InvalidToken, RetryAfter
from telegram.helpers import escape_markdown

import platforms.telegram  # noqa: F401  (opts in to PTB's timedelta durations, as troupe does)

from .telegram_server import FakeTelegram, markdown_v2_plain


def test_markdown_v2_is_checked_like_telegram() -> None:
    for text in ("Hello. World!", "a_b*c [x](y) {q} #h +1 -1 =2 |p| ~t~ >q", "\\ back", "`code_x` and ```py\nx = 1\n```"):
        assert markdown_v2_plain(escape_markdown(text, version=2)) == text
    assert markdown_v2_plain("*bold* _it_ __under__ ~gone~ ||hidden|| [link](https://x.y/a\\)b)") == (
        "bold it under gone hidden link")
    with pytest.raises(ValueError, match="Character '.' is reserved"):
        markdown_v2_plain("Hello.")
    with pytest.raises(ValueError, match="Can't find end of the entity starting at byte offset 0"):
        markdown_v2_plain("*open")


async def test_bot_methods_and_errors_through_ptb() -> None:
    async with FakeTelegram() as fake:
        ada = fake.add_bot("7001:token-ada", username="ada_bot", first_name="Ada")
        sam = fake.add_user("Sam")
        chat = fake.private(sam, ada)
        bot = Bot("7001:token-ada", base_url=f"{fake.url}/bot", base_file_url=f"{fake.url}/file/bot")
        async with bot:
            assert bot.username == "ada_bot"
            message = await bot.send_message(chat.id, "Hi\\!", parse_mode="MarkdownV2")
            assert message.text == "Hi!" and ada.sent[0]["raw"] == "Hi\\!"
            with pytest.raises(BadRequest, match="(?i)can't parse entities"):
                await bot.send_message(chat.id, "Hi!", parse_mode="MarkdownV2")
            with pytest.raises(BadRequest, match="(?i)message is too long"):
                await bot.send_message(chat.id, "x" * 4097)
            fake.fail_next("sendMessage", status=429, retry_after=3)
            with pytest.raises(RetryAfter):
                await bot.send_message(chat.id, "later")
            said = await fake.user_says(sam, chat, "see", document=("a.txt", b"data", "text/plain"))
            file = await bot.get_file(said["document"]["file_id"])
            assert bytes(await file.download_as_bytearray()) == b"data"
        with pytest.raises(InvalidToken):
            async with Bot("7009:nobody", base_url=f"{fake.url}/bot"):
                pass


async def test_updates_reach_member_bots_only_and_never_from_other_bots() -> None:
    async with FakeTelegram() as fake:
        ada = fake.add_bot("7001:a", username="ada_bot", first_name="Ada")
        brann = fake.add_bot("7002:b", username="brann_bot", first_name="Brann")
        sam = fake.add_user("Sam")
        group = fake.add_group("G", members=[sam, ada, brann])
        said = await fake.user_says(sam, group, "🎭 hi @ada_bot /help")
        assert said["entities"] == [{"type": "mention", "offset": 6, "length": 8},
                                    {"type": "bot_command", "offset": 15, "length": 5}]
        assert len(ada.updates) == len(brann.updates) == 1
        async with Bot("7001:a", base_url=f"{fake.url}/bot") as bot:
            await bot.send_message(group.id, "hello Brann")
        assert len(brann.updates) == 1  # Telegram never shows one bot's messages to another
