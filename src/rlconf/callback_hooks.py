"""The callback hooks ``config.callbacks()`` takes functions for: RLlib's
``AlgorithmConfig.callbacks`` keywords (Ray 2.40 and later), each a config key of its own that
RLlib's config names ``callbacks_<hook>`` (``rlconf.key_aliases`` takes that name too)."""

from __future__ import annotations

CALLBACK_HOOKS: tuple[str, ...] = (
    "on_algorithm_init",
    "on_evaluate_start",
    "on_evaluate_end",
    "on_env_runners_recreated",
    "on_checkpoint_loaded",
    "on_environment_created",
    "on_episode_created",
    "on_episode_start",
    "on_episode_step",
    "on_episode_end",
    "on_sample_end",
    "on_train_result",
)
