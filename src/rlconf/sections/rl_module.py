"""``AlgorithmConfig.rl_module()``: RLlib's new API stack home of the model settings;
``model_config`` (and Ray 2.10-2.30's ``model_config_dict``) is the ``model`` dict, which takes
the keys of RLlib's ``DefaultModelConfig`` besides its own."""

from __future__ import annotations

from typing_extensions import TypedDict

from rlconf.section import Section


class RLModuleArgs(TypedDict, total=False):
    """No fields of its own: ``model_config`` sets ``training()``'s ``model``."""


RL_MODULE = Section(
    method="rl_module",
    fields=RLModuleArgs,
    doc="Sets the policies' networks (RLlib's RL modules): model_config is the model dict of "
    "training(), DefaultModelConfig's keys among its keys.",
    defaults={},
    keywords=("model_config", "model_config_dict"),
)
