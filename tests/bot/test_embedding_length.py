"""The embedding model's vector length, learned at start; a model that does not answer then."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.config.character import Character, load_character
from bot.kernel.errors import ModelError
from bot.kernel.lifecycle import RuntimeState
from bot.kernel.models import ModelType
from bot.runtime import embedding_length
from bot.runtime.agent import AgentRuntime
from bot.store import Database


def character(tmp_path: Path) -> Character:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": "Ada", "bio": "x"}))
    return load_character(path, environ={}).raise_for_problems()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with Database(tmp_path / "t.db") as database:
        yield database


class Model:
    """An embedding model of ``length`` that fails its first ``failures`` requests."""

    def __init__(self, length: int, failures: int = 0) -> None:
        self.length = length
        self.failures = failures
        self.asked = 0

    async def __call__(self, runtime: Any, params: Any) -> list[float]:
        self.asked += 1
        if self.asked <= self.failures:
            raise ModelError("connection refused by 127.0.0.1:8080", provider="openai")
        return [0.5] * self.length


def runtime_with(tmp_path: Path, db: Database, model: Model) -> AgentRuntime:
    c = character(tmp_path)
    rt = AgentRuntime(c, db.for_agent(c.agent_id), environ={})
    rt.register_model(ModelType.TEXT_EMBEDDING, model, "fake")
    return rt


def length_task() -> asyncio.Task[Any]:
    (task,) = [t for t in asyncio.all_tasks() if t.get_name().endswith(":embedding length")]
    return task


async def test_a_model_of_any_length_sets_the_agents_length_at_start(tmp_path: Path, db: Database) -> None:
    model = Model(576)
    rt = runtime_with(tmp_path, db, model)
    await rt.start()
    assert await rt.store.get_embedding_dimension() == 576 and model.asked == 1
    await rt.close()


async def test_a_model_down_at_start_keeps_the_last_length_and_is_asked_again(
    tmp_path: Path, db: Database, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding_length, "RETRY_BASE_S", 0.001)
    model = Model(640, failures=2)
    rt = runtime_with(tmp_path, db, model)
    await rt.store.ensure_embedding_dimension(576)  # the length of the last start
    with caplog.at_level(logging.INFO, logger="bot.runtime.embedding_length"):
        await rt.start()
        assert rt.state is RuntimeState.RUNNING  # the character starts all the same
        assert await rt.store.get_embedding_dimension() == 576
        await length_task()
    assert await rt.store.get_embedding_dimension() == 640 and model.asked == 3
    said = [r.getMessage() for r in caplog.records if r.name == "bot.runtime.embedding_length"]
    assert said[0] == (
        "Ada: the embedding model did not say its vector length at start (connection refused by 127.0.0.1:8080); "
        "vectors keep the last known length (576) and it is asked again in the background"
    )
    assert said[-1] == "Ada: the embedding model answered; vectors are 640 long"
    await rt.close()


async def test_asking_again_gives_up_after_a_bounded_number_of_tries(
    tmp_path: Path, db: Database, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding_length, "RETRY_BASE_S", 0.001)
    model = Model(640, failures=1000)
    rt = runtime_with(tmp_path, db, model)
    with caplog.at_level(logging.WARNING, logger="bot.runtime.embedding_length"):
        await rt.start()
        await length_task()
    assert model.asked == 1 + embedding_length.RETRIES
    assert await rt.store.get_embedding_dimension() == 384  # the default: no length was ever known
    assert [r.getMessage() for r in caplog.records if r.name == "bot.runtime.embedding_length"][-1] == (
        f"Ada: the embedding model did not say its vector length in {embedding_length.RETRIES} tries "
        "(connection refused by 127.0.0.1:8080); restart the character to ask again"
    )
    await rt.close()
