"""``ember._utils``: the private helpers of ``torch._utils`` that public programs import.

Checkpoint code calls the rebuild functions by name (``torch._utils._rebuild_tensor_v2``;
ember's are those its own loader uses, ember/serialization/_rebuild.py); bucketing code
(gradient all-reduce, EMA helpers) flattens tensor lists with
``_flatten_dense_tensors``/``_unflatten_dense_tensors``; device code asks
``_get_device_index``; worker code carries exceptions across processes with
``ExceptionWrapper``.
"""

from __future__ import annotations

import importlib
import sys
import traceback

from .serialization._rebuild import rebuild_functions as _rebuild_functions

__all__ = ["_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_parameter",
           "_rebuild_parameter_with_state", "_flatten_dense_tensors", "_unflatten_dense_tensors",
           "_take_tensors", "_get_device_index", "_get_available_device_type",
           "_get_device_module",
           "_import_dotted_name", "_element_size", "ExceptionWrapper", "KeyErrorMessage"]

_table = {k.rpartition(".")[2]: v for k, v in _rebuild_functions().items()}
_rebuild_tensor = _table["_rebuild_tensor"]
_rebuild_tensor_v2 = _table["_rebuild_tensor_v2"]
_rebuild_tensor_v3 = _table["_rebuild_tensor_v3"]
_rebuild_parameter = _table["_rebuild_parameter"]
_rebuild_parameter_with_state = _table["_rebuild_parameter_with_state"]
_rebuild_device_tensor_from_numpy = _table["_rebuild_device_tensor_from_numpy"]
_rebuild_meta_tensor_no_storage = _table["_rebuild_meta_tensor_no_storage"]
_rebuild_sparse_tensor = _table["_rebuild_sparse_tensor"]
_rebuild_qtensor = _table["_rebuild_qtensor"]
del _table


def _flatten_dense_tensors(tensors):
    """One 1-D tensor holding every tensor of ``tensors``, flattened, in order.

    Args:
        tensors (sequence of Tensors): tensors of one dtype and device.

    Returns:
        Tensor: their elements concatenated (a copy).

    Example:
        >>> import ember
        >>> ember._utils._flatten_dense_tensors([ember.ones(2), ember.zeros(1, 2)])
        tensor([1., 1., 0., 0.])
    """
    import ember

    tensors = list(tensors)
    if len(tensors) == 1:
        return tensors[0].contiguous().view(-1)
    return ember.cat([t.contiguous().view(-1) for t in tensors])


def _unflatten_dense_tensors(flat, tensors):
    """Views of ``flat`` shaped as each tensor of ``tensors`` (undoes
    :func:`_flatten_dense_tensors`).

    Args:
        flat (Tensor): the flattened elements.
        tensors (sequence of Tensors): the tensors whose shapes to take, in order.

    Returns:
        tuple of Tensors: views of ``flat``.

    Example:
        >>> import ember
        >>> ts = [ember.ones(2), ember.zeros(1, 2)]
        >>> [t.shape for t in ember._utils._unflatten_dense_tensors(ember.arange(4.), ts)]
        [ember.Size([2]), ember.Size([1, 2])]
    """
    out = []
    offset = 0
    for t in tensors:
        n = t.numel()
        out.append(flat.narrow(0, offset, n).view_as(t))
        offset += n
    return tuple(out)


def _take_tensors(tensors, size_limit):
    """Group ``tensors`` into chunks of one type each, of about ``size_limit`` bytes.

    Args:
        tensors (sequence of Tensors): the tensors.
        size_limit (int): the most bytes a chunk holds (a bigger tensor is a chunk alone).

    Returns:
        generator of lists of Tensors.

    Example:
        >>> import ember
        >>> [len(c) for c in ember._utils._take_tensors([ember.ones(4)] * 3, 32)]
        [2, 1]
    """
    buckets: dict = {}
    order = []
    for t in tensors:
        key = (t.dtype, t.device)
        if key not in buckets:
            buckets[key] = ([], 0)
            order.append(key)
        items, size = buckets[key]
        nbytes = t.numel() * t.element_size()
        if items and size + nbytes > size_limit:
            yield items
            items, size = [], 0
        items.append(t)
        buckets[key] = (items, size + nbytes)
    for key in order:
        items, _ = buckets[key]
        if items:
            yield items


def _get_device_index(device, optional=False, allow_cpu=False) -> int:
    """The device index of ``device`` (a device, a string or an int).

    Args:
        device: ``ember.device``, a string such as ``"cuda:1"``, an int, or None.
        optional (bool): with no index given, answer the current device's (else raise).
        allow_cpu (bool): accept a CPU device (its index is -1).

    Returns:
        int.

    Example:
        >>> import ember
        >>> ember._utils._get_device_index("cuda:1"), ember._utils._get_device_index(3)
        (1, 3)
    """
    import ember

    if isinstance(device, str):
        device = ember.device(device)
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if device is None:
        index = None
    else:
        if device.type == "cpu":
            if not allow_cpu:
                raise ValueError(f"Expected a non cpu device, but got: {device}")
            return -1
        index = device.index
    if index is None:
        if not optional:
            raise ValueError(f"Expected a device with a specified index or an integer, but got:"
                             f"{device}")
        return ember.cuda.current_device() if ember.cuda.is_available() else 0
    return index


def _get_available_device_type():
    """``"cuda"`` when a CUDA device is usable, else None.

    Returns:
        str or None.

    Example:
        >>> import ember
        >>> ember._utils._get_available_device_type() in (None, "cuda")
        True
    """
    import ember

    return "cuda" if ember.cuda.is_available() else None


def _get_device_module(device_type: str):
    """The module of a device type (``"cpu"`` -> ``ember.cpu``, ``"cuda"`` ->
    ``ember.cuda``), which libraries ask for ``synchronize``, ``device_count``...

    Args:
        device_type (str): the device type.

    Returns:
        module: ``ember.<device_type>``.

    Raises:
        RuntimeError: ember has no module for that device type.

    Example:
        >>> import ember
        >>> ember._utils._get_device_module("cpu").__name__
        'ember.cpu'
    """
    import ember

    module = getattr(ember, device_type, None)
    if not isinstance(module, type(ember)):
        raise RuntimeError(f"Device '{device_type}' does not have a corresponding module "
                           f"registered as 'torch.{device_type}'.")
    return module


def _import_dotted_name(name):
    """The object a dotted path names (``"collections.OrderedDict"``).

    Args:
        name (str): module path, then attributes.

    Returns:
        The object.

    Example:
        >>> import ember
        >>> ember._utils._import_dotted_name("collections.OrderedDict").__name__
        'OrderedDict'
    """
    parts = name.split(".")
    obj = importlib.import_module(parts[0])
    for i, p in enumerate(parts[1:], 1):
        try:
            obj = getattr(obj, p)
        except AttributeError:
            obj = importlib.import_module(".".join(parts[:i + 1]))
    return obj


def _element_size(dtype) -> int:
    """Bytes per element of ``dtype``.

    Args:
        dtype (ember.dtype): the element type.

    Returns:
        int.

    Example:
        >>> import ember
        >>> ember._utils._element_size(ember.float16)
        2
    """
    return dtype.itemsize


class KeyErrorMessage(str):
    """A message that prints its line breaks when a KeyError carries it.

    Args:
        (as ``str``).

    Example:
        >>> import ember
        >>> print(KeyError(ember._utils.KeyErrorMessage("first line\\nsecond line")))
        first line
        second line
    """

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception with its traceback text, to raise again elsewhere (another thread or
    process), as DataLoader workers hand theirs to the main process.

    Args:
        exc_info (tuple, optional): ``sys.exc_info()``. Default: the exception being handled.
        where (str): where it was raised, for the message. Default: ``"in background"``.

    Example:
        >>> import ember
        >>> try:
        ...     raise ValueError("bad")
        ... except ValueError:
        ...     w = ember._utils.ExceptionWrapper(where="in worker 0")
        >>> w.exc_type.__name__
        'ValueError'
    """

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise the carried exception again, its original traceback in the message.

        Returns:
            never.

        Example:
            >>> import ember
            >>> try:
            ...     raise KeyError("k")
            ... except KeyError:
            ...     w = ember._utils.ExceptionWrapper()
            >>> try:
            ...     w.reraise()
            ... except KeyError:
            ...     print("raised")
            raised
        """
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception
