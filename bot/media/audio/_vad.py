"""Cutting each speaker's voice stream into utterances.

How a frame is judged to be speech
==================================

Per speaker, on the level of each 20 ms frame (RMS dBFS):

1. **Absolute minimum.** Below ``min_level_db`` a frame is never speech, whatever the noise
   floor: a quiet line's hiss and Opus comfort noise stay out.
2. **Above the noise floor.** A frame must be ``margin_db`` above that speaker's noise floor. The
   floor follows the level asymmetrically: it falls fast (the quiet moments between words
   show the true floor within ~0.1 s) and rises slowly (``floor_rise_s``), so speech, which keeps
   dipping between syllables, cannot drag the floor up, while a noise that came to stay is learnt.
3. **Steady sound is noise.** Speech is modulated at syllable rate: over 0.4 s its frame levels
   spread by 8–12 dB (standard deviation), while fans, hiss, hum, traffic and room tone spread
   by under 2.5 dB. When the last ``steady_window_s`` of levels spread by less than
   ``steady_std_db``, the sound is taken as noise: the floor jumps to it and the frame is not
   speech. This learns a new background within 0.4 s instead of seconds, and such a burst is
   shorter than ``min_speech_s`` so it is dropped. (A vowel held for longer than the window also
   looks steady; the utterance is already open by then and stays open through the hangover.)

Zero-crossing rate is not used: it separates voiced speech from hiss, but unvoiced consonants
(s, f, sh) look exactly like hiss, and the steadiness test catches stationary noise of any colour
for two float additions per frame. Everything costs a few microseconds per frame.

Utterances
==========

An utterance opens on the first speech frame, with ``pre_roll_s`` of the audio just before it,
so the first syllable is whole. It ends after ``silence_s`` without speech, counted either from
frames that are not speech or from the *absence* of frames: Discord stops sending when someone
stops talking, so ``tick()`` ends utterances on the clock alone. Gaps inside an utterance are
filled with silence so its PCM keeps real time (``ended - started`` is its duration). Bursts
with under ``min_speech_s`` of speech (clicks, coughs, a tapped mic) are dropped. An utterance
that reaches ``max_utterance_s`` is emitted there and the speaker carries on in a new one.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from bot.media.audio._format import DISCORD_PCM, PcmFormat

__all__ = ["SILENCE_DB", "Segmenter", "Speaker", "Utterance", "VadConfig", "frame_level_db"]

_log = logging.getLogger(__name__)

#: The level reported for digital silence (and empty frames) instead of minus infinity.
SILENCE_DB = -100.0
_FULL_SCALE_SQUARED = 32768.0**2
_MIN_MEAN_SQUARE = _FULL_SCALE_SQUARED * 10 ** (SILENCE_DB / 10)

Speaker = str | int
"""Who is talking: a Discord user id, an SSRC, a name; anything hashable that identifies one voice."""


def frame_level_db(pcm_frame: bytes) -> float:
    """RMS level of s16le PCM in dBFS (a full-scale square wave is 0; silence is ``SILENCE_DB``).

    All channels together. A few microseconds for a 20 ms frame: cheap enough to run on every
    received packet for barge-in.
    """
    samples = np.frombuffer(pcm_frame, dtype="<i2", count=len(pcm_frame) // 2)
    if not samples.size:
        return SILENCE_DB
    as_float = samples.astype(np.float32)
    mean_square = float(np.dot(as_float, as_float)) / samples.size
    if mean_square <= _MIN_MEAN_SQUARE:
        return SILENCE_DB
    return 10.0 * math.log10(mean_square / _FULL_SCALE_SQUARED)


@dataclass(frozen=True)  # no slots: ``VadConfig.silence_s`` must read as the default
class VadConfig:
    """How ``Segmenter`` finds speech and cuts it into utterances (see the module docstring)."""

    silence_s: float = 1.5
    """An utterance ends after this long without speech (or without any frames)."""
    min_speech_s: float = 0.5
    """Utterances with less speech than this are dropped as clicks, coughs and bumps."""
    max_utterance_s: float = 30.0
    """An utterance is cut and emitted at this length; the speaker continues in a new one."""
    pre_roll_s: float = 0.2
    """Audio kept from just before speech starts, so the first syllable is not clipped."""
    post_roll_s: float = 0.3
    """Audio kept after the last speech frame (the tail of the last word); the rest of the
    trailing silence is dropped."""
    min_level_db: float = -50.0
    """Absolute minimum level (dBFS) for speech, whatever the noise floor."""
    margin_db: float = 10.0
    """How far above the speaker's noise floor a frame must be to count as speech."""
    initial_floor_db: float = -70.0
    """The noise floor assumed for a new speaker: quiet, so their first word counts."""
    floor_rise_s: float = 4.0
    """Time constant of the floor rising toward a louder level (slow: speech must not lift it)."""
    floor_fall_s: float = 0.1
    """Time constant of the floor falling toward a quieter level (fast)."""
    steady_window_s: float = 0.4
    """How much recent audio the steadiness test looks at."""
    steady_std_db: float = 3.0
    """Frame levels spreading less than this (standard deviation, dB) over the window are noise."""
    max_gap_s: float = 0.06
    """Frames arriving later than this after the previous one mean a gap (filled with silence);
    smaller delays are network jitter."""

    def __post_init__(self) -> None:
        if not self.silence_s > 0:
            raise ValueError(f"VadConfig.silence_s must be positive, got {self.silence_s}")
        if not self.max_utterance_s > 0:
            raise ValueError(f"VadConfig.max_utterance_s must be positive, got {self.max_utterance_s}")
        if self.min_speech_s > self.max_utterance_s:
            raise ValueError(
                f"VadConfig.min_speech_s ({self.min_speech_s}) cannot exceed max_utterance_s "
                f"({self.max_utterance_s}): every utterance would be dropped"
            )


@dataclass(slots=True)
class Utterance:
    """One stretch of speech from one speaker."""

    speaker: Speaker
    pcm: bytes
    """The audio, in the segmenter's format, from pre-roll to post-roll (gaps filled with silence)."""
    fmt: PcmFormat
    started: float
    """Clock time (the ``now`` given to ``push``) of the first sample of ``pcm``."""
    ended: float
    """Clock time just after the last sample: ``ended - started`` is the duration of ``pcm``."""
    speech_s: float = 0.0
    """Seconds of it judged to be speech (the rest is pre-roll, pauses and post-roll)."""
    cut: bool = False
    """True when cut at ``max_utterance_s``: the speaker was still talking."""

    @property
    def duration_s(self) -> float:
        """Seconds of audio in ``pcm``."""
        return len(self.pcm) / self.fmt.bytes_per_second

    def __repr__(self) -> str:
        return (
            f"Utterance(speaker={self.speaker!r}, {self.duration_s:.2f} s, "
            f"speech {self.speech_s:.2f} s, {self.started:.2f}–{self.ended:.2f}{', cut' if self.cut else ''})"
        )


@dataclass(slots=True)
class _Voice:
    """What the segmenter knows about one speaker."""

    window: int
    floor_db: float
    levels: deque[float] = field(default_factory=deque)
    level_sum: float = 0.0
    level_squares: float = 0.0
    cursor: float | None = None
    """Clock time at the end of the last frame received (frames advance it by their length)."""
    pre_roll: deque[bytes] = field(default_factory=deque)
    pre_roll_bytes: int = 0
    # The open utterance, if any.
    open: bool = False
    confirmed: bool = False
    """Has shown ``min_speech_s`` of speech (carried over when a long utterance is cut)."""
    continued: bool = False
    started: float = 0.0
    chunks: list[bytes] = field(default_factory=list)
    trailing: list[bytes] = field(default_factory=list)
    """Frames since the last speech frame: kept back until speech resumes or the end is known."""
    size: int = 0
    speech_s: float = 0.0
    last_speech_end: float = 0.0

    def observe(self, level: float) -> float:
        """Add a level to the steadiness window; return the window's standard deviation (dB),
        or infinity while the window is not yet full."""
        self.levels.append(level)
        self.level_sum += level
        self.level_squares += level * level
        if len(self.levels) > self.window:
            old = self.levels.popleft()
            self.level_sum -= old
            self.level_squares -= old * old
        if len(self.levels) < self.window:
            return math.inf
        mean = self.level_sum / self.window
        return math.sqrt(max(self.level_squares / self.window - mean * mean, 0.0))

    def reset_levels(self) -> None:
        self.levels.clear()
        self.level_sum = self.level_squares = 0.0


class Segmenter:
    """Voice-activity segmentation for many speakers at once, one 20 ms frame at a time.

    ``push`` each received frame with the clock time it arrived (any monotonic seconds; frames of
    other lengths work too) and call ``tick`` every few hundred ms, so utterances end even when
    a speaker's frames simply stop. Each returned ``Utterance`` holds PCM in ``fmt``, the format
    frames are pushed in. Costs a few microseconds per frame; not thread-safe.
    """

    def __init__(self, config: VadConfig | None = None, fmt: PcmFormat = DISCORD_PCM) -> None:
        self.config = config or VadConfig()
        self.fmt = fmt
        self._voices: dict[Speaker, _Voice] = {}
        self._bps = fmt.bytes_per_second
        self._window = max(2, round(self.config.steady_window_s / 0.02))

    def push(self, speaker: Speaker, pcm_frame: bytes, now: float) -> Utterance | None:
        """Add one frame from ``speaker`` received at ``now``; return an utterance it completed."""
        config = self.config
        voice = self._voices.get(speaker)
        if voice is None:
            voice = self._voices[speaker] = _Voice(window=self._window, floor_db=config.initial_floor_db)
        emitted: Utterance | None = None

        if voice.cursor is not None and now - voice.cursor > config.max_gap_s:
            # Frames stopped for a while: Discord sends nothing while someone is quiet.
            if voice.open and now - voice.last_speech_end >= config.silence_s:
                emitted = self._finish(speaker, voice)
            elif voice.open:
                gap = self._silence(now - voice.cursor)
                voice.trailing.append(gap)
                voice.size += len(gap)
            else:
                voice.pre_roll.clear()  # audio from before the gap is not the lead-in to this
                voice.pre_roll_bytes = 0
            voice.reset_levels()  # a new burst: old levels say nothing about its steadiness
            voice.cursor = now
        elif voice.cursor is None:
            voice.cursor = now
        frame_start = voice.cursor
        frame_s = len(pcm_frame) / self._bps
        voice.cursor += frame_s

        is_speech = self._judge(voice, frame_level_db(pcm_frame), frame_s)

        if not voice.open:
            if is_speech:
                voice.open = True
                voice.confirmed = voice.continued = False
                voice.chunks = [*voice.pre_roll, pcm_frame]
                voice.size = voice.pre_roll_bytes + len(pcm_frame)
                voice.started = frame_start - voice.pre_roll_bytes / self._bps
                voice.speech_s = frame_s
                voice.last_speech_end = voice.cursor
                voice.pre_roll.clear()
                voice.pre_roll_bytes = 0
            else:
                voice.pre_roll.append(pcm_frame)
                voice.pre_roll_bytes += len(pcm_frame)
                while voice.pre_roll_bytes - len(voice.pre_roll[0]) >= config.pre_roll_s * self._bps:
                    voice.pre_roll_bytes -= len(voice.pre_roll.popleft())
            return emitted

        voice.size += len(pcm_frame)
        if is_speech:
            voice.chunks.extend(voice.trailing)
            voice.trailing.clear()
            voice.chunks.append(pcm_frame)
            voice.speech_s += frame_s
            voice.last_speech_end = voice.cursor
            if voice.speech_s >= config.min_speech_s:
                voice.confirmed = True
        else:
            voice.trailing.append(pcm_frame)
            if voice.cursor - voice.last_speech_end >= config.silence_s:
                return emitted or self._finish(speaker, voice)
        if voice.size >= config.max_utterance_s * self._bps:
            return emitted or self._finish(speaker, voice, cut=True)
        return emitted

    def tick(self, now: float) -> list[Utterance]:
        """Emit the utterances of speakers who have said nothing for ``silence_s`` by ``now``."""
        done = []
        for speaker, voice in self._voices.items():
            if voice.open and now - voice.last_speech_end >= self.config.silence_s:
                utterance = self._finish(speaker, voice)
                if utterance is not None:
                    done.append(utterance)
        return done

    def flush(self, speaker: Speaker | None = None) -> list[Utterance]:
        """Emit open utterances now (one speaker's, or everyone's): on leaving or shutting down."""
        speakers = list(self._voices) if speaker is None else [speaker]
        done = []
        for name in speakers:
            voice = self._voices.get(name)
            if voice is not None and voice.open:
                utterance = self._finish(name, voice)
                if utterance is not None:
                    done.append(utterance)
        return done

    def speaking(self, speaker: Speaker) -> bool:
        """Whether ``speaker`` is in an utterance with at least ``min_speech_s`` of speech so far.

        The confirmation delay keeps a cough or a click from counting as an interruption; use
        ``frame_level_db`` directly for a faster, cruder signal.
        """
        voice = self._voices.get(speaker)
        return voice is not None and voice.open and voice.confirmed

    def forget(self, speaker: Speaker) -> None:
        """Drop everything about ``speaker`` (left the channel), including an open utterance."""
        self._voices.pop(speaker, None)

    @property
    def speakers(self) -> list[Speaker]:
        """Speakers the segmenter holds state for."""
        return list(self._voices)

    def noise_floor_db(self, speaker: Speaker) -> float | None:
        """The current noise-floor estimate for ``speaker`` (for diagnostics), if known."""
        voice = self._voices.get(speaker)
        return None if voice is None else voice.floor_db

    def _silence(self, seconds: float) -> bytes:
        return bytes(int(seconds * self.fmt.rate) * self.fmt.sample_bytes)

    def _judge(self, voice: _Voice, level: float, frame_s: float) -> bool:
        config = self.config
        spread = voice.observe(level)
        if spread < config.steady_std_db:
            # Stationary sound is background: adopt its level as the floor at once.
            voice.floor_db = voice.level_sum / len(voice.levels)
            return False
        constant = config.floor_fall_s if level < voice.floor_db else config.floor_rise_s
        voice.floor_db += (level - voice.floor_db) * (1.0 - math.exp(-frame_s / constant))
        return level >= config.min_level_db and level >= voice.floor_db + config.margin_db

    def _finish(self, speaker: Speaker, voice: _Voice, *, cut: bool = False) -> Utterance | None:
        config = self.config
        tail = voice.trailing
        if not cut:
            kept, budget = [], config.post_roll_s * self._bps
            for chunk in tail:
                if budget <= 0:
                    break
                kept.append(chunk[: int(budget) - int(budget) % self.fmt.sample_bytes])
                budget -= len(chunk)
            tail = kept
        pcm = b"".join(voice.chunks) + b"".join(tail)
        utterance = Utterance(
            speaker=speaker,
            pcm=pcm,
            fmt=self.fmt,
            started=voice.started,
            ended=voice.started + len(pcm) / self._bps,
            speech_s=voice.speech_s,
            cut=cut,
        )
        # Keep speaking across a cut: the next utterance starts where this one ended.
        confirmed, continued = voice.confirmed, voice.continued
        voice.open = cut
        voice.confirmed = confirmed and cut
        voice.continued = cut
        voice.chunks, voice.trailing = [], []
        voice.size = 0
        voice.speech_s = 0.0
        voice.started = utterance.ended

        # A piece after a cut is the rest of real speech: any speech at all keeps it.
        if utterance.speech_s >= config.min_speech_s or (continued and utterance.speech_s > 0):
            return utterance
        _log.debug("dropped %r: under %.2f s of speech", utterance, config.min_speech_s)
        return None
