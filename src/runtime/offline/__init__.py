"""Offline data: sample batches written to and read from JSON-lines files."""
