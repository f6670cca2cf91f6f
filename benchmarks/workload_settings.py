"""What every side of ``real_workloads.py`` runs: the envs, each row's settings (one set, read by
our side, Stable-Baselines3's and the CleanRL-style loops alike), the rows themselves, and the
timed window each side measures its env steps per second over.

Standard library only: the module is imported by the interpreter that has SB3 as well as by
ours, and by the parent, which imports neither torch side.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

#: The Atari game of every Atari row. A ``NoFrameskip-v4`` id (no sticky actions, no frame
#: skip of its own), so that every side puts the same DeepMind preprocessing over it: 30 no-ops
#: at most after a reset, 4 frames per action max-pooled over the last two, a lost life ends
#: the episode, FIRE after a reset, 84x84 grayscale frames, the last 4 stacked, rewards clipped
#: to their sign. One env step is one action (4 frames) on every side.
ATARI_ENV = "BreakoutNoFrameskip-v4"
MUJOCO_ENV = "HalfCheetah-v5"

#: The Nature DQN conv stack ``[out_channels, kernel, stride, padding]`` ("valid" everywhere:
#: 84x84 frames -> 20x20 -> 9x9 -> 7x7, 3,136 features), then a 512-unit ReLU layer.
NATURE_CONV = ((32, 8, 4, "valid"), (64, 4, 2, "valid"), (64, 3, 1, "valid"))
NATURE_HIDDEN = 512


@dataclass(frozen=True)
class PPOSettings:
    """PPO: ``num_envs`` envs stepped in lockstep for ``num_steps`` each per iteration, then
    ``epochs`` shuffled passes over the batch in minibatches of ``minibatch``."""

    num_envs: int
    num_steps: int
    minibatch: int
    epochs: int
    lr: float
    clip: float
    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    gamma: float
    gae_lambda: float
    #: MLP policies: the policy's and the value function's (separate) hidden layers, ReLU.
    hiddens: tuple[int, ...] = ()
    #: MLP policies: observations (and, on SB3's side, rewards) normalised as the zoo does.
    normalize: bool = False
    #: Adam's epsilon (SB3's and CleanRL's PPO: 1e-5).
    adam_eps: float = 1e-5

    @property
    def batch(self) -> int:
        return self.num_envs * self.num_steps


#: CleanRL's ``ppo_atari.py`` (the RL Zoo's Atari PPO too, without its decaying schedules).
ATARI_PPO = PPOSettings(
    num_envs=8,
    num_steps=128,
    minibatch=256,
    epochs=4,
    lr=2.5e-4,
    clip=0.1,
    ent_coef=0.01,
    vf_coef=0.5,
    max_grad_norm=0.5,
    gamma=0.99,
    gae_lambda=0.95,
)


def zoo_halfcheetah_ppo(num_envs: int) -> PPOSettings:
    """The RL Zoo's PPO for HalfCheetah (``hyperparams/ppo.yml``, tuned for ``-v3``, used for
    the later versions): 512 steps per env, minibatches of 64, 20 epochs, normalised
    observations and rewards, separate [256, 256] ReLU networks, log-std starting at -2."""
    return PPOSettings(
        num_envs=num_envs,
        num_steps=512,
        minibatch=64,
        epochs=20,
        lr=2.0633e-05,
        clip=0.1,
        ent_coef=0.000401762,
        vf_coef=0.58096,
        max_grad_norm=0.8,
        gamma=0.98,
        gae_lambda=0.92,
        hiddens=(256, 256),
        normalize=True,
    )


ZOO_LOG_STD_INIT = -2.0


@dataclass(frozen=True)
class ActorCriticSettings:
    """SAC and TD3: one env, one gradient step per env step from ``learning_starts`` on."""

    hiddens: tuple[int, ...]
    actor_lr: float
    critic_lr: float
    batch: int
    tau: float
    gamma: float
    buffer: int
    learning_starts: int


#: Stable-Baselines3 2.x's SAC defaults (MlpPolicy), which CleanRL's loop is set to here.
SAC = ActorCriticSettings((256, 256), 3e-4, 3e-4, 256, 0.005, 0.99, 1_000_000, 100)
#: Stable-Baselines3 2.x's TD3 defaults (MlpPolicy: [400, 300]; batch 256, lr 1e-3).
TD3 = ActorCriticSettings((400, 300), 1e-3, 1e-3, 256, 0.005, 0.99, 1_000_000, 100)
TD3_POLICY_DELAY = 2
TD3_TARGET_NOISE = 0.2
TD3_TARGET_NOISE_CLIP = 0.5
#: Gaussian exploration noise of TD3's actions (the zoo's for MuJoCo; SB3 has none by default).
TD3_EXPLORATION_STD = 0.1


@dataclass(frozen=True)
class DQNSettings:
    """DQN on Atari: the Nature network, one gradient step every ``train_freq`` env steps."""

    buffer: int = 100_000
    learning_starts: int = 1000
    train_freq: int = 4
    batch: int = 32
    target_update: int = 1000
    lr: float = 1e-4
    gamma: float = 0.99
    max_grad_norm: float = 10.0
    #: Epsilon from 1.0 down to ``final_eps`` over this many env steps.
    exploration_steps: int = 10_000
    final_eps: float = 0.01


DQN = DQNSettings()


@dataclass(frozen=True)
class AsyncAtariSettings:
    """IMPALA and APPO on Atari with remote rollout workers (the atari_async row): the 8 envs
    of ``ATARI_PPO`` split over ``workers`` workers, fragments of ``fragment`` steps per env,
    train batches of at least ``train_batch`` env steps (the fragments ready when that many are
    in: two or more), each learned on ``passes`` times, a gradient step on all its rows each
    time. So every row goes through the learner ``passes`` times, as through PPO's 4 epochs of
    minibatches of 256: the learner's work per env step is the sync PPO's (in fewer gradient
    steps where a batch holds more than 256 rows), and the ratio of env steps/s is the
    pipeline's: sampling on worker processes beside learning, against sampling then learning
    in one process."""

    workers: int = 2
    envs_per_worker: int = ATARI_PPO.num_envs // 2
    fragment: int = 32
    train_batch: int = ATARI_PPO.minibatch
    passes: int = ATARI_PPO.epochs


ASYNC_ATARI = AsyncAtariSettings()

SIDES = ("rlconf", "sb3", "loop")
#: The sides of atari_async, all ours: the two asynchronous algorithms and the sync PPO of
#: atari_ppo (``num_workers=0``).
ASYNC_SIDES = ("appo", "impala", "sync_ppo")
#: atari_ppo's second side of ours: the same config with the sub-envs as one ale-py vector env
#: (``gym_env_vectorize_mode="vector_entry_point"``).
VECTOR_SIDE = "rlconf_vec"
#: The sides our runtime runs (in this interpreter).
OUR_SIDES = ("rlconf", VECTOR_SIDE, *ASYNC_SIDES)


@dataclass(frozen=True)
class Row:
    """One workload: its sides, the env steps each side runs before timing (``warmup``,
    counted from the start: learning starts, a first iteration), the timed env steps at
    ``--steps 1`` (at least one iteration of the side's loop is timed), and the goals: the
    least ratio of the env steps/s of each side in ``ours`` to each other side's."""

    name: str
    title: str
    sides: tuple[str, ...]
    warmup: int
    window: int
    goals: dict[str, float] = field(default_factory=dict)
    #: The sides whose env steps/s are set against each side of ``goals``.
    ours: tuple[str, ...] = ("rlconf",)
    #: The most our bytes per stored transition may be, as a ratio of SB3's (DQN).
    bytes_goal: float | None = None


ROWS: dict[str, Row] = {
    row.name: row
    for row in (
        Row(
            "atari_ppo",
            f"PPO on {ATARI_ENV}, CleanRL's ppo_atari settings (8 envs x 128 steps)",
            ("rlconf", VECTOR_SIDE, "sb3", "loop"),
            warmup=ATARI_PPO.batch,
            window=3 * ATARI_PPO.batch,
            goals={"sb3": 1.5, "loop": 0.8},
            ours=("rlconf", VECTOR_SIDE),
        ),
        Row(
            "sac_halfcheetah",
            f"SAC on {MUJOCO_ENV}, SB3's defaults ([256, 256], batch 256, 1 update per step)",
            SIDES,
            warmup=SAC.learning_starts + 100,
            window=1500,
            goals={"sb3": 1.3, "loop": 0.9},
        ),
        Row(
            "td3_halfcheetah",
            f"TD3 on {MUJOCO_ENV}, SB3's defaults ([400, 300], batch 256, 1 update per step)",
            SIDES,
            warmup=TD3.learning_starts + 100,
            window=1500,
            goals={"sb3": 1.3, "loop": 0.9},
        ),
        Row(
            "ppo_halfcheetah_1env",
            f"PPO on {MUJOCO_ENV}, the RL Zoo's settings, 1 env",
            ("rlconf", "sb3"),
            warmup=zoo_halfcheetah_ppo(1).batch,
            window=4 * zoo_halfcheetah_ppo(1).batch,
            goals={"sb3": 1.3},
        ),
        Row(
            "ppo_halfcheetah_4envs",
            f"PPO on {MUJOCO_ENV}, the RL Zoo's settings, 4 envs",
            ("rlconf", "sb3"),
            warmup=zoo_halfcheetah_ppo(4).batch,
            window=2 * zoo_halfcheetah_ppo(4).batch,
            goals={"sb3": 1.3},
        ),
        Row(
            "dqn_atari",
            f"DQN on {ATARI_ENV}, Nature CNN, replay of {DQN.buffer:,} 84x84x4 frames",
            ("rlconf", "sb3"),
            warmup=DQN.learning_starts + 500,
            window=2000,
            bytes_goal=1.2,
        ),
        Row(
            "atari_async",
            f"APPO and IMPALA on {ATARI_ENV}, {ASYNC_ATARI.workers} remote workers x "
            f"{ASYNC_ATARI.envs_per_worker} envs, vs our sync PPO (num_workers=0, "
            f"{ATARI_PPO.num_envs} envs)",
            ASYNC_SIDES,
            warmup=ATARI_PPO.batch,
            # Twice atari_ppo's: the async sides' trained steps go up a batch of 256 or more at
            # a time, seen at the next result.
            window=6 * ATARI_PPO.batch,
            goals={"sync_ppo": 1.3},
            ours=("appo", "impala"),
        ),
    )
}

#: ``--rows`` names that stand for several rows.
ROW_GROUPS = {"ppo_halfcheetah": ("ppo_halfcheetah_1env", "ppo_halfcheetah_4envs")}


def ppo_settings(row: str) -> PPOSettings:
    """The PPO settings of a PPO row."""
    if row == "atari_ppo":
        return ATARI_PPO
    if row == "ppo_halfcheetah_1env":
        return zoo_halfcheetah_ppo(1)
    if row == "ppo_halfcheetah_4envs":
        return zoo_halfcheetah_ppo(4)
    raise ValueError(f"ppo_settings: {row!r} is not a PPO row")


class Window:
    """The timed window of a side: told the env steps (and gradient steps) so far at each
    boundary of its loop (after an env step, or after a whole iteration of sampling and
    learning), it starts at the first boundary at or after ``start`` env steps and ends at the
    first boundary ``length`` env steps or more after that."""

    def __init__(self, start: int, length: int) -> None:
        self.start = start
        self.length = max(1, length)
        self._begin: tuple[float, int, int] | None = None
        self._end: tuple[float, int, int] | None = None

    @property
    def done(self) -> bool:
        return self._end is not None

    def observe(self, env_steps: int, updates: int = 0) -> bool:
        """Note a boundary at ``env_steps``; True once the window is complete."""
        now = time.perf_counter()
        if self._begin is None:
            if env_steps >= self.start:
                self._begin = (now, env_steps, updates)
        elif self._end is None and env_steps - self._begin[1] >= self.length:
            self._end = (now, env_steps, updates)
        return self._end is not None

    def result(self) -> dict[str, Any]:
        """The timed env steps, seconds, env steps/s and gradient steps in the window."""
        if self._begin is None or self._end is None:
            raise RuntimeError("Window.result: the timed window did not complete")
        seconds = self._end[0] - self._begin[0]
        steps = self._end[1] - self._begin[1]
        return {
            "timed_steps": steps,
            "timed_s": round(seconds, 3),
            "env_steps_per_s": round(steps / seconds, 2),
            "updates": self._end[2] - self._begin[2],
        }
