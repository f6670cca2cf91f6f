"""The ``model`` dict: how the model catalog builds a policy's network."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from typing_extensions import TypedDict

from rlconf.conv_filter_spec import ConvFilter
from rlconf.field_types import ClassValue, JsonDict, ListOf, PosInt
from rlconf.inert_keys import INERT_MODEL_KEYS as _INERT
from rlconf.layer_init_keys import INIT_KEY_FIELDS as _INIT
from rlconf.layer_init_keys import Initializer, InitializerKwargs

Activation = Literal["tanh", "relu", "swish", "silu", "elu", "linear"]


class ModelConfigDict(TypedDict, total=False):
    """Keys of ``config["model"]``; a partial dict updates the current one."""

    fcnet_hiddens: Annotated[
        ListOf[Annotated[int, Field(ge=1)]], Field(description="Hidden layer sizes of the MLP.")
    ]
    fcnet_activation: Annotated[Activation, Field(description="Activation of the MLP layers.")]
    fcnet_use_layernorm: Annotated[
        bool,
        Field(
            description="A LayerNorm after each hidden layer of the MLP over flat observations "
            "(fcnet_hiddens, then post_fcnet_hiddens), before its activation; it keeps "
            "Q-networks trained many times per env step steady."
        ),
    ]
    conv_filters: Annotated[
        ListOf[ConvFilter] | None,
        Field(
            description="[[out_channels, kernel, stride], ...] of the conv stack over HxWxC "
            "image observations ('same' padding, the last layer 'valid'; its output is "
            "flattened into the heads); a filter [out_channels, kernel, stride, padding] pads "
            "as it says ('same' or 'valid', RLlib's new API stack's form: all 'valid' is the "
            "Nature CNN of SB3 and CleanRL). None: the reference's default stack for 84x84, 42x42, "
            "96x96, 10x10, 240x320 and 480x640 images; another image size without conv_filters "
            "is refused at build."
        ),
    ]
    conv_activation: Annotated[Activation, Field(description="Activation of the conv layers.")]
    post_fcnet_hiddens: Annotated[
        ListOf[Annotated[int, Field(ge=1)]],
        Field(
            description="Layer sizes after the conv stack (or the MLP); with use_lstm, between "
            "the LSTM and each output (the policy's and the value's own layers)."
        ),
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
    # The reference's DeepMind-style image preprocessing.
    dim: Annotated[
        PosInt,
        Field(
            description="Side of the square frames Atari observations are resized to: by the "
            "DeepMind wrappers (preprocessor_pref='deepmind', an Atari env), or by the pixel "
            "preprocessor of 210x160x3 frames (the others). Any other value than 84 is refused "
            "at build for an env whose observations neither resizes."
        ),
    ]
    grayscale: Annotated[
        bool,
        Field(
            description="Average the colour channels of 210x160x3 frames into one (the pixel "
            "preprocessor; the DeepMind wrappers always grayscale). True is refused at build "
            "where the pixel preprocessor does not run."
        ),
    ]
    zero_mean: Annotated[
        bool,
        Field(
            description="The pixel preprocessor of 210x160x3 frames scales them to [-1, 1) "
            "(True) or [0, 1] (False); the DeepMind wrappers never rescale. False is refused at "
            "build where the pixel preprocessor does not run."
        ),
    ]
    framestack: Annotated[
        bool,
        Field(
            description="Stack the last 4 frames of an Atari env under the DeepMind wrappers "
            "(observations dim x dim x 4); False: one frame (dim x dim x 1). False is refused "
            "at build for an env the DeepMind wrappers do not wrap."
        ),
    ]
    # Memory: an LSTM or a GTrXL attention net over the features of the network above.
    use_lstm: Annotated[
        bool,
        Field(
            description="Feed the network's features (with the previous action and reward, "
            "see lstm_use_prev_*) through an LSTM; the policy and value outputs read its output. "
            "On-policy algorithms (PPO, A2C, PG) train on zero-padded sequences of max_seq_len."
        ),
    ]
    max_seq_len: Annotated[
        PosInt,
        Field(
            description="The longest sequence a model with memory trains on: an episode's "
            "rows are cut into sequences of at most this many steps, each started from the "
            "state it was acted from."
        ),
    ]
    lstm_cell_size: Annotated[PosInt, Field(description="The LSTM's hidden (and cell) size.")]
    lstm_use_prev_action: Annotated[
        bool, Field(description="Feed the LSTM the previous action (one-hot when discrete).")
    ]
    lstm_use_prev_reward: Annotated[bool, Field(description="Feed the LSTM the previous reward.")]
    lstm_use_prev_action_reward: Annotated[int | bool, _INERT["lstm_use_prev_action_reward"]]
    _time_major: Annotated[bool, _INERT["_time_major"]]
    use_attention: Annotated[
        bool,
        Field(
            description="Feed the network's features through a GTrXL transformer memory (the "
            "attention_* keys); trains on sequences of max_seq_len like use_lstm."
        ),
    ]
    attention_num_transformer_units: Annotated[
        PosInt, Field(description="Transformer units (layers) of the attention memory.")
    ]
    attention_dim: Annotated[PosInt, Field(description="Width of the attention layers.")]
    attention_num_heads: Annotated[PosInt, Field(description="Attention heads per unit.")]
    attention_head_dim: Annotated[PosInt, Field(description="Width of each attention head.")]
    attention_memory_inference: Annotated[
        PosInt, Field(description="Past steps each unit attends to while acting.")
    ]
    attention_memory_training: Annotated[
        PosInt, Field(description="Past steps each unit attends to while training.")
    ]
    attention_position_wise_mlp_dim: Annotated[
        PosInt, Field(description="Hidden size of each unit's position-wise MLP.")
    ]
    attention_init_gru_gate_bias: Annotated[
        float, Field(description="Initial bias of the GRU gates (high: start near identity).")
    ]
    attention_use_n_prev_actions: Annotated[
        Annotated[int, Field(ge=0)],
        Field(description="Feed the attention net the last n actions (0: none)."),
    ]
    attention_use_n_prev_rewards: Annotated[
        Annotated[int, Field(ge=0)],
        Field(description="Feed the attention net the last n rewards (0: none)."),
    ]
    # The reference's off switches: accepted at their "off" value only, with no effect.
    _disable_preprocessor_api: Annotated[bool, _INERT["_disable_preprocessor_api"]]
    _disable_action_flattening: Annotated[bool, _INERT["_disable_action_flattening"]]
    _use_default_native_models: Annotated[int | bool, _INERT["_use_default_native_models"]]
    custom_preprocessor: Annotated[None, _INERT["custom_preprocessor"]]
    # RLlib 2.x keys (RLModules, Gaussian heads, the initializers of layers rlconf's networks
    # don't have), accepted at their defaults so that its params.json files load.
    encoder_latent_dim: Annotated[int | None, _INERT["encoder_latent_dim"]]
    always_check_shapes: Annotated[bool, _INERT["always_check_shapes"]]
    log_std_clip_param: Annotated[float, _INERT["log_std_clip_param"]]
    conv_transpose_kernel_initializer: Annotated[Any, _INERT["conv_transpose_kernel_initializer"]]
    conv_transpose_kernel_initializer_config: Annotated[
        Any, _INERT["conv_transpose_kernel_initializer_config"]
    ]
    conv_transpose_bias_initializer: Annotated[Any, _INERT["conv_transpose_bias_initializer"]]
    conv_transpose_bias_initializer_config: Annotated[
        Any, _INERT["conv_transpose_bias_initializer_config"]
    ]
    post_fcnet_weights_initializer: Annotated[Any, _INERT["post_fcnet_weights_initializer"]]
    post_fcnet_weights_initializer_config: Annotated[
        Any, _INERT["post_fcnet_weights_initializer_config"]
    ]
    post_fcnet_bias_initializer: Annotated[Any, _INERT["post_fcnet_bias_initializer"]]
    post_fcnet_bias_initializer_config: Annotated[Any, _INERT["post_fcnet_bias_initializer_config"]]
    # Weight initializers (RLlib's new API stack names, then its 2.x names of the same
    # settings): rlconf.layer_init_keys; the runtime applies them (runtime.core.layer_init).
    fcnet_kernel_initializer: Annotated[Initializer, _INIT["fcnet_kernel_initializer"]]
    fcnet_kernel_initializer_kwargs: Annotated[
        InitializerKwargs, _INIT["fcnet_kernel_initializer_kwargs"]
    ]
    fcnet_bias_initializer: Annotated[Initializer, _INIT["fcnet_bias_initializer"]]
    fcnet_bias_initializer_kwargs: Annotated[
        InitializerKwargs, _INIT["fcnet_bias_initializer_kwargs"]
    ]
    conv_kernel_initializer: Annotated[Initializer, _INIT["conv_kernel_initializer"]]
    conv_kernel_initializer_kwargs: Annotated[
        InitializerKwargs, _INIT["conv_kernel_initializer_kwargs"]
    ]
    conv_bias_initializer: Annotated[Initializer, _INIT["conv_bias_initializer"]]
    conv_bias_initializer_kwargs: Annotated[
        InitializerKwargs, _INIT["conv_bias_initializer_kwargs"]
    ]
    head_fcnet_kernel_initializer: Annotated[Initializer, _INIT["head_fcnet_kernel_initializer"]]
    head_fcnet_kernel_initializer_kwargs: Annotated[
        InitializerKwargs, _INIT["head_fcnet_kernel_initializer_kwargs"]
    ]
    head_fcnet_bias_initializer: Annotated[Initializer, _INIT["head_fcnet_bias_initializer"]]
    head_fcnet_bias_initializer_kwargs: Annotated[
        InitializerKwargs, _INIT["head_fcnet_bias_initializer_kwargs"]
    ]
    lstm_kernel_initializer: Annotated[Initializer, _INIT["lstm_kernel_initializer"]]
    lstm_kernel_initializer_kwargs: Annotated[
        InitializerKwargs, _INIT["lstm_kernel_initializer_kwargs"]
    ]
    lstm_bias_initializer: Annotated[Initializer, _INIT["lstm_bias_initializer"]]
    lstm_bias_initializer_kwargs: Annotated[
        InitializerKwargs, _INIT["lstm_bias_initializer_kwargs"]
    ]
    fcnet_weights_initializer: Annotated[Initializer, _INIT["fcnet_weights_initializer"]]
    fcnet_weights_initializer_config: Annotated[
        InitializerKwargs, _INIT["fcnet_weights_initializer_config"]
    ]
    fcnet_bias_initializer_config: Annotated[
        InitializerKwargs, _INIT["fcnet_bias_initializer_config"]
    ]
    conv_kernel_initializer_config: Annotated[
        InitializerKwargs, _INIT["conv_kernel_initializer_config"]
    ]
    conv_bias_initializer_config: Annotated[
        InitializerKwargs, _INIT["conv_bias_initializer_config"]
    ]
    lstm_weights_initializer: Annotated[Initializer, _INIT["lstm_weights_initializer"]]
    lstm_weights_initializer_config: Annotated[
        InitializerKwargs, _INIT["lstm_weights_initializer_config"]
    ]
    lstm_bias_initializer_config: Annotated[
        InitializerKwargs, _INIT["lstm_bias_initializer_config"]
    ]
    # RLlib's new API stack: the output heads' layers (its DefaultModelConfig's other keys are
    # the ones above, under the same names).
    head_fcnet_hiddens: Annotated[
        ListOf[Annotated[int, Field(ge=1)]],
        Field(
            description="Hidden layer sizes of each output head, between the network's last "
            "layer and each output: the policy's and the value's (PPO, APPO, IMPALA, A2C, PG, "
            "MARWIL), SAC's policy's and each Q-network's, DQN's Q head (DQN's hiddens: one "
            "setting, two names; DDPG and TD3 refuse them: actor_hiddens, critic_hiddens). "
            "[]: each output is one linear layer; not set: DQN's hiddens."
        ),
    ]
    head_fcnet_activation: Annotated[
        Activation | None,
        Field(description="Activation of the head_fcnet_hiddens layers (None: 'linear')."),
    ]


#: The keys of the reference's Atari preprocessing, at their defaults: they act on the env's
#: observations (``runtime.env.env_preparation``), not on the networks.
PREPROCESSING_DEFAULTS: ModelConfigDict = {
    "dim": 84,
    "grayscale": False,
    "zero_mean": True,
    "framestack": True,
}

MODEL_DEFAULTS: ModelConfigDict = {
    "fcnet_hiddens": [256, 256],
    "fcnet_activation": "tanh",
    "fcnet_use_layernorm": False,
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
    **PREPROCESSING_DEFAULTS,
    "use_lstm": False,
    "max_seq_len": 20,
    "lstm_cell_size": 256,
    "lstm_use_prev_action": False,
    "lstm_use_prev_reward": False,
    "use_attention": False,
    "attention_num_transformer_units": 1,
    "attention_dim": 64,
    "attention_num_heads": 1,
    "attention_head_dim": 32,
    "attention_memory_inference": 50,
    "attention_memory_training": 50,
    "attention_position_wise_mlp_dim": 32,
    "attention_init_gru_gate_bias": 2.0,
    "attention_use_n_prev_actions": 0,
    "attention_use_n_prev_rewards": 0,
}
