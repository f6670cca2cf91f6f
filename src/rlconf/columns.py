"""``Columns``: RLlib's new API stack names of the batch columns an RLModule reads and writes
(pure constants; the runtime's sample batches use the same names).

A custom module (``RLModuleSpec``) reads ``OBS`` (and, with memory, ``STATE_IN``) and returns
``ACTION_DIST_INPUTS`` (and ``EMBEDDINGS``, ``VF_PREDS``, ``STATE_OUT`` where it has them);
``QF_PREDS`` and ``QF_TWIN_PREDS`` are the keys of the Q-values a DQN or SAC module returns
(RLlib keeps them with its DQN and SAC learners).
"""

from __future__ import annotations


class Columns:
    """Column names, as RLlib's ``ray.rllib.core.columns.Columns``."""

    OBS = "obs"
    INFOS = "infos"
    ACTIONS = "actions"
    ACTIONS_FOR_ENV = "actions_for_env"
    REWARDS = "rewards"
    TERMINATEDS = "terminateds"
    TRUNCATEDS = "truncateds"
    NEXT_OBS = "new_obs"
    EPS_ID = "eps_id"
    AGENT_ID = "agent_id"
    MODULE_ID = "module_id"
    SEQ_LENS = "seq_lens"
    T = "t"
    STATE_IN = "state_in"
    NEXT_STATE_IN = "next_state_in"
    STATE_OUT = "state_out"
    NEXT_STATE_OUT = "next_state_out"
    EMBEDDINGS = "embeddings"
    ACTION_DIST_INPUTS = "action_dist_inputs"
    ACTION_PROB = "action_prob"
    ACTION_LOGP = "action_logp"
    VF_PREDS = "vf_preds"
    VALUES_BOOTSTRAPPED = "values_bootstrapped"
    ADVANTAGES = "advantages"
    VALUE_TARGETS = "value_targets"
    INTRINSIC_REWARDS = "intrinsic_rewards"
    LOSS_MASK = "loss_mask"
    QF_PREDS = "qf_preds"
    QF_TWIN_PREDS = "qf_twin_preds"
