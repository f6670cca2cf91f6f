"""A custom algorithm in one file: REINFORCE with a learned baseline.

Three parts, as in the manual's "Writing your own algorithm"
(docs/guide/custom-algorithms.md):
1. a config class whose ``.training()`` takes the algorithm's own typed fields;
2. a learner with the loss;
3. the algorithm: an on-policy base with the learner and the postprocessing step it needs.
``register_algorithm`` then makes "REINFORCE" work like a built-in: ``config.build()``,
``rlconf --import examples/custom_algorithm.py train --run REINFORCE``, ``rlconf schema``,
Tune and checkpoints.

Run it: ``python examples/custom_algorithm.py`` trains CartPole-v1 to a mean return of 150
(exit code 1 if it does not get there within the step budget).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, ClassVar, Self

import torch
from pydantic import Field
from typing_extensions import Unpack

from rlconf import AlgorithmConfig, register_algorithm
from rlconf.field_types import NonNegFloat
from rlconf.fluent import fluent
from rlconf.model_config import MODEL_DEFAULTS
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs
from runtime import Learner, OnPolicyAlgorithm, SampleBatch
from runtime.core.postprocessing import add_advantages


# 1. The config: the common training fields plus two of our own, validated like any other.
class ReinforceTrainingArgs(TrainingArgs, total=False):
    use_critic: Annotated[bool, Field(description="Learn a state-value baseline.")]
    baseline_loss_coeff: Annotated[
        NonNegFloat, Field(description="Weight of the baseline's squared error in the loss.")
    ]


class ReinforceConfig(AlgorithmConfig):
    """Config of REINFORCE: returns minus a learned baseline weight the log-likelihoods."""

    __slots__ = ()
    algo_name = "REINFORCE"
    _sections: ClassVar[dict[str, Section]] = {
        **AlgorithmConfig._sections,
        "training": TRAINING.with_fields(
            ReinforceTrainingArgs, {"use_critic": True, "baseline_loss_coeff": 0.5}
        ),
    }
    _algo_defaults: ClassVar[dict[str, Any]] = {
        "num_workers": 0,
        "lr": 0.01,
        "train_batch_size": 1000,
        # The baseline gets a network of its own: sharing layers lets its loss swamp the policy.
        "model": {**MODEL_DEFAULTS, "vf_share_layers": False},
    }

    @fluent
    def training(self, /, **kwargs: Unpack[ReinforceTrainingArgs]) -> Self:
        return self._set("training", dict(kwargs))


# 2. The learner: the loss, read top to bottom. Columns arrive as tensors by name.
class ReinforceLearner(Learner):
    def compute_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any]]:
        out = self.module.forward_train(batch)
        dist = self.module.dist_class(out[SampleBatch.ACTION_DIST_INPUTS])
        # add_advantages filled these: the discounted returns, and returns minus the baseline.
        returns, advantages = batch[SampleBatch.VALUE_TARGETS], batch[SampleBatch.ADVANTAGES]
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        policy_loss = -(dist.logp(batch[SampleBatch.ACTIONS]) * advantages).mean()
        stats: dict[str, Any] = {"policy_loss": policy_loss}
        loss = policy_loss
        if SampleBatch.VF_PREDS in out:
            baseline_loss = (out[SampleBatch.VF_PREDS] - returns).pow(2).mean()
            loss = loss + float(self.config["baseline_loss_coeff"]) * baseline_loss
            stats["baseline_loss"] = baseline_loss
        return loss, stats


# 3. The algorithm: sample, postprocess on the workers, one learner update, sync weights.
class Reinforce(OnPolicyAlgorithm):
    config_class: ClassVar[type[AlgorithmConfig]] = ReinforceConfig
    learner_class: ClassVar[type[Learner]] = ReinforceLearner
    postprocessing = (add_advantages,)


register_algorithm("REINFORCE", ReinforceConfig, Reinforce)


def main(target: float = 150.0, budget: int = 100_000) -> int:
    """Seeds 0-2 need 33k-36k steps."""
    config = (
        ReinforceConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=10, rollout_fragment_length=100)
        .training(gamma=0.99, model={"fcnet_hiddens": [32]})
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        while True:
            result = algo.train()
            steps, score = result["timesteps_total"], result["episode_reward_mean"]
            print(f"iteration {result['training_iteration']:3d}  steps {steps:7d}  {score:6.1f}")
            if score >= target:
                print(f"reached {target} in {steps} steps")
                return 0
            if steps >= budget:
                print(f"did not reach {target} within {budget} steps", file=sys.stderr)
                return 1
    finally:
        algo.stop()


if __name__ == "__main__":
    sys.exit(main())
