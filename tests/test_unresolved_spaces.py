"""A config holding a search space never reaches the runtime unresolved: every way of building
an algorithm from it is refused with a ConfigError naming the key and pointing to sweeps; and
the sweep's own arguments are checked before Ray starts."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from ray import tune

from rlconf import ConfigError, PGConfig, PPOConfig, sweep
from runtime import PPO
from tests import child_process


def _with_spaces() -> list[tuple[str, PPOConfig]]:
    base = PPOConfig().environment("CartPole-v1")
    return [
        ("lr", base.copy().training(lr=sweep.grid_search([1e-3, 1e-4]))),
        ("gamma", base.copy().training(gamma=tune.uniform(0.9, 0.99))),
        ("lr", base.copy().training(lr=sweep.loguniform(1e-4, 1e-2))),  # type: ignore[arg-type]
        (
            "evaluation_config.gamma",
            base.copy().evaluation(
                evaluation_interval=1,
                evaluation_config=PPOConfig.overrides(gamma=sweep.choice([0.9, 0.99])),
            ),
        ),
        ("env_config.size", base.copy().environment(env_config={"size": tune.choice([1, 2])})),
    ]


BUILDERS: dict[str, Callable[[PPOConfig], Any]] = {
    "config.build()": lambda c: c.build(),
    "PPO(config=config)": lambda c: PPO(config=c),
    "PPO(config=config.to_dict())": lambda c: PPO(config=c.to_dict()),
    "Algorithm.from_dict path": lambda c: PPO(config=dict(c.to_dict(), num_workers=0)),
}


@pytest.mark.parametrize("build", list(BUILDERS.values()), ids=list(BUILDERS))
@pytest.mark.parametrize("case", range(5))
def test_building_from_a_config_with_a_search_space_is_refused(
    build: Callable[[PPOConfig], Any], case: int
) -> None:
    key, config = _with_spaces()[case]
    with pytest.raises(ConfigError) as error:
        build(config)
    message = str(error.value)
    assert f"{key}=" in message and "search space" in message
    assert "rlconf.sweep.run" in message and "Tune" in message


def test_the_error_comes_before_any_worker_or_ray_is_started() -> None:
    code = (
        "import sys\n"
        "from rlconf import PPOConfig, ConfigError, sweep\n"
        "c = PPOConfig().environment('CartPole-v1').rollouts(num_workers=2)"
        ".training(lr=sweep.grid_search([0.1, 0.01]))\n"
        "try:\n"
        "    c.build()\n"
        "except ConfigError as e:\n"
        "    print('refused', 'ray' in sys.modules)\n"
    )
    out = child_process.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "refused False"


def test_sweep_arguments_are_checked_before_ray_starts() -> None:
    config = PPOConfig().environment("CartPole-v1")
    with pytest.raises(ConfigError) as error:
        sweep.run(
            config,
            metric="episode_reward_maen",
            mode="maximum",  # type: ignore[arg-type]
            num_samples=0,
            max_concurrent=0,
            stop={"timesteps_totl": 10},
            checkpoint_freq=-1,
            name="a/b",
        )
    fields = {issue.field for issue in error.value.issues}
    assert fields == {
        "metric",
        "mode",
        "num_samples",
        "max_concurrent",
        "stop.timesteps_totl",
        "checkpoint_freq",
        "name",
    }
    assert "episode_reward_mean" in str(error.value)  # the did-you-mean


def test_a_list_of_configs_must_be_plain_configs_of_one_algorithm() -> None:
    ppo = PPOConfig().environment("CartPole-v1")
    with pytest.raises(ConfigError, match=r"configs\[1\].*one class"):
        sweep.run([ppo, PGConfig().environment("CartPole-v1")])
    with pytest.raises(ConfigError, match=r"configs\[1\].lr.*search space"):
        sweep.run([ppo, ppo.copy().training(lr=sweep.grid_search([0.1, 0.2]))])
    with pytest.raises(ConfigError, match="empty"):
        sweep.run([])
    with pytest.raises(ConfigError, match="not a config"):
        sweep.run([ppo, {"lr": 0.1}])  # type: ignore[type-var]
    with pytest.raises(ConfigError, match=r"configs\[0\].env.*not set"):
        sweep.run([PPOConfig(), ppo])
