"""``ember.Generator``: the state of a pseudo-random number stream.

NOTE [ Random number generation ]
A Generator wraps a NumPy ``np.random.Generator`` over the PCG64 bit generator. ember does
not reproduce PyTorch's streams bit for bit (PyTorch uses MT19937 on the CPU and Philox on
CUDA, with its own transforms); what it guarantees is PyTorch's *contract*: the same seed
gives the same numbers, ``get_state``/``set_state`` round-trip exactly, and generators are
independent of each other. Random ops draw from the generator passed as ``generator=`` or,
when None, from the module-level ``default_generator``.

Numbers are drawn on the host with NumPy and moved to the tensor's device afterwards, so a
Generator works for every device (a CuPy-native generator for CUDA can replace this later
without changing the API).

The state is a uint8 tensor (as in PyTorch), laid out as ``_STATE_FORMAT`` below: a magic
tag, the initial seed, and the PCG64 state, increment and buffered 32-bit word.
"""

from __future__ import annotations

import operator
import secrets
import struct

import numpy as np

from .device import as_device
from .tensor import Tensor, wrap

#: the seed a fresh ``Generator()`` starts from (PyTorch's default_rng_seed_val)
DEFAULT_SEED = 67280421310721

_STATE_FORMAT = "<4sQ16s16sBI"
_STATE_MAGIC = b"EMB1"
STATE_SIZE = struct.calcsize(_STATE_FORMAT)
_U64 = 1 << 64


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


class Generator:
    """A pseudo-random number generator, passable as ``generator=`` to every random op.

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

    __slots__ = ("_np", "_seed", "_device", "__weakref__")

    def __init__(self, device="cpu"):
        dev = as_device(device if device is not None else "cpu")
        if dev.type == "meta":  # meta tensors hold no values, so nothing draws from it
            raise RuntimeError("META device type not an accelerator.")
        self._device = dev
        self._seed = DEFAULT_SEED
        self._np = np.random.Generator(np.random.PCG64(DEFAULT_SEED))

    @property
    def device(self):
        """The device this generator serves."""
        return self._device

    def manual_seed(self, seed) -> Generator:
        """Reset the stream to the one determined by ``seed``; returns ``self``."""
        s = _normalise_seed(seed)
        self._seed = s
        self._np = np.random.Generator(np.random.PCG64(s))
        return self

    def seed(self) -> int:
        """Seed from a non-deterministic source and return the seed used."""
        s = secrets.randbits(64)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def get_state(self):
        """The generator's state as a uint8 tensor (restore it with ``set_state``)."""
        st = self._np.bit_generator.state
        inner = st["state"]
        raw = struct.pack(
            _STATE_FORMAT, _STATE_MAGIC, self._seed,
            inner["state"].to_bytes(16, "little"), inner["inc"].to_bytes(16, "little"),
            int(st["has_uint32"]), int(st["uinteger"]))
        return wrap(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state) -> Generator:
        """Restore a state returned by ``get_state``; returns ``self``."""
        if not isinstance(new_state, Tensor):
            raise TypeError(
                f"expected an ember.ByteTensor, but got {type(new_state).__name__}")
        if new_state._data.dtype != np.uint8:
            raise TypeError("RNG state must be an ember.ByteTensor (dtype uint8)")
        a = new_state._data
        a = a if type(a) is np.ndarray else a.get()
        if a.size != STATE_SIZE:
            raise RuntimeError(
                f"Expected a Generator state of size {STATE_SIZE} but found the input RNG "
                f"state size to be {a.size}")
        magic, seed, state, inc, has32, uint = struct.unpack(
            _STATE_FORMAT, np.ascontiguousarray(a).reshape(-1).tobytes())
        if magic != _STATE_MAGIC:
            raise RuntimeError("set_state: the given tensor is not an ember Generator state")
        bit = np.random.PCG64()
        bit.state = {"bit_generator": "PCG64",
                     "state": {"state": int.from_bytes(state, "little"),
                               "inc": int.from_bytes(inc, "little")},
                     "has_uint32": has32, "uinteger": uint}
        self._np = np.random.Generator(bit)
        self._seed = seed
        return self

    def clone_state(self) -> Generator:
        """A new generator in the same state as this one."""
        g = Generator(self._device)
        g.set_state(self.get_state())
        return g

    def __repr__(self):
        return f"<ember.Generator device={self._device} initial_seed={self._seed}>"


#: the generator random ops use when ``generator=None``; seeded from the OS at start-up, as
#: PyTorch's is (so unseeded programs differ from run to run)
default_generator = Generator()
default_generator.seed()


def numpy_generator(generator, device=None) -> np.random.Generator:
    """The NumPy generator behind a ``generator=`` argument; None: the default generator of
    ``device`` (a CUDA device has its own, NOTE [ CUDA generators ] in ember/cuda/random.py).
    """
    if generator is None:
        if device is not None and (getattr(device, "type", None) == "cuda" or (
                type(device) is str and device.startswith("cuda"))):
            from ..cuda import random as cuda_random  # upward, only for CUDA tensors

            return cuda_random.device_generator(device)._np
        return default_generator._np
    if isinstance(generator, Generator):
        return generator._np
    raise TypeError(
        f"expected an ember.Generator for argument 'generator', got "
        f"{type(generator).__name__}")
