"""The KNOWLEDGE provider, and a character answering from its knowledge through the pipeline."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid

import pytest

from bot.config.character import load_character
from bot.kernel.content import Content
from bot.kernel.errors import PluginLoadError
from bot.kernel.models import ModelType
from bot.kernel.types import ChannelType, Memory
from bot.runtime.agent import AgentRuntime
from bot.runtime.components import MESSAGE_VECTORS
from plugins.core._embedding import MessageEmbeddings
from tests.plugins.core.harness import harness, plan

from .conftest import Agents, big_document

__all__ = ["harness"]  # the fixture, used below


def message(rt: AgentRuntime, text: str) -> Memory:
    return Memory(id=str(uuid.uuid4()), entity_id=rt.agent_id, room_id=rt.agent_id, content=Content(text=text))


async def knowledge_of(rt: AgentRuntime, text: str) -> str:
    state = await rt.compose_state(message(rt, text))
    return state.providers["KNOWLEDGE"].text


async def test_the_best_fragments_come_with_the_instruction_to_use_them(agents: Agents) -> None:
    (agents.dir / "hours.md").write_text("The shop opens at nine and closes at five.")
    rt = await agents.start(knowledge=["Ada's shop sells honey.", {"path": "hours.md"}])
    state = await rt.compose_state(message(rt, "When does the shop open?"))
    result = state.providers["KNOWLEDGE"]
    lines = result.text.splitlines()
    assert lines[0] == "# Knowledge"
    assert "Answer from it when it applies" in lines[1] and "Ada says they do not know" in lines[1]
    assert lines[2:4] == ["- [hours.md]", "  The shop opens at nine and closes at five."]
    assert result.values["knowledge"] == result.text
    first = result.data["knowledge"][0]
    assert first["content"]["text"] == "[hours.md]\nThe shop opens at nine and closes at five."
    assert first["similarity"] is not None and first["metadata"]["title"] == "hours.md"
    assert "# Knowledge" in state.text  # in the default state: not dynamic


async def test_a_message_during_the_first_sync_gets_the_knowledge(agents: Agents) -> None:
    (agents.dir / "hives.md").write_text(big_document())
    assert 45_000 < (agents.dir / "hives.md").stat().st_size < 60_000
    agents.embedder.batch_latency = 0.5  # a slow embedding service: the first sync takes a while
    rt = await agents.start(knowledge=[{"path": "hives.md"}], wait=False)
    service = rt.get_service("knowledge")
    assert service.last is None  # the first sync is still running
    text = await knowledge_of(rt, "What is the queen of hive 137 named?")
    assert "The queen of hive 137 is named Marigold." in text
    assert service.last is not None and service.last.embedded > 20  # it waited for the sync


async def test_a_sync_longer_than_the_bound_answers_from_what_is_stored_and_says_so(
    agents: Agents, caplog: pytest.LogCaptureFixture
) -> None:
    (agents.dir / "hives.md").write_text(big_document())
    agents.embedder.batch_latency = 30.0  # the embedding service hangs
    caplog.set_level(logging.INFO, logger="plugins.knowledge")
    rt = await agents.start(knowledge=[{"path": "hives.md"}], settings={"KNOWLEDGE_SYNC_WAIT_S": "0.5"}, wait=False)
    started = time.monotonic()
    text = await knowledge_of(rt, "What is the queen of hive 137 named?")
    assert time.monotonic() - started < 5
    assert "The queen of hive 137 is named Marigold." in text  # stored, found by its words
    assert rt.get_service("knowledge").last is None  # the sync goes on
    assert "Ada: knowledge: still loading after 0.5 s; answering from what is stored so far" in caplog.text


async def test_nothing_to_search_is_not_kept_while_a_sync_runs(agents: Agents, monkeypatch: pytest.MonkeyPatch) -> None:
    from plugins.knowledge import _files, _ingest
    from plugins.knowledge._service import SyncState

    listed = threading.Event()
    real_scan = _files.scan
    monkeypatch.setattr(_ingest, "scan", lambda roots: (listed.wait(10), real_scan(roots))[1])
    agents.embedder.batch_latency = 30.0  # stored at once, embedded never (in this test)
    rt = await agents.start(knowledge=["Bees make honey."], wait=False)
    service = rt.get_service("knowledge")
    assert service.state is SyncState.SYNCING
    assert not await service.has_knowledge()  # the sync has not stored anything yet
    listed.set()
    async with asyncio.timeout(60):
        while not await rt.store.has_knowledge():
            await asyncio.sleep(0.01)
    assert service.state is SyncState.SYNCING and await service.has_knowledge()


async def test_nothing_relevant_says_so_and_asks_for_i_do_not_know(agents: Agents) -> None:
    rt = await agents.start(knowledge=["Ada's shop sells honey."])
    text = await knowledge_of(rt, "Who won the football world cup?")
    assert text == (
        "# Knowledge\nNothing in Ada's documents or notes matches this message. If it asks for facts "
        "Ada would need to look up, Ada says plainly that they do not know rather than guessing or "
        "making something up."
    )


async def test_a_character_without_knowledge_gets_no_section(agents: Agents) -> None:
    rt = await agents.start(knowledge=[])
    state = await rt.compose_state(message(rt, "When does the shop open?"))
    assert state.providers["KNOWLEDGE"].text == "" and "# Knowledge" not in state.text
    assert agents.embedder.requests == 0  # no knowledge: the message's vector is not even waited for


async def test_the_budget_limits_the_text(agents: Agents) -> None:
    facts = [f"Honey jar {i} holds {i * 10} grams of clover honey from the north hives." for i in range(20)]
    rt = await agents.start(knowledge=facts, settings={"KNOWLEDGE_MAX_TOKENS": "60", "KNOWLEDGE_MAX_FRAGMENTS": "9"})
    result = (await rt.compose_state(message(rt, "clover honey jar grams"))).providers["KNOWLEDGE"]
    assert 1 <= len(result.data["knowledge"]) <= 3
    assert sum(len(f["content"]["text"]) for f in result.data["knowledge"]) <= 60 * 3.5


async def test_keywords_alone_without_an_embedding_model(agents: Agents) -> None:
    rt = await agents.start(
        knowledge=["The shop opens at nine.", "Bees dislike the smell of bananas."], embedding=False
    )
    result = (await rt.compose_state(message(rt, "What do bees dislike?"))).providers["KNOWLEDGE"]
    assert [f["content"]["text"] for f in result.data["knowledge"]] == ["Bees dislike the smell of bananas."]
    assert result.data["knowledge"][0]["similarity"] is None


async def test_dynamic_knowledge_comes_only_when_asked_for(agents: Agents) -> None:
    rt = await agents.start(knowledge=["The shop opens at nine."], settings={"KNOWLEDGE_PROVIDER_DYNAMIC": "true"})
    state = await rt.compose_state(message(rt, "When does the shop open?"))
    assert "KNOWLEDGE" not in state.providers
    state = await rt.compose_state(message(rt, "When does the shop open?"), ["KNOWLEDGE"], skip_cache=True)
    assert "The shop opens at nine." in state.providers["KNOWLEDGE"].text


async def test_a_bad_setting_stops_the_agent_with_a_clear_message(agents: Agents) -> None:
    path = agents.dir / "bad.json"
    path.write_text('{"name": "Bad", "bio": "x", "settings": {"KNOWLEDGE_CHUNK_TOKENS": "tiny"}}')
    character = load_character(path).raise_for_problems()
    rt = AgentRuntime(character, agents.db.for_agent(character.agent_id), environ={})
    with pytest.raises(PluginLoadError, match="knowledge") as info:
        await rt.start()
    assert str(info.value.__cause__) == "Bad: KNOWLEDGE_CHUNK_TOKENS must be a whole number from 50 to 8000, not 'tiny'"


# -- end to end -----------------------------------------------------------------------------------


async def test_a_character_answers_from_its_knowledge_through_the_pipeline(harness, tmp_path) -> None:
    (tmp_path / "faq.md").write_text(
        "# Opening hours\n\nThe Honey Pot opens at nine and closes at five, Monday to Saturday.\n"
    )
    h = await harness(ChannelType.DM, knowledge=["Ada runs a honey shop called the Honey Pot.", {"path": "faq.md"}])
    await h.rt.get_service("knowledge").wait()

    def answer(params: dict) -> str:
        assert "# Knowledge" in params["prompt"] and "opens at nine and closes at five" in params["prompt"]
        return plan("We open at nine and close at five, Monday to Saturday.")

    h.large.append(answer)
    outcome = await h.say("When are you open?")
    assert outcome.status == "replied"
    assert [s["text"] for s in h.sent] == ["We open at nine and close at five, Monday to Saturday."]
    prompt = h.prompts[-1]
    assert (
        prompt.index("# Knowledge") < prompt.index("The Honey Pot opens at nine") < prompt.index("# Received Message")
    )


async def test_a_character_is_told_to_say_it_does_not_know(harness) -> None:
    h = await harness(ChannelType.DM, knowledge=["Ada runs a honey shop called the Honey Pot."])
    await h.rt.get_service("knowledge").wait()
    h.large.append(plan("I'm afraid I don't know."))
    await h.say("What is the population of Mongolia?")
    assert "Nothing in Ada's documents or notes matches this message" in h.prompts[-1]
    assert "Ada says plainly that they do not know" in h.prompts[-1]


async def test_the_pipelines_one_message_vector_serves_knowledge_too(harness) -> None:
    h = await harness(ChannelType.DM, knowledge=["Ada's honey is raw and unfiltered."])
    await h.rt.get_service("knowledge").wait()
    embedded: list[str] = []

    async def embedding(runtime, params):
        if params is None:
            return [0.1] + [0.0] * 383
        texts = params["texts"] if "texts" in params else [params["text"]]
        embedded.extend(texts)
        vectors = [[1.0 if "honey" in t.lower() else 0.0, 1.0] + [0.0] * 382 for t in texts]
        return vectors if "texts" in params else vectors[0]

    h.rt.register_model(ModelType.TEXT_EMBEDDING, embedding, "fake")
    h.large.append(plan("Raw and unfiltered."))
    await h.say("Is the honey filtered?")
    assert embedded == ["Is the honey filtered?"]  # the message, once: stored with it and searched with it
    assert "Ada's honey is raw and unfiltered." in h.prompts[-1]


async def test_the_search_uses_the_vector_core_offers_for_the_message(agents: Agents) -> None:
    rt = await agents.start(knowledge=["Ada's shop sells honey."])
    vectors = rt.get_service(MESSAGE_VECTORS)
    assert isinstance(vectors, MessageEmbeddings)  # core's: it embeds what the pipeline stores
    msg = message(rt, "What does the shop sell?")
    await rt.store.create_memory(msg, "messages")
    agents.embedder.reset()
    assert msg.id is not None
    vectors.embed_later(msg.id, msg.content.text or "")  # as the pipeline does when it stores a message
    state = await rt.compose_state(msg)
    assert "Ada's shop sells honey." in state.providers["KNOWLEDGE"].text
    assert agents.embedder.texts == ["What does the shop sell?"]  # embedded once, for storing and searching


async def test_without_cores_vectors_the_search_is_by_keywords(agents: Agents) -> None:
    rt = await agents.start(knowledge=["Ada's shop sells honey."])
    rt.unregister_service(MESSAGE_VECTORS)
    agents.embedder.reset()
    assert "Ada's shop sells honey." in await knowledge_of(rt, "Which shop sells honey?")
    assert agents.embedder.requests == 0


def test_knowledge_loads_after_the_core_plugin_whose_vectors_it_uses() -> None:
    from bot.config.plugins import load_order as _load_order

    order = _load_order(["knowledge"])
    assert order.index("core") < order.index("knowledge")
