"""The clients: a browser on clearloop's chat page, and a direct client of the upstream (the floor).

A browser user holds one websocket on its conversation (``{"resume": {}}``, then ``replay_done``)
and sends each message as the page's htmx form does: ``POST /c/<id>/send/`` with the CSRF token
and HX-* headers. Text frames are assembled by ``seq``; a run is done at ``run_finished`` or
``run_failed``. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import websockets

RUN_ID = re.compile(r'id="run-(\d+)"')
DONE = ("run_finished", "run_failed")


@dataclass
class Stream:
    """What one client saw of one message."""

    rid: str
    run_id: int = 0
    t_post: float = 0.0
    t_answered: float = 0.0
    t_first: float = 0.0
    t_last: float = 0.0
    text: str = ""
    # receive time and cumulative text length after each text frame (for per-token latency)
    marks: list[tuple[float, int]] = field(default_factory=list)
    frames: int = 0
    replays: int = 0  # live frames were missing; back-filled from the server as the page does
    gaps: int = 0
    duplicates: int = 0
    status: str = ""
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "marks"} | {"marks": self.marks}


class RunFrames:
    def __init__(self) -> None:
        self.frames: dict[int, dict] = {}
        self.times: dict[int, float] = {}
        self.done = asyncio.Event()
        self.duplicates = 0


class BrowserUser:
    def __init__(self, base_url: str, session: str, conversation: int, timeout: float) -> None:
        self.base_url = base_url
        self.conversation = conversation
        self.timeout = timeout
        self.csrf = secrets.token_hex(16)  # 32 characters: Django accepts an unmasked secret
        self.cookies = {"sessionid": session, "csrftoken": self.csrf}
        self.runs: dict[int, RunFrames] = {}
        self.ws = None
        self._reader: asyncio.Task | None = None
        self._replayed = asyncio.Event()

    def _run(self, run_id: int) -> RunFrames:
        return self.runs.setdefault(run_id, RunFrames())

    async def connect(self) -> None:
        url = self.base_url.replace("http://", "ws://") + f"/ws/conversations/{self.conversation}/"
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self.ws = await websockets.connect(
            url,
            additional_headers={"Cookie": cookie, "Origin": self.base_url},
            max_size=2**24,
            open_timeout=self.timeout,
            ping_interval=None,
        )
        await self.ws.send(json.dumps({"resume": {}}))
        async with asyncio.timeout(self.timeout):
            while json.loads(await self.ws.recv()).get("type") != "replay_done":
                pass
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for raw in self.ws:
            now = time.time()
            frame = json.loads(raw)
            if frame.get("type") == "replay_done":
                self._replayed.set()
            if "run" not in frame:
                continue
            run = self._run(frame["run"])
            if frame["seq"] in run.frames:
                run.duplicates += 1
                continue
            run.frames[frame["seq"]] = frame
            run.times[frame["seq"]] = now
            if frame.get("type") in DONE or (
                frame.get("type") == "status" and frame["data"].get("status") in ("failed", "cancelled")
            ):
                run.done.set()

    async def close(self) -> None:
        if self._reader:
            self._reader.cancel()
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()

    async def stop_probe(self, http: httpx.AsyncClient, rid: str, text: str, after: float) -> dict[str, Any]:
        """Send a slow message, press Stop after ``after`` s of text: how long until the run ends and
        until its last text frame (the worker has stopped streaming)."""
        response = await http.post(
            f"/c/{self.conversation}/send/",
            data={"message": text},
            headers=self._headers(),
            cookies=self.cookies,
        )
        run = self._run(int(RUN_ID.search(response.text)[1]))
        async with asyncio.timeout(self.timeout):
            while not any(f["type"] == "delta" for f in run.frames.values()):
                await asyncio.sleep(0.01)
            await asyncio.sleep(after)
            t_stop = time.time()
            answer = await http.post(
                f"/runs/{int(RUN_ID.search(response.text)[1])}/cancel/",
                headers=self._headers(),
                cookies=self.cookies,
            )
            await run.done.wait()
        ended = max(run.times.values())
        last_text = max(t for seq, t in run.times.items() if run.frames[seq]["type"] == "delta")
        kinds = [run.frames[q]["type"] for q in sorted(run.frames)]
        return {
            "cancel_status": answer.status_code,
            "ended_ms": (ended - t_stop) * 1000,
            "last_text_after_stop_ms": (last_text - t_stop) * 1000,
            "final": kinds[-1],
        }

    def _headers(self) -> dict[str, str]:
        return {
            "X-CSRFToken": self.csrf,
            "HX-Request": "true",
            "Origin": self.base_url,
            "Referer": f"{self.base_url}/c/{self.conversation}/",
        }

    async def message(self, http: httpx.AsyncClient, rid: str, text: str) -> Stream:
        stream = Stream(rid)
        headers = {
            "X-CSRFToken": self.csrf,
            "HX-Request": "true",
            "HX-Current-URL": f"{self.base_url}/c/{self.conversation}/",
            "Origin": self.base_url,
            "Referer": f"{self.base_url}/c/{self.conversation}/",
        }
        stream.t_post = time.time()
        try:
            response = await http.post(
                f"/c/{self.conversation}/send/", data={"message": text}, headers=headers, cookies=self.cookies
            )
            stream.t_answered = time.time()
            if response.status_code != 200:
                stream.status, stream.error = "http", f"HTTP {response.status_code}: {response.text[:200]}"
                return stream
            found = RUN_ID.search(response.text)
            if not found:
                stream.status, stream.error = "http", "no run id in the answer"
                return stream
            stream.run_id = int(found[1])
            run = self._run(stream.run_id)
            async with asyncio.timeout(self.timeout):
                await run.done.wait()
            if _missing(run):
                # chat.js asks for a replay when a frame is missing; so does this client.
                stream.replays = 1
                self._replayed.clear()
                await self.ws.send(json.dumps({"resume": {str(found[1]): 0}, "since_run": int(found[1])}))
                async with asyncio.timeout(self.timeout):
                    await self._replayed.wait()
        except TimeoutError:
            stream.status, stream.error = "timeout", f"no end of run within {self.timeout} s"
            return stream
        except (httpx.HTTPError, OSError) as exc:
            stream.status, stream.error = "http", f"{type(exc).__name__}: {exc}"
            return stream
        self._assemble(stream, run)
        return stream

    @staticmethod
    def _assemble(stream: Stream, run: RunFrames) -> None:
        seqs = sorted(run.frames)
        stream.gaps = sum(1 for a, b in zip(seqs, seqs[1:], strict=False) if b != a + 1)
        stream.duplicates = run.duplicates
        stream.frames = len(seqs)
        parts: list[str] = []
        length = 0
        for seq in seqs:
            frame = run.frames[seq]
            if frame["type"] == "delta" and frame["data"].get("text"):
                parts.append(frame["data"]["text"])
                length += len(frame["data"]["text"])
                stream.marks.append((run.times[seq], length))
            if frame["type"] in DONE:
                stream.status = frame["type"]
                if frame["type"] == "run_failed":
                    stream.error = str(frame["data"].get("message", ""))[:200]
        stream.text = "".join(parts)
        if stream.marks:
            stream.t_first = min(t for t, _ in stream.marks)
            stream.t_last = max(t for t, _ in stream.marks)


def _missing(run: RunFrames) -> bool:
    return bool(run.frames) and len(run.frames) != max(run.frames)


async def direct_message(
    http: httpx.AsyncClient, upstream: str, rid: str, text: str, timeout: float
) -> Stream:
    """The floor: the same request straight to the upstream, no relay."""
    stream = Stream(rid)
    body = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": text}]}
    stream.t_post = time.time()
    parts: list[str] = []
    length = 0
    try:
        async with (
            asyncio.timeout(timeout),
            http.stream("POST", upstream + "/chat/completions", json=body) as r,
        ):
            async for line in r.aiter_lines():
                if not line.startswith("data: {"):
                    continue
                now = time.time()
                for choice in json.loads(line[6:]).get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        parts.append(piece)
                        length += len(piece)
                        stream.marks.append((now, length))
        stream.status = "run_finished"
    except (TimeoutError, httpx.HTTPError) as exc:
        stream.status, stream.error = "http", f"{type(exc).__name__}: {exc}"
    stream.text = "".join(parts)
    if stream.marks:
        stream.t_first, stream.t_last = stream.marks[0][0], stream.marks[-1][0]
    return stream
