"""``ember.random``: seeding and saving the default generator's state, and ``fork_rng``.

See NOTE [ Random number generation ] in ember/_core/generator.py.
"""

from __future__ import annotations

import contextlib
import sys

from ._core.generator import Generator, default_generator

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state"]


def _cuda_module():
    """ember.cuda when it is loaded and a GPU is usable, else None (never imports CUDA)."""
    cuda = sys.modules.get("ember.cuda")
    if cuda is None or not getattr(cuda, "is_available", lambda: False)():
        return None
    return cuda


def manual_seed(seed) -> Generator:
    """Seed the default generator (and the CUDA generators when CUDA is in use).

    On the CPU the seeded stream is PyTorch's: the random ops then draw the numbers PyTorch
    draws (NOTE [ Random number generation ] in ember/_core/generator.py).

    Args:
        seed (int): the seed.

    Returns:
        ember.Generator: ``ember.default_generator``.

    Example:
        >>> _ = ember.manual_seed(0)
        >>> a = ember.rand(2)
        >>> _ = ember.manual_seed(0)
        >>> bool((a == ember.rand(2)).all())
        True
    """
    seed = int(seed)
    cuda = _cuda_module()
    if cuda is not None and hasattr(cuda, "manual_seed_all"):
        cuda.manual_seed_all(seed)
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator non-deterministically (from the OS's entropy).

    Returns:
        int: the seed chosen, which ``initial_seed()`` reports from then on.

    Example:
        >>> s = ember.seed()
        >>> ember.initial_seed() == s
        True
    """
    s = default_generator.seed()
    cuda = _cuda_module()
    if cuda is not None and hasattr(cuda, "manual_seed_all"):
        cuda.manual_seed_all(s)
    return s


def initial_seed() -> int:
    """The seed the default generator was last seeded with.

    Returns:
        int: the seed.

    Example:
        >>> _ = ember.manual_seed(42)
        >>> ember.initial_seed()
        42
    """
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state, a uint8 tensor to hand to ``set_rng_state`` later.

    Returns:
        Tensor: a copy of the state.

    Example:
        >>> state = ember.get_rng_state()
        >>> a = ember.rand(3)
        >>> ember.set_rng_state(state)
        >>> bool((ember.rand(3) == a).all())
        True
    """
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator's state from ``get_rng_state()``.

    Args:
        new_state (Tensor): a state returned by ``get_rng_state()``.

    Returns:
        None.

    Example:
        >>> state = ember.get_rng_state()
        >>> a = ember.randn(2)
        >>> ember.set_rng_state(state)
        >>> bool((ember.randn(2) == a).all())
        True
    """
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """A context in which random numbers may be drawn without disturbing the generators
    outside it: the CPU state (and that of ``devices`` on ``device_type``, default the
    accelerator, CUDA, when one is in use) is saved on entry and restored on exit, even if
    the block raises.

    Args:
        devices (iterable of ints, optional): the accelerator devices whose state is saved too.
            Default: all of them, when one is in use.
        enabled (bool): False makes the context do nothing. Default: True.
        device_type (str, optional): the accelerator type of ``devices``. Default: ``"cuda"``.

    Example::

        >>> _ = ember.manual_seed(1)
        >>> with ember.random.fork_rng():
        ...     _ = ember.rand(5)
        >>> a = ember.rand(1)
        >>> _ = ember.manual_seed(1)
        >>> bool((a == ember.rand(1)).all())
        True
    """
    if not enabled:
        yield
        return
    cpu_state = get_rng_state()
    device_states = []
    cuda = _cuda_module() if device_type in (None, "cuda") else None
    if cuda is not None and hasattr(cuda, "get_rng_state"):
        if devices is None:
            devices = list(range(cuda.device_count()))
        device_states = [(d, cuda.get_rng_state(d)) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, state in device_states:
            cuda.set_rng_state(state, d)
