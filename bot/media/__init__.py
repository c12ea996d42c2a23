"""Media helpers: audio for voice, the frames and sound of a video, the text of a PDF or a Word
document, text for the ear."""

__all__: list[str] = []
