"""Files the user uploads into a conversation's workspace: the one place they are checked and written.

Names are reduced to one safe path segment (no directories, no control characters, at most 180
UTF-8 bytes, never hidden), a name already taken becomes ``report (2).md``, and each file is written
next to its final name and then hard-linked into place (``link`` never replaces an existing entry,
so two uploads racing for one name cannot overwrite each other, and nothing stored is lost).
Limits come from settings; each refusal says which limit and why. Every stored file is recorded in
the audit log.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import unicodedata
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils.translation import gettext as _

from agent.tools.workspace import SafePath, open_dir
from chatapp.audit import record
from chatapp.models import Conversation, Upload
from chatapp.services.extraction import EXTRACTABLE, ExtractionFailed, extract_text
from chatapp.services.workspace_files import _walk, root_of
from chatapp.workspaces import prepare_workspace

MAX_NAME_BYTES = 180
IMAGE_TYPES = {"png": "PNG", "jpg": "JPEG", "jpeg": "JPEG", "gif": "GIF", "webp": "WEBP"}
ZIP_CONTAINERS = {"docx", "xlsx", "pptx"}
# Office files are zip archives: refuse one that would expand past this (a zip bomb) before anything
# (python-docx, the extraction for the model) ever opens it.
MAX_UNZIPPED_BYTES = 200 * 1024 * 1024
MAX_ZIP_RATIO = 200
# An image is decoded whole to scale it for a model (services/images.py): a small PNG of one colour can
# hold hundreds of megapixels (a decompression bomb). Pillow's own warning threshold, about 89 M pixels.
MAX_IMAGE_PIXELS = 89_478_485


class UploadRefused(Exception):
    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


def normalise_name(raw: str) -> str:
    """One path segment from whatever the browser sent: the last part after '/' or '\\', NFC, no
    control or format characters, no leading dots or spaces, at most MAX_NAME_BYTES with the
    extension kept."""
    name = unicodedata.normalize("NFC", raw or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")
    name = name.strip().lstrip(". ").strip()
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    ext = ext[:16]
    budget = MAX_NAME_BYTES - len(ext.encode()) - (1 if ext else 0)
    stem = stem.encode()[:budget].decode("utf-8", "ignore").rstrip() or "upload"
    return f"{stem}.{ext}" if ext else stem


def _extension(name: str) -> str:
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def _candidates(name: str):
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    yield name
    for n in range(2, 1000):
        yield f"{stem} ({n}).{ext}" if ext else f"{stem} ({n})"


def check_upload(name: str, upload: Any) -> None:
    ext = _extension(name)
    if ext not in settings.UPLOAD_ALLOWED_TYPES:
        allowed = ", ".join(settings.UPLOAD_ALLOWED_TYPES)
        kind = _(".%(ext)s files") % {"ext": ext} if ext else _("files without an extension")
        raise UploadRefused(
            _("%(name)s: %(kind)s are not accepted here (allowed: %(allowed)s).")
            % {"name": name, "kind": kind, "allowed": allowed},
            415,
        )
    if upload.size > settings.UPLOAD_MAX_BYTES:
        raise UploadRefused(
            _("%(name)s is %(size)s bytes; the limit per file is %(limit)s bytes.")
            % {"name": name, "size": f"{upload.size:,}", "limit": f"{settings.UPLOAD_MAX_BYTES:,}"},
            413,
        )
    if ext in IMAGE_TYPES:
        _check_image(name, upload, IMAGE_TYPES[ext])
    if ext in ZIP_CONTAINERS:
        _check_zip(name, upload)


def _check_image(name: str, upload: Any, expected: str) -> None:
    from PIL import Image, UnidentifiedImageError

    upload.seek(0)
    limit = f"{MAX_IMAGE_PIXELS:,}"
    try:
        # Pillow only warns between its two thresholds; the size is refused here, before any decoding.
        with Image.open(upload) as image:
            found = image.format
            width, height = image.size
            if width * height > MAX_IMAGE_PIXELS:
                raise UploadRefused(
                    f"{name} is {width:,} × {height:,} pixels; images over {limit} pixels are not accepted "
                    "(decoding it to send it to a model would take too much memory). Scale it down first.",
                    413,
                )
            image.verify()
    except Image.DecompressionBombError:
        raise UploadRefused(
            f"{name} has more than {limit} pixels; it was not stored. Scale it down first.", 413
        ) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        raise UploadRefused(f"{name} is not a readable image (its content is not {expected}).") from None
    finally:
        upload.seek(0)
    if found != expected and {found, expected} != {"JPEG", "MPO"}:
        raise UploadRefused(f"{name} is named like a {expected} image but holds {found}; rename it.")


def _check_zip(name: str, upload: Any) -> None:
    upload.seek(0)
    try:
        with zipfile.ZipFile(upload) as archive:
            total = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        raise UploadRefused(f"{name} is not a valid Office file (it should be a zip archive).") from None
    finally:
        upload.seek(0)
    if total > MAX_UNZIPPED_BYTES or total > MAX_ZIP_RATIO * max(upload.size, 1):
        raise UploadRefused(
            f"{name} would expand to {total:,} bytes when opened (a zip bomb?); it was not stored.", 413
        )


def used_bytes(convo: Conversation) -> int:
    root = root_of(convo)
    return sum(st.st_size for _, st in _walk(root)) if root.is_dir() else 0


@dataclass
class Stored:
    uploads: list[Upload] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def store_uploads(convo: Conversation, files: Sequence[Any], user: Any) -> Stored:
    """Check every file first (nothing is written if one is refused), then store them one by one.

    A PDF or Word file also gets its text as a sibling ``<name>.txt`` (services/extraction.py); when
    that fails the file is kept and a warning says why."""
    names = [normalise_name(f.name) for f in files]
    for name, upload in zip(names, files, strict=True):
        check_upload(name, upload)
    incoming = sum(f.size for f in files)
    used = used_bytes(convo)
    if used + incoming > settings.WORKSPACE_MAX_BYTES:
        raise UploadRefused(
            _(
                "This conversation's files would take %(total)s bytes; the limit is %(limit)s bytes (in "
                "use: %(used)s). Delete files or start a new conversation."
            )
            % {
                "total": f"{used + incoming:,}",
                "limit": f"{settings.WORKSPACE_MAX_BYTES:,}",
                "used": f"{used:,}",
            },
            413,
        )
    root = root_of(convo)
    prepare_workspace(root, convo.owner_id)
    result = Stored()
    for name, upload in zip(names, files, strict=True):
        row = _store_one(convo, root, name, upload, user)
        result.uploads.append(row)
        ext = _extension(row.name)
        if ext in EXTRACTABLE:
            upload.seek(0)
            try:
                text = extract_text(ext, upload.read())
            except ExtractionFailed as exc:
                result.warnings.append(f"{row.name} was stored, but its text could not be extracted: {exc}.")
                continue
            sibling = ContentFile(text.encode("utf-8"), name=f"{row.name}.txt")
            result.uploads.append(_store_one(convo, root, f"{row.name}.txt", sibling, user, source=row.name))
    return result


def _store_one(convo: Conversation, root: Any, name: str, upload: Any, user: Any, source: str = "") -> Upload:
    digest = hashlib.sha256()
    tmp = f".upload.{os.urandom(6).hex()}.tmp"
    with open_dir(SafePath(root, ())) as dir_fd:
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd
        )
        try:
            with os.fdopen(fd, "wb") as out:
                upload.seek(0)
                for chunk in upload.chunks():
                    digest.update(chunk)
                    out.write(chunk)
            stored = _link_free_name(dir_fd, tmp, name)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
    with transaction.atomic():
        row = Upload.objects.create(
            conversation=convo,
            uploaded_by=user,
            name=stored,
            original_name=(f"text of {source}" if source else (upload.name or ""))[:400].replace(
                "\x00", "\ufffd"
            ),
            size=upload.size,
            content_type=(getattr(upload, "content_type", "") or "")[:120],
            sha256=digest.hexdigest(),
        )
        record(
            "file_uploaded",
            actor=user.get_username(),
            payload={
                "conversation_id": convo.pk,
                "upload_id": row.pk,
                "name": stored,
                "size": row.size,
                "sha256": row.sha256,
                "original_name": row.original_name,
            },
        )
    return row


def _link_free_name(dir_fd: int, tmp: str, name: str) -> str:
    for candidate in _candidates(name):
        try:
            os.link(tmp, candidate, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        except FileExistsError:
            continue
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                raise UploadRefused(f"{name}: the name is too long for the file system.") from None
            raise
        return candidate
    raise UploadRefused(f"{name}: too many files with this name already; rename it.", 409)
