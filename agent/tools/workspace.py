"""Safe access to files inside one workspace directory.

Two checks guard every path the model sends:

1. A lexical and ``realpath`` check: the path is relative (or absolute but inside the root), holds no
   NUL byte and no ``~``, and once normalised and resolved stays inside the root.
2. The open itself walks the path one component at a time from a directory descriptor of the root,
   each step opened with ``O_NOFOLLOW``. A symlink anywhere in the path is refused even if it was
   swapped in after the first check (no time-of-check/time-of-use window), and so is a regular file
   with several hard links (a hard link can point at a file outside the workspace).

Symbolic links are therefore never followed inside a workspace, whatever they point at: the model
has no way to create one, so refusing them costs nothing and removes a whole class of escapes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
MAX_PATH_CHARS = 1024


class WorkspaceError(Exception):
    """A path or file operation the workspace refuses. ``message`` is shown to the model."""

    code = "execution_error"


class UnsafePathError(WorkspaceError):
    """The path could leave the workspace (or is malformed): a model error, not a crash."""

    code = "invalid_arguments"


class ArgumentError(WorkspaceError):
    """An argument other than the path is out of range or of the wrong type."""

    code = "invalid_arguments"


class FileMissingError(WorkspaceError):
    """The path is inside the workspace but nothing (suitable) is there."""


@dataclass(frozen=True, slots=True)
class SafePath:
    """A path checked to lie inside the workspace; ``parts`` are relative to the root."""

    root: Path
    parts: tuple[str, ...]

    @property
    def relative(self) -> str:
        return "/".join(self.parts) or "."

    @property
    def absolute(self) -> Path:
        return self.root.joinpath(*self.parts)


def conversation_workspace(base: Path, key: str) -> Path:
    """The workspace of one conversation: ``base/<key>``, created if missing.

    ``key`` is an opaque identifier chosen by the host (e.g. the conversation's UUID); it must be one
    path segment so that no key can name another conversation's directory.
    """
    if not _KEY_RE.match(key):
        raise UnsafePathError(f"invalid workspace key {key!r}")
    path = Path(os.path.realpath(base)) / key
    path.mkdir(parents=True, exist_ok=True)
    return path


def check_path(root: Path, raw: str) -> SafePath:
    """Validate ``raw`` (as the model sent it) against ``root``; raise ``UnsafePathError`` if unsafe."""
    if not isinstance(raw, str) or raw == "":
        raise UnsafePathError("path must be a non-empty string")
    if "\x00" in raw:
        raise UnsafePathError("path contains a NUL byte")
    if len(raw) > MAX_PATH_CHARS:
        raise UnsafePathError(f"path longer than {MAX_PATH_CHARS} characters")
    if raw.startswith("~"):
        raise UnsafePathError("paths starting with '~' are not allowed; use a path relative to the workspace")
    if "\\" in raw:
        raise UnsafePathError("use '/' as the path separator")
    if ".." in raw.split("/"):
        # Lexical '..' handling differs from the kernel's once a symlink is involved
        # ('link/..' is not '.'), so the component is refused outright: paths are from the root.
        raise UnsafePathError(f"'..' is not allowed in paths; give the path from the workspace root: {raw}")
    real_root = Path(os.path.realpath(root))
    candidate = PurePosixPath(raw)
    if candidate.is_absolute():
        candidate = _relative_to_root(raw, (real_root, Path(os.path.abspath(root))))
    normal = os.path.normpath(candidate.as_posix())
    if normal == ".." or normal.startswith("../") or normal.startswith("/"):
        raise UnsafePathError(f"path leaves the workspace: {raw}")
    parts = tuple(p for p in PurePosixPath(normal).parts if p not in (".", ""))
    # realpath follows whatever links exist right now: a link pointing out is refused here, and any
    # link at all is refused again, race-free, by the O_NOFOLLOW walk when the file is opened.
    resolved = Path(os.path.realpath(real_root.joinpath(*parts)))
    if not resolved.is_relative_to(real_root):
        raise UnsafePathError(f"path resolves outside the workspace (symbolic link?): {raw}")
    return SafePath(real_root, parts)


def _relative_to_root(raw: str, roots: tuple[Path, ...]) -> PurePosixPath:
    normal = PurePosixPath(os.path.normpath(raw))
    for root in roots:
        with contextlib.suppress(ValueError):
            return normal.relative_to(root.as_posix())
    raise UnsafePathError(f"absolute path outside the workspace: {raw}")


def _open_step(name: str, dir_fd: int, raw: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafePathError(f"'{name}' in {raw} is a symbolic link or not a directory") from None
        if exc.errno == errno.ENOENT:
            raise FileMissingError(f"directory not found: {raw}") from None
        raise WorkspaceError(f"cannot open {raw}: {exc.strerror}") from None


@contextlib.contextmanager
def open_dir(path: SafePath, *, create: bool = False) -> Iterator[int]:
    """A descriptor of the directory ``path`` names, reached without following any link."""
    fd = os.open(path.root, _DIR_FLAGS)
    try:
        for name in path.parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=fd)
            nxt = _open_step(name, fd, path.relative)
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def _check_regular(fd: int, raw: str) -> os.stat_result:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePathError(f"not a regular file: {raw}")
    if st.st_nlink > 1:
        raise UnsafePathError(f"file has several hard links and is refused: {raw}")
    return st


def open_file(path: SafePath, flags: int, *, create_parents: bool = False) -> tuple[int, os.stat_result]:
    """Open the file ``path`` names with ``flags`` (plus O_NOFOLLOW); return (fd, stat).

    O_NONBLOCK keeps a FIFO planted in the workspace from hanging the worker; it is refused right
    after by the regular-file check.
    """
    if not path.parts:
        raise UnsafePathError("path names the workspace directory, not a file")
    parent = SafePath(path.root, path.parts[:-1])
    name = path.parts[-1]
    with open_dir(parent, create=create_parents) as dir_fd:
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePathError(f"symbolic links are not followed: {path.relative}") from None
            if exc.errno == errno.ENOENT:
                raise FileMissingError(f"file not found: {path.relative}") from None
            if exc.errno == errno.EISDIR:
                raise UnsafePathError(f"is a directory: {path.relative}") from None
            raise WorkspaceError(f"cannot open {path.relative}: {exc.strerror}") from None
    try:
        st = _check_regular(fd, path.relative)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def replace_file(path: SafePath, data: bytes) -> None:
    """Write ``data`` as the new content of ``path``, atomically (temp file + rename in the same dir).

    The rename replaces whatever directory entry is there (a link is replaced, never followed), and a
    hard-linked target is never written through.
    """
    if not path.parts:
        raise UnsafePathError("path names the workspace directory, not a file")
    parent = SafePath(path.root, path.parts[:-1])
    name = path.parts[-1]
    tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    with open_dir(parent, create=True) as dir_fd:
        _refuse_special(name, dir_fd, path.relative)
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd
        )
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise


def _refuse_special(name: str, dir_fd: int, raw: str) -> None:
    """Only a missing name or a plain, singly-linked file may be replaced: same rule as for reads."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise UnsafePathError(f"is a directory: {raw}")
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePathError(f"symbolic links are not followed or replaced: {raw}")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePathError(f"not a regular file: {raw}")
    if st.st_nlink > 1:
        raise UnsafePathError(f"file has several hard links and is refused: {raw}")
