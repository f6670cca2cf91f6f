"""The algorithms: PPO, PG, A2C (each module holds the algorithm and its policy)."""
