"""Bad input: a client that downloads the workspace zip and stops reading. The zip is produced only as
fast as it is read (chatapp/streaming.py sends each piece as it is made, chatapp/http_pacing.py makes
daphne wait while the socket's buffer is full), so daphne neither reads the workspace ahead nor holds
the archive in memory; once the client reads again, the whole zip arrives intact."""

from __future__ import annotations

import io
import os
import socket
import time
import zipfile
from pathlib import Path

import pytest

from chatapp.models import Conversation
from chatapp.workspaces import workspace_path
from tests.integration.client import session_for

pytestmark = pytest.mark.django_db(transaction=True)

BIG = 48 * 1024 * 1024  # random bytes: deflate cannot shrink them
AHEAD = 16 * 1024 * 1024  # socket buffers, daphne's buffer and a piece in flight stay well under this
WINDOW = 3.0  # unpaced, daphne reads and deflates the whole 48 MB in about a second


def read_position(pid: int, path: Path) -> int | None:
    """How far daphne has read ``path``, or None while it does not have it open."""
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir():
        try:
            if os.readlink(fd) == str(path):
                return int((Path(f"/proc/{pid}/fdinfo") / fd.name).read_text().split()[1])
        except (FileNotFoundError, ValueError, IndexError):
            continue
    return None


def test_a_client_that_stops_reading_holds_the_zip_back(cast, live_stack):
    convo = Conversation.objects.create(owner=cast["alice"], title="big files")
    folder = workspace_path(convo.owner_id, convo.pk)
    folder.mkdir(parents=True)
    big = folder / "a.bin"
    data = os.urandom(BIG)
    big.write_bytes(data)
    (folder / "b.txt").write_bytes(b"the last file\n")
    pid = live_stack.procs["web"].pid
    port = int(live_stack.base_url.rsplit(":", 1)[1])
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.connect(("127.0.0.1", port))
        sock.sendall(
            f"GET /c/{convo.pk}/files.zip HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Cookie: sessionid={session_for(cast['alice'])}\r\nConnection: close\r\n\r\n".encode()
        )
        received = bytearray()
        while len(received) < 64 * 1024:
            chunk = sock.recv(64 * 1024)
            assert chunk, bytes(received[:300])
            received += chunk
        assert received.startswith(b"HTTP/1.1 200"), bytes(received[:300])
        # The client reads nothing more. daphne may fill the buffers between it and the client, and
        # then waits: in a window in which it could have read all 48 MB, it stays a few MB in.
        furthest = 0
        deadline = time.monotonic() + WINDOW
        while time.monotonic() < deadline:
            position = read_position(pid, big)
            assert position is not None, "daphne closed a.bin: it read the whole file ahead of the client"
            furthest = max(furthest, position)
            assert furthest < AHEAD, furthest
            time.sleep(0.05)  # sampling the position over the window, not waiting for an event
        # Reading again, the client gets the whole archive.
        while chunk := sock.recv(1024 * 1024):
            received += chunk
    head, _, body = bytes(received).partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    archive = zipfile.ZipFile(io.BytesIO(dechunk(body)))
    assert archive.read("a.bin") == data and archive.read("b.txt") == b"the last file\n"


def dechunk(body: bytes) -> bytes:
    out, at = bytearray(), 0
    while True:
        end = body.index(b"\r\n", at)
        size = int(body[at:end].split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += body[end + 2 : end + 2 + size]
        at = end + 2 + size + 2
