"""``ember.cuda.random``: the per-GPU random generators.

NOTE [ CUDA generators ]
ember draws random numbers on the host with NumPy and moves them to the tensor's device
(NOTE [ Random number generation ] in ember/_core/generator.py). Each GPU has its own
default generator (``ember.cuda.default_generators``, one ``Generator`` per device): random
ops that make or fill a CUDA tensor without ``generator=`` draw from the generator of that
tensor's device (``numpy_generator(None, device)``), so ``ember.cuda.manual_seed`` and
``get_rng_state``/``set_rng_state`` reproduce CUDA draws as in PyTorch, and CUDA draws leave
the CPU generator's stream alone. ``ember.manual_seed`` seeds every device's generator, as
PyTorch's does. (The numbers differ from PyTorch's: its CUDA generator is Philox.)
Without a GPU, seeding does nothing and ``get_rng_state_all`` is empty, as in a CPU-only
PyTorch; ``initial_seed`` and ``get_rng_state`` raise (NOTE [ CUDA without a GPU ]).
"""

from __future__ import annotations

import random as _pyrandom

from . import _runtime
from ._runtime import require_gpu

__all__ = ["get_rng_state", "get_rng_state_all", "initial_seed", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "set_rng_state", "set_rng_state_all"]


def _generators():
    """The per-GPU generators, or () when no GPU is usable (never raises)."""
    from .. import cuda

    if not cuda.is_available():
        return ()
    cuda._lazy_init()
    return cuda.default_generators


def _generator(device):
    gens = _generators()
    index = _runtime.device_index(device, optional=True)
    if not 0 <= index < len(gens):
        raise RuntimeError(f"Invalid CUDA device index {index}: {len(gens)} devices visible")
    return gens[index]


def device_generator(device):
    """The default generator of CUDA ``device`` ('cuda', 'cuda:N' or an ember.device).

    Args:
        device: a CUDA device.

    Returns:
        Generator

    Raises:
        RuntimeError: without a GPU, or for an index out of range.

    Example::

        >>> if ember.cuda.is_available():
        ...     g = ember.cuda.random.device_generator("cuda:0")
    """
    if not _generators():
        raise RuntimeError("ember: CUDA is not available on this machine")
    return _generator(device)


def manual_seed(seed) -> None:
    """Seed the current GPU's generator; does nothing without a GPU.

    Args:
        seed: an int.

    Returns:
        None

    Example::

        >>> ember.cuda.manual_seed(0)
    """
    seed = int(seed)
    if _generators():
        _generator(None).manual_seed(seed)


def manual_seed_all(seed) -> None:
    """Seed every GPU's generator; does nothing without a GPU.

    Args:
        seed: an int.

    Returns:
        None

    Example::

        >>> ember.cuda.manual_seed_all(0)
    """
    seed = int(seed)
    for g in _generators():
        g.manual_seed(seed)


def seed() -> None:
    """Seed the current GPU's generator with a random number; does nothing without a GPU.

    Returns:
        None

    Example::

        >>> ember.cuda.seed()
    """
    if _generators():
        _generator(None).seed()


def seed_all() -> None:
    """Seed every GPU's generator with one random number; does nothing without a GPU.

    Returns:
        None

    Example::

        >>> ember.cuda.seed_all()
    """
    gens = _generators()
    if gens:
        s = _pyrandom.getrandbits(63)
        for g in gens:
            g.manual_seed(s)


def initial_seed() -> int:
    """The seed of the current GPU's generator.

    Returns:
        int

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     _ = ember.cuda.initial_seed()
    """
    require_gpu()
    return _generator(None).initial_seed()


def get_rng_state(device="cuda"):
    """The state of a GPU's generator, a uint8 tensor.

    Args:
        device: the device (default: the current one).

    Returns:
        Tensor

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     state = ember.cuda.get_rng_state()
    """
    require_gpu()
    return _generator(device).get_state()


def get_rng_state_all() -> list:
    """The states of every GPU's generator ([] without a GPU).

    Returns:
        list of Tensor

    Example::

        >>> isinstance(ember.cuda.get_rng_state_all(), list)
        True
    """
    return [g.get_state() for g in _generators()]


def set_rng_state(new_state, device="cuda") -> None:
    """Restore a GPU's generator from ``get_rng_state``; does nothing without a GPU.

    Args:
        new_state: a state from ``get_rng_state``.
        device: the device (default: the current one).

    Returns:
        None

    Example::

        >>> ember.cuda.set_rng_state(ember.zeros(8, dtype=ember.uint8))  # no-op without a GPU
    """
    if _generators():
        _generator(device).set_state(new_state)


def set_rng_state_all(new_states) -> None:
    """Restore every GPU's generator, one state per device; does nothing without a GPU.

    Args:
        new_states: states from ``get_rng_state_all``.

    Returns:
        None

    Example::

        >>> ember.cuda.set_rng_state_all([])
    """
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
