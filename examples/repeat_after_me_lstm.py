"""PPO with an LSTM on RepeatAfterMeEnv: each step shows a random token and pays +1 for acting
the token shown two steps before, -1 otherwise. A policy without memory can't do better than
chance (a mean return of 0 over 100 steps); the LSTM's reaches 50 in about 60k env steps (the
settings of RLlib's ``repeatafterme-ppo-lstm.yaml``). Then it acts by hand, carrying its state
from step to step as RLlib's ``compute_single_action`` does. Run it:

    python examples/repeat_after_me_lstm.py
"""

from __future__ import annotations

import os

from rlconf import PPOConfig
from runtime.example_envs import RepeatAfterMeEnv

ENV_CONFIG = {"repeat_delay": 2}


def config(seed: int = 0) -> PPOConfig:
    return (
        PPOConfig()
        .environment("runtime.example_envs.RepeatAfterMeEnv", env_config=ENV_CONFIG)
        .rollouts(num_workers=0, num_envs_per_worker=20)
        .training(
            gamma=0.9,
            lr=3e-4,
            num_sgd_iter=5,
            entropy_coeff=1e-5,
            model={
                "use_lstm": True,
                "lstm_cell_size": 64,
                "max_seq_len": 20,
                "fcnet_hiddens": [64],
                "vf_share_layers": True,
            },
        )
        .debugging(seed=seed)
    )


def main() -> None:
    budget = int(os.environ.get("RLCONF_EXAMPLE_STEPS", 100_000))
    algo = config().build()
    while True:
        result = algo.train()
        print(f"steps {result['timesteps_total']:7d}  reward {result['episode_reward_mean']:6.1f}")
        if result["episode_reward_mean"] >= 50 or result["timesteps_total"] >= budget:
            break
    # One greedy episode by hand: the state goes in and comes back with each action.
    env = RepeatAfterMeEnv(ENV_CONFIG)
    obs, _ = env.reset(seed=1)
    state = algo.get_policy().get_initial_state()
    total, done = 0.0, False
    while not done:
        action, state, _ = algo.compute_single_action(obs, state, explore=False)
        obs, reward, terminated, truncated, _ = env.step(action)
        total += reward
        done = terminated or truncated
    print(f"greedy episode by hand: return {total:.0f} of {env.episode_len}")
    algo.stop()


if __name__ == "__main__":
    main()
