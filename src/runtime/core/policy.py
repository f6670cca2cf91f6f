"""``TorchPolicy``: one policy as the workers see it. Acting is the module's forward passes plus
an exploration strategy. In an ``Algorithm`` the policy's learner lives in the algorithm's
``LearnerGroup`` over a module of its own; the driver's copy of the policy is attached to it
(``learner``, ``learn_on_batch`` and the learner state go there: ``PolicyLearning``). A policy
used on its own makes a learner over its own module on first use. What it reads besides the
observations is ``runtime.core.acting_inputs``; what it says of given rows without acting
(log-likelihoods, values) ``PolicyEstimates``. ``PolicyBuilder`` is what an algorithm hands
its workers to make policies with its module, learner, postprocessing steps and exploration
strategies.

The policy sees preprocessed (and filtered) observations; the RolloutWorker owns the
preprocessor and the filter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from runtime.core.acting_inputs import (
    InputDict,
    input_dict_columns,
    memory_inputs,
    refuse_unread_inputs,
    single_call_inputs,
)
from runtime.core.distributions import ActionDistribution, Deterministic
from runtime.core.exploration import Exploration, build_exploration
from runtime.core.exploration.exploration import exploration_actions
from runtime.core.image_obs import model_obs, uint8_images
from runtime.core.lean_acting import lean_actions
from runtime.core.learner import Learner
from runtime.core.module import ActorCriticModule, RLModule
from runtime.core.module_spec import ModuleSpec, custom_module_class
from runtime.core.policy_estimates import PolicyEstimates
from runtime.core.policy_learning import PolicyLearning
from runtime.core.sample_batch import SampleBatch
from runtime.core.settings import settings_of
from runtime.core.space_support import SpaceTypes, check_spaces
from runtime.core.view_requirements import ViewRequirements, policy_view_requirements
from runtime.env.action_processing import action_processor

if TYPE_CHECKING:
    from runtime.core.learner_group import LearnerGroup

Array = npt.NDArray[Any]
S = TypeVar("S")
#: A postprocessing step: adds columns to a fragment's ``(T, N)`` columns, in place.
Postprocessor = Callable[[dict[str, Array], "TorchPolicy"], None]
#: The exploration strategies of the policy-gradient family.
SAMPLING_EXPLORATIONS = ("StochasticSampling", "Random")


@dataclass(frozen=True)
class PolicySettings:
    explore: bool


class TorchPolicy(PolicyLearning, PolicyEstimates):
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
        #: The rollout worker it acts in (0: the driver's), for what is seeded per worker.
        self.worker_index = worker_index
        #: uint8 frames of a uint8 image space reach the model as they are, as in the reference.
        self.keep_uint8_obs = uint8_images(observation_space)
        self.action_space = action_space
        self.config = config
        self.device = device or torch.device("cpu")
        self.module_class = custom_module_class(module_class, config)
        self.module = self.module_class(observation_space, action_space, config).to(self.device)
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
        self._learner_group: tuple[LearnerGroup, str] | None = None
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

    @property
    def model(self) -> nn.Module:
        """The module's main network (the catalog model for the policy-gradient family)."""
        model: nn.Module = getattr(self.module, "model", self.module)
        return model

    @property
    def has_critic(self) -> bool:
        return self.module.has_critic

    # ------------------------------------------------------------------ acting

    def _obs(self, obs: Array) -> dict[str, torch.Tensor]:
        tensor = torch.from_numpy(model_obs(obs, self.keep_uint8_obs)).to(self.device)
        return {SampleBatch.OBS: tensor}

    def is_recurrent(self) -> bool:
        """True when the policy's model has memory (``get_initial_state()`` is not empty)."""
        return self.module.is_recurrent

    def get_initial_state(self) -> list[Array]:
        """The state an episode starts from: one numpy array per state tensor, without a batch
        dimension (empty for a model without memory)."""
        return [s.detach().cpu().numpy() for s in self.module.get_initial_state()]

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
        accepted and, as no model here reads infos, unused; so are ``episodes`` (the
        reference's input for models that read them; none here does).
        """
        del episodes  # an input of the reference's call that no model here reads
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
                memory_inputs(
                    self,
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
        actions, logp = exploration_actions(self.exploration, chosen, dist, len(dist_inputs))
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

    def compute_actions_from_input_dict(
        self,
        input_dict: InputDict,
        explore: bool | None = None,
        timestep: int | None = None,
        episodes: Any = None,
    ) -> tuple[Array, list[Any], dict[str, Array]]:
        """``compute_actions`` on the columns of a batched input dict (a ``SampleBatch`` or a
        dict): ``obs``, ``state_in_<i>``, ``prev_actions``, ``prev_rewards`` and ``infos``, as
        the reference's reads them (``runtime.core.acting_inputs``)."""
        method = "compute_actions_from_input_dict"
        del episodes  # an input of the reference's call that no model here reads
        inputs = input_dict_columns(method, input_dict)
        return self.compute_actions(
            np.asarray(inputs.obs),
            inputs.state,
            inputs.prev_actions,
            inputs.prev_rewards,
            inputs.infos,
            explore=explore,
            timestep=timestep,
        )

    def compute_single_action(
        self,
        obs: Any = None,
        state: list[Any] | None = None,
        *,
        prev_action: Any = None,
        prev_reward: Any = None,
        info: Any = None,
        input_dict: InputDict | None = None,
        episode: Any = None,
        explore: bool | None = None,
        timestep: int | None = None,
        unsquash_action: bool | None = None,
        clip_action: bool | None = None,
    ) -> tuple[Any, list[Any], dict[str, Any]]:
        """``compute_actions`` for one preprocessed observation: ``(action, state_out, extra)``,
        with the reference's keywords, as strictly: a model with memory takes ``state`` (each
        array without a batch dimension; the initial state when not given; ``[]`` is none);
        ``prev_action``, ``prev_reward`` and ``info`` are taken always and reach the models
        that read them (a model with memory, where it reads previous actions or rewards).
        ``input_dict`` (unbatched columns, read as ``compute_actions_from_input_dict`` reads
        them) replaces all of these; ``episode``, which no model here reads, is accepted and
        unused. The action is in the policy's coordinates, as the reference's policy returns
        it; ``unsquash_action=True`` maps a bounded Box's ``[-1, 1]`` onto its bounds and
        ``clip_action=True`` clips to them, as the env receives actions."""
        method = "compute_single_action"
        del episode  # an input of the reference's call that no model here reads
        given = single_call_inputs(
            method,
            input_dict,
            "obs",
            obs=obs,
            state=state,
            prev_action=prev_action,
            prev_reward=prev_reward,
            info=info,
        )
        state = given.state
        prev_action, prev_reward = given.prev_actions, given.prev_rewards
        if not self.module.is_recurrent:
            refuse_unread_inputs(method, state=state or None)
            prev_action = prev_reward = None  # read only by a model with memory
        actions, states, extra = self.compute_actions(
            np.asarray(given.obs)[None],
            [np.asarray(s)[None] for s in state] if state else None,
            None if prev_action is None else np.asarray(prev_action)[None],
            None if prev_reward is None else np.asarray([prev_reward], dtype=np.float32),
            None if given.infos is None else [given.infos],
            explore=explore,
            timestep=timestep,
        )
        # The reference advances the timestep with every observation acted on (see
        # ``Acting._compute``); the samplers' rounds set it from the env steps sampled.
        self.global_timestep += 1
        action = actions[0]
        if unsquash_action or clip_action:
            process = action_processor(self.action_space, bool(unsquash_action), bool(clip_action))
            action = process(action)
        return action, [s[0] for s in states], {k: v[0] for k, v in extra.items()}

    @property
    def view_requirements(self) -> ViewRequirements:
        """The columns the policy's model reads and writes and those its samplers record, with
        their spaces (the reference's ``Policy.view_requirements``; read-only)."""
        model_views = getattr(self.model, "view_requirements", None)
        if model_views is None:
            model_views = self.module.view_requirements
        return policy_view_requirements(model_views, self.observation_space)

    # ------------------------------------------------------------------ postprocessing

    def postprocess_fragment(self, columns: dict[str, Array]) -> None:
        """Run the algorithm's postprocessing steps on a fragment's ``(T, N)`` columns (after
        the exploration's ``postprocess_fragment`` where it has one)."""
        if self._exploration_postprocess:
            self.exploration.postprocess_fragment(self, columns)
        for step in self.postprocessing:
            step(columns, self)


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
