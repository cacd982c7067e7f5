"""Settings of the stacks the tests start (`tests/integration/stack.py`): the app's own, with a fast
password hasher first. Tests create their users and log them in, in every test; with the default
hasher (PBKDF2, 1.5 million iterations, ~0.5 s of CPU each here) the browser tests spent seconds per
test hashing. The pytest process uses the same hasher (`tests/conftest.py`, `fast_passwords`)."""

from chatapp.settings import *  # noqa: F403

PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
