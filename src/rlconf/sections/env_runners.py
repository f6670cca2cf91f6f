"""``AlgorithmConfig.env_runners()``: RLlib's new API stack home of the rollout settings. Each
keyword is a key of ``rollouts()``, ``resources()`` or ``exploration()`` under the new stack's
name (``num_env_runners`` is ``num_workers``) or its own, one setting with it."""

from __future__ import annotations

from typing_extensions import TypedDict

from rlconf.section import Section


class EnvRunnersArgs(TypedDict, total=False):
    """No fields of its own: every keyword sets a key of another section."""


ENV_RUNNERS = Section(
    method="env_runners",
    fields=EnvRunnersArgs,
    doc="Sets the rollout workers (RLlib's env runners) and how they sample: the settings of "
    "rollouts(), under the new API stack's names.",
    defaults={},
    keywords=(
        "num_env_runners",
        "create_env_on_local_worker",
        "num_envs_per_env_runner",
        "num_cpus_per_env_runner",
        "num_gpus_per_env_runner",
        "custom_resources_per_env_runner",
        "max_requests_in_flight_per_env_runner",
        "compress_observations",
        "rollout_fragment_length",
        "batch_mode",
        "explore",
        "exploration_config",
        "gym_env_vectorize_mode",
        "remote_worker_envs",
        "remote_env_batch_wait_ms",
        "preprocessor_pref",
        "observation_filter",
        "env_to_module_connector",
    ),
)
