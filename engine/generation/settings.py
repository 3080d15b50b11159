"""How completions are drawn, declared once: :class:`SamplingSettings`.

The run config (``generation.temperature``, ``top_p``, ``max_completion_length``), the Preview,
the Playground, ``/generate``, ``python -m engine generate`` and the samplers all read these
knobs; their ranges and help text are written here, in the fields' metadata, and checked by
:func:`check_knobs`. What differs between those entry points is not the range but how much work
one call may do (the Playground's 8 samples, the Preview's 2,048 tokens, a public app's lower
caps): an upper bound lowered where the knob is reused (:func:`sampling_knob`) or ``caps``
given to :func:`check_knobs`, never a second declaration.

Temperature 0 is greedy decoding (the likeliest token at every step, every sample the same):
worth seeing in the Preview and the Playground; the run config declares the same knob without
it (``(0, 2]``: a group of identical completions has no advantage to learn from, and TRL
divides the logits by the temperature).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.fields import SEED, ConfigError, knob
from rewards.params import Bounds, describe_value


@dataclass(frozen=True)
class SamplingSettings:
    """How replies are drawn: ``num_samples`` completions of each prompt, seeded. The defaults
    are the training's (``generation.*``) and the Playground's two samples."""

    temperature: float = knob(
        0.8, help="Sampling temperature; 0 is greedy (every sample the likeliest).", lo=0, hi=2
    )
    top_p: float = knob(
        1.0, help="Nucleus sampling mass (1 keeps every token).", lo=0, hi=1, lo_open=True
    )
    max_new_tokens: int = knob(
        96, help="Most new tokens per completion; longer ones are truncated.", lo=1, hi=32768
    )
    num_samples: int = knob(2, help="Completions sampled per prompt.", lo=1, hi=64)
    seed: int = knob(0, help="Seed of the sampling.", **SEED)

    def __post_init__(self) -> None:
        check_knobs(self)

    @property
    def greedy(self) -> bool:
        """Temperature 0: the likeliest token at every step."""
        return self.temperature == 0

    def check(self, max_samples: int | None = None, max_tokens: int | None = None) -> None:
        """Raise :class:`ConfigError` when the settings ask more work than one call may do."""
        check_knobs(self, caps={"num_samples": max_samples, "max_new_tokens": max_tokens})


def sampling_knob(
    name: str,
    default: Any,
    *,
    help: str | None = None,
    hi: float | None = None,
    lo_open: bool | None = None,
) -> Any:
    """A field of another dataclass that is :class:`SamplingSettings`' knob ``name`` (its
    range and help, unless ``help`` says more), with its own default. An entry point may only
    narrow the range: ``hi`` lowers the upper bound to the most one of its calls may ask,
    ``lo_open`` refuses the lower bound itself (training's temperature: not greedy)."""
    source = next(f for f in dataclasses.fields(SamplingSettings) if f.name == name)
    metadata = dict(source.metadata)
    if help:
        metadata["help"] = help
    bounds: Bounds = metadata["bounds"]
    if hi is not None:
        if bounds.hi is not None and hi > bounds.hi:
            raise ValueError(f"{name}: a cap of {hi} is above the knob's {bounds.hi}")
        bounds = dataclasses.replace(bounds, hi=hi, hi_open=False)
    if lo_open:
        bounds = dataclasses.replace(bounds, lo_open=True)
    metadata["bounds"] = bounds
    return dataclasses.field(default=default, metadata=metadata)


def check_knobs(
    settings: Any, section: str = "", caps: Mapping[str, float | None] | None = None
) -> None:
    """Check every ranged field of dataclass ``settings``: a number in its declared range (a
    whole one where the default is an int; a form sends floats), and at most its cap in
    ``caps`` (field name -> the most one call may ask; None: no cap).

    Raises:
        ConfigError: naming the dotted field and the range it must be in.
    """
    caps = caps or {}
    for f in dataclasses.fields(settings):
        bounds: Bounds | None = f.metadata.get("bounds")
        value = getattr(settings, f.name)
        if bounds is None:
            continue
        path = f"{section}.{f.name}" if section else f.name
        cap = caps.get(f.name)
        if cap is not None and (bounds.hi is None or cap < bounds.hi):
            bounds = dataclasses.replace(bounds, hi=cap, hi_open=False)
        whole = isinstance(f.default, int) and not isinstance(f.default, bool)
        if whole and not (bounds.contains(value) and float(value).is_integer()):
            raise ConfigError(
                path, f"must be a whole number in {bounds.describe()}, got {describe_value(value)}"
            )
        problem = bounds.problem(value)
        if problem:
            raise ConfigError(path, problem)
