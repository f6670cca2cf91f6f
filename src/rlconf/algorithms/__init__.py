"""Per-algorithm configs: each adds its own training fields and defaults to those of its family,
declared once in ``actor_critic_fields`` (PPO, A2C, PG, MARWIL, IMPALA, APPO) and
``off_policy_fields`` (DQN)."""

from rlconf.algorithms.appo import APPOConfig
from rlconf.algorithms.impala import IMPALAConfig

__all__ = ["APPOConfig", "IMPALAConfig"]
