"""Build step of geoldp: the compiled kernels (the project's metadata is in pyproject.toml).

``build_ext`` compiles the numba kernels ahead of time into the extensions ``geoldp._aot_kernels`` and
``geoldp._aot_kernels_nrt`` (:mod:`geoldp._aot_build`; needs numba and a C compiler). If that fails, or
with ``GEOLDP_BUILD_KERNELS=0`` in the environment, the install goes on without them, and numba compiles
the kernels on first use instead (once per installation, cached on disk): the same results, a slower
first call.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "src"
NAMES = ("geoldp._aot_kernels", "geoldp._aot_kernels_nrt")


class BuildKernels(build_ext):
    """``build_ext`` that compiles geoldp's kernels with numba's ahead-of-time compiler (optional)."""

    def run(self) -> None:
        if os.environ.get("GEOLDP_BUILD_KERNELS", "1") == "0":
            print("geoldp: GEOLDP_BUILD_KERNELS=0, compiled kernels not built")
            return
        target = Path(self.get_ext_fullpath(NAMES[0])).parent
        target.mkdir(parents=True, exist_ok=True)
        try:
            built = _build_kernels(target)
        except Exception as exc:  # no compiler, no numba ...: the package works without the extension
            print(
                f"geoldp: the compiled kernels were not built ({type(exc).__name__}: {exc}); numba will "
                "compile them on first use instead.",
                file=sys.stderr,
            )
            return
        for path in built:
            print(f"geoldp: built {path}")

    def get_outputs(self) -> list[str]:
        return [p for p in (self.get_ext_fullpath(n) for n in NAMES) if os.path.exists(p)]


def _build_kernels(target: Path) -> list[Path]:
    # the build compiles the kernels' callees with numba's JIT on the way: keep that cache out of the user's
    os.environ.setdefault("NUMBA_CACHE_DIR", tempfile.mkdtemp(prefix="geoldp-build-"))
    sys.path.insert(0, str(SOURCES))  # the sources being built (their digest goes into the extension)
    try:
        from geoldp._aot_build import build

        # the digest is taken over the package as installed (build_py has copied it next to the target)
        return build(target, target)
    finally:
        sys.path.remove(str(SOURCES))


# One placeholder per extension: it makes the wheel platform-specific; BuildKernels produces the files.
setup(
    ext_modules=[Extension(name, sources=[]) for name in NAMES],
    cmdclass={"build_ext": BuildKernels},
)
