"""Reproducible seeds: RapidGNN's ``s_{e,i}^{(w)} = H(s_0, w, e, i)`` and a keyed PRNG.

Seed derivation (RapidGNN §3, "Seed generator")
------------------------------------------------
:func:`derive_seed` hashes ``(base_seed, *keys)`` with SHA-256 and returns the first 8
bytes of the digest as a big-endian unsigned 64-bit integer. The tuple is encoded
unambiguously (type tag and length prefix per element), so no two distinct tuples share
an encoding::

    encoding = b"commgnn.seed.v1" + b"".join(enc(x) for x in (base_seed, *keys))
    enc(int x) = b"i" + len(b).to_bytes(4, "big") + b  with
                 b = x.to_bytes((x.bit_length() + 8) // 8, "big", signed=True)
    enc(str x) = b"s" + len(b).to_bytes(4, "big") + b  with  b = x.encode("utf-8")

:func:`batch_seed` is exactly ``H(s_0, w, e, i)``; other uses put a string domain tag
first (e.g. :func:`shuffle_seed` is ``H(s_0, "shuffle", w, e)``), which cannot collide
with the all-integer batch tuples because of the type tags.

Counter-based PRNG
------------------
Inside numba kernels randomness comes from splitmix64 outputs
(:func:`mix64` is its bijective finaliser): the ``t``-th draw (``t = 0, 1, ...``) of the
stream keyed by ``k`` is ``mix64(k + (t + 1) * GOLDEN)`` (mod ``2**64``). Keys are
derived from the seed and the purpose (layer, node id...), so every draw is a pure
function of its key and index: no state, no dependence on call order or thread count.
"""

from __future__ import annotations

import hashlib

import numpy as np
from numba import njit

_DOMAIN = b"commgnn.seed.v1"
MASK64 = (1 << 64) - 1

# splitmix64 constants (Steele, Lea & Flood 2014; finaliser "Mix13" by Stafford).
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_LO32 = np.uint64(0xFFFFFFFF)
_ONE = np.uint64(1)


def _encode_key(key: int | str) -> bytes:
    # bool is an int subclass; reject it so True and 1 are not silently the same seed.
    if isinstance(key, (bool, np.bool_)):
        raise TypeError("seed keys must be int or str, not bool")
    if isinstance(key, (int, np.integer)):
        value = int(key)
        payload = value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
        tag = b"i"
    elif isinstance(key, str):
        payload = key.encode("utf-8")
        tag = b"s"
    else:
        raise TypeError(f"seed keys must be int or str, not {type(key).__name__}")
    return tag + len(payload).to_bytes(4, "big") + payload


def derive_seed(base_seed: int, *keys: int | str) -> int:
    """SHA-256 of the unambiguous encoding of ``(base_seed, *keys)``, as a uint64 int."""
    digest = hashlib.sha256(_DOMAIN)
    for key in (base_seed, *keys):
        digest.update(_encode_key(key))
    return int.from_bytes(digest.digest()[:8], "big")


def batch_seed(base_seed: int, worker: int, epoch: int, batch: int) -> int:
    """RapidGNN's ``s_{e,i}^{(w)} = H(s_0, w, e, i)``: the sampler seed of one batch."""
    return derive_seed(base_seed, worker, epoch, batch)


def shuffle_seed(base_seed: int, worker: int, epoch: int) -> int:
    """``H(s_0, "shuffle", w, e)``: seeds the order of worker ``w``'s batches in epoch ``e``."""
    return derive_seed(base_seed, "shuffle", worker, epoch)


def as_uint64(seed: int) -> np.uint64:
    """A Python int (any sign/size) reduced mod ``2**64``, as ``np.uint64`` for kernels."""
    return np.uint64(int(seed) & MASK64)


@njit(cache=True, nogil=True, inline="always")
def mix64(z: np.uint64) -> np.uint64:
    """splitmix64 finaliser: a bijection of uint64 with full avalanche."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, nogil=True, inline="always")
def stream_draw(key: np.uint64, t: np.uint64) -> np.uint64:
    """The ``t``-th (0-based) 64-bit draw of the splitmix64 stream keyed by ``key``."""
    return mix64(key + (t + _ONE) * GOLDEN)


@njit(cache=True, nogil=True, inline="always")
def bounded(r: np.uint64, n: np.uint64) -> np.uint64:
    """``floor(r * n / 2**64)`` for ``n < 2**32``: maps a uniform draw onto ``[0, n)``.

    Lemire's multiply-shift without 128-bit integers; bias at most ``n / 2**64``.
    """
    hi = r >> _S32
    lo = r & _LO32
    return (hi * n + ((lo * n) >> _S32)) >> _S32


@njit(cache=True, nogil=True)
def stream_uint64(key: np.uint64, n: np.int64) -> np.ndarray:
    """The first ``n`` draws of the stream keyed by ``key`` (pairwise distinct)."""
    out = np.empty(n, dtype=np.uint64)
    for t in range(n):
        out[t] = stream_draw(key, np.uint64(t))
    return out
