"""The floor server's settings (``bench/browser/floor.py``): the app's own, every middleware included,
with one URL. Not used by the app."""

from chatapp.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floors.urls"
