"""Our side of ``real_workloads.py``: each row's config built through the SDK, as a user writes
it, on the embedded default (``num_workers=0``: the driver samples and learns, no Ray), and
``train()`` called until the timed window (``workload_settings.Window``, observed after every
``train()``) is complete.

The atari_async row's sides are all ours: APPO and IMPALA with remote rollout workers (Ray,
started here for the run with a logical CPU for the driver and one per worker, whatever the
machine has, and shut down after it), and the sync PPO of atari_ppo. Its window counts the env
steps trained (``num_env_steps_trained``: through the learner's every pass), not those sampled,
which run ahead of the learner by the batches waiting in its queue.

Torch's threads are left to the runtime (its learner thread policy) unless ``OMP_NUM_THREADS``
is set, which ``real_workloads.py --threads`` does for every side.
"""

from __future__ import annotations

import logging
import os
import tempfile
from typing import Any

from workload_settings import (
    ASYNC_ATARI,
    ATARI_ENV,
    ATARI_PPO,
    DQN,
    MUJOCO_ENV,
    NATURE_CONV,
    NATURE_HIDDEN,
    SAC,
    TD3,
    TD3_EXPLORATION_STD,
    TD3_POLICY_DELAY,
    TD3_TARGET_NOISE,
    TD3_TARGET_NOISE_CLIP,
    VECTOR_SIDE,
    PPOSettings,
    Window,
    ppo_settings,
)

from rlconf import (
    AlgorithmConfig,
    APPOConfig,
    DQNConfig,
    IMPALAConfig,
    PPOConfig,
    SACConfig,
    TD3Config,
)

#: Env steps per ``train()`` of the off-policy rows: the timed window's granularity.
REPORT_EVERY = 100


def nature_conv_filters() -> list[list[Any]]:
    """The Nature stack as ``model.conv_filters``, each filter with its padding ("valid"), so
    that over 84x84 frames the maps are SB3's and CleanRL's: 20x20, 9x9 and 7x7 (3,136
    features)."""
    return [
        [channels, [kernel, kernel], stride, padding]
        for channels, kernel, stride, padding in NATURE_CONV
    ]


def atari_model() -> dict[str, Any]:
    """The Nature CNN, then 512 ReLU units that the policy and the value output share."""
    return {
        "conv_filters": nature_conv_filters(),
        "post_fcnet_hiddens": [NATURE_HIDDEN],
        "vf_share_layers": True,
    }


def ppo_config(row: str, seed: int) -> PPOConfig:
    s: PPOSettings = ppo_settings(row)
    if row == "atari_ppo":
        env = ATARI_ENV
        model = atari_model()
        normalize = False
    else:
        env = MUJOCO_ENV
        model = {
            "fcnet_hiddens": list(s.hiddens),
            "fcnet_activation": "relu",
            "vf_share_layers": False,
            # SB3's state-independent log-std (a learned vector).
            "free_log_std": True,
        }
        # The zoo's VecNormalize normalises observations (and rewards, which RLlib's PPO
        # has no setting for).
        normalize = s.normalize
    return (
        PPOConfig()
        .environment(env)
        .rollouts(
            num_workers=0,
            num_envs_per_worker=s.num_envs,
            rollout_fragment_length=s.num_steps,
            observation_filter="MeanStdFilter" if normalize else "NoFilter",
        )
        .training(
            train_batch_size=s.batch,
            sgd_minibatch_size=s.minibatch,
            num_sgd_iter=s.epochs,
            lr=s.lr,
            clip_param=s.clip,
            entropy_coeff=s.ent_coef,
            vf_loss_coeff=s.vf_coef,
            grad_clip=s.max_grad_norm,
            gamma=s.gamma,
            lambda_=s.gae_lambda,
            # SB3 and CleanRL have no KL penalty.
            kl_coeff=0.0,
            optimizer={"eps": s.adam_eps},
            model=model,  # type: ignore[arg-type]
        )
        .debugging(seed=seed)
    )


def sac_config(seed: int) -> SACConfig:
    net = {"fcnet_hiddens": list(SAC.hiddens), "fcnet_activation": "relu"}
    return (
        SACConfig()
        .environment(MUJOCO_ENV)
        .rollouts(num_workers=0, rollout_fragment_length=1)
        .training(
            train_batch_size=SAC.batch,
            tau=SAC.tau,
            gamma=SAC.gamma,
            num_steps_sampled_before_learning_starts=SAC.learning_starts,
            replay_buffer_config={"type": "ReplayBuffer", "capacity": SAC.buffer},
            optimization={
                "actor_learning_rate": SAC.actor_lr,
                "critic_learning_rate": SAC.critic_lr,
                "entropy_learning_rate": SAC.actor_lr,
            },
            initial_alpha=1.0,
            target_entropy="auto",
            q_model_config=net,  # type: ignore[arg-type]
            policy_model_config=net,  # type: ignore[arg-type]
        )
        .reporting(min_sample_timesteps_per_reporting=REPORT_EVERY)
        .debugging(seed=seed)
    )


def td3_config(seed: int) -> TD3Config:
    return (
        TD3Config()
        .environment(MUJOCO_ENV)
        .rollouts(num_workers=0, rollout_fragment_length=1)
        .training(
            train_batch_size=TD3.batch,
            tau=TD3.tau,
            gamma=TD3.gamma,
            num_steps_sampled_before_learning_starts=TD3.learning_starts,
            replay_buffer_config={"type": "ReplayBuffer", "capacity": TD3.buffer},
            actor_hiddens=list(TD3.hiddens),
            critic_hiddens=list(TD3.hiddens),
            actor_lr=TD3.actor_lr,
            critic_lr=TD3.critic_lr,
            policy_delay=TD3_POLICY_DELAY,
            target_noise=TD3_TARGET_NOISE,
            target_noise_clip=TD3_TARGET_NOISE_CLIP,
        )
        .exploration(
            exploration_config={
                "type": "GaussianNoise",
                # Uniformly random actions until learning starts, as SB3 takes them.
                "random_timesteps": TD3.learning_starts,
                "stddev": TD3_EXPLORATION_STD,
                "initial_scale": 1.0,
                "final_scale": 1.0,
            }
        )
        .reporting(min_sample_timesteps_per_reporting=REPORT_EVERY)
        .debugging(seed=seed)
    )


def dqn_config(seed: int) -> DQNConfig:
    return (
        DQNConfig()
        .environment(ATARI_ENV)
        .rollouts(num_workers=0, rollout_fragment_length=DQN.train_freq)
        .training(
            train_batch_size=DQN.batch,
            lr=DQN.lr,
            gamma=DQN.gamma,
            grad_clip=DQN.max_grad_norm,
            # SB3's DQN: one Q-value layer over the Nature features, no dueling, no double Q.
            hiddens=[],
            dueling=False,
            double_q=False,
            n_step=1,
            target_network_update_freq=DQN.target_update,
            num_steps_sampled_before_learning_starts=DQN.learning_starts,
            replay_buffer_config={"type": "ReplayBuffer", "capacity": DQN.buffer},
            model={
                "conv_filters": nature_conv_filters(),
                # The conv stack's output layer is the 512-unit ReLU layer the Q-values read.
                "fcnet_hiddens": [NATURE_HIDDEN],
                "post_fcnet_hiddens": [NATURE_HIDDEN],
                "no_final_linear": True,
            },
        )
        .exploration(
            exploration_config={
                "type": "EpsilonGreedy",
                "initial_epsilon": 1.0,
                "final_epsilon": DQN.final_eps,
                "epsilon_timesteps": DQN.exploration_steps,
            }
        )
        .reporting(min_sample_timesteps_per_reporting=4 * REPORT_EVERY)
        .debugging(seed=seed)
    )


def async_config(side: str, seed: int) -> IMPALAConfig:
    """APPO or IMPALA on Atari (``ASYNC_ATARI``), with atari_ppo's rates and coefficients."""
    a, s = ASYNC_ATARI, ATARI_PPO
    config = APPOConfig().training(clip_param=s.clip) if side == "appo" else IMPALAConfig()
    return (
        config.environment(ATARI_ENV)
        .rollouts(
            num_workers=a.workers,
            num_envs_per_worker=a.envs_per_worker,
            rollout_fragment_length=a.fragment,
        )
        .training(
            train_batch_size=a.train_batch,
            num_sgd_iter=a.passes,
            # Every row of a fragment in the loss, as PPO's minibatches have them.
            vtrace_drop_last_ts=False,
            lr=s.lr,
            entropy_coeff=s.ent_coef,
            vf_loss_coeff=s.vf_coef,
            grad_clip=s.max_grad_norm,
            gamma=s.gamma,
            model=atari_model(),  # type: ignore[arg-type]
        )
        # A result (and a look at the window) after every training step, each of which takes
        # the fragments that came in, not every 10 s: the trained steps go up when a batch has
        # had its last pass, and the window sees that at the next result.
        .reporting(min_time_s_per_reporting=0, min_sample_timesteps_per_reporting=0)
        .debugging(seed=seed, log_level="ERROR")
    )


def config_for(row: str, seed: int, side: str = "rlconf") -> AlgorithmConfig:
    if row == "atari_async":
        return ppo_config("atari_ppo", seed) if side == "sync_ppo" else async_config(side, seed)
    if row == "sac_halfcheetah":
        return sac_config(seed)
    if row == "td3_halfcheetah":
        return td3_config(seed)
    if row == "dqn_atari":
        return dqn_config(seed)
    if side == VECTOR_SIDE:
        return ppo_config(row, seed).rollouts(gym_env_vectorize_mode="vector_entry_point")
    return ppo_config(row, seed)


def run(row: str, seed: int, window: Window, side: str = "rlconf") -> dict[str, Any]:
    # The run's results (result.json, checkpoints) go to a folder removed with the run.
    with tempfile.TemporaryDirectory(prefix="rlconf_workloads_") as results:
        os.environ.setdefault("RLCONF_RESULTS_DIR", results)
        if side not in ("appo", "impala"):
            return timed_run(row, seed, window, side)
        import ray

        ray.init(
            num_cpus=1 + ASYNC_ATARI.workers, include_dashboard=False, logging_level=logging.ERROR
        )
        try:
            return timed_run(row, seed, window, side)
        finally:
            ray.shutdown()


def timed_run(row: str, seed: int, window: Window, side: str = "rlconf") -> dict[str, Any]:
    import torch

    steps_key = "num_env_steps_trained" if row == "atari_async" else "timesteps_total"
    algo = config_for(row, seed, side).build()
    try:
        policy = algo.get_policy()
        while True:
            result = algo.train()
            learner = policy.learner
            if window.observe(int(result[steps_key]), int(learner.num_grad_updates)):
                break
        out: dict[str, Any] = {**window.result(), "threads": torch.get_num_threads()}
        if row in ("atari_ppo", "dqn_atari", "atari_async"):
            out["params"] = sum(p.numel() for p in policy.module.parameters())
        if row == "dqn_atari":
            # The bytes the stored rows hold (each frame once, and the slots naming them),
            # per stored row.
            buffer = algo.replay_buffers["default_policy"]
            out["bytes_per_transition"] = round(buffer.bytes_per_transition(), 1)
            out["bytes_measure"] = "ReplayBuffer.bytes_per_transition()"
        return out
    finally:
        algo.stop()
