"""Results: episode metrics, the result dict's writers (JSON, CSV, TensorBoard), system usage."""
