"""The runtime signatures, the static signatures and the section models are one truth."""

from __future__ import annotations

import functools
import inspect
import operator
import typing

import pytest
from typing_extensions import Unpack

from rlconf import A2CConfig, AlgorithmConfig, PGConfig, PPOConfig
from rlconf.frozen import thaw
from rlconf.inert_keys import INERT_KEYS
from rlconf.key_aliases import KEY_ALIASES, canonical_key
from rlconf.method_parameters import method_parameters
from rlconf.section import key_of, pyname_of, strip_annotated

CLASSES = [AlgorithmConfig, PPOConfig, PGConfig, A2CConfig]


def test_ppo_training_signature_lists_base_and_ppo_parameters() -> None:
    params = inspect.signature(PPOConfig.training).parameters
    for name in [
        "lr",
        "gamma",
        "train_batch_size",
        "model",
        "optimizer",
        "clip_param",
        "lambda_",
        "kl_coeff",
        "sgd_minibatch_size",
        "num_sgd_iter",
        "entropy_coeff_schedule",
        "vf_clip_param",
        "grad_clip",
        "lr_schedule",
    ]:
        assert name in params, name
    assert params["lr"].default == 5e-5
    assert params["lr"].kind is inspect.Parameter.KEYWORD_ONLY
    # None only where the optimizers have rates of their own (refused elsewhere by validate()).
    assert params["lr"].annotation == float | None
    assert "clip_param" not in inspect.signature(PGConfig.training).parameters
    assert "microbatch_size" in inspect.signature(A2CConfig.training).parameters


def test_bound_methods_have_the_signature_without_self() -> None:
    params = list(inspect.signature(PPOConfig().environment).parameters)
    assert params[0] == "env" and "self" not in params


def test_help_text_documents_each_parameter() -> None:
    doc = PPOConfig.training.__doc__ or ""
    assert "clip_param: PPO's surrogate clipping range. Default: 0.3." in doc


def _declared_hint(config_class: type[AlgorithmConfig], method: str, name: str) -> object:
    """The hint of the field a keyword of ``method`` sets: its section's own, or for another
    name of a key (``Section.keywords``) the field of the section that declares that key; an
    inert key's accepted values' type."""
    section = config_class._sections[method]
    if name in section.names:
        return section.hints[name]
    key = canonical_key(name)
    owner = config_class._info().section_of_key.get(key)
    if owner is None:
        return functools.reduce(operator.or_, {type(v) for v in INERT_KEYS[key].accepted})
    alias = KEY_ALIASES.get(name)
    if alias is not None and alias.convert is not None:
        return owner.hints[name]  # a value turned into the key's: typed as RLlib takes it
    return owner.hints[pyname_of(key)]


def _default(config_class: type[AlgorithmConfig], name: str) -> object:
    alias = KEY_ALIASES.get(name)
    if alias is not None and alias.convert is not None:
        return None
    key = canonical_key(key_of(name))
    if key in INERT_KEYS:
        return INERT_KEYS[key].accepted[0]
    return thaw(config_class._class_defaults()[key])


@pytest.mark.parametrize("config_class", CLASSES)
def test_runtime_signatures_match_the_sections(config_class: type[AlgorithmConfig]) -> None:
    for method, section in config_class._sections.items():
        signature = inspect.signature(getattr(config_class, method))
        params = dict(signature.parameters)
        assert params.pop("self").kind is inspect.Parameter.POSITIONAL_ONLY
        extra = [p.name for p in method_parameters(config_class, method)][len(section.names) :]
        assert list(params) == [*section.ordered_names, *extra], method
        for name, param in params.items():
            assert param.default == _default(config_class, name), (method, name)
            hint = _declared_hint(config_class, method, name)
            assert param.annotation == strip_annotated(hint), (method, name)
            expected_kind = (
                inspect.Parameter.POSITIONAL_OR_KEYWORD
                if name in section.positional
                else inspect.Parameter.KEYWORD_ONLY
            )
            assert param.kind is expected_kind, (method, name)
            doc = getattr(config_class, method).__doc__ or ""
            assert f"    {name}: " in doc and (
                name not in section.names or section.description(name)
            ), f"{method}({name}) has no one-line doc"


def _static_fields(config_class: type[AlgorithmConfig], method: str) -> dict[str, object]:
    """What mypy sees: the parameters of the method as written (generated, or a user's
    ``**kwargs: Unpack[...]``), by name, without ``self``."""
    func = inspect.getattr_static(config_class, method)._func
    hints = typing.get_type_hints(func, include_extras=True)
    fields: dict[str, object] = {}
    for name, hint in hints.items():
        if name in ("return", "self"):
            continue
        if typing.get_origin(hint) is Unpack:
            typed_dict = typing.get_args(hint)[0]
            fields.update(typing.get_type_hints(typed_dict, include_extras=True))
        else:
            fields[name] = hint
    return fields


@pytest.mark.parametrize("config_class", CLASSES)
def test_static_signatures_match_the_sections(config_class: type[AlgorithmConfig]) -> None:
    for method in config_class._sections:
        static = _static_fields(config_class, method)
        assert set(static) == {p.name for p in method_parameters(config_class, method)}, method
        for name, hint in static.items():
            declared = _declared_hint(config_class, method, name)
            assert repr(strip_annotated(hint)) == repr(strip_annotated(declared)), (method, name)
