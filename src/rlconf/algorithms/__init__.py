"""Per-algorithm configs: each adds its own training fields and defaults."""
