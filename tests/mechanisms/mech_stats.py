"""Helpers for the mechanism tests: χ² goodness of fit with the power precondition (TESTING §3)."""

from __future__ import annotations

import numpy as np
import scipy.stats


def chi2_gof(counts, probs):
    """Pooled χ² statistic; returns (X², df, critical value, out_of_support_count).

    Bins with expected count < 5 are merged into one pooled bin; the critical value is
    ``chi2.isf(1e-6, df)``.
    """
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    n = counts.sum()
    outside = counts[probs <= 0].sum()
    exp = probs * n
    small = exp < 5
    obs_b = list(counts[~small])
    exp_b = list(exp[~small])
    if small.any():
        obs_b.append(counts[small].sum())
        exp_b.append(exp[small].sum())
    obs_b, exp_b = np.array(obs_b), np.array(exp_b)
    keep = exp_b > 0
    x2 = float((((obs_b - exp_b) ** 2) / np.where(keep, exp_b, 1.0))[keep].sum())
    df = int(keep.sum()) - 1
    return x2, df, float(scipy.stats.chi2.isf(1e-6, df)), float(outside)


def passes(counts, probs) -> bool:
    """True iff the sample is consistent with ``probs`` (no out-of-support output, X² < critical value)."""
    x2, _, crit, outside = chi2_gof(counts, probs)
    return outside == 0 and x2 < crit


def noncentrality(p, p_mut, n) -> float:
    """λ = N·Σ (p_mut − p)²/p (infinite if the mutant puts mass where p has none)."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(p_mut, dtype=np.float64)
    if np.any((p <= 0) & (q > 0)):
        return float("inf")
    m = p > 0
    return float(n * (((q[m] - p[m]) ** 2) / p[m]).sum())


def counts_of(samples, size) -> np.ndarray:
    """Histogram of integer samples over {0, …, size−1} plus one overflow bin (out-of-domain values)."""
    s = np.asarray(samples).reshape(-1)
    bad = (s < 0) | (s >= size)
    c = np.bincount(s[~bad], minlength=size).astype(np.float64)
    return np.r_[c, bad.sum()]
