"""``DQNConfig``: deep Q-learning with a replay buffer, target network, double Q, dueling heads,
n-step returns, distributional Q-learning and advantage learning."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from rlconf import search_space
from rlconf.algorithm_config import AlgorithmConfig
from rlconf.algorithms.actor_critic_fields import GradClipArgs, LRScheduleArgs
from rlconf.algorithms.off_policy_fields import OFF_POLICY_DEFAULTS, OffPolicyArgs
from rlconf.errors import FieldIssue
from rlconf.exploration_types import ExplorationConfig
from rlconf.field_types import ListOf, PosFloat, PosInt, Schedule, UnitFloat
from rlconf.fluent import NOT_SET
from rlconf.generated.dqn_fluent import DQNConfigFluent
from rlconf.inert_keys import InertKey
from rlconf.section import Section
from rlconf.sections.training import TRAINING, TrainingArgs

#: ``adam_epsilon``'s default: torch.optim.Adam's own.
ADAM_EPSILON = 1e-8
#: ``hiddens``' default.
DQN_HIDDENS = (256,)

_NO_NOISY = (
    "noisy networks (Rainbow's noisy, sigma0) are not implemented; explore with "
    "exploration_config (EpsilonGreedy, SoftQ, ParameterNoise)"
)


class DQNTrainingArgs(TrainingArgs, LRScheduleArgs, GradClipArgs, OffPolicyArgs, total=False):
    hiddens: Annotated[
        ListOf[PosInt],
        Field(description="Sizes of the Q head's hidden layers (after the model's layers)."),
    ]
    dueling: Annotated[
        bool, Field(description="Separate state-value and advantage streams (dueling DQN).")
    ]
    double_q: Annotated[
        bool,
        Field(
            description="Pick the next action with the online network, value it with the "
            "target network (double DQN)."
        ),
    ]
    td_error_loss_fn: Annotated[Literal["huber", "mse"], Field(description="Loss on the TD error.")]
    adam_epsilon: Annotated[
        PosFloat,
        Field(
            description="Adam's epsilon, added to the root of the squared-gradient average: "
            "larger values shrink the steps of parameters whose gradients are small "
            "(torch.optim.Adam's eps)."
        ),
    ]
    num_atoms: Annotated[
        PosInt,
        Field(
            description="Atoms of distributional Q-learning (C51): 1 learns one Q-value per "
            "action; more learn, per action, a distribution of returns over num_atoms values "
            "evenly spaced on [v_min, v_max], trained by cross-entropy with the projected "
            "n-step target."
        ),
    ]
    v_min: Annotated[
        float,
        Field(description="Lowest return of the distributional support (num_atoms > 1)."),
    ]
    v_max: Annotated[
        float,
        Field(description="Highest return of the distributional support (num_atoms > 1)."),
    ]
    advantage_learning_alpha: Annotated[
        float,
        Field(
            ge=0.0,
            lt=1.0,
            description="Advantage learning (Bellemare et al. 2016, 'Increasing the action "
            "gap'; not an RLlib key): each target is lowered by alpha times how far the "
            "target network values the taken action below the state's best one. The greedy "
            "action's value is unchanged, the others' fall further behind (the gap grows by "
            "about 1 / (1 - alpha)), so small errors in the values flip the greedy action "
            "less often. 0 (the default) is plain Q-learning.",
        ),
    ]
    epsilon: Annotated[
        UnitFloat | Schedule | None,
        Field(
            description="RLlib's new API stack epsilon: a fixed epsilon, or a schedule "
            "[(0, v0), (t1, v1), ...] over the env steps sampled (linear between points, the "
            "last value after them), which the EpsilonGreedy exploration follows in place of "
            "its initial_epsilon, final_epsilon and epsilon_timesteps; None: "
            "exploration_config's schedule."
        ),
    ]
    # The reference's noisy-network switches, at the values that turn them off (RLlib's own
    # files, e.g. pong-dqn.yaml, spell them out): accepted there, refused with the reason
    # otherwise.
    noisy: Annotated[bool, InertKey((False,), _NO_NOISY)]
    sigma0: Annotated[float, InertKey((0.5,), _NO_NOISY)]


DQN_TRAINING: Section = TRAINING.with_fields(
    DQNTrainingArgs,
    {
        **OFF_POLICY_DEFAULTS,
        "hiddens": list(DQN_HIDDENS),
        "dueling": True,
        "double_q": True,
        "td_error_loss_fn": "huber",
        "adam_epsilon": ADAM_EPSILON,
        "num_atoms": 1,
        "v_min": -10.0,
        "v_max": 10.0,
        "advantage_learning_alpha": 0.0,
        "epsilon": None,
        "noisy": False,
        "sigma0": 0.5,
        "lr_schedule": None,
        "grad_clip": 40.0,
    },
)


#: DQN's exploration: epsilon from 1.0 down to 0.02 over the first 10k steps.
DQN_EXPLORATION_DEFAULTS: ExplorationConfig = {
    "type": "EpsilonGreedy",
    "initial_epsilon": 1.0,
    "final_epsilon": 0.02,
    "epsilon_timesteps": 10000,
}


class DQNConfig(DQNConfigFluent, AlgorithmConfig):
    """Config of DQN: Q-learning from replayed experience, for Discrete action spaces."""

    __slots__ = ()
    algo_name = "DQN"
    _replays: ClassVar[bool] = True
    _auto_fragment_is_n_step: ClassVar[bool] = True
    _sections: ClassVar[dict[str, Section]] = {
        **AlgorithmConfig._sections,
        "training": DQN_TRAINING,
    }
    _algo_defaults: ClassVar[dict[str, Any]] = {
        "num_workers": 0,
        "rollout_fragment_length": 4,
        "train_batch_size": 32,
        "lr": 5e-4,
        # A training step samples 4 steps: results are reported every 1000 steps instead.
        "min_sample_timesteps_per_reporting": 1000,
        "exploration_config": DQN_EXPLORATION_DEFAULTS,
    }

    def _cross_field_issues(self) -> list[FieldIssue]:
        issues = super()._cross_field_issues()
        issues.extend(distributional_issues(self._plain))
        issues.extend(adam_epsilon_issues(self._plain))
        issues.extend(epsilon_issues(self._plain))
        issues.extend(q_head_issues(self._plain))
        return issues


def q_head_issues(value: Callable[[str], Any]) -> list[FieldIssue]:
    """``hiddens`` and ``model["head_fcnet_hiddens"]`` (RLlib's new API stack name) are one
    setting, the Q head's hidden layers: the model key, where set, wins over ``hiddens``'
    default, and both changed to different values are refused."""
    hiddens, model = value("hiddens"), value("model")
    if NOT_SET in (hiddens, model) or not isinstance(model, dict):
        return []
    head = model.get("head_fcnet_hiddens")
    if head is None or search_space.is_search_space(head):
        return []
    if list(hiddens) in (list(DQN_HIDDENS), list(head)):
        return []
    return [
        FieldIssue(
            "hiddens",
            f"and model.head_fcnet_hiddens={head!r} both set the Q head's hidden layers "
            "(head_fcnet_hiddens is RLlib's new API stack name); set one of them",
            hiddens,
        )
    ]


#: The keys of ``exploration_config`` that ``epsilon`` replaces.
_EPSILON_KEYS = ("initial_epsilon", "final_epsilon", "epsilon_timesteps", "warmup_timesteps")


def epsilon_issues(value: Callable[[str], Any]) -> list[FieldIssue]:
    """``epsilon`` is followed by the EpsilonGreedy exploration, in place of its own schedule:
    its schedule starts at timestep 0 with values in [0, 1] (RLlib's rule), the exploration is
    EpsilonGreedy, and its epsilon keys are left at DQN's defaults."""
    epsilon, exploration = value("epsilon"), value("exploration_config")
    if epsilon is None or NOT_SET in (epsilon, exploration):
        return []
    issues: list[FieldIssue] = []
    if isinstance(epsilon, list):
        if epsilon and epsilon[0][0] != 0:
            issues.append(
                FieldIssue(
                    "epsilon",
                    f"is a schedule whose first timestep is {epsilon[0][0]}; it starts at 0",
                    epsilon,
                    allowed="[(0, v0), (t1, v1), ...]",
                )
            )
        if any(not 0.0 <= point[1] <= 1.0 for point in epsilon):
            issues.append(
                FieldIssue("epsilon", "holds a value outside [0, 1]", epsilon, allowed="0 to 1")
            )
    kind = exploration.get("type") if isinstance(exploration, dict) else None
    if kind != "EpsilonGreedy":
        issues.append(
            FieldIssue(
                "epsilon",
                f"is the schedule of the EpsilonGreedy exploration, but exploration_config's "
                f"type is {kind!r}",
                epsilon,
                allowed="None with this exploration, or exploration_config type 'EpsilonGreedy'",
            )
        )
        return issues
    changed = [
        key
        for key in _EPSILON_KEYS
        if key in exploration and exploration[key] != DQN_EXPLORATION_DEFAULTS.get(key, 0)
    ]
    if changed:
        issues.append(
            FieldIssue(
                "epsilon",
                "and exploration_config's "
                + ", ".join(f"{k}={exploration[k]!r}" for k in changed)
                + " both set the epsilon schedule; set one of them",
                epsilon,
            )
        )
    return issues


def adam_epsilon_issues(value: Callable[[str], Any]) -> list[FieldIssue]:
    """``adam_epsilon`` and ``optimizer={"eps": ...}`` set the same number: one of them, not
    both with different values."""
    epsilon, options = value("adam_epsilon"), value("optimizer")
    if NOT_SET in (epsilon, options) or not isinstance(options, dict) or "eps" not in options:
        return []
    if epsilon == ADAM_EPSILON or epsilon == options["eps"]:
        return []
    return [
        FieldIssue(
            "adam_epsilon",
            f"and optimizer={{'eps': {options['eps']!r}}} both set Adam's epsilon; set one of them",
            epsilon,
        )
    ]


def distributional_issues(value: Callable[[str], Any]) -> list[FieldIssue]:
    """``v_min``/``v_max`` only act with ``num_atoms > 1``, where they must make an interval,
    and the distributional loss is a cross-entropy: no ``td_error_loss_fn="mse"`` there."""
    atoms, low, high, loss_fn = (
        value(key) for key in ("num_atoms", "v_min", "v_max", "td_error_loss_fn")
    )
    if NOT_SET in (atoms, low, high):
        return []
    issues: list[FieldIssue] = []
    if atoms == 1:
        for key, default in (("v_min", -10.0), ("v_max", 10.0)):
            if value(key) != default:
                issues.append(
                    FieldIssue(
                        key,
                        "bounds the distributional support, which needs num_atoms > 1 "
                        "(num_atoms is 1: one Q-value per action)",
                        value(key),
                    )
                )
        return issues
    if low >= high:
        issues.append(FieldIssue("v_max", f"must be > v_min ({low}) with num_atoms > 1", high))
    if loss_fn == "mse":
        issues.append(
            FieldIssue(
                "td_error_loss_fn",
                "can't be 'mse' with num_atoms > 1: the distributional loss is the "
                "cross-entropy with the projected target ('huber', the default, stands for it)",
                loss_fn,
            )
        )
    return issues
