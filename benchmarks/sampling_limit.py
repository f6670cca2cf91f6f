"""Our sampling against the loop a CleanRL user writes, in the same process: env steps per
second on CartPole-v1 with N = 1, 8 and 64 sub-envs, for PPO's default model (``fcnet_hiddens``
[256, 256], tanh) and the tuned model of ``examples/tuned/cartpole-ppo.yaml`` (read from the
file).

- loop: ``gymnasium.vector.SyncVectorEnv`` of N envs (autoreset), the policy as a plain
  ``nn.Sequential`` with the same layers and activation (our module's initial weights copied in),
  one forward under ``torch.no_grad()`` per step on ``torch.as_tensor(obs)``,
  ``torch.distributions.Categorical`` sampling and log-probabilities, and CleanRL's rollout
  buffers (obs, actions, log-probs, rewards, dones: ``--fragment`` steps per env, CleanRL's
  ``num_steps``).
- ours: ``algo.workers.local_worker().sample()`` of a ``PPOConfig`` with ``num_workers=0``,
  ``num_envs_per_worker=N``, ``rollout_fragment_length=--fragment`` and the same model. Its
  fragments also carry the value predictions (a separate value network, evaluated once per
  fragment) and GAE advantages, which the loop leaves out: the comparison favours the loop.

Both sides step the same number of env steps per measurement (about ``--seconds`` at the slower
side's warm-up rate), alternating (the order flips every round) for ``--rounds`` rounds; the
table shows the medians and ours / loop. Each case (model, N) is built, measured and stopped
before the next, as a process runs one sampler. Building an algorithm sets torch's threads
(one unless ``OMP_NUM_THREADS`` is set, as in the main job; NumPy's BLAS, which our acting uses,
gets the same count); ``--threads`` sets them after that, for both sides.

Target: ours >= 0.9 x the loop at every N, with both models. Prints the machine, a table, then
one JSON object on its last line.

    python benchmarks/sampling_limit.py [--seconds 1] [--rounds 3] [--threads N]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from cli_runs import ROOT
from machine import print_machine
from torch import nn

from rlconf import PPOConfig
from rlconf.experiment import load_experiments
from rlconf.model_config import ModelConfigDict
from runtime.algorithm import Algorithm
from runtime.cluster.cpu_threads import set_blas_threads
from runtime.core.models import TrunkModel

ENV = "CartPole-v1"
TUNED_JOB = ROOT / "examples" / "tuned" / "cartpole-ppo.yaml"
NUM_ENVS = (1, 8, 64)
TARGET = 0.9
ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU}


def models() -> dict[str, ModelConfigDict]:
    """The model of each case: PPO's default and the tuned file's (all their keys)."""
    default: ModelConfigDict = PPOConfig().to_dict()["model"]
    tuned: ModelConfigDict = load_experiments(TUNED_JOB)[0].config.to_dict()["model"]
    return {"default": default, "tuned": tuned}


def plain_copy(layers: list[nn.Module], activation: str) -> nn.Sequential:
    """An ``nn.Sequential`` of the ``nn.Linear`` layers found in ``layers``, in order (copies,
    weights included), with ``activation`` between them: our network as a CleanRL user writes
    it."""
    linears = [m for layer in layers for m in layer.modules() if isinstance(m, nn.Linear)]
    out: list[nn.Module] = []
    for i, ours in enumerate(linears):
        layer = nn.Linear(ours.in_features, ours.out_features)
        layer.load_state_dict(ours.state_dict())
        out.append(layer)
        if i < len(linears) - 1:
            out.append(ACTIVATIONS[activation]())
    return nn.Sequential(*out)


class CleanRLLoop:
    """CleanRL's rollout loop (ppo.py) without the value head: one actor forward per step."""

    def __init__(self, actor: nn.Sequential, num_envs: int, fragment: int, seed: int) -> None:
        self.actor = actor
        self.fragment = fragment
        self.envs = gym.vector.SyncVectorEnv([lambda: gym.make(ENV) for _ in range(num_envs)])
        self.next_obs, _ = self.envs.reset(seed=seed)
        obs_shape = self.envs.single_observation_space.shape or ()
        self.obs = torch.zeros((fragment, num_envs, *obs_shape))
        self.actions = torch.zeros((fragment, num_envs), dtype=torch.int64)
        self.logprobs = torch.zeros((fragment, num_envs))
        self.rewards = torch.zeros((fragment, num_envs))
        self.dones = torch.zeros((fragment, num_envs))

    def rollout(self) -> int:
        """One rollout of ``fragment`` steps per env; returns the env steps taken."""
        for step in range(self.fragment):
            obs = torch.as_tensor(self.next_obs)
            self.obs[step] = obs
            with torch.no_grad():
                logits = self.actor(obs)
                dist = torch.distributions.Categorical(logits=logits)
                action = dist.sample()  # type: ignore[no-untyped-call]
                self.logprobs[step] = dist.log_prob(action)  # type: ignore[no-untyped-call]
            self.actions[step] = action
            self.next_obs, reward, terminated, truncated, _ = self.envs.step(action.numpy())
            self.rewards[step] = torch.as_tensor(reward)
            self.dones[step] = torch.as_tensor(np.logical_or(terminated, truncated))
        return self.fragment * self.envs.num_envs


@dataclass
class Case:
    model: str
    num_envs: int
    algo: Algorithm
    loop: CleanRLLoop
    steps: int = 0
    loop_rates: list[float] | None = None
    our_rates: list[float] | None = None

    def ours(self) -> int:
        return len(self.algo.workers.local_worker().sample())


def build(model_name: str, model: ModelConfigDict, num_envs: int, fragment: int) -> Case:
    config = (
        PPOConfig()
        .environment(ENV)
        .rollouts(num_workers=0, num_envs_per_worker=num_envs, rollout_fragment_length=fragment)
        .training(
            train_batch_size=fragment * num_envs,
            sgd_minibatch_size=min(128, fragment * num_envs),
            model=model,
        )
        .debugging(seed=0)
    )
    algo = config.build()
    net = algo.get_policy().module.model
    assert isinstance(net, TrunkModel), f"not a built-in model: {type(net).__name__}"
    actor = plain_copy([net.trunk, net.logits], str(model["fcnet_activation"]))
    return Case(model_name, num_envs, algo, CleanRLLoop(actor, num_envs, fragment, seed=0))


def timed(run: Callable[[], int], steps: int) -> float:
    """Env steps per second of ``run()`` (a rollout; returns its steps) over ``steps`` steps."""
    done, start = 0, time.perf_counter()
    while done < steps:
        done += run()
    return done / (time.perf_counter() - start)


def measure(case: Case, seconds: float, rounds: int) -> None:
    """Warm both sides up (kernels, env resets, first episodes), which also sizes the
    measurements, then ``rounds`` rounds of both, alternating which goes first."""
    start = time.perf_counter()
    loop_steps = case.loop.rollout()
    loop_rate = loop_steps / (time.perf_counter() - start)
    start = time.perf_counter()
    our_steps = case.ours()
    our_rate = our_steps / (time.perf_counter() - start)
    unit = max(loop_steps, our_steps)
    case.steps = unit * max(1, round(seconds * min(loop_rate, our_rate) / unit))
    case.loop_rates, case.our_rates = [], []
    for r in range(rounds):
        if r % 2 == 0:
            case.loop_rates.append(timed(case.loop.rollout, case.steps))
            case.our_rates.append(timed(case.ours, case.steps))
        else:
            case.our_rates.append(timed(case.ours, case.steps))
            case.loop_rates.append(timed(case.loop.rollout, case.steps))


def report(case: Case) -> dict[str, Any]:
    """The case's row: the medians and ours / loop (printed, and returned for the JSON)."""
    assert case.loop_rates is not None and case.our_rates is not None
    loop = statistics.median(case.loop_rates)
    ours = statistics.median(case.our_rates)
    ratio = ours / loop
    model = case.algo.get_policy().module.model_config
    hiddens = "x".join(str(h) for h in model["fcnet_hiddens"])
    print(
        f"{case.model:8s} {hiddens:>10s} {case.num_envs:3d} {case.steps:7d} {loop:8.0f} "
        f"{ours:8.0f} {ratio:9.2f}  {'pass' if ratio >= TARGET else 'FAIL'}"
    )
    return {
        "model": case.model,
        "fcnet_hiddens": list(model["fcnet_hiddens"]),
        "fcnet_activation": model["fcnet_activation"],
        "num_envs": case.num_envs,
        "steps_per_measurement": case.steps,
        "loop_steps_per_s": round(loop),
        "ours_steps_per_s": round(ours),
        "ratio": round(ratio, 3),
        "pass": ratio >= TARGET,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="per side and measurement")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fragment", type=int, default=128, help="steps per env per rollout")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (both sides)")
    args = parser.parse_args()
    os.environ.setdefault("RLCONF_RESULTS_DIR", tempfile.mkdtemp(prefix="rlconf_sampling_"))

    rows: list[dict[str, Any]] = []
    machine: dict[str, object] | None = None
    for name, model in models().items():
        for num_envs in NUM_ENVS:
            # One case at a time, stopped before the next is built: a process runs one sampler,
            # and the other cases' objects would slow the collector's passes for both sides.
            case = build(name, model, num_envs, args.fragment)
            if args.threads is not None:
                torch.set_num_threads(args.threads)
                # Our acting's NumPy BLAS too (building an algorithm gave it torch's count).
                set_blas_threads(args.threads)
            if machine is None:
                machine = print_machine()
                print(f"torch threads while measuring: {torch.get_num_threads()}")
                print(
                    f"{'model':8s} {'hiddens':>10s} {'N':>3s} {'steps':>7s} {'loop/s':>8s} "
                    f"{'ours/s':>8s} {'ours/loop':>9s}  target {TARGET}"
                )
            measure(case, args.seconds, args.rounds)
            rows.append(report(case))
            case.algo.stop()
            case.loop.envs.close()
            del case
            gc.collect()
    summary = {
        "machine": machine,
        "threads": torch.get_num_threads(),
        "seconds": args.seconds,
        "rounds": args.rounds,
        "fragment": args.fragment,
        "target": TARGET,
        "min_ratio": min(float(row["ratio"]) for row in rows),
        "all_pass": all(row["pass"] for row in rows),
        "rows": rows,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
