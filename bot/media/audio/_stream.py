"""Decoding text-to-speech audio while it is still arriving."""

from __future__ import annotations

import logging
import re
import struct
from typing import Any

import av
from av.audio.codeccontext import AudioCodecContext

from bot.media.audio._decode import decode_audio
from bot.media.audio._errors import AudioError
from bot.media.audio._format import PcmFormat
from bot.media.audio._ogg import OggPacketReader, OpusHead
from bot.media.audio._resample import Resampler

__all__ = ["STREAM_FORMATS", "StreamDecoder"]

_log = logging.getLogger(__name__)

#: What ``StreamDecoder`` accepts, for error messages and docs.
STREAM_FORMATS = ("mp3", "pcm_<rate>", "wav", "opus")

# ElevenLabs spells formats "mp3_44100_128", "pcm_24000", "opus_48000_64"; OpenAI "mp3", "pcm"
# (24 kHz), "wav", "opus". The codec is the first word; for pcm the rate is the second.
_PCM = re.compile(r"pcm(?:_(\d+))?")
_OPENAI_PCM_RATE = 24000


class StreamDecoder:
    """Turn an audio stream arriving in chunks into PCM in ``out``, as early as possible.

    ``format`` is ``"mp3"``, ``"pcm_<rate>"`` (raw s16le mono, e.g. ``pcm_16000``; bare ``"pcm"``
    means OpenAI's 24 kHz), ``"wav"`` or ``"opus"`` (Ogg/Opus); vendor suffixes such as
    ``mp3_44100_128`` are accepted. All four decode incrementally: ``feed`` returns the PCM
    that the bytes so far allow, so playback can start on the first chunk, and splitting the
    stream differently gives the same samples. ``flush`` returns the rest and ends the stream.

    Damaged frames inside a stream are skipped (logged at debug) rather than stopping playback.
    ``AudioError`` when the bytes are plainly not audio: from ``feed`` as soon as a wav or Ogg
    header is wrong, from ``flush`` if the stream held bytes but gave no audio at all (an error
    page sent in place of audio, a wrong ``format``). ``ValueError`` for an unknown ``format``.
    """

    def __init__(self, format: str, out: PcmFormat) -> None:
        self.format = format
        self.out = out
        codec = format.lower().split("_", 1)[0]
        pcm = _PCM.fullmatch(format.lower())
        if pcm:
            rate = int(pcm.group(1)) if pcm.group(1) else _OPENAI_PCM_RATE
            self._source: _Source = _PcmSource(PcmFormat(rate, 1), out)
        elif codec == "mp3":
            self._source = _Mp3Source(out)
        elif codec == "wav":
            self._source = _WavSource(out)
        elif codec in ("opus", "ogg"):
            self._source = _OggOpusSource(out)
        else:
            raise ValueError(f"unknown stream format {format!r}; expected one of {', '.join(STREAM_FORMATS)}")
        self._received = 0
        self._produced = 0
        self._finished = False

    def feed(self, chunk: bytes) -> bytes:
        """Add the next bytes of the stream; return the PCM they completed (maybe ``b""``)."""
        if self._finished:
            raise RuntimeError("StreamDecoder.feed() after flush(): make a new decoder per stream")
        if not chunk:
            return b""
        self._received += len(chunk)
        pcm = self._source.feed(chunk)
        self._produced += len(pcm)
        return pcm

    def flush(self) -> bytes:
        """End the stream and return the PCM still held back. Raises ``AudioError`` as above."""
        if self._finished:
            return b""
        self._finished = True
        pcm = self._source.flush()
        self._produced += len(pcm)
        if self._received and not self._produced:
            raise AudioError(
                f"cannot decode {self.format} stream: {self._received} bytes gave no audio "
                "(is the format right, or is it an error message?)"
            )
        return pcm


class _Source:
    """One format's incremental decoder: bytes in, PCM in the output format out."""

    def feed(self, chunk: bytes) -> bytes:
        raise NotImplementedError

    def flush(self) -> bytes:
        raise NotImplementedError


class _PcmSource(_Source):
    def __init__(self, src: PcmFormat, out: PcmFormat) -> None:
        self._resampler = Resampler(src, out)  # keeps a trailing odd byte for the next chunk

    def feed(self, chunk: bytes) -> bytes:
        return self._resampler.convert(chunk)

    def flush(self) -> bytes:
        return self._resampler.flush()


class _Mp3Source(_Source):
    """MPEG audio frames split by FFmpeg's parser, decoded one by one.

    A LAME/Xing "Info" frame at the start holds no audio, only the encoder delay; it is skipped
    and the delay trimmed, so the output lines up with decoding the whole file. The end padding
    (under one frame of silence) is kept: trimming it would mean holding back the last frame.
    """

    _DECODER_DELAY = 529  # samples every mp3 decoder adds (LAME's documented value)

    def __init__(self, out: PcmFormat) -> None:
        self._codec = av.CodecContext.create("mp3", "r")
        self._resampler = Resampler(out, out)
        self._head = bytearray()  # bytes held until a leading ID3 tag is known and skipped
        self._started = False
        self._first_packet = True
        self._skip = 0  # decoded samples still to drop from the start

    def feed(self, chunk: bytes) -> bytes:
        if not self._started:
            self._head += chunk
            data = _strip_id3(self._head)
            if data is None:
                return b""
            self._started = True
            self._head = bytearray()
            chunk = data
        return self._decode(self._codec.parse(chunk))

    def flush(self) -> bytes:
        pcm = b""
        if not self._started:  # the whole stream was shorter than its ID3 tag claims
            self._started = True
            pcm += self._decode(self._codec.parse(bytes(self._head)))
        pcm += self._decode(self._codec.parse(None))
        pcm += self._decode([None])
        return pcm + self._resampler.flush()

    def _decode(self, packets: list[av.Packet[Any]] | list[None]) -> bytes:
        pieces = []
        for packet in packets:
            if self._first_packet and packet is not None:
                self._first_packet = False
                delay = _lame_delay(bytes(packet))
                if delay is not None:
                    self._skip = delay + self._DECODER_DELAY
                    continue
            try:
                frames = self._codec.decode(packet)
            except av.FFmpegError as exc:
                _log.debug("skipping an undecodable mp3 frame: %s", exc)
                continue
            pcm, self._skip = _trimmed_pcm(frames, self._skip, self._resampler)
            pieces.append(pcm)
        return b"".join(pieces)


class _WavSource(_Source):
    """A RIFF header read as it arrives, then 16-bit PCM streamed through a resampler.

    Streaming servers write 0 or 0xFFFFFFFF as the data size; both mean "until the end".
    Anything but 16-bit integer PCM (float, 24-bit, μ-law) is buffered and decoded by FFmpeg
    at ``flush``.
    """

    def __init__(self, out: PcmFormat) -> None:
        self._out = out
        self._head = bytearray()
        self._pcm: Resampler | None = None
        self._remaining: int | None = None  # data bytes still expected, if the size is known
        self._buffered: bytearray | None = None  # set when falling back to decode at flush

    def feed(self, chunk: bytes) -> bytes:
        if self._buffered is not None:
            self._buffered += chunk
            return b""
        if self._pcm is None:
            self._head += chunk
            parsed = _parse_wav_header(self._head)
            if parsed is None:
                return b""
            src, data_start, data_size = parsed
            if src is None:
                self._buffered = self._head
                return b""
            self._pcm = Resampler(src, self._out)
            self._remaining = data_size
            chunk = bytes(self._head[data_start:])
            self._head = bytearray()
        if self._remaining is not None:
            chunk = chunk[: self._remaining]  # later chunks (LIST, id3) are metadata
            self._remaining -= len(chunk)
        return self._pcm.convert(chunk)

    def flush(self) -> bytes:
        if self._buffered is not None:
            return decode_audio(bytes(self._buffered), self._out)
        if self._pcm is None:
            if self._head:
                raise AudioError(f"cannot decode wav stream: {len(self._head)} bytes and no complete RIFF/WAVE header")
            return b""
        return self._pcm.flush()


class _OggOpusSource(_Source):
    """Ogg pages split into Opus packets as they arrive, decoded by libopus at 48 kHz.

    The pre-skip is dropped from the start; the end is not trimmed to the last granule
    position (that would mean holding back the last packet), so up to 20 ms of encoder padding
    may follow the audio.
    """

    def __init__(self, out: PcmFormat) -> None:
        self._out = out
        self._reader = OggPacketReader()
        self._head: OpusHead | None = None
        self._tags_seen = False
        self._codec: AudioCodecContext | None = None
        self._resampler: Resampler | None = None
        self._skip = 0

    def feed(self, chunk: bytes) -> bytes:
        return b"".join(self._decode(packet) for packet in self._reader.feed(chunk))

    def flush(self) -> bytes:
        if self._reader.leftover:
            _log.debug("Ogg/Opus stream ends inside a page; %d bytes dropped", self._reader.leftover)
        if self._resampler is None:
            return b""
        return self._resampler.flush()

    def _decode(self, packet: bytes) -> bytes:
        if self._head is None:
            self._head = OpusHead.parse(packet)
            if self._head.mapping_family != 0 or not 1 <= self._head.channels <= 2:
                raise AudioError(
                    f"cannot stream Ogg/Opus with {self._head.channels} channels "
                    f"(mapping family {self._head.mapping_family}); only mono and stereo"
                )
            codec = av.CodecContext.create("libopus", "r")
            assert isinstance(codec, AudioCodecContext)
            codec.sample_rate = 48000
            codec.layout = "mono" if self._head.channels == 1 else "stereo"
            self._codec = codec
            self._resampler = Resampler(self._out, self._out)
            self._skip = self._head.pre_skip
            return b""
        if not self._tags_seen:  # OpusTags: the second packet, metadata only
            self._tags_seen = True
            return b""
        assert self._codec is not None and self._resampler is not None
        try:
            frames = self._codec.decode(av.Packet(packet))
        except av.FFmpegError as exc:
            _log.debug("skipping an undecodable Opus packet: %s", exc)
            return b""
        pcm, self._skip = _trimmed_pcm(frames, self._skip, self._resampler)
        return pcm


def _trimmed_pcm(frames: list[av.AudioFrame], skip: int, resampler: Resampler) -> tuple[bytes, int]:
    """``frames`` resampled, after dropping ``skip`` samples from the start (encoder delay or
    pre-skip); returns the PCM and how many samples are still to drop."""
    pieces = []
    for frame in frames:
        if skip:
            if frame.samples <= skip:
                skip -= frame.samples
                continue
            frame = _drop_start(frame, skip)
            skip = 0
        pieces.append(resampler.convert_frame(frame))
    return b"".join(pieces), skip


def _strip_id3(head: bytearray) -> bytes | None:
    """``head`` without a leading ID3v2 tag, or ``None`` while the tag is still arriving."""
    if len(head) < 10:
        return None if b"ID3".startswith(bytes(head[:3])) else bytes(head)
    if head[:3] != b"ID3":
        return bytes(head)
    size = (head[6] & 0x7F) << 21 | (head[7] & 0x7F) << 14 | (head[8] & 0x7F) << 7 | head[9] & 0x7F
    end = 10 + size + (10 if head[5] & 0x10 else 0)  # flag 0x10: a footer follows
    return bytes(head[end:]) if len(head) >= end else None


def _lame_delay(frame: bytes) -> int | None:
    """The encoder delay from a Xing/Info frame's LAME tag, or ``None`` for an audio frame."""
    for tag in (b"Xing", b"Info"):
        at = frame.find(tag, 4, 48)  # after the 4-byte header and 9–32 bytes of side info
        if at >= 0:
            break
    else:
        return None
    flags = int.from_bytes(frame[at + 4 : at + 8], "big")
    lame = at + 8 + 4 * bool(flags & 1) + 4 * bool(flags & 2) + 100 * bool(flags & 4) + 4 * bool(flags & 8)
    if len(frame) < lame + 24:
        return 0
    delay_padding = frame[lame + 21 : lame + 24]
    return delay_padding[0] << 4 | delay_padding[1] >> 4


def _drop_start(frame: av.AudioFrame, count: int) -> av.AudioFrame:
    """A copy of ``frame`` without its first ``count`` samples (per channel)."""
    array = frame.to_ndarray()
    # Planar: one row per channel. Packed: one row, channels interleaved.
    array = array[:, count:] if frame.format.is_planar else array[:, count * len(frame.layout.channels) :]
    trimmed = av.AudioFrame.from_ndarray(array.copy(), format=frame.format.name, layout=frame.layout.name)
    trimmed.sample_rate = frame.sample_rate
    return trimmed


_RIFF = struct.Struct("<4sI4s")
_CHUNK = struct.Struct("<4sI")
_FMT = struct.Struct("<HHIIHH")  # format tag, channels, rate, byte rate, block align, bits
_PCM_TAG, _EXTENSIBLE_TAG = 1, 0xFFFE


def _parse_wav_header(head: bytearray) -> tuple[PcmFormat | None, int, int | None] | None:
    """Find the data chunk: ``(format or None if not s16, data offset, data size or None)``.

    ``None`` while the header is incomplete. ``AudioError`` if it is not RIFF/WAVE at all.
    """
    if len(head) < _RIFF.size:
        return None
    riff, _size, wave = _RIFF.unpack_from(head)
    if riff not in (b"RIFF", b"RF64") or wave != b"WAVE":
        raise AudioError(f"cannot decode wav stream: it starts with {bytes(head[:12])!r}, not a RIFF/WAVE header")
    position = _RIFF.size
    fmt: PcmFormat | None = None
    while len(head) >= position + _CHUNK.size:
        chunk_id, size = _CHUNK.unpack_from(head, position)
        body = position + _CHUNK.size
        if chunk_id == b"data":
            known = size if riff == b"RIFF" and 0 < size < 0xFFFFFFFF else None
            return fmt, body, known
        if len(head) < body + size:
            return None
        if chunk_id == b"fmt " and size >= _FMT.size:
            tag, channels, rate, _byte_rate, _align, bits = _FMT.unpack_from(head, body)
            pcm = tag == _PCM_TAG or (tag == _EXTENSIBLE_TAG and head[body + 24 : body + 26] == b"\x01\x00")
            if pcm and bits == 16 and channels and rate:  # the extensible form says PCM in its subformat
                fmt = PcmFormat(rate, channels)
        position = body + size + (size & 1)  # chunks are padded to even length
    return None
