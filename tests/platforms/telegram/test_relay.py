"""What the Telegram relay posts for the other daemons: what their characters need to hear a
message, nothing about the people in the chat."""

from __future__ import annotations

import datetime

from telegram import Chat, Message, MessageEntity, PhotoSize, User

from platforms.telegram._mapping import album_memory_id, message_memory_id
from platforms.telegram._relay import _for_the_bus

ADA = User(7101, "Ada", True, username="ada_bot")
BRANN = User(7102, "Brann", True, username="brann_bot")
SAM = User(1000, "Sam", False, last_name="Gamgee", username="samr")
GROUP = Chat(-100123, "supergroup", title="Writers' Room")
WHEN = datetime.datetime(2026, 11, 26, 12, 0, tzinfo=datetime.UTC)


def test_a_relayed_message_keeps_who_it_answers_and_mentions_among_the_bots_and_nothing_of_people() -> None:
    asked = Message(1, WHEN, GROUP, from_user=SAM, text="my turnip secret is the frost")
    text = "Sam, Brann: noted."
    entities = (
        MessageEntity(MessageEntity.TEXT_MENTION, 0, 3, user=SAM),
        MessageEntity(MessageEntity.TEXT_MENTION, 5, 5, user=BRANN),
    )
    said = Message(2, WHEN, GROUP, from_user=ADA, text=text, entities=entities, reply_to_message=asked)
    posted = _for_the_bus(said)
    assert "turnip" not in str(posted) and "samr" not in str(posted) and "Gamgee" not in str(posted)
    heard = Message.de_json(posted, None)
    assert (heard.text, heard.from_user, heard.chat.id, heard.message_id) == (text, ADA, GROUP.id, 2)
    assert heard.reply_to_message is not None and heard.reply_to_message.message_id == 1
    assert heard.reply_to_message.from_user is None  # a person: not said
    assert [e.user for e in heard.entities] == [None, BRANN]  # Brann hears that it was mentioned


def test_a_relayed_answer_to_a_bot_says_which_bot() -> None:
    asked = Message(1, WHEN, GROUP, from_user=BRANN, text="Brann, at your service.")
    heard = Message.de_json(
        _for_the_bus(Message(2, WHEN, GROUP, from_user=ADA, text="Hi", reply_to_message=asked)), None
    )
    assert heard.reply_to_message is not None and heard.reply_to_message.from_user == BRANN
    assert heard.reply_to_message.text is None  # its words are Brann's own to remember


def test_a_relayed_answer_to_an_album_still_answers_the_album() -> None:
    photo = PhotoSize("f1", "u1", 90, 90)
    asked = Message(1, WHEN, GROUP, from_user=SAM, caption="which one?", photo=(photo,), media_group_id="g7")
    heard = Message.de_json(
        _for_the_bus(Message(3, WHEN, GROUP, from_user=ADA, text="The first.", reply_to_message=asked)), None
    )
    assert heard.reply_to_message is not None
    assert message_memory_id("agent", heard.reply_to_message) == album_memory_id("agent", GROUP.id, "g7")
    assert "which one" not in str(_for_the_bus(heard))
