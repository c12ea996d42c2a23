"""Audio processing for voice: decoding, resampling, Opus, voice-activity segmentation.

Pure computation on bytes; no platform SDK. Everything here is synchronous and cheap on one
20 ms frame; whole files (``decode_audio``, ``ogg_opus``) should run in a thread when long.

::

    pcm = decode_audio(mp3_bytes, DISCORD_PCM)      # any file -> 48 kHz stereo s16le
    note = ogg_opus(pcm, DISCORD_PCM)               # Telegram voice note

    decoder, encoder = StreamDecoder("mp3", DISCORD_PCM), OpusEncoder()
    async for chunk in tts_stream:                  # TTS arriving in chunks
        send(encoder.encode(decoder.feed(chunk)))   # 20 ms Opus packets for Discord
    send(encoder.encode(decoder.flush()) + encoder.flush())

    segmenter = Segmenter(VadConfig(), DISCORD_PCM) # listening: per-speaker utterances
    utterance = segmenter.push(user_id, OpusDecoder().decode(packet), time.monotonic())
"""

from __future__ import annotations

from bot.media.audio._decode import decode_audio
from bot.media.audio._errors import AudioError, translate_av_errors
from bot.media.audio._files import VOICE_NOTE_PCM, ogg_opus, wav
from bot.media.audio._format import DISCORD_PCM, SPEECH_PCM, PcmFormat, duration_s
from bot.media.audio._opus import FRAME_MS, FRAME_SAMPLES, OPUS_SILENCE, OpusDecoder, OpusEncoder
from bot.media.audio._resample import Resampler, resample
from bot.media.audio._stream import STREAM_FORMATS, StreamDecoder
from bot.media.audio._vad import SILENCE_DB, Segmenter, Speaker, Utterance, VadConfig, frame_level_db

__all__ = [
    "AudioError",
    "DISCORD_PCM",
    "FRAME_MS",
    "FRAME_SAMPLES",
    "OPUS_SILENCE",
    "OpusDecoder",
    "OpusEncoder",
    "PcmFormat",
    "Resampler",
    "SILENCE_DB",
    "SPEECH_PCM",
    "STREAM_FORMATS",
    "Segmenter",
    "Speaker",
    "StreamDecoder",
    "Utterance",
    "VOICE_NOTE_PCM",
    "VadConfig",
    "decode_audio",
    "duration_s",
    "frame_level_db",
    "ogg_opus",
    "resample",
    "translate_av_errors",
    "wav",
]

# Tracebacks and reprs show the public path (httpx does the same).
for _name in (
    "AudioError",
    "OpusDecoder",
    "OpusEncoder",
    "PcmFormat",
    "Resampler",
    "Segmenter",
    "StreamDecoder",
    "Utterance",
    "VadConfig",
):
    globals()[_name].__module__ = __name__
del _name
