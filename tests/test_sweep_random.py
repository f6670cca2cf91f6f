"""rlconf's own search domains, rlconf.sweep.random, and handing domains to Tune."""

from __future__ import annotations

import math
import pickle
import random
import sys
from collections.abc import Callable
from typing import Any

import pytest
from ray import tune
from ray.tune.search.sample import Categorical, Float, Integer
from ray.tune.search.variant_generator import generate_variants

from rlconf import ConfigError, PolicySpec, PPOConfig, sweep
from rlconf.frozen import FrozenDict, freeze
from rlconf.search_space import candidates, is_search_space, search_space_paths, to_tune_space
from tests import child_process

# ---------------------------------------------------------------------------- domains


def _draws(domain: sweep.Domain[Any], n: int = 2000, seed: int = 0) -> list[Any]:
    rng = random.Random(seed)
    return [domain.sample(rng) for _ in range(n)]


def test_uniform_samples_floats_spread_over_its_bounds() -> None:
    values = _draws(sweep.uniform(0.9, 0.999))
    assert all(isinstance(v, float) and 0.9 <= v <= 0.999 for v in values)
    # Both ends of the range are reached, not only its middle.
    assert min(values) < 0.91 and max(values) > 0.989
    assert sweep.uniform(0, 1).candidates() == [0.0, 1.0]


def test_loguniform_gives_each_decade_the_same_share() -> None:
    values = _draws(sweep.loguniform(1e-4, 1e-1), n=3000)
    assert all(1e-4 <= v <= 1e-1 for v in values)
    per_decade = [sum(1 for v in values if 10**e <= v < 10 ** (e + 1)) for e in (-4, -3, -2)]
    # A plain uniform draw would put ~90% of the values in the top decade.
    assert all(800 < count < 1200 for count in per_decade), per_decade
    assert sweep.loguniform(1e-4, 1e-2).candidates() == [1e-4, 1e-2]


def test_loguniform_samples_stay_inside_bounds_that_exp_log_does_not_round_trip() -> None:
    # Bounds an ulp or two apart, where exp(log(x)) rounds past them (with glibc, every draw
    # unclamped lands outside); a sample outside them would not have been validated.
    domain = sweep.loguniform(1e-4, 1e-4 * (1 + 2**-51))
    assert all(domain.lower <= v <= domain.upper for v in _draws(domain, n=500))


def test_randint_upper_bound_is_exclusive() -> None:
    assert set(_draws(sweep.randint(0, 3), n=300)) == {0, 1, 2}
    assert sweep.randint(32, 129).candidates() == [32, 128]


def test_choice_draws_every_value_and_keeps_its_own_copy() -> None:
    hidden = [[64], [128, 128]]
    domain = sweep.choice(hidden)
    hidden[0].append(1)
    assert domain.candidates() == [[64], [128, 128]]
    drawn = _draws(domain, n=200)
    assert [64] in drawn and [128, 128] in drawn
    assert set(_draws(sweep.choice(("a", "b", "c")), n=200)) == {"a", "b", "c"}


def test_reprs_read_like_the_calls() -> None:
    assert repr(sweep.uniform(0.9, 0.999)) == "uniform(0.9, 0.999)"
    assert repr(sweep.loguniform(1e-4, 1e-2)) == "loguniform(0.0001, 0.01)"
    assert repr(sweep.loguniform(1, 8, base=2)) == "loguniform(1.0, 8.0, base=2.0)"
    assert repr(sweep.choice([[64], "x"])) == "choice([[64], 'x'])"
    assert repr(sweep.randint(32, 129)) == "randint(32, 129)"


def test_domains_are_values_equal_hashable_and_picklable() -> None:
    domain = sweep.choice([{"fcnet_hiddens": [64]}, None])
    assert domain == sweep.choice([{"fcnet_hiddens": [64]}, None])
    assert hash(sweep.uniform(0, 1)) == hash(sweep.uniform(0.0, 1.0))
    assert pickle.loads(pickle.dumps(domain)) == domain
    with pytest.raises(AttributeError):
        sweep.uniform(0, 1).lower = 2.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("make", "where", "field", "problem"),
    [
        (lambda: sweep.uniform(1.0, 1.0), "uniform", "upper", "must be greater than lower"),
        (lambda: sweep.uniform(2.0, 1.0), "uniform", "upper", "must be greater than lower"),
        (lambda: sweep.uniform(0.0, math.inf), "uniform", "upper", "must be finite"),
        (lambda: sweep.uniform(math.nan, 1.0), "uniform", "lower", "must be finite"),
        (lambda: sweep.uniform("0", 1.0), "uniform", "lower", "must be a number"),  # type: ignore[arg-type]
        (lambda: sweep.uniform(True, 2.0), "uniform", "lower", "must be a number"),
        (lambda: sweep.uniform(-1e308, 1e308), "uniform", "upper", "overflows"),
        (lambda: sweep.loguniform(0.0, 1.0), "loguniform", "lower", "must be > 0"),
        (lambda: sweep.loguniform(-1.0, 1.0), "loguniform", "lower", "must be > 0"),
        (lambda: sweep.loguniform(1e-2, 1e-4), "loguniform", "upper", "greater than lower"),
        (lambda: sweep.loguniform(1e-4, 1e-2, base=1), "loguniform", "base", "not 1"),
        (lambda: sweep.loguniform(1e-4, 1e-2, base=0), "loguniform", "base", "> 0"),
        (lambda: sweep.loguniform(1e-4, 1e-2, base=math.inf), "loguniform", "base", "finite"),
        (lambda: sweep.choice([]), "choice", "values", "has no values"),
        (lambda: sweep.choice({1, 2}), "choice", "values", "not a set"),  # type: ignore[arg-type]
        (lambda: sweep.choice("abc"), "choice", "values", "not a str"),
        (lambda: sweep.randint(1.5, 3), "randint", "lower", "must be an int"),  # type: ignore[arg-type]
        (lambda: sweep.randint(0, 3.0), "randint", "upper", "must be an int"),  # type: ignore[arg-type]
        (lambda: sweep.randint(False, 3), "randint", "lower", "must be an int"),
        (lambda: sweep.randint(3, 3), "randint", "upper", "must be greater than lower (3)"),
    ],
)
def test_bad_domain_arguments_name_the_argument_value_and_what_is_allowed(
    make: Callable[[], object], where: str, field: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as info:
        make()
    assert info.value.where == f"rlconf.sweep.{where}()"
    (issue,) = info.value.issues
    assert issue.field == field and problem in issue.problem
    assert issue.has_value and issue.allowed


def test_every_bad_bound_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        sweep.loguniform(math.nan, "x", base=1)  # type: ignore[arg-type]
    assert [issue.field for issue in info.value.issues] == ["lower", "upper", "base"]


# -------------------------------------------------------------------------- Tune


def test_to_tune_returns_the_equivalent_tune_domain() -> None:
    uniform = sweep.uniform(0.9, 0.999).to_tune()
    assert isinstance(uniform, Float) and (uniform.lower, uniform.upper) == (0.9, 0.999)
    assert type(uniform.sampler) is type(tune.uniform(0.0, 1.0).sampler)
    log = sweep.loguniform(1e-4, 1e-2, base=2).to_tune()
    assert isinstance(log, Float) and (log.lower, log.upper) == (1e-4, 1e-2)
    assert type(log.sampler) is type(tune.loguniform(1e-4, 1e-2).sampler)
    integer = sweep.randint(32, 129).to_tune()
    assert isinstance(integer, Integer) and (integer.lower, integer.upper) == (32, 129)
    category = sweep.choice([[64], [128]]).to_tune()
    assert isinstance(category, Categorical) and category.categories == [[64], [128]]
    # Tune gets plain lists, not the read-only ones the domain keeps.
    assert all(type(c) is list for c in category.categories)
    assert all(32 <= v < 129 for v in integer.sample(size=200))


def test_domains_are_search_spaces_whose_candidates_are_their_representatives() -> None:
    domain = sweep.randint(1, 5)
    assert is_search_space(domain) and candidates(domain) == [1, 4]
    assert candidates(sweep.choice([5, 10])) == [5, 10]


# ------------------------------------------------------------------ domains in configs


def test_domain_fields_are_stored_validated_and_kept_by_to_dict() -> None:
    lr = sweep.loguniform(1e-4, 1e-2)
    config = PPOConfig().training(
        lr=lr,  # type: ignore[arg-type]
        num_sgd_iter=sweep.randint(5, 11),  # type: ignore[arg-type]
        model=sweep.choice([{"fcnet_hiddens": [64]}, {"fcnet_hiddens": [32, 32]}]),  # type: ignore[arg-type]
    )
    assert config.lr is lr and config.to_dict()["lr"] == lr
    config.validate()  # cross-field checks skip fields that hold a search space
    assert config.copy().to_dict()["num_sgd_iter"] == sweep.randint(5, 11)
    with pytest.raises(ConfigError, match=r"candidate -1\.0"):
        PPOConfig().training(lr=sweep.uniform(-1.0, 1.0))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="candidate 0"):
        PPOConfig().training(num_sgd_iter=sweep.randint(0, 10))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"candidate 1\.0"):
        # uniform draws floats, which an int field refuses.
        PPOConfig().training(num_sgd_iter=sweep.uniform(1, 10))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="candidate 'x'"):
        PPOConfig().training(gamma=sweep.choice([0.9, "x"]))  # type: ignore[arg-type]


def test_json_refuses_domains_like_tune_spaces() -> None:
    config = PPOConfig().training(lr=sweep.loguniform(1e-4, 1e-2))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="lr: holds a Tune search space, which has no JSON"):
        config.to_json()


def test_search_space_paths_finds_every_space_in_nested_values() -> None:
    config = (
        PPOConfig()
        .environment(env_config={"sizes": (sweep.randint(1, 4), 2), "plain": [1, (2, 3)]})
        .training(lr=sweep.loguniform(1e-4, 1e-2), gamma=tune.grid_search([0.9, 0.99]))  # type: ignore[arg-type]
        .evaluation(evaluation_config={"gamma": tune.uniform(0.5, 0.6)})
        .multi_agent(policies={"p": PolicySpec(config={"lr": sweep.uniform(0.1, 0.2)})})
    )
    expected = {
        "env_config.sizes[0]",
        "lr",
        "gamma",
        "evaluation_config.gamma",
        "policies.p.config.lr",
    }
    assert set(search_space_paths(config._values)) == expected
    paths = search_space_paths(config.to_dict())
    assert "multiagent.policies.p.config.lr" in paths and len(paths) == len(expected)
    assert search_space_paths(PPOConfig().environment("CartPole-v1")._values) == []
    nested = freeze({"a": [{"b": sweep.choice([1])}], 3: {"grid_search": [1]}})
    assert isinstance(nested, FrozenDict)
    assert search_space_paths(nested) == ["a[0].b", "[3]"]


def test_to_tune_space_makes_tune_resolvable_plain_values() -> None:
    grid = tune.grid_search([0.9, 0.99])
    tune_domain = tune.uniform(0.5, 0.6)
    value = freeze(
        {
            "lr": sweep.loguniform(1e-4, 1e-2),
            "gamma": grid,
            "eval": {"gamma": tune_domain},
            "pair": (sweep.randint(1, 3), 2),
            "plain": (1, {"x": [2]}),
            "spec": PolicySpec(config={"lr": sweep.uniform(0.1, 0.2)}),
            "fixed": PolicySpec(),
        }
    )
    space = to_tune_space(value)
    assert type(space) is dict and type(space["eval"]) is dict
    assert isinstance(space["lr"], Float) and space["eval"]["gamma"] is tune_domain
    assert space["gamma"] == grid and type(space["gamma"]["grid_search"]) is list
    assert isinstance(space["pair"], list) and isinstance(space["pair"][0], Integer)
    assert space["plain"] == (1, {"x": [2]}) and type(space["plain"][1]["x"]) is list
    assert isinstance(space["spec"]["config"]["lr"], Float)
    assert space["fixed"] == PolicySpec()
    assert search_space_paths(value) == search_space_paths(space)


def test_tune_resolves_to_tune_space_of_a_config() -> None:
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(
            lr=sweep.loguniform(1e-4, 1e-2),  # type: ignore[arg-type]
            gamma=tune.grid_search([0.9, 0.99]),  # type: ignore[arg-type]
            num_sgd_iter=sweep.choice([5, 10]),  # type: ignore[arg-type]
        )
        .evaluation(evaluation_config={"gamma": sweep.uniform(0.5, 0.6)})
        .multi_agent(policies={"p": PolicySpec(config={"lr": sweep.uniform(0.1, 0.2)})})
    )
    variants = [spec for _, spec in generate_variants(to_tune_space(config.to_dict()))]
    assert len(variants) == 2
    resolved = [PPOConfig.from_dict(spec) for spec in variants]
    assert {c.gamma for c in resolved} == {0.9, 0.99}
    for c in resolved:
        assert search_space_paths(c._values) == []
        assert 1e-4 <= c.lr <= 1e-2 and c["num_sgd_iter"] in (5, 10)
        assert 0.5 <= c["evaluation_config"]["gamma"] <= 0.6
        policy_config = c["policies"]["p"].config
        assert policy_config is not None and 0.1 <= policy_config["lr"] <= 0.2


# ------------------------------------------------------------------------ sweep.random


def test_random_draws_validated_independent_configs() -> None:
    base = PPOConfig().environment("CartPole-v1")
    configs = sweep.random(
        base,
        20,
        seed=0,
        lr=sweep.loguniform(1e-5, 1e-3),
        num_sgd_iter=[5, 10],
        lambda_=sweep.uniform(0.9, 1.0),
        sgd_minibatch_size=sweep.randint(32, 129),
        model=sweep.choice([{"fcnet_hiddens": [64]}, {"fcnet_hiddens": [32, 32]}]),
    )
    assert len(configs) == 20 and all(type(c) is PPOConfig for c in configs)
    for c in configs:
        assert 1e-5 <= c.lr <= 1e-3 and c["num_sgd_iter"] in (5, 10)
        assert 0.9 <= c["lambda"] <= 1.0 and 32 <= c["sgd_minibatch_size"] < 129
        assert c["model"]["fcnet_hiddens"] in ([64], [32, 32])
        # A partial model dict updates the model, as the fluent setter does.
        assert c["model"]["fcnet_activation"] == base["model"]["fcnet_activation"]
    assert len({c.lr for c in configs}) == 20
    configs[0].training(lr=0.5)
    assert configs[1].lr != 0.5 and base.lr == 5e-5


def test_random_follows_the_documented_draw_order() -> None:
    base = PPOConfig().evaluation(evaluation_config={"gamma": sweep.uniform(0.5, 0.6)})
    configs = sweep.random(base, 3, seed=7, num_sgd_iter=[5, 10, 20], lr=sweep.uniform(1e-3, 2e-3))
    rng = random.Random(7)
    expected = []
    for _ in range(3):
        expected.append((rng.choice([5, 10, 20]), rng.uniform(1e-3, 2e-3), rng.uniform(0.5, 0.6)))
    drawn = [(c["num_sgd_iter"], c.lr, c["evaluation_config"]["gamma"]) for c in configs]
    assert drawn == expected


def test_random_is_reproducible_for_a_seed_and_varies_across_seeds() -> None:
    def draw(seed: int | None) -> list[dict[str, Any]]:
        configs = sweep.random(
            PPOConfig(), 5, seed=seed, lr=sweep.loguniform(1e-5, 1e-3), gamma=[0.9, 0.99]
        )
        return [c.to_dict() for c in configs]

    assert draw(3) == draw(3)
    assert draw(3) != draw(4)
    assert draw(None) != draw(None)


def test_random_samples_the_configs_own_domains() -> None:
    base = (
        PPOConfig()
        .training(lr=sweep.loguniform(1e-4, 1e-2), gamma=sweep.uniform(0.9, 0.99))  # type: ignore[arg-type]
        .evaluation(evaluation_config={"explore": sweep.choice([True, False])})
        .multi_agent(
            policies={"default_policy": PolicySpec(config={"lr": sweep.uniform(0.1, 0.2)})}
        )
    )
    configs = sweep.random(base, 10, seed=1, gamma=[0.5])
    for c in configs:
        assert search_space_paths(c._values) == []
        assert 1e-4 <= c.lr <= 1e-2 and c.gamma == 0.5
        policy_config = c["policies"]["default_policy"].config
        assert policy_config is not None and 0.1 <= policy_config["lr"] <= 0.2
    assert {c["evaluation_config"]["explore"] for c in configs} == {True, False}
    assert search_space_paths(base._values) != []  # the base keeps its domains


def test_random_refuses_grids_and_tune_domains_in_the_config() -> None:
    base = (
        PPOConfig()
        .training(lr=tune.grid_search([1e-3, 1e-4]), gamma=tune.uniform(0.9, 0.99))  # type: ignore[arg-type]
        .evaluation(evaluation_config={"gamma": tune.choice([0.5, 0.6])})
    )
    with pytest.raises(ConfigError) as info:
        sweep.random(base, 2)
    issues = {issue.field: issue for issue in info.value.issues}
    assert set(issues) == {"lr", "gamma", "evaluation_config.gamma"}
    assert "grid_search" in issues["lr"].problem and "sweep.grid()" in issues["lr"].allowed
    assert "Tune domain" in issues["gamma"].problem and "Tune" in issues["gamma"].allowed
    # An axis replaces the field's value, search space or not.
    (config,) = sweep.random(base, 1, lr=[1e-3], gamma=[0.9], evaluation_config=[{}])
    assert (config.lr, config.gamma) == (1e-3, 0.9)


def test_random_reports_every_bad_axis_and_argument_before_drawing() -> None:
    with pytest.raises(ConfigError) as info:
        sweep.random(
            PPOConfig(),
            0,
            seed="x",  # type: ignore[arg-type]
            lr=[1e-3, -1.0],
            gamma=sweep.uniform(0.5, 2.0),
            num_wrkers=[1],
            num_sgd_iter=[],
            train_batch_size=tune.randint(100, 200),
            sgd_minibatch_size={"grid_search": [64]},  # type: ignore[arg-type]
            lambda_="0.9",  # type: ignore[arg-type]
        )
    assert info.value.where == "rlconf.sweep.random()"
    by_field = {issue.field: issue for issue in info.value.issues}
    assert list(by_field) == [
        "num_samples",
        "seed",
        "lr",
        "gamma",
        "num_wrkers",
        "num_sgd_iter",
        "train_batch_size",
        "sgd_minibatch_size",
        "lambda_",
    ]
    assert by_field["lr"].value == -1.0
    assert "candidate 2.0" in by_field["gamma"].problem
    assert "Tune domain" in by_field["train_batch_size"].problem
    assert "sweep.grid()" in by_field["sgd_minibatch_size"].allowed
    assert "did you mean" in by_field["num_wrkers"].problem


@pytest.mark.parametrize("num_samples", [0, -1, True, 2.0, "3"])
def test_num_samples_must_be_a_positive_int(num_samples: Any) -> None:
    with pytest.raises(ConfigError, match=r"num_samples=.*must be an int >= 1"):
        sweep.random(PPOConfig(), num_samples, lr=[1e-3])


def test_random_validates_each_sampled_config_and_names_the_draws() -> None:
    with pytest.raises(ConfigError) as info:
        sweep.random(PPOConfig(), 1, seed=0, train_batch_size=[100], lr=[1e-3])
    assert info.value.where == (
        "rlconf.sweep.random() at train_batch_size=100, lr=0.001 (sample 1 of 1)"
    )
    assert "train_batch_size" in [issue.field for issue in info.value.issues]


def test_domains_and_random_work_without_importing_ray() -> None:
    code = (
        "import sys, rlconf\n"
        "from rlconf.search_space import search_space_paths\n"
        "d = rlconf.sweep.uniform(1e-4, 1e-3)\n"
        "c = rlconf.PPOConfig().training(lr=d)\n"
        "assert search_space_paths(c._values) == ['lr']\n"
        "rlconf.sweep.random(c, 3, seed=0, gamma=rlconf.sweep.choice([0.9, 0.99]))\n"
        "print(sorted(m for m in ('ray', 'torch', 'numpy', 'runtime') if m in sys.modules))"
    )
    out = child_process.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
