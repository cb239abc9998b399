"""Kernels compiled ahead of time: used when the installed extension matches the sources, else numba's JIT.

Installing geoldp compiles the kernels of :mod:`geoldp._aot_exports` into the extension
``geoldp._aot_kernels`` (see :mod:`geoldp._aot_build`), so that the first call of a mechanism does not
wait for numba to compile them. The extension is used only if it imports and its ``kernel_digest()``
equals the digest of the installed kernel sources (so an edited or upgraded source tree never runs stale
code); otherwise, and where no C compiler was available at install time, numba compiles the kernels on
first use and caches them on disk, as before.

Python code calls an exported kernel through an :class:`Entry`, which picks the compiled export whose
signature is exactly the numba type of the arguments, and calls the numba function for any other types:
either way the result is the numba function's. ``GEOLDP_AOT=0`` in the environment turns the extension
off (the benchmarks compare both).
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["Entry", "enabled", "extension", "kernel_digest"]

#: The compiled extensions (kernels without and with numba's reference counting; see geoldp._aot_build)
EXTENSIONS = ("geoldp._aot_kernels", "geoldp._aot_kernels_nrt")

# [modules or None] once looked up; the switch the tests flip to compare with the JIT in one process
_LOADED: list[Any] = []
_LOCK = threading.Lock()
_ENABLED = [os.environ.get("GEOLDP_AOT", "1") != "0"]


def kernel_digest(package: Path | None = None) -> int:
    """The digest of the kernel sources under ``package`` (default: this installed package), as an int.

    The first 15 hex digits of :func:`geoldp._numba_cache.source_fingerprint`: every geoldp source file
    that mentions numba, paths and contents.
    """
    from geoldp._numba_cache import source_fingerprint

    root = Path(__file__).resolve().parent if package is None else Path(package)
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


def enabled() -> bool:
    """Whether the compiled kernels are in use (the extension matches and ``GEOLDP_AOT`` is not 0)."""
    return _ENABLED[0] and extension() is not None


class Entry:
    """Call a numba function from Python through its compiled exports when the argument types match.

    Parameters
    ----------
    names : tuple of str
        The exports of the function (each one signature; see :mod:`geoldp._aot_exports`).
    function : numba dispatcher
        The numba function, called for any other argument types and without the extension.
    """

    def __init__(self, names: tuple[str, ...], function: Any) -> None:
        self._names = tuple(names)
        self._jit = function
        # argument-type fingerprint (numba's, from types only, never values) -> the callable to use
        self._routes: dict[bytes, Callable[..., Any]] = {}
        self.__doc__ = getattr(function, "__doc__", None)
        self.__name__ = getattr(function, "__name__", "entry")
        self.__wrapped__ = function

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

        from geoldp._aot_exports import exports_by_name

        try:
            actual = tuple(numba.typeof(a) for a in args)
        except Exception:  # numba cannot type an argument: its own error is the right one
            return self._jit
        table = exports_by_name()
        for name in self._names:
            if _same_types(table[name].signature.args, actual):
                for module in modules:
                    if hasattr(module, name):
                        return getattr(module, name)
        return self._jit

    def __getattr__(self, name: str) -> Any:  # py_func, signatures ... of the numba function
        return getattr(self._jit, name)

    def __repr__(self) -> str:
        return f"<compiled-kernel entry {self.__name__} {self._names}>"


def _same_types(declared: tuple, actual: tuple) -> bool:
    return len(declared) == len(actual) and all(_same(d, a) for d, a in zip(declared, actual, strict=True))


def _same(declared: Any, actual: Any) -> bool:
    """``actual`` is ``declared``, or a writable array where a read-only one is declared (same code)."""
    if declared == actual:
        return True
    from numba.core import types

    if isinstance(declared, types.Array) and isinstance(actual, types.Array):
        return declared.mutable is False and actual.mutable and declared.copy(readonly=False) == actual
    if isinstance(declared, types.NamedTuple) and isinstance(actual, types.NamedTuple):
        return declared.instance_class is actual.instance_class and _same_types(declared.types, actual.types)
    return False
