"""The algorithms: PPO, PG, A2C, DQN, SAC, DDPG and TD3 (each package holds the algorithm, its
module, learner and losses)."""
