"""Per-algorithm configs: each adds its own training fields and defaults to those of its family,
declared once in ``actor_critic_fields`` (PPO, A2C, PG, MARWIL) and ``off_policy_fields`` (DQN)."""
