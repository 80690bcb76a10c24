"""Writes of the monitoring app: checks and their confirmation, server import, history upkeep."""
