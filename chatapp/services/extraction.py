"""Text out of PDFs and Word documents, so the file tools (which read text) can work with them.

pypdf (https://pypdf.readthedocs.io) reads PDFs; python-docx (https://python-docx.readthedocs.io)
reads .docx paragraphs and tables. Both are pure Python and well kept. Office files reach this only
after ``uploads._check_zip`` refused zip bombs; a PDF is read at most ``MAX_PAGES`` pages and
``MAX_CHARS`` characters. A file that fails to parse is kept as it is and the user is told why.
"""

from __future__ import annotations

import io

MAX_PAGES = 500
MAX_CHARS = 2_000_000
EXTRACTABLE = ("pdf", "docx")


class ExtractionFailed(Exception):
    pass


def extract_text(ext: str, data: bytes) -> str:
    try:
        text = _pdf(data) if ext == "pdf" else _docx(data)
    except ExtractionFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - any parser error means "no text", never a crash
        raise ExtractionFailed(f"{type(exc).__name__}: {str(exc)[:200]}") from None
    if not text.strip():
        raise ExtractionFailed("it holds no text (a scanned document needs OCR, which clearloop does not do)")
    return text[:MAX_CHARS]


def _pdf(data: bytes) -> str:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        raise ExtractionFailed("it is encrypted")
    parts: list[str] = []
    size = 0
    for number, page in enumerate(reader.pages[:MAX_PAGES], start=1):
        text = page.extract_text() or ""
        parts.append(f"--- page {number} ---\n{text}")
        size += len(text)
        if size > MAX_CHARS:
            break
    return "\n".join(parts)


def _docx(data: bytes) -> str:
    import docx

    document = docx.Document(io.BytesIO(data))
    lines = [p.text for p in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            lines.append(" | ".join(cell.text for cell in row.cells))
    return "\n".join(lines)
