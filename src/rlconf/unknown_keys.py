"""Why a key is refused: settings of the reference that rlconf drops on purpose, and the
did-you-mean hints of an unknown-key error."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

_NOT_IN_RUNTIME = "an RLlib model option that rlconf's runtime does not support"

#: Keys of the reference's COMMON_CONFIG that have no meaning in rlconf, and why (the
#: TensorFlow-only and RLlib 2.x switches that are accepted at their "off" value are in
#: ``rlconf.inert_keys``; other names of rlconf's keys, deprecated ones among them, are in
#: ``rlconf.key_aliases``).
DROPPED_KEYS: dict[str, str] = {
    "sample_collector": "rlconf's runtime has a single, built-in sample collector",
    "simple_optimizer": "deprecated in the reference; the runtime needs no such switch",
    "evaluation_num_episodes": "deprecated: use evaluation_duration with "
    "evaluation_duration_unit='episodes'",
    "timesteps_per_iteration": "deprecated: use min_sample_timesteps_per_reporting",
    "min_iter_time_s": "deprecated: use min_time_s_per_reporting",
    "collect_metrics_timeout": "deprecated: use metrics_episode_collection_timeout_s",
}

#: Keys of the reference's model dict that rlconf's model catalog does not build (the off
#: switches among them, such as ``use_lstm: False``, are accepted: ``rlconf.inert_keys``).
DROPPED_MODEL_KEYS: dict[str, str] = {
    key: _NOT_IN_RUNTIME
    for key in (
        "lstm_cell_size",
        "lstm_use_prev_action_reward",
        "attention_num_transformer_units",
        "attention_dim",
        "attention_num_heads",
        "attention_head_dim",
        "attention_memory_inference",
        "attention_memory_training",
        "attention_position_wise_mlp_dim",
        "attention_init_gru_gate_bias",
        "attention_use_n_prev_actions",
        "attention_use_n_prev_rewards",
        "framestack",
        "dim",
        "grayscale",
        "zero_mean",
    )
}


def did_you_mean(key: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(candidates), n=3, cutoff=0.6)
    if not close:
        return ""
    return "did you mean " + " or ".join(repr(c) for c in close) + "?"
