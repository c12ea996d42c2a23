"""Hearing people in a Discord voice channel: RTP packets in, one utterance per speaker out.

discord.py sends voice but does not receive it, so troupe reads the voice UDP socket itself
(``VoiceConnectionState.add_socket_listener``) and undoes what Discord did to each packet:

1. RTP header: version 2, payload type 120 (Opus); RTCP and anything else is skipped.
2. Transport encryption, ``aead_xchacha20_poly1305_rtpsize``: the fixed header, the CSRCs and
   the 4-byte header of the RTP extension are the associated data; the extension's body is
   encrypted with the Opus frame; the nonce is the packet's last 4 bytes, zero-padded to 24.
3. DAVE end-to-end encryption (when the call negotiated it): the frame is decrypted with the
   sender's key through discord.py's own ``davey`` session, which knows the sender by user id —
   learned from the SPEAKING (op 5) messages that map each SSRC to a user.
4. Opus → 48 kHz stereo PCM, per speaker (each SSRC has its own decoder state).
5. Voice activity per speaker (``bot.media.audio.Segmenter``): an utterance ends after a configurable
   silence; Discord stops sending when someone stops talking, so silence is often no packets
   at all and a timer ends it.

The socket listener runs in discord.py's reader thread: it only hands the bytes to the event
loop. Everything else runs in the loop, and is cheap per 20 ms frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import davey
import nacl.bindings
import nacl.exceptions

from bot.sdk import AudioError, BackgroundTasks
from bot.sdk.media import DISCORD_PCM, OpusDecoder, Segmenter, Utterance, VadConfig, frame_level_db

__all__ = ["RtpPacket", "VoiceReceiver", "decrypt_rtpsize", "parse_rtp"]

_log = logging.getLogger(__name__)

_OPUS_PAYLOAD_TYPE = 0x78
_SILENCE_FRAME = b"\xf8\xff\xfe"
_TICK_S = 0.02  # how often silence is checked for: it adds directly to the reply's latency
_QUEUE_LIMIT = 2000  # about 40 s of audio from one speaker; beyond that packets are dropped


@dataclass(frozen=True, slots=True)
class RtpPacket:
    """One received RTP packet, still encrypted."""

    sequence: int
    timestamp: int
    ssrc: int
    header_end: int
    """Where the associated data ends: fixed header, CSRCs and the extension's 4-byte header."""
    extension_words: int
    """Length of the (encrypted) extension body in 32-bit words; 0 without an extension."""
    data: bytes


def parse_rtp(packet: bytes) -> RtpPacket | None:
    """The RTP header of a voice packet, or ``None`` for RTCP, keep-alives and anything else."""
    if len(packet) < 12 + 4 or packet[0] >> 6 != 2 or packet[1] & 0x7F != _OPUS_PAYLOAD_TYPE:
        return None
    csrc_count = packet[0] & 0x0F
    end = 12 + 4 * csrc_count
    words = 0
    if packet[0] & 0x10:  # an RTP header extension (Discord sends one, 0xBEDE)
        if len(packet) < end + 4:
            return None
        (words,) = struct.unpack_from(">H", packet, end + 2)
        end += 4
    sequence, timestamp, ssrc = struct.unpack_from(">HII", packet, 2)
    return RtpPacket(sequence, timestamp, ssrc, end, words, packet)


def decrypt_rtpsize(packet: RtpPacket, secret_key: bytes) -> bytes:
    """The Opus frame (still DAVE-encrypted if DAVE is on) of an ``aead_xchacha20_poly1305_rtpsize`` packet.

    Raises:
        ValueError: the packet does not decrypt with this key (not ours, or corrupted).
    """
    data = packet.data
    if len(data) < packet.header_end + 16 + 4:
        raise ValueError("packet too short")
    nonce = data[-4:] + bytes(20)
    try:
        plain = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(
            data[packet.header_end : -4], data[: packet.header_end], nonce, secret_key
        )
    except nacl.exceptions.CryptoError as exc:
        raise ValueError("packet does not decrypt") from exc
    return plain[4 * packet.extension_words :]


class VoiceReceiver:
    """Turns one voice connection's packets into utterances, one speaker at a time each.

    ``on_utterance(user_id, utterance)`` is awaited (as a task) for every finished utterance;
    ``on_voice(user_id, level_db)`` is called for every decoded frame (barge-in);
    ``on_failure(reason)`` is awaited once if listening cannot work (e.g. DAVE decryption).
    """

    def __init__(
        self,
        voice_client: Any,
        vad: VadConfig,
        *,
        on_utterance: Callable[[int, Utterance], Coroutine[Any, Any, None]],
        on_voice: Callable[[int, float], None] | None = None,
        on_failure: Callable[[str], Coroutine[Any, Any, None]] | None = None,
        is_bot: Callable[[int], bool] = lambda user: False,
        agent: str | None = None,
    ) -> None:
        self.voice_client = voice_client
        self.segmenter = Segmenter(vad, DISCORD_PCM)
        self.on_utterance, self.on_voice, self.on_failure = on_utterance, on_voice, on_failure
        self.is_bot = is_bot
        self._bots: dict[int, bool] = {}  # user id -> is a bot, asked once per user (not per packet)
        self.users: dict[int, int] = {}  # ssrc -> user id (from SPEAKING)
        self._decoders: dict[int, OpusDecoder] = {}
        self._queue: asyncio.Queue[bytes] = asyncio.Queue(_QUEUE_LIMIT)
        self._loop = asyncio.get_running_loop()
        # Its own tasks, not the agent's: they end with this voice connection.
        self._tasks = BackgroundTasks(
            f"troupe:{agent}:discord:voice-receive" if agent else "troupe:voice-receive", agent=agent
        )
        self._failed = False
        self._dave_failures = 0
        self.packets = 0
        self.dropped = 0

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self.voice_client._connection.add_socket_listener(self._on_packet)
        self._tasks.start(self._run(), "packets")

    async def close(self) -> None:
        with contextlib.suppress(Exception):  # the connection may already be gone
            self.voice_client._connection.remove_socket_listener(self._on_packet)
        await self._tasks.close()

    def on_speaking(self, data: dict[str, Any]) -> None:
        """A SPEAKING (op 5) message from the voice gateway: who is behind an SSRC."""
        try:
            self.users[int(data["ssrc"])] = int(data["user_id"])
        except (KeyError, TypeError, ValueError):
            _log.debug("SPEAKING without ssrc/user_id: %r", data)

    # -- the reader thread ----------------------------------------------------------------

    def _on_packet(self, data: bytes) -> None:
        # Runs in discord.py's socket reader thread: hand over and return at once.
        self._loop.call_soon_threadsafe(self._enqueue, data)

    def _enqueue(self, data: bytes) -> None:
        try:
            self._queue.put_nowait(data)
        except asyncio.QueueFull:
            self.dropped += 1

    # -- the loop -------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                data = await asyncio.wait_for(self._queue.get(), _TICK_S)
            except TimeoutError:
                data = None
            now = self._loop.time()
            if data is not None:
                self._handle(data, now)
            for utterance in self.segmenter.tick(now):
                self._tasks.start(self.on_utterance(int(utterance.speaker), utterance), "utterance")

    def _handle(self, data: bytes, now: float) -> None:
        packet = parse_rtp(data)
        if packet is None or self._failed:
            return
        user = self.users.get(packet.ssrc)
        if user is None:
            return  # not yet mapped by SPEAKING
        if user not in self._bots:
            self._bots[user] = self.is_bot(user)
        if self._bots[user]:
            return
        conn = self.voice_client._connection
        if conn.mode != "aead_xchacha20_poly1305_rtpsize":
            self._fail(f"the voice connection uses the encryption mode {conn.mode!r}, which troupe cannot decrypt")
            return
        try:
            frame = decrypt_rtpsize(packet, bytes(conn.secret_key))
        except ValueError:
            self.dropped += 1
            return
        clear = self._undo_dave(conn, user, frame)
        if clear is None:
            return
        self.packets += 1
        decoder = self._decoders.setdefault(packet.ssrc, OpusDecoder())
        try:
            pcm = decoder.decode(clear) if clear != _SILENCE_FRAME else decoder.decode_missing()
        except AudioError:
            self.dropped += 1
            return
        if self.on_voice is not None and clear != _SILENCE_FRAME:
            self.on_voice(user, frame_level_db(pcm))
        utterance = self.segmenter.push(user, pcm, now)
        if utterance is not None:
            self._tasks.start(self.on_utterance(user, utterance), "utterance")

    def _undo_dave(self, conn: Any, user: int, frame: bytes) -> bytes | None:
        session = getattr(conn, "dave_session", None)
        if session is None or not getattr(conn, "can_encrypt", False):
            return frame  # no DAVE on this call (or passthrough while it is being set up)
        try:
            return bytes(session.decrypt(user, davey.MediaType.audio, frame))
        except Exception as exc:
            # A few failures happen around key changes; many in a row mean it cannot work.
            self._dave_failures += 1
            if self._dave_failures >= 50:
                self._fail(f"end-to-end (DAVE) decryption keeps failing ({exc.__class__.__name__}: {exc})")
            return None

    def _fail(self, reason: str) -> None:
        if self._failed:
            return
        self._failed = True
        if self.on_failure is not None:
            self._tasks.start(self.on_failure(reason), "failure")
