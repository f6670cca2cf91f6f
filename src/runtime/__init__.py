"""The trainer runtime of rlconf (torch, gymnasium, ray): algorithms, workers, policies."""
