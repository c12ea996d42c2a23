"""Audio and video for plugins and platforms: decoding, Opus, voice activity, a video's sound and frame.

Apart from :mod:`bot.sdk` because audio loads PyAV and numpy: only what uses them pays for them.
"""

from bot.media.audio import (
    DISCORD_PCM,
    SPEECH_PCM,
    OpusDecoder,
    OpusEncoder,
    PcmFormat,
    Segmenter,
    StreamDecoder,
    Utterance,
    VadConfig,
    decode_audio,
    frame_level_db,
    ogg_opus,
    resample,
    wav,
)
from bot.media.video import probe_video, video_parts

__all__ = [
    "decode_audio",
    "DISCORD_PCM",
    "frame_level_db",
    "ogg_opus",
    "OpusDecoder",
    "OpusEncoder",
    "PcmFormat",
    "probe_video",
    "resample",
    "Segmenter",
    "SPEECH_PCM",
    "StreamDecoder",
    "Utterance",
    "VadConfig",
    "video_parts",
    "wav",
]
