"""``ember.Tensor``: fields, metadata and the dunders that are not operators.

A Tensor is a strided view of a Storage. ``_data`` is the backend array (a NumPy ndarray on
the CPU) viewing the storage's buffer; shape, strides, offset and data pointer are read off
it. Operators (arithmetic, indexing, reductions, ...) are attached to the class by their
declarations in ``ember/_ops`` -- this file holds no maths.

NOTE [ Tensor fields ]
``wrap`` must stay a handful of slot stores: it runs once per op. So only the fields every
op reads are set there (``_data``, ``_rg``, ``_grad_fn``, ``_base``, ``_vc``); the rest
(``_grad``, hooks, ...) are read with a default by the code that needs them.
- ``_rg``: requires_grad. ``_grad_fn``: the Node that made the tensor (None for leaves).
- ``_base``: the tensor whose storage this view shares (None when not a view).
- ``_vc``: the version counter, a one-element list shared by a tensor and all its views;
  created on first need (a view, an in-place write, or saving for backward).
"""

from __future__ import annotations

import numpy as np

from . import dtype as _dt
from .backend import backends_by_type
from .size import Size
from .storage import UntypedStorage, storage_of

_new = object.__new__

# Hooks installed by ember.autograd (the core knows nothing of it):
#   _view_refresh(view): rebuild a view's grad_fn after its base was modified in place
#   _inference_check(t) -> bool: on a first version bump; True for an inference tensor
_view_refresh = None
_inference_check = None


def wrap(array) -> Tensor:
    """Make a Tensor around a backend array (no copy). See NOTE [ Tensor fields ]."""
    t = _new(Tensor)
    t._data = array
    t._rg = False
    t._grad_fn = None
    t._base = None
    t._vc = None
    return t


class Tensor:
    """A multi-dimensional array with autograd support: ember's ``torch.Tensor``."""

    __slots__ = ("_data", "_rg", "_grad_fn", "_base", "_vc", "_grad", "_out_nr", "_accum",
                 "_hooks", "_post_acc_hooks", "_retains_grad", "_view_meta", "_inference",
                 "_tangent", "__dict__", "__weakref__")

    # ``Tensor(...)`` (the legacy constructor) is provided by ember._ops.from_data.

    def _set_data(self, array):
        self._data = array

    def _bump(self):
        vc = self._vc
        if vc is None:
            if _inference_check is not None:
                # inference tensors keep no version counter; see ember/autograd/grad_mode.py
                if _inference_check(self):
                    return
            self._vc = [1]
        else:
            vc[0] += 1

    # -- metadata ---------------------------------------------------------------------------------

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim=None):
        shape = self._data.shape
        if dim is None:
            return Size(shape)
        return shape[_wrap_dim(dim, len(shape), "size")]

    @property
    def dtype(self) -> _dt.dtype:
        return _dt.from_np[self._data.dtype]

    @property
    def device(self):
        a = self._data
        return backends_by_type[type(a)].device_of(a)

    @property
    def is_cpu(self) -> bool:
        return type(self._data) is np.ndarray

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_meta(self) -> bool:
        """True for a tensor on the meta device: a shape and a dtype, no data (NOTE [ Meta
        device ] in ember/backends/meta.py).

        Example::

            >>> ember.empty(2, device="meta").is_meta, ember.empty(2).is_meta
            (True, False)
        """
        return type(self._data) is not np.ndarray and self.device.type == "meta"

    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def is_quantized(self) -> bool:
        return False

    @property
    def layout(self):
        from . import layout

        return layout.strided

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.size * self._data.itemsize

    def stride(self, dim=None):
        a = self._data
        item = a.itemsize
        strides = tuple(s // item for s in a.strides)
        if dim is None:
            return strides
        return strides[_wrap_dim(dim, a.ndim, "stride")]

    def storage_offset(self) -> int:
        a = self._data
        root = storage_of(a)._array
        return (_address(a) - _address(root)) // a.itemsize

    def data_ptr(self) -> int:
        return _address(self._data)

    def untyped_storage(self) -> UntypedStorage:
        return storage_of(self._data)

    def storage(self):
        from .storage import TypedStorage

        return TypedStorage(storage_of(self._data), self.dtype)

    def is_contiguous(self, memory_format=None) -> bool:
        from . import layout

        a = self._data
        if memory_format is None or memory_format is layout.contiguous_format:
            return _is_contiguous(a.shape, a.strides, a.itemsize)
        if memory_format is layout.channels_last:
            if a.ndim != 4:
                return False
            perm = (0, 2, 3, 1)
        elif memory_format is layout.channels_last_3d:
            if a.ndim != 5:
                return False
            perm = (0, 2, 3, 4, 1)
        else:
            return _is_contiguous(a.shape, a.strides, a.itemsize)
        return _is_contiguous(tuple(a.shape[p] for p in perm),
                              tuple(a.strides[p] for p in perm), a.itemsize)

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def is_floating_point(self) -> bool:
        return _dt.from_np[self._data.dtype].is_floating_point

    def is_signed(self) -> bool:
        return _dt.from_np[self._data.dtype].is_signed

    def get_device(self) -> int:
        d = self.device
        return -1 if d.type == "cpu" or d.index is None else d.index

    @property
    def _version(self) -> int:
        vc = self._vc
        return 0 if vc is None else vc[0]

    def is_shared(self) -> bool:
        from ..multiprocessing import _shared  # upward (multiprocessing), and rarely asked

        from .storage import _root

        return type(self._data) is np.ndarray and _shared.is_shared(_root(self._data))

    def is_pinned(self) -> bool:
        return False

    # -- autograd fields (the engine lives in ember.autograd) -------------------------------------

    @property
    def requires_grad(self) -> bool:
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        if not isinstance(requires_grad, bool):
            raise TypeError(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want "
                    "to use a computed variable in a subgraph that doesn't require "
                    "differentiation use var_no_grad = var.detach().")
            return self
        if requires_grad and getattr(self, "_inference", False):
            from .._dispatch import state  # upward (grad-mode state), and inference tensors only

            if not state.inference_mode:
                raise RuntimeError(
                    "Setting requires_grad=True on inference tensor outside InferenceMode is "
                    "not allowed.")
        if requires_grad and self._data.dtype.kind not in "fcV" and self.dtype.category < 2:
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients")
        self._rg = requires_grad
        return self

    @property
    def grad_fn(self):
        if self._base is not None and _view_refresh is not None:
            _view_refresh(self)  # NOTE [ View replay ] in ember/autograd/_nodes.py
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        if self._base is not None and _view_refresh is not None:
            _view_refresh(self)
        return self._grad_fn is None

    @property
    def grad(self):
        try:
            g = self._grad
        except AttributeError:
            g = None
        if g is None and self._grad_fn is not None and not self.retains_grad:
            import warnings

            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed "
                "want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() "
                "on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
                "you access the leaf Tensor instead.", UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type "
                    f"{type(value).__name__}")
            if value._data.dtype != self._data.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{value.dtype.scalar_name}' "
                    f"to a tensor with grad_dtype '{self.dtype.scalar_name}'. The gradient must "
                    "match the tensor's grad_dtype (defaults to the tensor's dtype).")
            if value._data.shape != self._data.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value._data.shape)}' to a "
                    f"tensor of size '{list(self._data.shape)}'. Please ensure that the "
                    "gradient and the tensor are the same size")
            if type(value._data) is not type(self._data):
                raise RuntimeError("assigned grad has data located on a different device")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        try:
            return self._retains_grad
        except AttributeError:
            return False

    @property
    def output_nr(self) -> int:
        try:
            return self._out_nr
        except AttributeError:
            return 0

    @property
    def is_inference(self):
        def is_inference():
            try:
                return self._inference
            except AttributeError:
                return False

        return is_inference

    # -- Python protocol ------------------------------------------------------------------------

    def __len__(self):
        a = self._data
        if a.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return a.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def _scalar(self, what):
        a = self._data
        if a.size != 1:
            raise RuntimeError(
                f"a Tensor with {a.size} elements cannot be converted to Scalar")
        return a.reshape(()).item() if type(a) is np.ndarray else a.item()

    def item(self):
        """The single value of a one-element tensor as a Python number."""
        v = self._scalar("item")
        if self._data.dtype == _dt.bfloat16.np:
            return float(v)
        return v

    def __bool__(self):
        a = self._data
        if a.size != 1:
            raise RuntimeError(
                "Boolean value of Tensor with more than one value is ambiguous")
        return bool(a.reshape(()).item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        a = self._data
        if a.dtype.kind not in "iub" or a.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(a.reshape(()).item())

    def __hash__(self):
        return id(self)

    def __contains__(self, element):
        if isinstance(element, (Tensor, int, float, bool, complex)):
            return bool((self == element).any())
        raise RuntimeError(
            f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
            f"{type(element).__name__}.")

    def __format__(self, spec):
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __repr__(self, *, tensor_contents=None):
        from ._print import tensor_repr  # the printer formats tensors: it sits above Tensor

        return tensor_repr(self, tensor_contents)

    def __str__(self):
        return self.__repr__()

    def tolist(self):
        a = self._data
        if type(a) is not np.ndarray:
            a = a.get()
        if a.dtype == _dt.bfloat16.np:
            a = a.astype(np.float32)
        return a.tolist()

    # -- NumPy bridge -----------------------------------------------------------------------------

    def numpy(self, *, force=False):
        """The tensor's data as a NumPy array sharing its memory (CPU tensors only)."""
        a = self._data
        if type(a) is not np.ndarray:
            if not force:
                raise TypeError(
                    f"can't convert {self.device} device type tensor to numpy. Use "
                    "Tensor.cpu() to copy the tensor to host memory first.")
            return a.get()
        if self._rg and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead.")
        return a

    def __array__(self, dtype=None, copy=None):
        a = self.numpy(force=True) if self._rg else self.numpy()
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        if copy:
            return a.copy()
        return a

    __array_priority__ = 1000  # NumPy defers binary operators to Tensor

    def __dlpack__(self, stream=None, **kwargs):
        if self._rg:
            raise RuntimeError(
                "Can't export tensors that require gradient, use tensor.detach()")
        return self._data.__dlpack__(**({} if stream is None else {"stream": stream}), **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()


def _address(a) -> int:
    return a.__array_interface__["data"][0] if type(a) is np.ndarray else a.data.ptr


def _is_contiguous(shape, strides, itemsize) -> bool:
    expected = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def _wrap_dim(dim, ndim, op_name):
    from .checks import wrap_dim

    return wrap_dim(dim, ndim, op_name)
