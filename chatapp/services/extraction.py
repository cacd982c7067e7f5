"""Text out of PDFs and Office documents, so the file tools (which read text) can work with them.

pypdf (https://pypdf.readthedocs.io) reads PDFs; python-docx (https://python-docx.readthedocs.io)
reads .docx paragraphs and tables; openpyxl (https://openpyxl.readthedocs.io, read-only mode, cached
values rather than formulas) reads .xlsx sheets as tab-separated rows; python-pptx
(https://python-pptx.readthedocs.io) reads the text frames and tables of .pptx slides. All are pure
Python and well kept. Office files reach this only
after ``uploads._check_zip`` refused zip bombs; a PDF is read at most ``MAX_PAGES`` pages and
``MAX_CHARS`` characters. A file that fails to parse is kept as it is and the user is told why.
"""

from __future__ import annotations

import io

MAX_PAGES = 500
MAX_CHARS = 2_000_000
MAX_ROWS = 100_000  # per workbook: a spreadsheet's text grows by rows, stop well before MAX_CHARS
EXTRACTABLE = ("pdf", "docx", "xlsx", "pptx")


class ExtractionFailed(Exception):
    pass


def extract_text(ext: str, data: bytes) -> str:
    try:
        text = _READERS[ext](data)
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


def _xlsx(data: bytes) -> str:
    from openpyxl import load_workbook

    # read_only streams rows; data_only gives the values Excel last computed, not the formulas.
    book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    lines: list[str] = []
    try:
        for sheet in book.worksheets:
            lines.append(f"--- sheet {sheet.title} ---")
            for row in sheet.iter_rows(values_only=True):
                lines.append("\t".join("" if v is None else str(v) for v in row).rstrip("\t"))
                if len(lines) > MAX_ROWS:
                    return "\n".join(lines)
    finally:
        book.close()
    return "\n".join(lines)


def _pptx(data: bytes) -> str:
    from pptx import Presentation

    lines: list[str] = []
    for number, slide in enumerate(Presentation(io.BytesIO(data)).slides, start=1):
        lines.append(f"--- slide {number} ---")
        for shape in slide.shapes:
            if shape.has_text_frame:
                lines.extend(p.text for p in shape.text_frame.paragraphs if p.text)
            if getattr(shape, "has_table", False) and shape.has_table:
                for row in shape.table.rows:
                    lines.append(" | ".join(cell.text for cell in row.cells))
    return "\n".join(lines)


_READERS = {"pdf": _pdf, "docx": _docx, "xlsx": _xlsx, "pptx": _pptx}
