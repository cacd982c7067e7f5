#!/usr/bin/env bash
# Make sure PostgreSQL and Redis answer on 127.0.0.1; start them when they are down. Never assume.
set -euo pipefail
pg_up() { pg_isready -q -h 127.0.0.1 -p 5432; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
wait_until() { for _ in $(seq 1 100); do "$1" && return 0; sleep 0.2; done; return 1; }

if ! pg_up; then
  echo "Starting PostgreSQL…"
  version=$(ls /etc/postgresql | sort -V | tail -n1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_until pg_up || { echo "PostgreSQL did not come up on 127.0.0.1:5432" >&2; exit 1; }
fi
if ! redis_up; then
  echo "Starting Redis…"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_until redis_up || { echo "Redis did not come up on 127.0.0.1:6379" >&2; exit 1; }
fi
# The suite connects as postgres over TCP; with trust auth that needs no password.
psql -h 127.0.0.1 -U postgres -tAc "SELECT 1" >/dev/null
