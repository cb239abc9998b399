"""Exact output distributions of TP, ATP and PointEM on small inputs, for the privacy tests.

The stage machine of ``geoldp.trajectory._reference`` exposes, for every transcript prefix, the next stage's
public parameters and exact conditional pmf. :func:`copy_distribution` walks that tree once for a whole batch
of candidate inputs X (all of them share the tree, because the stage parameters depend on released values
only), multiplying stage pmfs, and returns Pr[transcript | x] for every leaf and every x. The two copies use
independent randomness, so each copy is walked on its own and the merged output distribution is combined from
the two copies' point-sequence marginals (:func:`merged_distribution`).

The walk uses the same code (and the same class, or a mutant subclass of it) as the sampler; only the
draw is replaced by "branch on every output with positive probability for some x".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from geoldp.trajectory import _reference as _ref
from geoldp.trajectory.split import COPIES

if TYPE_CHECKING:
    from geoldp._core.pointset import PointSet

__all__ = [
    "CopyDistribution",
    "copy_distribution",
    "full_distributions",
    "merged_distribution",
    "next_stage",
    "sample_copy",
]


@dataclass
class CopyDistribution:
    """Exact distribution of one copy's transcript for every input of a batch.

    Attributes
    ----------
    copy : {"A", "B", None}
    transcripts : list of tuple
        Released outputs of the copy's stages, one tuple per leaf.
    probs : ndarray, shape (B, L)
        ``probs[x, l]`` = Pr[transcript l | input x].
    points : ndarray, shape (L, n)
        The copy's released point sequence (positions 1…n) of every leaf.
    epsilon_total : float
        Sum of the copy's stage budgets (its ledger total).
    nodes : int
        Number of stage nodes visited.
    """

    copy: str | None
    transcripts: list
    probs: np.ndarray
    points: np.ndarray
    epsilon_total: float
    nodes: int

    def point_marginal(self) -> tuple[np.ndarray, np.ndarray]:
        """Marginalise transcripts to point sequences: (sequences (S, n), probs (B, S))."""
        seqs, inverse = np.unique(self.points, axis=0, return_inverse=True)
        out = np.zeros((self.probs.shape[0], seqs.shape[0]))
        np.add.at(out.T, inverse.ravel(), self.probs.T)
        return seqs, out


def _batch(points: PointSet, X: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.int64)
    if X.ndim == 1:
        X = X[:, None]
    return points.lam[X], points.phi[X]


def copy_distribution(
    mechanism: Any,
    points: PointSet,
    X: npt.ArrayLike,
    copy: str | None,
    *,
    run_cls: type | None = None,
    on_stage: Callable | None = None,
    max_nodes: int = 2_000_000,
) -> CopyDistribution:
    """Walk the stage tree of one copy for every input trajectory in ``X`` (shape (B, n), indices into P).

    Parameters
    ----------
    mechanism : TP, ATP or PointEM
    X : array_like of int, shape (B, n)
        Candidate private trajectories (same length n).
    copy : {"A", "B", None}
        ``None`` for single-copy runs (PointEM, or n = 1).
    run_cls : type, optional
        Stage-machine class (default: the engine's; tests pass mutant subclasses).
    on_stage : callable, optional
        Called as ``on_stage(stage, prefix)`` at every node (tests check there that the public parameters
        depend on released values only).
    max_nodes : int
        Safety limit on the number of nodes visited.
    """
    lam, phi = _batch(points, X)
    B, n = lam.shape
    ctx = _ref.Context(mechanism, points, n)
    ctx.record_public = on_stage is not None
    if ctx.is_atp and ctx.continuous:
        raise NotImplementedError("exact enumeration needs bucketed SW output")
    priv = _ref.Private(ctx, lam, phi)
    cls = run_cls or _ref.RUN_CLASS
    root = cls(ctx, priv, copy)
    eps_total = _copy_total(ctx, copy)
    transcripts: list = []
    leaf_probs: list = []
    leaf_points: list = []
    stack = [(root, np.ones(B))]
    nodes = 0
    while stack:
        run, prob = stack.pop()
        st = run.stage()
        nodes += 1
        if nodes > max_nodes:
            raise RuntimeError("exact enumeration exceeded max_nodes")
        if on_stage is not None:
            on_stage(st, tuple(e[-1] for e in run.transcript))
        pmf = st.pmf
        live = np.flatnonzero(pmf.max(axis=0) > 0.0)
        if run.s == len(run.plan) - 1 and st.kind in ("point_em", "pivot_em"):
            # last stage: record the leaves without cloning the state
            prefix = tuple(e[-1] for e in run.transcript)
            pos = st.positions[0]
            base = [run.points.get(i, -1) for i in range(1, n + 1)]
            for o in live:
                leaf = prob * pmf[:, o]
                if not leaf.any():
                    continue
                y = int(st.outputs[o])
                transcripts.append(prefix + (y,))
                leaf_probs.append(leaf)
                pts = list(base)
                pts[pos - 1] = y
                leaf_points.append(pts)
            continue
        for o in live[::-1]:
            child_prob = prob * pmf[:, o]
            if not child_prob.any():
                continue  # unreachable for every input of the batch
            child = run.clone()
            child.advance(st.outputs[o].item(), st)
            if child.done:
                transcripts.append(tuple(e[-1] for e in child.transcript))
                leaf_probs.append(child_prob)
                leaf_points.append([child.points[i] for i in range(1, n + 1)])
            else:
                stack.append((child, child_prob))
    return CopyDistribution(
        copy, transcripts, np.array(leaf_probs).T, np.array(leaf_points, dtype=np.int64), eps_total, nodes
    )


def _copy_total(ctx: _ref.Context, copy: str | None) -> float:
    from fractions import Fraction

    led = ctx.mechanism.ledger(ctx.n)
    return float(sum((Fraction(e.epsilon) for e in led if e.copy == copy), Fraction(0)))


def full_distributions(
    mechanism: Any, points: PointSet, X: npt.ArrayLike, **kwargs: Any
) -> list[CopyDistribution]:
    """Per-copy distributions of a whole run: [A, B] for TP/ATP with n ≥ 2, [single] otherwise."""
    X = np.asarray(X, dtype=np.int64)
    n = 1 if X.ndim == 1 else X.shape[1]
    copies = (None,) if mechanism.sampler_plan.single(n) else COPIES
    return [copy_distribution(mechanism, points, X, c, **kwargs) for c in copies]


def merged_distribution(
    mechanism: Any, points: PointSet, dists: list[CopyDistribution]
) -> tuple[np.ndarray, np.ndarray]:
    """Exact distribution of the final (merged) output: (sequences (U, n), probs (B, U))."""
    if len(dists) == 1:
        return dists[0].point_marginal()
    seq_a, p_a = dists[0].point_marginal()
    seq_b, p_b = dists[1].point_marginal()
    n = seq_a.shape[1]
    ctx = _ref.Context(mechanism, points, n)
    m = ctx.m
    table = np.empty((m, m), dtype=np.int64)
    for a in range(m):
        for b in range(m):
            table[a, b] = ctx.merge(np.array([a]), np.array([b]))[0]
    merged = table[seq_a[:, None, :], seq_b[None, :, :]]  # (SA, SB, n)
    flat = merged.reshape(-1, n)
    seqs, inverse = np.unique(flat, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    out = np.zeros((p_a.shape[0], seqs.shape[0]))
    for x in range(p_a.shape[0]):
        joint = np.outer(p_a[x], p_b[x]).ravel()
        out[x] = np.bincount(inverse, weights=joint, minlength=seqs.shape[0])
    return seqs, out


def _one_run(
    mechanism: Any, points: PointSet, x: npt.ArrayLike, copy: str | None, run_cls: type | None
) -> Any:
    lam, phi = _batch(points, np.asarray(x, dtype=np.int64)[None, :])
    ctx = _ref.Context(mechanism, points, lam.shape[1])
    return (run_cls or _ref.RUN_CLASS)(ctx, _ref.Private(ctx, lam, phi), copy)


def next_stage(
    mechanism: Any,
    points: PointSet,
    x: npt.ArrayLike,
    prefix: Sequence[Any],
    copy: str | None,
    *,
    run_cls: type | None = None,
) -> Any:
    """Exact-pmf interface: the next stage (kind, ε, public parameters, pmf) of ``copy`` after ``prefix``.

    ``x`` is one private trajectory (indices into P) and ``prefix`` the released outputs of the copy's
    earlier stages, in order. Returns ``None`` when the prefix is complete.
    """
    run = _one_run(mechanism, points, x, copy, run_cls)
    for y in prefix:
        st = run.stage()
        run.advance(y, st)
    return None if run.done else run.stage()


def sample_copy(
    mechanism: Any,
    points: PointSet,
    x: npt.ArrayLike,
    copy: str | None,
    source: Any,
    *,
    run_cls: type | None = None,
) -> tuple:
    """Run the real sampler on one copy of one trajectory; returns the copy's released outputs.

    This is the sampled side that the tests compare with the exact pmf.
    """
    run = _one_run(mechanism, points, x, copy, run_cls)
    _ref.sample_run(run, source)
    return tuple(e[-1] for e in run.transcript)
