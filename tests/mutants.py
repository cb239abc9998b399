"""Deliberately broken trajectory mechanisms (TESTING §10), built by overriding private hooks.

Each mutant is a subclass of the reference stage machine :class:`geoldp.trajectory._reference._CopyRun`
(pass it as ``run_cls`` to the exact enumerator, or install it with :func:`installed` for the sampler), or a
patch of the ledger. There are no public "unsafe" switches in geoldp; everything here is test code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np

from geoldp._core import kernels as _kernels
from geoldp.trajectory import _reference as _ref


def _scaled(budgets, factor, fields=("anchor", "radius", "direction", "point_pivot", "point_nonpivot")):
    return dataclasses.replace(budgets, **{f: getattr(budgets, f) * factor for f in fields})


class RelativeSectors(_ref._CopyRun):
    """M6: sectors centred on the TRUE direction (TraCS K3): k-RR input always 0, domain around θ_true."""

    def _direction_input(self, k, j):
        return np.zeros(self.priv.B, dtype=np.int64)

    def _point_set(self, k, j, d_hat):
        ctx, priv = self.ctx, self.priv
        origin = self.points[k]
        lo, po = ctx.lam[origin], ctx.phi[origin]
        theta_p = _kernels.bearing_from_one(lo, po, ctx.lam, ctx.phi, np.empty(ctx.m))
        out = np.zeros((priv.B, ctx.m), dtype=np.bool_)
        half = math.pi / ctx.g
        for b in range(priv.B):
            true = _kernels.bearing_rad(lo, po, priv.lam[b, j - 1], priv.phi[b, j - 1])
            centre = true + 2.0 * math.pi * d_hat / ctx.g
            diff = np.mod(theta_p - centre + math.pi, 2.0 * math.pi) - math.pi
            out[b] = (diff >= -half) & (diff < half)
        return out & self.region


class TrueNeighbourOrigin(_ref._CopyRun):
    """M7: sectors (k-RR input and GetPointSet) measured from the TRUE neighbour x_k, not from â_k."""

    def _direction_input(self, k, j):
        priv, ctx = self.priv, self.ctx
        out = np.empty(priv.B, dtype=np.int64)
        for b in range(priv.B):
            theta = _kernels.bearing_rad(
                priv.lam[b, k - 1], priv.phi[b, k - 1], priv.lam[b, j - 1], priv.phi[b, j - 1]
            )
            out[b] = _kernels.sector(theta, ctx.g, ctx.centred)
        return out

    def _point_set(self, k, j, d_hat):
        ctx, priv = self.ctx, self.priv
        out = np.zeros((priv.B, ctx.m), dtype=np.bool_)
        theta = np.empty(ctx.m)
        sec = np.empty(ctx.m, dtype=np.int64)
        for b in range(priv.B):
            _kernels.bearing_from_one(priv.lam[b, k - 1], priv.phi[b, k - 1], ctx.lam, ctx.phi, theta)
            _kernels.sector_many(theta, ctx.g, ctx.centred, sec)
            out[b] = sec == d_hat
        return out & self.region


class ExcludeTruePoint(_ref._CopyRun):
    """M8: the non-pivot EM domain excludes the true point x_j (a domain computed from private values)."""

    def _point_set(self, k, j, d_hat):
        ctx, priv = self.ctx, self.priv
        base = np.array(super()._point_set(k, j, d_hat), dtype=np.bool_)
        if base.shape[0] != priv.B:
            base = np.repeat(base, priv.B, axis=0)
        same = (ctx.lam[None, :] == priv.lam[:, j - 1, None]) & (ctx.phi[None, :] == priv.phi[:, j - 1, None])
        return base & ~same


class RegionOnTrueAnchor(_ref._CopyRun):
    """M14: ATP region (Ω, ΔR, R_max) centred on the TRUE anchor p_α instead of the perturbed â_α."""

    def _region_centre(self):
        return self.priv.anchor()


class DataDependentSensitivity(_ref._CopyRun):
    """M5b: EM "sensitivity" = range of the private point's scores over the domain (TraCS K2)."""

    def _em_sensitivity(self, dist, domain):
        d = np.where(domain, dist, np.nan)
        rng = np.nanmax(d, axis=1) - np.nanmin(d, axis=1)
        return np.where(rng > 0, rng, self.ctx.delta)


class KrrInputFromTrueNeighbour(_ref._CopyRun):
    """M15: k-RR input measured from the true neighbour x_k; the domain is still built around â_k.

    Privacy holds (k-RR is private for any input); only the conformance test N15 catches it.
    """

    _direction_input = TrueNeighbourOrigin._direction_input


class CopyAFullEpsilon(_ref._CopyRun):
    """M10: copy A spends the full ε (every stage budget of A doubled) while the ledger claims ε/2."""

    def __init__(self, ctx, priv, copy):
        super().__init__(ctx, priv, copy)
        if copy == "A":
            self.budgets = _scaled(self.budgets, 2.0)


class AllStagesEpsTimes125(_ref._CopyRun):
    """M3 (composite): every stage budget × 1.25."""

    def __init__(self, ctx, priv, copy):
        super().__init__(ctx, priv, copy)
        if self.budgets is not None:
            self.budgets = _scaled(self.budgets, 1.25)


class RadiusBudgetTimes2(_ref._CopyRun):
    """S5 mutant: SW budget mis-specified (ε_R × 2)."""

    def __init__(self, ctx, priv, copy):
        super().__init__(ctx, priv, copy)
        if self.budgets is not None:
            self.budgets = _scaled(self.budgets, 2.0, fields=("radius",))


@contextlib.contextmanager
def installed(monkeypatch, run_cls):
    """Make the engine's reference sampler use ``run_cls`` (monkeypatches ``_reference.RUN_CLASS``)."""
    monkeypatch.setattr(_ref, "RUN_CLASS", run_cls)
    try:
        yield
    finally:
        monkeypatch.setattr(_ref, "RUN_CLASS", _ref._CopyRun)


def ledger_without_sw(monkeypatch):
    """M9: the ledger silently drops the radius SW stage (patches the ledger builder used by TP/ATP)."""
    import geoldp.trajectory.tp as tp_mod
    from geoldp.budget import Ledger

    original = tp_mod.build_ledger

    def build(*args, **kwargs):
        led = original(*args, **kwargs)
        return Ledger(tuple(e for e in led.entries if e.kind != "radius_sw"), led.epsilon)

    monkeypatch.setattr(tp_mod, "build_ledger", build)


#: Mutants that make a public parameter depend on the private input (caught by E5/E6 support and E7).
PRIVACY_MUTANTS = {
    "M6": RelativeSectors,
    "M7": TrueNeighbourOrigin,
    "M8": ExcludeTruePoint,
    "M5b": DataDependentSensitivity,
}
