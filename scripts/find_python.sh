#!/usr/bin/env bash
# Print a Python >= 3.12 interpreter (Django 6 needs it): PATH first, then pyenv's versions.
for candidate in python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3 python3.13 "$HOME"/.pyenv/versions/3.13*/bin/python3 python3; do
  path=$(command -v "$candidate" 2>/dev/null) || continue
  # pyenv shims exist for versions that are not active: run it to be sure.
  if "$path" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then
    echo "$path"
    exit 0
  fi
done
exit 1
