#!/usr/bin/env bash
# Extract the UI strings into locale/<lang>/LC_MESSAGES/{django,djangojs}.po and compile them to .mo
# (needs GNU gettext: apt-get install gettext). Translators edit the .po files; the compiled .mo files
# are committed so `make run` needs no gettext (tests/web/test_translations.py checks they agree).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
IGNORE=(--ignore=.venv --ignore=data --ignore=static/vendor --ignore=tests --ignore=bench --ignore=conformance
        --ignore=node_modules --ignore=test-artifacts --ignore=agent --ignore=scripts)
export DEBUG=1
$PY manage.py makemessages --locale=zh_Hans --domain=django --no-location --no-obsolete "${IGNORE[@]}"
$PY manage.py makemessages --locale=zh_Hans --domain=djangojs --no-location --no-obsolete "${IGNORE[@]}"
$PY manage.py compilemessages --locale=zh_Hans --ignore=.venv
