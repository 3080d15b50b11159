"""A component's defaults are its ParamSpecs' defaults, written nowhere else: generated over every
parameter of every registered component."""

import dataclasses
import importlib
import inspect

import pytest

from rewards.registry import REGISTRY


def _other_value(p):
    if p.type == "bool":
        return not p.default
    if p.type in ("int", "float"):
        return p.max if p.default != p.max else p.min
    if p.type == "str" and p.choices:
        return next(c for c in p.choices if c != p.default)
    return None  # free text and lists: no obviously valid other value


# What a component needs besides defaults to be built at all.
REQUIRED = {"python": {"code": "def reward(completions, **columns):\n    return [0.0]\n"}}

CASES = [
    (info, p, _other_value(p))
    for info in REGISTRY.values()
    for p in info.params
    if _other_value(p) is not None
]


@pytest.mark.parametrize("info", REGISTRY.values(), ids=list(REGISTRY))
def test_constructors_state_no_default_of_their_own(info):
    signature = inspect.signature(info.factory)
    own = [
        name
        for name, param in signature.parameters.items()
        if name != "name" and param.default is not inspect.Parameter.empty
    ]
    assert own == [], f"{info.name} repeats defaults of {own}; take them from its ParamSpecs"
    with pytest.raises(TypeError, match="unknown parameter 'colour'"):
        info.factory(colour=1)


@pytest.mark.parametrize(
    ("info", "p", "value"), CASES, ids=[f"{i.name}.{p.name}" for i, p, _ in CASES]
)
def test_a_changed_paramspec_default_reaches_the_component(monkeypatch, info, p, value):
    monkeypatch.setenv("STUDIO_ALLOW_CODE", "1")
    module = importlib.import_module(info.factory.__module__)
    patched = tuple(dataclasses.replace(q, default=value) if q is p else q for q in module.PARAMS)
    monkeypatch.setattr(module, "PARAMS", patched)
    given = REQUIRED.get(info.name, {})
    assert vars(info.factory(**given)) == vars(info.factory(**given, **{p.name: value}))
    assert vars(info.factory(**given)) != vars(info.factory(**given, **{p.name: p.default}))
