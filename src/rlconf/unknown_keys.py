"""Why a key is refused: settings of the reference that rlconf drops on purpose, and the
did-you-mean hints of an unknown-key error."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from rlconf.new_stack_names import NEW_STACK_REFUSED

#: Keys of the reference's configs that have no meaning in rlconf, and why (the
#: TensorFlow-only and RLlib 2.x switches that are accepted at their "off" value are in
#: ``rlconf.inert_keys``; other names of rlconf's keys, deprecated ones among them, are in
#: ``rlconf.key_aliases``; RLlib's new API stack names without a twin here are in
#: ``rlconf.new_stack_names``).
DROPPED_KEYS: dict[str, str] = {
    "sample_collector": "rlconf's runtime has a single, built-in sample collector",
    "simple_optimizer": "deprecated in the reference; the runtime needs no such switch",
    "evaluation_num_episodes": "deprecated: use evaluation_duration with "
    "evaluation_duration_unit='episodes'",
    "timesteps_per_iteration": "deprecated: use min_sample_timesteps_per_reporting",
    "min_iter_time_s": "deprecated: use min_time_s_per_reporting",
    "collect_metrics_timeout": "deprecated: use metrics_episode_collection_timeout_s",
    # The replay keys of the reference's DQN, SAC and DDPG configs, which RLlib 2.x moved into
    # replay_buffer_config (or renamed): their 1.x files still carry them.
    "learning_starts": "deprecated: use num_steps_sampled_before_learning_starts",
    "buffer_size": "deprecated: use replay_buffer_config={'capacity': ...}",
    "prioritized_replay": "deprecated: use replay_buffer_config={'type': "
    "'PrioritizedReplayBuffer'} (or 'ReplayBuffer' for false)",
    **{
        key: f"deprecated: use replay_buffer_config={{'{key}': ...}}"
        for key in (
            "prioritized_replay_alpha",
            "prioritized_replay_beta",
            "prioritized_replay_eps",
            "worker_side_prioritization",
        )
    },
    **{
        key: "deprecated with beta annealing, which the reference dropped: set "
        "replay_buffer_config={'prioritized_replay_beta': ...}"
        for key in ("final_prioritized_replay_beta", "prioritized_replay_beta_annealing_timesteps")
    },
    "Q_model": "deprecated: use q_model_config",
    "policy_model": "deprecated: use policy_model_config",
    # RLlib's overrides() lets any attribute of its config through, its methods' names too,
    # and nothing reads this one there.
    "exploration": "it is the name of the fluent method exploration(), not a setting; "
    "explore=False evaluates (or acts) without exploring",
    **NEW_STACK_REFUSED,
}


def did_you_mean(key: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(candidates), n=3, cutoff=0.6)
    if not close:
        return ""
    return "did you mean " + " or ".join(repr(c) for c in close) + "?"
