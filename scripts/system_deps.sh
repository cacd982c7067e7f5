#!/usr/bin/env bash
# Debian packages the test suite needs: chromium for the browser tests, PostgreSQL and Redis servers.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v pg_ctlcluster >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# `make messages` (makemessages/compilemessages) runs GNU gettext; `make run` uses the committed .mo files.
command -v msgfmt >/dev/null 2>&1 || need+=(gettext)
# CJK text in screenshots (the seeds' scenarios are in Chinese).
[ -e /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc ] || need+=(fonts-wqy-zenhei)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
echo "Installing Debian packages: ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
