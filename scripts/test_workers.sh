#!/usr/bin/env bash
# How many pytest-xdist processes `make test` runs: two when PostgreSQL takes enough connections.
# Each process starts its own stacks (daphne, Celery workers with 8 DB threads), which pool their
# connections: two processes peaked at ~100 connections here (docs/architecture.md).
set -euo pipefail
max=$(psql -h 127.0.0.1 -U postgres -tAc "SHOW max_connections" 2>/dev/null || echo 100)
if [ "$max" -ge 150 ]; then
  echo 2
else
  echo "make test: PostgreSQL's max_connections is $max; running one pytest process (two need >= 150:" \
    "ALTER SYSTEM SET max_connections = 300, then restart PostgreSQL)" >&2
  echo 0
fi
