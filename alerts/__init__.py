"""Alerts (issue 19): channels, routing rules, and the outbox of notifications the sender delivers."""
