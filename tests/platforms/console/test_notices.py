"""Problems shown as lines of a terminal conversation keep the conversation's secrets out."""

from __future__ import annotations

import logging

from bot.kernel.redact import Redactor, filtering
from platforms.console import ConversationLog


def test_an_error_shown_in_the_conversation_has_its_secrets_scrubbed() -> None:
    shown: list[str] = []
    notices = ConversationLog(shown.append, agent="Iris")
    logger = logging.getLogger("tests.notices")
    logger.addHandler(notices)
    logger.propagate = False
    secrets = Redactor()
    secrets.add("sk-chat-secret")
    try:
        with filtering(secrets, logger):
            try:
                raise RuntimeError("Iris: the key sk-chat-secret was refused")
            except RuntimeError:
                logger.exception("could not answer")  # the line shows the error, not the message
            logger.warning("could not answer: %s", RuntimeError("bad sk-chat-secret"))
    finally:
        logger.removeHandler(notices)
        logger.propagate = True
    assert shown == ["the key <redacted> was refused", "could not answer: bad <redacted>"]
