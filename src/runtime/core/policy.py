"""``TorchPolicy``: one policy as the workers see it. Acting is the module's forward passes plus
an exploration strategy. In an ``Algorithm`` the policy's learner lives in the algorithm's
``LearnerGroup`` over a module of its own; the driver's copy of the policy is attached to it
(``learner``, ``learn_on_batch`` and the learner state go there). A policy used on its own
makes a learner over its own module on first use. ``PolicyBuilder`` is what an algorithm hands
its workers to make policies with its module, learner, postprocessing steps and exploration
strategies.

The policy sees preprocessed (and filtered) observations; the RolloutWorker owns the
preprocessor and the filter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from runtime.core.distributions import ActionDistribution, Deterministic
from runtime.core.exploration import Exploration, build_exploration
from runtime.core.exploration.soft_q import SoftQ
from runtime.core.lean_acting import lean_actions
from runtime.core.learner import DEFAULT_OPTIMIZER, Learner
from runtime.core.module import ActorCriticModule, RLModule
from runtime.core.module_spec import ModuleSpec
from runtime.core.sample_batch import SampleBatch
from runtime.core.settings import settings_of
from runtime.core.space_support import SpaceTypes, check_spaces

if TYPE_CHECKING:
    from runtime.core.learner_group import LearnerGroup

Array = npt.NDArray[Any]
S = TypeVar("S")
#: A postprocessing step: adds columns to a fragment's ``(T, N)`` columns, in place.
Postprocessor = Callable[[dict[str, Array], "TorchPolicy"], None]
#: The exploration strategies of the policy-gradient family.
SAMPLING_EXPLORATIONS = ("StochasticSampling", "Random")


def _refuse_unread_inputs(method: str, **given: Any) -> None:
    """A ``ValueError`` naming the first of the inputs given (not None) that the policy acts
    without: episodes and input dicts, which no model here reads, and a state, which only a
    model with memory (``use_lstm``, ``use_attention``) has. Previous actions and rewards and
    infos are inputs of every call, as in the reference: a model that doesn't read them
    ignores them."""
    for name, value in given.items():
        if value is not None:
            reason = (
                "this policy's model has no memory (use_lstm, use_attention) and so no state"
                if name.startswith("state")
                else "no model here reads episodes or input dicts"
            )
            raise ValueError(f"{method}({name}=...): {reason}; leave {name} out (None)")


@dataclass(frozen=True)
class PolicySettings:
    explore: bool


class TorchPolicy:
    """One policy; ``config`` is the (frozen) algorithm config."""

    def __init__(
        self,
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
        config: Any,
        device: torch.device | None = None,
        *,
        learner_class: type[Learner] | None = None,
        module_class: type[RLModule] = ActorCriticModule,
        postprocessing: Sequence[Postprocessor] = (),
        explorations: Sequence[str] = SAMPLING_EXPLORATIONS,
        algorithm: str = "",
        worker_index: int = 0,
        observation_spaces: SpaceTypes = (),
        action_spaces: SpaceTypes = (),
    ) -> None:
        check_spaces(
            algorithm or type(self).__name__,
            observation_space,
            action_space,
            observation_spaces,
            action_spaces,
        )
        self.observation_space = observation_space
        self.action_space = action_space
        self.config = config
        self.device = device or torch.device("cpu")
        self.module_class = module_class
        self.module = module_class(observation_space, action_space, config).to(self.device)
        self.dist_class = self.module.dist_class
        self.exploration = build_exploration(
            config,
            action_space,
            allowed=explorations,
            algorithm=algorithm or type(self).__name__,
            model=self.module,
            worker_index=worker_index,
        )
        # The strategy's hooks that are called only where it overrides them.
        strategy = type(self.exploration)
        self._exploration_forward = strategy.forward_module is not Exploration.forward_module
        self._exploration_postprocess = (
            strategy.postprocess_fragment is not Exploration.postprocess_fragment
        )
        self.postprocessing = tuple(postprocessing)
        self.learner_class = learner_class
        self._learner: Learner | None = None
        #: The learner group (and this policy's id in it) that learns for this policy.
        self._learner_group: tuple[LearnerGroup, str] | None = None
        #: The learner group's learner has learned since this copy last took its weights.
        self._weights_stale = False
        self.global_timestep = 0
        self._settings: dict[type[Any], Any] = {}
        self._explore = bool(self.settings(PolicySettings, type(self).__name__).explore)

    # ------------------------------------------------------------------ parts

    def settings(self, settings_class: type[S], component: str) -> S:
        """The settings ``component`` reads from this policy's config (built on first use, then
        kept: postprocessing steps ask for theirs every fragment)."""
        built = self._settings.get(settings_class)
        if built is None:
            built = settings_of(settings_class, self.config, component)
            self._settings[settings_class] = built
        return built

    def module_spec(self) -> ModuleSpec:
        """What this policy's module and learner are built from (a learner builds its own)."""
        return ModuleSpec(
            self.observation_space,
            self.action_space,
            self.config,
            self.module_class,
            self.learner_class,
        )

    def attach_learner_group(self, group: LearnerGroup, policy_id: str) -> None:
        """Learn through ``group``'s learner of ``policy_id`` from now on."""
        self._learner_group = (group, policy_id)
        group.attach(policy_id, self)

    @property
    def learner(self) -> Learner:
        """The learner of this policy: the learner group's, or one of its own (made on first
        use) for a policy outside an algorithm."""
        if self._learner_group is not None:
            group, policy_id = self._learner_group
            if not group.is_local:
                raise ValueError(
                    f"policy {policy_id!r} learns in remote learner workers; use "
                    "algo.learner_group for its learner state"
                )
            return group.learner(policy_id)
        if self._learner is None:
            if self.learner_class is None:
                raise ValueError("this policy has no learner_class: it only acts")
            self._learner = self.learner_class(self.module, self.config, self.device)
            self._learner.on_timestep(self.global_timestep)
        return self._learner

    @property
    def model(self) -> nn.Module:
        """The module's main network (the catalog model for the policy-gradient family)."""
        model: nn.Module = getattr(self.module, "model", self.module)
        return model

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.learner.optimizers[DEFAULT_OPTIMIZER]

    @property
    def cur_lr(self) -> float:
        return self.learner.cur_lr

    @property
    def has_critic(self) -> bool:
        return self.module.has_critic

    # ------------------------------------------------------------------ acting

    def _obs(self, obs: Array) -> dict[str, torch.Tensor]:
        tensor = torch.from_numpy(np.asarray(obs, dtype=np.float32)).to(self.device)
        return {SampleBatch.OBS: tensor}

    def is_recurrent(self) -> bool:
        """True when the policy's model has memory (``get_initial_state()`` is not empty)."""
        return self.module.is_recurrent

    def get_initial_state(self) -> list[Array]:
        """The state an episode starts from: one numpy array per state tensor, without a batch
        dimension (empty for a model without memory)."""
        return [s.detach().cpu().numpy() for s in self.module.get_initial_state()]

    def _memory_inputs(
        self,
        method: str,
        rows: int,
        state_batches: list[Any] | None,
        prev_action_batch: Any,
        prev_reward_batch: Any,
    ) -> dict[str, torch.Tensor]:
        """The state and previous action / reward inputs of ``rows`` rows: as given, else the
        initial state and zeros (an episode's first step); none for a model without memory
        (which reads the observation alone, and refuses a state)."""
        if not self.module.is_recurrent:
            _refuse_unread_inputs(method, state_batches=state_batches or None)
            return {}
        inputs: dict[str, torch.Tensor] = {}
        initial = self.get_initial_state()
        if state_batches:
            if len(state_batches) != len(initial):
                raise ValueError(
                    f"{method}(state_batches=...): {len(state_batches)} state arrays given; this "
                    f"policy's model has {len(initial)} (see get_initial_state())"
                )
            states = [np.asarray(s, dtype=np.float32) for s in state_batches]
        else:
            states = [np.repeat(s[None], rows, axis=0) for s in initial]
        for k, state in enumerate(states):
            inputs[SampleBatch.state_in(k)] = torch.from_numpy(state).to(self.device)
        model = self.model
        if getattr(model, "uses_prev_actions", False):
            if prev_action_batch is None:
                dtype = self.action_space.dtype or np.float32
                prev = np.zeros((rows, *(self.action_space.shape or ())), dtype=dtype)
            else:
                prev = np.asarray(prev_action_batch)
            inputs[SampleBatch.PREV_ACTIONS] = torch.from_numpy(prev).to(self.device)
        if getattr(model, "uses_prev_rewards", False):
            prev_r = np.zeros(rows) if prev_reward_batch is None else prev_reward_batch
            inputs[SampleBatch.PREV_REWARDS] = torch.from_numpy(
                np.asarray(prev_r, dtype=np.float32).reshape(rows)
            ).to(self.device)
        return inputs

    @torch.inference_mode()
    def compute_actions(
        self,
        obs_batch: Array,
        state_batches: list[Any] | None = None,
        prev_action_batch: Any = None,
        prev_reward_batch: Any = None,
        info_batch: Any = None,
        episodes: Any = None,
        explore: bool | None = None,
        timestep: int | None = None,
        *,
        value_preds: bool = True,
        env_indices: Sequence[int] | None = None,
    ) -> tuple[Array, list[Any], dict[str, Array]]:
        """Actions for a batch of preprocessed observations: ``(actions, state_out, extra)``
        where ``extra`` holds ``action_logp``, ``action_dist_inputs`` and (with a critic, unless
        ``value_preds=False``) ``vf_preds``. ``env_indices`` names the sub-env of each row (None:
        sub-envs ``0..B-1``) for strategies with per-sub-env state (``Exploration.env_indices``).

        A model with memory acts from ``state_batches`` (one array of ``B`` rows per state
        tensor; the initial state when not given) and, where it reads them, the previous
        actions and rewards (zeros when not given); ``state_out`` is its new state. A model
        without memory returns ``[]``, ignores the previous actions and rewards (inputs of
        every call, as in the reference) and refuses a state (a ``ValueError``).

        The reference's signature, strictly: a keyword it does not take is a ``TypeError``
        naming it (a misspelt ``explore`` would otherwise keep exploring). ``info_batch`` is
        accepted and, as no model here reads infos, unused; ``episodes``, which no model here
        reads either, is accepted when not given (None).
        """
        _refuse_unread_inputs("compute_actions", episodes=episodes)
        if self._weights_stale:
            self.pull_weights()
        explore = self._explore if explore is None else explore
        step = self.global_timestep if timestep is None else timestep
        module = self.module
        if not (state_batches or module.is_recurrent):
            lean = lean_actions(self, obs_batch, explore, step, value_preds, env_indices)
            if lean is not None:
                return lean
        inputs = self._obs(obs_batch)
        if module.is_recurrent or state_batches:
            inputs.update(
                self._memory_inputs(
                    "compute_actions",
                    len(obs_batch),
                    state_batches,
                    prev_action_batch,
                    prev_reward_batch,
                )
            )
        if self._exploration_forward:
            out = self.exploration.forward_module(module, inputs, explore)
        else:
            out = (
                module.forward_exploration(inputs) if explore else module.forward_inference(inputs)
            )
        if self.dist_class is None:
            # A deterministic actor outputs its actions; exploration may add noise to them.
            dist_inputs = out[SampleBatch.ACTIONS]
            dist: ActionDistribution = Deterministic(dist_inputs)
        else:
            dist_inputs = out[SampleBatch.ACTION_DIST_INPUTS]
            dist = self.dist_class(dist_inputs)
        self.exploration.env_indices = env_indices
        chosen = self.exploration.get_exploration_action(
            action_distribution=dist, timestep=step, explore=explore
        )
        actions, logp = self._actions_and_logp(chosen, dist, len(dist_inputs))
        extra = {
            SampleBatch.ACTION_LOGP: logp.cpu().numpy(),
            SampleBatch.ACTION_DIST_INPUTS: dist_inputs.cpu().numpy(),
        }
        if value_preds and module.has_critic:
            values = out.get(SampleBatch.VF_PREDS)
            if values is None:
                values = module.compute_values(inputs)
            extra[SampleBatch.VF_PREDS] = values.cpu().numpy()
        if not module.is_recurrent:
            return actions.cpu().numpy(), [], extra
        state_out = [
            out[SampleBatch.state_out(k)].cpu().numpy()
            for k in range(getattr(module, "state_size", 0))
        ]
        return actions.cpu().numpy(), state_out, extra

    def _actions_and_logp(
        self, chosen: Any, dist: ActionDistribution, rows: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The actions an exploration returned, and their log-likelihoods: the ``logp`` of an
        ``(actions, logp)`` pair (the reference's documented return), else (a tensor of
        actions, or a pair whose ``logp`` is None) their log-likelihood under ``dist``."""
        logp: Any = None
        if isinstance(chosen, tuple):
            if len(chosen) != 2:
                raise TypeError(
                    f"{type(self.exploration).__name__}.get_exploration_action() returned a "
                    f"tuple of {len(chosen)} items; allowed: a tensor of actions, or a pair "
                    "(actions, logp)"
                )
            chosen, logp = chosen
        actions = torch.as_tensor(chosen, device=dist.inputs.device)
        if logp is None:
            return actions, dist.logp(actions)
        logp = torch.as_tensor(logp, dtype=torch.float32, device=dist.inputs.device)
        if tuple(logp.shape) != (rows,):
            raise ValueError(
                f"{type(self.exploration).__name__}.get_exploration_action() returned "
                f"(actions, logp) with logp of shape {tuple(logp.shape)}; allowed: one "
                f"log-likelihood per row, shape ({rows},)"
            )
        return actions, logp

    def compute_single_action(
        self,
        obs: Any,
        state: list[Any] | None = None,
        *,
        prev_action: Any = None,
        prev_reward: Any = None,
        info: Any = None,
        input_dict: Any = None,
        episode: Any = None,
        explore: bool | None = None,
        timestep: int | None = None,
    ) -> tuple[Any, list[Any], dict[str, Any]]:
        """``compute_actions`` for one preprocessed observation: ``(action, state_out, extra)``,
        with the reference's keywords, as strictly: a model with memory takes ``state`` (each
        array without a batch dimension; the initial state when not given); ``prev_action``,
        ``prev_reward`` and ``info`` are taken always and reach the models that read them (a
        model with memory, where it reads previous actions or rewards); ``input_dict`` and
        ``episode``, which no model here reads, are refused when given."""
        _refuse_unread_inputs("compute_single_action", input_dict=input_dict, episode=episode)
        if not self.module.is_recurrent:
            _refuse_unread_inputs("compute_single_action", state=state or None)
            prev_action = prev_reward = None  # read only by a model with memory
        actions, states, extra = self.compute_actions(
            np.asarray(obs)[None],
            [np.asarray(s)[None] for s in state] if state else None,
            None if prev_action is None else np.asarray(prev_action)[None],
            None if prev_reward is None else np.asarray([prev_reward], dtype=np.float32),
            None if info is None else [info],
            explore=explore,
            timestep=timestep,
        )
        # The reference advances the timestep with every observation acted on (see
        # ``Acting._compute``); the samplers' rounds set it from the env steps sampled.
        self.global_timestep += 1
        return actions[0], [s[0] for s in states], {k: v[0] for k, v in extra.items()}

    @torch.inference_mode()
    def compute_log_likelihoods(
        self,
        actions: Any,
        obs_batch: Array,
        state_batches: list[Any] | None = None,
        prev_action_batch: Any = None,
        prev_reward_batch: Any = None,
    ) -> Array:
        """The log-likelihood of each of ``actions`` (in the policy's coordinates) at its
        preprocessed observation under the current policy's action distribution, as the
        reference's ``compute_log_likelihoods`` (what off-policy estimators weigh input rows
        with). A Q-policy's distribution is the softmax of its Q-values (divided by the
        temperature when it explores with ``SoftQ``); a deterministic actor has none."""
        if self.dist_class is None:
            raise ValueError(
                f"compute_log_likelihoods: {type(self.module).__name__} is a deterministic "
                "actor; its actions have no likelihood"
            )
        if self._weights_stale:
            self.pull_weights()
        inputs = self._obs(np.asarray(obs_batch))
        if self.module.is_recurrent or state_batches:
            inputs.update(
                self._memory_inputs(
                    "compute_log_likelihoods",
                    len(obs_batch),
                    state_batches,
                    prev_action_batch,
                    prev_reward_batch,
                )
            )
        out = self.module.forward_inference(inputs)
        dist_inputs = out[SampleBatch.ACTION_DIST_INPUTS]
        temperature = getattr(self.exploration, "temperature", None)
        if isinstance(self.exploration, SoftQ) and temperature:
            dist_inputs = dist_inputs / float(temperature)
        chosen = torch.as_tensor(np.asarray(actions), device=dist_inputs.device)
        logp: Array = self.dist_class(dist_inputs).logp(chosen).cpu().numpy()
        return logp

    @torch.inference_mode()
    def compute_values(
        self,
        obs_batch: Array,
        state_batches: list[Any] | None = None,
        prev_action_batch: Any = None,
        prev_reward_batch: Any = None,
    ) -> Array:
        """V(s) for a batch of preprocessed observations (zeros without a critic); a model with
        memory reads its state and previous inputs as in ``compute_actions``."""
        if not self.module.has_critic or len(obs_batch) == 0:
            return np.zeros(len(obs_batch), dtype=np.float32)
        if self._weights_stale:
            self.pull_weights()
        inputs = self._obs(obs_batch)
        inputs.update(
            self._memory_inputs(
                "compute_values",
                len(obs_batch),
                state_batches,
                prev_action_batch,
                prev_reward_batch,
            )
        )
        values: Array = self.module.compute_values(inputs).cpu().numpy()
        return values

    # ------------------------------------------------------------------ postprocessing

    def postprocess_fragment(self, columns: dict[str, Array]) -> None:
        """Run the algorithm's postprocessing steps on a fragment's ``(T, N)`` columns (after
        the exploration's ``postprocess_fragment`` where it has one)."""
        if self._exploration_postprocess:
            self.exploration.postprocess_fragment(self, columns)
        for step in self.postprocessing:
            step(columns, self)

    # ------------------------------------------------------------------ learning

    def learn_on_batch(self, batch: SampleBatch) -> dict[str, Any]:
        """Learn on one train batch (the learner's ``update``); returns the learner info, with
        the exploration's ``stats()`` (e.g. ``cur_epsilon``) among its ``learner_stats``."""
        if self._learner_group is not None:
            group, policy_id = self._learner_group
            info = group.update(policy_id, batch)
            # Taken when next needed (acting, weights, state, the weight sync): an off-policy
            # step learns many times between two samplings.
            self._weights_stale = True
        else:
            info = self.learner.update(batch)
        info.setdefault("learner_stats", {}).update(self.exploration.stats())
        return info

    def pull_weights(self) -> None:
        """Take the weights of the learner group's learner (attached policies whose learner is
        made)."""
        self._weights_stale = False
        if self._learner_group is None:
            return
        group, policy_id = self._learner_group
        if not group.has_learner(policy_id):
            return
        if group.is_local:
            group.copy_weights_into(policy_id, self.module)
        else:
            self.set_weights(group.get_weights([policy_id])[policy_id])

    def pull_weights_if_stale(self) -> None:
        if self._weights_stale:
            self.pull_weights()

    def on_global_var_update(self, global_vars: Mapping[str, Any]) -> None:
        """Receive the global timestep: exploration and (where learning) schedules follow it."""
        self.global_timestep = int(global_vars.get("timestep", self.global_timestep))
        self.exploration.on_timestep(self.global_timestep)
        if self._learner is not None:
            self._learner.on_timestep(self.global_timestep)

    # ------------------------------------------------------------------ state

    def get_weights(self) -> dict[str, Array]:
        self.pull_weights_if_stale()
        return {k: v.detach().cpu().numpy().copy() for k, v in self.module.state_dict().items()}

    def set_weights(self, weights: Mapping[str, Any]) -> None:
        self._weights_stale = False
        # A copy: arrays that arrive through Ray's object store are read-only.
        state = {k: torch.from_numpy(np.array(v)) for k, v in weights.items()}
        self.module.load_state_dict(state)

    def get_exploration_state(self) -> dict[str, Any]:
        """The exploration's state (e.g. ``cur_epsilon`` and the ``last_timestep`` it was
        computed at) and its stats, at the policy's global ``timestep``."""
        return {
            "timestep": self.global_timestep,
            **self.exploration.stats(),
            **self.exploration.get_state(),
        }

    def get_state(self) -> dict[str, Any]:
        """The policy's state: ``weights`` (numpy arrays, as ``get_weights()``), the global
        timestep, the exploration state and (once it has a learner) the learner state; all but
        the weights are JSON-able. ``set_state`` and ``Algorithm.add_policy(policy_state=...)``
        take it."""
        return {"weights": self.get_weights(), **self.get_json_state()}

    def get_json_state(self) -> dict[str, Any]:
        """``get_state()`` without the weights (what a checkpoint's JSON holds)."""
        state: dict[str, Any] = {
            "global_timestep": self.global_timestep,
            "exploration": self.exploration.get_state(),
        }
        if self._learner_group is not None:
            group, policy_id = self._learner_group
            learner_state = group.learner_state(policy_id)
            if learner_state is not None:
                state["learner"] = learner_state
        elif self._learner is not None:
            state["learner"] = self._learner.get_state()
        return state

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore what ``get_state()`` (or ``get_json_state()``) returned."""
        if "weights" in state:
            self.set_weights(state["weights"])
        self.exploration.set_state(state.get("exploration", {}))
        if "learner" in state and self._learner_group is not None:
            group, policy_id = self._learner_group
            group.set_learner_state(policy_id, state["learner"])
        elif "learner" in state and self.learner_class is not None:
            self.learner.set_state(state["learner"])
        self.on_global_var_update({"timestep": int(state.get("global_timestep", 0))})


@dataclass(frozen=True)
class PolicyBuilder:
    """Makes an algorithm's policies: ``builder(obs_space, action_space, config, device)``."""

    learner_class: type[Learner] | None
    module_class: type[RLModule] = ActorCriticModule
    postprocessing: tuple[Postprocessor, ...] = ()
    explorations: tuple[str, ...] = SAMPLING_EXPLORATIONS
    algorithm: str = ""
    #: The policy class made (a TorchPolicy subclass from a PolicySpec; TorchPolicy for None).
    policy_type: type[TorchPolicy] | None = None
    #: The space classes the algorithm supports (empty: any).
    observation_spaces: SpaceTypes = ()
    action_spaces: SpaceTypes = ()

    def __call__(
        self,
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
        config: Any,
        device: torch.device | None = None,
        worker_index: int = 0,
    ) -> TorchPolicy:
        return (self.policy_type or TorchPolicy)(
            observation_space,
            action_space,
            config,
            device,
            learner_class=self.learner_class,
            module_class=self.module_class,
            postprocessing=self.postprocessing,
            explorations=self.explorations,
            algorithm=self.algorithm,
            worker_index=worker_index,
            observation_spaces=self.observation_spaces,
            action_spaces=self.action_spaces,
        )
