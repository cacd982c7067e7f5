"""demo_tools: the FastMCP demo of 003 §3.2 (stock price, send_message) plus resources and prompts.

``send_message`` is the high-risk example: it "sends" by appending one JSON line to the outbox file
named by ``CLEARLOOP_OUTBOX`` (default ``data/outbox.jsonl``), so tests can count side effects.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

from demo.servers._cli import run

server = MCPServer(
    "demo_tools", version="1.0.0", instructions="Demo stock quotes and a simulated SMS outbox."
)

_SYMBOL_RE = re.compile(r"^[A-Z0-9.]{1,10}$")
_PHONE_RE = re.compile(r"^1\d{10}$")


class StockPrice(BaseModel):
    symbol: str
    price: float
    currency: str
    as_of: str


class SendReceipt(BaseModel):
    status: str
    message_id: str


def outbox_path() -> Path:
    return Path(os.environ.get("CLEARLOOP_OUTBOX", "data/outbox.jsonl"))


def _quote(symbol: str) -> StockPrice:
    seed = hashlib.sha256(symbol.encode()).digest()
    currency = "CNY" if symbol.isdigit() else "USD"
    price = round(10 + int.from_bytes(seed[:2], "big") % 90_000 / 100, 2)
    return StockPrice(symbol=symbol, price=price, currency=currency, as_of="2026-07-18T10:30:00Z")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False))
def get_stock_price(symbol: str) -> StockPrice:
    """Look up the latest price of one stock (demo data: deterministic, not real quotes).

    Returns symbol, price, currency (CNY for Shanghai/Shenzhen codes, USD otherwise) and as_of time.

    Args:
        symbol: Stock code, 1-10 characters, e.g. "AAPL", "MSFT" or "600519".
    """
    symbol = symbol.strip().upper()
    if not _SYMBOL_RE.match(symbol):
        raise ToolError(f"invalid symbol {symbol!r}: use 1-10 letters, digits or '.', e.g. AAPL or 600519")
    return _quote(symbol)


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=True))
def send_message(phone_number: str, content: str) -> SendReceipt:
    """Send one SMS text message to a phone number. This really sends: only call it when the user
    asked for a message to be sent, with the exact number and text.

    Returns {status: "sent", message_id}.

    Args:
        phone_number: Recipient, an 11-digit mainland China mobile number starting with 1, e.g. "13800138000".
        content: Message text, 1-70 characters.
    """
    if not _PHONE_RE.match(phone_number):
        raise ToolError(f"invalid phone_number {phone_number!r}: 11 digits starting with 1")
    if not 1 <= len(content) <= 70:
        raise ToolError(f"content must be 1-70 characters, got {len(content)}")
    receipt = SendReceipt(status="sent", message_id=f"MSG{uuid.uuid4().hex[:12].upper()}")
    path = outbox_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {"message_id": receipt.message_id, "phone_number": phone_number, "content": content}
    line["sent_at"] = datetime.now(UTC).isoformat()
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    _hold_after_send()
    return receipt


def _hold_after_send(limit: float = 60.0) -> None:
    """Test hook: with ``CLEARLOOP_OUTBOX_HOLD=<path>``, wait (at most ``limit`` s) until that file
    exists before answering, so a test can kill the caller after the side effect and before the
    result comes back (tests/durable). Unset, it does nothing."""
    hold = os.environ.get("CLEARLOOP_OUTBOX_HOLD")
    deadline = time.monotonic() + limit
    while hold and not Path(hold).exists() and time.monotonic() < deadline:
        time.sleep(0.02)


@server.resource(
    "demo://watchlist", mime_type="application/json", description="Symbols the demo user follows."
)
def watchlist() -> str:
    return json.dumps({"symbols": ["AAPL", "MSFT", "600519"]})


@server.resource(
    "demo://quotes/{symbol}", mime_type="application/json", description="Latest quote of a symbol."
)
def quote_resource(symbol: str) -> str:
    return _quote(symbol.upper()).model_dump_json()


@server.prompt(description="A short market briefing for a list of symbols.")
def market_briefing(symbols: str, tone: str = "neutral") -> str:
    return (
        f"Give a {tone} three-line market briefing for these symbols: {symbols}. "
        "Use get_stock_price for each one before writing, and state that the data is demo data."
    )


if __name__ == "__main__":
    run(server)
