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
            compiler = _compiler()
            why = f"{type(exc).__name__}: {exc}" if compiler else "no C compiler found"
            print(
                f"geoldp: warning: the compiled kernels were not built ({why}). geoldp works without them, "
                "but its first call then compiles them, once per installation (about 10-40 s). To fix: "
                "install a C compiler (Debian/Ubuntu: sudo apt install build-essential; Fedora: sudo dnf "
                "install gcc; macOS: xcode-select --install; Windows: Microsoft C++ Build Tools), then "
                "reinstall geoldp: pip install --force-reinstall --no-deps geoldp (or pip install -e . in "
                "a clone).",
                file=sys.stderr,
            )
            return
        for path in built:
            print(f"geoldp: built {path}")

    def get_outputs(self) -> list[str]:
        return [p for p in (self.get_ext_fullpath(n) for n in NAMES) if os.path.exists(p)]


def _compiler() -> str | None:
    """The C compiler setuptools would call, if one is on PATH."""
    import shutil

    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    try:
        cc = new_compiler()
        customize_compiler(cc)
        exe = getattr(cc, "compiler", None) or [getattr(cc, "cc", "cc")]
        return shutil.which(exe[0] if isinstance(exe, list) else exe)
    except Exception:  # an unusual platform: say nothing about the compiler
        return "unknown"


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
