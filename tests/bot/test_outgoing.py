"""Outgoing files: what an action may attach, and the size rules checked before anything is sent."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from bot.kernel.buttons import Button
from bot.kernel.outgoing import (
    FileKind,
    OutgoingFile,
    Reply,
    SizeLimits,
    file_name_part,
    files_in,
    load,
    place,
    refusal_note,
    shown_size,
    sniff_image_type,
    text_or_file,
    with_note,
)
from tests.fakes.openai_server import make_png

MB = 1000 * 1000
TELEGRAM = SizeLimits("Telegram", file=50 * MB, picture=10 * MB)


def sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes no room on disk (nothing is ever read from it)."""
    with path.open("wb") as file:
        file.truncate(size)
    return path


def test_a_file_has_its_bytes_or_a_path_and_a_name() -> None:
    with pytest.raises(ValueError, match="either its bytes"):
        OutgoingFile("a.txt")
    with pytest.raises(ValueError, match="either its bytes"):
        OutgoingFile("a.txt", data=b"x", path=Path("a.txt"))
    with pytest.raises(ValueError, match="needs a file name"):
        OutgoingFile(" ", data=b"x")
    assert "bytes" not in repr(OutgoingFile.of_bytes(b"secret", "a.txt")).replace("6 bytes", "")


def test_types_come_from_the_bytes_of_images_and_from_names_otherwise(tmp_path: Path) -> None:
    assert OutgoingFile.of_bytes(make_png(), "drawing").content_type == "image/png"
    assert OutgoingFile.of_bytes(b"\xff\xd8\xff\xe0", "x").is_picture
    assert OutgoingFile.of_bytes(b"GIF89a...", "x.gif").content_type == "image/gif"
    assert not OutgoingFile.of_bytes(b"GIF89a...", "x.gif").is_picture  # a GIF animates: it goes as a file
    assert OutgoingFile.of_bytes(b"a,b", "table.csv").content_type == "text/csv"
    assert OutgoingFile.of_bytes(b"?", "noext").content_type == "application/octet-stream"
    assert OutgoingFile.of_path(tmp_path / "notes.pdf").content_type == "application/pdf"
    assert sniff_image_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert sniff_image_type(b"plain text") is None


def test_files_in_takes_files_paths_and_dicts_and_skips_the_rest(tmp_path: Path, caplog) -> None:
    path = tmp_path / "notes.md"
    given = OutgoingFile.of_bytes(b"x", "x.bin")
    files = files_in(
        {
            "files": [
                given,
                str(path),
                {"path": str(path), "name": "renamed.md", "description": "notes"},
                {"data": b"1", "filename": "one.txt", "contentType": "text/plain"},
                42,
            ]
        }
    )
    assert files[0] is given
    assert [(f.filename, f.content_type, f.description) for f in files[1:]] == [
        ("notes.md", "text/markdown", ""),
        ("renamed.md", "text/markdown", "notes"),
        ("one.txt", "text/plain", ""),
    ]
    assert "not a file to send, skipped: int" in caplog.text
    assert files_in({"text": "no files"}) == [] and files_in({"files": "a.txt"}) == []


def test_a_picture_within_the_photo_limit_goes_as_a_picture_a_bigger_one_as_a_document() -> None:
    small = OutgoingFile.of_bytes(make_png(), "small.png")
    big = OutgoingFile.of_bytes(make_png(padding=10 * MB), "big.png")
    document = OutgoingFile.of_bytes(b"%PDF-1.4", "report.pdf")
    placed = place([small, big, document], TELEGRAM)
    assert [p.kind for p in placed] == [FileKind.PICTURE, FileKind.DOCUMENT, FileKind.DOCUMENT]
    assert refusal_note(placed) == ""


def test_pictures_are_files_like_any_other_where_the_platform_has_no_photo_limit() -> None:
    discord = SizeLimits("Discord", file=10 * 1024 * 1024, per_message=10)
    (placed,) = place([OutgoingFile.of_bytes(make_png(padding=9 * MB), "big.png")], discord)
    assert placed.kind is FileKind.PICTURE


def test_a_file_too_big_for_the_platform_is_refused_and_the_note_says_which_and_why(tmp_path: Path) -> None:
    huge = OutgoingFile.of_path(sparse(tmp_path / "film.mp4", 60 * MB))
    placed = place([huge, OutgoingFile.of_bytes(b"ok", "ok.txt")], TELEGRAM)
    assert [p.kind for p in placed] == [FileKind.REFUSED, FileKind.DOCUMENT]
    assert placed[0].size == 60 * MB
    assert refusal_note(placed) == "(I couldn't send film.mp4: it is 60 MB, more than the 50 MB Telegram takes.)"


def test_missing_unreadable_and_empty_files_are_refused_with_their_reason(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    files = [
        OutgoingFile.of_path(tmp_path / "gone.txt"),
        OutgoingFile.of_path(tmp_path / "folder"),
        OutgoingFile.of_bytes(b"", "empty.txt"),
    ]
    assert refusal_note(place(files, TELEGRAM)).splitlines() == [
        "(I couldn't send gone.txt: it cannot be read.)",
        "(I couldn't send folder: it cannot be read.)",
        "(I couldn't send empty.txt: it is empty.)",
    ]


def test_files_beyond_what_one_message_holds_are_refused() -> None:
    limits = SizeLimits("Discord", file=1024, per_message=2)
    placed = place([OutgoingFile.of_bytes(b"x", f"{n}.txt") for n in range(3)], limits)
    assert [p.kind for p in placed] == [FileKind.DOCUMENT, FileKind.DOCUMENT, FileKind.REFUSED]
    assert placed[2].reason == "Discord takes at most 2 files in one message"


async def test_load_reads_what_goes_and_notes_a_file_gone_since_it_was_placed(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    placed = place([OutgoingFile.of_path(path), OutgoingFile.of_bytes(b"b", "b.txt")], TELEGRAM)
    os.remove(path)
    loaded, note = await load(placed)
    assert [(p.file.filename, data) for p, data in loaded] == [("b.txt", b"b")]
    assert note == "(I couldn't send notes.txt: it cannot be read.)"


def test_sizes_and_notes_read_well() -> None:
    assert [shown_size(n) for n in (10, 2000, 10 * MB, 1_500_000, 10 * 1024 * 1024)] == [
        "1 KB",
        "2 KB",
        "10 MB",
        "1.5 MB",
        "10.5 MB",
    ]
    assert with_note(" Here it is. ", "") == "Here it is."
    assert with_note("", "(note)") == "(note)"
    assert with_note("Here:", "(note)") == "Here:\n\n(note)"


def test_text_that_fits_a_message_stays_text_and_longer_text_is_a_lead_and_a_markdown_file() -> None:
    assert text_or_file("short", limit=10, lead="see the file", filename="x.md") == Reply(text="short")
    long = text_or_file("é" * 11, limit=10, lead="see the file", filename="notes.md")
    [file] = long.files
    assert long.text == "see the file"
    assert (file.filename, file.content_type, file.data) == ("notes.md", "text/markdown", "é".encode() * 11)
    body = text_or_file("x" * 11, limit=10, lead="", filename="n.md", body="# Notes\n")
    assert body.files[0].data == b"# Notes\n"


def test_a_reply_as_content_leaves_out_what_it_does_not_say() -> None:
    file = OutgoingFile.of_bytes(b"x", "a.txt")
    reply = Reply(
        text="hi",
        files=(file,),
        buttons=(Button("Yes", value="y"),),
        in_reply_to="m1",
        actions=("REPLY",),
        thought="",
        source="discord",
        extra={"embeds": [{"title": "e"}]},
    )
    assert reply.to_json() == {
        "text": "hi",
        "actions": ["REPLY"],
        "thought": "",
        "source": "discord",
        "inReplyTo": "m1",
        "files": [file],
        "buttons": [Button("Yes", value="y")],
        "embeds": [{"title": "e"}],
    }
    assert Reply().to_json() == {"text": ""}


def test_file_name_parts_are_lower_case_ascii_words_joined_by_dashes() -> None:
    assert file_name_part("#Plot & Lore: Ideas!") == "plot-lore-ideas"
    assert file_name_part("Board Meeting.ogg") == "board-meeting-ogg"
    assert file_name_part("日本", "recording") == "recording"
    assert file_name_part("word " * 20) == "word-word-word-word-word-word-word-word"


def test_a_reply_from_content_reads_its_buttons_and_files_once_and_keeps_the_rest() -> None:
    content: dict[str, Any] = {
        "text": "Pick",
        "buttons": [{"label": "One", "value": "1"}, {"label": ""}, {"label": "Two", "value": "2"}],
        "files": [{"data": b"x", "name": "a.txt"}],
        "actions": ["PICK"],
        "inReplyTo": "m1",
        "source": 7,
        "embeds": [{"title": "e"}],
    }
    reply = Reply.of_content(content)
    assert reply.buttons == (Button("One", value="1"), Button("Two", value="2"))
    assert [f.filename for f in reply.files] == ["a.txt"]
    assert (reply.text, reply.actions, reply.in_reply_to, reply.source) == ("Pick", ("PICK",), "m1", None)
    assert dict(reply.extra) == {"source": 7, "embeds": [{"title": "e"}]}
    assert len(content["buttons"]) == 3  # the content itself is left as it was
    assert reply.checked() is reply


def test_a_checked_reply_keeps_the_first_of_two_buttons_with_one_value() -> None:
    twice = Reply(buttons=(Button("A", value="1"), Button("B", value="1")))
    assert twice.checked().buttons == (Button("A", value="1"),)
