"""mypy checks user code against the fluent methods' real parameters."""

from __future__ import annotations

import pytest
from mypy import api

GOOD = """
from typing import Self

from typing_extensions import Unpack

from rlconf import A2CConfig, AlgorithmConfig, DQNConfig, PPOConfig
from rlconf.fluent import fluent
from rlconf.sections.training import TrainingArgs

config = (
    PPOConfig()
    .environment("CartPole-v1", env_config={"size": 3})
    .rollouts(num_workers=2, num_envs_per_worker=8)
    .training(lr=3e-4, gamma=0.99, clip_param=0.2, lambda_=0.95,
              model={"fcnet_hiddens": [64, 64]})
    .resources(num_gpus=0.5, num_gpus_per_worker=0.25)
    .evaluation(evaluation_interval=1, evaluation_duration="auto",
                evaluation_config=PPOConfig.overrides(explore=False))
    .framework("torch")
)
same: PPOConfig = config.copy()
a2c: A2CConfig = A2CConfig().training(microbatch_size=10, lr=1e-3)


class MyPPO(PPOConfig):
    pass


mine: MyPPO = MyPPO().rollouts(num_workers=1).training(clip_param=0.1, lr_schedule=[(0, 1e-3)])
dqn: DQNConfig = (
    DQNConfig()
    .exploration(exploration_config={"type": "EpsilonGreedy", "final_epsilon": 0.05})
    .training(double_q=True, replay_buffer_config={"capacity": 1000}, n_step=3)
    .multi_agent(policy_mapping_fn="my_module:policy_for")
    .callbacks("my_module:MyCallbacks")
)
new_stack: PPOConfig = (
    PPOConfig()
    .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
    .env_runners(num_env_runners=2, num_envs_per_env_runner=4, explore=True)
    .learners(num_learners=0, num_gpus_per_learner=0)
    .training(num_epochs=6, minibatch_size=128, train_batch_size_per_learner=2000)
    .rl_module(model_config={"fcnet_hiddens": [32], "head_fcnet_hiddens": []})
    .fault_tolerance(restart_failed_env_runners=True)
    .evaluation(evaluation_num_env_runners=1, evaluation_config=PPOConfig.overrides(explore=False))
    .checkpointing(export_native_model_files=False)
)


# A method written by hand over a TypedDict extending the section's takes its other names too
# (train_batch_size_per_learner), so it still overrides the generated one.
class MyArgs(TrainingArgs, total=False):
    bonus: float


class MyConfig(AlgorithmConfig):
    @fluent
    def training(self, /, **kwargs: Unpack[MyArgs]) -> Self:
        return self._set("training", dict(kwargs))


mine_too: MyConfig = MyConfig().training(bonus=0.5, train_batch_size_per_learner=100)
"""

BAD = """
from rlconf import PPOConfig

PPOConfig().training(lrr=1e-3)
PPOConfig().training(lr="abc")
PPOConfig().rollouts(num_workers=1.5)
PPOConfig().training(model={"fcnet_hidens": [64]})
PPOConfig().framework("tf")
PPOConfig().env_runners(num_env_runners=1.5)
PPOConfig().training(num_epochs="6")
"""


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """One mypy process over both files (it is slow to start); output split per file."""
    folder = tmp_path_factory.mktemp("user_code")
    (folder / "good.py").write_text(GOOD)
    (folder / "bad.py").write_text(BAD)
    report, errors, _ = api.run(
        [
            "--strict",
            "--cache-dir",
            str(folder / ".cache"),
            "--config-file",
            "",
            str(folder / "good.py"),
            str(folder / "bad.py"),
        ]
    )
    assert not errors, errors
    lines = report.splitlines()
    good = "\n".join(x for x in lines if "good.py:" in x)
    bad = "\n".join(x for x in lines if "bad.py:" in x)
    return good, bad


def test_correct_user_code_is_clean(mypy_run: tuple[str, str]) -> None:
    good, _ = mypy_run
    assert good == "", good


def test_misspelt_keyword_and_wrong_types_are_reported(mypy_run: tuple[str, str]) -> None:
    _, bad = mypy_run
    lines = bad.splitlines()

    def at(line: int) -> str:
        return "\n".join(x for x in lines if f"bad.py:{line}:" in x)

    assert 'Unexpected keyword argument "lrr"' in at(4), bad
    assert '"lr"' in at(5) and '"str"' in at(5), bad
    assert '"num_workers"' in at(6) and '"float"' in at(6), bad
    # The model dict or a DefaultModelConfig: mypy checks a dict literal against the union
    # as a whole, so it names the argument and what it takes rather than the misspelt key.
    assert '"model"' in at(7) and '"ModelConfigDict | DefaultModelConfig"' in at(7), bad
    assert '"tf"' in at(8) or "framework" in at(8), bad
    # RLlib's new API stack names are typed as the fields they set.
    assert '"num_env_runners"' in at(9) and '"float"' in at(9), bad
    assert '"num_epochs"' in at(10) and '"str"' in at(10), bad
