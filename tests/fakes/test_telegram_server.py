"""The fake Bot API against the real python-telegram-bot."""

from __future__ import annotations

from datetime import timedelta

import pytest
from telegram import (
    Bot,
    BotCommand,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    InputMediaPhoto,
    Message,
    ReplyKeyboardMarkup,
    ReplyKeyboardRemove,
)
from telegram.error import BadRequest, Forbidden, InvalidToken, RetryAfter
from telegram.helpers import escape_markdown

import platforms.telegram  # noqa: F401  (opts in to PTB's timedelta durations, as troupe does)

from .openai_server import make_png
from .telegram_server import FakeBot, FakeChat, FakeTelegram, FakeUser, markdown_v2_plain


def test_markdown_v2_is_checked_like_telegram() -> None:
    for text in (
        "Hello. World!",
        "a_b*c [x](y) {q} #h +1 -1 =2 |p| ~t~ >q",
        "\\ back",
        "`code_x` and ```py\nx = 1\n```",
    ):
        assert markdown_v2_plain(escape_markdown(text, version=2)) == text
    assert markdown_v2_plain("*bold* _it_ __under__ ~gone~ ||hidden|| [link](https://x.y/a\\)b)") == (
        "bold it under gone hidden link"
    )
    with pytest.raises(ValueError, match="Character '.' is reserved"):
        markdown_v2_plain("Hello.")
    with pytest.raises(ValueError, match="Can't find end of the entity starting at byte offset 0"):
        markdown_v2_plain("*open")


def ada_and_sam(fake: FakeTelegram) -> tuple[FakeBot, FakeUser, FakeChat, Bot]:
    """Ada's bot, Sam, their private chat, and a PTB Bot of Ada's token against the fake."""
    ada = fake.add_bot("7001:token-ada", username="ada_bot", first_name="Ada")
    sam = fake.add_user("Sam")
    bot = Bot("7001:token-ada", base_url=f"{fake.url}/bot", base_file_url=f"{fake.url}/file/bot")
    return ada, sam, fake.private(sam, ada), bot


async def test_bot_methods_and_errors_through_ptb() -> None:
    async with FakeTelegram() as fake:
        ada, sam, chat, bot = ada_and_sam(fake)
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
        assert said["entities"] == [
            {"type": "mention", "offset": 6, "length": 8},
            {"type": "bot_command", "offset": 15, "length": 5},
        ]
        assert len(ada.updates) == len(brann.updates) == 1
        async with Bot("7001:a", base_url=f"{fake.url}/bot") as bot:
            await bot.send_message(group.id, "hello Brann")
        assert len(brann.updates) == 1  # Telegram never shows one bot's messages to another


async def test_a_bot_added_with_its_announcement_and_leaving_through_ptb() -> None:
    async with FakeTelegram() as fake:
        ada = fake.add_bot("7001:a", username="ada_bot", first_name="Ada")
        brann = fake.add_bot("7002:b", username="brann_bot", first_name="Brann")
        sam = fake.add_user("Sam")
        group = fake.add_group("G", members=[sam, brann])
        await fake.bot_added(group, ada, by=sam, announce=True)
        change, announced = ada.updates
        assert change["my_chat_member"]["new_chat_member"]["status"] == "member"
        assert announced["message"]["new_chat_members"][0]["id"] == ada.id
        assert announced["message"]["from"]["id"] == sam.id and len(brann.updates) == 1
        async with Bot("7001:a", base_url=f"{fake.url}/bot") as bot:
            assert await bot.leave_chat(group.id) is True
            assert (await bot.get_chat_member(group.id, ada.id)).status == "left"
            with pytest.raises(Forbidden, match="bot is not a member of the supergroup chat"):
                await bot.leave_chat(group.id)
            with pytest.raises(BadRequest, match="can't be changed in private chats"):
                await bot.leave_chat(fake.private(sam, ada).id)
        assert ada.left == [group.id] and ada not in group.members
        left = ada.updates[-1]["my_chat_member"]
        assert (left["old_chat_member"]["status"], left["new_chat_member"]["status"]) == ("member", "left")
        assert brann.updates[-1]["message"]["left_chat_member"]["id"] == ada.id


async def test_voice_notes_both_ways_through_ptb() -> None:
    from bot.media.audio import PcmFormat, ogg_opus

    note = ogg_opus(b"\x00\x10" * 48000, PcmFormat(48000, 1))
    async with FakeTelegram() as fake:
        ada = fake.add_bot("7001:token-ada", username="ada_bot", first_name="Ada")
        sam = fake.add_user("Sam")
        chat = fake.private(sam, ada)
        said = await fake.user_says(sam, chat, voice=(note, 1))
        assert said["voice"]["duration"] == 1 and said["voice"]["mime_type"] == "audio/ogg"
        bot = Bot("7001:token-ada", base_url=f"{fake.url}/bot", base_file_url=f"{fake.url}/file/bot")
        async with bot:
            file = await bot.get_file(said["voice"]["file_id"])
            assert bytes(await file.download_as_bytearray()) == note
            sent = await bot.send_voice(chat.id, note, duration=1, reply_to_message_id=said["message_id"])
            assert sent.voice is not None and isinstance(sent.voice.duration, timedelta)
            assert sent.voice.duration.total_seconds() == 1
            entry = ada.sent[-1]
            assert (entry["kind"], entry["voice"], entry["reply_to"]) == ("voice", note, said["message_id"])
            again = await bot.get_file(sent.voice.file_id)
            assert bytes(await again.download_as_bytearray()) == note
            with pytest.raises(BadRequest, match="(?i)wrong file type: a voice note must be an .ogg file"):
                await bot.send_voice(chat.id, b"ID3\x04 an mp3")
            with pytest.raises(BadRequest, match="(?i)wrong file type"):
                await bot.send_voice(chat.id, b"OggS but Vorbis inside")
        assert len(ada.sent) == 1
        old_form = await fake.user_says(sam, chat, "old form", voice=("v.ogg", note, "audio/ogg"))
        assert old_form["voice"]["duration"] == 2 and old_form["caption"] == "old form"


async def test_failures_can_wait_for_their_turn_and_repeat() -> None:
    async with FakeTelegram() as fake:
        ada = fake.add_bot("7001:token-ada", username="ada_bot", first_name="Ada")
        chat = fake.private(fake.add_user("Sam"), ada)
        fake.fail_next("sendMessage", status=429, retry_after=6, times=2, after=1)
        async with Bot(ada.token, base_url=f"{fake.url}/bot") as bot:
            await bot.send_message(chat.id, "first")
            for _ in range(2):
                with pytest.raises(RetryAfter) as caught:
                    await bot.send_message(chat.id, "second")
                assert caught.value.retry_after == timedelta(seconds=6)
            await bot.send_message(chat.id, "second")
        assert [m["text"] for m in ada.sent] == ["first", "second"]


async def test_inline_keyboards_go_out_and_a_press_comes_back_to_the_bot_that_sent_them() -> None:
    keyboard = InlineKeyboardMarkup(
        [[InlineKeyboardButton("Yes", callback_data="y"), InlineKeyboardButton("Docs", url="https://example.com")]]
    )
    async with FakeTelegram() as fake:
        ada = fake.add_bot("7001:a", username="ada_bot", first_name="Ada")
        brann = fake.add_bot("7002:b", username="brann_bot", first_name="Brann")
        sam = fake.add_user("Sam")
        group = fake.add_group("G", members=[sam, ada, brann])
        async with Bot("7001:a", base_url=f"{fake.url}/bot") as bot:
            sent = await bot.send_message(group.id, "Agreed?", reply_markup=keyboard)
            assert sent.reply_markup == keyboard and ada.sent[-1]["reply_markup"]["inline_keyboard"][0][0] == {
                "text": "Yes",
                "callback_data": "y",
            }
            with pytest.raises(BadRequest, match="(?i)button_data_invalid"):
                too_long = InlineKeyboardMarkup([[InlineKeyboardButton("Long", callback_data="x" * 65)]])
                await bot.send_message(group.id, "No", reply_markup=too_long)
            query = await fake.user_presses(sam, ada.sent[-1]["message"], "y")
            assert brann.updates == [] and len(ada.updates) == 1
            (update,) = await bot.get_updates()
            assert update.callback_query is not None and update.callback_query.data == "y"
            pressed_on = update.callback_query.message
            assert isinstance(pressed_on, Message) and pressed_on.reply_markup == keyboard
            assert await bot.answer_callback_query(query)
            assert [a[0] for a in fake.answered(query)] == [query] and fake.ack_delay(query) >= 0
            with pytest.raises(BadRequest, match="(?i)query is too old"):
                await bot.answer_callback_query(query)  # once only
            with pytest.raises(BadRequest, match="(?i)query is too old"):
                await bot.answer_callback_query("404")
            fake.callback_expiry = 0.0
            late = await fake.user_presses(sam, ada.sent[-1]["message"], "y", inaccessible=True)
            with pytest.raises(BadRequest, match="(?i)query is too old"):
                await bot.answer_callback_query(late)
            inline = await fake.user_presses(sam, ada.sent[-1]["message"], "y", inline=True)
            updates = await bot.get_updates(offset=update.update_id + 1)
            old, by_inline = (u.callback_query for u in updates)
            assert old is not None and old.message is not None and old.message.date.timestamp() == 0
            assert by_inline is not None and by_inline.message is None and by_inline.inline_message_id
            assert by_inline.id == inline


async def test_albums_both_ways_and_the_command_menu_through_ptb() -> None:
    async with FakeTelegram() as fake:
        ada = fake.add_bot("7001:token-ada", username="ada_bot", first_name="Ada")
        sam = fake.add_user("Sam")
        chat = fake.private(sam, ada)
        parts = await fake.user_sends_album(
            sam, chat, [("photo", ("a.png", make_png())), ("document", ("b.txt", b"x"))], "two"
        )
        assert len({p["media_group_id"] for p in parts}) == 1 and [p.get("caption") for p in parts] == ["two", None]
        assert [u["message"]["message_id"] for u in ada.updates] == [p["message_id"] for p in parts]
        bot = Bot("7001:token-ada", base_url=f"{fake.url}/bot", base_file_url=f"{fake.url}/file/bot")
        async with bot:
            sent = await bot.send_media_group(
                chat.id,
                [InputMediaPhoto(make_png(), caption="*both*", parse_mode="MarkdownV2"), InputMediaPhoto(make_png())],
            )
            assert len({m.media_group_id for m in sent}) == 1 and sent[0].caption == "both"
            assert [(m["kind"], m["text"]) for m in ada.sent] == [("photo", "both"), ("photo", "")]
            with pytest.raises(BadRequest, match="must be 2 to 10"):
                await bot.send_media_group(chat.id, [InputMediaPhoto(make_png())] * 11)
            with pytest.raises(BadRequest, match="(?i)image_process_failed"):
                await bot.send_media_group(chat.id, [InputMediaPhoto(make_png()), InputMediaPhoto(b"not a picture")])
            assert await bot.set_my_commands([BotCommand("start", "Say hello")])
            assert ada.commands == [{"command": "start", "description": "Say hello"}]
            with pytest.raises(BadRequest, match="(?i)bot_command_invalid"):
                await bot.set_my_commands([BotCommand("Not A Command", "x")])


async def test_reactions_are_one_emoji_of_the_bot_api_set_on_a_message_the_chat_has() -> None:
    async with FakeTelegram() as fake:
        ada = fake.add_bot("7001:token-ada", username="ada_bot", first_name="Ada")
        sam = fake.add_user("Sam")
        chat = fake.private(sam, ada)
        said = await fake.user_says(sam, chat, "thanks!")
        bot = Bot("7001:token-ada", base_url=f"{fake.url}/bot")
        async with bot:
            assert await bot.set_message_reaction(chat.id, said["message_id"], "👍")
            with pytest.raises(BadRequest, match="(?i)REACTION_INVALID"):
                await bot.set_message_reaction(chat.id, said["message_id"], "✅")
            with pytest.raises(BadRequest, match="(?i)REACTIONS_TOO_MANY"):
                await bot.set_message_reaction(chat.id, said["message_id"], ["👍", "🔥"])
            with pytest.raises(BadRequest, match="(?i)message to react not found"):
                await bot.set_message_reaction(chat.id, 999, "👍")
        assert ada.reactions == [{"chat_id": chat.id, "message_id": said["message_id"], "emoji": ["👍"]}]


async def test_edits_and_reply_keyboards_are_taken_and_refused_as_telegram_does() -> None:
    async with FakeTelegram() as fake:
        ada, sam, chat, bot = ada_and_sam(fake)
        async with bot:
            keys = InlineKeyboardMarkup([[InlineKeyboardButton("Yes", callback_data="y")]])
            asked = await bot.send_message(chat.id, "Go?", reply_markup=keys)
            edited = await bot.edit_message_text("Go?\n\n✓ chosen: Yes", chat.id, asked.message_id)
            assert isinstance(edited, Message) and edited.text == "Go?\n\n✓ chosen: Yes"
            assert edited.reply_markup is None  # an edit naming no keyboard removes it
            assert [(e["kind"], e["text"]) for e in ada.edits] == [("text", "Go?\n\n✓ chosen: Yes")]
            with pytest.raises(BadRequest, match="(?i)message is not modified"):
                await bot.edit_message_text("Go?\n\n✓ chosen: Yes", chat.id, asked.message_id)
            with pytest.raises(BadRequest, match="(?i)message to edit not found"):
                await bot.edit_message_reply_markup(chat.id, 999)
            mine = await fake.user_says(sam, chat, "mine")
            with pytest.raises(BadRequest, match="(?i)message can't be edited"):
                await bot.edit_message_text("theirs", chat.id, mine["message_id"])
            with pytest.raises(BadRequest, match="(?i)no caption"):
                await bot.edit_message_caption(chat.id, asked.message_id, caption="x")

            offered = ReplyKeyboardMarkup([["Tea", "Coffee"]], one_time_keyboard=True, resize_keyboard=True)
            tea = await bot.send_message(chat.id, "Tea or coffee?", reply_markup=offered)
            assert tea.reply_markup is None and chat.keyboard is not None  # the chat's, not the message's
            with pytest.raises(ValueError, match="offers 'Milk'"):
                await fake.user_taps(sam, chat, "Milk")
            tapped = await fake.user_taps(sam, chat, "Coffee")
            assert tapped["text"] == "Coffee" and chat.keyboard is None  # one time
            await bot.send_message(chat.id, "Again?", reply_markup=ReplyKeyboardMarkup([["A"]]))
            await bot.send_message(chat.id, "Never mind.", reply_markup=ReplyKeyboardRemove())
            assert chat.keyboard is None
            with pytest.raises(BadRequest, match="(?i)inline keyboard expected"):
                await bot.edit_message_reply_markup(chat.id, tea.message_id, reply_markup=offered)
