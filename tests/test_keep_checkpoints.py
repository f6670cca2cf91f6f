"""``keep_checkpoints_num`` and ``checkpoint_score_attr``: ``CheckpointKeeper``'s rules on plain
folders, the experiment-file keys and ``rlconf train`` flags with their errors, the arguments of
``rlconf.sweep.run`` refused before Ray starts, and the keeper on a tiny real PPO run."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from rlconf import ConfigError, PPOConfig, sweep
from rlconf.checkpoint_keeper import CheckpointKeeper, ScoreTracker, parse_score_attr
from rlconf.cli import build_parser, main
from rlconf.experiment import Overrides, load_experiments, make_experiment

EVAL = "evaluation/episode_reward_mean"


def _folder(root: Path, name: str) -> str:
    path = root / name
    path.mkdir()
    (path / "algorithm_state.json").write_text("{}")
    return str(path)


def _reward(value: float) -> dict[str, Any]:
    return {"episode_reward_mean": value}


def _evaluated(value: float) -> dict[str, Any]:
    return {"evaluation": {"episode_reward_mean": value}}


def _left(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir())


# ---------------------------------------------------------------------- the keeper's rules


def test_without_a_score_the_newest_are_kept(tmp_path: Path) -> None:
    keeper = CheckpointKeeper(2, None)
    deleted = []
    for i in range(1, 5):
        deleted += keeper.saved(_folder(tmp_path, f"checkpoint_{i:06d}"), _reward(i))
    assert _left(tmp_path) == ["checkpoint_000003", "checkpoint_000004"]
    assert [Path(p).name for p in deleted] == ["checkpoint_000001", "checkpoint_000002"]
    assert keeper.best == str(tmp_path / "checkpoint_000004")  # no score: the latest


def test_the_best_by_score_are_kept_and_always_the_latest(tmp_path: Path) -> None:
    keeper = CheckpointKeeper(1, "episode_reward_mean")
    for i, reward in enumerate([10.0, 50.0, 30.0, 20.0], start=1):
        keeper.saved(_folder(tmp_path, f"checkpoint_{i:06d}"), _reward(reward))
    # The best (50) and the latest, which a run goes on from, as Tune keeps them.
    assert _left(tmp_path) == ["checkpoint_000002", "checkpoint_000004"]
    assert keeper.best == str(tmp_path / "checkpoint_000002")
    assert [k.score for k in keeper.kept] == [50.0, 20.0]


def test_min_prefix_keeps_the_lowest(tmp_path: Path) -> None:
    assert parse_score_attr("min-episode_len_mean") == ("episode_len_mean", "min")
    assert parse_score_attr(EVAL) == (EVAL, "max")
    keeper = CheckpointKeeper(2, "min-episode_len_mean")
    for i, length in enumerate([30.0, 10.0, 20.0, 40.0, 50.0], start=1):
        keeper.saved(_folder(tmp_path, f"c{i}"), {"episode_len_mean": length})
    assert _left(tmp_path) == ["c2", "c3", "c5"]  # the two lowest, and the latest
    assert keeper.best == str(tmp_path / "c2")


def test_a_tie_deletes_the_older_first(tmp_path: Path) -> None:
    keeper = CheckpointKeeper(1, "episode_reward_mean")
    for name, reward in (("a", 5.0), ("b", 5.0), ("c", 1.0)):
        keeper.saved(_folder(tmp_path, name), _reward(reward))
    assert _left(tmp_path) == ["b", "c"]
    assert keeper.best == str(tmp_path / "b")


def test_a_result_without_the_key_carries_the_latest_score(tmp_path: Path) -> None:
    keeper = CheckpointKeeper(1, EVAL)
    keeper.saved(_folder(tmp_path, "c1"), _reward(1.0))  # no evaluation yet: unscored
    keeper.observe({**_reward(2.0), **_evaluated(10.0)})  # an iteration without a checkpoint
    keeper.saved(_folder(tmp_path, "c2"), _reward(3.0))  # scored 10, from the evaluation
    assert _left(tmp_path) == ["c2"]  # the unscored one ranks below every scored one
    keeper.saved(_folder(tmp_path, "c3"), _evaluated(4.0))
    keeper.saved(_folder(tmp_path, "c4"), _evaluated(math.nan))  # nan: 4.0 carried
    assert [(Path(k.path).name, k.score) for k in keeper.kept] == [("c2", 10.0), ("c4", 4.0)]
    assert keeper.best == str(tmp_path / "c2")


def test_unscored_checkpoints_go_by_age_and_never_stop_the_run(tmp_path: Path) -> None:
    keeper = CheckpointKeeper(2, "custom_metrics/never_mean")
    for i in range(1, 5):
        keeper.saved(_folder(tmp_path, f"c{i}"), _reward(float(i)))
    assert _left(tmp_path) == ["c3", "c4"]
    assert keeper.best == str(tmp_path / "c4")  # none scored: the newest


def test_the_same_folder_saved_again_is_one_checkpoint(tmp_path: Path) -> None:
    keeper = CheckpointKeeper(1, None)
    first = _folder(tmp_path, "checkpoint_000004")
    keeper.saved(first, _reward(1.0))
    # checkpoint_at_end (or Ctrl-C's checkpoint) right after a checkpoint_freq save.
    assert keeper.saved(first, _reward(1.0)) == []
    assert _left(tmp_path) == ["checkpoint_000004"] and len(keeper.kept) == 1


def test_only_folders_it_was_given_are_deleted(tmp_path: Path) -> None:
    other = _folder(tmp_path, "checkpoint_000001")  # written by an earlier run: not ours
    keeper = CheckpointKeeper(1, None)
    gone = str(tmp_path / "checkpoint_000002")  # given, but removed meanwhile
    keeper.saved(gone, _reward(1.0))
    keeper.saved(_folder(tmp_path, "checkpoint_000003"), _reward(2.0))
    assert _left(tmp_path) == ["checkpoint_000001", "checkpoint_000003"]
    assert Path(other).is_dir()


def test_keeping_all_deletes_nothing_and_still_names_the_best(tmp_path: Path) -> None:
    keeper = CheckpointKeeper(None, "episode_reward_mean")
    for i, reward in enumerate([3.0, 9.0, 1.0]):
        assert keeper.saved(_folder(tmp_path, f"c{i}"), _reward(reward)) == []
    assert len(_left(tmp_path)) == 3 and keeper.best == str(tmp_path / "c1")
    assert CheckpointKeeper(None, None).best is None


def test_score_tracker_forgets_on_reset() -> None:
    tracker = ScoreTracker(EVAL)
    assert tracker.observe(_evaluated(3.0)) == 3.0
    assert tracker.observe({}) == 3.0
    tracker.reset()
    assert tracker.observe({}) is None


# ---------------------------------------------------------------------- files, flags, errors


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "experiments.yaml"
    path.write_text(text)
    return path


def test_experiment_file_keys_are_read(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "cartpole:\n"
        "  run: PPO\n"
        "  env: CartPole-v1\n"
        "  checkpoint_freq: 5\n"
        "  keep_checkpoints_num: 3\n"
        "  checkpoint_score_attr: min-episode_len_mean\n",
    )
    (experiment,) = load_experiments(path)
    assert experiment.keep_checkpoints_num == 3
    assert experiment.checkpoint_score_attr == "min-episode_len_mean"
    (flagged,) = load_experiments(
        path, Overrides(keep_checkpoints_num=1, checkpoint_score_attr="episode_reward_mean")
    )
    assert flagged.keep_checkpoints_num == 1
    assert flagged.checkpoint_score_attr == "episode_reward_mean"
    (plain,) = load_experiments(_write(tmp_path, "p:\n  run: PPO\n  env: CartPole-v1\n"))
    assert plain.keep_checkpoints_num is None and plain.checkpoint_score_attr is None


def test_every_mistake_is_named_with_its_value_and_what_is_allowed(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "a:\n"
        "  run: PPO\n"
        "  env: CartPole-v1\n"
        "  checkpoint_freq: 1\n"
        "  keep_checkpoints_num: 0\n"
        "  checkpoint_score_attr: episode_reward_meen\n"
        "b:\n"
        "  run: PPO\n"
        "  env: CartPole-v1\n"
        "  checkpoint_at_end: true\n"
        "  keep_checkpoints_num: two\n"
        "  checkpoint_score_attr: evaluation/episode_reward_mean\n"
        "c:\n"
        "  run: PPO\n"
        "  env: CartPole-v1\n"
        "  checkpoint_freq: 1\n"
        "  keep_checkpoints_num: true\n"
        "  checkpoint_score_attr: date\n",
    )
    with pytest.raises(ConfigError) as error:
        load_experiments(path)
    message = str(error.value)
    assert "a.keep_checkpoints_num=0 (int): must be an integer >= 1" in message
    assert "a.checkpoint_score_attr='episode_reward_meen' (str): is not a result key" in message
    assert "did you mean 'episode_reward_mean'" in message
    assert "min-KEY when lower is better" in message
    assert "b.keep_checkpoints_num='two'" in message
    assert "b.checkpoint_score_attr='evaluation/episode_reward_mean' (str): is an evaluation " in (
        message
    )
    assert "no evaluation runs" in message
    assert "c.keep_checkpoints_num=True (bool)" in message
    assert "c.checkpoint_score_attr='date' (str): is text, not a number" in message


def test_a_score_without_checkpoints_says_nothing_would_be_kept(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "quiet:\n  run: PPO\n  env: CartPole-v1\n  checkpoint_score_attr: episode_reward_mean\n",
    )
    with pytest.raises(ConfigError, match="nothing would be kept") as error:
        load_experiments(path)
    assert "quiet.checkpoint_score_attr='episode_reward_mean'" in str(error.value)
    assert "checkpoint_freq: N or checkpoint_at_end: true" in str(error.value)
    # A flag that turns checkpoints on makes it valid; one that turns them off names the flag.
    (experiment,) = load_experiments(path, Overrides(checkpoint_freq=2))
    assert experiment.checkpoint_freq == 2
    with pytest.raises(ConfigError, match=r"--checkpoint-score-attr='min-episode_len_mean'"):
        make_experiment(
            "PPO",
            {"run": "PPO", "env": "CartPole-v1"},
            Overrides(checkpoint_score_attr="min-episode_len_mean"),
        )
    # Keeping N without a score and without checkpoints is harmless: allowed.
    quiet = make_experiment(
        "PPO", {"run": "PPO", "env": "CartPole-v1"}, Overrides(keep_checkpoints_num=2)
    )
    assert quiet.keep_checkpoints_num == 2


def test_train_flags_reach_the_experiment_and_bad_ones_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(
        [
            "train",
            "--run",
            "PPO",
            "--keep-checkpoints-num",
            "2",
            "--checkpoint-score-attr",
            "min-episode_len_mean",
        ]
    )
    assert args.keep_checkpoints_num == 2
    assert args.checkpoint_score_attr == "min-episode_len_mean"
    code = main(
        [
            "train",
            "--run",
            "PPO",
            "--env",
            "CartPole-v1",
            "--checkpoint-freq",
            "1",
            "--keep-checkpoints-num",
            "0",
            "--checkpoint-score-attr",
            "evaluation/episode_reward_mena",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "--keep-checkpoints-num=0 (int): must be an integer >= 1" in err
    assert "--checkpoint-score-attr='evaluation/episode_reward_mena' (str): is not a result" in err


def test_sweep_run_refuses_bad_arguments_before_ray_starts(tmp_path: Path) -> None:
    config = PPOConfig().environment("CartPole-v1")
    with pytest.raises(ConfigError) as error:
        sweep.run(
            config,
            checkpoint_freq=1,
            keep_checkpoints_num=0,
            checkpoint_score_attr="episode_reward_meen",
            local_dir=tmp_path,
        )
    message = str(error.value)
    assert "rlconf.sweep.run()" in message
    assert "keep_checkpoints_num=0 (int): must be an integer >= 1" in message
    assert "checkpoint_score_attr='episode_reward_meen' (str): is not a result key" in message
    with pytest.raises(ConfigError, match="nothing would be kept"):
        sweep.run(config, checkpoint_score_attr="episode_reward_mean", local_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------- a real run


def test_the_keeper_on_a_real_ppo_run(tmp_path: Path) -> None:
    # What rlconf train does with --checkpoint-freq 1 --keep-checkpoints-num 2
    # --checkpoint-score-attr min-episode_len_mean, in a loop of its own.
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_workers=0)
        .training(train_batch_size=200, sgd_minibatch_size=50, num_sgd_iter=1)
        .debugging(seed=0, logger_config={"logdir": str(tmp_path / "run")})
        .build()
    )
    keeper = CheckpointKeeper(2, "min-episode_len_mean")
    lengths = {}
    try:
        for _ in range(4):
            result = algo.train()
            path = algo.save()
            lengths[Path(path).name] = result["episode_len_mean"]
            keeper.saved(path, result)
    finally:
        algo.stop()
    kept = sorted(p.name for p in (tmp_path / "run").glob("checkpoint_*"))
    # Shortest episodes first; on a tie the newer checkpoint is the better one.
    ranked = sorted(lengths, key=lambda name: (lengths[name], -int(name.rsplit("_", 1)[1])))
    assert set(kept) == {*ranked[:2], "checkpoint_000004"}
    assert Path(str(keeper.best)).name == ranked[0]
    assert all((tmp_path / "run" / name / "algorithm_state.json").is_file() for name in kept)
