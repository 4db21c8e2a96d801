"""Paired comparisons: is RaMem's gain over content-only larger than the noise of the questions?"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Paired:
    """Mean of ``a - b`` over paired questions, with a bootstrap 95% interval.

    Attributes:
        n: questions.
        a: mean of ``a``.
        b: mean of ``b``.
        diff: mean of ``a - b``.
        low: 2.5th percentile of the bootstrapped mean difference.
        high: 97.5th percentile.
    """

    n: int
    a: float
    b: float
    diff: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float | int]:
        """Plain values for JSON."""
        return {
            "n": self.n,
            "a": self.a,
            "b": self.b,
            "diff": self.diff,
            "low": self.low,
            "high": self.high,
        }

    def __str__(self) -> str:
        return f"{self.diff:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], *, resamples: int = 5000, seed: int = 0
) -> Paired | None:
    """Paired bootstrap of ``mean(a - b)``: questions are resampled with replacement, keeping
    each question's two scores together. ``None`` when there are no pairs."""
    if len(a) != len(b):
        msg = f"paired samples differ in length: {len(a)} and {len(b)}"
        raise ValueError(msg)
    if not len(a):
        return None
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    diff = x - y
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(resamples, len(diff)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Paired(
        len(diff), float(x.mean()), float(y.mean()), float(diff.mean()), float(low), float(high)
    )
