"""Ingestion: every kind of source, dedup, incremental restarts, bad files, shared knowledge."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path

import pytest

from bot.config.character import load_character
from bot.kernel.models import ModelType
from bot.kernel.types import Memory
from bot.runtime.agent import AgentRuntime, RuntimeState
from bot.runtime.events import AgentReloaded
from bot.store import SHARED_KNOWLEDGE_ID, Store
from tests.media_files import make_docx, protected_docx

from .conftest import Agents, embed, make_pdf


async def _in_order(store: Store) -> list[Memory]:
    found = await store.get_memories(table="knowledge")
    return sorted(found, key=lambda m: (m.metadata.document_id, m.metadata.position))


async def fragments(rt: AgentRuntime) -> list[Memory]:
    return await _in_order(rt.store)


async def texts(rt: AgentRuntime) -> list[str]:
    return [m.content.text or "" for m in await fragments(rt)]


async def shared_texts(agents: Agents) -> list[str]:
    """The shared scope's fragments, read through the store the backend gives that scope (as
    ``troupe memory shared`` does)."""
    return [m.content.text or "" for m in await _in_order(agents.db.for_agent(SHARED_KNOWLEDGE_ID))]


async def vectors(rt: AgentRuntime) -> int:
    return sum(m.embedding is not None for m in await fragments(rt))


# -- kinds of source ------------------------------------------------------------------------------


async def test_facts_become_one_fragment_each_with_a_vector(agents: Agents) -> None:
    rt = await agents.start(knowledge=["Ada keeps bees.", "Ada's hives are on the roof."])
    assert sorted(await texts(rt)) == ["Ada keeps bees.", "Ada's hives are on the roof."]
    assert await vectors(rt) == 2
    documents = await rt.store.get_memories(table="documents")
    assert {d.metadata.source for d in documents} == {"text"}
    report = rt.get_service("knowledge").last
    assert (report.facts, report.new, report.fragments, report.embedded) == (2, 2, 2, 2)


async def test_markdown_and_text_files_are_read_with_their_title(agents: Agents) -> None:
    (agents.dir / "notes.md").write_text("# Bees\n\nThe queen lays up to 2,000 eggs a day.\n")
    (agents.dir / "plain.txt").write_text("Honey never spoils.")
    rt = await agents.start(knowledge=[{"path": "notes.md"}, {"path": "plain.txt"}])
    assert sorted(await texts(rt)) == [
        "[notes.md]\n# Bees\n\nThe queen lays up to 2,000 eggs a day.",
        "[plain.txt]\nHoney never spoils.",
    ]
    (document,) = [d for d in await rt.store.get_memories(table="documents") if d.metadata.title == "notes.md"]
    assert document.metadata.extra["contentType"] == "text/markdown" and document.metadata.extra["fileExt"] == "md"
    assert document.metadata.type == "document" and document.metadata.extra["path"] == str(agents.dir / "notes.md")


async def test_json_is_pretty_printed_before_chunking(agents: Agents) -> None:
    (agents.dir / "menu.json").write_text(json.dumps({"bakery": "Tarrow", "items": [{"bun": "1.80"}]}))
    rt = await agents.start(knowledge=[{"path": "menu.json"}])
    (text,) = await texts(rt)
    assert text == '[menu.json]\n{\n  "bakery": "Tarrow",\n  "items": [\n    {\n      "bun": "1.80"\n    }\n  ]\n}'


async def test_pdf_text_is_extracted_page_by_page(agents: Agents) -> None:
    (agents.dir / "guide.pdf").write_bytes(make_pdf("Hives need shade at noon.", "Smoke calms the bees."))
    rt = await agents.start(knowledge=[{"path": "guide.pdf"}])
    (text,) = await texts(rt)
    assert text.startswith("[guide.pdf]\nHives need shade at noon.")
    assert text.endswith("Smoke calms the bees.")
    (document,) = await rt.store.get_memories(table="documents")
    assert document.metadata.extra["contentType"] == "application/pdf"


async def test_a_pdf_encrypted_with_an_owner_password_only_opens(agents: Agents) -> None:
    (agents.dir / "open.pdf").write_bytes(make_pdf("Readable anyway.", password=""))
    rt = await agents.start(knowledge=[{"path": "open.pdf"}])
    assert await texts(rt) == ["[open.pdf]\nReadable anyway."]


async def test_a_word_document_is_read_in_order_with_its_headings_lists_and_tables(agents: Agents) -> None:
    (agents.dir / "hives.docx").write_bytes(
        make_docx(
            "# Hive care",
            "Check each hive weekly.",
            [["Hive", "Honey"], ["Rose", "12 kg"], ["Clover", "9 kg"]],
            "## Tools",
            "- smoker",
            "- hive tool",
            "Wash the tools after use.",
        )
    )
    rt = await agents.start(knowledge=[{"path": "hives.docx"}])
    assert await texts(rt) == [
        "[hives.docx]\n# Hive care\n\nCheck each hive weekly.\n\n"
        "| Hive | Honey |\n| --- | --- |\n| Rose | 12 kg |\n| Clover | 9 kg |\n\n"
        "## Tools\n\n- smoker\n- hive tool\n\nWash the tools after use."
    ]
    (document,) = await rt.store.get_memories(table="documents")
    assert document.metadata.extra["fileExt"] == "docx"
    assert document.metadata.extra["contentType"] == (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    )
    assert await vectors(rt) == 1


async def test_directories_are_walked_recursively_skipping_dotfiles(agents: Agents) -> None:
    docs = agents.dir / "docs"
    (docs / "deep" / "deeper").mkdir(parents=True)
    (docs / ".git").mkdir()
    (docs / "node_modules").mkdir()
    (docs / "top.md").write_text("Top level.")
    (docs / "deep" / "deeper" / "bottom.txt").write_text("Far down.")
    (docs / ".hidden.md").write_text("Secret draft.")
    (docs / ".git" / "config").write_text("Git internals.")
    (docs / "node_modules" / "x.md").write_text("Vendored.")
    rt = await agents.start(knowledge=[{"directory": "docs"}])
    assert sorted(await texts(rt)) == ["[docs/deep/deeper/bottom.txt]\nFar down.", "[docs/top.md]\nTop level."]


async def test_a_path_that_is_a_folder_is_read_as_a_folder(agents: Agents) -> None:
    (agents.dir / "kb").mkdir()
    (agents.dir / "kb" / "a.md").write_text("Inside the folder.")
    rt = await agents.start(knowledge=[{"path": "kb"}])
    assert await texts(rt) == ["[kb/a.md]\nInside the folder."]


async def test_long_documents_are_chunked_with_the_configured_sizes(agents: Agents) -> None:
    body = "\n\n".join(f"Paragraph {i}. " + "Bees dance to show where flowers are. " * 8 for i in range(20))
    (agents.dir / "long.md").write_text(body)
    rt = await agents.start(
        knowledge=[{"path": "long.md"}],
        settings={"KNOWLEDGE_CHUNK_TOKENS": "120", "KNOWLEDGE_CHUNK_OVERLAP_TOKENS": "20"},
    )
    found = await fragments(rt)
    assert len(found) > 10
    assert [m.metadata.position for m in found] == list(range(len(found)))
    assert all((m.content.text or "").startswith("[long.md]\n") for m in found)
    assert all(len(m.content.text or "") <= 120 * 3.5 for m in found)
    assert await vectors(rt) == len(found)


async def test_knowledge_path_from_a_character_is_its_own_and_relative_to_its_file(agents: Agents) -> None:
    (agents.dir / "library").mkdir()
    (agents.dir / "library" / "book.txt").write_text("A book on bees.")
    rt = await agents.start(knowledge=[], settings={"KNOWLEDGE_PATH": "library"})
    assert await texts(rt) == ["[library/book.txt]\nA book on bees."]


def _run_docs(tmp_path: Path) -> Path:
    """A folder of documents outside any character's folder, as KNOWLEDGE_PATH for one run."""
    folder = tmp_path / "run-docs"
    folder.mkdir()
    (folder / "policy.md").write_text("Every hive is inspected weekly.")
    return folder


async def test_knowledge_path_from_the_environment_is_the_agents_own_and_goes_with_the_variable(
    agents: Agents, tmp_path: Path
) -> None:
    folder = _run_docs(tmp_path)
    ada = await agents.start("Ada", knowledge=[], environ={"KNOWLEDGE_PATH": str(folder)})
    assert await texts(ada) == ["[run-docs/policy.md]\nEvery hive is inspected weekly."]
    assert await shared_texts(agents) == []
    brann = await agents.start("Brann", knowledge=[])
    assert [h.text for h in await brann.get_service("knowledge").search("How often is a hive inspected?")] == []
    ada = await agents.restart(ada, environ={})  # the next run, without the variable
    assert await texts(ada) == []
    assert [h.text for h in await ada.get_service("knowledge").search("How often is a hive inspected?")] == []


async def test_knowledge_path_an_older_troupe_shared_becomes_the_agents_own_on_the_next_sync(
    agents: Agents, tmp_path: Path
) -> None:
    from bot.store import KnowledgeDocument, KnowledgeSourceRecord

    folder = _run_docs(tmp_path)
    ada = await agents.start("Ada", knowledge=[])
    # What an older troupe stored for KNOWLEDGE_PATH from the environment: a claim on the shared scope.
    await ada.store.put_knowledge_document(
        KnowledgeDocument("old-doc", "policy.md", ["[run-docs/policy.md]\nEvery hive is inspected weekly."]),
        KnowledgeSourceRecord(f"file:{folder / 'policy.md'}", "old-doc", "x"),
        shared=True,
    )
    ada = await agents.restart(ada, environ={"KNOWLEDGE_PATH": str(folder)})
    assert await shared_texts(agents) == []
    assert await texts(ada) == ["[run-docs/policy.md]\nEvery hive is inspected weekly."]


# -- dedup ----------------------------------------------------------------------------------------


async def test_the_same_content_twice_is_stored_and_embedded_once(agents: Agents) -> None:
    (agents.dir / "a.md").write_text("Bees see ultraviolet light.")
    (agents.dir / "copy").mkdir()
    (agents.dir / "copy" / "b.md").write_text("Bees see ultraviolet light.")
    rt = await agents.start(
        knowledge=["Same fact.", "Same fact.", {"path": "a.md"}, {"directory": "copy"}, {"path": "a.md"}]
    )
    assert sorted(await texts(rt)) == ["Same fact.", "[a.md]\nBees see ultraviolet light."]
    assert sorted(agents.embedder.texts) == ["Same fact.", "[a.md]\nBees see ultraviolet light."]
    assert len(await rt.store.get_knowledge_sources()) == 3  # two files and one fact, one document each file


# -- incremental ----------------------------------------------------------------------------------


async def test_a_second_start_embeds_nothing_and_reads_no_unchanged_file(agents: Agents, monkeypatch) -> None:
    (agents.dir / "docs").mkdir()
    for i in range(3):
        (agents.dir / "docs" / f"{i}.md").write_text(f"Document number {i}.")
    rt = await agents.start(knowledge=["A fact.", {"directory": "docs"}])
    assert len(agents.embedder.texts) == 4
    agents.embedder.reset()
    reads: list[Path] = []
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        reads.append(self)
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    rt = await agents.restart(rt)
    report = rt.get_service("knowledge").last
    assert agents.embedder.requests == 0
    assert [p for p in reads if p.suffix == ".md"] == []
    assert (report.new, report.changed, report.removed, report.fragments) == (0, 0, 0, 4)


async def test_a_changed_file_is_embedded_again_and_its_old_chunks_go(agents: Agents) -> None:
    (agents.dir / "docs").mkdir()
    (agents.dir / "docs" / "keep.md").write_text("Unchanged text.")
    changing = agents.dir / "docs" / "change.md"
    changing.write_text("Old wording.")
    rt = await agents.start(knowledge=[{"directory": "docs"}])
    agents.embedder.reset()
    changing.write_text("New wording, longer than before.")
    rt = await agents.restart(rt)
    assert agents.embedder.texts == ["[docs/change.md]\nNew wording, longer than before."]
    assert sorted(await texts(rt)) == [
        "[docs/change.md]\nNew wording, longer than before.",
        "[docs/keep.md]\nUnchanged text.",
    ]
    assert len(await rt.store.get_memories(table="documents")) == 2
    assert rt.get_service("knowledge").last.changed == 1


async def test_a_touched_but_identical_file_is_not_embedded_again(agents: Agents) -> None:
    path = agents.dir / "same.md"
    path.write_text("Constant.")
    rt = await agents.start(knowledge=[{"path": "same.md"}])
    agents.embedder.reset()
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    rt = await agents.restart(rt)
    assert agents.embedder.requests == 0
    assert rt.get_service("knowledge").last.changed == 0
    (record,) = (await rt.store.get_knowledge_sources()).values()
    assert record.mtime_ns == path.stat().st_mtime_ns  # remembered: the next start does not read it


async def test_a_removed_file_and_a_removed_fact_are_forgotten(agents: Agents) -> None:
    (agents.dir / "docs").mkdir()
    (agents.dir / "docs" / "stays.md").write_text("Stays.")
    (agents.dir / "docs" / "goes.md").write_text("Goes away.")
    rt = await agents.start(knowledge=["Old fact.", {"directory": "docs"}])
    (agents.dir / "docs" / "goes.md").unlink()
    await rt.close()
    rt = await agents.start("Ada", knowledge=[{"directory": "docs"}])
    assert await texts(rt) == ["[docs/stays.md]\nStays."]
    assert len(await rt.store.get_memories(table="documents")) == 1
    assert rt.get_service("knowledge").last.removed == 2


async def test_changing_the_chunk_size_chunks_everything_again(agents: Agents) -> None:
    (agents.dir / "a.md").write_text(" ".join(f"Sentence {i} about bees." for i in range(60)))
    rt = await agents.start(knowledge=[{"path": "a.md"}])
    before = len(await fragments(rt))
    await rt.close()
    rt = await agents.start("Ada", knowledge=[{"path": "a.md"}], settings={"KNOWLEDGE_CHUNK_TOKENS": "60"})
    assert len(await fragments(rt)) > before
    assert rt.get_service("knowledge").last.changed == 1


async def test_a_reload_that_keeps_the_agent_reads_its_files_again(agents: Agents) -> None:
    path = agents.dir / "live.md"
    path.write_text("First version.")
    rt = await agents.start(knowledge=[{"path": "live.md"}])
    path.write_text("Second version, edited while running.")
    await rt.emit(AgentReloaded(runtime=rt))
    await rt.get_service("knowledge").wait()
    assert await texts(rt) == ["[live.md]\nSecond version, edited while running."]


async def test_chunks_not_embedded_while_the_model_was_down_are_embedded_next_time(agents: Agents) -> None:
    agents.embedder.fail = True
    rt = await agents.start(knowledge=["Bees make honey."])
    assert await texts(rt) == ["Bees make honey."] and await vectors(rt) == 0
    assert [h.text for h in await rt.get_service("knowledge").search("honey")] == ["Bees make honey."]
    assert rt.get_service("knowledge").last.not_embedded == 1
    agents.embedder.fail = False
    rt = await agents.restart(rt)
    assert await vectors(rt) == 1 and agents.embedder.texts == ["Bees make honey."]


async def test_chunks_that_could_not_be_embedded_are_logged_with_why(
    agents: Agents, caplog: pytest.LogCaptureFixture
) -> None:
    agents.embedder.fail = True
    caplog.set_level(logging.WARNING, logger="plugins.knowledge")
    await agents.start(knowledge=["Bees make honey.", "Ants farm aphids."])
    said = [r.getMessage() for r in caplog.records if "could not embed" in r.getMessage()]
    assert said == [
        "Ada: knowledge: could not embed 2 chunks (ModelError: every TEXT_EMBEDDING model failed (RuntimeError): "
        "embedding service down)"
    ]


async def test_a_model_without_batches_is_sent_one_text_at_a_time(agents: Agents) -> None:
    agents.embedder.batches = False
    rt = await agents.start(knowledge=["One.", "Two.", "Three."])
    assert await vectors(rt) == 3
    assert sorted(agents.embedder.texts) == ["One.", "Three.", "Two."]


async def test_without_an_embedding_model_knowledge_is_stored_for_keywords(agents: Agents) -> None:
    rt = await agents.start(knowledge=["Bees make honey."], embedding=False)
    assert await texts(rt) == ["Bees make honey."] and await vectors(rt) == 0


# -- bad files ------------------------------------------------------------------------------------


async def test_bad_files_are_skipped_with_a_line_naming_the_agent_and_the_file(
    agents: Agents, caplog: pytest.LogCaptureFixture
) -> None:
    docs = agents.dir / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("Good file.")
    (docs / "empty.md").write_text("  \n")
    (docs / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (docs / "binary.dat").write_bytes(b"\x00\x01\x02 binary")
    (docs / "locked.pdf").write_bytes(make_pdf("Top secret.", password="hunter2"))
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (docs / "scan.pdf").write_bytes(make_pdf(""))
    (docs / "report.docx").write_bytes(b"PK\x03\x04 zipped word")
    (docs / "locked.docx").write_bytes(protected_docx())
    (docs / "pictures.docx").write_bytes(make_docx())
    (docs / "old.doc").write_bytes(b"\xd0\xcf\x11\xe0 an old Word file")
    caplog.set_level(logging.WARNING, logger="plugins.knowledge")
    rt = await agents.start(knowledge=[{"directory": "docs"}])
    assert await texts(rt) == ["[docs/good.md]\nGood file."]
    lines = {r.getMessage() for r in caplog.records}
    expected = {
        "empty.md": "empty: it holds no text",
        "latin1.txt": "not UTF-8 text (bad byte at offset 3); save it as UTF-8",
        "binary.dat": "a binary file, not text",
        "locked.pdf": "an encrypted PDF that needs a password; save an unencrypted copy",
        "broken.pdf": "not a readable PDF",
        "scan.pdf": "a PDF without a text layer",
        "report.docx": "not a Word document (.docx files are zip archives, this is not one)",
        "locked.docx": "a Word document protected by a password; save an unprotected copy",
        "pictures.docx": "a Word document without text",
        "old.doc": "a word-processor document: save it as .docx, PDF or text",
    }
    for name, reason in expected.items():
        assert any(line.startswith(f"Ada: knowledge: {docs / name} skipped: {reason}") for line in lines), name
    report = rt.get_service("knowledge").last
    assert report.skipped == 10
    # Each is a problem of the sync's report too (the console lists them), one line per file.
    for name, reason in expected.items():
        assert sum(p.startswith(f"{docs / name} skipped: {reason}") for p in report.problems) == 1, name
    assert "hunter2" not in caplog.text and "Top secret" not in caplog.text


async def test_a_file_too_large_is_skipped(agents: Agents, caplog: pytest.LogCaptureFixture) -> None:
    (agents.dir / "big.txt").write_text("x " * 20_000)
    caplog.set_level(logging.WARNING, logger="plugins.knowledge")
    rt = await agents.start(knowledge=[{"path": "big.txt"}], settings={"KNOWLEDGE_MAX_FILE_MB": "0.01"})
    assert await texts(rt) == []
    assert "big.txt skipped: 0.0 MB is over KNOWLEDGE_MAX_FILE_MB (0.01 MB)" in caplog.text


async def test_a_file_that_turns_bad_is_forgotten_but_an_unreadable_one_is_kept(
    agents: Agents, monkeypatch: pytest.MonkeyPatch
) -> None:
    (agents.dir / "docs").mkdir()
    turns_bad = agents.dir / "docs" / "bad.md"
    turns_bad.write_text("Was fine.")
    locked = agents.dir / "docs" / "locked.md"
    locked.write_text("Readable now.")
    rt = await agents.start(knowledge=[{"directory": "docs"}])
    turns_bad.write_text("")
    locked.write_text("Changed but unreadable.")
    real = Path.read_bytes

    def read_bytes(path: Path) -> bytes:
        if path == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    rt = await agents.restart(rt)
    assert await texts(rt) == ["[docs/locked.md]\nReadable now."]
    assert rt.get_service("knowledge").last.skipped == 2


async def test_a_missing_knowledge_path_is_reported_and_what_came_from_it_kept(
    agents: Agents, caplog: pytest.LogCaptureFixture
) -> None:
    folder = agents.dir / "mounted"
    folder.mkdir()
    (folder / "a.md").write_text("From the mount.")
    rt = await agents.start(knowledge=[], settings={"KNOWLEDGE_PATH": "mounted"})
    (folder / "a.md").unlink()
    folder.rmdir()
    caplog.set_level(logging.WARNING, logger="plugins.knowledge")
    rt = await agents.restart(rt)
    assert (
        f"Ada: knowledge: KNOWLEDGE_PATH: {folder} does not exist; skipped (what was loaded from it before is kept)"
    ) in caplog.text
    assert await texts(rt) == ["[mounted/a.md]\nFrom the mount."]
    await rt.close()
    rt = await agents.start(knowledge=[], settings={})  # the setting gone: forgotten
    assert await texts(rt) == []


# -- shared ---------------------------------------------------------------------------------------


async def test_shared_knowledge_is_stored_once_and_seen_by_another_agent(agents: Agents) -> None:
    (agents.dir / "rules.md").write_text("Quiet hours start at ten.")
    ada = await agents.start("Ada", knowledge=["Ada's own note.", {"path": "rules.md", "shared": True}])
    brann = await agents.start("Brann", knowledge=[{"path": "rules.md", "shared": True}])
    cleo = await agents.start("Cleo", knowledge=["Cleo's own note."])
    assert await shared_texts(agents) == ["[rules.md]\nQuiet hours start at ten."]
    assert agents.embedder.texts.count("[rules.md]\nQuiet hours start at ten.") == 1  # embedded once
    for rt in (ada, brann, cleo):
        found = [h.text for h in await rt.get_service("knowledge").search("When do quiet hours start?")]
        assert found == ["[rules.md]\nQuiet hours start at ten."], rt.character.name
    assert [h.text for h in await cleo.get_service("knowledge").search("Ada")] == []  # own stays own
    assert [h.text for h in await ada.get_service("knowledge").search("Ada")] == ["Ada's own note."]


async def test_shared_knowledge_stays_while_any_agent_lists_it(agents: Agents) -> None:
    (agents.dir / "rules.md").write_text("Quiet hours start at ten.")
    ada = await agents.start("Ada", knowledge=[{"path": "rules.md", "shared": True}])
    brann = await agents.start("Brann", knowledge=[{"path": "rules.md", "shared": True}])
    await ada.close()
    ada = await agents.start("Ada", knowledge=[])
    assert await shared_texts(agents) == ["[rules.md]\nQuiet hours start at ten."]  # Brann still lists it
    await brann.close()
    await agents.start("Brann", knowledge=[])
    assert await shared_texts(agents) == []


async def test_shared_knowledge_gets_vectors_of_each_agents_length(agents: Agents) -> None:
    (agents.dir / "rules.md").write_text("Quiet hours start at ten.")
    await agents.start("Ada", knowledge=[{"path": "rules.md", "shared": True}])

    async def wide(runtime, params):
        if params is None:
            return [0.1] + [0.0] * 767
        texts = params["texts"] if "texts" in params else [params["text"]]
        out = [embed(t) + embed(t[::-1]) for t in texts]
        return out if "texts" in params else out[0]

    character_path = agents.dir / "wide.json"
    character_path.write_text(json.dumps({"name": "Wide", "bio": "x"}))
    character = load_character(character_path).raise_for_problems()
    rt = AgentRuntime(character, agents.db.for_agent(character.agent_id), environ={})
    rt.register_model(ModelType.TEXT_EMBEDDING, wide, "wide")
    await rt.start()
    agents.runtimes.append(rt)
    await rt.get_service("knowledge").wait()
    assert rt.get_service("knowledge").last.embedded == 1
    query = embed("quiet hours") + embed("quiet hours"[::-1])
    hits = await rt.get_service("knowledge").search("quiet hours", query)
    assert hits and hits[0].similarity is not None


# -- in the background ----------------------------------------------------------------------------


async def test_the_agent_is_ready_before_its_knowledge_is_embedded(agents: Agents) -> None:
    release = asyncio.Event()

    async def slow(runtime, params):
        if params is None:
            return [0.1] + [0.0] * 383
        await release.wait()
        return await agents.embedder(runtime, params)

    path = agents.dir / "slow.json"
    path.write_text(json.dumps({"name": "Slow", "bio": "x", "knowledge": ["Bees make honey."]}))
    character = load_character(path).raise_for_problems()
    rt = AgentRuntime(character, agents.db.for_agent(character.agent_id), environ={})
    rt.register_model(ModelType.TEXT_EMBEDDING, slow, "slow")
    agents.runtimes.append(rt)
    await asyncio.wait_for(rt.start(), 5)
    assert rt.state is RuntimeState.RUNNING
    service = rt.get_service("knowledge")
    for _ in range(200):  # stored (and searchable by keywords) before it is embedded
        if await texts(rt):
            break
        await asyncio.sleep(0.01)
    assert [h.text for h in await service.search("honey")] == ["Bees make honey."]
    assert await vectors(rt) == 0 and service.last is None
    release.set()
    report = await service.wait()
    assert report is not None and report.embedded == 1 and await vectors(rt) == 1


async def test_one_line_says_what_was_loaded(agents: Agents, caplog: pytest.LogCaptureFixture) -> None:
    (agents.dir / "a.md").write_text("Alpha.")
    (agents.dir / "b.md").write_text("Beta.")
    caplog.set_level(logging.INFO, logger="plugins.knowledge")
    await agents.start(knowledge=["A fact.", {"path": "a.md"}, {"path": "b.md"}])
    (line,) = [r.getMessage() for r in caplog.records if r.name == "plugins.knowledge"]
    assert line.startswith(
        "Ada: knowledge: 2 files and 1 fact, 3 chunks (3 new, 0 changed, 0 removed; 3 chunks embedded) in "
    )
    assert line.endswith(" s")
