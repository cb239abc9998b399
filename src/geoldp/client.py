"""One user's randomiser: a report of one trajectory under a published campaign, on the user's device.

Local differential privacy means the randomiser runs where the data is. :func:`respond` reads the campaign
file the collector published (:mod:`geoldp.field.campaign`), takes one trajectory (longitude/latitude in
degrees, WGS 84) and returns one report record, ready to be sent as one line of JSON. :doc:`/field` ("2.
The devices respond") says what the record holds (never the trajectory), that the module needs numpy
only (nor does it load the JIT compiler) and runs the kernels compiled at install, how TraCS projects to
the campaign's plane without pyproj (:func:`aeqd_forward`), and that a seeded call (experiments only)
gives the report of the central release.

Written only here: where the compiled kernels are missing or stale the client falls back to the full
geoldp (slower to import, same output). The report designs run a pure-Python ChaCha20 stream that
consumes draws exactly as geoldp's compiled samplers do. A hybrid sends one report per part (its
trajectory, then its report, each under its own stream key, ε split as the campaign says); a pilot sends
its three k-RR reports. LDPTrace's device sends the OUE bit vectors of its round (the length; or start,
end and moves on the campaign's grid, with the cells the central path counts), each bit a uniform of the
same ChaCha20 stream, generated in numpy. A seeded call's record id comes from the seed too.

Examples
--------
>>> import numpy as np, geoldp.client
>>> record = geoldp.client.respond("campaign.json", np.array([[116.30, 39.90], [116.31, 39.91]]),
...                                user="device-17")  # doctest: +SKIP
>>> sorted(record)  # doctest: +SKIP
['campaign', 'design', 'epsilon', 'format', 'record_id', 'report', 'rng', 'user', 'version']
"""

from __future__ import annotations

import _thread
import importlib
import math
import numbers
import os
import re
from collections import OrderedDict
from typing import Any, NamedTuple

import numpy as np

from geoldp._campaign_doc import (
    PILOT_COLUMNS,
    RECORD_FORMAT,
    RECORD_VERSION,
    TRACS_KERNELS,
    check_campaign,
    load_campaign,
    olh_range,
    part_views,
)

__all__ = ["respond", "to_json_line"]

#: The one degree→radian factor (as :func:`geoldp._core.geo.to_radians`).
_DEG2RAD = math.pi / 180.0
#: Campaigns prepared in this process, by id (a few: a device usually answers one).
_PREPARED: OrderedDict[str, Client] = OrderedDict()
_PREPARED_MAX = 4
_LOCK = _thread.allocate_lock()  # (``threading`` costs 2 ms to import; this is its Lock)
#: The kernel sources among geoldp's files, whose digest the compiled kernels carry: a copy of
#: :data:`geoldp._core.numba_cache.KERNEL_SOURCE` (whose module imports pathlib; a test compares them).
_KERNEL_SOURCE = re.compile(
    rb"^[ \t]*(?:import numba\b|from numba\b|from geoldp\._core\.kernels import|"
    rb"from geoldp\._core import [^\n]*\bkernels\b)",
    re.MULTILINE,
)
#: Snapping: points whose unit-vector dot product is within this of the largest are candidates (rounding of
#: a dot product is about 1e−16); beyond 168° (cos = −0.978) the haversine kernel loses digits: full scan.
_SNAP_DOT_TOL = 1e-11
_FAR_COS = -0.978


# ------------------------------------------------------------------------------------------------------
# randomness: the key of a report's stream, and the ChaCha20 stream in Python


def _generator(rng: Any) -> np.random.Generator | None:
    """``None`` for the OS source, else the numpy Generator of a seed (as geoldp's ``rng`` everywhere)."""
    if rng is None:
        return None
    if isinstance(rng, (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)):
        return np.random.default_rng(rng)
    bad = TypeError(
        "The 'rng' parameter of geoldp.client.respond must be None, an int, an array_like of ints, a numpy "
        f"SeedSequence, BitGenerator or Generator. Got {type(rng).__name__} instead."
    )
    if isinstance(rng, (bool, np.bool_)):
        raise bad
    if isinstance(rng, (numbers.Integral, np.integer)):
        if int(rng) < 0:
            raise ValueError(f"The 'rng' parameter must be a non-negative int seed. Got {int(rng)} instead.")
        return np.random.default_rng(int(rng))
    if isinstance(rng, (list, tuple, np.ndarray)):
        arr = np.asarray(rng)
        if arr.dtype.kind not in "iu" or arr.size == 0:
            raise bad
        if np.any(arr < 0):
            raise ValueError("The 'rng' parameter must contain non-negative ints.")
        return np.random.default_rng(arr)
    raise bad


def _keys_and_id(gen: np.random.Generator | None, count: int = 1) -> tuple[list[np.ndarray], str]:
    """The stream keys (``uint32[8]`` each) and the record id.

    The keys are drawn first, one per part, in the order the central release draws them.
    """
    if gen is None:
        keys = [np.frombuffer(os.urandom(32), dtype=np.uint32).copy() for _ in range(count)]
        return keys, os.urandom(16).hex()
    keys = [gen.integers(0, 2**32, size=8, dtype=np.uint32) for _ in range(count)]
    return keys, gen.bytes(16).hex()


# ------------------------------------------------------------------------------------------------------
# the plane of TraCS: PROJ's spherical azimuthal equidistant projection, operation for operation

#: PROJ's degree→radian factor (its ``DEG_TO_RAD``) and the inverse's radian→degree factor.
_PROJ_DEG_TO_RAD = 0.017453292519943296
_PROJ_RAD_TO_DEG = 180.0 / math.pi
_AEQD_TOL = 1e-14
_AEQD_EPS10 = 1e-10


def _adjlon(lam: float) -> float:
    """PROJ's ``adjlon``: a longitude (radians) into [−π, π]."""
    if abs(lam) < math.pi + 1e-12:
        return lam
    lam = math.fmod(lam + math.pi, 2.0 * math.pi)
    return lam + math.pi if lam < 0.0 else lam - math.pi


def aeqd_forward(
    lon: np.ndarray, lat: np.ndarray, lat_0: float, lon_0: float, radius_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """WGS 84 degrees to the plane ``+proj=aeqd +lat_0 +lon_0 +R +units=m`` (as pyproj transforms).

    The operations of PROJ's spherical forward (``aeqd_s_forward``, oblique aspect, with its unit
    conversion and longitude reduction) in its order, with the C library's ``sin``, ``cos`` and ``acos``
    through :mod:`math`: pyproj's output, bit for bit (a test compares them on 10⁵ points), except within
    about a metre of the centre (:func:`_aeqd_near_centre`: within 1e−8 m there). A point antipodal to the
    centre has no image (ValueError).
    """
    phi0, lam0 = lat_0 * _PROJ_DEG_TO_RAD, lon_0 * _PROJ_DEG_TO_RAD
    sinph0, cosph0 = math.sin(phi0), math.cos(phi0)
    x, y = np.empty(lon.shape[0]), np.empty(lon.shape[0])
    sin, cos = math.sin, math.cos
    for i, (lo, la) in enumerate(zip(lon.tolist(), lat.tolist(), strict=True)):
        lam = _adjlon(lo * _PROJ_DEG_TO_RAD - lam0)
        phi = la * _PROJ_DEG_TO_RAD
        cosphi, sinphi = cos(phi), sin(phi)
        cosphi_x_coslam = cosphi * cos(lam)
        cc = sinph0 * sinphi + cosph0 * cosphi_x_coslam
        if abs(abs(cc) - 1.0) < _AEQD_TOL:
            if cc < 0.0:
                raise ValueError(f"Point {i} of the trajectory is antipodal to the campaign's box.")
            xx, yy = _aeqd_near_centre(lam, phi, phi0)
        else:
            yy = math.acos(cc)
            yy /= sin(yy)
            xx = yy * cosphi * sin(lam)
            yy *= cosph0 * sinphi - sinph0 * cosphi_x_coslam
        x[i] = radius_m * xx
        y[i] = radius_m * yy
    return x, y


def _aeqd_near_centre(lam: float, phi: float, phi0: float) -> tuple[float, float]:
    """Within about a metre of the centre PROJ takes the geodesic (``aeqd_e_forward``) on the unit sphere.

    The great-circle distance and azimuth by the haversine and ``atan2``: PROJ's value to within a few
    units in the last place of its degree conversions (1e−8 m at most), not bit for bit.
    """
    if abs(lam) < _AEQD_EPS10 and abs(phi - phi0) < _AEQD_EPS10:
        return 0.0, 0.0
    h = math.sin(0.5 * (phi - phi0)) ** 2 + math.cos(phi0) * math.cos(phi) * math.sin(0.5 * lam) ** 2
    s12 = 2.0 * math.asin(min(1.0, math.sqrt(h)))
    azi = math.atan2(
        math.cos(phi) * math.sin(lam),
        math.cos(phi0) * math.sin(phi) - math.sin(phi0) * math.cos(phi) * math.cos(lam),
    )
    return s12 * math.sin(azi), s12 * math.cos(azi)


def aeqd_inverse(
    x: np.ndarray, y: np.ndarray, lat_0: float, lon_0: float, radius_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """The plane of :func:`aeqd_forward` back to WGS 84 degrees (PROJ's ``aeqd_s_inverse``).

    Within 1e−13 degrees of pyproj's output (equal to it, bit for bit, for more than 99 % of points).
    """
    phi0, lam0 = lat_0 * _PROJ_DEG_TO_RAD, lon_0 * _PROJ_DEG_TO_RAD
    sinph0, cosph0 = math.sin(phi0), math.cos(phi0)
    ra = 1.0 / radius_m
    lon, lat = np.empty(x.shape[0]), np.empty(x.shape[0])
    for i, (xi, yi) in enumerate(zip(x.tolist(), y.tolist(), strict=True)):
        xx, yy = xi * ra, yi * ra
        c_rh = math.hypot(xx, yy)
        if c_rh < _AEQD_EPS10:
            phi, lam = phi0, 0.0
        else:
            c_rh = min(c_rh, math.pi)
            sinc, cosc = math.sin(c_rh), math.cos(c_rh)
            v = cosc * sinph0 + yy * sinc * cosph0 / c_rh
            phi = math.copysign(0.5 * math.pi, v) if abs(v) >= 1.0 else math.asin(v)
            yy = (cosc - sinph0 * math.sin(phi)) * c_rh
            xx *= sinc * cosph0
            lam = 0.0 if yy == 0.0 else math.atan2(xx, yy)
        lon[i] = _adjlon(lam + lam0) * _PROJ_RAD_TO_DEG
        lat[i] = phi * _PROJ_RAD_TO_DEG
    return lon, lat


_M32 = 0xFFFFFFFF


def _qr(x: list[int], a: int, b: int, c: int, d: int) -> None:
    xa, xb, xc, xd = x[a], x[b], x[c], x[d]
    xa = (xa + xb) & _M32
    xd ^= xa
    xd = ((xd << 16) | (xd >> 16)) & _M32
    xc = (xc + xd) & _M32
    xb ^= xc
    xb = ((xb << 12) | (xb >> 20)) & _M32
    xa = (xa + xb) & _M32
    xd ^= xa
    xd = ((xd << 8) | (xd >> 24)) & _M32
    xc = (xc + xd) & _M32
    xb ^= xc
    xb = ((xb << 7) | (xb >> 25)) & _M32
    x[a], x[b], x[c], x[d] = xa, xb, xc, xd


#: A double round: the quarter rounds of the four columns, then of the four diagonals.
_DOUBLE_ROUND = tuple(
    (i, 4 + (i + k) % 4, 8 + (i + 2 * k) % 4, 12 + (i + 3 * k) % 4) for k in (0, 1) for i in range(4)
)
_SIGMA = np.array([0x61707865, 0x3320646E, 0x79622D32, 0x6B206574], dtype=np.uint32)
#: Lane orders that turn a row of four lanes left by 0, 1, 2, 3 (turning by 4 − k turns back by k).
_TURN = tuple(np.array([(i + k) % 4 for i in range(4)]) for k in range(4))
_SHIFTS = tuple(np.uint32(r) for r in (16, 16, 12, 20, 8, 24, 7, 25))


def _quarter_rounds(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> None:
    """ChaCha's quarter round on four rows of lanes at once, in place (uint32 wraps modulo 2³²)."""
    s16, r16, s12, r20, s8, r24, s7, r25 = _SHIFTS
    a += b
    d ^= a
    d[...] = (d << s16) | (d >> r16)
    c += d
    b ^= c
    b[...] = (b << s12) | (b >> r20)
    a += b
    d ^= a
    d[...] = (d << s8) | (d >> r24)
    c += d
    b ^= c
    b[...] = (b << s7) | (b >> r25)


def _chacha_blocks(key: np.ndarray, stream: int, first: int, count: int) -> np.ndarray:
    """ChaCha20 blocks ``first`` to ``first + count − 1`` of a stream, vectorised: ``(count · 16,)`` words.

    Word for word :meth:`_Stream._block` of each counter, in block order. The state is four rows of
    four lanes (per block): a column round works on the rows as they are, a diagonal round on rows
    b, c, d turned by 1, 2, 3 lanes, as SIMD implementations do.
    """
    c = np.arange(first, first + count, dtype=np.uint64)
    j = np.empty((16, count), dtype=np.uint32)
    j[0:4] = _SIGMA[:, None]
    j[4:12] = np.asarray(key, dtype=np.uint32)[:, None]
    j[12] = (c & np.uint64(_M32)).astype(np.uint32)
    j[13] = (c >> np.uint64(32)).astype(np.uint32)
    j[14] = np.uint32(stream & _M32)
    j[15] = np.uint32(stream >> 32)
    x = j.reshape(4, 4, count).copy()
    a, b, cc, d = x[0], x[1], x[2], x[3]
    for _ in range(10):
        _quarter_rounds(a, b, cc, d)
        b[...], cc[...], d[...] = b[_TURN[1]], cc[_TURN[2]], d[_TURN[3]]
        _quarter_rounds(a, b, cc, d)
        b[...], cc[...], d[...] = b[_TURN[3]], cc[_TURN[2]], d[_TURN[1]]
    return (x.reshape(16, count) + j).T.reshape(-1)


class _Stream:
    """One ChaCha20 stream under a key, consumed word by word as geoldp's compiled stream functions do.

    Block ``c`` of stream ``s`` is the ChaCha20 block with words 12/13 the low/high half of ``c`` and 14/15
    those of ``s`` (see :mod:`geoldp._core.randomness`);
    draws: a uniform is two words (27 + 26 bits), an integer
    below k is bitmask rejection on two words, a Bernoulli is a uniform below p.
    """

    def __init__(self, key: np.ndarray, stream: int) -> None:
        self._key = [int(w) for w in key]
        self._stream = int(stream)
        self._counter = 0
        self._buf: list[int] = []
        self._pos = 16

    def _block(self) -> list[int]:
        c, s = self._counter, self._stream
        j = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *self._key]
        j += [c & _M32, c >> 32, s & _M32, s >> 32]
        x = list(j)
        for _ in range(10):
            for a, b, c, d in _DOUBLE_ROUND:
                _qr(x, a, b, c, d)
        return [(a + b) & _M32 for a, b in zip(x, j, strict=True)]

    def word(self) -> int:
        """The next 32-bit word."""
        if self._pos >= 16:
            self._buf = self._block()
            self._counter += 1
            self._pos = 0
        w = self._buf[self._pos]
        self._pos += 1
        return w

    def uniform(self) -> float:
        """A float on the 2⁻⁵³ grid in [0, 1)."""
        a = self.word() >> 5
        b = self.word() >> 6
        return float(a * 67108864 + b) * (1.0 / 9007199254740992.0)

    def words(self, k: int) -> np.ndarray:
        """The next ``k`` words at once (uint32): the words ``k`` calls of :meth:`word` give."""
        parts = []
        take = min(16 - self._pos, k)
        if take > 0:
            parts.append(np.array(self._buf[self._pos : self._pos + take], dtype=np.uint32))
            self._pos += take
            k -= take
        if k > 0:
            n_blocks = -(-k // 16)
            w = _chacha_blocks(np.asarray(self._key, dtype=np.uint32), self._stream, self._counter, n_blocks)
            self._counter += n_blocks
            parts.append(w[:k])
            self._buf = [int(v) for v in w[(n_blocks - 1) * 16 :]]
            self._pos = k - (n_blocks - 1) * 16
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)

    def uniforms(self, n: int) -> np.ndarray:
        """The next ``n`` uniforms at once: the floats ``n`` calls of :meth:`uniform` give."""
        w = self.words(2 * n).astype(np.uint64)
        return ((w[0::2] >> np.uint64(5)) * np.uint64(67108864) + (w[1::2] >> np.uint64(6))).astype(
            np.float64
        ) * (1.0 / 9007199254740992.0)

    def bernoulli(self, p: float) -> bool:
        """``uniform() < p``."""
        return self.uniform() < p

    def integers(self, k: int) -> int:
        """Uniform on {0, …, k−1} by bitmask rejection on 64-bit words."""
        if k <= 1:
            return 0
        shift = 64 - (k - 1).bit_length()
        while True:
            a = self.word()
            b = self.word()
            cand = ((a << 32) | b) >> shift
            if cand < k:
                return cand


class _GeneratorDraws:
    """A seeded numpy Generator drawn as geoldp's ``NumpyRandomSource`` draws one row (arrays of size 1)."""

    def __init__(self, gen: np.random.Generator) -> None:
        self._gen = gen

    def uniform(self) -> float:
        return float(self._gen.random(1)[0])

    def bernoulli(self, p: float) -> bool:
        return self.uniform() < p

    def integers(self, k: int) -> int:
        return int(self._gen.integers(0, k, size=1, dtype=np.int64)[0])


# ------------------------------------------------------------------------------------------------------
# the compiled kernels


def _fingerprint(root: str | os.PathLike[str]) -> int:
    """The digest of the kernel sources under ``root``, as the compiled kernels record theirs.

    The files in the order of ``sorted(Path(root).rglob("*.py"))`` (by their path's parts), read with
    ``os.walk``: ``pathlib`` costs 9 ms to import and a device imports this module once per report run.
    """
    import hashlib

    top = os.fspath(root)
    found: list[tuple[str, ...]] = []
    for folder, _dirs, files in os.walk(top):
        rel = os.path.relpath(folder, top)
        parts = () if rel == os.curdir else tuple(rel.split(os.sep))
        found.extend((*parts, name) for name in files if name.endswith(".py"))
    h = hashlib.sha256()
    for parts in sorted(found):
        with open(os.path.join(top, *parts), "rb") as fh:
            data = fh.read()
        if _KERNEL_SOURCE.search(data):
            h.update("/".join(parts).encode() + b"\0" + data + b"\0")
    return int(h.hexdigest()[:15], 16)


_KERNELS: list[Any] = []


def _kernels() -> tuple[Any, Any] | None:
    """The compiled kernels (without and with reference counting), or None: absent, stale, or off."""
    if _KERNELS:
        return _KERNELS[0]
    with _LOCK:
        if not _KERNELS:
            found = None
            if os.environ.get("GEOLDP_AOT", "1") != "0":
                try:
                    plain = importlib.import_module("geoldp._aot_kernels")
                    nrt = importlib.import_module("geoldp._aot_kernels_nrt")
                    digest = _fingerprint(os.path.dirname(os.path.realpath(__file__)))
                    if int(plain.kernel_digest()) == digest == int(nrt.kernel_digest()):
                        found = (plain, nrt)
                except (ImportError, AttributeError, OSError, ValueError):
                    found = None
            _KERNELS.append(found)
    return _KERNELS[0]


class _Index(NamedTuple):
    lam: np.ndarray
    phi: np.ndarray
    xyz: np.ndarray
    sxyz: np.ndarray
    order: np.ndarray
    gf: np.ndarray
    gi: np.ndarray
    basis: np.ndarray
    cell_start: np.ndarray
    delta: float


class _Copies(NamedTuple):
    tau: float
    g: int
    centred: bool
    balanced: bool
    nb_fallback: bool
    eps_piv: np.ndarray
    eps_np: np.ndarray
    lie: np.ndarray


class _RegionIndex(NamedTuple):
    lam: np.ndarray
    phi: np.ndarray
    xyz: np.ndarray
    sxyz: np.ndarray
    order: np.ndarray
    cell_start: np.ndarray
    nodes: np.ndarray
    levels: np.ndarray
    has_tree: bool


class _Region(NamedTuple):
    anchors: np.ndarray
    region: _RegionIndex
    tol_pt: float
    eager: bool
    eps_anc: np.ndarray
    eps_rad: np.ndarray
    sw_b: np.ndarray
    eps_dec: np.ndarray
    buckets: int
    continuous: bool
    input_mapping: bool
    tables: np.ndarray
    table_keys: np.ndarray
    table_slots: np.ndarray


class _Work(NamedTuple):
    buf: np.ndarray
    state: np.ndarray
    iwork: np.ndarray
    fwork: np.ndarray
    rows: np.ndarray
    dq: np.ndarray
    hp: np.ndarray
    dint: np.ndarray
    yy: np.ndarray
    rstack: np.ndarray
    rwork: np.ndarray
    stats: np.ndarray


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


# ------------------------------------------------------------------------------------------------------
# the client


def _document(campaign: Any) -> tuple[dict[str, Any], str]:
    """The checked campaign document of a path, a document or a :class:`geoldp.field.campaign.Campaign`."""
    if isinstance(campaign, (str, os.PathLike)):
        return load_campaign(campaign), f"The campaign file '{os.fspath(campaign)}'"
    document = getattr(campaign, "document", campaign)
    if not isinstance(document, dict):
        raise TypeError(
            "The 'campaign' parameter of geoldp.client must be a campaign file's path, its document (a dict) "
            f"or a geoldp.field.campaign.Campaign. Got {type(campaign).__name__} instead."
        )
    return check_campaign(document), "The campaign"


class Client:
    """A campaign (its file, document or ``Campaign`` object) prepared for one user's reports.

    Preparing reads P and builds what the design's randomiser reads of it (radians, unit vectors, the
    grid order and, for ATP, the quadtree of its region): public data only, O(|P|) memory, a few
    milliseconds for 10⁴ points. Reports then cost about the design's own kernel time.
    """

    def __init__(self, campaign: Any, *, _part: dict[str, Any] | None = None) -> None:
        document, where = _document(campaign) if _part is None else (_part, "A part of the campaign")
        self.document = document
        self.where = where
        self.id: str = document["id"]
        self.kind: str = document["kind"]
        self.design: str = document["design"]
        self.epsilon: float = document["epsilon"]
        #: The parts a report holds (a hybrid: its trajectory and its report, in the central draw order).
        self._parts: dict[str, Client] = {}
        self._max_points: int = 0  # the longest trajectory a trajectory part releases
        if self.kind == "hybrid":
            self._parts = {k: Client(None, _part=v) for k, v in part_views(document).items()}
            self._max_points = self._parts["trajectory"]._max_points
        elif self.kind == "trajectory":
            self._prepare_points()
        elif self.kind == "pilot":
            self._prepare_pilot()
        elif self.kind == "ldptrace":
            self._prepare_ldptrace()
        else:
            self._prepare_report()

    def __repr__(self) -> str:
        return f"Client(design={self.design!r}, epsilon={self.epsilon!r}, campaign={self.id[:12]!r})"

    # -- TraCS-D and TraCS-C: in the plane of the campaign's box, then snapped to P ------------------
    def _prepare_tracs(self) -> None:
        client = self.document["client"]
        plane = client["plane"]
        self._plane = (float(plane["lat_0"]), float(plane["lon_0"]), float(plane["radius_m"]))
        self._box = _readonly(np.asarray(client["planar_bounds"], dtype=np.float64))
        origin = client["origin"] if client["origin"] is not None else [0.0, 0.0]
        self._origin = _readonly(np.asarray(origin, dtype=np.float64))

    def _prepare_points(self) -> None:
        """P in radians and unit vectors (what snapping reads), the lengths released, the kernel's arrays."""
        doc = self.document
        lam, phi, xyz = _unit_vectors(doc["points"]["lon"], doc["points"]["lat"])
        self._m = int(lam.shape[0])
        self._lam, self._phi, self._xyz = _readonly(lam), _readonly(phi), _readonly(xyz)
        self._max_points = int(doc["parameters"]["max_points"])
        self._lengths = doc["client"]["lengths"]
        self._kernel = doc["client"]["kernel"]
        (self._prepare_tracs if self._kernel in TRACS_KERNELS else self._prepare_trajectory)()

    def _tracs_report(self, lon: np.ndarray, lat: np.ndarray, key: np.ndarray) -> dict[str, Any]:
        """TraCS's release of the trajectory in the plane, then each released location's nearest point of P.

        The plane and box are the central release's (:func:`aeqd_forward`); snapping to P is
        post-processing of the released locations, as the central design does it.
        """
        n = lon.shape[0]
        eps_a, eps_b = (np.array([float(v)]) for v in self._lengths[n])
        x, y = aeqd_forward(lon, lat, *self._plane)
        offsets = np.array([0, n], dtype=np.int64)
        kernels = _kernels()
        if kernels is None:  # the mechanism of the full geoldp (the JIT compiler), and PointSet's snapping
            from geoldp._core.pointset import PointSet
            from geoldp.trajectory import engine

            box = {"bounds": tuple(float(v) for v in self._box)}
            mech = engine.resolve_mechanism(self.design, self.epsilon, box, caller="geoldp.client")
            out_x, out_y = mech.perturb_xy(x, y, offsets, key=key)
            rlon, rlat = aeqd_inverse(out_x, out_y, *self._plane)
            pts = self.document["points"]
            idx, _ = PointSet(np.asarray(pts["lon"]), np.asarray(pts["lat"])).nearest(rlon, rlat)
            return {"points": np.atleast_1d(np.asarray(idx, dtype=np.int64)).tolist()}
        out_x, out_y = np.empty(n), np.empty(n)
        buf, state = np.zeros(16, dtype=np.uint32), np.zeros(3, dtype=np.int64)
        origin = (self._origin,) if self._kernel == "tracs_d_kernel" else ()  # TraCS-C has no origin
        kernel = getattr(kernels[0], self._kernel)
        kernel(x, y, offsets, self._box, *origin, eps_a, eps_b, key, 0, buf, state, out_x, out_y)
        return {"points": self._snap(*aeqd_inverse(out_x, out_y, *self._plane), kernels).tolist()}

    def _check_length(self, n: int) -> Any:
        """Refuse, before any draw, a length the campaign cannot release (or longer than its maximum).

        Returns the length's stage budgets.
        """
        if n > self._max_points:
            raise ValueError(
                f"The trajectory has {n} points; this campaign releases at most {self._max_points}. "
                f"Resample or simplify it to at most {self._max_points} points first."
            )
        row = self._lengths[n]
        if row is None or isinstance(row, str):
            raise ValueError(
                f"A trajectory of {n} points cannot be released under this campaign: "
                f"{row or 'not releasable'}. Resample it to another number of points."
            )
        return row

    # -- trajectory designs (TP, ATP, PointEM) -----------------------------------------------------
    def _prepare_trajectory(self) -> None:
        pts, client = self.document["points"], self.document["client"]
        grid = client["grid"]
        order = np.asarray(grid["order"], dtype=np.int64)
        self._plan = client["plan"]
        self._props = (int(client["proposals"][0]), int(client["proposals"][1]))
        self._region_tol = float(client["region_tol"])
        self._region_record = int(client["region_record"])
        self._stack = int(client["stack"])
        self._n_stats = int(client["stats"])
        self._index = _Index(
            self._lam,
            self._phi,
            self._xyz,
            np.ascontiguousarray(self._xyz[order]),
            order,
            np.asarray(grid["gf"], dtype=np.float64),
            np.asarray(grid["gi"], dtype=np.int64),
            np.ascontiguousarray(np.asarray(grid["basis"], dtype=np.float64).reshape(3, 3)),
            np.asarray(grid["cell_start"], dtype=np.int64),
            float(pts["diameter_m"]),
        )
        self._tau = float(client["tau"])
        self._region: _RegionIndex | None = None
        if self._kernel == "run_atp":
            levels = np.asarray(grid["levels"], dtype=np.int64).reshape(-1, 3)
            use_grid = int(self._index.gi[2]) == 1
            nodes = np.zeros((1, 12))
            kernels = _kernels()
            if use_grid:
                off = int(levels[-1, 0] + levels[-1, 1] * levels[-1, 2])
                nodes = np.zeros((off, 12))
                nu, nv = int(self._index.gi[0]), int(self._index.gi[1])
                if kernels is not None:
                    kernels[1].region_tree(self._index.sxyz, self._index.cell_start, nu, nv, levels, nodes)
            else:
                levels = np.zeros((1, 3), dtype=np.int64)
            # P's arrays as the grid index holds them (lam, phi, xyz, sxyz, order), then the quadtree
            self._region = _RegionIndex(*self._index[:5], self._index.cell_start, nodes, levels, use_grid)
        self._no_tables = (
            _readonly(np.zeros((0, self._m, 1))),
            _readonly(np.zeros((0, 2))),
            _readonly(np.zeros((0, 12, 12), dtype=np.int64)),
        )

    def _snap(self, lon: np.ndarray, lat: np.ndarray, kernels: Any) -> np.ndarray:
        """The nearest public point of each vertex, ties to the lowest index.

        The minimiser of geoldp's haversine kernel, as :meth:`geoldp.PointSet.nearest`.

        Dot products of unit vectors propose the points within ``_SNAP_DOT_TOL`` of the largest (rounding
        of a dot product is about 1e−16, so the kernel's minimiser is among them) and the kernel decides
        among them; a vertex whose nearest point is more than ``_FAR_COS``'s angle away is scanned fully.
        """
        lam, phi, q = _unit_vectors(lon, lat)
        dots = self._xyz @ q.T
        best = dots.max(axis=0)
        out = np.empty(lon.shape[0], dtype=np.int64)
        plain = kernels[0]
        for j in range(lon.shape[0]):
            if not best[j] >= _FAR_COS:
                out[j] = plain.nearest_scan(float(lam[j]), float(phi[j]), self._lam, self._phi)
                continue
            cand = np.flatnonzero(dots[:, j] >= best[j] - _SNAP_DOT_TOL)
            if cand.shape[0] == 1:
                out[j] = cand[0]
                continue
            sub_lam, sub_phi = _readonly(self._lam[cand]), _readonly(self._phi[cand])
            out[j] = cand[plain.nearest_scan(float(lam[j]), float(phi[j]), sub_lam, sub_phi)]
        return out

    def _tables(self, n: int) -> tuple[np.ndarray, ...]:
        row = self._check_length(n)
        eps_single = np.zeros(n + 1)
        tabs = [np.zeros((n + 1, 2)) for _ in range(7)]
        if not isinstance(row[0], list):
            eps_single[n] = float(row[0])
        else:
            for c in range(2):
                for k in range(7):
                    tabs[k][n, c] = float(row[c][k])
        return (eps_single, *tabs)

    def _trajectory_report(self, lon: np.ndarray, lat: np.ndarray, key: np.ndarray) -> dict[str, Any]:
        n = lon.shape[0]
        kernels = _kernels()
        if kernels is None:
            return {"points": self._fallback(lon, lat, key)}
        flat = self._snap(lon, lat, kernels)
        eps_single, eps_piv, eps_np, lie, eps_anc, eps_rad, sw_b, eps_dec = self._tables(n)
        offsets = np.array([0, n], dtype=np.int64)
        out = np.empty(n, dtype=np.int64)
        m = self._m
        n_rows = int(self._index.gi[1])
        work = _Work(
            np.zeros(16, dtype=np.uint32),
            np.zeros(3, dtype=np.int64),
            np.zeros((2, max(m, 4)), dtype=np.int64),
            np.zeros((4, max(m, 64))),
            np.zeros((6, n_rows), dtype=np.int64),
            np.zeros((8, 3)),
            np.zeros((40, 3)),
            np.zeros(8, dtype=np.int64),
            np.zeros((2, n), dtype=np.int64),
            np.zeros(self._stack, dtype=np.int64),
            np.zeros(8),
            np.zeros(self._n_stats, dtype=np.int64),
        )
        head = (flat, offsets, key, np.int64(0), eps_single, self._props[0], self._props[1], out, self._index)
        plain, nrt = kernels
        if self._kernel == "run_pointem":
            plain.run_pointem(*head, None, None, work, None)
            return {"points": out.tolist()}
        plan = self._plan
        copies = _Copies(
            self._tau,
            int(plan["granularity"]),
            bool(plan["centred"]),
            bool(plan["balanced"]),
            bool(plan["neighbour_fallback"]),
            eps_piv,
            eps_np,
            lie,
        )
        if self._kernel == "run_tp" or n == 1:  # ATP's one-point trajectories: no anchor, no region
            plain.run_tp(*head, copies, None, work, None)
            return {"points": out.tolist()}
        alam, aphi = np.empty(1), np.empty(1)
        nrt.anchor_points(flat, offsets, self._lam, self._phi, bool(plan["vector_mean"]), alam, aphi)
        anchor = plain.nearest_scan(float(alam[0]), float(aphi[0]), self._lam, self._phi)
        if self._region is None:  # prepared with the kernels of run_atp: unreachable otherwise
            raise RuntimeError("geoldp.client: the ATP region arrays were not prepared.")
        region = _Region(
            np.array([anchor], dtype=np.int64),
            self._region,
            self._region_tol,
            False,
            eps_anc,
            eps_rad,
            sw_b,
            eps_dec,
            int(plan["sw_buckets"]),
            bool(plan["continuous_sw"]),
            bool(plan["input_mapping"]),
            *self._no_tables,
        )
        plain.run_atp(*head, copies, region, work, np.zeros(self._region_record))
        return {"points": out.tolist()}

    def _fallback(self, lon: np.ndarray, lat: np.ndarray, key: np.ndarray) -> list[int]:
        """Without geoldp's compiled kernels: the full geoldp (the JIT compiler), same output."""
        from geoldp._core.pointset import PointSet
        from geoldp.trajectory import engine

        pts = self.document["points"]
        ps = PointSet(np.asarray(pts["lon"]), np.asarray(pts["lat"]))
        idx, _ = ps.nearest(lon, lat)
        self._check_length(lon.shape[0])  # the same refusal of a length the campaign cannot release
        mech = engine.resolve_mechanism(self.design, self.epsilon, {}, caller="geoldp.client")
        out = engine.run_with_key([np.asarray(idx, dtype=np.int64)], ps, mech, key=key)
        return [int(v) for v in out[0]]

    # -- report designs -------------------------------------------------------------------------------
    def _prepare_report(self) -> None:
        doc = self.document
        par = doc["parameters"]
        self._statistic = par["statistic"]
        self._oracle = par["oracle"]
        self._pad = int(par["pad_length"])
        self._base = int(par["base"])
        self._d = int(par["domain"])
        self._n_zones = int(par["n_zones"])
        self._zone_table = _zone_table(doc["report_zones"]["polygons"])

    # -- the pilot: three k-RR reports (length class, number of zones visited, one coarse cell) ------
    def _prepare_pilot(self) -> None:
        par = self.document["parameters"]
        self._length_edges = np.asarray(par["length_edges"], dtype=np.int64)
        self._zone_edges = np.asarray(par["zone_edges"], dtype=np.int64)
        self._fine = _zone_table(self.document["zones"]["polygons"])
        self._coarse = _zone_table(self.document["report_zones"]["polygons"])
        sizes = (len(par["length_edges"]) + 1, len(par["zone_edges"]) + 1, int(par["n_cells"]) + 1)
        self._pilot_krr = [(k, _krr_lie(k, float(e))) for k, e in zip(sizes, par["split"], strict=True)]

    def pilot_report(self, lon: np.ndarray, lat: np.ndarray, source: Any) -> dict[str, int]:
        """The pilot's three reports, drawn as :meth:`geoldp.designs.Pilot.release` draws one row's.

        ``source`` has ``uniform()``, ``integers(k)`` and ``bernoulli(p)``: first the uniform that picks
        the reported cell among the visited ones, then each k-RR report in turn.
        """
        zone = _zone_lookup(self._fine, lon, lat)
        n_zones = int(np.unique(zone[zone < self._fine[2]]).size)
        visited = np.unique(_zone_lookup(self._coarse, lon, lat))
        count = int(visited.size)
        pick = min(int(source.uniform() * count), count - 1)
        truths = (
            int(np.searchsorted(self._length_edges, lon.shape[0], side="right")),
            int(np.searchsorted(self._zone_edges, n_zones, side="right")),
            int(visited[pick]),
        )
        return {
            col: _krr_value(source, x, k, lie)
            for col, x, (k, lie) in zip(PILOT_COLUMNS, truths, self._pilot_krr, strict=True)
        }

    def items(self, lon: np.ndarray, lat: np.ndarray) -> list[int]:
        """The private item set a report design samples from: the visited zones, or the (origin, end) pair."""
        zone = _zone_lookup(self._zone_table, lon, lat)
        k = self._n_zones + 1
        if self._statistic == "od":
            return [int(zone[0]) * k + int(zone[-1])]
        return [int(v) for v in np.unique(zone)]

    def report_of(self, items: list[int], source: Any) -> dict[str, Any]:
        """The oracle's report of one item set, drawn from ``source``.

        ``source`` has ``integers(k)``, ``bernoulli(p)`` and ``word()`` (a uniform 32-bit word); the
        report draws in the order of geoldp's compiled samplers: the padded item, then the oracle.
        """
        size = len(items)
        j = source.integers(max(size, self._pad))
        x = items[j] if j < size else self._base + (j - size)
        eps = self.epsilon
        if self._oracle == "krr":
            return {"value": _krr_value(source, x, self._d, _krr_lie(self._d, eps))}
        if self._oracle == "olh":
            g = olh_range(eps)
            seed = int(source.word())
            return {"seed": seed, "value": _krr_value(source, _olh_hash(seed, x, g), g, _krr_lie(g, eps))}
        t = math.exp(-eps)
        p, q = 0.5, t / (1.0 + t)
        bits = [source.bernoulli(p if v == x else q) for v in range(self._d)]
        return {"bits": np.packbits(bits).tobytes().hex()}  # bit v: bit 7 − v % 8 of byte v // 8

    # -- LDPTrace: round 1 (the length) or round 2 (start, end, transitions), OUE bit vectors ---------
    def _prepare_ldptrace(self) -> None:
        from geoldp._ldptrace_grid import Grid

        par = self.document["parameters"]
        x0, y0, x1, y1 = (float(b) for b in par["grid"]["bounds"])
        self._grid = Grid(x0, y0, x1, y1, n=int(par["grid"]["n"]))
        self._round = int(par["round"])
        self._length_domain = int(par["length_domain"])
        self._max_length = 0 if par["max_length"] is None else int(par["max_length"])
        eps = float(par["length_epsilon"] if self._round == 1 else par["per_report"])
        t = math.exp(-eps)  # as geoldp.mechanisms.oracles.oue_probabilities
        self._oue_q = t / (1.0 + t)

    def ldptrace_cells(self, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
        """The grid trajectory of one trajectory (:func:`geoldp.ldptrace.cell_sequences`, its own code)."""
        from geoldp._ldptrace_grid import cell_sequences

        cells, _ = cell_sequences(lon, lat, np.array([0, lon.shape[0]]), self._grid)
        return cells

    def ldptrace_values(self, lon: np.ndarray, lat: np.ndarray) -> list[int]:
        """The true value of each OUE report of this round, in the order drawn (−1: an empty report).

        Round 1: the length in cells, capped at the length domain D, minus 1. Round 2: the start cell,
        the end cell, then the L − 1 transitions (``cell · 8 + move``) of the trajectory truncated to L
        cells, padded with empty reports.
        """
        from geoldp._ldptrace_grid import round2_values

        cells = self.ldptrace_cells(lon, lat)
        if self._round == 1:
            return [min(int(cells.shape[0]), self._length_domain) - 1]
        start, end, moves = round2_values(cells, self._max_length, self._grid)
        return [start, end, *(int(v) for v in moves)]

    def ldptrace_probabilities(self, values: list[int]) -> list[np.ndarray]:
        """Each report's per-bit probabilities of a 1: 1/2 at its true value, q = 1/(e^ε′ + 1) elsewhere."""
        sizes = (
            [self._length_domain]
            if self._round == 1
            else [self._grid.size, self._grid.size] + [8 * self._grid.size] * (self._max_length - 1)
        )
        out = []
        for v, d in zip(values, sizes, strict=True):
            p = np.full(d, self._oue_q)
            if v >= 0:
                p[v] = 0.5
            out.append(p)
        return out

    def ldptrace_report(self, lon: np.ndarray, lat: np.ndarray, source: Any) -> dict[str, Any]:
        """The OUE reports of this round for one trajectory, each bit ``uniform < probability`` of ``source``.

        ``source`` has ``uniforms(n)`` (n uniforms at once). The bit vectors are hex (bit v is bit
        7 − v % 8 of byte v // 8), drawn in order: the length (round 1); start, end, transitions
        (round 2).
        """
        probs = self.ldptrace_probabilities(self.ldptrace_values(lon, lat))
        flat = np.concatenate(probs)
        bits = source.uniforms(flat.shape[0]) < flat
        ends = np.cumsum([p.shape[0] for p in probs])[:-1]
        hexes = [np.packbits(b).tobytes().hex() for b in np.split(bits, ends)]
        if self._round == 1:
            return {"length": hexes[0]}
        return {"start": hexes[0], "end": hexes[1], "transitions": hexes[2:]}

    def _payload(self, lon: np.ndarray, lat: np.ndarray, key: np.ndarray) -> dict[str, Any]:
        """The report of one part of the trajectory, drawn from the stream of ``key`` (stream 0)."""
        if self.kind == "report":
            return self.report_of(self.items(lon, lat), _Stream(key, 0))
        if self._kernel in TRACS_KERNELS:
            return self._tracs_report(lon, lat, key)
        return self._trajectory_report(lon, lat, key)

    # -- the record -----------------------------------------------------------------------------------
    def respond(self, trajectory: Any, *, user: str, rng: Any = None) -> dict[str, Any]:
        """One report record of ``trajectory`` for ``user`` (see :func:`respond`)."""
        if not isinstance(user, str) or not user.strip() or len(user) > 256:
            raise (TypeError if not isinstance(user, str) else ValueError)(
                "The 'user' parameter of geoldp.client.respond must be a non-empty string of at most 256 "
                f"characters (the user's id at the collector). Got {type(user).__name__} instead."
            )
        lon, lat = _coordinates(trajectory)
        parts = self._parts or {self.kind: self}
        if "trajectory" in parts:
            parts["trajectory"]._check_length(lon.shape[0])
        gen = _generator(rng)  # every check above comes before the first draw
        if self.kind == "pilot":  # the central pilot draws from its source directly (no stream key)
            payload, record_id = self._pilot_record(lon, lat, gen)
            return self._record(payload, record_id, user, gen)
        if self.kind == "ldptrace":
            (key,), record_id = _keys_and_id(gen, 1)
            return self._record(self.ldptrace_report(lon, lat, _Stream(key, 0)), record_id, user, gen)
        keys, record_id = _keys_and_id(gen, len(parts))
        payloads = {
            kind: part._payload(lon, lat, key) for (kind, part), key in zip(parts.items(), keys, strict=True)
        }
        payload = payloads if self._parts else payloads[self.kind]
        return self._record(payload, record_id, user, gen)

    def _pilot_record(self, lon: np.ndarray, lat: np.ndarray, gen: Any) -> tuple[dict[str, Any], str]:
        if gen is None:  # a ChaCha20 stream under a key from the OS: the same draws, from the OS's entropy
            (key,), record_id = _keys_and_id(None)
            return self.pilot_report(lon, lat, _Stream(key, 0)), record_id
        return self.pilot_report(lon, lat, _GeneratorDraws(gen)), gen.bytes(16).hex()

    def _record(self, payload: Any, record_id: str, user: str, gen: Any) -> dict[str, Any]:
        return {
            "format": RECORD_FORMAT,
            "version": RECORD_VERSION,
            "record_id": record_id,
            "campaign": self.id,
            "user": user,
            "design": self.design,
            "epsilon": self.epsilon,
            "report": payload,
            "rng": "os-csprng" if gen is None else "seeded",
        }


def _unit_vectors(lon: Any, lat: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Degrees to radians, and the points as unit vectors (what snapping compares)."""
    lam, phi = np.asarray(lon, dtype=np.float64) * _DEG2RAD, np.asarray(lat, dtype=np.float64) * _DEG2RAD
    cphi = np.cos(phi)
    return lam, phi, np.column_stack([cphi * np.cos(lam), cphi * np.sin(lam), np.sin(phi)])


def _zone_table(polygons: list[Any]) -> tuple[list[Any], list[tuple[float, float, float, float]], int]:
    """Zones as the client looks vertices up in them: rings as arrays, each zone's box, their number."""
    zones = [
        [[np.asarray(ring, dtype=np.float64) for ring in polygon] for polygon in zone] for zone in polygons
    ]
    boxes = [
        (
            min(float(p[0][:, 0].min()) for p in zone),
            min(float(p[0][:, 1].min()) for p in zone),
            max(float(p[0][:, 0].max()) for p in zone),
            max(float(p[0][:, 1].max()) for p in zone),
        )
        for zone in zones
    ]
    return zones, boxes, len(zones)


def _zone_lookup(table: tuple[list[Any], list[Any], int], lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """The first zone that contains each vertex or has it on its boundary; the number of zones for none."""
    zones, boxes, n = table
    out = np.full(lon.shape[0], n, dtype=np.int64)
    todo = np.ones(lon.shape[0], dtype=bool)
    for k, zone in enumerate(zones):
        x0, y0, x1, y1 = boxes[k]
        cand = todo & (lon >= x0) & (lon <= x1) & (lat >= y0) & (lat <= y1)
        if not cand.any():
            continue
        idx = np.flatnonzero(cand)
        hit = np.zeros(idx.shape[0], dtype=bool)
        for polygon in zone:
            inside, edge = _in_ring(polygon[0], lon[idx], lat[idx])
            hit |= edge
            inside &= ~edge
            for hole in polygon[1:]:
                in_hole, on_hole = _in_ring(hole, lon[idx], lat[idx])
                hit |= on_hole
                inside &= ~(in_hole & ~on_hole)
            hit |= inside
        out[idx[hit]] = k
        todo[idx[hit]] = False
    return out


def _in_ring(ring: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(inside, on_edge)`` of points against a closed ring (crossing number; edges exactly)."""
    inside = np.zeros(x.shape[0], dtype=bool)
    edge = np.zeros(x.shape[0], dtype=bool)
    for i in range(ring.shape[0] - 1):
        x1, y1 = ring[i]
        x2, y2 = ring[i + 1]
        cross = (x2 - x1) * (y - y1) - (y2 - y1) * (x - x1)
        within = (np.minimum(x1, x2) <= x) & (x <= np.maximum(x1, x2))
        within &= (np.minimum(y1, y2) <= y) & (y <= np.maximum(y1, y2))
        edge |= within & (cross == 0.0)
        if y1 != y2:
            straddle = (y1 > y) != (y2 > y)
            xs = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
            inside ^= straddle & (x < xs)
    return inside, edge


def _krr_lie(k: int, epsilon: float) -> float:
    """k-RR's total lie probability ``(k−1)e^{−ε}/(1 + (k−1)e^{−ε})`` (as geoldp.mechanisms.krr_constants)."""
    t = math.exp(-epsilon)
    return (k - 1) * t / (1.0 + (k - 1) * t)


def _krr_value(source: Any, x: int, k: int, lie: float) -> int:
    if source.bernoulli(lie):
        j = source.integers(k - 1)
        return j + 1 if j >= x else j
    return x


_M64 = (1 << 64) - 1


def _olh_hash(seed: int, v: int, g: int) -> int:
    """OLH's public hash H_seed(v) in {0, …, g−1} (splitmix64's finaliser, as geoldp's oracles)."""
    z = ((seed << 32) ^ v) & _M64
    z = (z * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return (z ^ (z >> 31)) % g


def _coordinates(trajectory: Any) -> tuple[np.ndarray, np.ndarray]:
    """(lon, lat) float64 arrays of a trajectory given as an (n, 2) array or a (lon, lat) pair."""
    if isinstance(trajectory, tuple) and len(trajectory) == 2:
        lon = np.asarray(trajectory[0], dtype=np.float64).reshape(-1)
        lat = np.asarray(trajectory[1], dtype=np.float64).reshape(-1)
        if lon.shape != lat.shape:
            raise ValueError("The 'trajectory' parameter's lon and lat must have the same length.")
    else:
        try:
            arr = np.asarray(trajectory, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                "The 'trajectory' parameter of geoldp.client.respond must be an (n, 2) array of (lon, lat) "
                f"degrees or a (lon, lat) pair of arrays. Got {type(trajectory).__name__} instead."
            ) from None
        if arr.ndim != 2 or arr.shape[1] != 2:
            raise ValueError(
                "The 'trajectory' parameter of geoldp.client.respond must be an (n, 2) array of (lon, lat) "
                f"degrees. Got shape {arr.shape} instead."
            )
        lon, lat = np.ascontiguousarray(arr[:, 0]), np.ascontiguousarray(arr[:, 1])
    if lon.shape[0] == 0:
        raise ValueError("The 'trajectory' parameter of geoldp.client.respond has no points.")
    bad = ~(np.isfinite(lon) & np.isfinite(lat))
    if bad.any():
        raise ValueError(
            f"Point {int(np.flatnonzero(bad)[0])} of the trajectory has a NaN or infinite coordinate."
        )
    out = ~((np.abs(lat) <= 90.0) & (np.abs(lon) <= 180.0))
    if out.any():
        raise ValueError(
            f"Point {int(np.flatnonzero(out)[0])} of the trajectory is outside lon [-180, 180], lat "
            "[-90, 90]: "
            "the client takes WGS 84 longitude and latitude in degrees, longitude first."
        )
    return lon, lat


def _client(campaign: Any) -> Client:
    """The prepared :class:`Client` of a campaign: kept per process by id (or by file and its stat)."""
    if isinstance(campaign, Client):
        return campaign
    if isinstance(campaign, (str, os.PathLike)):
        try:
            st = os.stat(campaign)
            key = f"{os.path.realpath(campaign)}\0{st.st_mtime_ns}\0{st.st_size}"
        except OSError:
            key = None  # Client() says what is wrong with it
    else:
        document = getattr(campaign, "document", campaign)
        key = document.get("id") if isinstance(document, dict) else None
    if isinstance(key, str) and key in _PREPARED:
        with _LOCK:
            _PREPARED.move_to_end(key)
        return _PREPARED[key]
    client = Client(campaign)
    with _LOCK:
        _PREPARED[key if isinstance(key, str) else client.id] = client
        while len(_PREPARED) > _PREPARED_MAX:
            _PREPARED.popitem(last=False)
    return client


def respond(campaign: Any, trajectory: Any, *, user: str, rng: Any = None) -> dict[str, Any]:
    """One user's report record of one trajectory under a campaign.

    Parameters
    ----------
    campaign : str, path-like, dict, geoldp.field.campaign.Campaign or Client
        The campaign file the collector published (checked: format, version and digest), its document,
        or a prepared :class:`Client` (faster for many reports: P is prepared once).
    trajectory : array_like of shape (n, 2), or (lon, lat) pair of arrays
        The user's trajectory in WGS 84 degrees, longitude first. It never leaves this call.
    user : str
        The user's id at the collector (the collector charges her budget under it).
    rng : {None, int, array_like[ints], SeedSequence, BitGenerator, Generator}, optional
        ``None`` (default) draws from the operating system's cryptographic source. A seed is for tests
        and experiments only: it reproduces the central release of the same design with the same seed.

    Returns
    -------
    dict
        The record (JSON-able): ``format``, ``version``, ``record_id``, ``campaign`` (its id), ``user``,
        ``design``, ``epsilon``, ``report`` (the released values: indices into P for a trajectory design,
        the oracle's report for a report design, ``{"trajectory": ..., "report": ...}`` for a hybrid, the
        three class reports for a pilot) and ``rng`` (the policy, never the seed). Send it as one line of
        JSON (:func:`to_json_line`).

    Raises
    ------
    TypeError, ValueError
        A malformed campaign (naming the file), trajectory, user or ``rng``; a trajectory longer than the
        campaign's ``max_points``. All checks come before the first random draw.

    Notes
    -----
    The record's ε is the campaign's: one report spends exactly that much of the user's budget (every
    stage of the design's split included), whatever the trajectory.
    """
    return _client(campaign).respond(trajectory, user=user, rng=rng)


def to_json_line(record: dict[str, Any]) -> str:
    """A record as one line of JSON (no newline inside; end each line with a newline in a JSON Lines file)."""
    import json

    return json.dumps(record, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
