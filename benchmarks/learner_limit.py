"""Our learner's gradient step against a plain PPO minibatch step, in the same process, on the
main job's settings (``examples/tuned/cartpole-ppo.yaml``).

PPO is built from the file as ``rlconf train -f`` builds it, one train batch is sampled, and its
advantages are standardised as ``PPOLearner.update`` does; then ``--rounds`` times, in turn
(each round starting with another side), each side takes the same ``sgd_minibatch_size`` minibatches
(shuffled epochs of the batch) for about ``--seconds``:

- ours: ``PPOLearner.gradient_step(minibatch)``, what ``PPOLearner.update`` calls per
  minibatch (``ppo_loss``, backward, clipping by ``grad_clip``, our Adam);
- plain: the step written out as a CleanRL user would: the policy and value networks as plain
  ``nn.Sequential``s (our module's initial weights copied in), ``torch.distributions.Categorical``,
  the same clipped surrogate, squared value error (clamped at ``vf_clip_param``), entropy and KL
  terms with the file's coefficients (a term with a zero coefficient left out, as ours does),
  ``loss.backward()``, ``torch.nn.utils.clip_grad_norm_`` when the file sets ``grad_clip``, and
  a ``torch.optim.Adam`` step;
- plain-lean (informational, no target): the plain step with ``validate_args=False`` on the
  distributions and ``torch.optim.Adam(fused=True)`` (the kernel our Adam calls).

Before timing, the losses are computed on the first minibatch with the same weights, to show
they are the same loss. The table shows the median time per step of each side and ours /
each. Building the algorithm sets torch's threads (one unless ``OMP_NUM_THREADS`` is set, as in
the main job); ``--threads`` sets them after that, for every side.

Target: ours <= 1.1 x the plain step. Prints the machine, a table, then one JSON object on its
last line.

    python benchmarks/learner_limit.py [--seconds 1] [--rounds 5] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
from cli_runs import ROOT
from machine import print_machine
from sampling_limit import plain_copy
from torch import nn

from rlconf.config_checks import DEFAULT_POLICY_ID
from rlconf.experiment import load_experiments
from runtime.algorithms.ppo.learner import LOSS_COLUMNS, PPOLearner
from runtime.core.models import TrunkModel
from runtime.core.postprocessing import standardized
from runtime.core.sample_batch import SampleBatch as SB

PPO_JOB = ROOT / "examples" / "tuned" / "cartpole-ppo.yaml"
TARGET = 1.1
Tensors = dict[str, torch.Tensor]


class PlainPPO:
    """A PPO minibatch step as a CleanRL user writes it; ``lean``: without the argument checks
    of ``torch.distributions`` and with ``torch.optim.Adam(fused=True)`` (informational)."""

    def __init__(self, learner: PPOLearner, lean: bool = False) -> None:
        self.validate = not lean
        model = learner.module.model
        assert isinstance(model, TrunkModel), f"not a built-in model: {type(model).__name__}"
        if model.vf_share_layers:
            raise SystemExit("learner_limit.py compares separate policy and value networks")
        activation = str(learner.module.model_config["fcnet_activation"])
        self.actor = plain_copy([model.trunk, model.logits], activation)
        self.critic = plain_copy([model.value_branch], activation)
        settings = learner.settings
        self.clip = float(settings.clip_param)
        self.vf_clip = float(settings.vf_clip_param)
        self.vf_coeff = float(settings.vf_loss_coeff)
        self.entropy_coeff = learner.entropy_coeff
        self.kl_coeff = learner.kl_coeff
        self.grad_clip = learner.grad_clip
        self.params = [*self.actor.parameters(), *self.critic.parameters()]
        self.optimizer = torch.optim.Adam(self.params, lr=learner.cur_lr, fused=lean or None)

    def loss(self, mb: Tensors) -> torch.Tensor:
        obs = mb[SB.OBS]
        logits = self.actor(obs)
        values = self.critic(obs).squeeze(-1)
        dist = torch.distributions.Categorical(logits=logits, validate_args=self.validate)
        logp = dist.log_prob(mb[SB.ACTIONS])  # type: ignore[no-untyped-call]
        ratio = torch.exp(logp - mb[SB.ACTION_LOGP])
        advantages = mb[SB.ADVANTAGES]
        clipped = ratio.clamp(1 - self.clip, 1 + self.clip)
        loss = -torch.min(advantages * ratio, advantages * clipped).mean()
        if self.entropy_coeff:
            loss = loss - self.entropy_coeff * dist.entropy().mean()  # type: ignore[no-untyped-call]
        if self.kl_coeff > 0:
            old = torch.distributions.Categorical(
                logits=mb[SB.ACTION_DIST_INPUTS], validate_args=self.validate
            )
            kl = torch.distributions.kl_divergence(old, dist)
            loss = loss + self.kl_coeff * kl.mean()
        vf_loss = (values - mb[SB.VALUE_TARGETS]).pow(2).clamp(0, self.vf_clip).mean()
        total: torch.Tensor = loss + self.vf_coeff * vf_loss
        return total

    def step(self, mb: Tensors) -> None:
        loss = self.loss(mb)
        self.optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        if self.grad_clip is not None:
            nn.utils.clip_grad_norm_(self.params, self.grad_clip)
        self.optimizer.step()


def minibatches(learner: PPOLearner, tensors: Tensors, size: int) -> Iterator[Tensors]:
    """Endless shuffled epochs of ``size``-row minibatches, as ``PPOLearner.update`` cuts
    them (made ahead: the slicing is not part of the timed step)."""
    rows = len(tensors[SB.OBS])
    epochs = []
    for _ in range(int(learner.settings.num_sgd_iter)):
        order = torch.randperm(rows)
        epoch = {k: v[order] for k, v in tensors.items()}
        epochs += [
            {k: v[start : start + size] for k, v in epoch.items()}
            for start in range(0, rows - size + 1, size)
        ]
    while True:
        yield from epochs


def timed(step: Callable[[Tensors], Any], batches: list[Tensors]) -> float:
    """Seconds per step of ``step`` over ``batches``."""
    start = time.perf_counter()
    for mb in batches:
        step(mb)
    return (time.perf_counter() - start) / len(batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="per side and measurement")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (both sides)")
    args = parser.parse_args()
    os.environ.setdefault("RLCONF_RESULTS_DIR", tempfile.mkdtemp(prefix="rlconf_learner_"))

    experiment = load_experiments(PPO_JOB)[0]
    algo = experiment.config.build()
    try:
        learner = algo.get_policy().learner
        assert isinstance(learner, PPOLearner)
        batch = algo.sample_train_batch()[DEFAULT_POLICY_ID].copy()
        batch[SB.ADVANTAGES] = standardized(batch[SB.ADVANTAGES])
        tensors = learner.batch_tensors(batch, LOSS_COLUMNS)
        size = min(int(learner.settings.sgd_minibatch_size), len(batch))
        torch.manual_seed(0)
        stream = minibatches(learner, tensors, size)
        plain = PlainPPO(learner)
        lean = PlainPPO(learner, lean=True)
        if args.threads is not None:
            torch.set_num_threads(args.threads)
        machine = print_machine()
        print(f"torch threads while measuring: {torch.get_num_threads()}")

        first = next(stream)
        with torch.no_grad():
            losses = {
                "ours": float(learner.compute_loss(first)[0]),
                "plain": float(plain.loss(first)),
                "plain-lean": float(lean.loss(first)),
            }
        print(
            "loss on the first minibatch: " + ", ".join(f"{k} {v:.6f}" for k, v in losses.items())
        )
        if any(abs(v - losses["ours"]) > 1e-4 * max(1.0, abs(v)) for v in losses.values()):
            raise SystemExit("the losses differ: the comparison would not be like for like")

        def ours(mb: Tensors) -> None:
            learner.gradient_step(mb)

        sides: dict[str, Callable[[Tensors], Any]] = {
            "ours": ours,
            "plain": plain.step,
            "plain-lean": lean.step,
        }
        # Warm-up (the first torch.optim.Adam step imports torch._dynamo), which also sizes
        # the measurements: about --seconds for the slowest side.
        warm = [next(stream) for _ in range(20)]
        slowest = max(timed(step, warm) for step in sides.values())
        count = max(10, round(args.seconds / slowest))
        times: dict[str, list[float]] = {name: [] for name in sides}
        names = list(sides)
        for r in range(args.rounds):
            batches = [next(stream) for _ in range(count)]
            # Each side in turn on the same minibatches, starting with another side each round.
            for name in names[r % len(names) :] + names[: r % len(names)]:
                times[name].append(timed(sides[name], batches))
    finally:
        algo.stop()

    us = {name: statistics.median(t) * 1e6 for name, t in times.items()}
    ratio = us["ours"] / us["plain"]
    model = learner.module.model_config
    hiddens = "x".join(str(h) for h in model["fcnet_hiddens"])
    print(
        f"PPO minibatch step: {size} rows, fcnet {hiddens} {model['fcnet_activation']}, "
        f"grad_clip {learner.grad_clip}; {count} steps x {args.rounds} rounds per side"
    )
    print(f"{'side':10s} {'us/step':>8s} {'ours/side':>9s}")
    for name, value in us.items():
        print(f"{name:10s} {value:8.1f} {us['ours'] / value:9.2f}")
    verdict = "pass" if ratio <= TARGET else "FAIL"
    print(f"ours / plain: {ratio:.2f} (target <= {TARGET}: {verdict}; plain-lean: informational)")
    summary = {
        "machine": machine,
        "threads": torch.get_num_threads(),
        "minibatch_rows": size,
        "fcnet_hiddens": list(model["fcnet_hiddens"]),
        "steps_per_measurement": count,
        "rounds": args.rounds,
        "us_per_step": {name: round(value, 1) for name, value in us.items()},
        "losses": losses,
        "ratio": round(ratio, 3),
        "ratio_lean": round(us["ours"] / us["plain-lean"], 3),
        "target": TARGET,
        "pass": ratio <= TARGET,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
