"""Local-DP primitives on plain numpy arrays: k-RR, the exponential mechanism, Square-Wave, piecewise.

The piecewise mechanisms release a value of a segment or a direction on the circle.

Each mechanism is an immutable, keyword-only object with ``probabilities``/``log_probabilities`` (the exact
output distribution) and ``perturb(..., rng=None)``; the functions ``krr``, ``exponential`` and
``square_wave`` are one-call shortcuts. All randomness goes through :mod:`geoldp._core.randomness`
(``rng=None`` → OS CSPRNG).
"""

from __future__ import annotations

from geoldp.mechanisms.exponential import (
    ExponentialMechanism,
    exponential,
)
from geoldp.mechanisms.exponential import (
    check_em_epsilon as check_em_epsilon,
)
from geoldp.mechanisms.exponential import (
    em_epsilon_limit as em_epsilon_limit,
)
from geoldp.mechanisms.exponential import (
    em_log_weights as em_log_weights,
)
from geoldp.mechanisms.krr import (
    KRR,
    krr,
)
from geoldp.mechanisms.krr import (
    krr_constants as krr_constants,
)
from geoldp.mechanisms.krr import (
    krr_lie_probability as krr_lie_probability,
)
from geoldp.mechanisms.piecewise import (
    PIECEWISE_EPS_MAX as PIECEWISE_EPS_MAX,
)
from geoldp.mechanisms.piecewise import (
    PiecewiseCircular,
    PiecewiseLinear,
)
from geoldp.mechanisms.square_wave import (
    SquareWave,
    square_wave,
)
from geoldp.mechanisms.square_wave import (
    sw_bucket_masses as sw_bucket_masses,
)
from geoldp.mechanisms.square_wave import (
    sw_densities as sw_densities,
)
from geoldp.mechanisms.square_wave import (
    sw_half_width as sw_half_width,
)

__all__ = [
    "KRR",
    "ExponentialMechanism",
    "PiecewiseCircular",
    "PiecewiseLinear",
    "SquareWave",
    "exponential",
    "krr",
    "square_wave",
]
