"""Sending to Telegram against a stand-in bot: MarkdownV2 with a plain fallback, replies,
topics, flood control and transient errors."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import pytest
import telegram
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TimedOut

from bot.kernel import backoff
from bot.kernel.errors import PartlySent
from platforms.telegram._outbound import SendGaveUp, send_text, send_voice


class Bot:
    """Fails its calls with ``failures`` in turn (``None``: that call works), then works."""

    def __init__(self, failures: Iterable[BaseException | None] = ()) -> None:
        self.calls: list[dict[str, Any]] = []
        self.failures = list(failures)

    async def send_message(self, **kwargs: Any) -> str:
        self.calls.append(kwargs)
        failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            raise failure
        return f"message {len(self.calls)}"


def as_bot(stand_in: Bot | VoiceBot) -> telegram.Bot:
    """A stand-in where the send functions take a telegram.Bot: it has the one method they call."""
    return stand_in  # type: ignore[return-value]  # duck-typed on purpose


@pytest.fixture(autouse=True)
def fast(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Sleeping takes no time, but the send deadline's clock moves on by what was slept."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    monkeypatch.setattr(backoff, "_now", lambda: 1000.0 + sum(slept))
    return slept


async def test_markdown_is_converted_and_the_first_piece_quotes_the_message_in_its_topic() -> None:
    bot = Bot()
    text = "**Done.** " + "x" * 4200
    sent = await send_text(as_bot(bot), 42, text, reply_to=7, thread_id=3)
    assert sent == ["message 1", "message 2"]
    first, second = bot.calls
    assert first["parse_mode"] == "MarkdownV2" and first["text"].startswith("*Done\\.*")
    assert first["reply_parameters"].message_id == 7 and first["reply_parameters"].allow_sending_without_reply
    assert "reply_parameters" not in second and {c["message_thread_id"] for c in bot.calls} == {3}


async def test_a_piece_telegram_cannot_parse_goes_again_as_plain_text() -> None:
    bot = Bot([BadRequest("Can't parse entities: can't find end of bold entity at byte offset 3")])
    await send_text(as_bot(bot), 42, "**odd* text.")
    formatted, plain = bot.calls
    assert formatted["parse_mode"] == "MarkdownV2"
    assert "parse_mode" not in plain and plain["text"] == "**odd* text."


async def test_other_bad_requests_and_forbidden_are_not_retried() -> None:
    for error in (BadRequest("Bad Request: chat not found"), Forbidden("Forbidden: bot was blocked by the user")):
        bot = Bot([error])
        with pytest.raises(type(error)):
            await send_text(as_bot(bot), 42, "hi")
        assert len(bot.calls) == 1


async def test_flood_control_is_waited_out_and_network_errors_retried(fast: list[float]) -> None:
    bot = Bot([RetryAfter(3), TimedOut(), NetworkError("connection reset")])
    assert await send_text(as_bot(bot), 42, "hi") == ["message 4"]
    flood, first, second = fast
    assert flood == 3.0 and 0.5 <= first <= 1.0 and 1.0 <= second <= 2.0  # back-off doubles, with jitter


async def test_flood_control_is_waited_out_as_often_as_it_comes_within_the_deadline(fast: list[float]) -> None:
    bot = Bot([RetryAfter(6)] * 9)
    assert await send_text(as_bot(bot), 42, "hi", deadline_s=60) == ["message 10"]
    assert fast == [6.0] * 9


async def test_a_flood_wait_past_the_deadline_gives_up_at_once_and_says_why(fast: list[float]) -> None:
    bot = Bot([RetryAfter(6), RetryAfter(6)])
    with pytest.raises(
        SendGaveUp,
        match=r"flood control asked to wait 6 s, past the 10 s send deadline "
        r"\(TELEGRAM_SEND_DEADLINE_S\)",
    ):
        await send_text(as_bot(bot), 42, "hi", deadline_s=10)
    assert fast == [6.0] and len(bot.calls) == 2  # the second wait would have ended after 12 s


async def test_the_deadline_covers_all_pieces_of_a_long_message(fast: list[float]) -> None:
    bot = Bot([RetryAfter(6), None, RetryAfter(6)])  # the first piece goes after 6 s, the second meets a wait too
    with pytest.raises(PartlySent, match="past the 10 s send deadline"):
        await send_text(as_bot(bot), 42, "x" * 5000, deadline_s=10)
    assert len(bot.calls) == 3 and fast == [6.0]


async def test_network_errors_are_given_up_after_a_few_tries() -> None:
    with pytest.raises(
        SendGaveUp,
        match=r"the network failed 4 time\(s\) within the 60 s send deadline "
        r"\(last: NetworkError\)",
    ):
        await send_text(as_bot(Bot([NetworkError("down")] * 10)), 42, "hi")


async def test_text_no_encoder_takes_is_repaired_and_an_encoding_error_is_not_retried() -> None:
    bot = Bot()
    await send_text(as_bot(bot), 42, "odd \ud800 text")
    assert bot.calls[0]["text"] == "odd \ufffd text"
    unsendable = NetworkError("Unknown error in HTTP implementation: UnicodeEncodeError(...)")
    unsendable.__cause__ = UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
    bot = Bot([unsendable])
    with pytest.raises(NetworkError, match="UnicodeEncodeError"):
        await send_text(as_bot(bot), 42, "hi")
    assert len(bot.calls) == 1


class VoiceBot:
    def __init__(self, failures: Iterable[BaseException] = ()) -> None:
        self.calls: list[dict[str, Any]] = []
        self.failures = list(failures)

    async def send_voice(self, **kwargs: Any) -> str:
        self.calls.append(kwargs)
        if self.failures:
            raise self.failures.pop(0)
        return f"voice {len(self.calls)}"


async def test_a_voice_note_quotes_the_message_in_its_topic_and_is_retried_like_text(fast: list[float]) -> None:
    bot = VoiceBot([RetryAfter(2), TimedOut()])
    assert await send_voice(as_bot(bot), 42, b"OggS...", duration=3, reply_to=7, thread_id=5) == "voice 3"
    call = bot.calls[-1]
    assert (call["chat_id"], call["voice"], call["duration"], call["message_thread_id"]) == (42, b"OggS...", 3, 5)
    assert call["reply_parameters"].message_id == 7 and call["reply_parameters"].allow_sending_without_reply
    assert fast[0] == 2.0
    with pytest.raises(BadRequest):
        await send_voice(as_bot(VoiceBot([BadRequest("Bad Request: wrong file type")])), 42, b"ID3")


async def test_a_message_stopped_part_way_says_which_pieces_went_out() -> None:
    bot = Bot([None, RetryAfter(600)])
    with pytest.raises(
        PartlySent,
        match=r"only 1 of 2 parts went out: Telegram's flood control asked to wait "
        r"600 s",
    ) as caught:
        await send_text(as_bot(bot), 42, "x" * 5000)
    assert caught.value.sent == ["message 1"] and isinstance(caught.value.__cause__, SendGaveUp)
    with pytest.raises(SendGaveUp):  # nothing went out: the error itself
        await send_text(as_bot(Bot([RetryAfter(600)])), 42, "x" * 5000)


async def test_a_part_telegram_finds_too_long_is_halved_until_it_fits_and_nothing_is_dropped() -> None:
    # As if Telegram counted each part longer than the split did: it refuses anything over 1,000.
    class Strict(Bot):
        async def send_message(self, **kwargs: Any) -> str:
            self.calls.append(kwargs)
            if len(kwargs["text"]) > 1000:
                raise BadRequest("Message is too long")
            return f"message {len(self.calls)}"

    bot = Strict()
    text = "word " * 700  # 3,500 characters, one part by the split
    markup = telegram.InlineKeyboardMarkup([[telegram.InlineKeyboardButton("ok", callback_data="ok")]])
    sent = await send_text(as_bot(bot), 1, text, reply_to=7, markup=markup)
    went = [c for c in bot.calls if len(c["text"]) <= 1000]
    assert len(sent) == len(went) >= 4
    assert " ".join(c["text"] for c in went).split() == text.split()
    assert "reply_parameters" in went[0] and all("reply_parameters" not in c for c in went[1:])
    assert went[-1]["reply_markup"] is markup and all("reply_markup" not in c for c in went[:-1])
