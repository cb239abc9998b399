"""Build step: compile the exports of every :class:`geoldp._core.aot.Entry` into geoldp's kernel extensions.

Run by ``setup.py`` (``build_ext``) when geoldp is installed, or by hand::

    python -m geoldp._aot_build [OUTPUT_DIR]

It uses numba's ahead-of-time compiler (``numba.pycc``) and a C compiler. The extensions hold every export
(a kernel and its callees, with one signature) compiled for the generic CPU of the platform; they release
the GIL as the numba kernels do (``nogil``), use numba's reference counting where the kernel does (plain
``numba.njit``: ``_aot_kernels_nrt``) and not where it does not (``_nrt=False``: ``_aot_kernels``), and
export ``kernel_digest()``: the digest of the kernel sources they were compiled from, which
:mod:`geoldp._core.aot` checks before using them.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

EXTENSION = "_aot_kernels"
#: The modules whose kernels Python calls through an Entry (importing them makes the entries).
KERNEL_MODULES = (
    "geoldp._core.kernels",
    "geoldp.trajectory.split",
    "geoldp.trajectory._atp_region",
    "geoldp.trajectory._fast.anchor",
    "geoldp.trajectory._fast.driver",
    "geoldp.trajectory.tracs",
)


#: The two extensions: kernels compiled without numba's reference counting (the allocation-free
#: ``geoldp._core.kernels.jit`` ones) and with it (plain ``numba.njit``); each export goes where its numba
#: function's setting says, so that its code is the code numba's JIT would compile.
EXTENSIONS = {False: EXTENSION, True: EXTENSION + "_nrt"}


def uses_nrt(func: Any) -> bool:
    """Whether numba compiles ``func`` (a dispatcher) with reference counting."""
    return bool(func.targetoptions.get("_nrt", True))


def make_ccs(package: Path) -> list:
    """``numba.pycc.CC`` objects with every export and ``kernel_digest``, for the sources in ``package``."""
    import importlib

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc is "pending deprecation"; it is what ships compiled kernels
        from numba.pycc import CC
        from numba.pycc import compiler as pycc_compiler

    from geoldp._core import aot as _aot

    _release_gil(pycc_compiler)
    digest = _aot.kernel_digest(package)
    ccs = {}
    for nrt, name in EXTENSIONS.items():
        cc = ccs[nrt] = CC(name, source_module=sys.modules[__name__])
        cc.use_nrt = nrt
        cc.target_cpu = "generic"  # runs on any CPU of the platform (numba's AOT default family target)
        cc.export("kernel_digest", "int64()")(lambda: digest)
    for module in KERNEL_MODULES:
        importlib.import_module(module)
    for entry in _aot.entries():
        for name, signature in entry.exports.items():
            ccs[uses_nrt(entry.__wrapped__)].export(name, signature)(entry.py_func)
    return list(ccs.values())


def _release_gil(pycc_compiler: Any) -> None:
    """Compile the exports with ``release_gil`` (numba's ``nogil``): threads of ``n_jobs`` run in parallel."""
    flags_class = pycc_compiler.Flags
    if getattr(flags_class, "_geoldp_nogil", False):
        return

    def flags() -> Any:
        f = flags_class()
        f.release_gil = True
        return f

    flags._geoldp_nogil = True  # type: ignore[attr-defined]
    pycc_compiler.Flags = flags


def build(output_dir: str | os.PathLike, package: Path | None = None) -> list[Path]:
    """Compile the extensions into ``output_dir`` (the sources of ``package``, default this package)."""
    package = Path(__file__).resolve().parent if package is None else Path(package)
    out = []
    for cc in make_ccs(package):
        cc.output_dir = str(output_dir)
        cc.compile()
        out.append(Path(output_dir) / cc.output_file)
    return out


def _isolated_numba_cache() -> None:
    # the build compiles the kernels' callees with numba's JIT on the way: keep their cache out of the user's
    os.environ.setdefault("NUMBA_CACHE_DIR", tempfile.mkdtemp(prefix="geoldp-aot-build-"))


if __name__ == "__main__":
    _isolated_numba_cache()
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    print(build(out))
