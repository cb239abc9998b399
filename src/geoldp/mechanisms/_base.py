"""Shared helpers of the primitive mechanisms."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Upper ε limit of k-RR and Square-Wave (ALGORITHM §3.4).
EPS_MAX = 700.0
#: Most buckets a bucketed Square-Wave (``SquareWave(buckets=)``, ATP's ``sw_buckets``) may have: 10⁶. A
#: bucket's width is then 1e−6 of the output range, far below any use of the released radius, and each input
#: value's bucket masses (8 bytes a bucket) still fit in a chunk; a larger count is a slip that would try to
#: allocate terabytes.
MAX_SW_BUCKETS = 1_000_000
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
