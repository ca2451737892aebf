"""Semantic policies: the points where the specs are silent and implementations differ.

The reference engines run under :data:`SPEC` unless told otherwise. The fuzzer re-runs the
reference under the alternatives to say which setting reproduces a peer's output.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Literal

EmptyMax = Literal["-inf", "lowest", "zero"]
NanMode = Literal["propagate", "ignore", "first"]
Divisor = Literal["attribute", "full", "padded", "valid"]
EmptyAvg = Literal["zero", "nan"]
AvgNan = Literal["propagate", "skip"]


@dataclass(frozen=True)
class Policy:
    """Choices for behaviour the specs leave open.

    - ``empty_max``: value of a max window holding no input element (wholly in padding, or past
      the padded input under ``ceil``). OpenVINO pads with -inf [OV-PAD-INF] -> ``-inf``
      (integer types: their lowest value).
    - ``empty_index``: index reported for such a window; no element was chosen, so -1.
    - ``nan``: ``propagate`` (a NaN in the window wins; the first NaN's index), ``ignore``
      (NaN loses to every number; an all-NaN window is NaN), ``first`` (strict ``>`` scan seeded
      with the first element: a leading NaN sticks, later ones are ignored).
    - ``divisor``: ``attribute`` follows exclude_pad / count_include_pad (valid elements, or the
      window clipped to the padded input); ``full``/``padded``/``valid`` force one rule.
    - ``empty_avg``: average of a window with a zero divisor.
    - ``avg_nan``: a diagnosis-only setting (the engines never read it: an average propagates
      NaN): ``skip`` leaves NaN elements out of an average like padding, neither summed nor
      counted. A field of its own, so that it combines with the accumulation settings the
      diagnosis keeps in ``nan``.
    """

    empty_max: EmptyMax = "-inf"
    empty_index: int = -1
    nan: NanMode = "propagate"
    divisor: Divisor = "attribute"
    empty_avg: EmptyAvg = "zero"
    avg_nan: AvgNan = "propagate"

    def replace(self, **changes: object) -> Policy:
        # The diagnosis builds the same few variants of a policy for every output it explains.
        return _replaced(self, tuple(sorted(changes.items())))

    def label(self) -> str:
        defaults = Policy()
        diffs = [
            f"{f.name}={getattr(self, f.name)}"
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != getattr(defaults, f.name)
        ]
        return ", ".join(diffs) or "spec"


@functools.lru_cache(maxsize=1024)
def _replaced(policy: Policy, changes: tuple[tuple[str, object], ...]) -> Policy:
    return dataclasses.replace(policy, **dict(changes))  # type: ignore[arg-type]


SPEC = Policy()
