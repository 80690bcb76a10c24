"""Alerts: channels, routing rules, and the outbox of notifications the sender delivers."""
