"""Kernels compiled ahead of time: used when the installed extension matches the sources, else numba's JIT.

Installing geoldp compiles the kernels that Python code calls into the extensions ``geoldp._aot_kernels``
and ``geoldp._aot_kernels_nrt`` (see :mod:`geoldp._aot_build`), so that the first call of a mechanism does
not wait for numba to compile them. They are used only if they import and their ``kernel_digest()``
equals the digest of the installed kernel sources (so an edited or upgraded source tree never runs stale
code); otherwise, and where no C compiler was available at install time, numba compiles the kernels on
first use and caches them on disk, as before.

Python code calls an exported kernel through an :class:`Entry`, defined next to the kernel with the
exact signatures of its exports. numba compiles a function once per argument *type* (dtype, dimensions,
layout, read-only flag); an export has one signature, and its argument conversion checks little more than
the item size. So the entry picks the export whose signature is exactly the numba type of the arguments
(a writable array may stand for a declared read-only one: same code), and calls the numba function for
any other types: either way the result is the numba function's. ``GEOLDP_AOT=0`` in the environment turns
the extension off (the benchmarks compare both).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from numba.core import types

__all__ = [
    "COMPILER_ADVICE",
    "Entry",
    "array",
    "enabled",
    "entries",
    "extension",
    "installed",
    "kernel_digest",
]

#: How to get the compiled kernels where they are missing (said at install and at the first call)
COMPILER_ADVICE = (
    "install a C compiler (Debian/Ubuntu: sudo apt install build-essential; Fedora: sudo dnf install gcc; "
    "macOS: xcode-select --install; Windows: Microsoft C++ Build Tools), then reinstall geoldp: "
    "pip install --force-reinstall --no-deps geoldp (or pip install -e . in a clone)"
)

#: The compiled extensions (kernels without and with numba's reference counting; see geoldp._aot_build)
EXTENSIONS = ("geoldp._aot_kernels", "geoldp._aot_kernels_nrt")

# [modules or None] once looked up; the switch the tests flip to compare with the JIT in one process
_LOADED: list[Any] = []
_LOCK = threading.Lock()
_ENABLED = [os.environ.get("GEOLDP_AOT", "1") != "0"]
# every Entry made (the build compiles their exports)
_ENTRIES: list[Entry] = []


def entries() -> list[Entry]:
    """Every :class:`Entry` of the modules imported so far."""
    return list(_ENTRIES)


def array(dtype: Any, ndim: int, *, readonly: bool = False) -> types.Array:
    """The numba type of a C-contiguous array (for the signatures of the exports)."""
    return types.Array(dtype, ndim, "C", readonly=readonly)


def kernel_digest(package: Path | None = None) -> int:
    """The digest of the kernel sources under ``package`` (default: this installed package), as an int.

    The first 15 hex digits of :func:`geoldp._core.numba_cache.source_fingerprint`: every geoldp source file
    that imports numba or geoldp's kernels module, paths and contents.
    """
    from geoldp._core.numba_cache import source_fingerprint

    root = Path(__file__).resolve().parent.parent if package is None else Path(package)
    return int(source_fingerprint(root)[:15], 16)


def extension() -> tuple[Any, ...] | None:
    """The compiled extensions, or ``None`` if one is absent, fails to import or is stale."""
    if _LOADED:
        return _LOADED[0]
    with _LOCK:
        if not _LOADED:
            _LOADED.append(_load())
    return _LOADED[0]


def _load() -> tuple[Any, ...] | None:
    modules = []
    for name in EXTENSIONS:
        try:
            module = importlib.import_module(name)
            built_from = int(module.kernel_digest())
        except (ImportError, AttributeError, OSError, ValueError):
            return None
        modules.append(module)
        if built_from != kernel_digest():
            return None
    return tuple(modules)


def installed() -> bool:
    """Whether the compiled extensions were installed at all (importable, whatever their digest)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in EXTENSIONS)
    except (ImportError, ValueError):
        return False


def enabled() -> bool:
    """Whether the compiled kernels are in use (the extension matches and ``GEOLDP_AOT`` is not 0)."""
    return _ENABLED[0] and extension() is not None


class Entry:
    """Call a numba function from Python through its compiled exports when the argument types match.

    Parameters
    ----------
    function : numba dispatcher
        The numba function, called for any other argument types and without the extension.
    exports : mapping of str to numba Signature
        Its exports: the name of each in the extension and its one signature.
    """

    def __init__(self, function: Any, exports: Mapping[str, Any]) -> None:
        self._jit = function
        self.exports = dict(exports)
        # argument-type fingerprint (numba's, from types only, never values) -> the callable to use
        self._routes: dict[bytes, Callable[..., Any]] = {}
        self.__doc__ = getattr(function, "__doc__", None)
        self.__name__ = getattr(function, "__name__", "entry")
        self.__wrapped__ = function
        _ENTRIES.append(self)

    def __call__(self, *args: Any) -> Any:
        if not _ENABLED[0]:
            return self._jit(*args)
        try:
            from numba._dispatcher import compute_fingerprint

            fingerprint = compute_fingerprint(args)
        except Exception:  # a type numba's fingerprint does not cover: let numba decide
            return self._jit(*args)
        try:
            target = self._routes[fingerprint]
        except KeyError:
            target = self._routes[fingerprint] = self._resolve(args)
        return target(*args)

    def _resolve(self, args: tuple) -> Callable[..., Any]:
        modules = extension()
        if modules is None:
            return self._jit
        import numba

        try:
            actual = tuple(numba.typeof(a) for a in args)
        except Exception:  # numba cannot type an argument: its own error is the right one
            return self._jit
        for name, signature in self.exports.items():
            if _same_types(signature.args, actual):
                for module in modules:
                    if hasattr(module, name):
                        return getattr(module, name)
        return self._jit

    def __getattr__(self, name: str) -> Any:  # py_func, signatures ... of the numba function
        return getattr(self._jit, name)

    def __repr__(self) -> str:
        return f"<compiled-kernel entry {self.__name__} {tuple(self.exports)}>"


def _same_types(declared: tuple, actual: tuple) -> bool:
    return len(declared) == len(actual) and all(_same(d, a) for d, a in zip(declared, actual, strict=True))


def _same(declared: Any, actual: Any) -> bool:
    """``actual`` is ``declared``, or a writable array where a read-only one is declared (same code)."""
    if declared == actual:
        return True
    if isinstance(declared, types.Array) and isinstance(actual, types.Array):
        return declared.mutable is False and actual.mutable and declared.copy(readonly=False) == actual
    if isinstance(declared, types.NamedTuple) and isinstance(actual, types.NamedTuple):
        return declared.instance_class is actual.instance_class and _same_types(declared.types, actual.types)
    return False
