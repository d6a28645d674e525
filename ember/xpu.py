"""``ember.xpu``: Intel GPUs, which ember does not support.

ember answers as a PyTorch built without XPU: ``is_available()`` is False, ``device_count()``
0, seeding and ``empty_cache`` do nothing, the memory counters are 0; functions that need a
device raise AssertionError "Torch not compiled with XPU enabled", and ``Stream``/``Event``
raise RuntimeError.

Example::

    >>> ember.xpu.is_available(), ember.xpu.device_count()
    (False, 0)
"""

from __future__ import annotations

import collections

NOT_COMPILED = "Torch not compiled with XPU enabled"

_QUIET = {
    # name: (value, summary)
    "is_available": (False, "Whether an XPU device can be used: False."),
    "device_count": (0, "The number of XPU devices: 0."),
    "is_initialized": (False, "Whether the XPU state has been initialized: False."),
    "is_bf16_supported": (False, "Whether the XPU device supports bfloat16: False."),
    "is_tf32_supported": (False, "Whether the XPU device supports TF32: False."),
    "_is_compiled": (False, "Whether ember was built with XPU support: False."),
    "memory_allocated": (0, "Bytes held by XPU tensors: 0."),
    "max_memory_allocated": (0, "The peak of ``memory_allocated``: 0."),
    "memory_reserved": (0, "Bytes reserved by the XPU allocator: 0."),
    "max_memory_reserved": (0, "The peak of ``memory_reserved``: 0."),
    "manual_seed": (None, "Seed the XPU generator: does nothing without XPU."),
    "manual_seed_all": (None, "Seed every XPU generator: does nothing without XPU."),
    "seed": (None, "Seed the XPU generator randomly: does nothing without XPU."),
    "seed_all": (None, "Seed every XPU generator randomly: does nothing without XPU."),
    "empty_cache": (None, "Free the XPU allocator's cache: does nothing without XPU."),
    "set_rng_state": (None, "Restore an XPU generator: does nothing without XPU."),
    "set_rng_state_all": (None, "Restore every XPU generator: does nothing without XPU."),
}

_RAISING = {
    "current_device": "The index of the current XPU device.",
    "set_device": "Make a device the current XPU device.",
    "synchronize": "Wait for all work queued on an XPU device.",
    "init": "Initialize the XPU state.",
    "get_device_name": "The name of an XPU device.",
    "get_device_properties": "The properties of an XPU device.",
    "get_device_capability": "The capability of an XPU device.",
    "initial_seed": "The seed of the XPU generator.",
    "get_rng_state": "The state of an XPU generator.",
    "current_stream": "The current XPU stream.",
    "mem_get_info": "``(free, total)`` bytes of an XPU device.",
}


def _quiet(name, value, summary):
    def fn(*args, **kwargs):
        return value

    fn.__name__ = fn.__qualname__ = name
    shown = "None" if value is None else repr(value)
    fn.__doc__ = f"""{summary}

    Args:
        *args: accepted for PyTorch's signature.
        **kwargs: likewise.

    Returns:
        {shown}

    Example::

        >>> ember.xpu.{name}(){'' if value is None else chr(10) + '        ' + shown}
    """
    return fn


def _raising(name, summary):
    def fn(*args, **kwargs):
        raise AssertionError(NOT_COMPILED)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{summary} Raises AssertionError: ember has no XPU support.

    Args:
        *args: accepted for PyTorch's signature.
        **kwargs: likewise.

    Returns:
        Never returns in ember.

    Example::

        >>> ember.xpu.{name}()
        Traceback (most recent call last):
        ...
        AssertionError: {NOT_COMPILED}
    """
    return fn


for _name, (_value, _summary) in _QUIET.items():
    globals()[_name] = _quiet(_name, _value, _summary)
for _name, _summary in _RAISING.items():
    globals()[_name] = _raising(_name, _summary)
del _name, _value, _summary


def memory_stats(device=None) -> dict:
    """The XPU allocator's counters: empty without XPU.

    Args:
        device: the device.

    Returns:
        An empty OrderedDict.

    Example::

        >>> ember.xpu.memory_stats()
        OrderedDict()
    """
    return collections.OrderedDict()


def get_rng_state_all() -> list:
    """The states of every XPU generator: [] without XPU.

    Returns:
        []

    Example::

        >>> ember.xpu.get_rng_state_all()
        []
    """
    return []


def get_arch_list() -> list:
    """The XPU architectures ember targets: [].

    Returns:
        []

    Example::

        >>> ember.xpu.get_arch_list()
        []
    """
    return []


class device:
    """A block with an XPU device current: entering with an index raises NotImplementedError.

    Args:
        device: an index, or None / a negative index (the block then does nothing).

    Example::

        >>> with ember.xpu.device(-1):
        ...     pass
    """

    def __init__(self, device):
        self.idx = -1 if device is None else int(getattr(device, "index", device) or 0)

    def __enter__(self):
        if self.idx >= 0:
            raise NotImplementedError("ember was built without XPU support")

    def __exit__(self, *exc):
        return False


class Stream:
    """An XPU stream: constructing one raises RuntimeError (no XPU support).

    Args:
        *args: PyTorch's arguments (device, priority ...), accepted and not read.
        **kwargs: likewise.

    Example::

        >>> ember.xpu.Stream()
        Traceback (most recent call last):
        ...
        RuntimeError: torch.xpu.Stream requires XPU support, which ember does not have
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("torch.xpu.Stream requires XPU support, which ember does not have")


class Event:
    """An XPU event: constructing one raises RuntimeError (no XPU support).

    Args:
        *args: PyTorch's arguments (device, priority ...), accepted and not read.
        **kwargs: likewise.

    Example::

        >>> ember.xpu.Event()
        Traceback (most recent call last):
        ...
        RuntimeError: torch.xpu.Event requires XPU support, which ember does not have
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("torch.xpu.Event requires XPU support, which ember does not have")
