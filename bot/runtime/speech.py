"""Listening and speaking, asked of the runtime: a platform hands over audio and gets words, or
hands over words and gets audio, without knowing the model types, their parameters or the
shapes model plugins return (``bytes`` or a :class:`~bot.kernel.models.SpeechStream`).

::

    text = await transcribe(runtime, ogg_bytes, "voice.ogg")
    audio, format = await synthesize(runtime, "Hello!", "opus")
    stream = await speech(runtime, "Hello!", stream=True)   # audio as it is generated
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from bot.kernel.errors import AudioError
from bot.kernel.models import ModelType, SpeechParams, SpeechStream

if TYPE_CHECKING:
    from bot.runtime.agent import AgentRuntime

__all__ = ["speech", "synthesize", "transcribe"]

SpeechFormat = Literal["mp3", "opus", "wav", "pcm"]

#: What a model plugin's bytes are when no format was asked for (OpenAI's default).
_DEFAULT_FORMAT = "mp3"


async def transcribe(runtime: AgentRuntime, audio: bytes, filename: str) -> str:
    """The words said in ``audio`` (whitespace stripped; ``""`` for none). ``filename`` tells
    the model the format (``voice.ogg``, ``speech.wav`` …).

    Raises:
        ModelError: no transcription model, or none answered.
    """
    said = await runtime.use_model(ModelType.TRANSCRIPTION, {"audio": audio, "filename": filename})
    return str(said or "").strip()


async def speech(
    runtime: AgentRuntime, text: str, format: SpeechFormat | None = None, *, stream: bool = False
) -> SpeechStream:
    """``text`` said aloud, in ``format`` if the model can (the stream's ``format`` says what
    the audio really is); with ``stream``, as it is generated, else once it is all there.

    Raises:
        ModelError: no speech model, or none answered.
        AudioError: the model returned something that is not audio.
    """
    params: SpeechParams = {"text": text}
    if format is not None:
        params["format"] = format
    if stream:
        params["stream"] = True
    result = await runtime.use_model(ModelType.TEXT_TO_SPEECH, params)
    if isinstance(result, SpeechStream):
        return result
    if isinstance(result, (bytes, bytearray, memoryview)):
        # Bytes are taken to be what was asked for; decoders check what they really are.
        return SpeechStream.of(bytes(result), format or _DEFAULT_FORMAT)
    raise AudioError(f"the speech model returned {type(result).__name__}, not audio")


async def synthesize(runtime: AgentRuntime, text: str, format: SpeechFormat) -> tuple[bytes, str]:
    """All of the audio of ``text`` said aloud, and its format (``format`` if the model could).

    Raises:
        ModelError: no speech model, or none answered.
        AudioError: the model returned something that is not audio.
    """
    said = await speech(runtime, text, format)
    return await said.read(), said.format
