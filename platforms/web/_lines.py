"""What the browser shows of a conversation: each message as a :class:`Line`, read the same way
from a stored message (the history) and from a reply going out (the live stream)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.sdk import Attachment, Button, Memory

__all__ = ["FILE_URL_PREFIX", "FileRef", "Line", "file_attachment", "file_id_of", "line_of"]

#: How a stored attachment names a file the web platform keeps (``web:file:<id>``): only it can
#: hand out the bytes (the console serves them to a logged-in browser).
FILE_URL_PREFIX = "web:file:"


@dataclass(frozen=True, slots=True)
class FileRef:
    """A file in a conversation: a picture shown, a voice note played, anything else a download."""

    id: str
    name: str
    content_type: str
    size: int | None = None

    @property
    def is_picture(self) -> bool:
        return self.content_type in ("image/jpeg", "image/png", "image/webp", "image/gif")

    @property
    def is_sound(self) -> bool:
        return self.content_type.startswith("audio/")


@dataclass(frozen=True, slots=True)
class Line:
    """One message of a conversation as the browser shows it."""

    id: str
    author: str
    from_character: bool
    text: str
    created_at: int
    files: tuple[FileRef, ...] = ()
    buttons: tuple[Button, ...] = ()
    """The buttons under it (links open, the others are pressed)."""
    pressed: str | None = None
    """The button's label when this message is a press."""


def file_attachment(file: FileRef) -> Attachment:
    """The attachment a stored message keeps of a file the web platform holds."""
    return Attachment(
        id=file.id,
        url=f"{FILE_URL_PREFIX}{file.id}",
        title=file.name,
        content_type=file.content_type,
        size=file.size,
        private=True,  # the URL names the file; only the platform fetches it
        source="web",
    )


def file_id_of(url: str | None) -> str | None:
    """The web platform's id of the file an attachment's URL names; None for any other URL."""
    return url[len(FILE_URL_PREFIX) :] if url and url.startswith(FILE_URL_PREFIX) else None


def _files(attachments: Iterable[Attachment]) -> tuple[FileRef, ...]:
    found: list[FileRef] = []
    for attachment in attachments:
        file_id = file_id_of(attachment.url)
        if file_id:
            found.append(
                FileRef(
                    file_id,
                    attachment.title or "file",
                    attachment.content_type or "application/octet-stream",
                    attachment.size,
                )
            )
    return tuple(found)


def line_of(memory: Memory, agent_id: str, character: str, person: str) -> Line:
    """A stored message of a web conversation as the browser shows it (pure)."""
    content = memory.content
    mine = memory.entity_id == agent_id
    press = content.button
    return Line(
        id=memory.id or "",
        author=character if mine else person,
        from_character=mine,
        text=content.text or "",
        created_at=memory.created_at or 0,
        files=_files(content.attachments or ()),
        buttons=tuple(content.buttons or ()),
        pressed=press.text if press is not None else None,
    )
