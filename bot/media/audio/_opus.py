"""Raw Opus packets for Discord voice: 48 kHz stereo, one packet per 20 ms."""

from __future__ import annotations

import logging

import av

from bot.media.audio._avframes import frame_from_pcm
from bot.media.audio._errors import AudioError
from bot.media.audio._format import DISCORD_PCM
from bot.media.audio._resample import Resampler

__all__ = ["FRAME_MS", "FRAME_SAMPLES", "OPUS_SILENCE", "OpusDecoder", "OpusEncoder"]

_log = logging.getLogger(__name__)

#: Milliseconds of audio in every packet Discord sends or expects.
FRAME_MS = 20
#: Samples per channel in one 20 ms frame at 48 kHz.
FRAME_SAMPLES = DISCORD_PCM.rate * FRAME_MS // 1000
#: The 3-byte packet Discord clients send (five times) when they stop talking: 20 ms of silence.
OPUS_SILENCE = b"\xf8\xff\xfe"

_FRAME_BYTES = FRAME_SAMPLES * DISCORD_PCM.sample_bytes
_SILENT_FRAME = bytes(_FRAME_BYTES)


class OpusEncoder:
    """48 kHz stereo PCM in, complete 20 ms Opus packets out, for sending to Discord.

    ``encode`` takes PCM of any length and returns one packet per whole 20 ms it now holds,
    keeping the remainder for the next call; ``flush`` pads that remainder with silence. Each
    packet is a bare Opus packet (no Ogg framing), which is what Discord's voice UDP carries.
    The encoder stays usable after ``flush``: keep one per voice connection. About 0.2 ms of
    CPU per packet (libopus itself), so a whole reply can be encoded on the loop in small steps
    but a long one belongs in a thread.
    """

    def __init__(self, *, bitrate: int = 96_000, application: str = "audio") -> None:
        """``application`` is libopus's tuning: ``audio`` (music and voice), ``voip`` or ``lowdelay``."""
        codec = av.CodecContext.create("libopus", "w")
        codec.sample_rate = DISCORD_PCM.rate
        codec.layout = "stereo"
        codec.format = "s16"
        codec.bit_rate = bitrate
        # Discord drops UDP packets now and then; in-band FEC lets the receiver rebuild them.
        codec.options = {
            "application": application,
            "frame_duration": str(FRAME_MS),
            "fec": "1",
            "packet_loss": "10",
        }
        codec.open()
        if codec.frame_size != FRAME_SAMPLES:  # pragma: no cover - a different libopus build
            raise RuntimeError(f"libopus chose {codec.frame_size}-sample frames, not {FRAME_SAMPLES}")
        self._codec = codec
        self._pending = bytearray()
        self._pts = 0

    def encode(self, pcm: bytes) -> list[bytes]:
        """Buffer ``pcm`` and return a packet for every complete 20 ms now buffered."""
        self._pending += pcm
        whole = len(self._pending) - len(self._pending) % _FRAME_BYTES
        if not whole:
            return []
        packets = [
            self._encode_frame(bytes(self._pending[start : start + _FRAME_BYTES]))
            for start in range(0, whole, _FRAME_BYTES)
        ]
        del self._pending[:whole]
        return packets

    def flush(self) -> list[bytes]:
        """Return the buffered remainder as one packet padded with silence (none if empty).

        A trailing partial sample (odd byte count) is dropped with the padding.
        """
        if not self._pending:
            return []
        usable = len(self._pending) - len(self._pending) % DISCORD_PCM.sample_bytes
        frame = bytes(self._pending[:usable]).ljust(_FRAME_BYTES, b"\x00")
        self._pending.clear()
        return [self._encode_frame(frame)]

    @property
    def buffered_ms(self) -> float:
        """Milliseconds of PCM waiting for a complete frame."""
        return len(self._pending) / DISCORD_PCM.bytes_per_second * 1000

    def _encode_frame(self, pcm: bytes) -> bytes:
        frame = frame_from_pcm(pcm, DISCORD_PCM)
        frame.pts = self._pts
        self._pts += FRAME_SAMPLES
        # libopus emits exactly one packet per frame; its lookahead is inside the audio, not
        # held back, so nothing is lost by never draining the encoder.
        packets = self._codec.encode(frame)
        if len(packets) != 1:  # pragma: no cover - would break the one-packet-per-20-ms pacing
            raise RuntimeError(f"libopus returned {len(packets)} packets for one 20 ms frame")
        return bytes(packets[0])


class OpusDecoder:
    """Opus packets from one Discord speaker in, 48 kHz stereo PCM out.

    Keep one per speaker (SSRC): Opus decoding carries state from packet to packet. A 20 ms
    packet gives 3840 bytes; other packet durations give their own length.
    """

    def __init__(self) -> None:
        codec = av.CodecContext.create("libopus", "r")
        codec.sample_rate = DISCORD_PCM.rate
        codec.layout = "stereo"
        self._codec = codec
        self._convert: Resampler | None = None

    def decode(self, packet: bytes) -> bytes:
        """PCM for one packet. Raises ``AudioError`` for a packet that is not Opus."""
        if packet == OPUS_SILENCE:
            return _SILENT_FRAME  # the commonest packet of all; spare libopus the work
        if not packet:
            raise AudioError("cannot decode an empty Opus packet")
        try:
            frames = self._codec.decode(av.Packet(packet))
        except av.FFmpegError as exc:
            raise AudioError(
                f"cannot decode Opus packet ({len(packet)} bytes, first byte "
                f"0x{packet[0]:02x}): {getattr(exc, 'strerror', None) or exc}"
            ) from exc
        return b"".join(self._pcm(frame) for frame in frames)

    def _pcm(self, frame: av.AudioFrame) -> bytes:
        if frame.format.name == "s16" and frame.layout.name == "stereo":
            return frame.to_ndarray().tobytes()  # what FFmpeg's libopus wrapper gives by default
        if self._convert is None:  # pragma: no cover - an FFmpeg build that decodes to float
            self._convert = Resampler(DISCORD_PCM, DISCORD_PCM)
        return self._convert.convert_frame(frame)

    def decode_missing(self) -> bytes:
        """20 ms of silence to stand in for a packet that never arrived.

        Silence rather than libopus concealment: speech-to-text treats a short gap as a pause,
        while concealment of a lost syllable invents sound.
        """
        return _SILENT_FRAME
