"""Each numeric reward parameter's range is its ParamSpec's ``min``/``max``, checked by the same
``Bounds`` as the run config's fields: generated over every parameter of every component."""

import math

import pytest

from rewards.errors import RewardSpecError
from rewards.registry import REGISTRY

NUMERIC = [
    (info, p) for info in REGISTRY.values() for p in info.params if p.type in ("int", "float")
]


@pytest.mark.parametrize(("info", "p"), NUMERIC, ids=[f"{i.name}.{p.name}" for i, p in NUMERIC])
def test_a_parameter_just_outside_its_bounds_is_refused_in_its_words(info, p):
    assert p.bounds.lo == p.min and p.bounds.hi == p.max
    step = 1 if p.type == "int" else 0
    below = p.min - step if step else math.nextafter(p.min, -math.inf)
    above = p.max + step if step else math.nextafter(p.max, math.inf)
    for value in (below, above, math.nan):
        assert not p.bounds.contains(value)
        with pytest.raises(RewardSpecError) as err:
            p.validate(value)
        assert err.value.field == p.name
        assert p.describe_allowed() in err.value.reason
    assert p.validate(p.min) == p.min and p.validate(p.max) == p.max
