"""The public point set P (ALGORITHM §1, §2.5): immutable locations, exact diameter, nearest queries."""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any, cast

import numpy as np

from geoldp._core import kernels as _kernels
from geoldp._core.errors import GeoLDPWarning
from geoldp._core.geo import haversine_array_m, to_radians
from geoldp._core.kernels import EARTH_RADIUS_M
from geoldp._core.memory import loading
from geoldp._core.validation import check_int_range

__all__ = ["DUPLICATE_TOLERANCE_M", "PointSet"]

#: Two public points closer than this (haversine, metres) are duplicates of one location.
DUPLICATE_TOLERANCE_M = 1e-3
_BRUTE_FORCE_MAX = 256
_QUERY_CHUNK = 8192
#: odd multipliers of the cube hash of :func:`_duplicate_mask`
_CUBE_HASH = np.array(
    [0x9E3779B97F4A7C15 - (1 << 64), 0x632BE59BD9B4E019, 0x2545F4914F6CDD1D], dtype=np.int64
)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


def _coords(values: Any, name: str, caller: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == object or arr.dtype.kind not in "iuf":
        raise TypeError(
            f"The {name!r} parameter of {caller} must be an array of real numbers. "
            f"Got dtype {arr.dtype} instead."
        )
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"The {name!r} parameter of {caller} must be 1-D. Got shape {arr.shape} instead.")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(
            f"The {name!r} parameter of {caller} must contain finite values; position {int(bad[0])} is not "
            f"({bad.size} non-finite value(s) in total)."
        )
    return arr


def _unit_vectors(lam: np.ndarray, phi: np.ndarray) -> np.ndarray:
    cphi = np.cos(phi)
    return np.column_stack([cphi * np.cos(lam), cphi * np.sin(lam), np.sin(phi)])


def _duplicate_mask(lam: np.ndarray, phi: np.ndarray, xyz: np.ndarray) -> np.ndarray:
    """True for every point that has an *earlier* point within DUPLICATE_TOLERANCE_M (haversine).

    Sorting only, O(m log m) time and O(m) memory, without a spatial index (so without SciPy, whose
    import maps OpenBLAS: under an address-space limit that import failed, or crashed, on large sets):

    1. exact copies of an earlier (lon, lat) row are duplicates (many copies of one location would
       otherwise make one large group of candidates below);
    2. two locations within the tolerance are within a chord s of each other (chord ≤ arc), so each of
       their three Cartesian coordinates (in metres) differs by less than s. Cut space into cubes of side
       2s, shifted by 0 or s along each axis (8 grids): an interval shorter than s contains at most one
       multiple of s, so in at least one of the 8 grids the two share a cube. The points sharing a cube
       in any grid are the candidate pairs, and the haversine kernel decides each.
    """
    m = lam.shape[0]
    dup = np.zeros(m, dtype=bool)
    # stable sort on a hash of the (lon, lat) bits: equal rows are adjacent (unless a colliding row falls
    # between them; the cubes below still find that copy) in index order, so the first is the earliest
    bits = np.column_stack([lam, phi]).view(np.int64)
    order = np.argsort(bits @ _CUBE_HASH[:2], kind="stable")
    same = (lam[order[1:]] == lam[order[:-1]]) & (phi[order[1:]] == phi[order[:-1]])
    dup[order[1:][same]] = True
    rep = np.flatnonzero(~dup)
    if rep.shape[0] < 2:
        return dup
    side = DUPLICATE_TOLERANCE_M * 1.001  # the margin (1 µm) dwarfs the rounding of xyz·R (~1 nm)
    pts = xyz[rep] * EARTH_RADIUS_M
    for shift in itertools.product((0.0, side), repeat=3):
        cells = np.floor((pts + np.asarray(shift)) / (2.0 * side)).astype(np.int64)
        # one int64 key per cube (a hash: cubes that collide only add candidate pairs, never lose one)
        key = cells @ _CUBE_HASH  # wraps around on overflow, as intended
        o = np.argsort(key)
        c = key[o]
        new = np.ones(o.shape[0], dtype=bool)
        new[1:] = c[1:] != c[:-1]
        starts = np.flatnonzero(new)
        sizes = np.diff(np.append(starts, o.shape[0]))
        for k in np.unique(sizes[sizes > 1]):
            _mark_close_in_cubes(lam, phi, rep[o], starts[sizes == k], int(k), dup)
    return dup


def _mark_close_in_cubes(
    lam: np.ndarray, phi: np.ndarray, members: np.ndarray, starts: np.ndarray, k: int, dup: np.ndarray
) -> None:
    """Mark the later point of every pair within the tolerance among cubes of ``k`` points each.

    ``members[s:s + k]`` are the point indices of the cube starting at ``s``. Pairs are evaluated in
    chunks of about 2**20, so memory stays O(m) whatever the cube sizes (large cubes cost O(k²) time).
    """
    if k <= 1024:
        iu, ju = np.triu_indices(k, 1)
        per = max(1, (1 << 20) // iu.shape[0])
        for lo in range(0, starts.shape[0], per):
            s = starts[lo : lo + per, None]
            _mark_pairs(lam, phi, members[s + iu].ravel(), members[s + ju].ravel(), dup)
        return
    for s in starts:  # a cube of many points (thousands of distinct locations within 2 mm): row by row
        group = members[s : s + k]
        for r in range(k - 1):
            _mark_pairs(lam, phi, np.full(k - 1 - r, group[r]), group[r + 1 :], dup)


def _mark_pairs(lam: np.ndarray, phi: np.ndarray, i: np.ndarray, j: np.ndarray, dup: np.ndarray) -> None:
    d = np.empty(i.shape[0])
    _kernels.haversine_rad_many(lam[i], phi[i], lam[j], phi[j], d)
    close = d < DUPLICATE_TOLERANCE_M
    dup[np.maximum(i[close], j[close])] = True


def _exact_diameter(lam: np.ndarray, phi: np.ndarray, xyz: np.ndarray, tree: Any) -> float:
    """Exact max pairwise haversine distance, without an m×m matrix (``tree``: P's k-d tree over ``xyz``).

    1. m ≤ 256: brute force (numba, O(1) memory).
    2. A lower bound L from farthest-point sweeps (each an actual pair distance).
    3. L < 0.9·πR (every set that does not wrap around the globe): centre c = the point nearest the mean
       direction, r_p = d(c, p); by the triangle inequality only pairs with r_p + r_q ≥ L can be longer
       than L.
       Sorting r descending lets a numba double loop stop early; L is raised as longer pairs are found
       (:func:`geoldp._core.kernels.max_pairwise_sorted`).
    4. L ≥ 0.9·πR (sets spread around the globe): d(p, q) ≥ L iff q lies within chord 2·cos(L/2R) of the
       antipode −p, a small ball, so P's k-d tree on the unit vectors returns the few candidate pairs.

    Every candidate pair is evaluated with the haversine kernel, so the result equals the brute-force
    maximum; the pruning margins (relative 1e−7 plus 1 mm; chord 1e−6) cover the rounding of the formula
    (≤ ~0.2 m near antipodal pairs). Worst case (all points on a circle around c): O(m²) time, still O(m)
    memory.
    """
    m = lam.shape[0]
    if m <= _BRUTE_FORCE_MAX:
        return float(_kernels.max_pairwise_brute(lam, phi))
    mean = xyz.mean(axis=0)
    c = int(np.argmax(xyz @ mean))
    a, _ = _kernels.farthest_from(lam, phi, c)
    best = 0.0
    for _ in range(4):
        b, d = _kernels.farthest_from(lam, phi, a)
        if d <= best:
            break
        best = d
        a = b
    if best < 0.9 * math.pi * EARTH_RADIUS_M:
        r = np.empty(m)
        _kernels.haversine_from_one(lam[c], phi[c], lam, phi, r)
        order = np.argsort(-r, kind="stable").astype(np.int64)
        return float(_kernels.max_pairwise_sorted(lam, phi, order, r, best, 1e-7, 1e-3))
    anti = -xyz
    half = min(best / (2.0 * EARTH_RADIUS_M), math.pi / 2)
    radius = max(2.0 * math.cos(half), 0.0) + 1e-6
    for start in range(0, m, _QUERY_CHUNK):
        stop = min(m, start + _QUERY_CHUNK)
        lists = tree.query_ball_point(anti[start:stop], r=radius, return_sorted=False)
        lens = np.fromiter((len(x) for x in lists), dtype=np.int64, count=stop - start)
        if lens.sum() == 0:
            continue
        left = np.repeat(np.arange(start, stop, dtype=np.int64), lens)
        right = np.concatenate([np.asarray(x, dtype=np.int64) for x in lists if len(x)])
        best = max(best, float(_kernels.max_over_pairs(lam, phi, left, right)))
    return best


def _exact_keys(lam: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """A 64-bit key of the exact coordinates (``-0.0`` is ``0.0``); distinct points may share one."""
    a = (lam + 0.0).view(np.uint64)  # + 0.0 turns -0.0 into 0.0: one location, one key
    b = (phi + 0.0).view(np.uint64)
    return (a * np.uint64(0x9E3779B97F4A7C15)) ^ b  # array arithmetic wraps modulo 2**64


def _exact_table(lam: np.ndarray, phi: np.ndarray) -> tuple:
    """Sorted exact keys of the points whose key no other point shares, and their indices.

    Empty when some coordinate lies strictly between 0 and 1e−100 rad in magnitude (see
    :meth:`PointSet._exact_matches`). Points with an exact duplicate share a key and are left out, and so
    are the (rare) distinct points whose keys collide: the tree answers them. Plain read-only arrays
    searched with ``np.searchsorted``: nothing in them changes with the queries (a pandas hash index would
    cache its engine on first use).
    """
    tiny = (np.abs(lam) < 1e-100) & (lam != 0.0)
    tiny |= (np.abs(phi) < 1e-100) & (phi != 0.0)
    if tiny.any():
        return ()
    key = _exact_keys(lam, phi)
    order = np.argsort(key, kind="stable")
    skey = key[order]
    shared = np.zeros(skey.shape[0], dtype=bool)
    same = skey[1:] == skey[:-1]
    shared[1:] |= same
    shared[:-1] |= same
    if shared.all():
        return ()
    return (_readonly(skey[~shared]), _readonly(order[~shared].astype(np.int64)))


class PointSet:
    """The public location set P: immutable, validated, with its exact diameter.

    Parameters
    ----------
    lon, lat : array_like
        Longitudes in [−180, 180] and latitudes in [−90, 90], degrees WGS 84; at least 2 points.
    deduplicate : bool, default False
        Public points closer than 1 mm (haversine) describe one location. By default they are kept and a
        :class:`~geoldp.GeoLDPWarning` reports how many there are (duplicates are harmless for privacy
        but give one location more EM weight). With ``deduplicate=True`` only the first point of each group
        is kept, silently.

    Attributes
    ----------
    lon, lat : numpy.ndarray
        Read-only float64 coordinates in degrees (bit-identical to the input, after deduplication).
    lam, phi : numpy.ndarray
        Read-only radians (:func:`geoldp._core.geo.to_radians`).
    xyz : numpy.ndarray
        Read-only (m, 3) unit vectors.
    size : int
    crs : str
        Always ``"EPSG:4326"``.

    Raises
    ------
    TypeError
        Non-numeric coordinates.
    ValueError
        Fewer than 2 points, non-finite or out-of-range coordinates, mismatched lengths, or fewer than 2
        distinct locations after deduplication.

    Notes
    -----
    ``diameter_m`` is the sensitivity Δ of every exponential mechanism: the exact maximum pairwise haversine
    distance (equal to brute force, never an estimate), computed once (lazily, then cached) with O(m)
    memory; typically O(m log m) time, worst case O(m²) (all points on a circle around their centre).
    ``nearest`` uses a ``scipy.spatial.cKDTree`` over the unit vectors and returns the exact
    haversine-nearest point (ties → lowest index).

    The structures of the set (the diameter, the tree, the exact-match table) are built together, from
    the points alone, on the first use of any of them (:meth:`nearest` or :attr:`diameter_m`), whatever
    that call asks, and never change afterwards: a PointSet held after a release is in the same state
    whatever data was released with it (a structure built on demand for some queries only would tell,
    for instance, whether some input vertex was off P).

    Examples
    --------
    >>> ps = PointSet([0.0, 1.0, 0.0], [0.0, 0.0, 1.0])
    >>> len(ps), round(ps.diameter_km, 3)
    (3, 157.249)
    """

    __slots__ = (
        "_diameter",
        "_exact",
        "_hash",
        "_lam",
        "_lat",
        "_lon",
        "_phi",
        "_tree",
        "_xyz",
        "__weakref__",
    )
    # the slots' types (set once, through object.__setattr__, by _set, _build and __hash__)
    _lon: np.ndarray
    _lat: np.ndarray
    _lam: np.ndarray
    _phi: np.ndarray
    _xyz: np.ndarray
    _diameter: float | None
    _tree: Any  # scipy.spatial.cKDTree (scipy ships no type information), None until _build
    _exact: tuple[np.ndarray, ...] | None
    _hash: int | None  # of the coordinates, on first use

    def __init__(self, lon: Any, lat: Any, *, deduplicate: bool = False) -> None:
        lon = _coords(lon, "lon", "PointSet")
        lat = _coords(lat, "lat", "PointSet")
        if lon.shape != lat.shape:
            raise ValueError(
                "The 'lon' and 'lat' parameters of PointSet must have the same length. "
                f"Got {lon.shape[0]} and "
                f"{lat.shape[0]}."
            )
        if lon.shape[0] < 2:
            raise ValueError(f"A PointSet needs at least 2 points. Got {lon.shape[0]}.")
        for name, arr, limit in (("lat", lat, 90), ("lon", lon, 180)):
            bad = np.flatnonzero(~((arr >= -limit) & (arr <= limit)))
            if bad.size:
                raise ValueError(
                    f"The {name!r} parameter of PointSet must be in [-{limit}, {limit}]; "
                    f"position {int(bad[0])} is not."
                )
        if not isinstance(deduplicate, (bool, np.bool_)):
            raise TypeError(
                f"The 'deduplicate' parameter of PointSet must be a bool. Got {type(deduplicate).__name__}."
            )
        lam, phi = to_radians(lon, lat)
        xyz = _unit_vectors(lam, phi)
        dup = _duplicate_mask(lam, phi, xyz)
        n_dup = int(dup.sum())
        if lon.shape[0] - n_dup < 2:  # diameter 0: every exponential mechanism would divide by it
            raise ValueError(
                f"The public point set has {lon.shape[0]} points but they are all at one location (within "
                "1 mm; diameter 0). A PointSet needs at least 2 distinct locations: check the points file."
            )
        if n_dup:
            if deduplicate:
                keep = ~dup
                lon, lat, lam, phi, xyz = lon[keep], lat[keep], lam[keep], phi[keep], xyz[keep]
                if lon.shape[0] < 2:
                    raise ValueError(
                        "A PointSet needs at least 2 distinct locations (1 mm apart) after deduplication."
                    )
            else:
                warnings.warn(
                    f"The public point set has {n_dup} point(s) within 1 mm of an earlier point (duplicate "
                    "locations). They are kept, each giving its location one more share of the mechanism's "
                    "weight. To keep only the first of each group, build the set with "
                    "geoldp.PointSet.from_geodataframe(points, deduplicate=True) (or "
                    "geoldp.PointSet(lon, lat, deduplicate=True)) and pass that PointSet as points=; on the "
                    "command line, remove the "
                    "repeated rows from the points file.",
                    GeoLDPWarning,
                    stacklevel=2,
                )
        self._set(lon, lat, lam, phi, xyz, None)

    def _set(
        self,
        lon: np.ndarray,
        lat: np.ndarray,
        lam: np.ndarray,
        phi: np.ndarray,
        xyz: np.ndarray,
        diameter: float | None,
    ) -> None:
        for name, arr in zip(
            ("_lon", "_lat", "_lam", "_phi", "_xyz"), (lon, lat, lam, phi, xyz), strict=True
        ):
            object.__setattr__(self, name, _readonly(np.array(arr, dtype=np.float64)))
        object.__setattr__(self, "_diameter", None if diameter is None else float(diameter))
        object.__setattr__(self, "_tree", None)
        object.__setattr__(self, "_exact", None)
        object.__setattr__(self, "_hash", None)

    def _build(self) -> None:
        """Build every structure of P at once (the tree, the exact-match table, the diameter), from P alone.

        Called by the first use of any of them (:meth:`nearest`, :attr:`diameter_m`), before that call
        looks at its arguments: whatever it asked (an empty query, vertices on P or off it), P ends in the
        same state, so a PointSet held after a release says nothing about the data released with it. (A
        tree built only for the first query off P told exactly that.)
        """
        if self._tree is not None and self._diameter is not None:
            return
        with loading("SciPy's k-d tree (scipy.spatial), for the nearest public points,"):
            from scipy.spatial import cKDTree

        # chord length between unit vectors is monotone in the great-circle distance, so the Euclidean
        # nearest neighbour over the unit vectors is the haversine-nearest one (up to rounding, which
        # :meth:`nearest` settles with the haversine kernel)
        tree = cKDTree(self._xyz)  # the one k-d tree of P, also the diameter's
        if self._diameter is None:
            object.__setattr__(self, "_diameter", _exact_diameter(self._lam, self._phi, self._xyz, tree))
        object.__setattr__(self, "_exact", _exact_table(self._lam, self._phi))
        object.__setattr__(self, "_tree", tree)  # last: has_tree is True once all are built

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("PointSet is immutable.")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("PointSet is immutable.")

    # -- pickling ------------------------------------------------------------------------------------
    def __getstate__(self) -> Any:
        return {"lon": np.array(self._lon), "lat": np.array(self._lat), "diameter": self._diameter}

    def __setstate__(self, state: Any) -> None:
        lon = np.asarray(state["lon"], dtype=np.float64)
        lat = np.asarray(state["lat"], dtype=np.float64)
        lam, phi = to_radians(lon, lat)
        self._set(lon, lat, lam, phi, _unit_vectors(lam, phi), state["diameter"])

    def __reduce__(self) -> Any:
        return (_rebuild, (self.__getstate__(),))

    # -- basic attributes ----------------------------------------------------------------------------
    @property
    def lon(self) -> np.ndarray:
        """Longitudes in degrees (read-only)."""
        return self._lon

    @property
    def lat(self) -> np.ndarray:
        """Latitudes in degrees (read-only)."""
        return self._lat

    @property
    def lam(self) -> np.ndarray:
        """Longitudes in radians (read-only)."""
        return self._lam

    @property
    def phi(self) -> np.ndarray:
        """Latitudes in radians (read-only)."""
        return self._phi

    @property
    def xyz(self) -> np.ndarray:
        """Unit vectors, shape (m, 3) (read-only)."""
        return self._xyz

    @property
    def size(self) -> int:
        """Number of points m."""
        return int(self._lon.shape[0])

    def __len__(self) -> int:
        return self.size

    @property
    def crs(self) -> str:
        """Always ``"EPSG:4326"``."""
        return "EPSG:4326"

    @property
    def diameter_m(self) -> float:
        """Exact maximum pairwise haversine distance in metres (the EM sensitivity Δ), cached."""
        self._build()
        return cast(float, self._diameter)  # _build sets it

    @property
    def diameter_km(self) -> float:
        """``diameter_m / 1000``."""
        return self.diameter_m / 1000.0

    @property
    def tree(self) -> Any:
        """The ``scipy.spatial.cKDTree`` over :attr:`xyz` (Euclidean chords between unit vectors).

        Built with the other structures of P, from P alone, on the first use of any of them; the one
        spatial index of P, shared by :meth:`nearest` and the mechanisms' kernels. Query it, never change
        it.
        """
        self._build()
        return self._tree

    @property
    def has_tree(self) -> bool:
        """Whether the structures of P are built: after the first :meth:`nearest` or :attr:`diameter_m`,
        whatever that call asked (the spatial index, a cKDTree over the unit vectors, among them)."""
        return self._tree is not None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PointSet):
            return NotImplemented
        if other is self:
            return True
        return (
            self.size == other.size
            and np.array_equal(self._lon, other._lon)
            and np.array_equal(self._lat, other._lat)
        )

    def __hash__(self) -> int:
        # computed once: every call looks its index up by P (hashing 16 bytes a point each time)
        h = self._hash
        if h is None:
            h = hash((self._lon.tobytes(), self._lat.tobytes()))
            object.__setattr__(self, "_hash", h)
        return h

    def __repr__(self) -> str:
        return f"PointSet(size={self.size})"

    # -- queries -------------------------------------------------------------------------------------
    def _from_one(self, kernel: Any, index: Any, targets: Any) -> np.ndarray:
        # kernel(lam0, phi0, lam, phi, out) from point ``index`` to ``targets`` (default all points)
        i = check_int_range(index, "index", caller="PointSet", minimum=0, maximum=self.size - 1)
        t = self._targets(targets)
        out = np.empty(t.shape[0])
        kernel(self._lam[i], self._phi[i], self._lam[t], self._phi[t], out)
        return out

    def _targets(self, targets: Any) -> np.ndarray:
        if targets is None:
            return np.arange(self.size, dtype=np.int64)
        t = np.asarray(targets)
        if t.dtype.kind not in "iu":
            raise TypeError(
                f"The 'targets' parameter of PointSet must be an integer array. Got dtype {t.dtype}."
            )
        t = t.astype(np.int64).reshape(-1)
        if t.size and (t.min() < 0 or t.max() >= self.size):
            raise ValueError(
                f"The 'targets' parameter of PointSet must hold indices in [0, {self.size - 1}]."
            )
        return t

    def distances_m(self, index: Any, targets: Any = None) -> np.ndarray:
        """Haversine distances in metres from point ``index`` to ``targets`` (indices; default all points)."""
        return self._from_one(_kernels.haversine_from_one, index, targets)

    def bearings(self, index: Any, targets: Any = None) -> np.ndarray:
        """Initial bearings in radians from point ``index`` to ``targets`` (default all points)."""
        return self._from_one(_kernels.bearing_from_one, index, targets)

    def within(self, index: Any, radius_km: Any) -> np.ndarray:
        """Sorted indices r with ``d(P_index, P_r) <= radius_km·1000`` (haversine kernel; includes
        ``index``)."""
        from geoldp._core.validation import check_real

        radius = check_real(radius_km, "radius_km", caller="PointSet.within")
        if not radius >= 0.0:
            raise ValueError(
                f"The 'radius_km' parameter of PointSet.within must be >= 0. Got {radius_km!r} instead."
            )
        d = self.distances_m(index)
        return np.flatnonzero(d <= radius * 1000.0).astype(np.int64)

    def one_median(self, *, exact_max: int = 5000, n_candidates: int = 64) -> int:
        """The 1-median of the public points: the point of P minimising the sum of haversine distances to P.

        .. math:: \\operatorname{argmin}_{q \\in P} \\sum_{p \\in P} d(q, p)

        Ties go to the lowest position. It is the best constant release for NE when the originals are spread
        like P, and it uses no private data.

        - ``|P| <= exact_max``: exact, by summing the distances in blocks (time O(|P|²), memory O(|P|)).
        - larger P: the geometric median on the sphere is found by Weiszfeld's algorithm in the tangent
          plane; the ``n_candidates`` public points nearest to it are evaluated exactly, then a local search
          moves to the best of the ``n_candidates`` points nearest to the current best until none improves
          (time O(n_candidates · |P|) per step). The result is exact whenever the discrete 1-median is among
          those neighbours, which is the case for points spread over a city (the sum of distances is convex
          and the discrete optimum lies next to the continuous one); it is a local optimum otherwise.

        Parameters
        ----------
        exact_max : int, default 5000
            Largest |P| solved exactly.
        n_candidates : int, default 64
            Size of the neighbourhoods of the large-P search.

        Returns
        -------
        int
            Position of the 1-median in P.

        Examples
        --------
        >>> PointSet([0.0, 0.01, 0.02, 0.03, 0.5], [0.0] * 5).one_median()
        2
        """
        caller = "PointSet.one_median"
        for nm, val, lo in (("exact_max", exact_max, 0), ("n_candidates", n_candidates, 1)):
            if isinstance(val, bool) or not isinstance(val, int | np.integer) or val < lo:
                raise ValueError(f"The '{nm}' parameter of {caller} must be an int >= {lo}. Got {val!r}.")
        pts = self
        m = pts.size
        if m <= exact_max:
            return int(np.argmin(_sum_distances_m(pts, np.arange(m))))
        k = min(int(n_candidates), m)

        def neighbours(lon: float, lat: float) -> np.ndarray:
            d = haversine_array_m(lon, lat, pts.lon, pts.lat)
            return np.sort(np.argpartition(d, k - 1)[:k])

        lon, lat = _spherical_weiszfeld(pts)
        cand = neighbours(lon, lat)
        sums = _sum_distances_m(pts, cand)
        best, best_sum = int(cand[np.argmin(sums)]), float(sums.min())
        while True:
            cand = neighbours(float(pts.lon[best]), float(pts.lat[best]))
            sums = _sum_distances_m(pts, cand)
            j = int(np.argmin(sums))
            better = sums[j] < best_sum or (sums[j] == best_sum and cand[j] < best)
            if not better:
                return best
            best, best_sum = int(cand[j]), float(sums[j])

    def nearest(self, lon: Any, lat: Any) -> Any:
        """Nearest public point to each (lon, lat) (degrees): exact haversine nearest, ties → lowest index.

        Parameters
        ----------
        lon, lat : array_like
            Query coordinates in degrees (broadcast together; must be finite, lat in [−90, 90]).

        Returns
        -------
        idx : numpy.ndarray of int64
            Index of the nearest point (scalar 0-d results are returned as numpy scalars): the minimiser of
            the haversine kernel of :mod:`geoldp._core.kernels`; among equal distances, the lowest index.
        dist_m : numpy.ndarray of float64
            Haversine distance in metres (computed with the kernel of :mod:`geoldp._core.kernels`).

        Notes
        -----
        A query whose coordinates (in radians) are exactly those of a public point that no other public
        point coincides with is answered by an exact lookup (a binary search): its kernel distance is 0
        and every other point's is positive (see :meth:`_exact_matches`). This is the common case of
        vertices that are already public points. Every other query goes to the ``scipy.spatial.cKDTree``
        over the unit vectors, which proposes the two chord-nearest points. When the second is within a
        relative 1e−9 of the first (a tie up to rounding), every point within that margin is re-checked
        with the haversine kernel; queries whose nearest point is more than about 168° away (where the
        kernel itself loses digits) are settled by a full kernel scan.
        """
        self._build()  # first, whatever the query: the state of P never depends on what was asked
        lon_a = np.asarray(lon, dtype=np.float64)
        lat_a = np.asarray(lat, dtype=np.float64)
        lon_a, lat_a = np.broadcast_arrays(lon_a, lat_a)
        shape = lon_a.shape
        lon_f = lon_a.reshape(-1)
        lat_f = lat_a.reshape(-1)
        if not (np.all(np.isfinite(lon_f)) and np.all(np.isfinite(lat_f))):
            raise ValueError("The 'lon' and 'lat' parameters of PointSet.nearest must be finite.")
        if np.any(np.abs(lat_f) > 90.0):
            raise ValueError("The 'lat' parameter of PointSet.nearest must be in [-90, 90].")
        lam, phi = to_radians(lon_f, lat_f)
        idx = self._exact_matches(lam, phi)
        rest = np.flatnonzero(idx < 0)
        if rest.size:
            idx[rest] = self._nearest_rad(lam[rest], phi[rest])
        dist: np.ndarray = np.empty(idx.shape[0])
        _kernels.haversine_rad_many(lam, phi, self._lam[idx], self._phi[idx], dist)
        idx = idx.reshape(shape)
        dist = dist.reshape(shape)
        if idx.ndim == 0:
            return idx[()], dist[()]
        return idx, dist

    def _exact_matches(self, lam: np.ndarray, phi: np.ndarray) -> np.ndarray:
        """Index of the public point with exactly these radians when it is the unique nearest, else −1.

        The haversine kernel gives 0 for identical coordinates and, when no coordinate of P lies strictly
        between 0 and 1e−100 rad in magnitude, a positive distance for any two distinct ones: the two
        coordinate differences are then either 0 or at least ~1e−116, so each term of h is either 0 or above
        1e−270 (cos φ ≥ 6e−17 even at the poles) and h > 0. A point with an exact duplicate in P is left to
        the tree (it settles the tie by the lowest index); so is every query without an exact match, and
        every query when P has a coordinate in that tiny range.
        """
        out = np.full(lam.shape[0], -1, dtype=np.int64)
        if not self._exact or lam.shape[0] == 0:
            return out
        keys, index = self._exact
        q = _exact_keys(lam, phi)
        order = np.argsort(q)  # sorted queries search ~3x faster (each starts where the last one ended)
        pos = np.empty(q.shape[0], dtype=np.int64)
        pos[order] = np.minimum(np.searchsorted(keys, q[order]), keys.shape[0] - 1)
        cand = index[pos]
        # the key proposes a point; only the exact coordinates decide (a colliding key is a miss)
        hit = (keys[pos] == q) & (self._lam[cand] == lam) & (self._phi[cand] == phi)
        out[hit] = cand[hit]
        return out

    def _nearest_rad(self, lam: np.ndarray, phi: np.ndarray) -> np.ndarray:
        q = _unit_vectors(lam, phi)
        chord, ind = self._tree.query(q, k=2)
        idx = ind[:, 0].astype(np.int64)
        c0 = chord[:, 0]
        margin = c0 * 1e-9 + 1e-12
        # chord ≥ 1.99 is ≥ ~168°: the haversine kernel's asin(√h) loses up to ~1e−8 relative there
        unsure = np.flatnonzero((chord[:, 1] <= c0 + margin) | (c0 >= 1.99))
        if unsure.size:
            d = np.empty(self.size)
            for t in unsure:
                if c0[t] >= 1.99:
                    cand = np.arange(self.size)
                else:
                    cand = np.sort(np.asarray(self._tree.query_ball_point(q[t], c0[t] + 2.0 * margin[t])))
                dc = d[: cand.shape[0]]
                _kernels.haversine_from_one(lam[t], phi[t], self._lam[cand], self._phi[cand], dc)
                idx[t] = cand[int(np.argmin(dc))]  # argmin: first minimum, i.e. the lowest index
        return idx

    # -- GeoPandas interop ---------------------------------------------------------------------------
    @classmethod
    def from_geoseries(cls, gs: Any, *, deduplicate: bool = False) -> PointSet:
        """Build from a GeoSeries of Points in any CRS (reprojected to EPSG:4326).

        Raises
        ------
        ValueError
            No CRS (use ``set_crs()``), or missing/empty geometries.
        TypeError
            Non-Point geometries.
        """
        import geopandas as gpd

        if not isinstance(gs, gpd.GeoSeries):
            raise TypeError(f"from_geoseries needs a geopandas.GeoSeries. Got {type(gs).__name__}.")
        if gs.crs is None:
            raise ValueError("The public point layer has no CRS. Use `set_crs()` to declare it.")
        missing = np.flatnonzero(np.asarray(gs.isna() | gs.is_empty))
        if missing.size:
            raise ValueError(f"Public point at position {int(missing[0])} is missing or empty.")
        types = np.asarray(gs.geom_type)
        bad = np.flatnonzero(types != "Point")
        if bad.size:
            raise TypeError(
                f"A PointSet needs Point geometries; position {int(bad[0])} is a {types[bad[0]]}."
            )
        if not gs.crs.equals("EPSG:4326"):
            gs = gs.to_crs("EPSG:4326")
        lon = np.asarray(gs.x, dtype=np.float64)
        lat = np.asarray(gs.y, dtype=np.float64)
        return cls(lon, lat, deduplicate=deduplicate)

    @classmethod
    def from_geodataframe(cls, gdf: Any, *, deduplicate: bool = False) -> PointSet:
        """Build from the active geometry of a GeoDataFrame of Points (any CRS)."""
        import geopandas as gpd

        if not isinstance(gdf, gpd.GeoDataFrame):
            raise TypeError(f"from_geodataframe needs a geopandas.GeoDataFrame. Got {type(gdf).__name__}.")
        return cls.from_geoseries(gdf.geometry, deduplicate=deduplicate)

    def to_geoseries(self, crs: Any = None) -> Any:
        """The points as a GeoSeries in EPSG:4326, or reprojected to ``crs``."""
        import geopandas as gpd

        gs = gpd.GeoSeries(gpd.points_from_xy(self._lon, self._lat), crs="EPSG:4326")
        return gs if crs is None else gs.to_crs(crs)


def _rebuild(state: Any) -> PointSet:
    obj = PointSet.__new__(PointSet)
    obj.__setstate__(state)
    return obj


def _sum_distances_m(pts: PointSet, cand: np.ndarray) -> np.ndarray:
    """Σ_p d(P_c, p) for every candidate position c, in blocks (memory O(block · |P|))."""
    out = np.empty(cand.shape[0])
    block = max(1, 2_000_000 // pts.size)
    for i0 in range(0, cand.shape[0], block):
        c = cand[i0 : i0 + block]
        out[i0 : i0 + block] = haversine_array_m(pts.lon[c, None], pts.lat[c, None], pts.lon, pts.lat).sum(
            axis=1
        )
    return out


def _spherical_weiszfeld(pts: PointSet, n_iter: int = 200) -> tuple[float, float]:
    """Geometric median on the sphere (Weiszfeld steps in the tangent plane), as (lon, lat) degrees."""
    u = _unit_vectors(np.radians(pts.lon), np.radians(pts.lat))
    y = u.mean(axis=0)
    y /= np.linalg.norm(y)
    for _ in range(n_iter):
        cos_t = np.clip(u @ y, -1.0, 1.0)
        theta = np.arccos(cos_t)
        far = theta > 1e-12  # a point at y adds no direction (the usual Weiszfeld guard)
        tang = u[far] - cos_t[far, None] * y  # directions towards each point, length sin θ
        step = (tang / np.sin(theta[far])[:, None]).sum(axis=0) / np.sum(1.0 / theta[far])
        s = float(np.linalg.norm(step))
        if s < 1e-15:
            break
        y = math.cos(s) * y + math.sin(s) * step / s
        y /= np.linalg.norm(y)
    return math.degrees(math.atan2(y[1], y[0])), math.degrees(math.asin(max(-1.0, min(1.0, y[2]))))
