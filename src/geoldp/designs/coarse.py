"""Coarse-to-fine answers: a report over a coarser public zone level, spread to the asked zones.

A report over fewer zones has less noise per zone (the oracle's domain is smaller and each cell
collects more reports). :func:`coarse_zones` builds a coarser public grid over the asked zones' bounds;
the collector releases an ordinary :func:`geoldp.report` over it (one ε-LDP release, the whole budget);
:func:`spread_matrix` and :func:`spread_counts` then share each coarse cell's estimate among the asked
zones in proportion to the public points of P that fall in each (uniform over P within a coarse cell,
the same rule as the uniform no-data baseline). Everything after the release reads only the release,
P and the zones: post-processing, so the design is ε-LDP with the report's ε.

The spread answer is biased wherever the population is not spread like P inside a coarse cell; it
trades that bias for the lower noise of the coarse report (the planner measures which wins).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from geoldp._core.area import area_record, record_area
from geoldp.zones import check_zones, zone_grid, zone_of_vertices

__all__ = ["coarse_zones", "spread_counts"]


def coarse_cells(n_zones: int) -> int:
    """Columns (= rows) of the default coarse grid: about half the asked zones' resolution per side.

    Examples
    --------
    >>> coarse_cells(100), coarse_cells(16), coarse_cells(1)
    (5, 2, 1)
    """
    if isinstance(n_zones, bool) or not isinstance(n_zones, int | np.integer) or n_zones < 1:
        raise ValueError("The 'n_zones' parameter of geoldp.designs.coarse.coarse_cells must be an int >= 1.")
    return max(1, int(round(math.sqrt(int(n_zones)) / 2.0)))


def coarse_zones(zones: Any, *, cells: int | None = None) -> Any:
    """A coarser public grid over the bounds of the asked (public) zones, in their CRS.

    Parameters
    ----------
    zones : GeoDataFrame or GeoSeries of polygons
        The public zones the question is about.
    cells : int, optional
        Columns and rows of the coarse grid (default :func:`coarse_cells` of the number of zones).

    Returns
    -------
    geopandas.GeoDataFrame
        The coarse grid (as :func:`geoldp.zone_grid`).

    Examples
    --------
    >>> from geoldp import zone_grid
    >>> len(coarse_zones(zone_grid((0.0, 0.0, 1.0, 1.0), cells=10)))
    25
    """
    z = check_zones(zones, caller="geoldp.designs.coarse.coarse_zones")
    out = zone_grid(z.series, cells=coarse_cells(z.size) if cells is None else cells)
    if (record := area_record(zones)) is not None:  # zones laid over trajectories: so is the coarse grid
        record_area(out, record["bounds"], record["crs"])
    return out


def spread_matrix(fine_of_point: Any, coarse_of_point: Any, n_fine: int, n_coarse: int) -> np.ndarray:
    """Share of each coarse cell's public points that lie in each asked zone, ``(n_fine, n_coarse)``.

    Parameters
    ----------
    fine_of_point, coarse_of_point : array_like of int
        Asked-zone and coarse-cell position of every public point (``n_fine`` / ``n_coarse`` = outside).
    n_fine, n_coarse : int
        Numbers of asked zones and coarse cells.

    Returns
    -------
    numpy.ndarray
        Column ``c`` sums to 1 over the asked zones when coarse cell ``c`` holds a point of P inside an
        asked zone, else 0. Its size is the zones', never P's squared.

    Examples
    --------
    >>> spread_matrix([0, 0, 1, 2], [0, 0, 0, 1], 3, 2).tolist()
    [[0.6666666666666666, 0.0], [0.3333333333333333, 0.0], [0.0, 1.0]]
    """
    f = np.asarray(fine_of_point, dtype=np.int64)
    c = np.asarray(coarse_of_point, dtype=np.int64)
    if f.shape != c.shape:
        raise ValueError("spread_matrix needs one asked zone and one coarse cell per public point.")
    ok = (f < n_fine) & (c < n_coarse)
    joint = np.bincount(f[ok] * n_coarse + c[ok], minlength=n_fine * n_coarse).astype(np.float64)
    joint = joint.reshape(n_fine, n_coarse)
    total = joint.sum(axis=0)
    return np.divide(joint, total, out=np.zeros_like(joint), where=total > 0)


def spread_of_points(zones: Any, coarse: Any, lon: Any, lat: Any) -> np.ndarray:
    """:func:`spread_matrix` of the public points ``(lon, lat)`` between two public zone sets.

    Examples
    --------
    >>> from geoldp import zone_grid
    >>> fine, coarse = zone_grid((0.0, 0.0, 1.0, 1.0), cells=2), zone_grid((0.0, 0.0, 1.0, 1.0), cells=1)
    >>> spread_of_points(fine, coarse, [0.1, 0.2, 0.9], [0.1, 0.2, 0.9]).ravel().tolist()
    [0.6666666666666666, 0.0, 0.0, 0.3333333333333333]
    """
    zf = check_zones(zones, caller="geoldp.designs.coarse.spread_of_points")
    zc = check_zones(coarse, caller="geoldp.designs.coarse.spread_of_points")
    lon, lat = np.asarray(lon, dtype=np.float64), np.asarray(lat, dtype=np.float64)
    return spread_matrix(zone_of_vertices(zf, lon, lat), zone_of_vertices(zc, lon, lat), zf.size, zc.size)


def spread_counts(coarse_counts: Any, matrix: np.ndarray, *, od: bool = False) -> np.ndarray:
    """Counts over the asked zones from counts over the coarse cells (post-processing).

    Parameters
    ----------
    coarse_counts : array_like
        Estimated counts per coarse cell (``n_coarse``), or per ordered pair of coarse cells
        (``n_coarse²``, row-major) with ``od=True``.
    matrix : numpy.ndarray
        :func:`spread_matrix` (``n_fine × n_coarse``).
    od : bool, default False
        Spread both ends of every pair: ``M C Mᵀ``.

    Returns
    -------
    numpy.ndarray
        ``n_fine`` counts, or ``n_fine²`` (row-major) with ``od=True``.

    Examples
    --------
    >>> m = spread_matrix([0, 1, 2, 2], [0, 0, 1, 1], 3, 2)
    >>> spread_counts([10.0, 4.0], m).tolist()
    [5.0, 5.0, 4.0]
    """
    m = np.asarray(matrix, dtype=np.float64)
    c = np.asarray(coarse_counts, dtype=np.float64)
    k = m.shape[1]
    if od:
        if c.shape != (k * k,):
            raise ValueError(f"spread_counts(od=True) needs {k * k} pair counts; got shape {c.shape}.")
        return (m @ c.reshape(k, k) @ m.T).reshape(-1)
    if c.shape != (k,):
        raise ValueError(f"spread_counts needs {k} coarse counts; got shape {c.shape}.")
    return m @ c
