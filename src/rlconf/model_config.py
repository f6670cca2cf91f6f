"""The ``model`` dict: how the model catalog builds a policy's network."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.field_types import ClassValue, JsonDict, ListOf, NonNegInt
from rlconf.inert_keys import INERT_MODEL_KEYS as _INERT

Activation = Literal["tanh", "relu", "swish", "silu", "elu", "linear"]


class ModelConfigDict(TypedDict, total=False):
    """Keys of ``config["model"]``; a partial dict updates the current one."""

    fcnet_hiddens: Annotated[
        ListOf[Annotated[int, Field(ge=1)]], Field(description="Hidden layer sizes of the MLP.")
    ]
    fcnet_activation: Annotated[Activation, Field(description="Activation of the MLP layers.")]
    conv_filters: Annotated[
        ListOf[ListOf[int | ListOf[int]]] | None,
        Field(description="[[out_channels, kernel, stride], ...] for image observations."),
    ]
    conv_activation: Annotated[Activation, Field(description="Activation of the conv layers.")]
    post_fcnet_hiddens: Annotated[
        ListOf[Annotated[int, Field(ge=1)]],
        Field(description="Layer sizes after the conv stack (or the MLP)."),
    ]
    post_fcnet_activation: Annotated[
        Activation,
        Field(
            description="Activation of the post_fcnet layers after a conv stack (the MLP of "
            "flat observations uses fcnet_activation for all its layers, as the reference does)."
        ),
    ]
    free_log_std: Annotated[
        bool, Field(description="Learn the Gaussian log-std as free parameters, not outputs.")
    ]
    no_final_linear: Annotated[
        bool, Field(description="Use the last hidden layer as the output layer.")
    ]
    vf_share_layers: Annotated[
        bool, Field(description="Share hidden layers between the policy and value function.")
    ]
    custom_model: Annotated[
        str | ClassValue | None,
        Field(description="Name of a registered custom model, or a torch module class."),
    ]
    custom_model_config: Annotated[
        JsonDict, Field(description="Keyword arguments for the custom model.")
    ]
    custom_action_dist: Annotated[
        str | ClassValue | None,
        Field(description="Name of a registered action distribution, or its class."),
    ]
    max_seq_len: Annotated[
        NonNegInt,
        Field(
            description="Longest sequence fed to a recurrent model; recurrent models are not "
            "supported, so any value but the default 20 is refused at build."
        ),
    ]
    # The reference's off switches: accepted at their "off" value only, with no effect.
    use_lstm: Annotated[bool, _INERT["use_lstm"]]
    lstm_use_prev_action: Annotated[bool, _INERT["lstm_use_prev_action"]]
    lstm_use_prev_reward: Annotated[bool, _INERT["lstm_use_prev_reward"]]
    _time_major: Annotated[bool, _INERT["_time_major"]]
    use_attention: Annotated[bool, _INERT["use_attention"]]
    _disable_preprocessor_api: Annotated[bool, _INERT["_disable_preprocessor_api"]]
    _disable_action_flattening: Annotated[bool, _INERT["_disable_action_flattening"]]
    _use_default_native_models: Annotated[bool, _INERT["_use_default_native_models"]]
    custom_preprocessor: Annotated[None, _INERT["custom_preprocessor"]]


MODEL_DEFAULTS: ModelConfigDict = {
    "fcnet_hiddens": [256, 256],
    "fcnet_activation": "tanh",
    "conv_filters": None,
    "conv_activation": "relu",
    "post_fcnet_hiddens": [],
    "post_fcnet_activation": "relu",
    "free_log_std": False,
    "no_final_linear": False,
    "vf_share_layers": True,
    "custom_model": None,
    "custom_model_config": {},
    "custom_action_dist": None,
    "max_seq_len": 20,
}
