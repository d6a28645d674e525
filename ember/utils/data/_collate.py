"""``default_collate`` and ``default_convert``: turning samples into batches."""

from __future__ import annotations

import collections.abc
import re

import numpy as np

from ._worker_info import get_worker_info

__all__ = ["default_collate", "default_convert"]

_np_str_obj = re.compile(r"[SaUO]")
_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def default_convert(data):
    """NumPy arrays and scalars inside ``data`` become tensors; containers are recursed."""
    from ... import as_tensor
    from ..._core.tensor import Tensor

    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) and not _np_str_obj.search(data.dtype.str):
        return as_tensor(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({k: default_convert(v) for k, v in data.items()})
        except TypeError:
            return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def default_collate(batch):
    """Stack a list of samples into a batch, recursing into dicts, tuples and lists.

    Tensors are stacked along a new first dimension; NumPy arrays and Python numbers become
    tensors (floats as float64, ints as int64, as PyTorch); strings stay lists.
    """
    from ... import as_tensor, float64, stack, tensor
    from ..._core.tensor import Tensor

    elem = batch[0]
    if isinstance(elem, Tensor):
        if get_worker_info() is not None and elem.is_cpu:
            # in a worker: stack straight into shared memory, so the batch crosses to the
            # main process as a handle, not as pickled bytes
            from ...multiprocessing._shared import new_shared

            out = new_shared((len(batch),) + tuple(elem.shape), elem._data.dtype)
            return stack(batch, 0, out=out)
        return stack(batch, 0)
    if isinstance(elem, np.ndarray) or isinstance(elem, np.generic) and not isinstance(
            elem, (np.str_, np.bytes_)):
        if isinstance(elem, np.ndarray) and _np_str_obj.search(elem.dtype.str):
            raise TypeError(_ERR.format(elem.dtype))
        return default_collate([as_tensor(b) for b in batch])
    if isinstance(elem, bool):
        return tensor(batch)
    if isinstance(elem, float):
        return tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            return type(elem)({k: default_collate([d[k] for d in batch]) for k in elem})
        except TypeError:
            return {k: default_collate([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(s) for s in transposed]
        try:
            return type(elem)([default_collate(s) for s in transposed])
        except TypeError:
            return [default_collate(s) for s in transposed]
    raise TypeError(_ERR.format(type(elem)))
