"""The algorithms: PPO, PG, A2C, DQN, SAC, DDPG, TD3, MARWIL and BC (each package holds the
algorithm, its module, learner and losses)."""
