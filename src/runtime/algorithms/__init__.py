"""The algorithms: PPO, PG, A2C, DQN, SAC (each module holds the algorithm and its policy)."""
