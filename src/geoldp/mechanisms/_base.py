"""Shared helpers of the primitive mechanisms."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Upper ε limit of k-RR and Square-Wave (ALGORITHM §3.4).
EPS_MAX = 700.0
#: Rows × columns above which probability matrices are built in chunks while sampling.
CHUNK_CELLS = 1 << 22


def int_array(x: npt.ArrayLike, name: str, caller: str) -> np.ndarray:
    """Coerce ``x`` to an int64 array; ``TypeError`` for non-integer dtypes (bool included)."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"The {name!r} parameter of {caller} must be an integer array. Got dtype {arr.dtype} instead."
        )
    return arr.astype(np.int64)
