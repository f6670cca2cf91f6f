"""``OnPolicyAlgorithm``: the base of algorithms that learn from fresh samples only (PPO, PG,
A2C). Each training step samples ``train_batch_size`` env steps with the current weights (the
workers postprocess their fragments with the algorithm's steps), updates the learners on them
once, and sends the new weights out."""

from __future__ import annotations

from typing import Any, ClassVar

from runtime.algorithm import Algorithm


class OnPolicyAlgorithm(Algorithm):
    #: Their learners train models with memory on sequences (``runtime.core.sequences``).
    trains_on_sequences: ClassVar[bool] = True

    def training_step(self) -> dict[str, Any]:
        train_batch = self.sample_train_batch()
        learner_info = self.learn_on_batch(train_batch)
        self.sync_weights()
        return {"info": {"learner": learner_info}}
