"""Benchmarks: they print figures; tests assert behaviour."""
