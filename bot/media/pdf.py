"""The text of a PDF, with pypdf: for knowledge files and for PDFs shared in chat.

CPU-bound (pypdf is pure Python): callers on the event loop run it in a thread.
"""

from __future__ import annotations

import io

__all__ = ["UnreadablePdf", "pdf_text"]


class UnreadablePdf(Exception):
    """The PDF gives no text; the message says why in plain words."""


def pdf_text(data: bytes, max_pages: int | None = None) -> str:
    """The text of the PDF in ``data``, pages separated by blank lines; only the first
    ``max_pages`` pages when given.

    Raises:
        UnreadablePdf: encrypted with a password, damaged, or without a text layer.
    """
    from pypdf import PdfReader  # imported when needed: most characters never see a PDF

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                # Many PDFs are encrypted with an owner password only and open with an empty one.
                opened = bool(reader.decrypt(""))
            except Exception:  # noqa: BLE001 - an AES PDF without the cryptography package, a damaged key
                opened = False
            if not opened:
                raise UnreadablePdf("an encrypted PDF that needs a password; save an unencrypted copy")
        pages = [(page.extract_text() or "").strip() for page in list(reader.pages)[:max_pages]]
    except UnreadablePdf:
        raise
    except Exception as exc:  # noqa: BLE001 - pypdf raises many kinds for damaged files
        raise UnreadablePdf(f"not a readable PDF ({exc.__class__.__name__}: {exc})") from None
    text = "\n\n".join(p for p in pages if p)
    if not text:
        raise UnreadablePdf("a PDF without a text layer (scanned pages?); add a text version or run OCR on it")
    return text
