"""A sweep's checkpoints and TensorBoard events: folders named ``checkpoint_<iteration>`` as
outside Tune, ``keep_checkpoints_num`` / ``checkpoint_score_attr`` (a nested key, with an
iteration that lacks it) deciding which a trial keeps and which is its best, and event files
with the plain tags of ``rlconf train``. One small sweep in a Ray session of its own; the
renaming itself is also checked on plain folders."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from rlconf import PPOConfig, sweep
from rlconf.sweep import SweepSummary
from runtime.sweeps.checkpoint_names import checkpoint_folders, name_by_iteration
from tests.ray_session import local_ray
from tests.sweep_helpers import ReportsProbeScore

#: The slow tier (`python -m pytest -m slow`): Ray sessions with remote actors, clusters and Tune.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SweepSummary[PPOConfig]]:
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0, num_envs_per_worker=2, rollout_fragment_length=32)
        .training(train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=1)
        .training(model={"fcnet_hiddens": [8]}, lr=sweep.grid_search([1e-3, 1e-4]))
        .callbacks(ReportsProbeScore)
        .debugging(seed=0)
    )
    with local_ray():
        yield sweep.run(
            config,
            stop={"training_iteration": 3},
            checkpoint_freq=1,
            keep_checkpoints_num=1,
            checkpoint_score_attr="probe/score",
            local_dir=tmp_path_factory.mktemp("sweeps"),
            name="kept",
            progress=False,
        )


def _names(paths: Iterable[str | Path]) -> list[str]:
    return sorted(Path(p).name for p in paths)


def _iteration(checkpoint: str) -> int:
    state = json.loads((Path(checkpoint) / "algorithm_state.json").read_text())
    return int(state["iteration"])


def test_checkpoints_are_named_by_iteration_and_kept_by_score(
    summary: SweepSummary[PPOConfig],
) -> None:
    trials = {t.config.lr: t for t in summary.trials}
    assert set(trials) == {1e-3, 1e-4} and all(t.iterations == 3 for t in summary.trials)
    # lr 1e-3 scored 1, 5, 2: its best (iteration 2) and its latest are kept. Tune 2.60 by
    # itself would keep only the latest for a nested key.
    peaked = trials[1e-3]
    assert _names(peaked.checkpoints) == ["checkpoint_000002", "checkpoint_000003"]
    assert _names(Path(peaked.path).glob("checkpoint_*")) == _names(peaked.checkpoints)
    assert peaked.checkpoint is not None and Path(peaked.checkpoint).name == "checkpoint_000002"
    assert _iteration(peaked.checkpoint) == 2
    # lr 1e-4 scored 9 at iteration 1 only: later checkpoints carry that 9, and the newest
    # of equal scores is the best, so only the latest is left.
    carried = trials[1e-4]
    assert _names(carried.checkpoints) == ["checkpoint_000003"]
    assert carried.checkpoint == carried.checkpoints[0]
    assert all(
        _iteration(c) == int(Path(c).name[-6:]) for t in summary.trials for c in t.checkpoints
    )


def test_event_files_have_the_plain_tags_of_rlconf_train(summary: SweepSummary[PPOConfig]) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    for trial in summary.trials:
        folder = Path(trial.path)
        assert {"params.json", "result.json", "progress.csv"} <= {p.name for p in folder.iterdir()}
        assert len(list(folder.glob("events.out.tfevents.*"))) == 1
        events = EventAccumulator(str(folder))
        events.Reload()
        tags = events.Tags()["scalars"]
        assert {
            "episode_reward_mean",
            "timesteps_total",
            "info/learner/default_policy/learner_stats/total_loss",
        } <= set(tags)
        assert not [t for t in tags if t.startswith("ray/")]
        results = [json.loads(line) for line in (folder / "result.json").read_text().splitlines()]
        steps = [s.step for s in events.Scalars("episode_reward_mean")]
        assert steps == [r["timesteps_total"] for r in results]
        assert [s.value for s in events.Scalars("probe/score")] == [
            r["probe"]["score"] for r in results if "probe" in r
        ]


# ---------------------------------------------------------------------- the renaming itself


def _checkpoint(folder: Path, name: str, iteration: int) -> None:
    (folder / name).mkdir()
    state = {"format": "rlconf-checkpoint/2", "iteration": iteration}
    (folder / name / "algorithm_state.json").write_text(json.dumps(state))


def test_renaming_settles_collisions_and_leaves_other_folders(tmp_path: Path) -> None:
    # Tune's numbers are the save order: index 1 and 2 both hold iteration 4 (a pause right
    # after a periodic save); index 3 went back to iteration 2 (a PBT exploit).
    _checkpoint(tmp_path, "checkpoint_000000", 2)
    _checkpoint(tmp_path, "checkpoint_000001", 4)
    _checkpoint(tmp_path, "checkpoint_000002", 4)
    _checkpoint(tmp_path, "checkpoint_000003", 3)
    (tmp_path / "checkpoint_000009").mkdir()  # no state file: not a checkpoint, left alone
    renamed = name_by_iteration(tmp_path)
    assert {Path(k).name: Path(v).name for k, v in renamed.items()} == {
        "checkpoint_000000": "checkpoint_000002",
        "checkpoint_000001": "checkpoint_000004_1",
        "checkpoint_000002": "checkpoint_000004",
        # checkpoint_000003 already holds iteration 3.
    }
    assert _names(checkpoint_folders(tmp_path)) == [
        "checkpoint_000002",
        "checkpoint_000003",
        "checkpoint_000004",
        "checkpoint_000004_1",
    ]
    assert (tmp_path / "checkpoint_000009").is_dir()
    assert _iteration(str(tmp_path / "checkpoint_000004")) == 4
    assert name_by_iteration(tmp_path) == {}  # named already: nothing moves
