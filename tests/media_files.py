"""Small media files made in the tests: a PDF with a text layer, an encrypted PDF, a Word document,
a short MP4."""

from __future__ import annotations

import io
from fractions import Fraction

import av
import numpy as np
from pypdf import PdfWriter

__all__ = ["encrypted_pdf", "make_docx", "make_pdf", "make_video", "protected_docx"]


def make_pdf(text: str) -> bytes:
    """A one-page PDF whose text layer says ``text``."""
    stream = f"BT /F1 18 Tf 50 700 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % o for o in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def make_docx(*blocks: str | list[list[str]]) -> bytes:
    """A Word document, written by python-docx: a string is a paragraph (``"# Title"`` a level-1
    heading, ``"- item"`` a bulleted item), a list of rows a table."""
    import docx

    document = docx.Document()
    for block in blocks:
        if isinstance(block, list):
            table = document.add_table(rows=len(block), cols=len(block[0]))
            for r, row in enumerate(block):
                for c, text in enumerate(row):
                    table.cell(r, c).text = text
        elif block.startswith("#"):
            level = len(block) - len(block.lstrip("#"))
            document.add_heading(block.lstrip("# "), level)
        elif block.startswith("- "):
            document.add_paragraph(block[2:], style="List Bullet")
        else:
            document.add_paragraph(block)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def protected_docx() -> bytes:
    """The start of what Word writes for a .docx with a password: an OLE compound file holding an
    ``EncryptionInfo`` stream (enough for a reader to tell it from an old .doc)."""
    return b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504) + "EncryptionInfo".encode("utf-16-le") + bytes(64)


def encrypted_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt("secret", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_video(seconds: float = 1.0, *, sound: bool = True) -> bytes:
    """An MP4 of an orange square, with a 440 Hz tone when ``sound``."""
    out = io.BytesIO()
    with av.open(out, mode="w", format="mp4") as container:
        video = container.add_stream("mpeg4", rate=10)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        audio = container.add_stream("aac", rate=16000) if sound else None
        picture = np.zeros((48, 64, 3), dtype=np.uint8)
        picture[:, :] = (255, 128, 0)
        for _ in range(int(seconds * 10)):
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        if audio is not None:
            t = np.arange(int(16000 * seconds)) / 16000
            tone = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
            for start in range(0, len(tone), 1024):
                chunk = tone[start : start + 1024].reshape(1, -1)
                samples = av.AudioFrame.from_ndarray(chunk, format="flt", layout="mono")
                samples.sample_rate, samples.pts, samples.time_base = 16000, start, Fraction(1, 16000)
                container.mux(audio.encode(samples))
            container.mux(audio.encode(None))
    return out.getvalue()
