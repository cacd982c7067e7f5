"""The workspace file tools: read_file, search_files, write_file, append_file (R-TOOL-1).

File work is blocking I/O, so each call runs in an abandonable tool thread (``threads.py``); the
asyncio loop that also carries model streams and MCP sessions never waits on the disk, and a search
stops itself at its budget. Content search uses RE2 (``google-re2``): matching is linear in the input
and releases the GIL, so no pattern can stall the process (issue 16, H1); backreferences and
look-arounds, which need backtracking, are refused with a clear error.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import re2

from agent.toolbox import ToolContext, ToolInfo, ToolOutcome
from agent.tools import specs
from agent.tools.threads import Budget, BudgetExceeded, run_abandonable
from agent.tools.workspace import (
    ArgumentError,
    SafePath,
    WorkspaceError,
    check_path,
    conversation_workspace,
    open_dir,
    open_file,
    replace_file,
)


@dataclass(frozen=True, slots=True)
class WorkspaceLimits:
    max_read_bytes: int = 10 * 1024 * 1024
    max_write_bytes: int = 1024 * 1024
    max_file_bytes: int = 20 * 1024 * 1024  # append_file refuses to grow a file past this
    max_result_chars: int = 60_000  # read_file stops adding lines past this (the rest via offset)
    max_line_chars: int = 2_000  # longer lines are cut in results (marked with an ellipsis)
    max_scanned_files: int = 5_000
    # A search stops itself at this share of the tool timeout and returns what it found (marked).
    search_budget_share: float = 0.8


class WorkspaceToolbox:
    """The four file tools over one workspace directory.

    ``root`` is the workspace. If the run's ``ToolContext.workspace`` is set, it is taken as a
    per-conversation key and the workspace is ``root/<key>`` instead (so one toolbox per worker can
    serve every conversation); see ``conversation_workspace``.
    """

    def __init__(self, root: Path, limits: WorkspaceLimits | None = None) -> None:
        self.root = Path(root)
        self.limits = limits or WorkspaceLimits()
        self._handlers: dict[str, Callable[[Path, dict[str, Any], Budget], dict[str, Any]]] = {
            "read_file": self._read_file,
            "search_files": self._search_files,
            "write_file": self._write_file,
            "append_file": self._append_file,
        }

    async def list_tools(self) -> list[ToolInfo]:
        return [
            ToolInfo(spec=specs.READ_FILE, risk="read_only", idempotent=True),
            ToolInfo(spec=specs.SEARCH_FILES, risk="read_only", idempotent=True),
            # Overwriting with the same content twice leaves the same file: safe to re-run.
            ToolInfo(spec=specs.WRITE_FILE, risk="low", idempotent=True),
            ToolInfo(spec=specs.APPEND_FILE, risk="low", idempotent=False),
        ]

    async def execute(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        handler = self._handlers.get(name)
        if handler is None:
            return ToolOutcome.failure("unknown_tool", f"no built-in file tool named {name!r}")
        try:
            root = self._workspace(ctx)
            budget = Budget.of(ctx.timeout * self.limits.search_budget_share)
            result = await run_abandonable(handler, root, arguments, budget=budget)
        except WorkspaceError as exc:
            return ToolOutcome.failure(exc.code, str(exc))  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError) as exc:
            return ToolOutcome.failure("invalid_arguments", f"bad arguments for {name}: {exc}")
        except OSError as exc:
            return ToolOutcome.failure("execution_error", f"{name} failed: {exc.strerror or exc}")
        return ToolOutcome.success(result, truncated=bool(result.get("truncated")))

    def _workspace(self, ctx: ToolContext) -> Path:
        if ctx.workspace:
            return conversation_workspace(self.root, ctx.workspace)
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root

    # --- read_file -------------------------------------------------------------------------------

    def _read_file(self, root: Path, args: dict[str, Any], budget: Budget) -> dict[str, Any]:
        path = check_path(root, args["path"])
        offset = _int_arg(args, "offset", 1, 1, None)
        limit = _int_arg(args, "limit", 500, 1, 2000)
        fd, st = open_file(path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as fh:
            if st.st_size > self.limits.max_read_bytes:
                raise WorkspaceError(
                    f"{path.relative} is {st.st_size} bytes; files over {self.limits.max_read_bytes} bytes "
                    "cannot be read"
                )
            data = fh.read(self.limits.max_read_bytes + 1)
        if b"\x00" in data[:8192]:
            raise WorkspaceError(f"{path.relative} looks like a binary file; only text files can be read")
        lines = data.decode("utf-8", errors="replace").splitlines()
        chosen: list[str] = []
        chars = 0
        for line in lines[offset - 1 : offset - 1 + limit]:
            line = self._cut_line(line)
            if chosen and chars + len(line) > self.limits.max_result_chars:
                break
            chosen.append(line)
            chars += len(line) + 1
        end = offset - 1 + len(chosen)
        return {
            "success": True,
            "path": path.relative,
            "content": "\n".join(chosen),
            "total_lines": len(lines),
            "offset": offset,
            "lines_returned": len(chosen),
            "next_offset": end + 1 if end < len(lines) else None,
        }

    def _cut_line(self, line: str) -> str:
        cap = self.limits.max_line_chars
        return line if len(line) <= cap else line[:cap] + " …[line cut]"

    # --- search_files ----------------------------------------------------------------------------

    def _search_files(self, root: Path, args: dict[str, Any], budget: Budget) -> dict[str, Any]:
        start = check_path(root, args.get("path") or ".")
        pattern = str(args["pattern"])
        target = args.get("target", "files")
        limit = _int_arg(args, "limit", 50, 1, 500)
        if not pattern or len(pattern) > 200:
            raise ArgumentError("pattern must be 1-200 characters")
        matches: list[dict[str, Any]] = []
        try:
            if target == "files":
                truncated = self._find_files(start, pattern, limit, matches, budget)
            elif target == "content":
                truncated = self._grep(start, compile_pattern(pattern), limit, matches, budget)
            else:
                raise ArgumentError("target must be 'files' or 'content'")
        except BudgetExceeded:
            note = f"search stopped after {self.limits.search_budget_share:.0%} of the tool's time limit"
            return {
                "success": True,
                "matches": matches,
                "count": len(matches),
                "truncated": True,
                "note": note + "; narrow the path or the pattern",
            }
        return {"success": True, "matches": matches, "count": len(matches), "truncated": truncated}

    def _walk(self, start: SafePath, budget: Budget):
        """Yield (relative path, name, dir_fd) of regular files under ``start``, links skipped."""
        scanned = 0
        with open_dir(start) as top:
            for dirpath, _dirs, files, dir_fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
                for name in sorted(files):
                    budget.check()
                    scanned += 1
                    if scanned > self.limits.max_scanned_files:
                        return
                    rel = os.path.normpath(os.path.join(dirpath, name))
                    yield rel, name, dir_fd

    def _find_files(
        self, start: SafePath, pattern: str, limit: int, matches: list[dict[str, Any]], budget: Budget
    ) -> bool:
        for rel, name, dir_fd in self._walk(start, budget):
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                continue
            if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(rel, pattern):
                if len(matches) >= limit:
                    return True
                matches.append({"path": _join(start, rel)})
        return False

    def _grep(
        self, start: SafePath, regex: Any, limit: int, matches: list[dict[str, Any]], budget: Budget
    ) -> bool:
        for rel, name, dir_fd in self._walk(start, budget):
            text = self._read_text_at(name, dir_fd)
            if text is None:
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                if number % 256 == 0:
                    budget.check()
                if regex.search(line[: self.limits.max_line_chars]):
                    if len(matches) >= limit:
                        return True
                    matches.append({"path": _join(start, rel), "line": number, "text": self._cut_line(line)})
        return False

    def _read_text_at(self, name: str, dir_fd: int) -> str | None:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1 or st.st_size > self.limits.max_read_bytes:
                return None
            data = fh.read(self.limits.max_read_bytes + 1)
        if b"\x00" in data[:8192]:
            return None
        return data.decode("utf-8", errors="replace")

    # --- write_file / append_file ----------------------------------------------------------------

    def _encode(self, args: dict[str, Any]) -> bytes:
        content = args["content"]
        if not isinstance(content, str):
            raise ArgumentError("content must be a string")
        data = content.encode("utf-8")
        if len(data) > self.limits.max_write_bytes:
            raise ArgumentError(
                f"content is {len(data)} bytes; at most {self.limits.max_write_bytes} bytes per call - "
                "write the first part with write_file, then the rest with append_file"
            )
        return data

    def _write_file(self, root: Path, args: dict[str, Any], budget: Budget) -> dict[str, Any]:
        path = check_path(root, args["path"])
        data = self._encode(args)
        replace_file(path, data)
        return {"success": True, "path": path.relative, "bytes_written": len(data)}

    def _append_file(self, root: Path, args: dict[str, Any], budget: Budget) -> dict[str, Any]:
        path = check_path(root, args["path"])
        data = self._encode(args)
        fd, st = open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, create_parents=True)
        with os.fdopen(fd, "ab") as fh:
            if st.st_size + len(data) > self.limits.max_file_bytes:
                raise WorkspaceError(f"{path.relative} would exceed {self.limits.max_file_bytes} bytes")
            fh.write(data)
            size = fh.tell()
        return {"success": True, "path": path.relative, "bytes_written": len(data), "size": size}


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a bad pattern is the model's error, reported to it, not logged


def compile_pattern(pattern: str) -> Any:
    """The model's regular expression, compiled by RE2 (linear time; no backreferences)."""
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else exc
        raise ArgumentError(
            f"invalid regular expression {pattern!r}: {reason} "
            "(RE2 syntax: no backreferences or look-arounds)"
        ) from None


def _join(start: SafePath, rel: str) -> str:
    return os.path.normpath(os.path.join(start.relative, rel))


def _int_arg(args: dict[str, Any], key: str, default: int, low: int, high: int | None) -> int:
    value = args.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"{key} must be an integer")
    if value < low or (high is not None and value > high):
        raise ArgumentError(f"{key} must be between {low} and {high}" if high else f"{key} must be >= {low}")
    return value
