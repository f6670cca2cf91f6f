"""The reference run of ``solve_stateless_cartpole.py``: sb3-contrib's RecurrentPPO with the RL
Zoo's settings for CartPoleNoVel-v1 (8 envs x 32 steps, minibatch 256, 20 epochs, gamma 0.98,
GAE lambda 0.8, learning rate and clip range decaying linearly from 1e-3 and 0.2 over 100k
steps, no entropy bonus, observations normalised; an LSTM of 64 for the actor and one for the
critic, a [64] ReLU layer after each, no orthogonal init), on ``StatelessCartPole``, stopping at
the first mean training return of at least 450 over the last 100 episodes (or at 100k steps).

Run by ``solve_stateless_cartpole.py`` under an interpreter that has ``sb3-contrib`` (not a
dependency of this project). Prints the machine (``machine.py``), then one JSON line: env
steps, the mean return reached.

    python benchmarks/sb3_stateless_cartpole.py --seed 0
"""

from __future__ import annotations

import argparse
import json

TARGET = 450.0
MAX_STEPS = 100_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import numpy as np
    import torch
    from machine import print_machine
    from sb3_contrib import RecurrentPPO  # type: ignore[import-not-found]
    from stable_baselines3.common.callbacks import BaseCallback  # type: ignore[import-not-found]
    from stable_baselines3.common.env_util import make_vec_env  # type: ignore[import-not-found]
    from stable_baselines3.common.vec_env import VecNormalize  # type: ignore[import-not-found]
    from torch import nn

    from runtime.example_envs import StatelessCartPole

    class StopAtTarget(BaseCallback):  # type: ignore[misc]
        """Stops once the mean return over the last 100 episodes reaches the target."""

        def __init__(self) -> None:
            super().__init__()
            self.reward = float("nan")

        def _on_step(self) -> bool:
            episodes = self.model.ep_info_buffer
            if len(episodes) == 0:
                return True
            self.reward = float(np.mean([e["r"] for e in episodes]))
            return self.reward < TARGET

    def linear(start: float) -> object:
        return lambda remaining: remaining * start

    # As the zoo runs it: one thread per process.
    torch.set_num_threads(1)
    print_machine()
    env = VecNormalize(
        make_vec_env(StatelessCartPole, n_envs=8, seed=args.seed), norm_obs=True, norm_reward=False
    )
    model = RecurrentPPO(
        "MlpLstmPolicy",
        env,
        n_steps=32,
        batch_size=256,
        n_epochs=20,
        gamma=0.98,
        gae_lambda=0.8,
        ent_coef=0.0,
        learning_rate=linear(1e-3),
        clip_range=linear(0.2),
        policy_kwargs={
            "ortho_init": False,
            "activation_fn": nn.ReLU,
            "lstm_hidden_size": 64,
            "enable_critic_lstm": True,
            "net_arch": {"pi": [64], "vf": [64]},
        },
        seed=args.seed,
        verbose=0,
    )
    stop = StopAtTarget()
    model.learn(total_timesteps=MAX_STEPS, callback=stop)
    steps = int(model.num_timesteps)
    print(json.dumps({"seed": args.seed, "env_steps": steps, "reward": stop.reward}))


if __name__ == "__main__":
    main()
