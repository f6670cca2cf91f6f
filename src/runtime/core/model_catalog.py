"""``ModelCatalog``: builds a policy's model and action distribution from ``config["model"]``,
and holds the custom models and distributions registered by name."""

from __future__ import annotations

import threading
from typing import Any

import gymnasium as gym

from rlconf.errors import ConfigError
from runtime.core.attention_network import AttentionNetwork
from runtime.core.distributions import distribution_for
from runtime.core.lstm_network import LSTMNetwork
from runtime.core.models import FullyConnectedNetwork, TorchModel
from runtime.core.vision_network import VisionNetwork

_LOCK = threading.Lock()
_CUSTOM_MODELS: dict[str, type[TorchModel]] = {}
_CUSTOM_DISTS: dict[str, Any] = {}


class ModelCatalog:
    """Registry of custom models / action distributions, and the factory for both."""

    @staticmethod
    def register_custom_model(name: str, model_class: type[Any]) -> None:
        """Make ``name`` usable as ``model={"custom_model": name}``; the class is a torch module
        built as ``cls(obs_space, action_space, num_outputs, model_config, name, **custom_model_
        config)`` (subclass ``runtime.TorchModel``)."""
        if not isinstance(model_class, type):
            raise ValueError(f"register_custom_model({name!r}, ...): expected a class")
        with _LOCK:
            _CUSTOM_MODELS[name] = model_class

    @staticmethod
    def register_custom_action_dist(name: str, dist_class: type[Any]) -> None:
        with _LOCK:
            _CUSTOM_DISTS[name] = dist_class

    @staticmethod
    def registered() -> dict[str, dict[str, Any]]:
        """What is registered in this process (sent to remote workers)."""
        with _LOCK:
            return {"models": dict(_CUSTOM_MODELS), "dists": dict(_CUSTOM_DISTS)}

    @staticmethod
    def restore_registered(entries: dict[str, dict[str, Any]]) -> None:
        with _LOCK:
            _CUSTOM_MODELS.update(entries.get("models", {}))
            _CUSTOM_DISTS.update(entries.get("dists", {}))

    @staticmethod
    def get_action_dist(action_space: gym.Space[Any], model_config: dict[str, Any]) -> Any:
        """``(factory, num_outputs)``: a factory ``inputs -> ActionDistribution``."""
        custom = model_config.get("custom_action_dist")
        if custom is None:
            return distribution_for(action_space)
        dist_class = _lookup(custom, _CUSTOM_DISTS, "custom_action_dist")
        return dist_class, int(dist_class.required_model_output_shape(action_space, model_config))

    @staticmethod
    def get_model(
        obs_space: gym.Space[Any],
        action_space: gym.Space[Any],
        num_outputs: int,
        model_config: dict[str, Any],
        name: str = "model",
    ) -> TorchModel:
        custom = model_config.get("custom_model")
        memory = [key for key in ("use_lstm", "use_attention") if model_config.get(key)]
        if len(memory) == 2:
            raise ConfigError.single(
                "ModelCatalog.get_model()",
                "model.use_attention",
                "can't be combined with model.use_lstm: a model has one memory",
                value=True,
                has_value=True,
                allowed="one of use_lstm, use_attention",
            )
        if custom is not None and memory:
            raise ConfigError.single(
                "ModelCatalog.get_model()",
                f"model.{memory[0]}",
                f"wraps the catalog's own networks, not custom_model {custom!r}: a custom "
                "model with memory returns its state from get_initial_state() and takes it in "
                "forward(input_dict, state, seq_lens)",
                value=True,
                has_value=True,
                allowed="False with a custom_model",
            )
        if custom is not None:
            model_class = _lookup(custom, _CUSTOM_MODELS, "custom_model")
            kwargs = dict(model_config.get("custom_model_config") or {})
            model: TorchModel = model_class(
                obs_space, action_space, num_outputs, model_config, name, **kwargs
            )
            return model
        if memory == ["use_lstm"]:
            return LSTMNetwork(obs_space, action_space, num_outputs, model_config, name)
        if memory == ["use_attention"]:
            return AttentionNetwork(obs_space, action_space, num_outputs, model_config, name)
        # Images (HxWxC) always get conv layers, never an MLP over their pixels: those of
        # conv_filters, the default stack of their size, or a ConfigError saying what to set.
        if isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 3:
            return VisionNetwork(obs_space, action_space, num_outputs, model_config, name)
        return FullyConnectedNetwork(obs_space, action_space, num_outputs, model_config, name)


def _lookup(value: Any, registry: dict[str, Any], field: str) -> Any:
    if isinstance(value, type):
        return value
    with _LOCK:
        found = registry.get(value)
    if found is None:
        known = ", ".join(sorted(registry)) or "none registered"
        raise ValueError(
            f"model.{field} {value!r} is not registered (known: {known}); register it with "
            f"ModelCatalog.register_custom_{'model' if field == 'custom_model' else 'action_dist'}"
        )
    return found
