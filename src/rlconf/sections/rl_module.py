"""``AlgorithmConfig.rl_module()``: RLlib's new API stack home of the model settings;
``model_config`` (and Ray 2.10-2.30's ``model_config_dict``) is the ``model`` dict, which takes
the keys of RLlib's ``DefaultModelConfig`` besides its own (or a ``DefaultModelConfig``), and
``rl_module_spec`` gives the policies modules of your own (``rlconf.rl_module_spec``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.rl_module_spec import RLModuleSpecValue
from rlconf.section import Section


class RLModuleArgs(TypedDict, total=False):
    """``rl_module_spec``; ``model_config`` sets ``training()``'s ``model``."""

    rl_module_spec: Annotated[
        RLModuleSpecValue,
        Field(
            description="Your own module (RLModuleSpec(module_class=a runtime.TorchRLModule "
            "subclass or its import path, model_config=...)), or a MultiRLModuleSpec with one "
            "spec per policy id; None: the algorithm's own networks from the model dict. A "
            "spec without module_class gives the algorithm's networks its model_config as the "
            "model dict."
        ),
    ]


RL_MODULE = Section(
    method="rl_module",
    fields=RLModuleArgs,
    doc="Sets the policies' networks (RLlib's RL modules): model_config is the model dict of "
    "training(), DefaultModelConfig's keys among its keys; rl_module_spec gives them modules "
    "of your own.",
    defaults={"rl_module_spec": None},
    keywords=("model_config", "model_config_dict"),
)
