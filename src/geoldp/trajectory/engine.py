"""Engine entry point: perturb sequences of public-point indices with TP, ATP or PointEM.

:func:`perturb_trajectories` is the public contract. It validates everything (points, mechanism, options,
ε, every trajectory and every derived stage budget) **before the first random draw** (ALGORITHM §9.4, §11),
resolves ``rng`` once, and runs the sampler:

- ``sampler="fast"`` (default): the numba fast path :func:`geoldp.trajectory._fast.perturb_fast`, driven by
  a counter-based ChaCha20 stream per trajectory (stream id = global trajectory index) under one key drawn
  from the source, so seeded output does not depend on chunking. If the fast path is not importable the
  reference path is driven by the same streams (:class:`geoldp._core.randomness.ChaChaRandomSource`).
- ``sampler="reference"``: the normative pure-Python path of :mod:`._reference`, drawing through the
  randomness interface of the given source in trajectory order (tests pass enumerating sources).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn

import numpy as np

from geoldp._core.pointset import PointSet
from geoldp._core.randomness import ChaChaRandomSource, RandomSource, resolve_rng
from geoldp._core.validation import check_release_epsilon
from geoldp.budget import ReleaseCache, release_scope
from geoldp.trajectory import _reference as _ref
from geoldp.trajectory._base import PRIVACY_WARNING_EPSILON
from geoldp.trajectory.atp import ATP
from geoldp.trajectory.pointem import PointEM
from geoldp.trajectory.tp import TP
from geoldp.trajectory.tracs import TraCSC, TraCSD

#: Case-insensitive registry of mechanism names.
MECHANISMS: Mapping[str, type[TP] | type[ATP] | type[PointEM] | type[TraCSD] | type[TraCSC]] = {
    "tp": TP,
    "atp": ATP,
    "pointem": PointEM,
    "tracs-d": TraCSD,
    "tracs-c": TraCSC,
}
_MECH_TYPES = (TP, ATP, PointEM, TraCSD, TraCSC)
_SAMPLERS = ("fast", "reference")
#: Mechanism objects built from a name, ε and options (public configuration only; kept only once a
#: release returned, like the budget splits). ε above the warning threshold is never memoised, so the
#: warning is raised by every call.
_MECH_CACHE = ReleaseCache(maxsize=32)
#: (mechanism, length, |P|) whose stage budgets passed their checks.
_CHECKED = ReleaseCache(maxsize=1024)


def resolve_mechanism(
    mechanism: Any, epsilon: float | None = None, options: Mapping | None = None, *, caller: str
) -> Any:
    """Return a mechanism object from a name (plus ``epsilon`` and options) or pass an object through.

    Raises
    ------
    ValueError
        Unknown name (the message lists the valid names); ``epsilon`` conflicting with an object's.
    TypeError
        Wrong type, unknown option, or options given together with a mechanism object.
    """
    options = dict(options or {})
    if isinstance(mechanism, _MECH_TYPES):
        if options:
            raise TypeError(
                f"{caller} got options {sorted(options)} together with a mechanism object; set them on the "
                f"object instead, e.g. {type(mechanism).__name__}(epsilon=..., {sorted(options)[0]}=...)."
            )
        if epsilon is not None:
            from geoldp._core.validation import check_epsilon

            eps = check_epsilon(epsilon, caller=caller)
            if eps != mechanism.epsilon:
                raise ValueError(
                    f"The 'epsilon' parameter of {caller} ({eps!r}) conflicts with the mechanism object's "
                    f"epsilon ({mechanism.epsilon!r}); pass only one of them."
                )
        return mechanism
    if not isinstance(mechanism, str):
        raise TypeError(
            f"The 'mechanism' parameter of {caller} must be a name in {tuple(MECHANISMS)} or a TP, ATP, "
            f"PointEM, TraCSD or TraCSC object. Got {type(mechanism).__name__} instead."
        )
    cls = MECHANISMS.get(mechanism.lower())
    if cls is None:
        raise ValueError(f"Got mechanism={mechanism!r}; `mechanism` must be one of {tuple(MECHANISMS)}.")
    if epsilon is None:
        raise TypeError(f"The 'epsilon' parameter of {caller} is required when 'mechanism' is a name.")
    if type(epsilon) in (float, int) and 0.0 < epsilon <= PRIVACY_WARNING_EPSILON:
        # the object is immutable and a function of these values only; the types are in the key so that
        # 1 and 1.0 (equal, same hash) each get the object their own construction gives
        try:
            key = (cls, type(epsilon), epsilon, tuple(sorted((k, type(v), v) for k, v in options.items())))
            hash(key)
        except TypeError:  # an unhashable option (a lookup table given as a dict or list)
            key = None
        if key is not None:
            return _MECH_CACHE.get(key, _construct, cls, epsilon, options, caller)
    return _construct(cls, epsilon, options, caller)


def _construct(cls: Any, epsilon: float | None, options: dict, caller: str) -> Any:
    """``cls(epsilon=epsilon, **options)`` with an unknown option reported by name."""
    try:
        return cls(epsilon=epsilon, **options)
    except TypeError as exc:
        if "unexpected keyword argument" in str(exc):
            import dataclasses

            valid = sorted(f.name for f in dataclasses.fields(cls) if f.init and f.name != "epsilon")
            bad = sorted(set(options) - set(valid))
            raise TypeError(
                f"{caller} got unknown option(s) {bad} for mechanism {cls.name!r}; valid options are {valid}."
            ) from None
        raise


def validate_trajectories(trajectories: Iterable[Any], m: int, *, caller: str) -> list[np.ndarray]:
    """Check a sequence of trajectories (1-D integer arrays of indices into P) and return int64 copies.

    Raises
    ------
    TypeError
        ``trajectories`` is not a sequence, or a trajectory is not an integer array.
    ValueError
        A trajectory is empty, not 1-D, or holds an index outside [0, m). Messages name the trajectory's
        position, never its values.
    """
    if isinstance(trajectories, (str, bytes, Mapping)) or not isinstance(trajectories, Iterable):
        raise TypeError(
            f"The 'trajectories' parameter of {caller} must be a sequence of 1-D integer arrays. "
            f"Got {type(trajectories).__name__} instead."
        )
    out = []
    for pos, traj in enumerate(trajectories):
        if type(traj) is np.ndarray and traj.ndim == 1 and traj.dtype == np.int64 and traj.shape[0] > 0:
            out.append(traj)  # common case: range-checked below, all at once
            continue
        if isinstance(traj, (str, bytes)):
            raise TypeError(f"Trajectory {pos} passed to {caller} must be a 1-D integer array, not a string.")
        try:
            arr = np.asarray(traj)
        except (TypeError, ValueError):
            raise TypeError(f"Trajectory {pos} passed to {caller} must be a 1-D integer array.") from None
        if arr.ndim != 1:
            raise ValueError(
                f"Trajectory {pos} passed to {caller} must be a 1-D array; it has {arr.ndim} dimensions."
            )
        if arr.size == 0:
            raise ValueError(
                f"Trajectory {pos} passed to {caller} is empty; every trajectory needs >= 1 point."
            )
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            if arr.dtype == object and all(
                isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in arr
            ):
                arr = np.array([int(v) for v in arr], dtype=object)
            else:
                raise TypeError(
                    f"Trajectory {pos} passed to {caller} must hold integer indices into the points; "
                    f"got dtype {arr.dtype}."
                )
        if arr.min() < 0 or arr.max() >= m:
            _raise_out_of_range(pos, m, caller)
        out.append(arr.astype(np.int64))
    if not out:
        return []
    flat = np.concatenate(out)
    if flat.min() < 0 or flat.max() >= m:
        for pos, arr in enumerate(out):
            if arr.min() < 0 or arr.max() >= m:
                _raise_out_of_range(pos, m, caller)
    offsets = np.cumsum([a.shape[0] for a in out[:-1]])
    return np.split(flat, offsets)  # fresh int64 arrays (views of one private copy)


def _raise_out_of_range(pos: int, m: int, caller: str) -> NoReturn:
    raise ValueError(
        f"Trajectory {pos} passed to {caller} has an index out of range; indices must be in [0, {m})."
    )


def _check_points(points: object, caller: str) -> PointSet:
    if not isinstance(points, PointSet):
        raise TypeError(
            f"The 'points' parameter of {caller} must be a geoldp.PointSet. Got {type(points).__name__} "
            "instead; build one with PointSet(lon, lat) or PointSet.from_geodataframe(gdf)."
        )
    return points


def check_budgets(mech: Any, lengths: Iterable[int], m: int) -> None:
    """Check every derived stage budget of ``mech`` for each distinct trajectory length (before any draw)."""
    for n in sorted(set(lengths)):
        # a pass is memoised (public configuration: the mechanism, a length, |P|); a failure raises each time
        _CHECKED.get((mech, int(n), int(m)), _check_length_budgets, mech, int(n), int(m))


def _check_length_budgets(mech: Any, n: int, m: int) -> bool:
    mech.check_budgets(n, m)
    return True


def perturb_trajectories(
    trajectories: Iterable[Any],
    points: PointSet,
    *,
    mechanism: Any = "atp",
    epsilon: float | None = None,
    return_ledger: bool = False,
    return_diagnostics: bool = False,
    rng: Any = None,
    n_jobs: int = 1,
    **options: Any,
) -> Any:
    """Perturb trajectories of public-point indices under ε-LDP with TP, ATP or PointEM.

    Parameters
    ----------
    trajectories : sequence of 1-D integer arrays
        Each trajectory is a sequence of indices into ``points`` (any length ≥ 1). One trajectory is the
        unit of privacy: it receives the whole budget ``epsilon``.
    points : PointSet
        The public location set P.
    mechanism : {"atp", "tp", "pointem"} or mechanism object, default "atp"
        Case-insensitive name, or a :class:`TP`, :class:`ATP` or :class:`PointEM` object (then ``epsilon``
        may be omitted, and options must not be given).
    epsilon : float, optional
        Total budget per trajectory; required with a name. In the range of every release,
        [0.001, 53·ln 2 ≈ 36.74] (:func:`geoldp._core.validation.check_release_epsilon`); a mechanism object
        passed alone keeps only its primitives' limits (for audits at a large ε).
    return_ledger : bool, default False
        Also return the budget ledger of every trajectory.
    return_diagnostics : bool, default False
        Also return aggregate diagnostics (fallback counts; for ATP region sizes and calibration branches),
        recomputed from the released transcripts (post-processing). This runs the pure-Python reference
        sampler, which is slower and consumes randomness differently from the default fast path.
    rng : {None, int, array_like[ints], SeedSequence, BitGenerator, Generator}, optional
        ``None`` (default) uses the operating system's CSPRNG. Anything else seeds NumPy's
        ``default_rng`` and is **for experiments and tests only**, not for deployment.
    n_jobs : int, default 1
        Threads for the fast path (contiguous chunks of trajectories; the compiled kernel releases the GIL).
        ``-1`` uses every core. The output is identical for any ``n_jobs``: every trajectory draws from its
        own stream.
    **options
        Mechanism options when ``mechanism`` is a name (see :class:`TP` and :class:`ATP`).

    Returns
    -------
    outputs : list of ndarray of int64
        Perturbed trajectories, same lengths, indices into ``points``.
    ledgers : list of Ledger
        Only with ``return_ledger=True``; ``ledgers[i]`` is trajectory i's ledger (sum = ``epsilon``).
    diagnostics : dict
        Only with ``return_diagnostics=True`` (after the ledgers if both are requested).

    Raises
    ------
    TypeError
        Wrong type of ``points``, ``mechanism``, ``epsilon``, ``rng``, an option, or a non-integer trajectory.
    ValueError
        Unknown mechanism name, invalid ε or option, empty or out-of-range trajectory (the message gives
        its position), or a derived stage budget beyond its primitive's limit (the message names the stage).

    Examples
    --------
    >>> import numpy as np
    >>> from geoldp import PointSet, perturb_trajectories
    >>> pts = PointSet([0.0, 0.01, 0.02, 0.03], [0.0, 0.01, 0.0, 0.01])
    >>> out = perturb_trajectories([np.array([0, 1, 2])], pts, mechanism="tp", epsilon=1.0, rng=0)
    >>> out[0].shape, out[0].dtype
    ((3,), dtype('int64'))
    """
    # the budget splits this call computes are kept for later calls only if it returns its release
    with release_scope():
        caller = "perturb_trajectories"
        points = _check_points(points, caller)
        if epsilon is not None:  # a budget asked for is a release's: its one range (an object keeps its own)
            check_release_epsilon(epsilon, caller=caller)
        mech = resolve_mechanism(mechanism, epsilon, options, caller=caller)
        check_discrete(mech, caller)
        trajs = validate_trajectories(trajectories, points.size, caller=caller)
        check_budgets(mech, [t.shape[0] for t in trajs], points.size)
        n_jobs = check_n_jobs(n_jobs, caller)
        source = resolve_rng(rng)
        if return_diagnostics:
            outputs, diags = _run_reference(trajs, points, mech, source, diagnostics=True)
        else:
            outputs = run(trajs, points, mech, rng=source, n_jobs=n_jobs)
        result: list = [outputs]
        if return_ledger:
            cache: dict[int, object] = {}
            result.append([cache.setdefault(t.shape[0], mech.ledger(t.shape[0])) for t in trajs])
        if return_diagnostics:
            result.append(diags)
        return outputs if len(result) == 1 else tuple(result)


def precompute(
    points: PointSet, *, mechanism: Any = "atp", epsilon: float | None = None, n_jobs: int = 1, **options: Any
) -> bool:
    """Build, ahead of the releases, the public structures that ``mechanism``'s releases over ``points`` read.

    A release builds what it needs of them itself: P's spatial index always and, for ATP, its quadtree and
    the public table over P (per point, ΔR and the certified η interval of every Square-Wave band) only
    once the calls over the point set with the same public configuration repay the table's build (about
    30 s per ε at |P| = 10⁵, repaid by about 430,000 trajectories there), counted across calls and, through
    a table kept on disk, across processes. A campaign that knows it will release
    over the same point set many times can build them here at once instead: they are cached with the point
    set (the table also on disk) and every later release over it with the same public configuration uses
    them (ATP, calls of 20,000 trajectories: about 5× faster at |P| = 10⁴, 1.6–2.6× at 10⁵). Releases are
    bit-identical with or without them.

    Parameters
    ----------
    points : PointSet
        The public location set P.
    mechanism : {"atp", "tp", "pointem"} or mechanism object, default "atp"
        As in :func:`perturb_trajectories`: the table depends on ε and the mechanism's options.
    epsilon : float, optional
        Total budget per trajectory; required with a name.
    n_jobs : int, default 1
        Threads that build the table (``-1``: every core); the table is the same for any ``n_jobs``.
    **options
        Mechanism options when ``mechanism`` is a name.

    Returns
    -------
    bool
        Whether ATP's public tables are ready for this configuration: ``False`` for TP and PointEM (they use
        only the spatial index) and above 100,000 points, where no table is kept (its build grows like
        |P|^1.5; ATP then takes its certified traversal per copy).

    Raises
    ------
    TypeError, ValueError
        As :func:`perturb_trajectories` for ``points``, ``mechanism``, ``epsilon`` and options.

    Notes
    -----
    Everything built depends on P and the mechanism's public configuration only, never on trajectories.

    Examples
    --------
    >>> from geoldp import PointSet
    >>> from geoldp.trajectory import precompute
    >>> pts = PointSet([0.0, 0.01, 0.02, 0.03], [0.0, 0.01, 0.0, 0.01])
    >>> precompute(pts, mechanism="atp", epsilon=4.0)
    True
    """
    with release_scope():  # the budget splits it reads are public, but kept only as a release keeps them
        caller = "precompute"
        points = _check_points(points, caller)
        mech = resolve_mechanism(mechanism, epsilon, options, caller=caller)
        n_jobs = check_n_jobs(n_jobs, caller)
        if getattr(mech, "continuous", False):
            return False  # TraCS reads no public point set
        from geoldp.trajectory._fast import precompute as _precompute

        return bool(_precompute(points, mech, n_jobs))


def check_discrete(mech: Any, caller: str) -> None:
    """Refuse a continuous-space mechanism (TraCS) where index sequences into P are perturbed."""
    if getattr(mech, "continuous", False):
        raise ValueError(
            f"{caller} perturbs index sequences into a public point set; {mech.name!r} releases coordinates "
            "inside a public box: use geoldp.trajectory.perturb_coordinates or gdf.ldp.perturb(..., "
            f"mechanism={mech.name!r}, bounds=...)."
        )


def check_n_jobs(n_jobs: object, caller: str) -> int:
    """``n_jobs`` as a positive thread count (``-1`` → every core)."""
    import os

    from geoldp._core.validation import check_int_range

    n = check_int_range(n_jobs, "n_jobs", caller=caller, minimum=-1)
    if n == 0:
        raise ValueError(
            f"The 'n_jobs' parameter of {caller} must be a positive int or -1 (every core). Got 0."
        )
    return (os.cpu_count() or 1) if n == -1 else n


def run(
    trajectories: Sequence[np.ndarray],
    points: PointSet,
    mechanism: Any,
    *,
    rng: Any,
    offset: int = 0,
    sampler: str = "fast",
    progress: bool = False,
    n_jobs: int = 1,
) -> list[np.ndarray]:
    """Internal: perturb already-validated trajectories (list of int64 arrays).

    Parameters
    ----------
    rng : RandomSource
        An already-resolved source. ``sampler="fast"`` draws ONE stream key from it; ``"reference"`` draws
        every stage through it, in trajectory order.
    offset : int
        Global index of the first trajectory (the ChaCha stream id of trajectory i is ``offset + i``).
    sampler : {"fast", "reference"}
    progress : bool
        Show a tqdm progress bar if tqdm is installed.
    n_jobs : int
        Threads of the fast path (already validated).
    """
    if sampler not in _SAMPLERS:
        raise ValueError(f"Got sampler={sampler!r}; `sampler` must be one of {_SAMPLERS}.")
    if not isinstance(rng, RandomSource):
        rng = resolve_rng(rng)
    if sampler == "reference":
        return _run_reference(trajectories, points, mechanism, rng, progress=progress)[0]
    return run_with_key(
        trajectories,
        points,
        mechanism,
        key=rng.stream_key(),
        offset=offset,
        policy=rng.policy,
        progress=progress,
        n_jobs=n_jobs,
    )


def run_with_key(
    trajectories: Sequence[np.ndarray],
    points: PointSet,
    mechanism: Any,
    *,
    key: np.ndarray | None,
    offset: int = 0,
    policy: str = "seeded",
    sampler: str = "fast",
    progress: bool = False,
    n_jobs: int = 1,
) -> list[np.ndarray]:
    """Internal: perturb with per-trajectory ChaCha20 streams under ``key`` (stream id = offset + i).

    The result depends only on ``key`` and each trajectory's global index, never on chunking or ``n_jobs``.
    """
    trajs = [np.asarray(t, dtype=np.int64) for t in trajectories]
    if not trajs:
        return []
    key = np.ascontiguousarray(key, dtype=np.uint32)
    if sampler == "fast":  # the compiled fast path (numba is a hard dependency: it always imports)
        from geoldp.trajectory._fast import perturb_fast

        flat, offsets = _flatten(trajs)
        out = perturb_fast(flat, offsets, points, mechanism, key, int(offset), n_jobs=n_jobs)
        return _split(np.asarray(out, dtype=np.int64), offsets)
    streams = [ChaChaRandomSource(key, offset + i, policy=policy) for i in range(len(trajs))]
    return _run_reference(trajs, points, mechanism, streams, progress=progress)[0]


def kernel_state(mechanism: Any) -> str:
    """``"ready"``, ``"cached"`` or ``"compile"``: what the first call of ``mechanism`` waits for.

    See :func:`geoldp.trajectory._fast.kernel_state`; it reads only this process's state and numba's cache
    directory (public, no data).
    """
    from geoldp.trajectory._fast import kernel_state as state

    return state(mechanism)


def _flatten(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    # the concatenation and the offsets of its parts (part i is flat[offsets[i]:offsets[i + 1]])
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum([a.shape[0] for a in arrays], out=offsets[1:])
    return np.concatenate(arrays), offsets


def _split(out: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    # views into one fresh array (they do not overlap); Python ints index faster than numpy ones
    bounds = offsets.tolist()
    return [out[bounds[i] : bounds[i + 1]] for i in range(len(bounds) - 1)]


def _progress(items: Any, progress: bool) -> Any:
    if not progress:
        return items
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return items
    return tqdm(items, desc="perturbing", unit="traj")


def _run_reference(
    trajs: Sequence[np.ndarray],
    points: PointSet,
    mechanism: Any,
    source: RandomSource | Sequence[RandomSource],
    *,
    diagnostics: bool = False,
    progress: bool = False,
) -> Any:
    # one source for all, in trajectory order, or one per trajectory (its ChaCha20 stream)
    cache: dict[int, _ref.Context] = {}
    outputs = []
    agg = _new_diagnostics() if diagnostics else None
    for i, traj in enumerate(_progress(trajs, progress)):
        n = traj.shape[0]
        ctx = cache.get(n) or cache.setdefault(n, _ref.Context(mechanism, points, n))
        src = source if isinstance(source, RandomSource) else source[i]
        out, runs = _ref.perturb_one(ctx, points.lam[traj], points.phi[traj], src)
        outputs.append(out)
        if agg is not None:
            _add_diagnostics(agg, _ref.diagnostics_of(ctx, runs))
    return outputs, agg


def _new_diagnostics() -> dict:
    return {
        "trajectories": 0,
        "fallback": dict.fromkeys(_ref.FALLBACK_NAMES, 0),
        "region_sizes": [],
        "eta_branch": {"weighted": 0, "k_empty": 0, "c_empty": 0},
    }


def _add_diagnostics(agg: dict, d: dict) -> None:
    agg["trajectories"] += 1
    for k, v in d["fallback"].items():
        agg["fallback"][k] += v
    for copy in d.get("copies", {}).values():
        agg["region_sizes"].append(copy["region_size"])
        agg["eta_branch"][copy["eta_branch"]] += 1


def perturb_coordinates(
    trajectories: Any,
    *,
    mechanism: Any = "tracs-d",
    epsilon: float | None = None,
    rng: Any = None,
    return_ledger: bool = False,
    **options: Any,
) -> Any:
    """Release trajectories of planar coordinates with TraCS-D or TraCS-C (no public point set needed).

    Parameters
    ----------
    trajectories : sequence of (n, 2) float arrays
        Each trajectory's locations, in the planar units of ``bounds`` (a projected CRS). One trajectory is
        the unit of privacy: it receives the whole ``epsilon``.
    mechanism : {"tracs-d", "tracs-c"} or TraCSD / TraCSC object, default "tracs-d"
    epsilon : float, optional
        Budget per trajectory; required with a name.
    rng : {None, int, array_like[ints], SeedSequence, BitGenerator, Generator}, optional
        ``None`` (default) uses the operating system's CSPRNG; anything else seeds NumPy (experiments and
        tests only).
    return_ledger : bool, default False
        Also return each trajectory's ledger.
    **options
        ``bounds`` (required with a name), ``direction_share``, ``origin`` (TraCS-D), ``x_share`` (TraCS-C).

    Returns
    -------
    outputs : list of (n, 2) float arrays
    ledgers : list of Ledger
        Only with ``return_ledger=True``.

    Raises
    ------
    TypeError, ValueError
        A bad mechanism, ε, option, or a trajectory that is not an (n ≥ 1, 2) array of finite numbers (the
        message gives its position).

    Examples
    --------
    >>> import numpy as np
    >>> from geoldp.trajectory import perturb_coordinates
    >>> out = perturb_coordinates([np.array([[10.0, 20.0], [30.0, 40.0]])], mechanism="tracs-c",
    ...                           epsilon=2.0, bounds=(0, 0, 100, 100), rng=0)
    >>> out[0].shape
    (2, 2)
    """
    caller = "perturb_coordinates"
    with release_scope():
        mech = resolve_mechanism(mechanism, epsilon, options, caller=caller)
        if not getattr(mech, "continuous", False):
            raise ValueError(
                f"{caller} releases coordinates with 'tracs-d' or 'tracs-c'; use perturb_trajectories for "
                f"{mech.name!r}."
            )
        arrays = []
        for pos, traj in enumerate(trajectories):
            if (
                type(traj) is np.ndarray
                and traj.dtype == np.float64
                and traj.ndim == 2
                and traj.shape[1] == 2
            ):
                arr = traj  # the common case: finiteness is checked below, all at once
            else:
                arr = np.asarray(traj)
                if arr.dtype.kind not in "iuf" or arr.ndim != 2 or arr.shape[1] != 2:
                    raise ValueError(
                        f"Trajectory {pos} passed to {caller} must be an (n >= 1, 2) array of numbers."
                    )
                arr = arr.astype(np.float64)
            if arr.shape[0] == 0:
                raise ValueError(
                    f"Trajectory {pos} passed to {caller} must be an (n >= 1, 2) array of numbers."
                )
            arrays.append(arr)
        lengths = [a.shape[0] for a in arrays]
        outputs: list[np.ndarray] = []
        if arrays:
            flat, offsets = _flatten(arrays)
            bad = ~np.isfinite(flat).all(axis=1)
            if bad.any():
                pos = int(np.searchsorted(offsets, np.flatnonzero(bad)[0], side="right") - 1)
                raise ValueError(f"Trajectory {pos} passed to {caller} has a NaN or infinite coordinate.")
            for n in sorted(set(lengths)):
                mech.check_budgets(n)
            source = resolve_rng(rng)
            ox, oy = mech.perturb_xy(flat[:, 0], flat[:, 1], offsets, key=source.stream_key())
            outputs = _split(np.column_stack([ox, oy]), offsets)
        if return_ledger:
            return outputs, [mech.ledger(n) for n in lengths]
        return outputs
