"""Secrets known by their environment variable are redacted from the first call after they change,
although ``known_secrets`` no longer rescans the environment on every call (docs/performance.md)."""

from __future__ import annotations

from chatapp.redaction import REDACTED, known_secrets, redact_text, register_secret


def test_a_key_set_changed_or_removed_at_run_time_is_seen_at_the_next_call(monkeypatch):
    known_secrets()  # the cached list is built before the environment changes
    monkeypatch.setenv("BENCH_PROBE_API_KEY", "first-value-123")
    assert redact_text("a first-value-123 b") == f"a {REDACTED} b"
    monkeypatch.setenv("BENCH_PROBE_API_KEY", "second-value-456")
    assert redact_text("second-value-456") == REDACTED
    assert "first-value-123" not in known_secrets()
    monkeypatch.delenv("BENCH_PROBE_API_KEY")
    assert "second-value-456" not in known_secrets()


def test_a_secret_registered_after_the_list_was_built_is_redacted():
    known_secrets()
    register_secret("registered-later-789")
    assert redact_text("x registered-later-789") == f"x {REDACTED}"
