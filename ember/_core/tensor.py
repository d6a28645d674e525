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

import sys

import numpy as np

from . import checks as _checks
from . import dtype as _dt
from .backend import backends_by_type
from .size import Size
from .storage import UntypedStorage, storage_of

_new_tuple = tuple.__new__

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


#: what torch says when a constructor is asked for an integer tensor that requires grad
CONSTRUCTOR_REFUSAL = ("Only Tensors of floating point and complex dtype can require "
                       "gradients")

class Tensor:
    """A multi-dimensional array with autograd support: ember's ``torch.Tensor``."""

    __slots__ = ("_data", "_rg", "_grad_fn", "_base", "_vc", "_grad", "_out_nr", "_accum",
                 "_hooks", "_post_acc_hooks", "_retains_grad", "_view_meta", "_inference",
                 "_tangent", "_wrapped_number", "__dict__", "__weakref__")

    # ``Tensor(...)`` (the legacy constructor) is provided by ember._ops.from_data.

    #: 1 for a view made under no_grad of a tensor that needs a gradient, 2 for a view of
    #: one (``_dispatch.mark_no_grad_view``); set in the instance dict of those only
    _ng_view = 0

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
        """The size of each dimension, as an ``ember.Size`` (a tuple); the same as ``size()``.

        Example::

            >>> ember.zeros(2, 3).shape
            ember.Size([2, 3])
        """
        shape = self._data.shape
        # (an array's shape is a tuple of Python ints: no per-element conversion)
        return _new_tuple(Size, shape) if type(shape) is tuple else Size(shape)

    def size(self, dim=None):
        shape = self._data.shape
        if dim is None:
            return _new_tuple(Size, shape) if type(shape) is tuple else Size(shape)
        return shape[_wrap_dim(dim, len(shape), "size")]

    @property
    def dtype(self) -> _dt.dtype:
        """The data type of the elements (``ember.float32``, ``ember.int64``, ...).

        Example::

            >>> ember.tensor([1, 2]).dtype
            ember.int64
        """
        return _dt.from_np[self._data.dtype]

    @property
    def device(self):
        """The device holding the data (``device(type='cpu')`` unless moved).

        Example::

            >>> ember.zeros(1).device
            device(type='cpu')
        """
        a = self._data
        return backends_by_type[type(a)].device_of(a)

    @property
    def is_cpu(self) -> bool:
        """True when the data is in CPU memory (a NumPy array).

        Example::

            >>> ember.zeros(1).is_cpu
            True
        """
        return type(self._data) is np.ndarray

    @property
    def is_cuda(self) -> bool:
        """True when the tensor is on a CUDA device.

        Example::

            >>> ember.zeros(1).is_cuda
            False
        """
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
        """False: sparse tensors are their own class (NOTE [ Sparse tensors ]).

        Example::

            >>> ember.zeros(1).is_sparse
            False
        """
        return False

    @property
    def is_quantized(self) -> bool:
        """Whether the tensor is quantized (NOTE [ Quantized tensors ] in ember/ao/_qtensor.py).

        Example::

            >>> ember.zeros(1).is_quantized
            False
            >>> ember.quantize_per_tensor(ember.zeros(1), 0.1, 0, ember.qint8).is_quantized
            True
        """
        return _dt.from_np[self._data.dtype].is_quantized

    @property
    def layout(self):
        """The memory layout: ``ember.strided`` for every dense tensor.

        Example::

            >>> ember.zeros(1).layout
            ember.strided
        """
        from . import layout

        return layout.strided

    @property
    def ndim(self) -> int:
        """The number of dimensions (``dim()``).

        Example::

            >>> ember.zeros(2, 3).ndim
            2
        """
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
        """The size of one element in bytes (``element_size()``).

        Example::

            >>> ember.zeros(1, dtype=ember.float64).itemsize
            8
        """
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        """The number of bytes the elements take: ``numel() * itemsize``.

        Example::

            >>> ember.zeros(2, 3).nbytes
            24
        """
        return self._data.size * self._data.itemsize

    def stride(self, dim=None):
        a = self._data
        item = a.itemsize
        strides = tuple(s // item for s in a.strides)
        if not a.size and not any(strides) and type(a) is np.ndarray:
            strides = _empty_strides(a.shape)  # NumPy zeroes an empty array's strides
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
        from .storage import TypedStorage, warn_typed_storage_removal

        # (the frame above is the method's __torch_function__ wrapper; NOTE [ TypedStorage
        # deprecation warning ] in storage.py)
        warn_typed_storage_removal(stacklevel=3)
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
        if not a.size:  # the strides ``stride()`` reports decide, as in torch (no shortcut)
            st = self.stride()
            expected = 1
            for p in reversed(perm):
                if a.shape[p] != 1:
                    if st[p] != expected:
                        return False
                    expected *= a.shape[p]
            return True
        return _is_contiguous(tuple(a.shape[p] for p in perm),
                              tuple(a.strides[p] for p in perm), a.itemsize)

    def is_complex(self) -> bool:
        kind = self._data.dtype.kind
        # complex32 is stored opaque (NOTE [ Opaque dtypes ])
        return kind == "c" or kind == "V" and _dt.from_np[self._data.dtype].is_complex

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
        """Whether the tensor lives in page-locked host memory (``pin_memory()``).

        Returns:
            bool: False for GPU tensors and on machines without CUDA.

        Example::

            >>> ember.ones(2).is_pinned()
            False
        """
        if self.device.type != "cpu":
            return False
        from ..cuda import _copy  # upward (CUDA's pinned memory), and rarely asked

        return _copy.is_pinned(self._data)

    # -- device, layout and legacy queries (see NOTE [ Devices ember has no backend for ]) --------

    def pin_memory(self, device=None):
        """A copy of the tensor in page-locked host memory, for fast copies to a GPU.

        Args:
            device: deprecated and ignored, as in PyTorch.

        Returns:
            Tensor: a copy in CUDA pinned memory (itself when already pinned); see NOTE
            [ Pinned memory and non_blocking copies ] in ember/cuda/_copy.py.

        Raises:
            RuntimeError: without an accelerator, as PyTorch's CPU build does.

        Example::

            >>> x = ember.ones(2)
            >>> y = x.pin_memory() if ember.cuda.is_available() else x
        """
        from .. import cuda  # upward (the accelerator query), and rarely asked

        if self.device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
        if not cuda.is_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if self.is_pinned():
            return self
        cuda._lazy_init()
        from ..cuda import _copy

        return wrap(_copy.pin(self._data))

    # NOTE [ Devices ember has no backend for ]
    # PyTorch's CPU build answers False to every other device query, and its conversions to
    # those devices raise; ember matches that build, so scripts that probe (``x.is_mps``)
    # take their CPU path and scripts that convert fail with PyTorch's message.
    is_mps = is_xpu = is_ipu = is_mtia = is_maia = is_vulkan = is_xla = is_mkldnn = \
        property(lambda self: False, doc="False: ember has no backend for this device.")

    @property
    def is_nested(self) -> bool:
        """Whether this is a nested tensor (``ember.nested``): False for a dense tensor.

        Example::

            >>> ember.zeros(2).is_nested
            False
        """
        return False

    @staticmethod
    def _make_subclass(cls, data, require_grad=False, dispatch_strides=False,
                       dispatch_device=False, device_for_backend_keys=None):
        """A ``cls`` instance sharing ``data``'s memory, outside any graph (how Parameter-like
        subclasses in libraries build themselves).

        Args:
            cls (type): a subclass of Tensor.
            data (Tensor): the values (shared, not copied).
            require_grad (bool): make the result a leaf that requires grad. Default: False.
            dispatch_strides, dispatch_device, device_for_backend_keys: accepted for
                PyTorch's signature (they steer its C++ dispatch).

        Returns:
            a ``cls`` instance.

        Example::

            >>> class Weight(ember.Tensor):
            ...     pass
            >>> w = ember.Tensor._make_subclass(Weight, ember.ones(2), True)
            >>> type(w).__name__, w.requires_grad, w.is_leaf
            ('Weight', True, True)
        """
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError(f"_make_subclass(): cls must be a subclass of Tensor, got {cls!r}")
        if not isinstance(data, Tensor):
            raise TypeError(f"_make_subclass(): data must be a Tensor, got "
                            f"{type(data).__name__}")
        t = _new(cls)
        t._data = data._data
        t._rg = False
        t._grad_fn = None
        t._base = None
        vc = data._vc
        if vc is None:
            vc = data._vc = [0]
        t._vc = vc
        if require_grad:
            t.requires_grad_(True, _refusal=CONSTRUCTOR_REFUSAL)
        return t

    def to_padded_tensor(self, padding, output_size=None):
        """A nested tensor's components padded into one dense tensor (``ember.nested``).

        Args:
            padding (float): the fill value.
            output_size (tuple of ints, optional): the result's shape. Default: the
                smallest shape holding every component.

        Returns:
            Tensor. A dense tensor raises NotImplementedError, as in PyTorch: only nested
            tensors (which override this method) have components to pad.

        Example::

            >>> nt = ember.nested.nested_tensor([ember.ones(1), ember.ones(2)])
            >>> nt.to_padded_tensor(0.0)
            tensor([[1., 0.],
                    [1., 1.]])
        """
        raise NotImplementedError("to_padded_tensor(): the input is a dense tensor; only "
                                  "nested tensors (ember.nested) can be padded")

    @property
    def is_sparse_csr(self) -> bool:
        """False: ember's tensors are strided (dense)."""
        return False

    def is_distributed(self) -> bool:
        """False: a tensor is never split over processes (PyTorch's answer, too)."""
        return False

    def xpu(self, device=None, non_blocking=False, memory_format=None):
        """Copy to an Intel XPU: raises AssertionError, ember has no XPU backend (as torch's
        CPU build)."""
        raise AssertionError("Torch not compiled with XPU enabled")

    def mtia(self, device=None, non_blocking=False, memory_format=None):
        """Copy to an MTIA device: raises AssertionError, ember has no MTIA backend."""
        raise AssertionError("Torch not compiled with MTIA enabled")

    def ipu(self, device=None, non_blocking=False, memory_format=None):
        """Copy to an IPU: raises RuntimeError, ember has no IPU backend."""
        raise RuntimeError("PyTorch is not linked with support for ipu devices")

    def record_stream(self, stream):
        """Mark the tensor as used by ``stream``: when it is freed, its memory is not reused
        until the work queued on ``stream`` by then has finished (NOTE [ Counting CuPy's
        pool ] in ember/cuda/_allocator.py). A CPU tensor raises NotImplementedError, as
        PyTorch's does.

        Args:
            stream (Stream): the stream now using the tensor.

        Example::

            >>> x = ember.ones(2)
            >>> x.record_stream(None)  # doctest: +SKIP
        """
        if self.device.type == "cpu" or not hasattr(stream, "synchronize"):
            raise NotImplementedError(
                "Could not run 'aten::record_stream' with arguments from the "
                f"'{self.device.type.upper()}' backend: record_stream needs a CUDA tensor and "
                "a CUDA stream")
        if self.device.type == "cuda":
            from ..cuda import memory  # upward (the CUDA allocator), and rarely asked

            memory._allocator.record_stream(self._data, stream._cupy)

    @property
    def name(self):
        """None: ember has no named tensors (a plain tensor's name is None in PyTorch)."""
        return None

    @property
    def volatile(self) -> bool:
        """Always False; removed in PyTorch 0.4 (use ``ember.no_grad()``); warns when read."""
        import warnings

        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                      stacklevel=2)
        return False

    @volatile.setter
    def volatile(self, value):
        import warnings

        warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                      "instead.", UserWarning, stacklevel=2)

    def const_data_ptr(self) -> int:
        """The address of the first element, as :meth:`data_ptr` (read-only use intended)."""
        return _address(self._data)

    def is_same_size(self, other) -> bool:
        """True if ``other`` has the same shape.

        Args:
            other (Tensor): the tensor to compare with.

        Returns:
            bool: ``self.shape == other.shape``.

        Example::

            >>> ember.ones(2, 3).is_same_size(ember.zeros(2, 3))
            True
        """
        if not isinstance(other, Tensor):
            raise TypeError(f"is_same_size(): argument 'other' must be Tensor, not "
                            f"{type(other).__name__}")
        return self._data.shape == other._data.shape

    def is_nonzero(self) -> bool:
        """True if the single value of a one-element tensor is not zero.

        Raises:
            RuntimeError: for an empty tensor, or one with several elements.

        Example::

            >>> ember.tensor([0.5]).is_nonzero()
            True
        """
        n = self._data.size
        if n == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if n > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(()).item())

    def is_set_to(self, tensor) -> bool:
        """True if both tensors view the same storage with the same offset, sizes and strides.

        Args:
            tensor (Tensor): the tensor to compare with.

        Returns:
            bool: whether ``self`` is exactly the view ``tensor`` is.

        Example::

            >>> x = ember.ones(2, 3)
            >>> x.is_set_to(x.view(2, 3)), x.is_set_to(x.view(3, 2))
            (True, False)
        """
        if not isinstance(tensor, Tensor):
            raise TypeError(f"is_set_to(): argument 'tensor' must be Tensor, not "
                            f"{type(tensor).__name__}")
        a, b = self._data, tensor._data
        return (storage_of(a) == storage_of(b) and a.dtype == b.dtype and a.shape == b.shape
                and a.strides == b.strides and _address(a) == _address(b))

    def dim_order(self, *, ambiguity_check=False):
        """The dims from outermost to innermost in memory (a permutation of ``range(ndim)``).

        Args:
            ambiguity_check (bool or list of memory_format): True raises RuntimeError when
                the order is not unique (size-1 dims or equal strides); a list of memory
                formats allows such a tensor when it matches exactly one of them.

        Returns:
            tuple of int

        Example::

            >>> ember.empty(2, 3, 5).transpose(1, 2).dim_order()
            (0, 2, 1)
        """
        from . import layout

        check = ambiguity_check
        if not isinstance(check, bool):
            if not isinstance(check, list) or not all(
                    isinstance(f, layout.memory_format) for f in check):
                raise TypeError(
                    "The ambiguity_check argument must be a bool or a list of memory formats.")
        sizes, strides = self._data.shape, self.stride()
        if check is not False:
            ambiguous = 1 in sizes or any(a == b for a, b in zip(strides, strides[1:]))
            formats = check if isinstance(check, list) else []
            if ambiguous and sum(self.is_contiguous(memory_format=f) for f in formats) != 1:
                raise RuntimeError(
                    "The tensor does not have unique dim order, or cannot map to exact one of "
                    "the given memory formats.")
        # insertion sort from innermost to outermost: a dim moves inward past a neighbour with
        # a larger stride (or an equal stride and larger size); stride 0 decides nothing
        perm = list(range(len(sizes)))[::-1]
        for i in range(1, len(perm)):
            for j in range(i - 1, -1, -1):
                d0, d1 = perm[j], perm[j + 1]
                s0, s1 = strides[d0], strides[d1]
                if s0 == 0 or s1 == 0 or s0 < s1 or (s0 == s1 and sizes[d0] <= sizes[d1]):
                    break
                perm[j], perm[j + 1] = d1, d0
        return tuple(perm[::-1])

    def to_dense(self, dtype=None, *, masked_grad=None):
        """The tensor as a strided tensor: itself (cast to ``dtype`` if given), since ember's
        tensors are all strided.

        Args:
            dtype (ember.dtype, optional): the dtype of the result. Default: keep it.
            masked_grad (bool, optional): accepted for PyTorch compatibility. Keyword-only.

        Returns:
            Tensor: ``self``, or a cast copy.

        Example::

            >>> x = ember.ones(2)
            >>> x.to_dense() is x
            True
        """
        return self if dtype is None else self.to(dtype)

    def storage_type(self):
        """The legacy typed-storage class of this tensor's dtype (``ember.FloatStorage``...).

        Example::

            >>> ember.ones(2).storage_type()
            <class 'ember.FloatStorage'>
        """
        from .storage import legacy_storage_class

        return legacy_storage_class(self.dtype)

    def module_load(self, other, assign=False):
        """What ``nn.Module.load_state_dict`` stores for this parameter or buffer: ``other``
        detached when ``assign``, else ``self`` with ``other`` copied in, detached.

        Args:
            other (Tensor): the state-dict value for this tensor.
            assign (bool): the ``assign`` argument of ``load_state_dict``.

        Returns:
            Tensor

        Example::

            >>> ember.zeros(2).module_load(ember.ones(2))
            tensor([1., 1.])
        """
        if assign:
            return other.detach()
        return self.copy_(other).detach()

    # -- autograd fields (the engine lives in ember.autograd) -------------------------------------

    @property
    def requires_grad(self) -> bool:
        """Whether autograd records operations on this tensor; assignable on leaves.

        Example::

            >>> x = ember.ones(2)
            >>> x.requires_grad = True
            >>> (x * 2).requires_grad
            True
        """
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value):
        if type(self).requires_grad_ is not Tensor.requires_grad_:  # (sparse, nested)
            self.requires_grad_(value)
            return
        self.requires_grad_(value, _refusal=CONSTRUCTOR_REFUSAL.replace("O", "o", 1))

    def requires_grad_(self, requires_grad=True, *, _refusal=None):
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
            # torch words its three entrances differently (method, attribute, constructor)
            raise RuntimeError(_refusal or "only Tensors of floating point dtype can require "
                               "gradients")
        self._rg = requires_grad
        return self

    @property
    def grad_fn(self):
        """The autograd node that made this tensor (None for leaves and untracked results).

        Example::

            >>> x = ember.ones(2, requires_grad=True)
            >>> type((x * 2).grad_fn).__name__
            'MulBackward0'
            >>> x.grad_fn is None
            True
        """
        if self._base is not None and _view_refresh is not None:
            _view_refresh(self)  # NOTE [ View replay ] in ember/autograd/_nodes.py
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        """True for tensors autograd did not compute (created by the user, or not requiring grad).

        Example::

            >>> x = ember.ones(2, requires_grad=True)
            >>> x.is_leaf, (x * 2).is_leaf
            (True, False)
        """
        if self._base is not None and _view_refresh is not None:
            _view_refresh(self)
        return self._grad_fn is None

    @property
    def grad(self):
        """The gradient ``backward()`` accumulated into this leaf (None until then); assignable.

        Example::

            >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
            >>> (x * x).sum().backward()
            >>> x.grad
            tensor([2., 4.])
        """
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
    def grad_dtype(self):
        """The dtype ``.grad`` must have: the tensor's own dtype (None once set to None,
        allowing any). Only leaves may set it; ember's engine casts every gradient to the
        tensor's dtype, so setting another dtype raises NotImplementedError.

        Example::

            >>> ember.ones(2, requires_grad=True).grad_dtype
            ember.float32
        """
        return self.__dict__.get("_grad_dtype", self.dtype)

    @grad_dtype.setter
    def grad_dtype(self, value):
        if self._grad_fn is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is not None and value != self.dtype:
            raise NotImplementedError(
                f"grad_dtype: ember accumulates gradients in the tensor's own dtype "
                f"({self.dtype}); a gradient dtype of {value} is not supported yet")
        self.__dict__["_grad_dtype"] = value

    @property
    def retains_grad(self) -> bool:
        """Whether ``retain_grad()`` asked this non-leaf tensor to keep its ``grad``.

        Example::

            >>> y = ember.ones(2, requires_grad=True) * 2
            >>> y.retain_grad()
            >>> y.retains_grad
            True
        """
        try:
            return self._retains_grad
        except AttributeError:
            return False

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for single-output ops and leaves).

        Example::

            >>> ember.ones(2).output_nr
            0
        """
        try:
            return self._out_nr
        except AttributeError:
            return 0

    @property
    def is_inference(self):
        """``x.is_inference()``: whether the tensor was made under ``ember.inference_mode()``.

        Example::

            >>> with ember.inference_mode():
            ...     y = ember.ones(1) * 2
            >>> y.is_inference(), ember.ones(1).is_inference()
            (True, False)
        """
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
        _dt.refuse_opaque(self, "_local_scalar_dense_cpu")  # NOTE [ Opaque dtypes ]
        if a.size != 1:
            raise RuntimeError(
                f"a Tensor with {a.size} elements cannot be converted to Scalar")
        if type(a) is np.ndarray:
            return a.reshape(()).item()
        v = a.item()  # the host waits for the device: deferred checks are read now
        _checks.raise_pending()
        return v

    def item(self):
        """The single value of a one-element tensor as a Python number."""
        if sys.modules["ember._dispatch"].intercept:
            # a profile lists the read as PyTorch's ``aten::item`` event
            rec = sys.modules.get("ember.profiler._recorder")
            s = rec.recording_session() if rec is not None else None
            if s is not None:
                return s.scalar_read(self, self._item)
        v = self._scalar("item")  # (``_item``'s body, without a call on this path)
        if self._data.dtype == _dt.bfloat16.np:
            return float(v)
        return v

    def _item(self):
        """``item()`` without the profiler's event."""
        v = self._scalar("item")
        if self._data.dtype == _dt.bfloat16.np:
            return float(v)
        return v

    def __bool__(self):
        a = self._data
        if a.size != 1:
            raise RuntimeError("Boolean value of Tensor with "
                               f"{'no values' if a.size == 0 else 'more than one value'} "
                               "is ambiguous")
        if sys.modules["ember._dispatch"].intercept:
            # a profile lists the test as PyTorch's ``aten::is_nonzero`` event
            rec = sys.modules.get("ember.profiler._recorder")
            s = rec.recording_session() if rec is not None else None
            if s is not None:
                return s.truth_read(self, lambda: bool(a.reshape(()).item()))
        return bool(a.reshape(()).item())

    def _one_value(self):
        if self._data.size != 1:  # float(t) and int(t) raise ValueError in PyTorch
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self):
        if self._rg:
            _warn_scalar_of_grad()
        return float(self._one_value())

    def __int__(self):
        return int(self._one_value())

    def __complex__(self):
        if self._rg:
            _warn_scalar_of_grad()
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

        if _dt.from_np[self._data.dtype].is_quantized:  # NOTE [ Quantized tensors ]
            from ..ao._qtensor import _repr

            return _repr(self)
        return tensor_repr(self, tensor_contents)

    def __str__(self):
        return self.__repr__()

    def tolist(self):
        a = self._data
        if a.dtype in _dt._OPAQUE_NP:  # NOTE [ Opaque dtypes ]
            raise RuntimeError("load_scalar: invalid type")
        if type(a) is not np.ndarray:
            a = a.get()
            _checks.raise_pending()  # NOTE [ Deferred device checks ]
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
        if a.dtype in _dt._NO_MATH_NP and not force:  # as PyTorch (NOTE [ Float8 dtypes ])
            raise TypeError(f"Got unsupported ScalarType {_dt.from_np[a.dtype].scalar_name}")
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


def _warn_scalar_of_grad():
    # PyTorch warns once per process when float()/complex() reads a tensor that requires grad
    # while grad mode is on (optimizers read losses under no_grad, silently)
    from .._dispatch import state
    from .._settings import warn_once

    if state.grad_enabled:
        warn_once("Converting a tensor with requires_grad=True to a scalar may lead to "
                  "unexpected behavior.\nConsider using tensor.detach() first.", stacklevel=3)


def _address(a) -> int:
    return a.__array_interface__["data"][0] if type(a) is np.ndarray else a.data.ptr


def _empty_strides(shape):
    """The strides torch gives a new empty tensor of ``shape``: row-major, a size-0 dim
    counting as 1 (NumPy gives every dim of an empty array stride 0)."""
    out = []
    step = 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _is_contiguous(shape, strides, itemsize) -> bool:
    if 0 in shape:  # an empty tensor is contiguous (NumPy gives it zero strides), as torch
        return True
    expected = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def _wrap_dim(dim, ndim, op_name):
    from .checks import wrap_dim

    return wrap_dim(dim, ndim, op_name)
