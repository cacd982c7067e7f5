"""The demo database behind query_database: users (000 §10.4) and their orders.

The same rows go into SQLite (``create_demo_sqlite``) and PostgreSQL (``ensure_demo_database`` in
``sql_postgres``), so the seed's "two newest users" query answers 王明 (102) then 李华 (101) on both.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

USERS: tuple[tuple[int, str, str], ...] = (
    (93, "张伟", "2026-06-02T08:00:00Z"),
    (94, "Alice Martin", "2026-06-11T14:20:00Z"),
    (95, "陈静", "2026-06-19T09:45:00Z"),
    (96, "Bob Okafor", "2026-06-30T17:05:00Z"),
    (97, "刘洋", "2026-07-03T11:10:00Z"),
    (98, "Chloé Durand", "2026-07-09T16:40:00Z"),
    (99, "赵敏", "2026-07-14T07:55:00Z"),
    (100, "Diego Ruiz", "2026-07-17T20:30:00Z"),
    (101, "李华", "2026-07-18T09:15:00Z"),
    (102, "王明", "2026-07-18T10:30:00Z"),
)

# (id, user_id, product, amount, status, created_at)
ORDERS: tuple[tuple[int, int, str, str, str, str], ...] = (
    (5001, 93, "Notebook A5", "12.50", "delivered", "2026-06-03T10:00:00Z"),
    (5002, 94, "Desk lamp", "39.90", "delivered", "2026-06-12T09:30:00Z"),
    (5003, 94, "USB-C cable", "8.99", "delivered", "2026-06-15T13:00:00Z"),
    (5004, 95, "茶叶礼盒", "168.00", "delivered", "2026-06-20T12:00:00Z"),
    (5005, 96, "Headphones", "129.00", "returned", "2026-07-01T18:00:00Z"),
    (5006, 97, "Backpack", "59.00", "delivered", "2026-07-04T08:20:00Z"),
    (5007, 98, "Coffee beans 1kg", "24.00", "shipped", "2026-07-10T10:10:00Z"),
    (5008, 99, "机械键盘", "499.00", "shipped", "2026-07-15T15:45:00Z"),
    (5009, 100, "Monitor 27in", "289.00", "paid", "2026-07-17T21:00:00Z"),
    (5010, 101, "钢笔", "86.00", "paid", "2026-07-18T09:40:00Z"),
    (5011, 102, "Notebook A5", "12.50", "paid", "2026-07-18T10:45:00Z"),
    (5012, 102, "Desk lamp", "39.90", "pending", "2026-07-18T11:00:00Z"),
)

SQLITE_SCHEMA = """
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    product TEXT NOT NULL,
    amount NUMERIC NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""


def create_demo_sqlite(path: Path) -> Path:
    """Create (or recreate) the demo SQLite database at ``path``; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.executescript(SQLITE_SCHEMA)
        conn.executemany("INSERT INTO users VALUES (?, ?, ?)", USERS)
        conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", ORDERS)
        conn.commit()
    finally:
        conn.close()
    return path
