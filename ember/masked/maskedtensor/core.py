"""``MaskedTensor``: a tensor whose elements are each either present or masked out.

NOTE [ MaskedTensor ]
A MaskedTensor *is* its data tensor (a Tensor subclass instance aliasing the data, with its
autograd history), carrying a boolean ``mask`` of the same shape; True marks the elements
that are present. It takes part in the ``__torch_function__`` protocol
(NOTE [ __torch_function__ ] in ember/_overrides.py), which sorts every call into:

- reductions (``sum``, ``mean``, ``amax``, ``amin``, ``argmax``, ``argmin``, ``prod``,
  ``all``, ``norm``, ``var``, ``std``): the masked reduction of ember.masked
  (NOTE [ Masked operations ]), masked where no present element was read;
- normalizations (``softmax``, ``log_softmax``, ``softmin``): the masked one, same mask;
- shape and view operations (indexing, ``reshape``, ``transpose``, ``cat`` ...): applied to
  the data and to the mask alike;
- dtype and device conversions: applied to the data, the mask kept;
- everything else, taken as element-wise: the masks of all MaskedTensor operands must be
  equal (ValueError otherwise, as PyTorch), and the result has that mask. A result whose
  shape is not the mask's is refused with TypeError.

Masked-out elements keep whatever data they hold, and element-wise ops compute on them too;
only printing (``--``), reductions and ``to_tensor`` look at the mask. Gradients reach the
data through the ordinary autograd graph; the ``grad`` of a MaskedTensor is a MaskedTensor
with its mask.
"""

from __future__ import annotations

import warnings
from typing import Any

import ember
from ember import Tensor
from ember._overrides import DisableTorchFunctionSubclass

__all__ = ["MaskedTensor", "is_masked_tensor"]

_SUPPORTED_DTYPES = (ember.float16, ember.float32, ember.float64, ember.bool, ember.int8,
                     ember.int16, ember.int32, ember.int64)

_REDUCTIONS = {"sum", "mean", "amax", "amin", "argmax", "argmin", "prod", "all", "norm",
               "var", "std"}
_NORMALIZATIONS = {"softmax", "log_softmax", "softmin"}
_SHAPE_OPS = {
    "_getitem", "__getitem__", "T", "mT", "t", "transpose", "permute", "reshape", "view",
    "flatten", "unflatten", "squeeze", "unsqueeze", "expand", "narrow", "select", "movedim",
    "moveaxis", "swapaxes", "swapdims", "flip", "contiguous", "clone", "detach", "roll",
    "repeat", "tile", "broadcast_to", "view_as", "reshape_as", "expand_as", "cat", "concat",
    "concatenate", "stack", "split", "chunk", "unbind", "tensor_split",
}
_CONVERSIONS = {"float", "double", "half", "bfloat16", "int", "long", "short", "bool", "byte",
                "char", "to", "type", "type_as", "cpu", "cuda"}


def is_masked_tensor(obj: Any, /) -> bool:
    """Whether ``obj`` is a :class:`MaskedTensor`.

    Args:
        obj: anything.

    Returns:
        bool: True for a MaskedTensor.

    Example::

        >>> ember.masked.is_masked_tensor(ember.ones(2))
        False
    """
    return isinstance(obj, MaskedTensor)


def _plain(t: Tensor) -> Tensor:
    """A plain Tensor aliasing ``t`` (with its autograd history)."""
    with DisableTorchFunctionSubclass():
        return t.as_subclass(Tensor)


def _wrap(data: Tensor, mask: Tensor) -> MaskedTensor:
    """A MaskedTensor aliasing ``data`` (keeping its history), without checks or copies."""
    with DisableTorchFunctionSubclass():
        out = data.as_subclass(MaskedTensor)
    out._masked_mask = _plain(mask)
    return out


def _format(value) -> str:
    return f"{value:8.4f}" if isinstance(value, float) else str(value)


def _rows(data: Tensor, mask: Tensor) -> str:
    """PyTorch's layout: one bracketed line per innermost row, ``--`` for masked-out."""
    if data.dim() == 1:
        values = data.tolist()
        present = mask.tolist()
        cells = [_format(v) for v in values]
        width = max((len(c) if p else 8 for c, p in zip(cells, present)), default=0)
        return "[" + ", ".join(c if p else "--".rjust(width) for c, p in zip(cells, present)) + "]"
    parts = ["\n".join("  " + line for line in _rows(d, m).split("\n"))
             for d, m in zip(data, mask)]
    return "[\n" + ",\n".join(parts) + "\n]"


def _masks_match(tensors) -> None:
    masks = [t.get_mask() for t in tensors if is_masked_tensor(t)]
    for m in masks[1:]:
        if m.dim() != masks[0].dim() or not bool(ember.eq(m, masks[0]).all()):
            raise ValueError("Input masks must match. If you need support for this, please "
                             "open an issue on Github.")


def _map(obj, fn):
    """``obj`` with every MaskedTensor inside (lists and tuples too) replaced by ``fn(it)``."""
    if is_masked_tensor(obj):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(o, fn) for o in obj)
    return obj


def _flat(args, kwargs):
    out = []
    for a in list(args) + list(kwargs.values()):
        out.extend(a if isinstance(a, (list, tuple)) else [a])
    return out


class MaskedTensor(Tensor):
    """A tensor with a boolean mask saying which of its elements are present.

    Reductions skip the masked-out elements, element-wise operations keep the mask, and
    printing shows ``--`` for them (see NOTE [ MaskedTensor ]). A prototype in PyTorch:
    creating one warns, as PyTorch's does.

    Args:
        data (Tensor): the values (strided; float16/32/64, bool or int8/16/32/64). Copied.
        mask (Tensor): a bool tensor of ``data``'s shape; True marks present elements. Copied.
        requires_grad (bool): whether autograd records operations on the result.

    Raises:
        TypeError: ``data`` or ``mask`` not a Tensor, a mask not bool, an unsupported dtype
            or layout.
        ValueError: ``data`` and ``mask`` differ in dimensions or shape.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> data = ember.tensor([[1., 2., 3.], [4., 5., 6.]])
        >>> mask = ember.tensor([[True, False, True], [False, False, True]])
        >>> mt = ember.masked.MaskedTensor(data, mask)
        >>> mt.sum(1)
        MaskedTensor(
          [  4.0000,   6.0000]
        )
    """

    def __new__(cls, data, mask, requires_grad=False):
        if is_masked_tensor(data) or not isinstance(data, Tensor):
            raise TypeError("data must be a Tensor")
        if is_masked_tensor(mask) or not isinstance(mask, Tensor):
            raise TypeError("mask must be a Tensor")
        warnings.warn(
            "The PyTorch API of MaskedTensors is in prototype stage and will change in the "
            "near future. Please open a Github issue for features requests and see our "
            "documentation on the torch.masked module for further information about the "
            "project.", UserWarning, stacklevel=2)
        if data.requires_grad:
            warnings.warn("It is not recommended to create a MaskedTensor with a tensor that "
                          "requires_grad. To avoid this, you can use data.detach().clone()",
                          UserWarning, stacklevel=2)
        _validate(data, mask)
        out = _wrap(data.detach().clone(), mask.clone())
        if requires_grad:
            with DisableTorchFunctionSubclass():
                out.requires_grad_(True)
        return out

    # -- the pieces --------------------------------------------------------------------

    def get_data(self) -> Tensor:
        """The data, masked-out elements included, as a plain Tensor (differentiable).

        Returns:
            Tensor: an alias of the data.

        Example::

            >>> import warnings; warnings.simplefilter("ignore")
            >>> mt = ember.masked.masked_tensor(ember.tensor([1., 2.]), ember.tensor([True, False]))
            >>> mt.get_data()
            tensor([1., 2.])
        """
        return _plain(self)

    def get_mask(self) -> Tensor:
        """The bool mask: True where an element is present.

        Returns:
            Tensor: the mask.

        Example::

            >>> import warnings; warnings.simplefilter("ignore")
            >>> mt = ember.masked.masked_tensor(ember.tensor([1., 2.]), ember.tensor([True, False]))
            >>> mt.get_mask()
            tensor([ True, False])
        """
        return self._masked_mask

    def to_tensor(self, value) -> Tensor:
        """A plain tensor with ``value`` in place of the masked-out elements.

        Args:
            value (number): the fill value.

        Returns:
            Tensor: the filled data.

        Example::

            >>> import warnings; warnings.simplefilter("ignore")
            >>> mt = ember.masked.masked_tensor(ember.tensor([1., 2.]), ember.tensor([True, False]))
            >>> mt.to_tensor(0)
            tensor([1., 0.])
        """
        return self.get_data().masked_fill(~self.get_mask(), value)

    def is_sparse_coo(self) -> bool:
        """False: ember's MaskedTensors are strided."""
        return False

    def is_sparse_csr(self) -> bool:
        """False: ember's MaskedTensors are strided."""
        return False

    @property
    def is_sparse(self) -> bool:
        """False: ember's MaskedTensors are strided."""
        return False

    @property
    def grad(self):
        """The gradient, as a MaskedTensor with this tensor's mask (None before backward)."""
        g = Tensor.grad.__get__(self)
        return None if g is None else _wrap(_plain(g), self.get_mask())

    @grad.setter
    def grad(self, value):
        if is_masked_tensor(value):
            value = value.get_data()
        Tensor.grad.__set__(self, value)

    def __repr__(self):
        data, mask = self.get_data(), self.get_mask()
        if data.dim() == 0:
            value = data.item()
            shown = _format(value) if bool(mask) else "--"
            return f"MaskedTensor({shown}, {bool(mask)})"
        body = "\n".join("  " + line for line in _rows(data, mask).split("\n"))
        return "MaskedTensor(\n" + body + "\n)"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self.get_data().detach(), self.get_mask(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = _rebuild(self.get_data().detach().clone(), self.get_mask().clone(),
                       self.requires_grad)
        memo[id(self)] = out
        return out

    # -- the protocol ------------------------------------------------------------------

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in _REDUCTIONS and args and is_masked_tensor(args[0]):
            return _reduce(name, args[0], args[1:], kwargs)
        if name in _NORMALIZATIONS and args and is_masked_tensor(args[0]):
            return _normalize(name, args[0], args[1:], kwargs)
        if name in _SHAPE_OPS:
            return _reshape(func, args, kwargs)
        if name in _CONVERSIONS and args and is_masked_tensor(args[0]):
            mask = args[0].get_mask()
            with DisableTorchFunctionSubclass():
                out = func(*_map(args, _plain), **_map(kwargs, _plain))
            return _wrap(out, mask) if isinstance(out, Tensor) else out
        return _elementwise(func, name, args, kwargs)


def _rebuild(data, mask, requires_grad):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MaskedTensor(data, mask, requires_grad)


def _validate(data: Tensor, mask: Tensor) -> None:
    if data.layout != mask.layout:
        raise TypeError("data and mask must have the same layout.")
    if data.layout != ember.strided:
        raise TypeError(f"data layout of {data.layout} is not supported.")
    if mask.dtype != ember.bool:
        raise TypeError("mask must have dtype bool.")
    if data.dtype not in _SUPPORTED_DTYPES:
        raise TypeError(f"{data.dtype} is not supported in MaskedTensor.")
    if data.dim() != mask.dim():
        raise ValueError("data.dim() must equal mask.dim()")
    if data.shape != mask.shape:
        raise ValueError("data.size() must equal mask.size()")


def _reduce(name, mt, args, kwargs):
    """A reduction method or function on a MaskedTensor (NOTE [ MaskedTensor ])."""
    from .. import _ops

    names = {"var": ("dim", "unbiased", "keepdim"), "std": ("dim", "unbiased", "keepdim"),
             "norm": ("p", "dim", "keepdim", "dtype")}.get(name, ("dim", "keepdim", "dtype"))
    bound = dict(zip(names, args))
    bound.update(kwargs)
    dim, keepdim = bound.pop("dim", None), bool(bound.pop("keepdim", False))
    data, mask = mt.get_data(), mt.get_mask()
    if name == "all":
        filled = ember.where(mask, data.to(ember.bool), True)
        dims = _ops._canonical_dim(dim, data.ndim)
        out = filled
        for d in reversed(dims):
            out = out.all(dim=d, keepdim=keepdim)
    elif name == "norm":
        p = bound.pop("p", "fro")
        out = _ops.norm(data, 2.0 if p in ("fro", None) else p, dim, keepdim=keepdim,
                        mask=mask, **bound)
    else:
        out = getattr(_ops, name)(data, dim, keepdim=keepdim, mask=mask, **bound)
    dims = _ops._canonical_dim(dim, data.ndim)
    return _wrap(out, _ops._any(mask, dims, keepdim))


def _normalize(name, mt, args, kwargs):
    from .. import _ops

    dim = args[0] if args else kwargs.get("dim")
    out = getattr(_ops, name)(mt.get_data(), dim, dtype=kwargs.get("dtype"), mask=mt.get_mask())
    return _wrap(out, mt.get_mask())


def _reshape(func, args, kwargs):
    """Apply a shape or view operation to the data and to the mask alike."""
    for a in _flat(args, kwargs):
        if isinstance(a, Tensor) and not is_masked_tensor(a) and a.dim() > 0:
            if func.__name__ in ("cat", "concat", "concatenate", "stack"):
                raise TypeError(f"{func.__name__}: expected MaskedTensors only, got a Tensor")
    with DisableTorchFunctionSubclass():
        data = func(*_map(args, _plain), **_map(kwargs, _plain))
        mask = func(*_map(args, MaskedTensor.get_mask), **_map(kwargs, MaskedTensor.get_mask))
    if isinstance(data, (tuple, list)):
        return type(data)(_wrap(d, m) for d, m in zip(data, mask))
    return _wrap(data, mask)


def _elementwise(func, name, args, kwargs):
    operands = [a for a in _flat(args, kwargs) if is_masked_tensor(a)]
    _masks_match(operands)
    mask = operands[0].get_mask() if operands else None
    in_place = name.endswith("_") and not name.endswith("__")
    with DisableTorchFunctionSubclass():
        if in_place:
            out = func(*args, **kwargs)
            return out
        out = func(*_map(args, _plain), **_map(kwargs, _plain))
    if mask is None or not isinstance(out, Tensor):
        return out
    if out.shape != mask.shape:
        raise TypeError(f"{name} is not supported for MaskedTensor: its result has shape "
                        f"{tuple(out.shape)}, the mask {tuple(mask.shape)}")
    return _wrap(out, mask)
