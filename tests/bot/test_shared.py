"""What one daemon's agents share is the daemon's: its secrets, and one object of each kind a
platform keeps across its agents (bot tokens in use, the Telegram relay)."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from bot.kernel.errors import ConfigError
from bot.kernel.redact import Redactor, SecretFilter, filtering, scrub_secret
from bot.runtime.agent import AgentRuntime
from bot.runtime.connections import TokenClaims
from bot.runtime.shared import Shared
from bot.store import Database

from .test_runtime import character, db  # noqa: F401 -- db: the fixture


class ChatTokens(TokenClaims):
    def __init__(self) -> None:
        super().__init__("CHAT_TOKEN", "make one bot per character")


def test_each_daemon_has_one_object_of_each_kind() -> None:
    first, second = Shared(), Shared()
    assert first.instance_of(ChatTokens) is first.instance_of(ChatTokens)
    assert first.instance_of(ChatTokens) is not second.instance_of(ChatTokens)


def test_a_bot_token_is_claimed_once_per_daemon_not_once_per_process() -> None:
    first, second = Shared(), Shared()
    first.instance_of(ChatTokens).claim("t1", "Ada")
    second.instance_of(ChatTokens).claim("t1", "Brann")  # another daemon's claims are its own
    with pytest.raises(ConfigError, match="Brann: uses the same CHAT_TOKEN as Ada"):
        first.instance_of(ChatTokens).claim("t1", "Brann")


async def test_a_runtime_adds_its_secrets_to_its_daemons_and_no_other(tmp_path: Path, db: Database) -> None:  # noqa: F811 - db is the fixture imported above
    shared = Shared()
    ada = character(tmp_path, settings={"secrets": {"OPENAI_API_KEY": "sk-ada-secret"}})
    AgentRuntime(ada, db.for_agent(ada.agent_id), environ={}, shared=shared)
    alone = AgentRuntime(ada, db.for_agent(ada.agent_id), environ={})
    assert "sk-ada-secret" in shared.secrets and "sk-ada-secret" in alone.shared.secrets
    assert alone.shared is not shared and "sk-ada-secret" not in Shared().secrets


def test_short_values_are_settings_not_secrets_and_longest_secrets_go_first() -> None:
    secrets = Redactor()
    for value in ("true", "sk-abcdef", "sk-abcdef-longer"):
        secrets.add(value)
    assert "true" not in secrets
    assert secrets.scrub("true: sk-abcdef-longer, sk-abcdef") == "true: <redacted>, <redacted>"


def test_one_minimum_decides_what_is_scrubbed_from_a_single_key() -> None:
    # A local server's key "x" would otherwise turn "maximum" into "ma<redacted>imum".
    refusal = "maximum context length exceeded"
    assert scrub_secret(refusal, "x") == refusal
    assert scrub_secret(refusal, "") == refusal
    assert scrub_secret("key sk-abcdef refused", "sk-abcdef") == "key <redacted> refused"


def test_secrets_are_filtered_only_while_their_owner_runs() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    logger = logging.getLogger("tests.shared")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        secrets = Redactor()
        secrets.add("sk-owned-secret")
        with filtering(secrets, logger):
            assert [type(f) for f in handler.filters] == [SecretFilter]
            logger.warning("during sk-owned-secret")
        assert handler.filters == []
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    assert out.getvalue() == "during <redacted>\n"


async def test_a_daemon_alone_with_its_sqlite_file_has_a_bus_that_reaches_nobody(db: Database) -> None:  # noqa: F811 - the fixture
    assert not Shared().bus.spans_daemons  # a runtime made alone
    bus = db.bus("daemon-1")
    assert not bus.spans_daemons  # the relay hands messages over in process, and posts nothing
    await bus.post("telegram:relay", "{}")
    assert await bus.recent("telegram:relay", 60) == []
