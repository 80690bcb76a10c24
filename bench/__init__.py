"""Benchmarks: they print figures (DESIGN.md §11); tests assert behaviour."""
