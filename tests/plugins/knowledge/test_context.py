"""Contextual embeddings (CTX_KNOWLEDGE_ENABLED): each fragment embedded with a context the small
model writes of it in its document; the fragment stored and shown as before; an unchanged
document costs no model call again; a failed context leaves the fragment embedded alone."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from bot.kernel.errors import ConfigError
from bot.kernel.models import ModelType
from bot.runtime.agent import AgentRuntime
from plugins.knowledge._context import context_prompt, contextual_text, document_excerpt
from plugins.knowledge._text import estimate_tokens

from .conftest import Agents, big_document
from .test_ingest import texts

CTX = {"CTX_KNOWLEDGE_ENABLED": "true"}
HIVES = "# Hives\n\n" + "\n\n".join(
    f"Hive {i} stands in meadow {i % 7}. It gave {i * 3} kilograms of honey last summer." for i in range(60)
)


def first_hive(text: str) -> str:
    return re.findall(r"Hive (\d+)", text)[0]


@dataclass
class Writer:
    """A TEXT_SMALL handler writing a context for each prompt; fails for prompts holding ``fail``."""

    prompts: list[str] = field(default_factory=list)
    fail: tuple[str, ...] = ()
    echo: tuple[str, ...] = ()
    """Chunks whose prompt comes back as the answer (as a small model may do)."""

    async def __call__(self, runtime: Any, params: dict[str, Any]) -> str:
        self.prompts.append(params["prompt"])
        chunk = params["prompt"].split("<chunk>\n", 1)[1]
        if any(f in chunk for f in self.fail):
            raise RuntimeError("the small model is overloaded")
        if any(e in chunk for e in self.echo):
            return params["prompt"][:300]
        return f"  From the keeper's hive records, about hive {first_hive(chunk)}\n"


async def start(agents: Agents, writer: Writer, settings: dict[str, str], **kw: Any) -> AgentRuntime:
    rt = await agents.start(knowledge=[{"path": "hives.md"}], settings=settings, wait=False, **kw)
    rt.register_model(ModelType.TEXT_SMALL, writer, "fake")
    await rt.get_service("knowledge").wait()
    return rt


def test_a_short_document_is_shown_whole_once_and_a_long_one_its_start_and_the_part_before_the_chunk() -> None:
    fragments = ["[Notes]\nOne. Two.", "[Notes]\nTwo. Three.", "[Notes]\nFour."]
    assert document_excerpt(fragments, 1) == "[Notes]\nOne. Two.\n\nThree.\n\nFour."  # overlap once
    long = [f"[Notes]\nPart {i} " + "word " * 400 for i in range(20)]  # about 580 tokens each
    shown = document_excerpt(long, 12, budget=2400)
    assert shown.startswith("[Notes]\nPart 0 ") and "Part 1 " in shown and "Part 2 " not in shown
    assert "\n\n[…]\n\nPart 11 " in shown and "Part 12 " in shown and "Part 13 " not in shown
    assert document_excerpt(long, 2, budget=2400).count("Part ") == 3  # contiguous: no gap
    assert context_prompt("DOC", "CHUNK").startswith("<document>\nDOC\n</document>")  # a cacheable prefix
    assert contextual_text("", "chunk") == "chunk" and contextual_text("ctx", "chunk") == "ctx\n\nchunk"


async def test_each_chunk_is_embedded_with_its_context_and_stored_and_searched_as_before(agents: Agents) -> None:
    (agents.dir / "hives.md").write_text(HIVES)
    writer = Writer()
    rt = await start(agents, writer, CTX)
    stored = await texts(rt)
    report = rt.get_service("knowledge").last
    assert len(stored) > 1 and report.contexts == len(stored) == report.embedded == len(writer.prompts)
    assert "contexts written" in report.line("Ada")
    assert all(t.startswith("[hives.md]\n") and "keeper" not in t for t in stored)  # stored as before
    assert sorted(agents.embedder.texts) == sorted(
        f"From the keeper's hive records, about hive {first_hive(t)}\n\n{t}" for t in stored
    )
    assert all("<document>\n[hives.md]\n# Hives" in p for p in writer.prompts)
    hits = await rt.get_service("knowledge").try_search("honey of hive 42")
    assert any("Hive 42 " in h.text for h in hits) and not any("keeper" in h.text for h in hits)

    agents.embedder.reset()
    writer.prompts.clear()
    rt = await agents.restart(rt)  # unchanged: no model call at all
    assert (writer.prompts, agents.embedder.texts, rt.get_service("knowledge").last.contexts) == ([], [], 0)

    await rt.close()
    rt = await agents.start(knowledge=[{"path": "hives.md"}])  # turned off: embedded again, alone
    assert sorted(agents.embedder.texts) == sorted(await texts(rt)) and writer.prompts == []


async def test_a_long_document_is_shown_cut_to_its_start_and_the_part_before_each_chunk(agents: Agents) -> None:
    (agents.dir / "hives.md").write_text(big_document())  # about 14,000 tokens
    writer = Writer()
    rt = await start(agents, writer, CTX)
    report = rt.get_service("knowledge").last
    assert report.contexts == report.embedded == len(await texts(rt)) > 20
    shown = [p.split("</document>")[0] for p in writer.prompts]
    assert all(p.startswith("<document>\n[hives.md]\nHive 0 stands") for p in shown)  # the same prefix
    assert all(estimate_tokens(p) < 4500 for p in shown)
    assert sum("\n\n[…]\n\n" in p for p in shown) > len(shown) // 2


async def test_a_failed_context_leaves_its_chunk_embedded_alone_logged_once_for_the_document(
    agents: Agents, caplog: pytest.LogCaptureFixture
) -> None:
    (agents.dir / "hives.md").write_text(HIVES)
    writer = Writer(fail=("Hive 5 ", "Hive 30 "))  # the first two of three chunks
    with caplog.at_level(logging.WARNING, "plugins.knowledge"):
        rt = await start(agents, writer, {**CTX, "CTX_KNOWLEDGE_CONCURRENCY": "1"})
    stored = await texts(rt)
    report = rt.get_service("knowledge").last
    assert report.embedded == len(stored) and report.not_embedded == 0
    alone = [t for t in agents.embedder.texts if not t.startswith("From the keeper")]
    assert len(alone) == 2 and all(t in stored for t in alone) and len(stored) == 3
    failures = [r.getMessage() for r in caplog.records if "no context" in r.getMessage()]
    assert failures == [
        "Ada: knowledge: no context for a chunk of 'hives.md' (every TEXT_SMALL model failed (RuntimeError)); "
        "its chunks without one are embedded alone"
    ]


async def test_an_answer_that_repeats_the_prompt_is_no_context(
    agents: Agents, caplog: pytest.LogCaptureFixture
) -> None:
    (agents.dir / "hives.md").write_text(HIVES)
    writer = Writer(echo=("Hive 5 ",))  # the first of three chunks
    with caplog.at_level(logging.WARNING, "plugins.knowledge"):
        rt = await start(agents, writer, {**CTX, "CTX_KNOWLEDGE_CONCURRENCY": "1"})
    stored = await texts(rt)
    assert not any("<document>" in t for t in agents.embedder.texts)
    alone = [t for t in agents.embedder.texts if not t.startswith("From the keeper")]
    assert len(alone) == 1 and alone[0] in stored
    assert "the model's answer repeated the prompt" in caplog.text


async def test_a_context_written_is_not_asked_for_again_when_the_chunk_is_embedded_later(agents: Agents) -> None:
    (agents.dir / "hives.md").write_text(HIVES)
    writer = Writer()
    agents.embedder.fail = True  # the embedding service is down: contexts written, no vector
    rt = await start(agents, writer, CTX)
    asked = len(writer.prompts)
    assert asked and rt.get_service("knowledge").last.embedded == 0
    agents.embedder.fail = False
    rt = await agents.restart(rt)  # no small model now: only the cache can give contexts
    report = rt.get_service("knowledge").last
    assert report.embedded == asked and len(writer.prompts) == asked  # from the cache
    assert all(t.startswith("From the keeper") for t in agents.embedder.texts)


async def test_without_a_small_model_chunks_are_embedded_alone(
    agents: Agents, caplog: pytest.LogCaptureFixture
) -> None:
    (agents.dir / "hives.md").write_text(HIVES)
    rt = await agents.start(knowledge=[{"path": "hives.md"}], settings=CTX)
    assert sorted(agents.embedder.texts) == sorted(await texts(rt))
    assert "there is no small text model to write contexts" in caplog.text


@pytest.mark.parametrize(("value", "on"), [("True", True), ("1", True), ("yes", True), ("false", False), ("0", False)])
async def test_the_setting_reads_as_other_booleans_do(agents: Agents, value: str, on: bool) -> None:
    rt = await agents.start(settings={"CTX_KNOWLEDGE_ENABLED": value}, embedding=False)
    assert rt.get_service("knowledge").config.contextual is on


async def test_a_setting_that_is_not_a_boolean_is_refused_by_name(agents: Agents) -> None:
    with pytest.raises(ConfigError, match="CTX_KNOWLEDGE_ENABLED must be true or false, not 'sometimes'"):
        await agents.start(settings={"CTX_KNOWLEDGE_ENABLED": "sometimes"}, embedding=False)
