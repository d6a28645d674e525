"""``ember.Generator``: the state of a pseudo-random number stream.

NOTE [ Random number generation ]
ember's CPU generator reproduces PyTorch's CPU streams bit for bit, so a program seeded with
``manual_seed`` draws the numbers it draws under PyTorch (the same initial weights, data,
shuffles and dropout masks). The engine is PyTorch's: MT19937 seeded by the standard 32-bit
initialisation with ``seed & 0xffffffff`` (``initial_seed`` reports the full 64-bit seed).
NumPy's ``MT19937`` bit generator produces the 32-bit words; a 64-bit draw is two
consecutive words, the first the high half. ``get_state`` is PyTorch's 5056-byte layout:
the initial seed, the engine's ``left``/``next`` counters, its 624 words (8 bytes each) and
the cached second Box-Muller normal (float64 and float32 slots, each with a valid flag), so
a state from ``torch.get_rng_state()`` set into ember continues PyTorch's stream, and back.

Each op takes PyTorch's words in PyTorch's order and applies its transform (the samplers in
ember/_ops/random_ops.py say which): float64 uniforms are the low 53 bits of a 64-bit draw,
the other float dtypes the low 24 bits of a word (float16/bfloat16 then round); normals are
Box-Muller, either one pair of float64 uniforms per two values with the second kept for the
next call, or, for contiguous tensors of 16 or more elements, blocks of 16 from uniforms
drawn up front with the last 16 redone from fresh ones; integers are a word modulo the range
(a 64-bit draw for ranges of 2**28 and more); ``randperm`` swaps with a word modulo the
remaining length; ``multinomial`` is a float64 uniform per sample with replacement, else
the largest ``p / Exp(1)``; strided outputs fill in memory order.

The arithmetic depends on the CPU kernel build PyTorch runs (``rng_math.cpu_capability()``,
which honours ``ATEN_CPU_CAPABILITY``), and ember follows the build of the machine it runs
on: the AVX2 and AVX-512 builds fuse multiply-adds (``x * (to - from) + from``,
``z * std + mean``; ember's fma, NOTE [ Fused multiply-add as PyTorch's kernels ] in
ember/_ops/_fma.py), and AVX2's float32 normal blocks use float32 polynomials for log, sin
and cos (NOTE [ AVX2 normal blocks ] in rng_math.py); PyTorch registers no AVX-512 normal
kernel, so AVX-512 machines draw normals with the AVX2 one (measured bit-equal with
``ATEN_CPU_CAPABILITY=avx2`` and without it on an AVX-512 CPU). What is not matched, and why:

- The portable build (``ATEN_CPU_CAPABILITY=default``, or a CPU without AVX2) computes
  float32 normal blocks with the C library's float32 log/sin/cos; ember computes them
  through float64 and rounds, one ulp away in under 1% of values. Everything else matches.
- Float64 log/exp/tan/sin/cos come from NumPy, which calls the C library on x86 machines
  without AVX-512; with AVX-512 NumPy may use its own SIMD versions, one ulp away on rare
  inputs (float64 normal blocks there: about 1 value in 600 is one ulp away).
- PyTorch's MKL builds may route ``bernoulli_`` with a scalar ``p`` (and ``exponential_``)
  through MKL's own streams on Intel CPUs; ember reproduces the path measured on an AMD
  CPU (a float64 uniform per element), which is what PyTorch takes without MKL or Intel.
- ``poisson``, ``binomial`` and the gamma family (gamma, Dirichlet, Beta, Chi2, StudentT)
  draw PyTorch's numbers with PyTorch's rejection loops, element after element
  (``ember/_core/rng_sequential.py``); von Mises with its rounds of ``rand``. On other
  devices they draw through ``numpy_generator()``: a NumPy Generator over the same MT19937
  engine, so they are seeded, deterministic and advance the stream, but do not draw
  PyTorch's numbers.
- CUDA generators (ember/cuda/random.py) run the same engine on the host; PyTorch's CUDA
  streams are Philox and are not reproduced.
"""

from __future__ import annotations

import ctypes
import operator
import secrets
import struct

import numpy as np

from .device import as_device
from .tensor import Tensor, wrap

#: the seed a fresh ``Generator()`` starts from (PyTorch's default_rng_seed_val)
DEFAULT_SEED = 67280421310721

_MT_N = 624
#: PyTorch's CPU generator state: initial seed, left, seeded, next, the 624 words as uint64,
#: the float64 normal cache (x, y, rho, valid), the float32 normal cache and its flag
_HEAD = struct.Struct("<QiiQ")
_TAIL = struct.Struct("<dddif?7x")
STATE_SIZE = _HEAD.size + 8 * _MT_N + _TAIL.size  # 5056
_LEGACY_SIZE = STATE_SIZE - 8  # PyTorch also takes the older layout without the float cache
_U64 = 1 << 64

# NOTE [ Draws made where they are used ]
# NumPy's ``random_raw`` hands the engine's words over as a uint64 array, and a draw then
# costs NumPy passes over it: a million dropout draws made two million words (16 MB), joined
# them in pairs, masked, converted and compared, 3.3 ms on one core against PyTorch's 3.7
# (its ``bernoulli_``), and dropout's draws are one core's work however many threads run.
# With numba, large draws run the engine in a compiled loop on the NumPy bit generator's own
# state (its C struct, under its lock) and turn each word into its uniform or 0/1 as it is
# made: 1.5 ms for the same million. The words, and so the numbers, are the same; below
# ``COMPILED_MIN_DRAWS`` the call's set-up costs more than it saves.
#: the fewest draws made by the compiled loops
COMPILED_MIN_DRAWS = 4096


def _normalise_seed(seed, op_name="manual_seed"):
    """A seed as an unsigned 64-bit int; negative seeds wrap around, as in PyTorch."""
    if isinstance(seed, bool):
        seed = int(seed)
    try:
        s = operator.index(seed)
    except TypeError:
        raise RuntimeError(
            f"{op_name} expected a long, but got {type(seed).__name__}") from None
    if s < -(1 << 63) or s >= _U64:
        raise ValueError("Overflow when unpacking long long")
    return s % _U64


def _engine(key, pos):
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
    return bits


def _seeded_engine(seed):
    """MT19937 after the standard 32-bit initialisation (NumPy's legacy seeding)."""
    key = np.random.RandomState(seed & 0xFFFFFFFF).get_state()[1]
    return _engine(key, _MT_N)


class Generator:
    """A pseudo-random number generator, passable as ``generator=`` to every random op.

    On the CPU its streams are PyTorch's (NOTE [ Random number generation ]).

    Args:
        device: the device the generator serves (default CPU).

    Example::

        >>> g = ember.Generator().manual_seed(0)
        >>> a = ember.rand(3, generator=g)
        >>> b = ember.rand(3, generator=g.manual_seed(0))
        >>> bool((a == b).all())
        True
    """

    __module__ = "ember"  # its public address (printed classes, pickles)

    __slots__ = ("_bits", "_np", "_seed", "_device", "_fresh", "_normal", "_normal32",
                 "_view", "__weakref__")

    def __init__(self, device="cpu"):
        dev = as_device(device if device is not None else "cpu")
        if dev.type == "meta":  # meta tensors hold no values, so nothing draws from it
            raise RuntimeError("META device type not an accelerator.")
        self._device = dev
        self._reseed(DEFAULT_SEED)

    def _reseed(self, seed):
        self._seed = seed
        self._set_engine(_seeded_engine(seed))
        self._fresh = True      # PyTorch's counters read left=1, next=0 until the first draw
        self._normal = None     # the cached second Box-Muller value (float64), or None
        self._normal32 = None   # PyTorch's float32 cache slot (kept, for its state layout)

    def _set_engine(self, bits):
        self._bits = bits
        self._np = None
        self._view = None

    @property
    def device(self):
        """The device this generator serves."""
        return self._device

    def manual_seed(self, seed) -> Generator:
        """Reset the stream to the one determined by ``seed``; returns ``self``."""
        self._reseed(_normalise_seed(seed))
        return self

    def seed(self) -> int:
        """Seed from a non-deterministic source and return the seed used."""
        s = secrets.randbits(64)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    # -- the engine's words ---------------------------------------------------------------

    def _words(self, n) -> np.ndarray:
        """The next ``n`` 32-bit words of the stream, as uint64 (PyTorch's ``random()``)."""
        if n:
            self._fresh = False
        return self._bits.random_raw(n)

    def _compiled(self, n):
        """The numba kernels module where ``n`` draws are made by it (NOTE [ Draws made where
        they are used ]), else None."""
        if n < COMPILED_MIN_DRAWS:
            return None
        from .. import _kernels  # (kernels sit above _core: imported on first use)

        if _kernels.backend() != "numba":
            return None
        from .._kernels import _numba_random

        return _numba_random

    def _draw(self, kernel, *args) -> None:
        """Run ``kernel(state, *args)`` on the engine's own state, under its lock."""
        bits = self._bits
        if self._view is None:
            # the engine's C state: 624 uint32 words and the position (a C int after them)
            raw = (ctypes.c_uint32 * (_MT_N + 1)).from_address(bits.ctypes.state_address)
            self._view = np.ctypeslib.as_array(raw)   # (lives with self._bits, its owner)
        self._fresh = False
        with bits.lock:
            kernel(self._view, *args)

    def _words64(self, n) -> np.ndarray:
        """The next ``n`` 64-bit draws, each of two words, the first the high half (PyTorch's
        ``random64()``)."""
        w = self._words(2 * n)
        hi = w[0::2]
        hi <<= np.uint64(32)
        hi |= w[1::2]
        return hi

    def _uniform64(self, n) -> np.ndarray:
        """``n`` float64 uniforms on [0, 1): the low 53 bits of a 64-bit draw, scaled."""
        k = self._compiled(n)
        if k is not None:
            out = np.empty(n)
            self._draw(k.uniform53_into, out)
            return out
        r = self._words64(n)
        r &= np.uint64((1 << 53) - 1)
        out = r.astype(np.float64)
        out *= 2.0 ** -53
        return out

    def _uniform_bits(self, n, bits) -> np.ndarray:
        """``n`` uniforms on [0, 1) from the low ``bits`` bits of one word each, as float32
        (exact: ``bits`` is at most 24)."""
        k = self._compiled(n)
        if k is not None:
            out = np.empty(n, np.float32)
            self._draw(k.uniform_bits_into, bits, out)
            return out
        w = self._words(n)
        w &= np.uint64((1 << bits) - 1)
        out = w.astype(np.float32)
        out *= np.float32(2.0 ** -bits)
        return out

    def _bernoulli(self, n, p, dtype) -> np.ndarray:
        """``n`` draws of ``dtype``: 1 where a float64 uniform (``_uniform64``) is below
        the number ``p``, else 0."""
        k = self._compiled(n)
        if k is None:
            return (self._uniform64(n) < p).astype(dtype)
        dtype = np.dtype(dtype)
        # (numba writes float32/64 and integers; 0 and 1 are exact in every other dtype)
        direct = dtype.kind in "iu" or dtype in (np.float32, np.float64)
        out = np.empty(n, dtype if direct else np.uint8)
        self._draw(k.uniform53_into, out, float(p))
        return out if direct else out.astype(dtype)

    def _take_normal(self):
        """The cached second Box-Muller value (then cleared), or None."""
        v, self._normal = self._normal, None
        return v

    def _put_normal(self, v) -> None:
        self._normal = v

    # -- state ------------------------------------------------------------------------------

    def get_state(self):
        """The generator's state as a uint8 tensor, in PyTorch's layout (restore it with
        ``set_state``; a state from PyTorch's CPU generator works too)."""
        st = self._bits.state["state"]
        pos = int(st["pos"])
        if self._fresh:
            left, nxt = 1, 0
        else:
            left, nxt = _MT_N + 1 - pos, pos
        normal = self._normal
        f32 = self._normal32
        raw = b"".join((
            _HEAD.pack(self._seed, left, 1, nxt),
            np.asarray(st["key"], dtype="<u8").tobytes(),
            _TAIL.pack(0.0, 0.0 if normal is None else normal, 0.0, normal is not None,
                       0.0 if f32 is None else f32, f32 is not None)))
        return wrap(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state) -> Generator:
        """Restore a state returned by ``get_state`` (ember's or PyTorch's); returns ``self``."""
        if not isinstance(new_state, Tensor):
            raise TypeError(
                f"expected an ember.ByteTensor, but got {type(new_state).__name__}")
        if new_state._data.dtype != np.uint8:
            raise TypeError("RNG state must be an ember.ByteTensor")
        a = new_state._data
        a = a if type(a) is np.ndarray else a.get()
        if a.size not in (STATE_SIZE, _LEGACY_SIZE):
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but found the input "
                f"RNG state size to be {a.size}")
        raw = np.ascontiguousarray(a).reshape(-1).tobytes()
        seed, left, _, nxt = _HEAD.unpack_from(raw)
        if not 1 <= left <= _MT_N or nxt > _MT_N:
            raise RuntimeError("Invalid mt19937 state")
        key = np.frombuffer(raw, dtype="<u8", count=_MT_N, offset=_HEAD.size)
        tail = raw[_HEAD.size + 8 * _MT_N:] + bytes(STATE_SIZE - len(raw))
        _, normal, _, normal_ok, f32, f32_ok = _TAIL.unpack(tail)
        pos = _MT_N if left == 1 else nxt
        self._set_engine(_engine(key.astype(np.uint32), pos))
        self._seed = seed
        self._fresh = left == 1 and nxt == 0
        self._normal = normal if normal_ok else None
        self._normal32 = f32 if (f32_ok and len(raw) == STATE_SIZE) else None
        return self

    def clone_state(self) -> Generator:
        """A new generator in the same state as this one."""
        g = Generator(self._device)
        g.set_state(self.get_state())
        return g

    def graphsafe_get_state(self):
        """Not supported by CPU generators (as in PyTorch)."""
        raise NotImplementedError("graphsafe_get_state is not supported in this Generator")

    def graphsafe_set_state(self, state):
        """Not supported by CPU generators (as in PyTorch)."""
        raise NotImplementedError("graphsafe_set_state is not supported in this Generator")

    def __reduce__(self):
        return (Generator, (self._device,), (self._seed, None, self.get_state()))

    def __setstate__(self, state):
        seed, _, st = state
        self.set_state(st)
        self._seed = seed

    def __repr__(self):
        return f"<ember.Generator device={self._device} initial_seed={self._seed}>"


#: the generator random ops use when ``generator=None``; seeded from the OS at start-up, as
#: PyTorch's is (so unseeded programs differ from run to run)
default_generator = Generator()
default_generator.seed()


def resolve(generator, device=None) -> Generator:
    """The ``Generator`` behind a ``generator=`` argument; None: the default generator of
    ``device`` (a CUDA device has its own, NOTE [ CUDA generators ] in ember/cuda/random.py).
    """
    if generator is None:
        if device is not None and (getattr(device, "type", None) == "cuda" or (
                type(device) is str and device.startswith("cuda"))):
            from ..cuda import random as cuda_random  # upward, only for CUDA tensors

            return cuda_random.device_generator(device)
        return default_generator
    if isinstance(generator, Generator):
        return generator
    raise TypeError(
        f"expected an ember.Generator for argument 'generator', got "
        f"{type(generator).__name__}")


def numpy_generator(generator, device=None) -> np.random.Generator:
    """A NumPy Generator drawing from the same MT19937 engine as ``generator`` (see
    ``resolve``), for the samplers whose PyTorch streams ember does not reproduce: its draws
    are seeded and deterministic and advance the ember generator's stream."""
    g = resolve(generator, device)
    if g._np is None or g._np.bit_generator is not g._bits:
        g._np = np.random.Generator(g._bits)
    g._fresh = False
    return g._np
