"""The knowledge as the console manages it (``KNOWLEDGE_BASE``): its sources with their fragment
counts, a file added to the character's folder and synced, refusals that say what to do, and a
trial search that shows how each fragment was found."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.sdk import KNOWLEDGE_BASE, KnowledgeBase, UploadRefused
from tests.media_files import make_docx

from .conftest import Agents, big_document


def base(rt: object) -> KnowledgeBase:
    from bot.runtime.agent import AgentRuntime

    assert isinstance(rt, AgentRuntime)
    found = rt.get_service(KNOWLEDGE_BASE)
    assert isinstance(found, KnowledgeBase)
    return found


async def test_sources_list_files_and_facts_with_their_fragments_and_scope(agents: Agents) -> None:
    (agents.dir / "docs").mkdir()
    (agents.dir / "docs" / "bees.md").write_text(big_document())
    (agents.dir / "common.txt").write_text("The market opens at eight.")
    rt = await agents.start(
        knowledge=["Ada keeps bees.", {"directory": "docs"}, {"path": "common.txt", "shared": True}]
    )
    knowledge = base(rt)
    sources = {s.title: s for s in await knowledge.sources()}
    assert set(sources) == {"Ada keeps bees.", "docs/bees.md", "common.txt"}
    bees = sources["docs/bees.md"]
    assert bees.source == f"file:{agents.dir / 'docs' / 'bees.md'}" and not bees.shared
    assert bees.fragments == len(
        [m for m in await rt.store.get_memories(table="knowledge") if "[docs/bees.md]" in (m.content.text or "")]
    )
    assert bees.fragments > 1 and bees.size == (agents.dir / "docs" / "bees.md").stat().st_size
    assert sources["common.txt"].shared and sources["common.txt"].fragments == 1
    assert sources["Ada keeps bees."].size is None and sources["Ada keeps bees."].source.startswith("text:")
    assert knowledge.last_sync is not None and knowledge.last_sync.files == 2 and knowledge.last_sync.facts == 1
    assert not knowledge.syncing


async def test_a_file_added_is_saved_in_the_folder_and_found_after_a_resync(agents: Agents) -> None:
    (agents.dir / "docs").mkdir()
    rt = await agents.start(knowledge=[{"directory": "docs"}])
    knowledge = base(rt)
    assert await knowledge.upload_folder() == agents.dir / "docs"
    assert await knowledge.try_search("When does the lighthouse ferry leave?") == []

    path = await knowledge.add_file("ferry.md", b"The lighthouse ferry leaves at 7:40 from pier nine.")
    assert path == agents.dir / "docs" / "ferry.md" and path.read_bytes().startswith(b"The lighthouse ferry")
    assert [p.name for p in (agents.dir / "docs").iterdir()] == ["ferry.md"]  # no temporary file left
    sync = await knowledge.resync()
    assert sync is not None and (sync.new, sync.files) == (1, 1)
    (match,) = await knowledge.try_search("When does the lighthouse ferry leave?")
    assert match.title == "docs/ferry.md" and "pier nine" in match.text and not match.shared
    assert match.keyword_rank == 1 and match.vector_rank == 1 and match.similarity is not None and match.score > 0

    # The same name again replaces the file; the resync stores the change.
    await knowledge.add_file("ferry.md", b"The lighthouse ferry leaves at 8:15 from pier two.")
    sync = await knowledge.resync()
    assert sync is not None and sync.changed == 1
    (match,) = await knowledge.try_search("lighthouse ferry")
    assert "pier two" in match.text


async def test_a_word_document_added_is_saved_and_found_after_a_resync(agents: Agents) -> None:
    (agents.dir / "docs").mkdir()
    rt = await agents.start(knowledge=[{"directory": "docs"}])
    knowledge = base(rt)
    data = make_docx("# Ferries", [["Ferry", "Leaves"], ["Lighthouse", "7:40 from pier nine"]])
    path = await knowledge.add_file("ferries.docx", data)
    assert path.read_bytes() == data
    sync = await knowledge.resync()
    assert sync is not None and (sync.new, sync.skipped) == (1, 0)
    (match,) = await knowledge.try_search("When does the lighthouse ferry leave?")
    assert match.title == "docs/ferries.docx" and "| Lighthouse | 7:40 from pier nine |" in match.text


async def test_knowledge_path_is_the_upload_folder_when_it_is_a_folder(agents: Agents) -> None:
    (agents.dir / "notes").mkdir()
    rt = await agents.start(knowledge=[], settings={"KNOWLEDGE_PATH": "notes"})
    assert await base(rt).upload_folder() == agents.dir / "notes"


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("report.docx", b"PK\x03\x04", "not a Word document"),
        ("report.odt", b"PK\x03\x04", "a word-processor document: save it as .docx, PDF or text"),
        ("blob.txt", b"\x00\x01\x02binary", "a binary file, not text"),
        ("latin.txt", "café".encode("latin-1"), "not UTF-8 text"),
        ("empty.md", b"  \n", "empty: it holds no text"),
        (".hidden.md", b"text", "hidden file, which knowledge skips"),
        ("../escape.md", b"text", "is a path, not a file name"),
        ("", b"text", "the file has no name"),
    ],
)
async def test_a_file_knowledge_cannot_read_is_refused_and_not_saved(
    agents: Agents, name: str, data: bytes, says: str
) -> None:
    (agents.dir / "docs").mkdir()
    rt = await agents.start(knowledge=[{"directory": "docs"}])
    with pytest.raises(UploadRefused, match=says.replace("(", r"\(")):
        await base(rt).add_file(name, data)
    assert os.listdir(agents.dir / "docs") == []


async def test_a_file_over_the_size_limit_is_refused_naming_the_setting(agents: Agents) -> None:
    (agents.dir / "docs").mkdir()
    rt = await agents.start(knowledge=[{"directory": "docs"}], settings={"KNOWLEDGE_MAX_FILE_MB": "0.001"})
    knowledge = base(rt)
    assert knowledge.max_file_bytes == 1048
    with pytest.raises(UploadRefused, match="KNOWLEDGE_MAX_FILE_MB"):
        await knowledge.add_file("big.txt", b"x" * 2000)
    assert os.listdir(agents.dir / "docs") == []


async def test_without_a_folder_an_upload_says_how_to_give_one(agents: Agents, tmp_path: Path) -> None:
    rt = await agents.start(knowledge=["Ada keeps bees."])
    knowledge = base(rt)
    assert await knowledge.upload_folder() is None
    with pytest.raises(UploadRefused, match=r'has no knowledge folder.*"directory": "knowledge".*KNOWLEDGE_PATH'):
        await knowledge.add_file("notes.md", b"text")
