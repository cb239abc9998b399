"""How low can a denoiser's NE go? The Bayes risk of PointEM releases under a perfectly known population.

A useful denoiser (``geoldp.estimate.denoise``) should reach an NE at least 10 % below both the raw release
and the constant (every point replaced by P's 1-median). This script measures what **any** denoiser could
achieve, to tell an estimator's shortfall from a limit of the budget.

The oracle knows the exact population: its prior over a trajectory of length n is the empirical
distribution of the data set's true trajectories of that length. For PointEM the likelihood of a release
is exact and closed form (each point is released independently by the exponential mechanism over P with
budget ε/n and sensitivity Δ, the diameter of P):

    p(y | t) = Π_i exp(−ε_n d(t_i, y_i) / (2Δ)) / Z_n(t_i),   Z_n(x) = Σ_p exp(−ε_n d(x, p) / (2Δ)).

The oracle's estimate of position i is the public point x minimising the posterior expected distance
Σ_t r(t | y) d(x, t_i), which is the Bayes estimate for the NE loss. Releasing every true trajectory once
draws (T, Y) from the joint distribution the oracle's prior describes, so the average NE over the data set
is a Monte-Carlo estimate of the Bayes risk: **no function of the release has a lower expected NE** on a
trajectory drawn from this population (up to the Monte-Carlo error, reported as a standard error). The
oracle is an experiment only: it reads the originals, which no collector-side estimator may do.

Reported per data set and ε: NE and PRQ(1 km) of the raw release, of the no-data baselines (uniform over
P, in expectation; the constant) and of the oracle, and the oracle's gain over the constant. Only PointEM
has a closed-form likelihood; TP and ATP releases carry their budget differently, so their oracle is not
computed here.

Usage::

    python experiments/denoise_oracle.py                  # chi_atp nyc_atp cps_atp, ε = 2, 4, 8, 16
    python experiments/denoise_oracle.py --datasets cps_atp --epsilons 4

Writes ``docs/results/denoise_oracle.csv`` and ``docs/results/denoise_oracle.md`` (the table with this
explanation). Exits 0 with a message when the
data directory is absent.
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "experiments"))
DEFAULT_DATA = REPO.parent / "shared" / "data"
if not DEFAULT_DATA.exists():
    DEFAULT_DATA = Path("/work/shared/data")
DEFAULT_OUT = REPO / "docs" / "results"
DATASETS = ("chi_atp", "nyc_atp", "cps_atp")
EPSILONS = (2.0, 4.0, 8.0, 16.0)
SEED = 20261201
ROWS_PER_BLOCK = 256


def log(msg: str) -> None:
    print(f"[denoise_oracle {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def oracle_positions(
    truth: np.ndarray, released: np.ndarray, dist: np.ndarray, eps_n: float, delta: float
) -> np.ndarray:
    """Bayes estimates (N, n) of the positions of ``released`` (N, n) under the empirical prior ``truth``."""
    c = eps_n / (2.0 * delta)
    log_z = np.log(np.exp(-c * dist).sum(axis=1))  # (m,) normaliser of every public point
    out = np.empty_like(released)
    n_t, m = truth.shape[0], dist.shape[0]
    # pick[i]: (N, m) indicator of candidate t's point at position i
    pick = [
        sp.csr_matrix((np.ones(n_t), (np.arange(n_t), truth[:, i])), shape=(n_t, m))
        for i in range(truth.shape[1])
    ]
    for a in range(0, released.shape[0], ROWS_PER_BLOCK):
        y = released[a : a + ROWS_PER_BLOCK]
        # log p(y_j | t) for every candidate t (the true trajectories): (B, N)
        loglik = np.zeros((y.shape[0], truth.shape[0]))
        for i in range(truth.shape[1]):
            loglik -= c * dist[y[:, i]][:, truth[:, i]] + log_z[truth[:, i]][None, :]
        post = np.exp(loglik - loglik.max(axis=1, keepdims=True))
        post /= post.sum(axis=1, keepdims=True)
        for i in range(truth.shape[1]):
            # posterior mass on each public point at position i, then the expected distance to every x
            mass = np.asarray((pick[i].T @ post.T).T)
            out[a : a + ROWS_PER_BLOCK, i] = np.argmin(mass @ dist, axis=1)
    return out


def run(name: str, folder: Path, epsilons) -> list[dict]:
    from estimators import ne_prq, one_median
    from paper_setup import distance_matrix_m, load_dataset

    from geoldp import PointEM, PointSet, perturb_trajectories
    from geoldp.budget import exact_share

    lon, lat, trajs = load_dataset(folder)
    ps = PointSet(lon, lat)
    dist = distance_matrix_m(lon, lat)
    delta = float(ps.diameter_m)
    med = one_median(lon, lat)
    const = [np.full(t.shape[0], med) for t in trajs]
    ne_c, prq_c = ne_prq(trajs, const, lon, lat, 1.0)
    # uniform over P, in expectation: per true point, the mean distance to P and the share of P within 1 km
    vertices = np.concatenate(trajs)
    ne_u = float(dist[vertices].mean() / 1000.0)
    prq_u = float((dist[vertices] <= 1000.0).mean())
    lengths = np.array([t.shape[0] for t in trajs])
    rows = []
    for eps in epsilons:
        t0 = time.process_time()
        released = perturb_trajectories(trajs, ps, mechanism=PointEM(epsilon=eps), rng=SEED)
        oracle: list = [None] * len(trajs)
        for n in np.unique(lengths):
            sel = np.flatnonzero(lengths == n)
            truth = np.stack([trajs[j] for j in sel])
            rel = np.stack([np.asarray(released[j], dtype=np.int64) for j in sel])
            eps_n = float(exact_share(eps, Fraction(1, int(n))))
            est = oracle_positions(truth, rel, dist, eps_n, delta)
            for k, j in enumerate(sel):
                oracle[j] = est[k]
        ne_r, prq_r = ne_prq(trajs, released, lon, lat, 1.0)
        ne_o, prq_o = ne_prq(trajs, oracle, lon, lat, 1.0)
        per_traj = [
            float(np.mean(dist[t, o])) / 1000.0 for t, o in zip(trajs, oracle, strict=True)
        ]  # NE per trajectory, for the standard error
        rows.append(
            {
                "dataset": name,
                "mechanism": "pointem",
                "epsilon": eps,
                "n_traj": len(trajs),
                "NE_raw": ne_r,
                "NE_uniform": ne_u,
                "NE_constant": ne_c,
                "NE_oracle": ne_o,
                "NE_oracle_se": float(np.std(per_traj, ddof=1) / np.sqrt(len(per_traj))),
                "oracle_vs_constant": 1.0 - ne_o / ne_c,
                "PRQ1_raw": prq_r,
                "PRQ1_uniform": prq_u,
                "PRQ1_constant": prq_c,
                "PRQ1_oracle": prq_o,
                "seconds_cpu": time.process_time() - t0,
            }
        )
        log(f"{name} ε={eps:g}: oracle NE {ne_o:.3f} km, constant {ne_c:.3f}, raw {ne_r:.3f}")
    return rows


def table(df: pd.DataFrame) -> str:
    head = (
        "| data set | ε | NE raw | NE uniform | NE constant | NE oracle (± s.e.) | oracle vs constant "
        "| PRQ raw | PRQ uniform | PRQ constant | PRQ oracle |"
    )
    lines = [head, "|" + "---|" * 11]
    for r in df.itertuples():
        lines.append(
            f"| {r.dataset} | {r.epsilon:g} | {r.NE_raw:.3f} | {r.NE_uniform:.3f} | {r.NE_constant:.3f} | "
            f"{r.NE_oracle:.3f} ± {r.NE_oracle_se:.3f} | {100 * r.oracle_vs_constant:+.0f} % | "
            f"{r.PRQ1_raw:.3f} | {r.PRQ1_uniform:.3f} | {r.PRQ1_constant:.3f} | {r.PRQ1_oracle:.3f} |"
        )
    return "\n".join(lines)


def page(df: pd.DataFrame) -> str:
    """The Markdown page: what the oracle is, the table, and what it implies for the denoise target."""
    at4 = df[df["epsilon"] == 4.0]
    best = f"{100 * at4['oracle_vs_constant'].max():.0f} %" if len(at4) else "n/a"
    clear = df[df["oracle_vs_constant"] >= 0.10]
    cleared = (
        ", ".join(f"{r.dataset} at ε = {r.epsilon:g}" for r in clear.itertuples()) if len(clear) else "none"
    )
    reachable = len(at4) and at4["oracle_vs_constant"].max() >= 0.10
    verdict = (
        "; the 10 % target is within reach of a denoiser that learns the population well."
        if reachable
        else ": the target of 10 % is out of reach for PointEM releases at this budget on these data sets, "
        "by any method. The release moves the posterior too little away from the population prior, and the "
        "NE-optimal point under the prior alone is close to P's 1-median."
    )
    return f"""# How low can a denoiser's NE go? (PointEM, known population)

Generated by `python experiments/denoise_oracle.py` (one PointEM release per setting, seed {SEED}; NE in km,
PRQ at 1 km; `uniform` = every point a uniform draw from P, in expectation; `constant` = every point P's
1-median).

A useful denoiser (`geoldp.estimate.denoise`) should reach an NE at least 10 % below both the raw release
and the constant (every point replaced by P's 1-median). To separate an estimator's shortfall from a limit
of the budget, the **oracle** here knows the population exactly: its prior for a trajectory of length n is
the empirical distribution of the data set's true trajectories of that length, and PointEM's likelihood is
exact (independent exponential mechanisms with budget ε/n, sensitivity Δ = the diameter of P). Each position
is the public point minimising the posterior expected distance, the Bayes estimate for the NE loss. Since
every true trajectory is released once, the average NE is a Monte-Carlo estimate of the Bayes risk: **no
denoiser, whatever it knows about the population, has a lower expected NE** on a trajectory drawn from it
(up to the standard error shown). The oracle reads the originals; it is an experiment, not an estimator.

{table(df)}

At ε = 4 the oracle is at most {best} below the constant{verdict} Settings where the oracle clears
10 %: {cleared}. TP and ATP spend the same ε per trajectory differently and
their likelihood has no closed form, so this bound is computed for PointEM only; `estimators.md` reports
what `denoise` achieves for all three.
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"data directory {args.data} not found: nothing to do")
        return 0
    rows = []
    for name in args.datasets:
        folder = args.data / name
        if not folder.exists():
            log(f"{name}: not found, skipped")
            continue
        rows.extend(run(name, folder, args.epsilons))
    if not rows:
        return 0
    df = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / "denoise_oracle.csv", index=False)
    (args.out / "denoise_oracle.md").write_text(page(df), encoding="utf-8")
    print(table(df))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
