"""The text of a Word document (``.docx``), with python-docx: for knowledge files and for documents
shared in chat.

Paragraphs and tables come in document order; headings become Markdown headings (``## Setup``),
list paragraphs ``- items`` and tables Markdown rows, so chunks end between them and a fragment
still reads as what it was. Headers, footers, comments and text boxes are left out.

CPU-bound (the XML is parsed in Python and lxml): callers on the event loop run it in a thread.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

__all__ = ["UnreadableDocx", "docx_text"]

# A .docx is a zip whose parts python-docx reads whole into memory: one that would unpack to more
# than this (a zip bomb, or a document that is mostly pictures) is not opened.
_MAX_UNPACKED = 256 * 1024 * 1024
_MAX_PARTS = 10_000
# Old Word files (.doc) and password-protected .docx are OLE compound files, not zips.
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTION_INFO = "EncryptionInfo".encode("utf-16-le")
_HEADING = re.compile(r"heading (\d)")


class UnreadableDocx(Exception):
    """The Word document gives no text; the message says why in plain words."""


def docx_text(data: bytes) -> str:
    """The text of the ``.docx`` in ``data``: paragraphs and tables in document order, separated by
    blank lines.

    Raises:
        UnreadableDocx: password-protected, an old ``.doc`` (or another file) under a .docx name,
            damaged, too large unpacked, or without any text.
    """
    if data.startswith(_OLE):
        if _ENCRYPTION_INFO in data:
            raise UnreadableDocx("a Word document protected by a password; save an unprotected copy")
        raise UnreadableDocx("an old Word document (.doc), not .docx; save it as .docx or PDF")
    _check_package(data)
    from docx import Document  # imported when needed: most characters never see a Word document
    from docx.table import Table

    try:
        document = Document(io.BytesIO(data))
        blocks: list[tuple[str, bool]] = []  # (text, is a list item)
        for block in document.iter_inner_content():
            if isinstance(block, Table):
                blocks.append((_table(block), False))
            else:
                blocks.append(_paragraph(block))
    except Exception as exc:  # noqa: BLE001 - python-docx and lxml raise many kinds for damaged files
        raise UnreadableDocx(f"not a readable Word document ({exc.__class__.__name__}: {exc})") from None
    text = _join(blocks)
    if not text:
        raise UnreadableDocx("a Word document without text (only pictures?); add a text version")
    return text


def _check_package(data: bytes) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            parts = package.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError):
        raise UnreadableDocx("not a Word document (.docx files are zip archives, this is not one)") from None
    if len(parts) > _MAX_PARTS or sum(p.file_size for p in parts) > _MAX_UNPACKED:
        raise UnreadableDocx(
            f"a Word document that unpacks to more than {_MAX_UNPACKED // 1024 // 1024} MB; "
            "save its text as a smaller .docx, PDF or text"
        )
    if "word/document.xml" not in {p.filename for p in parts}:
        raise UnreadableDocx("a zip archive, not a Word document (it has no word/document.xml)")


def _paragraph(paragraph: Paragraph) -> tuple[str, bool]:
    text = paragraph.text.strip()
    if not text:
        return "", False
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    name = style.lower()
    if name == "title":
        return f"# {text}", False
    if heading := _HEADING.fullmatch(name):
        return f"{'#' * int(heading.group(1))} {text}", False
    if name.startswith("list"):
        return f"- {text}", True
    return text, False


def _table(table: Table) -> str:
    """The table as Markdown rows, the first a header; a merged cell is given once."""
    rows: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        previous: object = None
        for cell in row.cells:
            if cell is previous:  # a cell merged across columns comes once for each of them
                continue
            previous = cell
            cells.append(" ".join(cell.text.split()).replace("|", "\\|"))
        if any(cells):
            rows.append(f"| {' | '.join(cells)} |")
            if len(rows) == 1:
                rows.append(f"|{' --- |' * len(cells)}")
    return "\n".join(rows)


def _join(blocks: list[tuple[str, bool]]) -> str:
    """Blocks separated by blank lines; the items of one list by line ends."""
    out: list[str] = []
    previous_item = False
    for text, item in blocks:
        if not text:
            continue
        if out:
            out.append("\n" if item and previous_item else "\n\n")
        out.append(text)
        previous_item = item
    return "".join(out)
