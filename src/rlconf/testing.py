"""RLlib's example-script helpers (``ray.rllib.utils.test_utils``, Ray 2.10 and later): an
example or tuned-example script of RLlib's runs with only its imports changed::

    from rlconf import PPOConfig
    from rlconf.testing import (
        add_rllib_example_script_args,
        run_rllib_example_script_experiment,
    )

    parser = add_rllib_example_script_args(default_reward=450.0, default_timesteps=300000)
    args = parser.parse_args()
    config = PPOConfig().environment("CartPole-v1")
    run_rllib_example_script_experiment(config, args)

``add_rllib_example_script_args`` is RLlib's parser (``rlconf.example_script_args``);
``run_rllib_example_script_experiment`` applies the flags to the config and trains it to the
stop dict, through Tune or (``--no-tune``) in this process, and checks the success metric with
``--as-test`` (``rlconf.example_script_run``).

Importing this module imports neither torch nor Ray.
"""

from __future__ import annotations

from rlconf.example_script_args import add_rllib_example_script_args
from rlconf.example_script_run import default_stop, run_rllib_example_script_experiment

__all__ = [
    "add_rllib_example_script_args",
    "default_stop",
    "run_rllib_example_script_experiment",
]
