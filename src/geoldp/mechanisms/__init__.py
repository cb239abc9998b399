"""Local-DP primitives on plain numpy arrays.

Local-DP primitives on plain numpy arrays: k-RR, the exponential mechanism, Square-Wave and the piecewise
mechanisms (a segment, the circle).

Each mechanism is an immutable, keyword-only object with ``probabilities``/``log_probabilities`` (the exact
output distribution) and ``perturb(..., rng=None)``; the functions ``krr``, ``exponential`` and
``square_wave`` are one-call shortcuts. All randomness goes through :mod:`geoldp._random`
(``rng=None`` → OS CSPRNG).
"""

from __future__ import annotations

from geoldp.mechanisms.exponential import (
    ExponentialMechanism,
    check_em_epsilon,
    em_epsilon_limit,
    em_log_weights,
    exponential,
)
from geoldp.mechanisms.krr import KRR, krr, krr_constants, krr_lie_probability
from geoldp.mechanisms.piecewise import PIECEWISE_EPS_MAX, PiecewiseCircular, PiecewiseLinear
from geoldp.mechanisms.square_wave import (
    SquareWave,
    square_wave,
    sw_bucket_masses,
    sw_densities,
    sw_half_width,
)

__all__ = [
    "KRR",
    "PIECEWISE_EPS_MAX",
    "ExponentialMechanism",
    "PiecewiseCircular",
    "PiecewiseLinear",
    "SquareWave",
    "check_em_epsilon",
    "em_epsilon_limit",
    "em_log_weights",
    "exponential",
    "krr",
    "krr_constants",
    "krr_lie_probability",
    "square_wave",
    "sw_bucket_masses",
    "sw_densities",
    "sw_half_width",
]
