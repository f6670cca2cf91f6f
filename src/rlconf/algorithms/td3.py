"""``TD3Config``: twin delayed DDPG: DDPG's config with two critics whose smaller value makes
the target (``twin_q``), the actor updated once every two critic updates (``policy_delay``),
clipped Gaussian noise on the target actor's actions (``smooth_target_policy``) and Gaussian
exploration noise; the TD3 paper's sizes and rates."""

from __future__ import annotations

from typing import Any, ClassVar

from rlconf.algorithms.ddpg import DDPGConfig
from rlconf.exploration_types import ExplorationConfig
from rlconf.generated.td3_fluent import TD3ConfigFluent
from rlconf.replay_buffer_config import REPLAY_BUFFER_DEFAULTS, ReplayBufferConfig

#: TD3's replay buffer: uniform, a million rows.
TD3_REPLAY_BUFFER: ReplayBufferConfig = {
    **REPLAY_BUFFER_DEFAULTS,
    "type": "ReplayBuffer",
    "capacity": 1_000_000,
}

#: TD3's exploration: 10k uniformly random steps, then Gaussian noise of stddev 0.1 (in the
#: policy's action units), not annealed.
TD3_EXPLORATION_DEFAULTS: ExplorationConfig = {
    "type": "GaussianNoise",
    "random_timesteps": 10000,
    "stddev": 0.1,
    "initial_scale": 1.0,
    "final_scale": 1.0,
    "scale_timesteps": 1,
}


class TD3Config(TD3ConfigFluent, DDPGConfig):
    """Config of TD3: DDPG with twin critics, delayed actor updates and target-policy
    smoothing, for Box action spaces."""

    __slots__ = ()
    algo_name = "TD3"
    _algo_defaults: ClassVar[dict[str, Any]] = {
        **DDPGConfig._algo_defaults,
        "twin_q": True,
        "policy_delay": 2,
        "smooth_target_policy": True,
        "l2_reg": 0.0,
        "tau": 5e-3,
        "train_batch_size": 100,
        "replay_buffer_config": TD3_REPLAY_BUFFER,
        "num_steps_sampled_before_learning_starts": 10000,
        "exploration_config": TD3_EXPLORATION_DEFAULTS,
    }
