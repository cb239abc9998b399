"""Helpers for the trajectory tests (H2): small point sets, exact checks (TESTING §2) and chi-square (§3)."""

from __future__ import annotations

import itertools
import math
import warnings

import exact_enumeration as exact
import numpy as np
import scipy.stats

from geoldp import PointSet
from geoldp._core import geo
from geoldp._core.errors import PrivacyWarning
from geoldp._core.randomness import NumpyRandomSource, RandomSource, resolve_rng
from geoldp.mechanisms import em_log_weights, krr_lie_probability, sw_bucket_masses
from geoldp.trajectory import _reference as _ref
from geoldp.trajectory.engine import resolve_mechanism, validate_trajectories

# 7 asymmetric public points in Chicago (no symmetry, so worst-case ratios are not hidden).
CITY_LON = np.array([-87.6298, -87.6232, -87.6410, -87.6105, -87.6520, -87.6187, -87.6355])
CITY_LAT = np.array([41.8781, 41.8827, 41.8702, 41.8950, 41.8885, 41.8650, 41.9012])

TOL_ROWS = 1e-12


def perturb_with_transcript(trajectory, points: PointSet, mechanism, *, rng):
    """One trajectory through the reference path → (output, transcript, ledger, diagnostics).

    ``transcript`` lists (copy, kind, positions, ε_stage, released output) in stage order (ALGORITHM §5.9).
    """
    mech = resolve_mechanism(mechanism, None, None, caller="perturb_with_transcript")
    (traj,) = validate_trajectories([trajectory], points.size, caller="perturb_with_transcript")
    mech.check_budgets(traj.shape[0], points.size)
    source = rng if isinstance(rng, RandomSource) else resolve_rng(rng)
    ctx = _ref.Context(mech, points, traj.shape[0])
    out, runs = _ref.perturb_one(ctx, points.lam[traj], points.phi[traj], source)
    return out, _ref.transcript_of(runs), mech.ledger(traj.shape[0]), _ref.diagnostics_of(ctx, runs)


def city(m: int = 6) -> PointSet:
    """The first ``m`` city points as a PointSet."""
    return PointSet(CITY_LON[:m], CITY_LAT[:m])


def make(cls, **kwargs):
    """Construct a mechanism, filtering the documented PrivacyWarning for ε > 10 (asserted elsewhere)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return cls(**kwargs)


def all_inputs(m: int, n: int) -> np.ndarray:
    """Every trajectory of length n over m points, shape (m**n, n)."""
    return np.array(list(itertools.product(range(m), repeat=n)), dtype=np.int64)


def bound(eps: float) -> float:
    """Claimed ε plus the privacy slack tol(ε) of TESTING §0."""
    return eps * (1 + 1e-9) + 1e-14


def column_log_ratio(probs: np.ndarray) -> float:
    """max over columns of ln max_x P[x, y] − ln min_x P[x, y] (inf on a support mismatch)."""
    probs = probs[:, probs.max(axis=0) > 0]  # outputs reachable from some input
    with np.errstate(divide="ignore"):
        return float(np.max(np.log(probs.max(axis=0)) - np.log(probs.min(axis=0))))


class PublicChecker:
    """E7: records every stage whose public parameters differ between the private inputs of the batch."""

    def __init__(self) -> None:
        self.violations: list[tuple] = []
        self.stages = 0

    def __call__(self, stage, prefix) -> None:
        self.stages += 1
        for key, value in stage.public.items():
            arr = np.asarray(value)
            if arr.shape[0] > 1 and not np.array_equal(arr, np.broadcast_to(arr[:1], arr.shape)):
                self.violations.append((stage.copy, stage.kind, stage.positions, key, prefix))


#: Enumerations of n <= 2 (small: at most 49 inputs), kept for the session: the E tests and the mutant
#: catalogue check several claims (E5/E6 bounds, E7, the merged output) of the same (mechanism, P, X, run
#: class), each of which used to enumerate again. The key holds everything the enumeration reads but the
#: module state a monkeypatched mutant replaces: call exact_report with ``run_cls``, never under such a patch.
_ENUMERATIONS: dict = {}


def _enumeration(mech, points, X, run_cls) -> dict:
    """The per-copy distributions and the E7 violations of one enumeration (cached for n <= 2)."""
    X = np.asarray(X, dtype=np.int64)
    cls = run_cls or _ref.RUN_CLASS  # the class the enumeration runs (a patched RUN_CLASS included)
    key = (mech, points, X.shape, X.tobytes(), cls) if X.ndim == 2 and X.shape[1] <= 2 else None
    if key is not None and key in _ENUMERATIONS:
        return _ENUMERATIONS[key]
    checker = PublicChecker()
    dists = exact.full_distributions(mech, points, X, run_cls=run_cls, on_stage=checker)
    entry = {"dists": dists, "public": checker.violations, "merged": None}
    if key is not None:
        _ENUMERATIONS[key] = entry
    return entry


def exact_report(mech, points, X, *, run_cls=None, merged=True) -> dict:
    """Run the exact checks (a)(b)(c) of TESTING §2 and E7 on every copy and on the merged output."""
    entry = _enumeration(mech, points, X, run_cls)
    dists = entry["dists"]
    rep = {
        "rows_ok": True,
        "support_ok": True,
        "copy_lr": [],
        "copy_claim": [],
        "public": list(entry["public"]),
    }
    for d in dists:
        rep["rows_ok"] &= bool(np.all(np.abs(d.probs.sum(axis=1) - 1.0) <= TOL_ROWS))
        rep["support_ok"] &= bool(np.all(d.probs > 0.0))
        rep["copy_lr"].append(column_log_ratio(d.probs))
        rep["copy_claim"].append(d.epsilon_total)
    rep["total_lr"] = float(sum(rep["copy_lr"]))
    rep["claim"] = float(mech.ledger(np.asarray(X).shape[1]).total())
    if merged:
        if entry["merged"] is None:
            entry["merged"] = exact.merged_distribution(mech, points, dists)[1]
        pm = entry["merged"]
        rep["merged_rows_ok"] = bool(np.all(np.abs(pm.sum(axis=1) - 1.0) <= TOL_ROWS))
        rep["merged_support_ok"] = bool(np.all(pm > 0.0))
        rep["merged_lr"] = column_log_ratio(pm)
    rep["dists"] = dists
    return rep


def passes(rep: dict) -> bool:
    """True iff the report satisfies (a)(b)(c) on each copy, the whole transcript, the merge, and E7."""
    ok = rep["rows_ok"] and rep["support_ok"] and not rep["public"]
    ok &= all(lr <= bound(c) for lr, c in zip(rep["copy_lr"], rep["copy_claim"], strict=True))
    ok &= rep["total_lr"] <= bound(rep["claim"])
    if "merged_lr" in rep:
        ok &= rep["merged_rows_ok"] and rep["merged_support_ok"] and rep["merged_lr"] <= bound(rep["claim"])
    return bool(ok)


def chi_square(counts: dict, expected_pmf: dict, N: int) -> tuple[float, float, int]:
    """X² with bins of expected count < 5 pooled (TESTING §3); returns (X², critical value, df).

    An observed output outside the expected support makes X² infinite.
    """
    if any(k not in expected_pmf or expected_pmf[k] <= 0 for k in counts):
        return math.inf, 0.0, 0
    keys = list(expected_pmf)
    exp = np.array([expected_pmf[k] * N for k in keys])
    obs = np.array([counts.get(k, 0) for k in keys], dtype=float)
    small = exp < 5
    e = np.concatenate([exp[~small], [exp[small].sum()]]) if small.any() else exp
    o = np.concatenate([obs[~small], [obs[small].sum()]]) if small.any() else obs
    keep = e > 0
    e, o = e[keep], o[keep]
    x2 = float(np.sum((o - e) ** 2 / e))
    df = len(e) - 1
    return x2, float(scipy.stats.chi2.isf(1e-6, df)), df


def noncentrality(p_mut: dict, p: dict, N: int) -> float:
    """λ = N Σ_y (p_mut(y) − p(y))² / p(y); infinite if the mutant puts mass outside p's support."""
    lam = 0.0
    for k in set(p_mut) | set(p):
        pk = p.get(k, 0.0)
        qk = p_mut.get(k, 0.0)
        if pk <= 0:
            if qk > 0:
                return math.inf
            continue
        lam += (qk - pk) ** 2 / pk
    return N * lam


class CountingSource(RandomSource):
    """Counting proxy around a source: every primitive draw, with the probabilities it was drawn with."""

    policy = "seeded"

    def __init__(self, inner):
        self.inner = inner
        self.log = []

    def uniform(self, size=None):
        self.log.append(("uniform", None))
        return self.inner.uniform(size)

    def bernoulli(self, p, size=None):
        self.log.append(("bernoulli", p))
        return self.inner.bernoulli(p, size)

    def integers(self, k, size=None):
        self.log.append(("integers", k))
        return self.inner.integers(k, size)

    def categorical(self, pmf):
        self.log.append(("categorical", np.array(pmf, copy=True)))
        return self.inner.categorical(pmf)

    def stream_key(self):  # pragma: no cover
        return self.inner.stream_key()


def audit(monkeypatch, mech, pts, traj, seed=0):
    """Run one trajectory through a counting proxy; return (problems, stage records, transcript)."""
    records = []
    original = _ref.draw_stage

    def recording(stage, source):
        start = len(source.log)
        y = original(stage, source)
        records.append((stage, source.log[start:], y))
        return y

    monkeypatch.setattr(_ref, "draw_stage", recording)
    src = CountingSource(NumpyRandomSource(np.random.default_rng(seed)))
    out, transcript, ledger, _ = perturb_with_transcript(np.asarray(traj), pts, mech, rng=src)
    monkeypatch.setattr(_ref, "draw_stage", original)
    problems = []
    if sum(len(r[1]) for r in records) != len(src.log):
        problems.append("draws outside any stage")
    entries = list(ledger)
    if len(entries) != len(records):
        problems.append(f"{len(records)} primitive calls but {len(entries)} ledger entries")
    x_lam, x_phi = pts.lam[traj], pts.phi[traj]
    for entry, (stage, draws, _) in zip(entries, records, strict=False):
        if (entry.copy, entry.kind, entry.positions) != (stage.copy, stage.kind, stage.positions):
            problems.append(f"stage {stage.kind}{stage.positions} recorded as {entry.kind}{entry.positions}")
            continue
        eps = entry.epsilon
        if stage.kind == "direction_krr":
            g = stage.outputs.shape[0]
            if draws[0] != ("bernoulli", krr_lie_probability(g, eps)):
                problems.append(f"k-RR {stage.positions} drew with a budget other than {eps}")
        elif stage.kind == "radius_sw":
            expected = sw_bucket_masses(float(stage.private_input[0]), eps, stage.outputs.shape[0])
            if not np.allclose(draws[0][1], expected, rtol=1e-12, atol=0):
                problems.append("SW drew with a budget other than the ledger's")
        else:
            domain = np.flatnonzero(np.asarray(stage.public["domain"])[0])
            if stage.kind == "anchor_em":
                a = int(stage.private_input[0])
                lw = em_log_weights(pts.lam[a], pts.phi[a], pts, domain, eps)
            else:
                i = stage.positions[0] - 1
                lw = em_log_weights(x_lam[i], x_phi[i], pts, domain, eps)
            w = np.exp(lw - lw.max())
            if not np.allclose(draws[0][1][domain], w / w.sum(), rtol=1e-12, atol=1e-300):
                problems.append(f"EM {stage.kind}{stage.positions} drew with a budget other than {eps}")
    return problems, records, transcript


def true_sector_problems(monkeypatch, mech, pts, traj, seed):
    """N15: k-RR inputs that differ from sec_g(θ(P_{â_k} → x_j)) recomputed from the transcript."""
    problems, records, transcript = audit(monkeypatch, mech, pts, traj, seed)
    released = {}
    conv = mech.sector_convention
    bad = []
    for stage, _, y in records:
        if stage.kind in ("pivot_em", "point_em"):
            released[(stage.copy, stage.positions[0])] = y
        if stage.kind == "direction_krr":
            k, j = stage.positions
            origin = released[(stage.copy, k)]  # the perturbed pivot, from the transcript
            theta = geo.bearing(pts.lon[origin], pts.lat[origin], pts.lon[traj[j - 1]], pts.lat[traj[j - 1]])
            expected = int(geo.sector_index(theta, mech.granularity_value, convention=conv))
            if int(stage.private_input[0]) != expected:
                bad.append((stage.copy, k, j))
    return problems + bad
