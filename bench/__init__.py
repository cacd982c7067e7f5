"""Benchmarks (not tests): ``python -m bench`` runs every one; each also runs alone as ``bench.<name>.run``."""
