"""Settings are parsed strictly; a deployment with DEBUG off passes check --deploy without warnings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    base = {
        k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL", "REDIS_URL"}
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DEBUG", "maybe"),
        ("DATABASE_URL", "mysql-ish://x"),
        ("REDIS_URL", "http://x"),
        ("CSRF_TRUSTED_ORIGINS", "chat.example.com"),
        ("CLEARLOOP_MAX_MESSAGE_BYTES", "lots"),
        ("OPENAI_API", "completions"),
        ("ALLOWED_HOSTS", "a,,b"),
    ],
)
def test_it_names_the_variable_that_does_not_parse(name, value, tmp_path):
    env = {"DEBUG": "1", "CLEARLOOP_DATA_DIR": str(tmp_path), name: value}
    result = manage("check", **env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and name in result.stderr


def test_it_refuses_to_start_without_a_secret_key_when_debug_is_off(tmp_path):
    result = manage("check", DEBUG="0", CLEARLOOP_DATA_DIR=str(tmp_path))
    assert result.returncode != 0 and "SECRET_KEY" in result.stderr


def test_check_deploy_is_clean_with_debug_off_and_real_secrets(tmp_path):
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="0",
        SECRET_KEY="k3y-" + "x7Qz9pL2mN4vB8cR1tY6uI0oP5aS3dF7gH2jK9lZ" * 2,
        ALLOWED_HOSTS="chat.example.com",
        CSRF_TRUSTED_ORIGINS="https://chat.example.com",
        CLEARLOOP_DATA_DIR=str(tmp_path),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
    assert "WARNING" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "weak", ["short", "a" * 60, "django-insecure-" + "x7Qz9pL2mN4vB8cR1tY6uI0oP5aS3dF7gH2jK9lZ"]
)
def test_a_weak_secret_key_is_refused_when_debug_is_off(weak, tmp_path):
    # Review L12: a 5-character SECRET_KEY was accepted in production (only check --deploy warned).
    result = manage("check", DEBUG="0", SECRET_KEY=weak, CLEARLOOP_DATA_DIR=str(tmp_path))
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "SECRET_KEY: too weak" in result.stderr
