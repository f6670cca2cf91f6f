"""A custom evaluation function: evaluate on harder env settings than training, and - given
the training future as a third argument - keep evaluating until the training step is done.

Run: python examples/custom_evaluation.py
"""

from __future__ import annotations

import os
from concurrent.futures import Future
from typing import Any

from rlconf import PPOConfig
from runtime import WorkerSet
from runtime.results.metrics import summarize_episodes

ITERATIONS = int(os.environ.get("RLCONF_EXAMPLE_ITERATIONS", 5))
#: Env steps per training iteration (the test suite runs the examples on fewer).
STEPS = int(os.environ.get("RLCONF_EXAMPLE_STEPS", 2000))


def evaluate_while_training(
    algorithm: Any, eval_workers: WorkerSet, train_future: Future[Any]
) -> dict[str, Any]:
    """Run evaluation rounds of one episode per worker until training has finished."""
    episodes = []
    rounds = 0
    while rounds == 0 or not train_future.done():
        for found, _steps in eval_workers.foreach_worker(
            lambda worker: worker.evaluate(episodes=1), local=False
        ):
            episodes += found
        rounds += 1
    metrics = summarize_episodes(episodes)
    metrics["rounds"] = rounds
    return metrics


config = (
    PPOConfig()
    .environment("CartPole-v1")
    .rollouts(num_workers=0, num_envs_per_worker=4)
    .training(train_batch_size=STEPS, sgd_minibatch_size=250)
    .resources(num_cpus_for_driver=0, num_cpus_per_worker=0.5)
    .evaluation(
        evaluation_interval=1,
        evaluation_num_workers=2,
        evaluation_parallel_to_training=True,
        custom_eval_function=evaluate_while_training,
        evaluation_config=PPOConfig.overrides(explore=False),
    )
)
algo = config.build()
for _ in range(ITERATIONS):
    evaluation = algo.train()["evaluation"]
    print(
        f"evaluated {evaluation['episodes_this_iter']} episodes in {evaluation['rounds']} "
        f"rounds: mean return {evaluation['episode_reward_mean']:.1f}"
    )
algo.stop()
