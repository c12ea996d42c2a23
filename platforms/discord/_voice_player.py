"""Speaking in a Discord voice channel: text in, 20 ms Opus frames out, as soon as audio exists.

Sentences are spoken in the order they are queued. Each is synthesised as a stream
(TEXT_TO_SPEECH with ``stream``), decoded piece by piece to 48 kHz stereo, encoded to 20 ms Opus
frames and queued for discord.py's player thread, so the first frame goes out while the rest of
the sentence — and the next sentences — are still being synthesised. Opus encoded here means
discord.py needs no system libopus to speak.

``stop()`` is barge-in: everything queued or playing is dropped at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
from typing import TYPE_CHECKING, Any

import discord

from bot.sdk import AudioError, ModelError, speech
from bot.sdk.media import DISCORD_PCM, OpusEncoder, StreamDecoder

if TYPE_CHECKING:
    from bot.sdk import AgentRuntime

__all__ = ["SpeechPlayer"]

_log = logging.getLogger(__name__)

_SILENCE_FRAME = b"\xf8\xff\xfe"
_WAIT_FOR_AUDIO_S = 0.02  # one frame: how long the player thread waits before sending silence
_END = b""
_LINGER_S = 0.4  # after the last sentence, keep the stream open this long for the next one


def _encode(encoder: OpusEncoder, decoder: StreamDecoder, chunk: bytes) -> list[bytes]:
    """One chunk of the speech stream as Opus frames (run in a thread)."""
    return encoder.encode(decoder.feed(chunk))


class _QueuedOpus(discord.AudioSource):
    """Opus frames from a queue, for discord.py's player thread; silence while more is coming."""

    def __init__(self) -> None:
        self.frames: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self.ended = False

    def end(self) -> None:
        """No more frames: the player stops once the queued ones are out."""
        if not self.ended:
            self.ended = True
            self.frames.put(_END)

    def is_opus(self) -> bool:
        return True

    def read(self) -> bytes:
        try:
            frame = self.frames.get(timeout=_WAIT_FOR_AUDIO_S)
        except queue.Empty:
            return _SILENCE_FRAME  # the next sentence is still being synthesised
        return b"" if frame == _END else frame

    def drain(self) -> None:
        with contextlib.suppress(queue.Empty):
            while True:
                self.frames.get_nowait()


class SpeechPlayer:
    """One character's voice in one voice channel."""

    def __init__(self, runtime: AgentRuntime, voice_client: Any) -> None:
        self.runtime = runtime
        self.voice_client = voice_client
        self._texts: asyncio.Queue[tuple[str, asyncio.Future[None]] | None] = asyncio.Queue()
        self._source: _QueuedOpus | None = None
        self._playing_done: asyncio.Event = asyncio.Event()
        self._playing_done.set()
        self._worker = runtime.create_task(self._work(), "discord:voice-speak")
        self._generation = 0
        self._busy = False

    @property
    def speaking(self) -> bool:
        return self._busy or not self._playing_done.is_set() or not self._texts.empty()

    def say(self, text: str) -> asyncio.Future[None]:
        """Queue ``text``; the future is done once its audio has been queued for playing."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._texts.put_nowait((text, done))
        return done

    def stop(self) -> None:
        """Barge-in: drop everything queued and stop the sound now."""
        self._generation += 1
        while not self._texts.empty():
            item = self._texts.get_nowait()
            if item is not None and not item[1].done():
                item[1].cancel()
        if self._source is not None:
            self._source.drain()
            self._source.end()
        if self.voice_client.is_playing():
            self.voice_client.stop()

    async def close(self) -> None:
        self.stop()
        self._worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._worker

    # -- the worker -----------------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            if self._source is not None and not self._source.ended:
                try:
                    item = await asyncio.wait_for(self._texts.get(), _LINGER_S)
                except TimeoutError:
                    if self._source is not None:  # None: stopped (barge-in) and finished while we waited
                        self._source.end()  # nothing more to say for now
                    continue
            else:
                item = await self._texts.get()
            if item is None:
                return
            text, done = item
            self._busy = True
            try:
                await self._speak(text, self._generation)
            except asyncio.CancelledError:
                raise
            except AudioError as exc:
                _log.warning(
                    "%s: the speech audio for a reply could not be played: %s", self.runtime.character.name, exc
                )
            except Exception:
                _log.exception("%s: could not speak a sentence", self.runtime.character.name)
            finally:
                self._busy = False
                if not done.done():
                    done.set_result(None)

    async def _speak(self, text: str, generation: int) -> None:
        name = self.runtime.character.name
        try:
            stream = await speech(self.runtime, text, stream=True)
        except ModelError as exc:
            _log.warning("%s: no voice for a reply: %s", name, exc)
            return
        decoder, encoder = StreamDecoder(stream.format, DISCORD_PCM), OpusEncoder()
        try:
            async for chunk in stream:
                if generation != self._generation:
                    return  # stopped (barge-in) while this sentence was arriving
                # Decoding and Opus encoding cost about 0.2 ms per 20 ms of audio: off the loop.
                frames = await asyncio.to_thread(_encode, encoder, decoder, chunk)
                if generation != self._generation:
                    return  # stopped while encoding: this audio must not play after the interruption
                await self._queue(frames)
            if generation == self._generation:
                frames = await asyncio.to_thread(lambda: encoder.encode(decoder.flush()) + encoder.flush())
                if generation == self._generation:
                    await self._queue(frames)
        finally:
            await stream.aclose()

    async def _queue(self, frames: list[bytes]) -> None:
        if not frames:
            return
        source = await self._ensure_playing()
        for frame in frames:
            source.frames.put(frame)

    async def _ensure_playing(self) -> _QueuedOpus:
        if self._source is not None and not self._source.ended:
            return self._source
        await self._playing_done.wait()  # discord.py plays one source at a time: let the last one finish
        source = self._source = _QueuedOpus()
        self._playing_done.clear()
        loop = asyncio.get_running_loop()

        def after(error: Exception | None) -> None:  # discord.py calls this from its player thread
            if error is not None:
                _log.warning("voice playback stopped: %s", error)
            loop.call_soon_threadsafe(self._finished, source)

        if self.voice_client.is_connected():
            self.voice_client.play(source, after=after)
        else:
            source.end()
            loop.call_soon(self._finished, source)
        return source

    def _finished(self, source: _QueuedOpus) -> None:
        if self._source is source:
            self._source = None
            self._playing_done.set()
