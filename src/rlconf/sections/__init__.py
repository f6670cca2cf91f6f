"""One module per fluent method of ``AlgorithmConfig``: its fields, docs and defaults."""
