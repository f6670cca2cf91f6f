"""``exploration_config``: the exploration class and its constructor arguments.

``"type"`` is a built-in name, an import path or a class. The constructor arguments of the
built-in strategies are known and checked here; those of other classes are the class's business.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import AfterValidator, Field, TypeAdapter, ValidationError, WithJsonSchema
from typing_extensions import TypedDict

from rlconf.field_types import NonNegInt, PosFloat, PosInt, UnitFloat
from rlconf.importpath import ImportPathError, resolve
from rlconf.section import STRICT


class StochasticSamplingArgs(TypedDict, total=False):
    random_timesteps: Annotated[NonNegInt, Field(description="Act uniformly at random first.")]


class EpsilonGreedyArgs(TypedDict, total=False):
    initial_epsilon: UnitFloat
    final_epsilon: UnitFloat
    warmup_timesteps: NonNegInt
    epsilon_timesteps: PosInt


class SoftQArgs(TypedDict, total=False):
    temperature: PosFloat


class GaussianNoiseArgs(TypedDict, total=False):
    random_timesteps: NonNegInt
    stddev: PosFloat
    initial_scale: Annotated[float, Field(ge=0.0)]
    final_scale: Annotated[float, Field(ge=0.0)]
    scale_timesteps: PosInt


class OrnsteinUhlenbeckNoiseArgs(GaussianNoiseArgs, total=False):
    ou_theta: Annotated[float, Field(ge=0.0)]
    ou_sigma: Annotated[float, Field(ge=0.0)]
    ou_base_scale: Annotated[float, Field(ge=0.0)]


class ParameterNoiseArgs(TypedDict, total=False):
    initial_stddev: Annotated[
        PosFloat, Field(description="The first stddev of the noise on the network's weights.")
    ]
    random_timesteps: Annotated[
        NonNegInt, Field(description="Act uniformly at random (epsilon 1) first.")
    ]
    sub_exploration: Annotated[
        dict[str, Any] | None,
        Field(
            description="What picks the action from the noisy network's outputs: an "
            "EpsilonGreedy, OrnsteinUhlenbeckNoise or GaussianNoise config (None: epsilon 1 "
            "then 0.01 for Discrete actions, OU noise for Box actions)."
        ),
    ]


class RandomArgs(TypedDict, total=False):
    """Uniformly random actions; no arguments."""


BUILTIN_EXPLORATION: dict[str, type] = {
    "StochasticSampling": StochasticSamplingArgs,
    "EpsilonGreedy": EpsilonGreedyArgs,
    "PerWorkerEpsilonGreedy": EpsilonGreedyArgs,
    "SoftQ": SoftQArgs,
    "GaussianNoise": GaussianNoiseArgs,
    "PerWorkerGaussianNoise": GaussianNoiseArgs,
    "OrnsteinUhlenbeckNoise": OrnsteinUhlenbeckNoiseArgs,
    "PerWorkerOrnsteinUhlenbeckNoise": OrnsteinUhlenbeckNoiseArgs,
    "Random": RandomArgs,
    "ParameterNoise": ParameterNoiseArgs,
}


#: RLlib's other exploration types, which rlconf does not have, with the reason; a config naming
#: one is refused with it.
NOT_IN_RLCONF: dict[str, str] = {
    "Curiosity": (
        "the intrinsic curiosity module (forward and inverse models learned beside the policy) "
        "is not implemented by rlconf's runtime"
    ),
    "ThompsonSampling": "it is the exploration of RLlib's bandit algorithms, which rlconf lacks",
    "UpperConfidenceBound": (
        "it is the exploration of RLlib's bandit algorithms, which rlconf lacks"
    ),
    "SlateEpsilonGreedy": "it is the exploration of RLlib's SlateQ, which rlconf lacks",
    "SlateSoftQ": "it is the exploration of RLlib's SlateQ, which rlconf lacks",
}


@functools.cache
def _adapter(kind: str) -> TypeAdapter[Any]:
    args = BUILTIN_EXPLORATION[kind]
    args.__pydantic_config__ = STRICT  # type: ignore[attr-defined]
    return TypeAdapter(args)


def _validate(config: dict[str, Any]) -> dict[str, Any]:
    if "type" not in config:
        raise ValueError("needs a 'type': a built-in name, an import path or a class")
    kind = config["type"]
    args = {k: v for k, v in config.items() if k != "type"}
    if isinstance(kind, type):
        return config
    if not isinstance(kind, str):
        raise ValueError(f"'type' must be a name, an import path or a class, not {kind!r}")
    if kind in BUILTIN_EXPLORATION:
        try:
            checked = _adapter(kind).validate_python(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}={e['input']!r}: "
                + (
                    f"not an argument of {kind} (its arguments: "
                    f"{', '.join(BUILTIN_EXPLORATION[kind].__annotations__) or 'none'})"
                    if e["type"] == "extra_forbidden"
                    else e["msg"]
                )
                for e in exc.errors()
            )
            raise ValueError(f"{kind}: {problems}") from None
        return {"type": kind, **checked}
    if kind in NOT_IN_RLCONF:
        raise ValueError(
            f"exploration type {kind!r} is not supported: {NOT_IN_RLCONF[kind]}; built-in "
            f"types: {', '.join(BUILTIN_EXPLORATION)}, or a subclass of runtime.Exploration"
        )
    if "." in kind or ":" in kind:
        try:
            resolve(kind)
        except ImportPathError as exc:
            raise ValueError(str(exc)) from None
        return config
    raise ValueError(
        f"unknown exploration type {kind!r}; built-in types: {', '.join(BUILTIN_EXPLORATION)}"
    )


if TYPE_CHECKING:
    ExplorationConfig: TypeAlias = dict[str, Any]
else:
    ExplorationConfig = Annotated[
        dict[str, Any],
        AfterValidator(_validate),
        WithJsonSchema(
            {
                "type": "object",
                "properties": {
                    "type": {
                        "anyOf": [
                            {"enum": list(BUILTIN_EXPLORATION)},
                            {"type": "string", "description": "import path"},
                            {"type": "object", "required": ["$import"]},
                        ]
                    }
                },
                "required": ["type"],
            }
        ),
    ]
