"""Files and images the agent sends, and the size rules every platform applies before sending.

An action (or the plan) puts :class:`OutgoingFile` values in a :class:`Reply`'s ``files``; the reply
channel and the Messenger send them natively (Telegram: a photo or a document; Discord: an
attachment). Before anything goes out, :func:`place` decides how each file goes with the
platform's :class:`SizeLimits`: an image too big for a photo goes as a document, a file too big
for the platform is not sent, and :func:`refusal_note` is added to the text so that the person
reads what was left out and why.

Text too long for a chat message (a summary, a transcript) goes as a short lead inline and the
whole as a Markdown file (:func:`text_or_file`): one message to open, instead of a wall of parts.
"""

from __future__ import annotations

import asyncio
import logging
import mimetypes
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from bot.kernel.buttons import Button, Menu, ReplyKeyboard, Settled, buttons_checked, buttons_in
from bot.kernel.frozen_map import NOTHING, FrozenMap
from bot.kernel.types import JSON

__all__ = [
    "FileKind",
    "OutgoingFile",
    "Placed",
    "Reply",
    "SizeLimits",
    "file_name_part",
    "files_in",
    "load",
    "markdown_file",
    "place",
    "refusal_note",
    "shown_size",
    "sniff_image_type",
    "text_or_file",
    "with_note",
]

_log = logging.getLogger(__name__)
_NOTHING: Mapping[str, object] = NOTHING

#: Image types a chat shows inline as a picture (a GIF animates: it goes as a file).
_PICTURE_TYPES = frozenset({"image/jpeg", "image/png", "image/webp"})


def sniff_image_type(data: bytes) -> str | None:
    """The content type of image bytes from their first bytes; None when they are no known image."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    return None


@dataclass(frozen=True, slots=True)
class OutgoingFile:
    """One file to send: its bytes or a path to them, its name, type and alt text.

    Raises:
        ValueError: neither or both of ``data`` and ``path``, or no file name.
    """

    filename: str
    content_type: str = "application/octet-stream"
    data: bytes | None = None
    path: Path | None = None
    description: str = ""
    """Alt text (Discord) or the caption it goes with when it has no other (Telegram)."""

    def __post_init__(self) -> None:
        if (self.data is None) == (self.path is None):
            raise ValueError("an outgoing file has either its bytes (data) or a path, not both nor neither")
        if not self.filename.strip():
            raise ValueError("an outgoing file needs a file name")

    def __repr__(self) -> str:  # never the bytes
        where = f"path={str(self.path)!r}" if self.path is not None else f"{len(self.data or b'')} bytes"
        return f"OutgoingFile({self.filename!r}, {self.content_type!r}, {where})"

    @classmethod
    def of_bytes(
        cls, data: bytes, filename: str, content_type: str | None = None, description: str = ""
    ) -> OutgoingFile:
        """``data`` as a file; its type from the bytes (images), else the name, unless given."""
        kind = content_type or sniff_image_type(data) or _guess(filename)
        return cls(filename=filename, content_type=kind, data=bytes(data), description=description)

    @classmethod
    def of_path(
        cls, path: str | Path, content_type: str | None = None, description: str = "", filename: str | None = None
    ) -> OutgoingFile:
        """The file at ``path`` (read when sent), named ``filename`` or as on disk; its type from
        its name unless given."""
        path = Path(path)
        name = filename or path.name
        return cls(filename=name, content_type=content_type or _guess(name), path=path, description=description)

    @property
    def is_picture(self) -> bool:
        """An image a chat shows as a picture (JPEG, PNG, WebP)."""
        return self.content_type in _PICTURE_TYPES

    def size(self) -> int | None:
        """Its length in bytes; None when its path cannot be read (gone, not a regular file)."""
        if self.data is not None:
            return len(self.data)
        assert self.path is not None
        try:
            found = self.path.stat()
        except (OSError, ValueError):
            return None
        return found.st_size if stat.S_ISREG(found.st_mode) else None

    async def read(self) -> bytes:
        """Its bytes (a path is read in a worker thread: the loop never waits on the disk).

        Raises:
            OSError: the path cannot be read.
        """
        if self.data is not None:
            return self.data
        assert self.path is not None
        return await asyncio.to_thread(self.path.read_bytes)

    def record(self) -> JSON:
        """What a stored message keeps of it (never the bytes)."""
        found: JSON = {"title": self.filename, "contentType": self.content_type, "size": self.size()}
        if self.description:
            found["description"] = self.description
        return found


@dataclass(frozen=True, slots=True)
class Reply:
    """What an action sends in answer: text, files and buttons, and what it answers.

    ``to_json`` gives the content the reply channel's platform code and the store work with:
    a field left at its default is left out, as the dicts actions built before left it out.
    """

    text: str = ""
    actions: tuple[str, ...] = ()
    in_reply_to: str | None = None
    """The id of the memory it answers."""
    source: str | None = None
    thought: str | None = None
    files: tuple[OutgoingFile, ...] = ()
    buttons: tuple[Button, ...] = ()
    settles: Settled | None = None
    """For a reply to a press: edit the message the button was under instead of sending a new
    one, where the platform can (see :mod:`bot.kernel.buttons`); ``text`` goes where it cannot."""
    keyboard: ReplyKeyboard | None = None
    """Fixed answers in place of the phone's keyboard (Telegram); other platforms leave it out.
    A reply with buttons shows its buttons instead (a message carries one or the other)."""
    menu: Menu | None = None
    """A select menu beside the buttons (Discord); Telegram shows its options as buttons."""
    extra: Mapping[str, object] = field(default_factory=lambda: _NOTHING)
    """Anything else a plugin sends along (``embeds`` for Discord …), under its own key."""

    @classmethod
    def of_content(cls, content: Mapping[str, object]) -> Reply:
        """A reply from content as plugins and the SEND_MESSAGE path still hand it: its files
        (:func:`files_in`) and buttons (:func:`~bot.kernel.buttons.buttons_in`) read, with their
        warnings; a key with a value of another type than its field's kept in ``extra``."""
        extra = {k: v for k, v in content.items() if k not in _REPLY_KEYS}
        text, actions, thought = content.get("text"), content.get("actions"), content.get("thought")
        in_reply_to, source = content.get("inReplyTo"), content.get("source")
        for key, value, fits in (
            ("actions", actions, isinstance(actions, list) and all(isinstance(a, str) for a in actions)),
            ("inReplyTo", in_reply_to, isinstance(in_reply_to, str)),
            ("source", source, isinstance(source, str)),
            ("thought", thought, isinstance(thought, str)),
        ):
            if key in content and not fits:
                extra[key] = value
        return cls(
            text=str(text or ""),
            actions=tuple(str(a) for a in actions) if isinstance(actions, list) and "actions" not in extra else (),
            in_reply_to=in_reply_to if isinstance(in_reply_to, str) else None,
            source=source if isinstance(source, str) else None,
            thought=thought if isinstance(thought, str) else None,
            files=tuple(files_in(content)),
            buttons=tuple(buttons_in(content)),
            extra=FrozenMap(extra) if extra else _NOTHING,
        )

    def checked(self) -> Reply:
        """The reply with its buttons as a platform shows them (:func:`~bot.kernel.buttons.buttons_checked`:
        too many, or two with one value, are left out with a warning), read once so that what is
        sent is what is stored."""
        buttons = tuple(buttons_checked(self.buttons))
        return self if buttons == self.buttons else replace(self, buttons=buttons)

    def to_json(self) -> dict[str, Any]:
        """The reply as content: camelCase keys, as it is stored once sent."""
        out: dict[str, Any] = dict(self.extra)
        out["text"] = self.text
        if self.actions:
            out["actions"] = list(self.actions)
        if self.in_reply_to is not None:
            out["inReplyTo"] = self.in_reply_to
        if self.source is not None:
            out["source"] = self.source
        if self.thought is not None:
            out["thought"] = self.thought
        if self.files:
            out["files"] = list(self.files)
        if self.buttons:
            out["buttons"] = list(self.buttons)
        return out


_REPLY_KEYS = frozenset({"text", "actions", "inReplyTo", "source", "thought", "files", "buttons"})


def _guess(filename: str) -> str:
    return mimetypes.guess_type(filename)[0] or "application/octet-stream"


def files_in(content: Mapping[str, object]) -> list[OutgoingFile]:
    """The files ``content["files"]`` carries: OutgoingFile values, paths, or dicts with
    ``data`` (bytes) and ``name``/``filename``, or with ``path``. Anything else is skipped with
    a warning that says what it was."""
    found: list[OutgoingFile] = []
    raw = content.get("files")
    items: Iterable[object] = raw if isinstance(raw, (list, tuple)) else ()
    for item in items:
        file = _as_file(item)
        if file is None:
            _log.warning("not a file to send, skipped: %s", type(item).__name__)
        else:
            found.append(file)
    return found


def _as_file(item: object) -> OutgoingFile | None:
    if isinstance(item, OutgoingFile):
        return item
    if isinstance(item, (str, Path)):
        return OutgoingFile.of_path(item)
    if isinstance(item, Mapping):
        given = item.get("contentType") or item.get("content_type")
        kind = str(given) if given else None
        description = str(item.get("description") or "")
        named = item.get("filename") or item.get("name")
        name = str(named) if named else None
        data = item.get("data")
        if isinstance(data, (bytes, bytearray)):
            return OutgoingFile.of_bytes(bytes(data), name or "file", kind, description)
        path = item.get("path")
        if isinstance(path, (str, Path)):
            return OutgoingFile.of_path(path, kind, description, name)
    return None


class FileKind(StrEnum):
    """How a file goes out."""

    PICTURE = "picture"  # shown as an image (a Telegram photo)
    DOCUMENT = "document"  # a file to download (a Telegram document; any Discord attachment)
    REFUSED = "refused"  # not sent: ``Placed.reason`` says why


@dataclass(frozen=True, slots=True)
class SizeLimits:
    """What a platform takes, in bytes."""

    platform: str
    """Its name for people ("Telegram")."""
    file: int
    """The largest file."""
    picture: int | None = None
    """The largest picture shown as such; None when pictures are files like any other (Discord)."""
    per_message: int | None = None
    """How many files one message holds; None when each goes on its own."""


@dataclass(frozen=True, slots=True)
class Placed:
    """One file, how it goes out, its size, and (refused) why not."""

    file: OutgoingFile
    kind: FileKind
    size: int = 0
    reason: str = ""


def shown_size(size: int) -> str:
    """A size for people, in decimal units as the platforms state their limits: ``12 KB``, ``10.5 MB``."""
    if size < 1000 * 1000:
        return f"{max(1, round(size / 1000))} KB"
    return f"{size / (1000 * 1000):.1f}".rstrip("0").rstrip(".") + " MB"


def place(files: Iterable[OutgoingFile], limits: SizeLimits) -> list[Placed]:
    """How each file goes out under ``limits``, in order (see the module docstring)."""
    placed: list[Placed] = []
    taken = 0
    for file in files:
        size = file.size()
        if size is None:
            placed.append(Placed(file, FileKind.REFUSED, 0, "it cannot be read"))
            continue
        if size == 0:
            placed.append(Placed(file, FileKind.REFUSED, 0, "it is empty"))
            continue
        if size > limits.file:
            reason = f"it is {shown_size(size)}, more than the {shown_size(limits.file)} {limits.platform} takes"
            placed.append(Placed(file, FileKind.REFUSED, size, reason))
            continue
        if limits.per_message is not None and taken >= limits.per_message:
            reason = f"{limits.platform} takes at most {limits.per_message} files in one message"
            placed.append(Placed(file, FileKind.REFUSED, size, reason))
            continue
        taken += 1
        picture = file.is_picture and (limits.picture is None or size <= limits.picture)
        placed.append(Placed(file, FileKind.PICTURE if picture else FileKind.DOCUMENT, size))
    return placed


def refusal_note(placed: Iterable[Placed]) -> str:
    """One line per file not sent, saying which and why; empty when all of them go."""
    return "\n".join(f"(I couldn't send {p.file.filename}: {p.reason}.)" for p in placed if p.kind is FileKind.REFUSED)


async def load(placed: Iterable[Placed]) -> tuple[list[tuple[Placed, bytes]], str]:
    """The bytes of each file that goes out, and the note on those that do not (refused, or
    unreadable after all: a file removed since it was placed)."""
    loaded: list[tuple[Placed, bytes]] = []
    left: list[Placed] = []
    for item in placed:
        if item.kind is FileKind.REFUSED:
            left.append(item)
            continue
        try:
            loaded.append((item, await item.file.read()))
        except OSError as exc:
            _log.warning("cannot read %s to send it: %s", item.file.filename, exc.strerror or type(exc).__name__)
            left.append(Placed(item.file, FileKind.REFUSED, item.size, "it cannot be read"))
    return loaded, refusal_note(left)


def with_note(text: str, note: str) -> str:
    """``text`` followed by ``note`` (a blank line between), either alone when the other is empty."""
    return "\n\n".join(part for part in (text.strip(), note) if part)


_NOT_IN_NAMES = re.compile(r"[^a-z0-9]+")  # ASCII: some clients mangle other names
_NAME_PART_CHARS = 40


def file_name_part(words: str, fallback: str = "") -> str:
    """``words`` as part of a file name every platform and file system takes: lower-case ASCII
    letters and digits joined by ``-``, at most 40 characters; ``fallback`` when none are left."""
    part = _NOT_IN_NAMES.sub("-", words.casefold()).strip("-")
    return part[:_NAME_PART_CHARS].rstrip("-") or fallback


def markdown_file(text: str, filename: str) -> OutgoingFile:
    """``text`` as a UTF-8 Markdown file named ``filename``."""
    return OutgoingFile.of_bytes(text.encode(), filename, "text/markdown")


def text_or_file(text: str, *, limit: int, lead: str, filename: str, body: str | None = None) -> Reply:
    """A message saying ``text``: the text itself when it holds at most ``limit`` characters;
    else ``lead`` (a line or two on what the file holds) with ``body`` (``text`` unless given)
    as a Markdown file named ``filename``."""
    if len(text) <= limit:
        return Reply(text=text)
    return Reply(text=lead, files=(markdown_file(body if body is not None else text, filename),))
