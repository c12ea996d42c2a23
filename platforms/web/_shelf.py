"""The files of web conversations: uploads, and what characters send, kept for the browser.

Held in the daemon's memory, bounded: the oldest files go first when the shelf is full, and all
of them at a restart (a stored message then names a file the page says is gone). Each is read
back by its id, which is random: a file is only ever reached through a conversation's page.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from dataclasses import dataclass

from ._lines import FileRef

__all__ = ["MAX_SHELF_BYTES", "Shelf", "ShelvedFile"]

#: What the shelf holds at most, all files together.
MAX_SHELF_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ShelvedFile:
    ref: FileRef
    data: bytes


class Shelf:
    """Files by id, the newest kept within :attr:`capacity` bytes."""

    def __init__(self, capacity: int = MAX_SHELF_BYTES) -> None:
        self.capacity = capacity
        self._files: OrderedDict[str, ShelvedFile] = OrderedDict()
        self._bytes = 0

    def put(self, name: str, content_type: str, data: bytes) -> FileRef:
        """Keep ``data``; its reference (a file larger than the whole shelf is kept alone)."""
        ref = FileRef(secrets.token_urlsafe(16), name, content_type or "application/octet-stream", len(data))
        self._files[ref.id] = ShelvedFile(ref, data)
        self._bytes += len(data)
        while self._bytes > self.capacity and len(self._files) > 1:
            _, oldest = self._files.popitem(last=False)
            self._bytes -= len(oldest.data)
        return ref

    def get(self, file_id: str) -> ShelvedFile | None:
        return self._files.get(file_id)

    @property
    def size(self) -> int:
        return self._bytes
