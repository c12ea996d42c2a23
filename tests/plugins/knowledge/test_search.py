"""Retrieval quality on a small committed corpus, and the pieces of hybrid ranking.

``corpus/`` holds nine short documents on made-up topics (.md, .txt, .json); ``questions.json``
asks 34 questions, each answered by one document. Hit@k is the share of questions whose answer
document is among the first k fragments. It is printed for the hybrid search (the fake
embedding of conftest.py plus keywords), for vectors alone and for keywords alone (what a
character without an embedding model gets).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.kernel.content import Content, MemoryMetadata
from bot.kernel.types import Memory
from plugins.knowledge._config import KnowledgeConfig
from plugins.knowledge._search import Hit, rank

from .conftest import Agents, embed

HERE = Path(__file__).parent
CORPUS = HERE / "corpus"
QUESTIONS = json.loads((HERE / "questions.json").read_text())


def _source(hit: Hit) -> str:
    return Path(hit.memory.metadata.title or "").name


def _hit_rate(results: list[list[Hit]], k: int) -> float:
    return sum(q["answer"] in [_source(h) for h in hits[:k]] for q, hits in zip(QUESTIONS, results, strict=True)) / len(
        QUESTIONS
    )


async def test_retrieval_finds_the_answer_document(agents: Agents, capsys: pytest.CaptureFixture[str]) -> None:
    rt = await agents.start(
        knowledge=[{"directory": str(CORPUS)}],
        settings={"KNOWLEDGE_CHUNK_TOKENS": "120", "KNOWLEDGE_CHUNK_OVERLAP_TOKENS": "20"},
    )
    service = rt.get_service("knowledge")
    assert service.last.files == 9 and service.last.fragments > 20  # several chunks a document
    hybrid, keywords, vectors = [], [], []
    for question in QUESTIONS:
        text = question["question"]
        vector = embed(text)
        hybrid.append(await service.search(text, vector))
        keywords.append(await service.search(text))
        nearest = await rt.store.search_knowledge(vector, count=20, match_threshold=service.config.min_similarity)
        vectors.append(rank(nearest, [], [], service.config))
    rates = {
        name: (_hit_rate(results, 1), _hit_rate(results, 3))
        for name, results in (("hybrid", hybrid), ("vectors", vectors), ("keywords", keywords))
    }
    with capsys.disabled():
        print(
            f"\nknowledge retrieval, {len(QUESTIONS)} questions over {service.last.fragments} chunks: "
            + "; ".join(f"{name} hit@1 {h1:.0%} hit@3 {h3:.0%}" for name, (h1, h3) in rates.items())
        )
    assert rates["hybrid"][0] >= 0.85 and rates["hybrid"][1] >= 0.95
    assert rates["keywords"][0] >= 0.85 and rates["keywords"][1] >= 0.95


async def test_nothing_is_found_for_a_question_the_corpus_does_not_touch(agents: Agents) -> None:
    rt = await agents.start(knowledge=[{"directory": str(CORPUS)}])
    service = rt.get_service("knowledge")
    for text in ("Who won the football world cup?", "Recommend a good jazz album"):
        assert await service.search(text, embed(text)) == [], text


# -- ranking --------------------------------------------------------------------------------------


def _memory(id: str, text: str, similarity: float | None = None) -> Memory:
    return Memory(
        entity_id="e",
        room_id="r",
        id=id,
        content=Content(text=text),
        similarity=similarity,
        metadata=MemoryMetadata(title=f"{id}.md"),
    )


def test_a_fragment_both_searches_find_beats_one_only_either_finds() -> None:
    config = KnowledgeConfig()
    both, vector_only, keyword_only = _memory("b", "tea kettles"), _memory("v", "kettles"), _memory("k", "tea")
    hits = rank([vector_only, both], [keyword_only, both], ["tea", "kettles"], config)
    assert hits[0].memory.id == "b"
    assert hits[0].vector_rank == 2 and hits[0].keyword_rank == 2 and hits[0].coverage == 1.0


def test_word_coverage_reranks_vector_hits() -> None:
    config = KnowledgeConfig()
    hits = rank(
        [_memory("vague", "something else entirely", 0.9), _memory("exact", "the zorblat eats moss", 0.8)],
        [],
        ["zorblat", "eat"],
        config,
    )
    assert [h.memory.id for h in hits] == ["exact", "vague"]


def test_selection_keeps_the_budget_and_the_count_and_drops_duplicates() -> None:
    config = KnowledgeConfig(max_tokens=30, max_fragments=2)
    big = _memory("big", "word " * 40)  # about 60 tokens: never fits
    same_a, same_b = _memory("a", "Shared  text."), _memory("b", "Shared text.")
    small = [_memory(f"s{i}", f"small {i}") for i in range(3)]
    hits = rank([big, same_a, same_b, *small], [], ["shared"], config)
    assert [h.memory.id for h in hits] == ["a", "s0"]
    assert sum(h.tokens for h in hits) <= 30
