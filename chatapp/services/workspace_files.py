"""The files of a conversation's workspace as the owner sees them: list, open, zip, delete.

Every path a browser sends goes through the file tools' own guard (``agent.tools.workspace``): the
same lexical and ``realpath`` check, and an open that walks the path with ``O_NOFOLLOW`` from the
workspace root. A symbolic link, a hard-linked file, ``..``, an absolute path outside the root, a NUL
byte or a Windows separator is refused, so nothing outside the workspace is ever read, listed,
zipped or deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, cast

from django.db import transaction
from django.utils import timezone
from django.utils.text import Truncator
from django.utils.translation import gettext as _

from agent.tools.workspace import SafePath, WorkspaceError, check_path, open_dir, open_file
from chatapp.audit import record
from chatapp.models import Conversation, ToolCall, Upload
from chatapp.workspaces import workspace_path

FILE_WRITERS = ("write_file", "append_file")
MAX_LISTED = 2000
CHUNK = 64 * 1024


class FileRefused(Exception):
    """A file request the workspace refuses; the message is shown to the user."""


@dataclass(frozen=True)
class WorkspaceEntry:
    path: str  # relative to the workspace, '/'-separated
    size: int
    modified: datetime
    origin: str  # "uploaded by you", "write_file in the answer to “…”", "was there from the start"

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def root_of(convo: Conversation) -> Path:
    return workspace_path(convo.owner_id, convo.pk)


def safe_path(convo: Conversation, raw: str) -> SafePath:
    root = root_of(convo)
    if not root.is_dir():
        raise FileRefused("This conversation has no files yet.")
    try:
        return check_path(root, raw)
    except WorkspaceError as exc:
        raise FileRefused(str(exc)) from None


def _walk(root: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Regular files under ``root``, never through a link; the tools' temp files are left out."""
    stack = [("", root)]
    while stack:
        prefix, folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") and entry.name.endswith(".tmp"):
                continue
            rel = f"{prefix}{entry.name}"
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                stack.append((rel + "/", Path(entry.path)))
            elif stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                yield rel, st


def origins(convo: Conversation) -> dict[str, str]:
    """Who last wrote each path: an upload, or the file tool call of which answer."""
    root = root_of(convo)
    found: dict[str, tuple[datetime, str]] = {}
    calls = ToolCall.objects.filter(run__conversation=convo, name__in=FILE_WRITERS, status="succeeded")
    for call in calls.select_related("run__user_message").order_by("updated_at"):
        path = written_path(root, call.arguments)
        if path:
            # Named by the question it answered: a run's id ("answer 2" in a one-answer conversation)
            # meant nothing to the person reading the panel.
            question = call.run.user_message.content if call.run.user_message else ""
            label = _("%(tool)s in the answer to “%(question)s”") % {
                "tool": call.name,
                "question": Truncator(" ".join(question.split())).chars(40),
            }
            found[path] = (call.updated_at, label)
    for upload in Upload.objects.filter(conversation=convo, deleted_at__isnull=True):
        if upload.name not in found or found[upload.name][0] < upload.created_at:
            found[upload.name] = (upload.created_at, _("uploaded by you"))
    return {path: label for path, (_, label) in found.items()}


def written_path(root: Path, arguments: str) -> str | None:
    """The workspace-relative path a file tool call named, if it was a safe one."""
    try:
        raw = json.loads(arguments or "{}").get("path")
        return check_path(root, raw).relative if isinstance(raw, str) else None
    except (ValueError, AttributeError, WorkspaceError):
        return None


def list_files(convo: Conversation) -> list[WorkspaceEntry]:
    root = root_of(convo)
    if not root.is_dir():
        return []
    labels = origins(convo)
    entries = []
    for rel, st in _walk(root):
        modified = datetime.fromtimestamp(st.st_mtime, tz=UTC)
        origin = labels.get(rel) or _("was there from the start")
        entries.append(WorkspaceEntry(rel, st.st_size, modified, origin))
        if len(entries) >= MAX_LISTED:
            break
    return sorted(entries, key=lambda e: e.path)


def open_for_reading(convo: Conversation, raw: str) -> tuple[BinaryIO, os.stat_result, SafePath]:
    path = safe_path(convo, raw)
    try:
        fd, st = open_file(path, os.O_RDONLY)
    except WorkspaceError as exc:
        raise FileRefused(str(exc)) from None
    return os.fdopen(fd, "rb"), st, path


class _Sink:
    """A write-only, unseekable stream for ``zipfile``: what was written is taken out in pieces."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.offset = 0

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        self.offset += len(data)
        return len(data)

    def tell(self) -> int:
        return self.offset

    def flush(self) -> None:
        return None

    def take(self) -> bytes:
        data = b"".join(self.parts)
        self.parts.clear()
        return data


def zip_stream(convo: Conversation) -> Iterator[bytes]:
    """The whole workspace as a zip, produced chunk by chunk (never held in memory at once).

    ``zipfile`` writes to an unseekable stream with data descriptors, so each file is read and sent
    in 64 KiB pieces. Files are opened through the same guarded walk as downloads.
    """
    sink = _Sink()
    root = root_of(convo)
    with zipfile.ZipFile(cast(BinaryIO, sink), "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for rel, _ in list(_walk(root)) if root.is_dir() else []:
            try:
                handle, st, _ = open_for_reading(convo, rel)
            except FileRefused:
                continue
            info = zipfile.ZipInfo(rel, date_time=_zip_time(st.st_mtime))
            info.compress_type = zipfile.ZIP_DEFLATED
            with handle, archive.open(info, "w", force_zip64=st.st_size > 2**31) as dest:
                while chunk := handle.read(CHUNK):
                    dest.write(chunk)
                    yield sink.take()
            yield sink.take()
    yield sink.take()


def _zip_time(mtime: float) -> tuple[int, int, int, int, int, int]:
    moment = datetime.fromtimestamp(max(mtime, 315532800), tz=UTC)  # zip dates start in 1980
    return (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)


def delete_file(convo: Conversation, raw: str, actor: Any) -> str:
    """The owner deletes one file; the audit log keeps its name, size and digest."""
    handle, st, path = open_for_reading(convo, raw)
    with handle:
        digest = hashlib.sha256()
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    parent = SafePath(path.root, path.parts[:-1])
    with transaction.atomic():
        try:
            with open_dir(parent) as dir_fd:
                os.unlink(path.parts[-1], dir_fd=dir_fd)
        except (OSError, WorkspaceError) as exc:
            raise FileRefused(f"{path.relative} could not be deleted: {exc}") from None
        Upload.objects.filter(conversation=convo, name=path.relative, deleted_at__isnull=True).update(
            deleted_at=timezone.now()
        )
        record(
            "file_deleted",
            actor=actor.get_username(),
            payload={
                "conversation_id": convo.pk,
                "path": path.relative,
                "size": st.st_size,
                "sha256": digest.hexdigest(),
            },
        )
    return path.relative
