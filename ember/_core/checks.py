"""Argument normalisation shared by every op: dims, shapes, scalars.

Each helper raises PyTorch's exception type with the op's name in the message, before any
state is touched.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

_int_types = (builtins.int, np.integer)


def wrap_dim(dim, ndim, op_name="", *, allow_scalar=True):
    """Normalise a possibly negative ``dim`` for a tensor of ``ndim`` dims.

    Zero-dim tensors accept dims 0 and -1, as in PyTorch.
    """
    try:
        d = operator.index(dim)
    except TypeError:
        raise TypeError(
            f"{op_name}(): argument 'dim' must be int, not {type(dim).__name__}") from None
    n = ndim if ndim > 0 or not allow_scalar else 1
    if d < -n or d >= n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
            f"but got {d})")
    return d + n if d < 0 else d


def wrap_dims(dims, ndim, op_name=""):
    """Normalise a dim or sequence of dims; repeated dims are an error."""
    if isinstance(dims, _int_types) or hasattr(dims, "__index__") and not isinstance(
            dims, (tuple, list)):
        return (wrap_dim(dims, ndim, op_name),)
    out = tuple(wrap_dim(d, ndim, op_name) for d in dims)
    if len(set(out)) != len(out):
        dup = next(d for d in out if out.count(d) > 1)
        # (PyTorch's words name no op, whichever op checks)
        raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    return out


def as_shape(args, op_name="", *, allow_negative=False):
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` and ``f(ember.Size([2, 3]))`` -> (2, 3).

    A bool first size is refused as PyTorch's argument parser refuses it (``zeros(True)``,
    ``zeros([True, 2])``); later ones count as 1 and 0 there, and here."""
    if len(args) == 1 and isinstance(args[0], (builtins.bool, np.bool_)):
        raise TypeError(f"{op_name}(): argument 'size' (position 1) must be tuple of ints, "
                        f"not bool")
    if len(args) == 1 and not isinstance(args[0], _int_types) and not hasattr(
            args[0], "__index__"):
        args = args[0]
        if args is None:
            raise TypeError(f"{op_name}(): argument 'size' must be tuple of ints, not NoneType")
    if len(args) and isinstance(args[0], (builtins.bool, np.bool_)):
        raise TypeError(f"{op_name}(): argument 'size' (position 1) must be tuple of ints, but "
                        f"found element of type bool at pos 0")
    try:
        shape = tuple(operator.index(s) for s in args)
    except TypeError:
        bad = next(s for s in args if not hasattr(s, "__index__"))
        raise TypeError(
            f"{op_name}(): argument 'size' must be tuple of ints, but found element of type "
            f"{type(bad).__name__}") from None
    if not allow_negative:
        for s in shape:
            if s < 0:
                raise RuntimeError(
                    f"{op_name}(): Trying to create tensor with negative dimension {s}: "
                    f"{list(shape)}")
    return shape


def is_scalar(x) -> bool:
    return isinstance(x, (builtins.int, builtins.float, builtins.complex, builtins.bool,
                          np.number, np.bool_))


def holds_values(array) -> bool:
    """False for an array of a backend without data (the meta device; NOTE [ Meta device ] in
    ember/backends/meta.py): checks of values (index bounds, probabilities in range) pass such
    arrays by, as PyTorch's meta kernels do, and value-dependent work is not attempted.

    Args:
        array: a backend array (``tensor._data``).

    Returns:
        bool: True for NumPy, CuPy and other arrays that hold values.

    Example::

        >>> holds_values(np.zeros(3))
        True
    """
    return type(array) is np.ndarray or not getattr(array, "_ember_no_values", False)


def require_values(op_name, array) -> None:
    """Raise NotImplementedError when ``array`` has no values (a meta array) and ``op_name``'s
    result shape depends on them (``bincount``), as PyTorch does on the meta device.

    Args:
        op_name: the op, for the message.
        array: a backend array (``tensor._data``).

    Returns:
        None.

    Example::

        >>> require_values("bincount", np.zeros(3, np.int64))  # has values: passes
    """
    if not holds_values(array):
        from .backend import backend_of

        raise NotImplementedError(
            f"ember: the op '{op_name}' cannot run on device type '{backend_of(array).name}': "
            "the shape of its result depends on the input's values, which meta tensors do not "
            "have")



# -- checks of values on devices that run ahead of the host ----------------------------------
#
# NOTE [ Deferred device checks ]
# A check of values (an index in range) on a GPU array needs the values on the host: reading
# them waits for every kernel queued before, and a training step that does so each layer
# never lets the host run ahead of the GPU. PyTorch's CUDA kernels check on the device and
# report a failed check at the next synchronisation ("device-side assert triggered"). ember
# does the same for the array types registered in ``deferring_types`` (CuPy's): the test
# runs on the device into a flag array, kept here per (exception type, message), and
# ``raise_pending`` -- called wherever the host waits for the device anyway (``item()``,
# ``tolist()``, copies to the CPU, ``cuda.synchronize()``) -- raises the first failed one,
# with the message the CPU would have raised at once. Flags of the same check are OR-ed on
# the device, so the queue stays small however long the host runs ahead.

#: array types whose value checks are deferred (NOTE [ Deferred device checks ])
deferring_types: set = set()
_pending: list = []  # [exception class, message (str or callable), flag array]
_MAX_PENDING = 64


def check_range(array, lo, hi, exc, message) -> None:
    """Raise ``exc(message)`` unless every value of the integer ``array`` lies in
    ``[lo, hi)``; on a device that runs ahead of the host the test is deferred (NOTE
    [ Deferred device checks ]).

    Args:
        array: a backend integer array (``tensor._data``).
        lo, hi: the allowed range, ``lo <= value < hi``.
        exc: the exception class, e.g. ``IndexError``.
        message: its message, or a function making it (called only on failure, when a
            message names a bad value).

    Returns:
        None.

    Example::

        >>> check_range(np.array([0, 2]), 0, 3, IndexError, "index out of range")
    """
    if array.size == 0 or not holds_values(array):
        return
    if type(array) in deferring_types:
        flag = (array.min() < lo) | (array.max() >= hi)
        if isinstance(message, str):
            for entry in _pending:
                if entry[0] is exc and entry[1] == message:
                    entry[2] = entry[2] | flag
                    return
        _pending.append([exc, message, flag])
        if len(_pending) > _MAX_PENDING:
            raise_pending()
        return
    if int(array.min()) < lo or int(array.max()) >= hi:
        raise exc(message if isinstance(message, str) else message())


def raise_pending() -> None:
    """Raise the first deferred device check that failed (NOTE [ Deferred device checks ]);
    the host waits for the device here, so call it where it waits anyway.

    Returns:
        None.

    Example::

        >>> raise_pending()  # nothing pending
    """
    if not _pending:
        return
    items = _pending[:]
    _pending.clear()
    for exc, message, flag in items:
        if bool(flag.item()):
            raise exc(message if isinstance(message, str) else message())
