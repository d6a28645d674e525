"""``ember.mtia``: Meta's MTIA accelerators, which ember does not support.

ember answers as a PyTorch built without MTIA: ``is_available()`` is False,
``device_count()`` 0, the memory counters 0 and seeding does nothing; queries that need a
device raise RuntimeError "Cannot execute ... without MTIA backend." (or AssertionError "Torch
not compiled with MTIA enabled" for initialisation and generator state), and ``Stream`` /
``Event`` cannot be made.

Example::

    >>> ember.mtia.is_available(), ember.mtia.device_count()
    (False, 0)
"""

from __future__ import annotations

NOT_COMPILED = ("Torch not compiled with MTIA enabled. Ensure you have `import "
                "mtia.host_runtime.torch_mtia.dynamic_library` in your python src file and "
                "include `//mtia/host_runtime/torch_mtia:torch_mtia` as your target dependency!")

_QUIET = {
    # name: (value, summary)
    "is_available": (False, "Whether an MTIA device can be used: False."),
    "device_count": (0, "The number of MTIA devices: 0."),
    "is_initialized": (False, "Whether the MTIA state has been initialized: False."),
    "is_bf16_supported": (True, "Whether MTIA supports bfloat16: True (the architecture does)."),
    "is_fbcode": (False, "Whether this is Meta's internal build: False."),
    "is_prod": (False, "Whether this is Meta's production build: False."),
    "memory_allocated": (0, "Bytes held by MTIA tensors: 0."),
    "max_memory_allocated": (0, "The peak of ``memory_allocated``: 0."),
    "memory_stats": ({}, "The MTIA allocator's counters: empty."),
    "reset_peak_memory_stats": (None, "Reset the peak counters: nothing to reset."),
    "record_memory_history": (None, "Record allocation history: nothing to record."),
    "attach_out_of_memory_observer": (None, "Register an out-of-memory callback: never called."),
    "manual_seed": (None, "Seed the MTIA generator: does nothing without MTIA."),
    "manual_seed_all": (None, "Seed every MTIA generator: does nothing without MTIA."),
    "seed": (None, "Seed the MTIA generator randomly: does nothing without MTIA."),
    "seed_all": (None, "Seed every MTIA generator randomly: does nothing without MTIA."),
    "get_rng_state_all": ([], "The states of every MTIA generator: []."),
    "set_rng_state_all": (None, "Restore every MTIA generator: does nothing without MTIA."),
    "set_device": (None, "Make a device the current MTIA device: does nothing without MTIA."),
    "set_stream": (None, "Make a stream current: does nothing without MTIA."),
    "set_rng_state": (None, "Restore an MTIA generator: does nothing without MTIA."),
}

_NO_BACKEND = {
    # name: (the runtime call PyTorch names, summary)
    "current_device": ("getCurrentDevice", "The index of the current MTIA device."),
    "current_stream": ("getCurrentDevice", "The current MTIA stream."),
    "default_stream": ("getCurrentDevice", "The default MTIA stream."),
    "synchronize": ("getCurrentDevice", "Wait for all work queued on an MTIA device."),
    "get_device_capability": ("getCurrentDevice", "The capability of an MTIA device."),
    "get_device_properties": ("getCurrentDevice", "The properties of an MTIA device."),
    "empty_cache": ("emptyCache", "Free the MTIA allocator's cache."),
    "snapshot": ("memorySnapshot", "A snapshot of the MTIA allocator."),
    "graph_pool_handle": ("graphPoolHandle", "A memory pool handle for MTIA graphs."),
}

_NOT_COMPILED = {
    "init": "Initialize the MTIA state.",
    "initial_seed": "The seed of the MTIA generator.",
    "get_rng_state": "The state of an MTIA generator.",
}

__all__ = sorted(list(_QUIET) + list(_NO_BACKEND) + list(_NOT_COMPILED)
                 + ["DeferredMtiaCallError", "Event", "MTIAGraph", "Stream", "StreamContext",
                    "device", "graph", "stream"])


def _quiet(name, value, summary):
    def fn(*args, **kwargs):
        return value.copy() if isinstance(value, (dict, list)) else value

    fn.__name__ = fn.__qualname__ = name
    shown = "None" if value is None else repr(value)
    fn.__doc__ = f"""{summary}

    Args:
        *args, **kwargs: accepted for PyTorch's signature.

    Returns:
        {shown}

    Example::

        >>> ember.mtia.{name}(){'' if value is None else chr(10) + '        ' + shown}
    """
    return fn


def _raising(name, error, message, summary):
    def fn(*args, **kwargs):
        raise error(message)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{summary} Raises {error.__name__}: ember has no MTIA support.

    Args:
        *args, **kwargs: accepted for PyTorch's signature.

    Returns:
        Never returns in ember.

    Example::

        >>> ember.mtia.{name}()
        Traceback (most recent call last):
        ...
        {error.__name__}: ...
    """
    return fn


for _name, (_value, _summary) in _QUIET.items():
    globals()[_name] = _quiet(_name, _value, _summary)
for _name, (_call, _summary) in _NO_BACKEND.items():
    globals()[_name] = _raising(_name, RuntimeError,
                                f"Cannot execute {_call}() without MTIA backend.", _summary)
for _name, _summary in _NOT_COMPILED.items():
    globals()[_name] = _raising(_name, AssertionError, NOT_COMPILED, _summary)
del _name, _value, _summary, _call


class DeferredMtiaCallError(Exception):
    """Raised when a call queued before MTIA initialisation fails (never, in ember).

    Example::

        >>> issubclass(ember.mtia.DeferredMtiaCallError, Exception)
        True
    """


class device:
    """A block with an MTIA device current: entering with an index raises RuntimeError.

    Args:
        device: an index, or None / a negative index (the block then does nothing).

    Example::

        >>> with ember.mtia.device(-1):
        ...     pass
    """

    def __init__(self, device):
        self.idx = -1 if device is None else int(getattr(device, "index", device) or 0)

    def __enter__(self):
        if self.idx >= 0:
            raise RuntimeError("Cannot execute exchangeDevice() without MTIA backend.")

    def __exit__(self, *exc):
        return False


class Stream:
    """An MTIA stream: constructing one raises RuntimeError (no MTIA support).

    Args:
        *args: accepted as torch's constructor takes them.
        **kwargs: accepted as torch's constructor takes them.

    Example::

        >>> ember.mtia.Stream()
        Traceback (most recent call last):
        ...
        RuntimeError: torch.mtia.Stream requires MTIA support, which ember does not have
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("torch.mtia.Stream requires MTIA support, which ember does not have")


class Event:
    """An MTIA event: constructing one raises RuntimeError (no MTIA support).

    Args:
        *args: accepted as torch's constructor takes them.
        **kwargs: accepted as torch's constructor takes them.

    Example::

        >>> ember.mtia.Event()
        Traceback (most recent call last):
        ...
        RuntimeError: torch.mtia.Event requires MTIA support, which ember does not have
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("torch.mtia.Event requires MTIA support, which ember does not have")


class StreamContext:
    """A block with a stream current; with None (the only stream ember could be given) it
    does nothing.

    Args:
        stream: None.

    Example::

        >>> with ember.mtia.StreamContext(None):
        ...     pass
    """

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        if self.stream is not None:
            set_stream(self.stream)  # noqa: F821  (made above)
        return self.stream

    def __exit__(self, *exc):
        return False


def stream(stream) -> StreamContext:
    """A :class:`StreamContext` for ``stream``.

    Args:
        stream: the stream, or None.

    Returns:
        StreamContext: the block.

    Example::

        >>> with ember.mtia.stream(None):
        ...     pass
    """
    return StreamContext(stream)


class MTIAGraph:
    """A captured MTIA graph: constructing one raises RuntimeError (no MTIA support).

    Args:
        *args: accepted as torch's constructor takes them.
        **kwargs: accepted as torch's constructor takes them.

    Example::

        >>> ember.mtia.MTIAGraph()
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute mtiagraphCreate() without MTIA backend.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Cannot execute mtiagraphCreate() without MTIA backend.")


class graph:
    """A block capturing MTIA work into an :class:`MTIAGraph`: raises RuntimeError (no MTIA
    support).

    Args:
        mtia_graph (MTIAGraph): the graph to capture into.
        pool, stream: accepted for PyTorch's signature.

    Example::

        >>> ember.mtia.graph(None)
        Traceback (most recent call last):
        ...
        RuntimeError: Cannot execute getCurrentDevice() without MTIA backend.
    """

    def __init__(self, mtia_graph=None, pool=None, stream=None):
        raise RuntimeError("Cannot execute getCurrentDevice() without MTIA backend.")
