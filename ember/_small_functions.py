"""Small ``torch.*`` functions composed of ember ops: ``segment_reduce``,
``slice_inverse``, ``ldexp_``, ``to_dlpack``, ``is_distributed``, ``classproperty``, the
eager ``while_loop``, the symbolic-size checks in their eager meaning
(``sym_constrain_range``, ``sym_constrain_range_for_size``, ``sym_fresh_size``),
``thread_safe_generator`` and a few build flags and hooks.

Everything here is re-exported by ``ember/__init__.py``.
"""

from __future__ import annotations

import numpy as np

from ._core.tensor import Tensor
from ._ops.from_data import from_numpy, tensor

__all__ = [
    "USE_GLOBAL_DEPS", "USE_RTLD_GLOBAL_WITH_LIBTORCH", "classproperty",
    "is_distributed", "ldexp_", "prepare_multiprocessing_environment",
    "profiler_allow_cudagraph_cupti_lazy_reinit_cuda12", "segment_reduce", "slice_inverse",
    "sym_constrain_range", "sym_constrain_range_for_size", "sym_fresh_size",
    "thread_safe_generator", "to_dlpack", "while_loop",
]

#: PyTorch's build flags for how it loads its shared libraries; ember has none, and answers
#: as PyTorch's wheels do
USE_GLOBAL_DEPS = True
USE_RTLD_GLOBAL_WITH_LIBTORCH = False

_INT64_MAX = 2**63 - 1

_SEGMENT_REDUCTIONS = {"sum": "sum", "mean": "mean", "prod": "prod", "max": "amax",
                       "amax": "amax", "min": "amin", "amin": "amin"}


def _segment_ids(lengths: np.ndarray, size: int, unsafe: bool) -> np.ndarray:
    """For lengths of shape ``B + (S,)``: the segment of each of the ``size`` positions of
    every row, shape ``B + (size,)``; positions past the last segment get ``S``."""
    if (lengths < 0).any():
        raise RuntimeError("lengths contains negative value!")
    if not unsafe and (lengths.sum(-1) != size).any():
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum "
                           "to data.size(lengths.dim()-1) when !unsafe.")
    rows = lengths.reshape(-1, lengths.shape[-1])
    ids = np.full((rows.shape[0], size), rows.shape[1], dtype=np.int64)
    for r, lens in enumerate(rows):
        seg = np.repeat(np.arange(rows.shape[1]), lens)[:size]
        ids[r, :seg.size] = seg
    return ids.reshape(lengths.shape[:-1] + (size,))


def segment_reduce(data: Tensor, reduce: str, *, lengths: Tensor | None = None,
                   indices: Tensor | None = None, offsets: Tensor | None = None,
                   axis: int = 0, unsafe: bool = False, initial=None) -> Tensor:
    """Reduce consecutive segments of ``data`` along ``axis``.

    Segment ``j`` of a row is the next ``lengths[..., j]`` elements; an empty segment gives
    the reduction's identity (0 for sum, 1 for prod, -inf for max, inf for min, NaN for
    mean) or ``initial``. With ``initial``, sums, products, maxima and minima also take it
    in, and a mean is ``(initial + sum) / length``.

    Args:
        data (Tensor): floating-point values.
        reduce (str): ``"sum"``, ``"mean"``, ``"prod"``, ``"max"``/``"amax"`` or
            ``"min"``/``"amin"``.
        lengths (Tensor, optional): integer segment lengths, of shape
            ``data.shape[:axis] + (segments,)``.
        indices (Tensor, optional): not supported (as in PyTorch).
        offsets (Tensor, optional): segment boundaries instead of ``lengths``
            (``lengths = offsets[..., 1:] - offsets[..., :-1]``).
        axis (int): the dimension to segment: ``lengths.dim() - 1``. Default: 0.
        unsafe (bool): skip the check that each row of ``lengths`` covers ``data`` exactly.
        initial (number, optional): the starting value of every segment.

    Returns:
        Tensor: ``data.shape[:axis] + (segments,) + data.shape[axis + 1:]``.

    Raises:
        RuntimeError: an unknown ``reduce``, neither ``lengths`` nor ``offsets``, negative
            lengths, or lengths that do not cover ``data`` (unless ``unsafe``).
        NotImplementedError: non-floating ``data`` or ``lengths``.

    Example::

        >>> data = ember.tensor([1., 2., 3., 4., 5., 6.])
        >>> ember.segment_reduce(data, "sum", lengths=ember.tensor([2, 0, 3, 1]))
        tensor([ 3.,  0., 12.,  6.])
        >>> ember.segment_reduce(data, "max", lengths=ember.tensor([2, 0, 3, 1]))
        tensor([2., -inf, 5., 6.])
    """
    if reduce not in _SEGMENT_REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    op = _SEGMENT_REDUCTIONS[reduce]
    if lengths is None and offsets is None:
        if indices is not None:
            raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if lengths is None:
        lengths = offsets[..., 1:] - offsets[..., :-1]
    if not data.is_floating_point():
        raise NotImplementedError(
            f"\"_segment_reduce_cpu\" not implemented for '{data.dtype.scalar_name}'")
    if lengths.is_floating_point() or lengths.is_complex():
        raise NotImplementedError(f"\"_segment_reduce_lengths_cpu_kernel1\" not implemented "
                                  f"for '{lengths.dtype.scalar_name}'")
    ndim = data.dim()
    if not -ndim <= axis < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {axis})")
    axis %= ndim
    if lengths.dim() - 1 != axis:
        raise RuntimeError(f"segment_reduce(): Expected lengths of {axis + 1} dimensions "
                           f"(data.shape[:axis] + (segments,)), got {lengths.dim()}")
    lens = lengths.detach().cpu().numpy().astype(np.int64)
    segments = lens.shape[-1]
    ids = _segment_ids(lens, data.shape[axis], unsafe)
    index = from_numpy(ids).to(data.device)
    index = index.reshape(ids.shape + (1,) * (ndim - axis - 1)).expand(data.shape)
    # one extra slot collects the positions past the last segment (unsafe lengths)
    shape = data.shape[:axis] + (segments + 1,) + data.shape[axis + 1:]
    identity = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "amax": -float("inf"),
                "amin": float("inf")}[op]
    start = identity if initial is None or op == "mean" else initial
    filled = data.new_full(shape, start)
    out = filled.scatter_reduce(axis, index, data, "sum" if op == "mean" else op)
    out = out.narrow(axis, 0, segments)
    if op == "mean":
        count = from_numpy(lens).to(device=data.device, dtype=data.dtype)
        count = count.reshape(lens.shape + (1,) * (ndim - axis - 1))
        if initial is None:
            out = out / count
        else:
            out = ((out + initial) / count).where(count != 0, float(initial))
    return out


def slice_inverse(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None,
                  step: int = 1) -> Tensor:
    """A view of ``input``'s storage with ``src``'s geometry: undoes ``src[start:end:step]``.

    ``input`` is a slice of some base ``src`` along ``dim``; the result views the same
    memory as ``input`` with ``src``'s shape, strides and offset, so it sees the whole base.

    Args:
        input (Tensor): the slice.
        src (Tensor): a tensor with the base's geometry.
        dim, start, end, step: the slice (they describe it; the geometry comes from ``src``).

    Returns:
        Tensor: a view of ``input``'s storage shaped like ``src``.

    Raises:
        RuntimeError: the storage is too small for ``src``'s geometry.

    Example::

        >>> base = ember.arange(6.)
        >>> ember.slice_inverse(base[2:4], base, 0, 2, 4)
        tensor([0., 1., 2., 3., 4., 5.])
    """
    return input.as_strided(src.size(), src.stride(), src.storage_offset())


Tensor.slice_inverse = slice_inverse  # (torch.Tensor has it as a method too)


def ldexp_(input: Tensor, other: Tensor) -> Tensor:
    """In place: ``input *= 2 ** other``.

    Args:
        input (Tensor): a floating-point tensor, overwritten.
        other (Tensor): the exponents.

    Returns:
        Tensor: ``input``.

    Example::

        >>> x = ember.tensor([1., 2.])
        >>> ember.ldexp_(x, ember.tensor([2, 3]))
        tensor([ 4., 16.])
    """
    return input.ldexp_(other)


def to_dlpack(tensor: Tensor):
    """A DLPack capsule sharing ``tensor``'s memory (the legacy DLPack interface).

    Args:
        tensor (Tensor): the tensor to export.

    Returns:
        PyCapsule: the capsule, to be consumed once by a library that takes capsules
        (``torch.from_dlpack``, CuPy's ``fromDlpack``).

    Example::

        >>> type(ember.to_dlpack(ember.tensor([1., 2.]))).__name__
        'PyCapsule'
    """
    return tensor.__dlpack__()


def is_distributed(input: Tensor) -> bool:
    """Whether ``input`` is a distributed tensor: never, for ember's tensors.

    Args:
        input (Tensor): any tensor.

    Returns:
        bool: False.

    Example::

        >>> ember.is_distributed(ember.ones(2))
        False
    """
    return False


class _ClassProperty:
    def __init__(self, getter):
        self.getter = getter

    def __get__(self, instance, owner=None):
        return self.getter.__get__(instance, owner if owner is not None else type(instance))()


def classproperty(func):
    """A property of the class: ``Cls.name`` calls ``func(Cls)``.

    Args:
        func: a function of the class (or a classmethod/staticmethod).

    Returns:
        a descriptor.

    Example::

        >>> class Config:
        ...     @ember.classproperty
        ...     def name(cls):
        ...         return cls.__name__.lower()
        >>> Config.name
        'config'
    """
    if not isinstance(func, (classmethod, staticmethod)):
        func = classmethod(func)
    return _ClassProperty(func)


def _loop_error(message: str) -> RuntimeError:
    from ._dynamo import exc  # deferred: _dynamo sits above this module

    error = getattr(exc, "UncapturedHigherOrderOpError", RuntimeError)
    return error(message)


def while_loop(cond_fn, body_fn, carried_inputs):
    """Run ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` is true, eagerly.

    ``body_fn`` must return as many values as it receives, each tensor with the shape,
    dtype and device of the one it replaces (that is what lets a compiler turn the loop into
    one graph; ember checks it too, so a program that runs here runs under PyTorch).

    Args:
        cond_fn (callable): returns a bool or a one-element bool tensor.
        body_fn (callable): returns the next carried values (a tuple or list).
        carried_inputs (tuple or list): the initial values (tensors or Python numbers).

    Returns:
        tuple: the carried values once ``cond_fn`` is false.

    Raises:
        RuntimeError: ``carried_inputs`` not a tuple or list, ``cond_fn`` returning anything
            but a scalar, a loop whose condition is the constant True, or ``body_fn``
            changing the number, shape or dtype of the carried values.

    Example::

        >>> ember.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2),
        ...                  (ember.tensor(0), ember.ones(2)))
        (tensor(3), tensor([8., 8.]))
    """
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list, got {type(carried_inputs)}")
    carried = tuple(carried_inputs)
    while True:
        pred = cond_fn(*carried)
        if isinstance(pred, Tensor):
            if pred.numel() != 1 or pred.dim() != 0:
                raise _loop_error("torch.while_loop: unsupported cond_fn return type: expected "
                                  f"cond_fn to return a scalar tensor or a bool but got "
                                  f"{pred.shape}")
            go = bool(pred)
        elif isinstance(pred, bool):
            if pred:
                raise _loop_error("torch.while_loop: infinite loop detected: cond_fn always "
                                  "returns the same value True")
            go = False
        else:
            raise _loop_error("torch.while_loop: unsupported cond_fn return type: expected "
                              f"cond_fn to return a scalar tensor or a bool but got {pred!r}")
        if not go:
            return carried
        out = body_fn(*carried)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != len(carried):
            raise _loop_error(f"torch.while_loop: body_fn returned {len(out)} values for "
                              f"{len(carried)} carried inputs")
        for i, (new, old) in enumerate(zip(out, carried)):
            if isinstance(old, Tensor):
                if not isinstance(new, Tensor):
                    raise _loop_error(f"Expected body_fn_output and carried_inputs to have "
                                      f"same metadata but found: pair[{i}] is {type(new)} "
                                      f"for a tensor")
                for what, a, b in (("dtype", new.dtype, old.dtype),
                                   ("shape", tuple(new.shape), tuple(old.shape)),
                                   ("device", new.device, old.device)):
                    if a != b:
                        raise _loop_error(
                            "Expected body_fn_output and carried_inputs to have same metadata "
                            f"but found: pair[{i}] differ in '{what}: {a} vs {b}'")
        carried = out


def sym_constrain_range(size, *, min=None, max=None) -> None:
    """Check that the size ``size`` lies in ``[min, max]`` (what a compiler may assume).

    In eager mode sizes are plain integers, so this is a check.

    Args:
        size (int): the value.
        min (int, optional): the lower bound; unbounded if None.
        max (int, optional): the upper bound; unbounded if None.

    Raises:
        RuntimeError: ``size`` is outside the range.

    Example::

        >>> ember.sym_constrain_range(3, min=0, max=5)
        >>> ember.sym_constrain_range(7, min=0, max=5)
        Traceback (most recent call last):
        ...
        RuntimeError: Invalid value range for 7 between [0, 5].
    """
    low = -_INT64_MAX - 1 if min is None else min
    high = _INT64_MAX if max is None else max
    if not low <= int(size) <= high:
        raise RuntimeError(f"Invalid value range for {size} between [{low}, {high}].")


def sym_constrain_range_for_size(size, *, min=None, max=None) -> None:
    """:func:`sym_constrain_range` for a value used as a size: the lower bound is at least 0.

    Args:
        size (int): the value.
        min (int, optional): the lower bound; 0 if None.
        max (int, optional): the upper bound; unbounded if None.

    Raises:
        RuntimeError: ``size`` is outside the range.

    Example::

        >>> ember.sym_constrain_range_for_size(3)
        >>> ember.sym_constrain_range_for_size(-1)
        Traceback (most recent call last):
        ...
        RuntimeError: Invalid value range for -1 between [0, 9223372036854775807].
    """
    sym_constrain_range(size, min=0 if min is None else min, max=max)


def sym_fresh_size(expr):
    """A size a compiler must treat as a new unknown; in eager mode, ``expr``'s integer value.

    Args:
        expr (int or Tensor): the size.

    Returns:
        int: its value.

    Example::

        >>> ember.sym_fresh_size(3)
        3
    """
    return tensor(expr).item()


def thread_safe_generator():
    """The generator of the current DataLoader *thread* worker, or None elsewhere.

    ember's DataLoader runs its workers in processes (each seeded on its own) or in the
    main process, where the global generator is the right one: this returns None there,
    which random functions take as "use the default generator".

    Returns:
        ember.Generator or None.

    Example::

        >>> ember.thread_safe_generator() is None
        True
    """
    from .utils.data import get_worker_info  # deferred: utils.data sits above this module

    info = get_worker_info()
    if info is not None and getattr(info, "worker_method", None) == "thread":
        rng = getattr(info, "rng", None)
        if rng is not None:
            return rng.torch_generator
    return None


def prepare_multiprocessing_environment(path: str) -> None:
    """A hook PyTorch calls before starting worker processes; nothing to prepare in ember.

    Args:
        path (str): a scratch folder for the workers.

    Example::

        >>> ember.prepare_multiprocessing_environment("/tmp")
    """


def profiler_allow_cudagraph_cupti_lazy_reinit_cuda12() -> bool:
    """Whether the profiler may re-initialise CUPTI lazily with CUDA graphs: True, as in
    PyTorch's builds.

    Returns:
        bool: True.

    Example::

        >>> ember.profiler_allow_cudagraph_cupti_lazy_reinit_cuda12()
        True
    """
    return True
