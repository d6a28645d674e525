"""``default_collate`` and ``default_convert``: turning samples into batches.

``collate`` walks containers (mappings, named tuples, sequences) and hands each leaf batch
to the function its type maps to in ``collate_fn_map``; ``default_collate_fn_map`` holds
the defaults, and a user may copy and extend it for their own types, as in PyTorch.
"""

from __future__ import annotations

import collections.abc
import copy
import re

import numpy as np

from ..._core.tensor import Tensor
from ._worker_info import get_worker_info

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")
default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
    "found {}")


def default_convert(data):
    """NumPy arrays and scalars inside ``data`` become tensors; containers are recursed.

    Args:
        data: a sample (what a dataset returns) when the DataLoader does not batch.

    Returns:
        ``data`` with NumPy leaves as tensors.

    Example:
        >>> import numpy as np
        >>> default_convert({"x": np.array([1, 2])})
        {'x': tensor([1, 2])}
    """
    from ... import as_tensor

    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) and not np_str_obj_array_pattern.search(data.dtype.str):
        return as_tensor(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: default_convert(v) for k, v in data.items()})
                return clone
            return type(data)({k: default_convert(v) for k, v in data.items()})
        except TypeError:
            return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map=None):
    """Collate a list of samples, recursing into containers and handing each leaf batch to
    the function ``collate_fn_map`` gives for its type (exact type first, then
    ``isinstance``).

    Args:
        batch: a list of samples.
        collate_fn_map: ``{type: fn(batch, *, collate_fn_map)}``.

    Returns:
        The batch.

    Example:
        >>> collate([(1, "a"), (2, "b")], collate_fn_map=default_collate_fn_map)
        [tensor([1, 2]), ('a', 'b')]
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type, fn in collate_fn_map.items():
            if isinstance(elem, collate_type):
                return fn(batch, collate_fn_map=collate_fn_map)

    def sub(samples):
        return collate(samples, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({k: sub([d[k] for d in batch]) for k in elem})
                return clone
            return elem_type({k: sub([d[k] for d in batch]) for k in elem})
        except TypeError:
            return {k: sub([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(sub(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [sub(s) for s in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, s in enumerate(transposed):
                    clone[i] = sub(s)
                return clone
            return elem_type([sub(s) for s in transposed])
        except TypeError:
            return [sub(s) for s in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Stack tensors along a new first dimension (in a worker, into shared memory, so the
    batch crosses to the main process as a handle, not as pickled bytes)."""
    from ... import stack

    elem = batch[0]
    if get_worker_info() is not None and elem.is_cpu:
        from ...multiprocessing._shared import new_shared

        out = new_shared((len(batch),) + tuple(elem.shape), elem._data.dtype)
        return stack(batch, 0, out=out)
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    """NumPy arrays become tensors, then stack (string/object arrays are refused)."""
    from ... import as_tensor

    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    """NumPy scalars become one tensor of their dtype."""
    from ... import as_tensor

    return as_tensor(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    """Python floats become a float64 tensor, as in PyTorch."""
    from ... import float64, tensor

    return tensor(batch, dtype=float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    """Python ints (and bools) become one tensor."""
    from ... import tensor

    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    """Strings stay a list."""
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Stack a list of samples into a batch, recursing into dicts, tuples and lists.

    Tensors are stacked along a new first dimension; NumPy arrays and Python numbers become
    tensors (floats as float64, ints as int64, as PyTorch); strings stay lists.

    Args:
        batch: a list of samples.

    Returns:
        The batch.

    Example:
        >>> import ember
        >>> default_collate([{"x": ember.ones(2), "y": 1}, {"x": ember.zeros(2), "y": 0}])
        {'x': tensor([[1., 1.],
                [0., 0.]]), 'y': tensor([1, 0])}
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
