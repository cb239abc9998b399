"""The kernels compiled ahead of time, with the exact argument types the Python side passes them.

Each :class:`Export` names one numba function that Python code calls directly (the fast-path drivers and
the few kernels the first call of a mechanism needs), and one signature. numba compiles a function once
per argument *type* (dtype, dimensions, layout, read-only flag); an ahead-of-time export has a single
signature, and its argument conversion checks little more than the item size. So
:class:`geoldp._aot.Entry` uses an export only for arguments whose numba types are exactly these (a
read-only array may also be writable), and calls the numba function otherwise: the result is the one the
numba function gives.

The table is read by the build (:mod:`geoldp._aot_build`), by :mod:`geoldp._aot` when it meets argument
types it has not seen, and by the tests, which check every signature against the types of a real call.
"""

from __future__ import annotations

from dataclasses import dataclass

from numba.core import types

__all__ = ["Export", "exports", "exports_by_name"]


def _arr(dtype, ndim: int, *, readonly: bool = False) -> types.Array:
    return types.Array(dtype, ndim, "C", readonly=readonly)


F1 = _arr(types.float64, 1)
F2 = _arr(types.float64, 2)
I1 = _arr(types.int64, 1)
I2 = _arr(types.int64, 2)
U1 = _arr(types.uint32, 1)
RF1 = _arr(types.float64, 1, readonly=True)  # P's coordinates (read-only arrays of the PointSet)
RF2 = _arr(types.float64, 2, readonly=True)  # P's unit vectors
i8 = types.int64
f8 = types.float64
b1 = types.boolean
none = types.none


@dataclass(frozen=True)
class Export:
    """One exported function: ``name`` in the extension, ``module.function`` in geoldp, its signature."""

    name: str
    module: str
    function: str
    signature: object  # a numba Signature


def _records():
    """The named-tuple records of the fast path, as numba types."""
    from geoldp.trajectory._fast import CopyPlan, KernelIndex, RegionPlan, Work

    index = types.NamedTuple([RF1, RF1, RF2, F2, I1, F1, I1, F2, I1, f8], KernelIndex)
    copies = types.NamedTuple([f8, i8, b1, b1, b1, F2, F2, F2], CopyPlan)
    region = types.NamedTuple([I1, F2, I2, b1, f8, b1, F2, F2, F2, F2, i8, b1, b1], RegionPlan)
    work = types.NamedTuple([U1, I1, I2, F2, I2, F2, F2, I1, I2, I1, F1, I1], Work)
    return index, copies, region, work


def _build_exports() -> tuple[Export, ...]:
    index, copies, region, work = _records()
    # _run(flat, offsets, key, first_stream, eps_single, prop1, prop2, out, ix, cp, rp, w, dflt)
    head = (I1, I1, U1, i8, F1, i8, i8, I1, index)
    run = "geoldp.trajectory._fast"
    anchor = "geoldp.trajectory._fast_anchor"
    kernels = "geoldp._kernels"
    return (
        Export("run_pointem", run, "_run", types.void(*head, none, none, work, none)),
        Export("run_tp", run, "_run", types.void(*head, copies, none, work, none)),
        Export("run_atp", run, "_run", types.void(*head, copies, region, work, F1)),
        Export("anchor_points", anchor, "_anchor_points", types.void(I1, I1, RF1, RF1, b1, F1, F1)),
        Export("nearest_exact", anchor, "_nearest_exact", types.void(F1, F1, I2, RF1, RF1, I1)),
        Export("nearest_scan", anchor, "_nearest_scan", i8(f8, f8, RF1, RF1)),
        Export("region_tree", "geoldp.trajectory._atp_region", "_build", types.void(F2, I1, i8, i8, I2, F2)),
        Export("is_pivot", "geoldp.trajectory.split", "is_pivot", b1(i8, i8)),
        Export("farthest_from", kernels, "farthest_from", types.Tuple([i8, f8])(RF1, RF1, i8)),
        Export("haversine_from_one", kernels, "haversine_from_one", F1(f8, f8, RF1, RF1, F1)),
        Export("max_pairwise_brute", kernels, "max_pairwise_brute", f8(RF1, RF1)),
        Export("max_pairwise_sorted", kernels, "max_pairwise_sorted", f8(RF1, RF1, I1, F1, f8, f8, f8)),
    )


_EXPORTS: tuple[Export, ...] | None = None


def exports() -> tuple[Export, ...]:
    """Every export (built on first use: it imports the fast path's record classes)."""
    global _EXPORTS
    if _EXPORTS is None:
        _EXPORTS = _build_exports()
    return _EXPORTS


def exports_by_name() -> dict[str, Export]:
    """:func:`exports` by name."""
    return {e.name: e for e in exports()}
