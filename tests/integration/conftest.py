"""Shared fixtures (live_stack, demo_provider) live in tests/conftest.py."""
