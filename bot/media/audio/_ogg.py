"""Splitting an Ogg stream into packets as its bytes arrive."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from bot.media.audio._errors import AudioError

__all__ = ["OggPacketReader", "OpusHead"]

# capture pattern, version, header type, granule position, serial, page sequence, CRC, segment count
_PAGE_HEADER = struct.Struct("<4sBBqIIIB")


class OggPacketReader:
    """Feed Ogg bytes in any pieces; get back the complete packets of the first logical stream.

    Checksums are not verified: the bytes come over TLS from a TTS service, and a damaged page
    would only give a bad Opus packet, which the decoder rejects anyway.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._partial = bytearray()  # a packet that continues on the next page
        self._serial: int | None = None

    def feed(self, data: bytes) -> list[bytes]:
        """Return the packets completed by ``data``. Raises ``AudioError`` if this is not Ogg."""
        self._buffer += data
        packets: list[bytes] = []
        while len(self._buffer) >= _PAGE_HEADER.size:
            capture, *_, serial, _sequence, _crc, count = _PAGE_HEADER.unpack_from(self._buffer)
            if capture != b"OggS":
                raise AudioError(f"cannot decode Ogg: expected a page starting with 'OggS', got {bytes(capture)!r}")
            body_start = _PAGE_HEADER.size + count
            if len(self._buffer) < body_start:
                break
            lacing = self._buffer[_PAGE_HEADER.size : body_start]
            page_end = body_start + sum(lacing)
            if len(self._buffer) < page_end:
                break
            if self._serial is None:
                self._serial = serial
            if serial == self._serial:  # other multiplexed streams (a second track) are ignored
                position = body_start
                for size in lacing:
                    self._partial += self._buffer[position : position + size]
                    position += size
                    if size < 255:  # a lacing value under 255 ends the packet
                        packets.append(bytes(self._partial))
                        self._partial.clear()
            del self._buffer[:page_end]
        return packets

    @property
    def leftover(self) -> int:
        """Bytes received but not part of a complete packet (a truncated stream leaves some)."""
        return len(self._buffer) + len(self._partial)


@dataclass(frozen=True, slots=True)
class OpusHead:
    """The identification header that opens every Ogg/Opus stream (RFC 7845 §5.1)."""

    channels: int
    pre_skip: int
    """Samples at 48 kHz to drop from the start of the decoded audio (the encoder's lookahead)."""
    mapping_family: int
    """0 for mono/stereo; other families need a channel mapping table."""

    @classmethod
    def parse(cls, packet: bytes) -> OpusHead:
        """Read an ``OpusHead`` packet; ``AudioError`` if it is something else."""
        if len(packet) < 19 or not packet.startswith(b"OpusHead"):
            raise AudioError("cannot decode Ogg/Opus: the stream does not start with an OpusHead header")
        return cls(
            channels=packet[9],
            pre_skip=int.from_bytes(packet[10:12], "little"),
            mapping_family=packet[18],
        )
