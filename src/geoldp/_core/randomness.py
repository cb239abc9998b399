"""The randomness interface (ALGORITHM §4) and its backends.

Every random draw in geoldp goes through a :class:`RandomSource`:

=====================  ==================================================================================
``uniform(size=None)``  float(s) on the 2⁻⁵³ grid in [0, 1)
``bernoulli(p, size)``  ``uniform() < p`` (``p`` a float, or an array broadcast against ``size``)
``integers(k, size)``   uniform on {0, …, k−1} without modulo bias (bitmask rejection)
``categorical(pmf)``    inverse CDF: the first index i with u < cumsum(pmf)[i]; if rounding leaves
                        u ≥ the last cumulative value, the last index with positive mass.
                        A 2-D ``pmf`` draws once per row (one ``uniform`` per row, rows in order).
``stream_key()``        a fresh 256-bit key, ``uint32[8]``, for the counter-based ChaCha20 streams below
=====================  ==================================================================================

Vectorised calls consume draws in array order; ``bernoulli(p, size=n)`` is exactly ``n`` scalar
``bernoulli`` calls, and so on.

Backends
--------
:class:`OSRandomSource` (``rng=None``, policy ``"os-csprng"``)
    Reads the operating system's CSPRNG (:func:`os.urandom`) in bulk (buffered 64-bit words).
:class:`NumpyRandomSource` (``rng`` = int, SeedSequence, BitGenerator or Generator, policy ``"seeded"``)
    Wraps a :class:`numpy.random.Generator`. **For experiments and tests only, not for deployment.**
:class:`ChaChaRandomSource`
    The counter-based stream described below, as a Python object (reference / tests of the fast path).

Counter-based ChaCha20 (used by the numba fast path)
----------------------------------------------------
``chacha_block(key, counter, stream, out)`` computes one ChaCha20 block (RFC 8439 quarter round, 20 rounds,
constants "expand 32-byte k") into ``out`` (``uint32[16]``). The 4 input words 12–15 are laid out as in the
original ChaCha: word 12/13 = low/high half of the 64-bit block ``counter``, word 14/15 = low/high half of the
64-bit ``stream`` id. (The RFC 8439 96-bit-nonce layout maps onto this: RFC counter c and nonce (n0, n1, n2)
is ``counter = c | n0 << 32``, ``stream = n1 | n2 << 32``.)

A stream is consumed through a tiny state: ``buf`` (``uint32[16]``, the current block) and ``state``
(``int64[3]`` = [stream, next block counter, next word position in ``buf``]); create it with
``stream_state(stream)``/``stream_reset(state, stream)``. Functions (all ``@njit``):

* ``stream_next_u32(key, buf, state)`` — next 32-bit word (a new block is computed every 16 words);
* ``stream_uniform(key, buf, state)`` — 53-bit uniform from two consecutive words a, b:
  ``((a >> 5) · 2²⁶ + (b >> 6)) · 2⁻⁵³`` (27 + 26 = 53 random bits, exactly the 2⁻⁵³ grid in [0, 1));
* ``stream_bernoulli(key, buf, state, p)`` — ``stream_uniform(...) < p``;
* ``stream_integers(key, buf, state, k)`` — unbiased on {0, …, k−1} by bitmask rejection on 64-bit words
  (two 32-bit words per attempt);
* ``stream_categorical_cdf(key, buf, state, cdf, n)`` — inverse CDF over ``cdf[:n]`` (a cumulative sum) with
  the rounding guard of ALGORITHM §4 (needs the pmf-positivity information: it returns the last index whose
  cumulative value increased).

The fast path uses ``stream = global trajectory index`` and a key from :meth:`RandomSource.stream_key`
drawn once per call, so seeded results do not depend on chunking. With ``rng=None`` the key comes from
``os.urandom``: ChaCha20 keyed by a secret uniformly random 256-bit key is a CSPRNG, so the default
remains cryptographically secure. With a seed, the key is drawn from the seeded Generator (reproducible,
experiments only).
"""

from __future__ import annotations

import numbers
import os
from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from geoldp._core.kernels import KernelInt, jit

__all__ = [
    "ChaChaRandomSource",
    "NumpyRandomSource",
    "OSRandomSource",
    "RandomSource",
    "chacha_block",
    "resolve_rng",
    "stream_bernoulli",
    "stream_categorical_cdf",
    "stream_integers",
    "stream_next_u32",
    "stream_reset",
    "stream_state",
    "stream_uniform",
]

_TWO_M53 = 2.0**-53


def _check_k(k: object) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (numbers.Integral, np.integer)):
        raise ValueError(f"integers(k) needs an int 1 <= k < 2**63. Got {k!r} instead.")
    if not 1 <= int(k) < 2**63:
        raise ValueError(f"integers(k) needs an int 1 <= k < 2**63. Got {k!r} instead.")
    return int(k)


@numba.njit(cache=True)
def _categorical_rows(pmf: np.ndarray, u: np.ndarray, out: np.ndarray) -> np.ndarray:
    # row-wise inverse CDF of pmf at u: the first i with u[r] < cumsum(pmf[r])[i] (sequential sums, as
    # np.cumsum); if none, the last index with positive mass
    n, k = pmf.shape
    for r in range(n):
        acc = 0.0
        idx = -1
        for i in range(k):
            acc += pmf[r, i]
            if u[r] < acc:
                idx = i
                break
        if idx < 0:
            idx = k - 1
            while idx > 0 and not (pmf[r, idx] > 0.0):
                idx -= 1
        out[r] = idx
    return out


def _categorical_from_uniform(pmf: np.ndarray, u: float | np.ndarray) -> np.ndarray | int:
    """Inverse CDF with the rounding guard; ``pmf`` 1-D with scalar u, or 2-D with one u per row."""
    pmf = np.asarray(pmf, dtype=np.float64)
    if pmf.ndim == 1:
        c = np.cumsum(pmf)
        i = int(np.searchsorted(c, u, side="right"))
        if i >= pmf.shape[0]:
            pos = np.flatnonzero(pmf > 0)
            i = int(pos[-1]) if pos.size else pmf.shape[0] - 1
        return i
    u = np.ascontiguousarray(u, dtype=np.float64).reshape(-1)
    out = np.empty(pmf.shape[0], dtype=np.int64)
    return _categorical_rows(np.ascontiguousarray(pmf), u, out)


class RandomSource:
    """Abstract randomness interface of ALGORITHM §4 (see the module docstring).

    Subclasses implement :meth:`uniform`, :meth:`integers` and :meth:`stream_key`; :meth:`bernoulli` and
    :meth:`categorical` are built on :meth:`uniform`.

    Attributes
    ----------
    policy : str
        ``"os-csprng"`` or ``"seeded"`` (recorded in output provenance; never the seed itself).
    """

    policy: str = "abstract"

    def uniform(self, size: int | tuple[int, ...] | None = None) -> Any:
        """Float(s) on the 2⁻⁵³ grid in [0, 1)."""
        raise NotImplementedError

    def integers(self, k: int, size: int | tuple[int, ...] | None = None) -> Any:
        """Uniform integer(s) in {0, …, k−1}, unbiased."""
        raise NotImplementedError

    def stream_key(self) -> np.ndarray:
        """A fresh 256-bit key as ``uint32[8]``."""
        raise NotImplementedError

    def bernoulli(self, p: float | np.ndarray, size: int | tuple[int, ...] | None = None) -> Any:
        """``uniform() < p``; with ``size``, a boolean array of independent draws."""
        if size is None:
            return bool(self.uniform() < p)
        return np.asarray(self.uniform(size) < p, dtype=bool)

    def categorical(self, pmf: npt.ArrayLike) -> Any:
        """Inverse-CDF draw from ``pmf`` (1-D → int; 2-D → one int64 per row, rows in order)."""
        pmf = np.asarray(pmf, dtype=np.float64)
        if pmf.ndim == 1:
            return _categorical_from_uniform(pmf, self.uniform())
        if pmf.ndim != 2:
            raise ValueError("categorical(pmf) needs a 1-D or 2-D pmf.")
        return _categorical_from_uniform(pmf, self.uniform(pmf.shape[0]))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(policy={self.policy!r})"


class OSRandomSource(RandomSource):
    """Randomness from the OS's CSPRNG (``os.urandom``), read ``buffer_words`` 64-bit words at a time."""

    policy = "os-csprng"

    def __init__(self, buffer_words: int = 4096) -> None:
        self._n = int(buffer_words)
        self._buf = np.empty(0, dtype=np.uint64)
        self._pos = 0

    def _words(self, n: int) -> np.ndarray:
        out = np.empty(n, dtype=np.uint64)
        filled = 0
        while filled < n:
            if self._pos >= self._buf.shape[0]:
                want = max(self._n, n - filled)
                self._buf = np.frombuffer(os.urandom(8 * want), dtype=np.uint64)
                self._pos = 0
            take = min(n - filled, self._buf.shape[0] - self._pos)
            out[filled : filled + take] = self._buf[self._pos : self._pos + take]
            self._pos += take
            filled += take
        return out

    def uniform(self, size: int | tuple[int, ...] | None = None) -> Any:
        """Float(s) ``(w >> 11) · 2⁻⁵³`` from 64-bit OS random words."""
        n = 1 if size is None else int(np.prod(size))
        u = (self._words(n) >> np.uint64(11)).astype(np.float64) * _TWO_M53
        return float(u[0]) if size is None else u.reshape(size)

    def integers(self, k: int, size: int | tuple[int, ...] | None = None) -> Any:
        """Unbiased integers in {0, …, k−1} by bitmask rejection on 64-bit words."""
        k = _check_k(k)
        n = 1 if size is None else int(np.prod(size))
        out = np.zeros(n, dtype=np.int64)
        if k > 1:
            bits = (k - 1).bit_length()
            shift = np.uint64(64 - bits)
            todo = np.arange(n)
            while todo.size:
                cand = (self._words(todo.size) >> shift).astype(np.int64)
                ok = cand < k
                out[todo[ok]] = cand[ok]
                todo = todo[~ok]
        return int(out[0]) if size is None else out.reshape(size)

    def stream_key(self) -> np.ndarray:
        """A fresh key from ``os.urandom(32)``."""
        return np.frombuffer(os.urandom(32), dtype=np.uint32).copy()


class NumpyRandomSource(RandomSource):
    """Randomness from a :class:`numpy.random.Generator` (seeded runs; experiments and tests only)."""

    policy = "seeded"

    def __init__(self, generator: np.random.Generator) -> None:
        if not isinstance(generator, np.random.Generator):
            raise TypeError("NumpyRandomSource needs a numpy.random.Generator.")
        self.generator = generator

    def uniform(self, size: int | tuple[int, ...] | None = None) -> Any:
        """``Generator.random`` (53-bit floats on the 2⁻⁵³ grid)."""
        if size is None:
            return float(self.generator.random())
        return self.generator.random(size)

    def integers(self, k: int, size: int | tuple[int, ...] | None = None) -> Any:
        """``Generator.integers(0, k)`` (unbiased)."""
        k = _check_k(k)
        if size is None:
            return int(self.generator.integers(0, k))
        return self.generator.integers(0, k, size=size, dtype=np.int64)

    def stream_key(self) -> np.ndarray:
        """Eight uint32 words drawn from the Generator (so a reused Generator advances)."""
        return self.generator.integers(0, 2**32, size=8, dtype=np.uint32)


def resolve_rng(rng: Any) -> RandomSource:
    """Normalise the SPEC 7 ``rng`` argument into a :class:`RandomSource` (call once, at the entry point).

    Parameters
    ----------
    rng : {None, int, array_like[ints], SeedSequence, BitGenerator, Generator, RandomSource}
        ``None`` → :class:`OSRandomSource` (the secure default). int / array of ints / SeedSequence /
        BitGenerator / Generator → :class:`NumpyRandomSource` of ``numpy.random.default_rng(rng)`` (seeded:
        experiments and tests only). A :class:`RandomSource` passes through unchanged. Any other type
        (``bool``, float, str, ...) is a ``TypeError``.
    """
    if rng is None:
        return OSRandomSource()
    if isinstance(rng, RandomSource):
        return rng
    if isinstance(rng, (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)):
        return NumpyRandomSource(np.random.default_rng(rng))
    bad = TypeError(
        "The 'rng' parameter must be None, an int, an array_like of ints, a numpy SeedSequence, BitGenerator "
        f"or Generator. Got {type(rng).__name__} instead."
    )
    if isinstance(rng, (bool, np.bool_)):
        raise bad
    if isinstance(rng, (numbers.Integral, np.integer)):
        if int(rng) < 0:
            raise ValueError(f"The 'rng' parameter must be a non-negative int seed. Got {int(rng)} instead.")
        return NumpyRandomSource(np.random.default_rng(int(rng)))
    if isinstance(rng, (list, tuple, np.ndarray)):
        arr = np.asarray(rng)
        if arr.dtype.kind not in "iu" or arr.size == 0:
            raise bad
        if np.any(arr < 0):
            raise ValueError("The 'rng' parameter must contain non-negative ints.")
        return NumpyRandomSource(np.random.default_rng(arr))
    raise bad


# --------------------------------------------------------------------------------------------------
# ChaCha20 (RFC 8439) counter-based generator for numba code
# --------------------------------------------------------------------------------------------------

_MASK32 = np.uint64(0xFFFFFFFF)


@numba.njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]
def _qr(
    a: np.uint64, b: np.uint64, c: np.uint64, d: np.uint64
) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64]:
    a = (a + b) & _MASK32
    d ^= a
    d = ((d << np.uint64(16)) | (d >> np.uint64(16))) & _MASK32
    c = (c + d) & _MASK32
    b ^= c
    b = ((b << np.uint64(12)) | (b >> np.uint64(20))) & _MASK32
    a = (a + b) & _MASK32
    d ^= a
    d = ((d << np.uint64(8)) | (d >> np.uint64(24))) & _MASK32
    c = (c + d) & _MASK32
    b ^= c
    b = ((b << np.uint64(7)) | (b >> np.uint64(25))) & _MASK32
    return a, b, c, d


@jit
def chacha_block(key: np.ndarray, counter: np.uint64, stream: np.uint64, out: np.ndarray) -> None:
    """One ChaCha20 block (20 rounds) into ``out`` (``uint32[16]``); see the module docstring for the layout.

    The state is kept in registers (no allocation), so numba code can call it in its hottest loop.

    Parameters
    ----------
    key : uint32[8]
    counter : uint64
        64-bit block counter (words 12, 13).
    stream : uint64
        64-bit stream id / nonce (words 14, 15).
    out : uint32[16]
    """
    j0 = np.uint64(0x61707865)
    j1 = np.uint64(0x3320646E)
    j2 = np.uint64(0x79622D32)
    j3 = np.uint64(0x6B206574)
    j4 = np.uint64(key[0])
    j5 = np.uint64(key[1])
    j6 = np.uint64(key[2])
    j7 = np.uint64(key[3])
    j8 = np.uint64(key[4])
    j9 = np.uint64(key[5])
    j10 = np.uint64(key[6])
    j11 = np.uint64(key[7])
    c = np.uint64(counter)
    s = np.uint64(stream)
    j12 = c & _MASK32
    j13 = c >> np.uint64(32)
    j14 = s & _MASK32
    j15 = s >> np.uint64(32)
    x0, x1, x2, x3, x4, x5, x6, x7 = j0, j1, j2, j3, j4, j5, j6, j7
    x8, x9, x10, x11, x12, x13, x14, x15 = j8, j9, j10, j11, j12, j13, j14, j15
    for _ in range(10):
        x0, x4, x8, x12 = _qr(x0, x4, x8, x12)
        x1, x5, x9, x13 = _qr(x1, x5, x9, x13)
        x2, x6, x10, x14 = _qr(x2, x6, x10, x14)
        x3, x7, x11, x15 = _qr(x3, x7, x11, x15)
        x0, x5, x10, x15 = _qr(x0, x5, x10, x15)
        x1, x6, x11, x12 = _qr(x1, x6, x11, x12)
        x2, x7, x8, x13 = _qr(x2, x7, x8, x13)
        x3, x4, x9, x14 = _qr(x3, x4, x9, x14)
    out[0] = (x0 + j0) & _MASK32
    out[1] = (x1 + j1) & _MASK32
    out[2] = (x2 + j2) & _MASK32
    out[3] = (x3 + j3) & _MASK32
    out[4] = (x4 + j4) & _MASK32
    out[5] = (x5 + j5) & _MASK32
    out[6] = (x6 + j6) & _MASK32
    out[7] = (x7 + j7) & _MASK32
    out[8] = (x8 + j8) & _MASK32
    out[9] = (x9 + j9) & _MASK32
    out[10] = (x10 + j10) & _MASK32
    out[11] = (x11 + j11) & _MASK32
    out[12] = (x12 + j12) & _MASK32
    out[13] = (x13 + j13) & _MASK32
    out[14] = (x14 + j14) & _MASK32
    out[15] = (x15 + j15) & _MASK32


# The stream functions allocate nothing, so they are compiled with geoldp's one kernel decorator (no NRT
# reference counting: with it, every call that passes arrays pays atomic increments, about 4x slower in the
# fast path's hot loop).
@jit
def stream_reset(state: np.ndarray, stream: KernelInt) -> None:
    """Reset ``state`` (``int64[3]``) to the start of ``stream``: [stream, block 0, position 16 = empty]."""
    state[0] = stream
    state[1] = 0
    state[2] = 16


def stream_state(stream: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Allocate ``(buf, state)`` for a stream (``uint32[16]``, ``int64[3]``), positioned at its start."""
    buf = np.zeros(16, dtype=np.uint32)
    state = np.zeros(3, dtype=np.int64)
    stream_reset(state, np.int64(stream))
    return buf, state


@numba.njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]
def _next_word(key: np.ndarray, buf: np.ndarray, state: np.ndarray) -> np.uint64:
    """Next 32-bit word as uint64 (refills ``buf`` with the next block when exhausted)."""
    if state[2] >= 16:
        chacha_block(key, np.uint64(state[1]), np.uint64(state[0]), buf)
        state[1] += 1
        state[2] = 0
    w = buf[state[2]]
    state[2] += 1
    return np.uint64(w)


@jit
def stream_next_u32(key: np.ndarray, buf: np.ndarray, state: np.ndarray) -> np.uint32:
    """Next 32-bit word of the stream (refills ``buf`` with the next block when exhausted)."""
    return np.uint32(_next_word(key, buf, state))


@jit
def stream_uniform(key: np.ndarray, buf: np.ndarray, state: np.ndarray) -> float:
    """53-bit uniform in [0, 1): ``((a >> 5)·2²⁶ + (b >> 6))·2⁻⁵³`` from the next two words a, b."""
    a = _next_word(key, buf, state) >> np.uint64(5)
    b = _next_word(key, buf, state) >> np.uint64(6)
    return float(a * np.uint64(67108864) + b) * (1.0 / 9007199254740992.0)


@jit
def stream_bernoulli(key: np.ndarray, buf: np.ndarray, state: np.ndarray, p: float) -> bool:
    """``stream_uniform(...) < p``."""
    return stream_uniform(key, buf, state) < p


@jit
def stream_integers(key: np.ndarray, buf: np.ndarray, state: np.ndarray, k: KernelInt) -> int | np.int64:
    """Uniform on {0, …, k−1} (k ≥ 1) by bitmask rejection on 64-bit words (a = high, b = low word)."""
    if k <= 1:
        return 0
    m = np.uint64(k - 1)
    bits = 0
    while m > np.uint64(0):
        bits += 1
        m = m >> np.uint64(1)
    shift = np.uint64(64 - bits)
    while True:
        a = _next_word(key, buf, state)
        b = _next_word(key, buf, state)
        cand = ((a << np.uint64(32)) | b) >> shift
        if cand < np.uint64(k):
            return np.int64(cand)


@jit
def stream_categorical_cdf(
    key: np.ndarray, buf: np.ndarray, state: np.ndarray, cdf: np.ndarray, n: int
) -> int:
    """Inverse CDF over ``cdf[:n]`` (cumulative sums of a pmf) at one stream uniform u.

    The first i with u < cdf[i]; the rounding guard returns the last index whose cumulative value is
    larger than its predecessor's (positive mass).
    """
    u = stream_uniform(key, buf, state)
    lo = 0
    hi = n
    while lo < hi:  # first index with cdf[i] > u
        mid = (lo + hi) // 2
        if cdf[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    if lo < n:
        return lo
    i = n - 1
    while i > 0 and not (cdf[i] > cdf[i - 1]):
        i -= 1
    return i


class ChaChaRandomSource(RandomSource):
    """The counter-based ChaCha20 stream as a :class:`RandomSource` (scalar draws; reference and tests).

    Scalar draws consume the stream exactly as the ``stream_*`` numba functions do, so a pure-Python
    reference run with ``ChaChaRandomSource(key, stream)`` reproduces a numba run that uses the same key and
    stream and consumes draws in the same order. ``key``: 8 uint32 words.
    """

    def __init__(self, key: npt.ArrayLike, stream: int = 0, policy: str = "seeded") -> None:
        key = np.asarray(key)
        if key.shape != (8,):
            raise ValueError("ChaChaRandomSource needs a key of 8 uint32 words.")
        self.key = key.astype(np.uint32)
        self.policy = policy
        self._buf, self._state = stream_state(stream)

    def _draws(self, draw: Any, size: int | tuple[int, ...] | None, dtype: type, *args: Any) -> Any:
        # scalar draws in array order, exactly as the numba code consumes the stream
        if size is None:
            return dtype(draw(self.key, self._buf, self._state, *args))
        out: np.ndarray = np.empty(int(np.prod(size)), dtype=dtype)
        for i in range(out.shape[0]):
            out[i] = draw(self.key, self._buf, self._state, *args)
        return out.reshape(size)

    def uniform(self, size: int | tuple[int, ...] | None = None) -> Any:
        """Stream uniform(s), see :func:`stream_uniform`."""
        return self._draws(stream_uniform, size, float)

    def integers(self, k: int, size: int | tuple[int, ...] | None = None) -> Any:
        """Stream integer(s), see :func:`stream_integers`."""
        return self._draws(stream_integers, size, int, _check_k(k))

    def stream_key(self) -> np.ndarray:
        """Eight words drawn from this stream."""
        words = [stream_next_u32(self.key, self._buf, self._state) for _ in range(8)]
        return np.array(words, dtype=np.uint32)
