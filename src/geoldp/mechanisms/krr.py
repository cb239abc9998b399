"""k-ary randomized response (ALGORITHM §3.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from geoldp._core.randomness import resolve_rng
from geoldp._core.validation import check_epsilon, check_int_range
from geoldp.mechanisms._base import EPS_MAX, int_array


def krr_constants(k: int, epsilon: float) -> tuple[float, float, float]:
    """Return ``(p, q, L)`` of k-RR in the numerically stable forms of ALGORITHM §3.1.

    ``p = 1/(1 + (k−1)e^{−ε})`` (keep), ``q = e^{−ε}/(1 + (k−1)e^{−ε})`` (each other value) and
    ``L = (k−1)e^{−ε}/(1 + (k−1)e^{−ε})`` (lie).

    Examples
    --------
    >>> p, q, L = krr_constants(6, 1.0)
    >>> round(p, 6), round(q, 6), round(L, 6)
    (0.352187, 0.129563, 0.647813)
    """
    t = math.exp(-epsilon)
    den = 1.0 + (k - 1) * t
    return 1.0 / den, t / den, (k - 1) * t / den


def krr_lie_probability(k: int, epsilon: float) -> float:
    """Total lie probability ``L = (k−1)e^{−ε}/(1 + (k−1)e^{−ε})`` (stable form)."""
    return krr_constants(k, epsilon)[2]


@dataclass(frozen=True)
class KRR:
    """k-ary randomized response on {0, …, k−1}.

    Parameters
    ----------
    epsilon : float
        Privacy budget, 0 < ε ≤ 700.
    k : int
        Domain size, k ≥ 2.

    Notes
    -----
    Output y = x with probability p = e^ε/(k−1+e^ε) and each y ≠ x with q = 1/(k−1+e^ε); p/q = e^ε, so the
    mechanism is exactly (and tightly) ε-LDP. Sampling: ``lie = bernoulli(L)``; if lying,
    ``j = integers(k−1)`` and the output is ``j + (j ≥ x)``. For arrays, all ``bernoulli`` draws come first
    (in element order), then one ``integers`` draw per lying element (in element order). Runtime O(n).

    References
    ----------
    Y. Zhang et al., "Trajectory Data Collection with Local Differential Privacy", PVLDB 16(10), 2023,
    https://arxiv.org/abs/2307.09339 (Eq. 2).

    Examples
    --------
    >>> mech = KRR(epsilon=1.0, k=6)
    >>> mech.probabilities(2).round(6).tolist()
    [0.129563, 0.129563, 0.352187, 0.129563, 0.129563, 0.129563]
    >>> mech.perturb([0, 5, 3], rng=0).shape
    (3,)
    """

    epsilon: float
    k: int

    def __init__(self, *, epsilon: float, k: int) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(epsilon, caller="KRR", maximum=EPS_MAX))
        object.__setattr__(self, "k", check_int_range(k, "k", caller="KRR", minimum=2))

    @property
    def lie_probability(self) -> float:
        """The total lie probability L."""
        return krr_lie_probability(self.k, self.epsilon)

    def _inputs(self, x: npt.ArrayLike) -> np.ndarray:
        arr = int_array(x, "x", "KRR")
        if arr.size and (arr.min() < 0 or arr.max() >= self.k):
            raise ValueError(f"The 'x' parameter of KRR must hold values in [0, {self.k - 1}].")
        return arr

    def log_probabilities(self, x: npt.ArrayLike) -> np.ndarray:
        """Log-pmf over {0, …, k−1}: shape (k,) for scalar x, (n, k) for an array."""
        arr = self._inputs(x)
        t = math.exp(-self.epsilon)
        log_den = math.log1p((self.k - 1) * t)
        log_p, log_q = -log_den, -self.epsilon - log_den
        out = np.full(arr.shape + (self.k,), log_q)
        np.put_along_axis(out, arr[..., None], log_p, axis=-1)
        return out

    def probabilities(self, x: npt.ArrayLike) -> np.ndarray:
        """Pmf over {0, …, k−1}: shape (k,) for scalar x, (n, k) for an array."""
        arr = self._inputs(x)
        p, q, _ = krr_constants(self.k, self.epsilon)
        out = np.full(arr.shape + (self.k,), q)
        np.put_along_axis(out, arr[..., None], p, axis=-1)
        return out

    def perturb(self, x: npt.ArrayLike, *, rng: Any = None) -> np.ndarray:
        """Perturb values in {0, …, k−1}; returns an int64 array of the same shape.

        Raises
        ------
        TypeError
            Non-integer input.
        ValueError
            An input outside {0, …, k−1} (checked before any draw).
        """
        arr = self._inputs(x)
        source = resolve_rng(rng)
        flat = arr.reshape(-1)
        out = flat.copy()
        if flat.size:
            lie = np.asarray(source.bernoulli(self.lie_probability, size=flat.size), dtype=bool)
            n_lie = int(lie.sum())
            if n_lie:
                j = np.asarray(source.integers(self.k - 1, size=n_lie), dtype=np.int64)
                xl = flat[lie]
                out[lie] = j + (j >= xl)
        return out.reshape(arr.shape)


def krr(x: npt.ArrayLike, *, k: int, epsilon: float, rng: Any = None) -> np.ndarray:
    """k-RR on {0, …, k−1}: functional form of :class:`KRR` (see there)."""
    return KRR(epsilon=epsilon, k=k).perturb(x, rng=rng)
