"""Out-of-memory failures that do not look like one: a compiled library that cannot be mapped.

Under an address-space limit (``ulimit -v``, a container's or a batch system's memory cap), loading a
shared library late (SciPy's OpenBLAS, the JIT compiler's LLVM) fails with an ``ImportError`` or
``OSError`` saying "failed to map segment from shared object" instead of a ``MemoryError``.
:func:`is_out_of_memory` recognises those, following the exception's chain, so callers can say "out of
memory" and what to do about it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["is_out_of_memory", "loading"]

# what the dynamic loader says when mmap fails (glibc), and strerror(ENOMEM)
_SIGNS = ("failed to map segment", "cannot allocate memory", "cannot map zero-fill pages")


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception in its chain) is a memory failure, a failed library load included.

    True for a ``MemoryError``, and for an ``ImportError``/``OSError`` whose message (or whose cause's) says
    the loader could not map a library or allocate memory.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError):
            return True
        if isinstance(current, (ImportError, OSError)) and any(
            sign in str(current).lower() for sign in _SIGNS
        ):
            return True
        current = current.__cause__ or current.__context__
    return False


@contextlib.contextmanager
def loading(what: str) -> Iterator[None]:
    """Turn a library load that failed for lack of memory into a ``MemoryError`` naming ``what``.

    ``what``: e.g. ``"SciPy's k-d tree (scipy.spatial)"``; the failure is one :func:`is_out_of_memory`
    recognises.
    """
    try:
        yield
    except (ImportError, OSError) as exc:
        if not is_out_of_memory(exc):
            raise
        raise MemoryError(
            f"{what} could not be loaded: the process is out of memory (its address-space limit, "
            "`ulimit -v`, is reached). Raise the limit, or use fewer public points or a smaller input."
        ) from exc
