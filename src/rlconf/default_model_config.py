"""``DefaultModelConfig``: RLlib's new API stack dataclass of the default networks' settings.

``rl_module(model_config=DefaultModelConfig(...))`` (or ``training(model=...)``) is the dict
of all its fields: every field sets the ``model`` key of the same name, its defaults included
(``vf_share_layers=True`` among them, as in RLlib), through the same validation as the dict
form. Given to an ``RLModuleSpec``, it is the ``model_config`` dict the module receives.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import BeforeValidator

from rlconf.model_config import ModelConfigDict


@dataclass
class DefaultModelConfig:
    """RLlib's field names and defaults (the model dict's keys of the same names)."""

    fcnet_hiddens: list[int] = field(default_factory=lambda: [256, 256])
    fcnet_activation: str | None = "tanh"
    fcnet_kernel_initializer: str | Callable[..., Any] | None = None
    fcnet_kernel_initializer_kwargs: dict[str, Any] | None = None
    fcnet_bias_initializer: str | Callable[..., Any] | None = None
    fcnet_bias_initializer_kwargs: dict[str, Any] | None = None
    conv_filters: list[list[Any]] | None = None
    conv_activation: str | None = "relu"
    conv_kernel_initializer: str | Callable[..., Any] | None = None
    conv_kernel_initializer_kwargs: dict[str, Any] | None = None
    conv_bias_initializer: str | Callable[..., Any] | None = None
    conv_bias_initializer_kwargs: dict[str, Any] | None = None
    head_fcnet_hiddens: list[int] = field(default_factory=list)
    head_fcnet_activation: str | None = "relu"
    head_fcnet_kernel_initializer: str | Callable[..., Any] | None = None
    head_fcnet_kernel_initializer_kwargs: dict[str, Any] | None = None
    head_fcnet_bias_initializer: str | Callable[..., Any] | None = None
    head_fcnet_bias_initializer_kwargs: dict[str, Any] | None = None
    free_log_std: bool = False
    log_std_clip_param: float = 20.0
    vf_share_layers: bool = True
    use_lstm: bool = False
    max_seq_len: int = 20
    lstm_cell_size: int = 256
    lstm_use_prev_action: bool = False
    lstm_use_prev_reward: bool = False
    lstm_kernel_initializer: str | Callable[..., Any] | None = None
    lstm_kernel_initializer_kwargs: dict[str, Any] | None = None
    lstm_bias_initializer: str | Callable[..., Any] | None = None
    lstm_bias_initializer_kwargs: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field by name (a deep copy), as the model dict takes it."""
        return dataclasses.asdict(self)


def as_model_dict(value: Any) -> Any:
    """``value`` as a dict when it is a ``DefaultModelConfig``; anything else as it is (the
    model dict's validation judges it)."""
    return value.to_dict() if isinstance(value, DefaultModelConfig) else value


if TYPE_CHECKING:
    #: What the ``model`` setting (``rl_module(model_config=...)``) takes.
    ModelConfigInput: TypeAlias = ModelConfigDict | DefaultModelConfig
else:
    ModelConfigInput = Annotated[ModelConfigDict, BeforeValidator(as_model_dict)]
