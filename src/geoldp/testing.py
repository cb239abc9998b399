"""Public test utilities for local-DP conformance: exact output distributions and exact ε-LDP checks.

* :class:`EnumeratingSource` — a :class:`~geoldp._core.randomness.RandomSource`
  that *forces* branch choices instead of
  drawing, so :func:`exact_distribution` can enumerate every random path of a mechanism through its real
  code and accumulate the exact output distribution.
* :func:`max_log_ratio` / :func:`assert_ldp` — the exact criteria (a) rows sum to 1, (b) equal supports,
  (c) column-wise max log-ratio ≤ ε(1 + 1e−9) + 1e−14.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from geoldp._core.randomness import RandomSource

__all__ = ["assert_ldp", "exact_distribution", "max_log_ratio"]


class EnumeratingSource(RandomSource):
    """A randomness source that follows a *script* of forced branch indices (exact enumeration in tests).

    Each ``bernoulli``/``integers``/``categorical`` call is one branch point: the next script entry (0 when
    the script is exhausted; the script is extended) selects among the branches with positive probability,
    ``weight`` is multiplied by that branch's probability and ``arity`` records the number of branches.
    Vectorised calls are a sequence of scalar branch points in array order. ``uniform`` (continuous) cannot
    be enumerated and raises ``NotImplementedError``.

    Parameters
    ----------
    script : list of int
        Forced branch indices; extended in place with zeros on demand.
    """

    policy = "enumerating"

    def __init__(self, script: list[int]) -> None:
        self.script = script
        self.pos = 0
        self.arity: list[int] = []
        self.weight = 1.0

    def _branch(self, probs: Sequence[float] | np.ndarray) -> int:
        if self.pos == len(self.script):
            self.script.append(0)
        i = self.script[self.pos]
        self.pos += 1
        self.arity.append(len(probs))
        self.weight *= float(probs[i])
        return i

    def uniform(self, size: int | tuple[int, ...] | None = None) -> Any:
        """Not enumerable; raises ``NotImplementedError``."""
        raise NotImplementedError("EnumeratingSource cannot enumerate a continuous uniform draw.")

    def _bern1(self, p: float) -> bool:
        opts = [(v, w) for v, w in ((False, 1.0 - p), (True, p)) if w > 0]
        return opts[self._branch([w for _, w in opts])][0]

    def bernoulli(self, p: float | np.ndarray, size: int | tuple[int, ...] | None = None) -> Any:
        """Forced Bernoulli branch(es); ``p`` may be an array broadcast against ``size``."""
        if size is None:
            return self._bern1(float(p))
        ps = np.broadcast_to(np.asarray(p, dtype=np.float64), (int(np.prod(size)),))
        return np.array([self._bern1(float(x)) for x in ps], dtype=bool).reshape(size)

    def integers(self, k: int, size: int | tuple[int, ...] | None = None) -> Any:
        """Forced uniform integer(s) on {0, …, k−1}."""
        k = int(k)
        if size is None:
            return self._branch([1.0 / k] * k)
        n = int(np.prod(size))
        return np.array([self._branch([1.0 / k] * k) for _ in range(n)], dtype=np.int64).reshape(size)

    def _cat1(self, pmf: np.ndarray) -> int:
        support = np.flatnonzero(pmf > 0)
        return int(support[self._branch(pmf[support])])

    def categorical(self, pmf: npt.ArrayLike) -> Any:
        """Forced categorical draw(s) over the positive-mass entries of ``pmf`` (1-D or one per row)."""
        pmf = np.asarray(pmf, dtype=np.float64)
        if pmf.ndim == 1:
            return self._cat1(pmf)
        return np.array([self._cat1(row) for row in pmf], dtype=np.int64)

    def stream_key(self) -> np.ndarray:
        """Not enumerable; raises ``NotImplementedError``."""
        raise NotImplementedError("EnumeratingSource has no stream key.")


def _key(y: Any) -> Any:
    if isinstance(y, np.ndarray):
        return tuple(y.reshape(-1).tolist()) if y.ndim else y.item()
    if isinstance(y, np.generic):
        return y.item()
    if isinstance(y, (list, tuple)):
        return tuple(_key(v) for v in y)
    return y


def exact_distribution(fn: Callable[..., Any], x: Any, *, max_paths: int = 10**6) -> dict:
    """Exact output distribution of ``fn(x, rng=source)`` by enumerating every random path.

    Parameters
    ----------
    fn : callable
        Called as ``fn(x, rng=source)``; must draw only through the source. Outputs are made hashable
        (arrays → tuples).
    x : object
        The input.
    max_paths : int, default 1e6
        Safety limit on the number of enumerated paths.

    Returns
    -------
    dict
        output → probability (sum of the path probabilities).

    Examples
    --------
    >>> from geoldp.mechanisms import KRR
    >>> dist = exact_distribution(lambda x, rng: KRR(epsilon=1.0, k=3).perturb(x, rng=rng), 0)
    >>> sorted(dist), round(sum(dist.values()), 12)
    ([0, 1, 2], 1.0)
    """
    dist: dict = {}
    script: list[int] = []
    paths = 0
    while True:
        src = EnumeratingSource(script)
        y = _key(fn(x, rng=src))
        dist[y] = dist.get(y, 0.0) + src.weight
        paths += 1
        if paths > max_paths:
            raise RuntimeError(f"exact_distribution: more than {max_paths} paths.")
        del script[src.pos :]
        while script and script[-1] + 1 >= src.arity[len(script) - 1]:
            script.pop()
        if not script:
            return dist
        script[-1] += 1


def ldp_tolerance(epsilon: float) -> float:
    """The slack allowed for floating-point error in the ε-LDP checks: ``ε·1e−9 + 1e−14``."""
    return epsilon * 1e-9 + 1e-14


def max_log_ratio(matrix: npt.ArrayLike) -> float:
    """Column-wise max of ``ln max_x P[x, y] − ln min_x P[x, y]`` over outputs y (rows = inputs).

    Returns ``inf`` if the supports differ between rows (some column has both zero and positive entries).
    Columns that are zero in every row are ignored.

    Examples
    --------
    >>> round(max_log_ratio([[0.5, 0.5], [0.25, 0.75]]), 6)
    0.693147
    """
    P = np.asarray(matrix, dtype=np.float64)
    if P.ndim != 2:
        raise ValueError("max_log_ratio needs a 2-D matrix (inputs × outputs).")
    pos = P > 0
    any_pos = pos.any(axis=0)
    if np.any(any_pos & ~pos.all(axis=0)):
        return math.inf
    if not any_pos.any():
        return 0.0
    cols = P[:, any_pos]
    with np.errstate(divide="ignore"):
        return float(np.max(np.log(cols.max(axis=0)) - np.log(cols.min(axis=0))))


def assert_ldp(matrix: npt.ArrayLike, epsilon: float, *, check_rows: bool = True) -> float:
    """Assert the exact ε-LDP criteria and return the max log-ratio.

    The criteria: (a) every row sums to 1 (within 1e−12), (b) all rows have the same support, (c) the
    column-wise max log-ratio (:func:`max_log_ratio`) is at most ``ε(1 + 1e−9) + 1e−14``.

    Raises
    ------
    AssertionError
        With a message naming the failed criterion.
    """
    P = np.asarray(matrix, dtype=np.float64)
    if check_rows:
        dev = np.abs(P.sum(axis=1) - 1.0)
        if np.any(dev > 1e-12):
            raise AssertionError(
                f"(a) a probability row sums to 1 ± {float(dev.max()):.3g} (tolerance 1e-12)."
            )
    pos = P > 0
    if np.any(pos.any(axis=0) & ~pos.all(axis=0)):
        raise AssertionError("(b) the supports of the rows differ: infinite privacy loss.")
    ratio = max_log_ratio(P)
    bound = epsilon * (1 + 1e-9) + 1e-14
    if not ratio <= bound:
        raise AssertionError(f"(c) max log-ratio {ratio!r} exceeds epsilon {epsilon!r} (bound {bound!r}).")
    return ratio
