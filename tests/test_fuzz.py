"""Whatever a user passes to a fluent method, the only exception is ConfigError."""

from __future__ import annotations

import contextlib
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlconf import A2CConfig, AlgorithmConfig, ConfigError, PGConfig, PPOConfig

FIELD_NAMES = sorted(
    {
        name
        for cls in (PPOConfig, A2CConfig)
        for section in cls._sections.values()
        for name in section.names
    }
)

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.just(math.nan)
    | st.just(object())
    | st.just(print)
    | st.just(int)
    | st.sampled_from(["auto", "torch", "tf", "PACK", "episodes", "sampler", "MeanStdFilter"])
    | st.just({"grid_search": []})
    | st.just({"grid_search": [1, "a"]}),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8) | st.sampled_from(FIELD_NAMES), inner, max_size=4)
        | st.sets(st.integers(), max_size=3)
    ),
    max_leaves=8,
)
names = st.sampled_from(FIELD_NAMES) | st.text(min_size=1, max_size=15) | st.just("self")
config_classes = st.sampled_from([AlgorithmConfig, PPOConfig, PGConfig, A2CConfig])
methods = st.sampled_from(list(AlgorithmConfig._sections))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config_classes, methods, st.dictionaries(names, values, max_size=4))
def test_fluent_methods_raise_only_config_error(cls, method, kwargs) -> None:  # type: ignore[no-untyped-def]
    config = cls()
    try:
        result = getattr(config, method)(**kwargs)
    except ConfigError:
        return
    assert result is config
    try:
        config.validate()
        config.to_dict()
        cls.from_dict(config.to_dict())
    except ConfigError:
        pass


@settings(max_examples=200, deadline=None)
@given(config_classes, st.dictionaries(names, values, max_size=5))
def test_dict_paths_raise_only_config_error(cls, data) -> None:  # type: ignore[no-untyped-def]
    for call in (cls.from_dict, cls().update_from_dict, lambda d: cls.overrides(**d)):
        with contextlib.suppress(ConfigError):
            call(data)
