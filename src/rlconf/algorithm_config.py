"""``AlgorithmConfig``: the fluent, validated config every algorithm config builds on.

The class body holds the fluent methods, generated from the sections by
``rlconf.fluent_codegen`` (every field a typed keyword with its default and one-line doc, for
editors, mypy and ``inspect.signature``); reading, dict input, JSON, checks and copying come
from the ``rlconf.config_*`` mixins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Self

from rlconf.config_base import ConfigBase
from rlconf.config_checks import DEFAULT_POLICY_ID as DEFAULT_POLICY_ID
from rlconf.config_checks import ConfigChecks
from rlconf.config_json import ConfigJson
from rlconf.config_lifecycle import ConfigLifecycle
from rlconf.config_lifecycle import _rebuild as _rebuild  # pickles made before the split use it
from rlconf.config_mapping import ConfigMapping
from rlconf.config_routing import ConfigRouting
from rlconf.errors import ConfigError, FieldIssue
from rlconf.exploration_types import ExplorationConfig
from rlconf.field_types import (
    CallableValue,
    ClassRef,
    ClassValue,
    ClipRewards,
    FunctionRef,
    JsonDict,
    ListOf,
    NonNegFloat,
    NonNegInt,
    PosFloat,
    PosInt,
    SpaceRef,
    UnitFloat,
)
from rlconf.fluent import NOT_SET, SelfConfig, fluent
from rlconf.inert_keys import INERT_KEYS
from rlconf.model_config import MODEL_DEFAULTS, ModelConfigDict
from rlconf.policy_spec import Policies
from rlconf.section import Section
from rlconf.sections.callbacks import CALLBACKS
from rlconf.sections.debugging import DEBUGGING
from rlconf.sections.environment import ENVIRONMENT
from rlconf.sections.evaluation import EVALUATION
from rlconf.sections.exploration import EXPLORATION
from rlconf.sections.fault_tolerance import FAULT_TOLERANCE
from rlconf.sections.framework import FRAMEWORK
from rlconf.sections.multi_agent import MULTI_AGENT
from rlconf.sections.offline_data import OFFLINE_DATA
from rlconf.sections.python_environment import PYTHON_ENVIRONMENT
from rlconf.sections.reporting import REPORTING
from rlconf.sections.resources import RESOURCES
from rlconf.sections.rollouts import ROLLOUTS
from rlconf.sections.training import TRAINING


class AlgorithmConfig(
    ConfigLifecycle, ConfigChecks, ConfigJson, ConfigRouting, ConfigMapping, ConfigBase
):
    """A validated, fluent config of an RL algorithm.

    Each method sets one section (``.training(lr=...)``, ``.rollouts(num_workers=...)``) and
    returns the config; a bad value raises :class:`ConfigError` at that call. Values read as
    attributes (``config.lr``) or items (``config["lr"]``), and are set the same two ways
    (``config["lambda"] = 0.9`` is validated like ``.training(lambda_=0.9)``); ``to_dict()``
    gives the reference's flat dict.

    Reference keys that rlconf accepts only at their "off" value (``eager_tracing: False``,
    see ``rlconf.inert_keys``) are kept apart from the fields: ``to_dict()`` gives them back,
    and building the algorithm names them in a warning.
    """

    __slots__ = ("_frozen", "_inert", "_values")

    algo_name: ClassVar[str | None] = None
    _sections: ClassVar[dict[str, Section]] = {
        s.method: s
        for s in (
            ENVIRONMENT,
            FRAMEWORK,
            ROLLOUTS,
            TRAINING,
            RESOURCES,
            EVALUATION,
            EXPLORATION,
            MULTI_AGENT,
            CALLBACKS,
            FAULT_TOLERANCE,
            REPORTING,
            DEBUGGING,
            OFFLINE_DATA,
            PYTHON_ENVIRONMENT,
        )
    }
    #: Defaults of this algorithm that differ from the sections' (by config key).
    _algo_defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(self._info().defaults))
        object.__setattr__(self, "_inert", {})
        object.__setattr__(self, "_frozen", False)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in AlgorithmConfig.__slots__:
            object.__setattr__(self, name, value)
            return
        self._assign(name, value, f"{type(self).__name__}.{name} = ...")

    # <fluent methods: generated from the sections by python -m rlconf.fluent_codegen>
    @fluent
    def environment(
        self: SelfConfig,
        /,
        env: str | ClassValue | None = None,
        *,
        env_config: JsonDict = {},  # noqa: B006
        observation_space: SpaceRef | None = None,
        action_space: SpaceRef | None = None,
        env_task_fn: FunctionRef | None = None,
        render_env: bool = False,
        record_env: bool | str = False,
        clip_rewards: ClipRewards = None,
        normalize_actions: bool = True,
        clip_actions: bool = False,
        disable_env_checking: bool = False,
    ) -> SelfConfig:
        """Sets the environment and how its observations, rewards and actions are treated.

        Args:
            env: Registered name, gymnasium id, import path or env class. Default: None.
            env_config: Arguments for the env creator, passed as an EnvContext. Default: {}.
            observation_space: The policies' observation space; None infers it. Default: None.
            action_space: The policies' action space; None infers it. Default: None.
            env_task_fn: fn(train_result, task_settable_env, env_context) -> new task. Default:
                None.
            render_env: Render the env on the first sampling worker; not available, True is refused
                at build (render in a callback or an env wrapper). Default: False.
            record_env: Record videos: False, True (in the logdir) or a folder; not available,
                anything but False is refused at build (wrap the env with
                gymnasium.wrappers.RecordVideo in the env creator). Default: False.
            clip_rewards: None: no clipping; True: sign(r); x: clip to [-x, x]; [lo, hi]. Default:
                None.
            normalize_actions: Learn in a normalised action space; unsquash to Box bounds. Default:
                True.
            clip_actions: Clip actions to the env's Box bounds. Default: False.
            disable_env_checking: Skip the checks of what the env returns: for a multi-agent env
                every step's dicts ('__all__', rewards of agents that acted, observations in their
                spaces); for a single-agent env each reset observation in its space. Default: False.
        """
        return self._set("environment", locals())

    @fluent
    def framework(
        self: SelfConfig,
        /,
        framework: Literal["torch"] = "torch",
    ) -> SelfConfig:
        """Sets the deep-learning framework.

        Args:
            framework: The deep-learning framework. No effect in rlconf: 'torch', the only accepted
                value, is what the runtime always uses. Default: "torch".
        """
        return self._set("framework", locals())

    @fluent
    def rollouts(
        self: SelfConfig,
        /,
        *,
        num_workers: NonNegInt = 2,
        num_envs_per_worker: PosInt = 1,
        create_env_on_driver: bool = False,
        rollout_fragment_length: PosInt | Literal["auto"] = 200,
        batch_mode: Literal["truncate_episodes", "complete_episodes"] = "truncate_episodes",
        horizon: PosInt | None = None,
        soft_horizon: bool = False,
        no_done_at_end: bool = False,
        remote_worker_envs: bool = False,
        remote_env_batch_wait_ms: NonNegFloat = 0.0,
        preprocessor_pref: Literal["deepmind", "rllib"] | None = "deepmind",
        observation_filter: Literal["NoFilter", "MeanStdFilter"] = "NoFilter",
        synchronize_filters: bool = True,
        compress_observations: bool = False,
        sample_async: bool = False,
        _disable_preprocessor_api: bool = False,
        _disable_action_flattening: bool = False,
    ) -> SelfConfig:
        """Sets the rollout workers and how they sample experience.

        Args:
            num_workers: Remote rollout worker actors; 0 samples in the driver. Default: 2.
            num_envs_per_worker: Sub-envs per worker, stepped with one batched forward pass.
                Default: 1.
            create_env_on_driver: Also create an env on the driver when num_workers > 0. Default:
                False.
            rollout_fragment_length: Steps per sub-env in each sample() fragment; 'auto':
                ceil(train_batch_size / max(1, num_workers) / num_envs_per_worker). Default: 200.
            batch_mode: Cut fragments at rollout_fragment_length or at episode ends. Default:
                "truncate_episodes".
            horizon: Force an episode end after this many steps. Default: None.
            soft_horizon: At the horizon, end the episode without resetting the env. Default: False.
            no_done_at_end: Do not mark the last step of an episode as done. Default: False.
            remote_worker_envs: Run each sub-env in its own actor process; not available, True is
                refused at build. Default: False.
            remote_env_batch_wait_ms: How long to wait for remote sub-envs when polling; only
                matters with remote_worker_envs, so any value but 0 is refused at build. Default:
                0.0.
            preprocessor_pref: Observations always go through rlconf's preprocessor (flattened,
                one-hot; images stay images for conv models), which is what 'deepmind' gives for
                non-Atari envs; the DeepMind Atari wrappers are not applied (wrap Atari envs in the
                env creator). 'rllib' and None are refused at build. Default: "deepmind".
            observation_filter: Element-wise observation filter. Default: "NoFilter".
            synchronize_filters: After each iteration send the driver's filter statistics (merged
                from all workers) back to the remote workers; False: each remote worker keeps
                normalising with its own statistics. Default: True.
            compress_observations: LZ4-compress observations in sample batches; not available, True
                is refused at build (output_compress_columns compresses output files). Default:
                False.
            sample_async: Sample in a background thread (slightly off-policy); not available, True
                is refused at build. Default: False.
            _disable_preprocessor_api: Hand raw observations to the model, without preprocessing;
                not available, True is refused at build. Default: False.
            _disable_action_flattening: Keep nested actions as they are; the runtime's action spaces
                are flat (Box, Discrete, MultiDiscrete), True is refused at build. Default: False.
        """
        return self._set("rollouts", locals())

    @fluent
    def training(
        self: SelfConfig,
        /,
        *,
        gamma: UnitFloat = 0.99,
        lr: PosFloat = 0.0001,
        train_batch_size: PosInt = 200,
        model: ModelConfigDict = MODEL_DEFAULTS,
        optimizer: JsonDict = {},  # noqa: B006
    ) -> SelfConfig:
        """Sets the learner's hyperparameters.

        Args:
            gamma: Discount factor of the MDP. Default: 0.99.
            lr: Learning rate. Default: 0.0001.
            train_batch_size: Steps per training batch, concatenated from fragments. Default: 200.
            model: Model catalog options; updates the current ones. Default: MODEL_DEFAULTS.
            optimizer: Extra arguments for the optimizer. Default: {}.
        """
        return self._set("training", locals())

    @fluent
    def resources(
        self: SelfConfig,
        /,
        *,
        num_gpus: NonNegFloat = 0.0,
        _fake_gpus: bool = False,
        num_cpus_per_worker: NonNegFloat = 1.0,
        num_gpus_per_worker: NonNegFloat = 0.0,
        custom_resources_per_worker: dict[str, NonNegFloat] = {},  # noqa: B006
        num_cpus_for_driver: NonNegFloat = 1.0,
        placement_strategy: Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"] = "PACK",
        placement_timeout_s: PosFloat = 60.0,
    ) -> SelfConfig:
        """Sets the resources reserved for the learner and each worker.

        Args:
            num_gpus: GPUs for the learner (driver); may be a fraction. Default: 0.0.
            _fake_gpus: Run the learner on CPU and reserve no GPU (for testing). Default: False.
            num_cpus_per_worker: CPUs per rollout worker. Default: 1.0.
            num_gpus_per_worker: GPUs per rollout worker; may be a fraction. Default: 0.0.
            custom_resources_per_worker: Custom Ray resources per rollout worker. Default: {}.
            num_cpus_for_driver: CPUs for the learner (driver): reserved in a Tune trial, and the
                number of threads torch uses there (unless OMP_NUM_THREADS is set). Default: 1.0.
            placement_strategy: How the placement group's bundles are spread over nodes. Default:
                "PACK".
            placement_timeout_s: Seconds to wait for the placement group's resources before failing.
                Default: 60.0.
        """
        return self._set("resources", locals())

    @fluent
    def evaluation(
        self: SelfConfig,
        /,
        *,
        evaluation_interval: NonNegInt | None = None,
        evaluation_duration: PosInt | Literal["auto"] = 10,
        evaluation_duration_unit: Literal["episodes", "timesteps"] = "episodes",
        evaluation_parallel_to_training: bool = False,
        in_evaluation: bool = False,
        evaluation_config: JsonDict = {},  # noqa: B006
        evaluation_num_workers: NonNegInt = 0,
        custom_eval_function: FunctionRef | None = None,
        always_attach_evaluation_results: bool = False,
    ) -> SelfConfig:
        """Sets when and how the policy is evaluated.

        Args:
            evaluation_interval: Evaluate every this many train() calls; None or 0: never. Default:
                None.
            evaluation_duration: Episodes or timesteps per evaluation, or 'auto' (parallel only).
                Default: 10.
            evaluation_duration_unit: What evaluation_duration counts. Default: "episodes".
            evaluation_parallel_to_training: Run evaluation concurrently with the training step.
                Default: False.
            in_evaluation: Set on the evaluation workers' config; not for users. Default: False.
            evaluation_config: Overrides of this config for evaluation (e.g. explore=False).
                Default: {}.
            evaluation_num_workers: Remote evaluation workers; 0 evaluates in the driver. Default:
                0.
            custom_eval_function: fn(algorithm, eval_workers[, train_future]) -> metrics dict.
                Default: None.
            always_attach_evaluation_results: Attach the latest evaluation results to every result.
                Default: False.
        """
        return self._set("evaluation", locals())

    @fluent
    def exploration(
        self: SelfConfig,
        /,
        *,
        explore: bool = True,
        exploration_config: ExplorationConfig = {"type": "StochasticSampling"},  # noqa: B006
    ) -> SelfConfig:
        """Sets the exploration behaviour.

        Args:
            explore: Default of compute_action(s)' explore switch. Default: True.
            exploration_config: {'type': built-in name, import path or class, **constructor args}.
                Default: {"type": "StochasticSampling"}.
        """
        return self._set("exploration", locals())

    @fluent
    def multi_agent(
        self: SelfConfig,
        /,
        *,
        policies: Policies = {},  # noqa: B006
        policy_map_capacity: PosInt = 100,
        policy_map_cache: str | None = None,
        policy_mapping_fn: FunctionRef | None = None,
        policies_to_train: list[str] | FunctionRef | None = None,
        observation_fn: FunctionRef | None = None,
        replay_mode: Literal["independent", "lockstep"] = "independent",
        count_steps_by: Literal["env_steps", "agent_steps"] = "env_steps",
    ) -> SelfConfig:
        """Sets the policies of a multi-agent setup, how agents map to them and which of them learn.
        Needs a runtime.MultiAgentEnv (or runtime.make_multi_agent(...)). replay_mode='lockstep' is
        refused at build (each policy replays its own transitions).

        Args:
            policies: Policy ids (set or list), or a dict of id -> PolicySpec. Default: {}.
            policy_map_capacity: Policies kept in memory before the least used are stored. Default:
                100.
            policy_map_cache: Folder for policies evicted from memory. Default: None.
            policy_mapping_fn: fn(agent_id, episode, worker) -> policy id. Default: None.
            policies_to_train: Ids of the policies to train, fn(policy_id, batch) -> bool, or all.
                Default: None.
            observation_fn: Function that enhances agent observations. Default: None.
            replay_mode: Replay agent transitions independently per policy; 'lockstep' is refused at
                build. Default: "independent".
            count_steps_by: Count batch sizes in env steps or in individual agent steps. Default:
                "env_steps".
        """
        return self._set("multi_agent", locals())

    @fluent
    def callbacks(
        self: SelfConfig,
        /,
        callbacks: ClassRef | None = None,
    ) -> SelfConfig:
        """Sets the callbacks class whose hooks run during training.

        Args:
            callbacks: A DefaultCallbacks subclass; None means runtime.DefaultCallbacks. Default:
                None.
        """
        return self._set("callbacks", locals())

    @fluent
    def fault_tolerance(
        self: SelfConfig,
        /,
        *,
        ignore_worker_failures: bool = False,
        recreate_failed_workers: bool = False,
    ) -> SelfConfig:
        """Sets how worker failures are handled.

        Args:
            ignore_worker_failures: Keep training on the healthy workers when one fails. Default:
                False.
            recreate_failed_workers: Replace a failed worker with a new one. Default: False.
        """
        return self._set("fault_tolerance", locals())

    @fluent
    def reporting(
        self: SelfConfig,
        /,
        *,
        metrics_episode_collection_timeout_s: NonNegFloat = 180.0,
        metrics_num_episodes_for_smoothing: PosInt = 100,
        min_time_s_per_reporting: NonNegFloat | None = None,
        min_train_timesteps_per_reporting: NonNegInt | None = None,
        min_sample_timesteps_per_reporting: NonNegInt | None = None,
    ) -> SelfConfig:
        """Sets how metrics are smoothed and how much work one train() call does.

        Args:
            metrics_episode_collection_timeout_s: Wait at most this long for workers' episode
                metrics. No effect in rlconf: episode metrics come back with each sample() call,
                never waited for. Default: 180.0.
            metrics_num_episodes_for_smoothing: Episode metrics are averaged over this many
                episodes. Default: 100.
            min_time_s_per_reporting: Repeat training steps until this many seconds. Default: None.
            min_train_timesteps_per_reporting: Repeat training steps until this many trained steps.
                Default: None.
            min_sample_timesteps_per_reporting: Repeat training steps until this many sampled steps.
                Default: None.
        """
        return self._set("reporting", locals())

    @fluent
    def debugging(
        self: SelfConfig,
        /,
        *,
        log_level: Literal["DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL"] = "WARN",
        log_sys_usage: bool = True,
        fake_sampler: bool = False,
        seed: NonNegInt | None = None,
        logger_config: JsonDict | None = None,
    ) -> SelfConfig:
        """Sets logging, seeding and other debugging aids.

        Args:
            log_level: Log level of the runtime and its workers. Default: "WARN".
            log_sys_usage: Add CPU and memory usage to every result (under 'perf'). Default: True.
            fake_sampler: Each rollout worker samples once and returns that batch on every later
                sample() call (to measure learning speed without env cost). Default: False.
            seed: Seed for torch, numpy, envs; offset per worker. Default: None.
            logger_config: Settings for the result loggers. Default: None.
        """
        return self._set("debugging", locals())

    @fluent
    def offline_data(
        self: SelfConfig,
        /,
        *,
        input_: str | ListOf[str] | dict[str, NonNegFloat] | CallableValue = "sampler",
        input_config: JsonDict = {},  # noqa: B006
        actions_in_input_normalized: bool = False,
        input_evaluation: ListOf[Literal["is", "wis", "simulation"]] = [],  # noqa: B006
        postprocess_inputs: bool = False,
        shuffle_buffer_size: NonNegInt = 0,
        output: str | CallableValue | None = None,
        output_compress_columns: ListOf[str] = ["obs", "new_obs"],  # noqa: B006
        output_max_file_size: PosInt = 67108864,
    ) -> SelfConfig:
        """Sets where experiences are read from and written to.

        Args:
            input_: 'sampler', a path or glob, a list of files, {source: probability} or
                fn(io_context) -> reader. Default: "sampler".
            input_config: Settings for a custom input reader; custom readers are not available, so
                anything but {} is refused at build. Default: {}.
            actions_in_input_normalized: The input files hold actions in the policy's normalised
                space (files written by output with normalize_actions=True do); False: Box actions
                are normalised when read (with normalize_actions=True). Default: False.
            input_evaluation: Off-policy estimators run on offline input; none is available, so
                anything but [] is refused at build (the reference's default ['is', 'wis'] only acts
                on offline input). Default: [].
            postprocess_inputs: Run trajectory postprocessing on offline input; not available, True
                is refused at build. Default: False.
            shuffle_buffer_size: Shuffle input batches through a buffer of this size; input is read
                in file order, so anything but 0 is refused at build. Default: 0.
            output: None, 'logdir', a folder, or fn(io_context) -> writer. Default: None.
            output_compress_columns: Sample batch columns compressed in output files. Default:
                ["obs", "new_obs"].
            output_max_file_size: Bytes per output file before a new one is started. Default:
                67108864.
        """
        return self._set("offline_data", locals())

    @fluent
    def python_environment(
        self: SelfConfig,
        /,
        *,
        extra_python_environs_for_driver: dict[str, str] = {},  # noqa: B006
        extra_python_environs_for_worker: dict[str, str] = {},  # noqa: B006
    ) -> SelfConfig:
        """Sets environment variables of the driver and worker processes.

        Args:
            extra_python_environs_for_driver: Environment variables set in the driver process at
                build. Default: {}.
            extra_python_environs_for_worker: Environment variables set in every remote worker
                process. Default: {}.
        """
        return self._set("python_environment", locals())
    # </fluent methods>

    # ------------------------------------------------------------------------- setting

    def _set(self, method: str, given: Mapping[str, Any]) -> Self:
        """Validate and store the arguments of one fluent call: ``given`` is its ``locals()``
        (the config itself and the parameters left ``NOT_SET`` are dropped) or its ``**kwargs``
        (where a keyword named ``self`` is an unknown key like any other)."""
        where = f"{type(self).__name__}.{method}()"
        kwargs = {
            k: v
            for k, v in given.items()
            if v is not NOT_SET and not (k == "self" and v is self)
        }
        self._check_unfrozen(where)
        section = self._sections[method]
        validated, issues = self._validate_for_section(section, kwargs, where, "")
        if issues:
            raise ConfigError(where, issues)
        self._store(validated)
        return self

    def _validate_for_section(
        self,
        section: Section,
        given: Mapping[str, Any],
        where: str,
        prefix: str,
    ) -> tuple[dict[str, Any], list[FieldIssue]]:
        """Validate keyword arguments of one fluent method; results by config key."""
        known: dict[str, Any] = {}
        inert: dict[str, Any] = {}
        issues: list[FieldIssue] = []
        names = set(section.names)
        for pyname, value in given.items():
            if pyname in names:
                known[pyname] = value
            elif pyname in INERT_KEYS and INERT_KEYS[pyname].method == section.method:
                inert.update(self._check_inert(pyname, value, prefix, issues))
            else:
                issues.append(self._unknown_key_issue(prefix + pyname, pyname, section))
        validated, issues = self._finish(section, known, issues, prefix, self._values)
        validated.update(inert)
        return validated, issues
