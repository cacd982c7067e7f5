"""What stands between a stdio MCP server and the worker: bounded stdout messages, bounded stderr logs.

``LAUNCHER`` is the program the worker starts (``python -I -S -c LAUNCHER ppid cap command ...``). It
sets ``PR_SET_PDEATHSIG=SIGKILL`` for itself and for the server it starts, so neither outlives a
killed worker, and relays the server's stdout line by line with ``readline(cap + 1)``: a JSON-RPC
message longer than ``cap`` bytes is read past and dropped, and an error answering the same request
id is sent instead (issue 16, L7). Without it the SDK's reader assembled a 100 MB line by repeated
concatenation for ~100 s. The server's stdin and stderr are its own (inherited).

``CappedLog`` is the server's stderr: a pipe drained by a thread into a size-rotated log file
(``logging.handlers.RotatingFileHandler``), so a chatty or hostile server cannot fill the disk.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import threading
from pathlib import Path

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
LOG_MAX_BYTES = 5 * 1024 * 1024
LOG_BACKUPS = 2

# argv: [ppid, cap, command, *args]. prctl(1 = PR_SET_PDEATHSIG, 9 = SIGKILL). If the parent already
# died between fork and prctl we were re-parented: exit instead of running unsupervised.
LAUNCHER = r"""
import ctypes,os,re,subprocess,sys
libc=ctypes.CDLL(None,use_errno=True)
libc.prctl(1,9,0,0,0)
if os.getppid()!=int(sys.argv[1]):os._exit(70)
cap=int(sys.argv[2])
p=subprocess.Popen(sys.argv[3:],stdout=subprocess.PIPE,preexec_fn=lambda:libc.prctl(1,9,0,0,0))
src,out=p.stdout,sys.stdout.buffer
ID=re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)')
while True:
    line=src.readline(cap+1)
    if not line:break
    if len(line)>cap and not line.endswith(b"\n"):
        head=line[:4096]
        while line and not line.endswith(b"\n"):line=src.readline(1<<20)
        m=ID.search(head)
        if m is None:continue
        err=b'"error":{"code":-32603,"message":"message over %d bytes dropped by the client"}'%cap
        line=b'{"jsonrpc":"2.0","id":'+m.group(1)+b','+err+b'}\n'
    out.write(line);out.flush()
os._exit(p.wait())
"""


class CappedLog:
    """A writable file object for a child's stderr whose content ends in a rotated, capped log."""

    def __init__(self, path: Path, max_bytes: int = LOG_MAX_BYTES, backups: int = LOG_BACKUPS) -> None:
        read_fd, write_fd = os.pipe()
        self._write = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8", errors="replace"
        )
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        name = f"stderr:{path.name}"
        self._thread = threading.Thread(target=self._drain, args=(read_fd,), daemon=True, name=name)
        self._thread.start()

    def _drain(self, fd: int) -> None:
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as src:
            for line in iter(lambda: src.readline(64 * 1024), ""):
                record = logging.LogRecord("mcp.stderr", logging.INFO, "", 0, line.rstrip("\n"), None, None)
                self._handler.emit(record)
        self._handler.close()

    def fileno(self) -> int:
        return self._write.fileno()

    def write(self, text: str) -> int:
        return self._write.write(text)

    def flush(self) -> None:
        self._write.flush()

    def close(self) -> None:
        # The drain thread ends when every copy of the write end is closed (the child's too).
        self._write.close()
