"""The nested tensor: a batch of tensors of different lengths, as one Tensor (``ember.nested``).

NOTE [ Nested tensors ]
A nested tensor holds ``B`` components whose shapes differ. It comes in PyTorch's two layouts:

- ``ember.jagged``: components differ in one dimension only, the *ragged* one. They are kept
  as one tensor, ``values``, the components concatenated along the ragged dimension, plus
  ``offsets`` (``B + 1`` int64 row boundaries) and, for a non-contiguous view made by
  ``narrow``, ``lengths``. Component ``i`` is ``values.narrow(r - 1, offsets[i], len_i)``
  where ``r`` (``_ragged_idx``) is the ragged dimension's index in the nested shape
  ``(B, ..., j, ...)``. Its size is a :class:`NestedInt` (printed ``j1``): one per offsets
  tensor, so two nested tensors combine elementwise only when they share their offsets, as
  in PyTorch.
- ``ember.strided`` (PyTorch's default for ``nested_tensor``): components may differ in every
  dimension; they are kept as a list of tensors and every op runs once per component.

A ``NestedTensor`` is a Tensor subclass taking part in the ``__torch_function__`` protocol
(NOTE [ __torch_function__ ] in ember/_overrides.py): each public function called on one is
handed to ``NestedTensor.__torch_function__``, which runs it on the values (elementwise ops,
``linear``, ``layer_norm``, softmax and reductions over a regular dimension, views that
leave the batch and ragged dimensions alone) or once per component (attention, matmul of
two nested tensors, softmax and reductions over the ragged dimension) and packs the
result back. Autograd needs nothing of its own: gradients flow through the ops on the
values, and a nested tensor's ``grad``/``grad_fn``/``requires_grad`` are its values'.
Ops PyTorch's nested tensors do not support raise ``NotImplementedError`` naming the op.
"""

from __future__ import annotations

import copy
import itertools

from .._core import dtype as _dt
from .._core.layout import jagged as _jagged, strided as _strided
from .._core.size import Size
from .._core.tensor import Tensor
from ..utils.weak import WeakIdKeyDictionary

__all__ = ["NestedTensor", "NestedInt"]

_ids = itertools.count(1)
#: offsets tensor -> its NestedInt (so nested tensors made from the same offsets match)
_nested_ints = WeakIdKeyDictionary()


class NestedInt:
    """The size of a jagged nested tensor's ragged dimension, printed ``j1``, ``j2``, ...

    It is one symbol per offsets tensor: equal only to itself (and to no int), so shapes
    of nested tensors made from different offsets compare unequal. A multiple (``4*j1``)
    appears in ``stride()``.

    Args:
        id_ (int, optional): the symbol's number. Default: the next free one.
        coeff (int): the multiple of the symbol this value stands for. Default: 1.

    Example:
        >>> import ember
        >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(4, 3)],
        ...                                 layout=ember.jagged)
        >>> nt.shape[1] == nt.shape[1], nt.shape[1] == 2
        (True, False)
    """

    __slots__ = ("id", "coeff")

    def __init__(self, id_=None, coeff=1):
        self.id = next(_ids) if id_ is None else id_
        self.coeff = coeff

    def __repr__(self):
        return f"j{self.id}" if self.coeff == 1 else f"{self.coeff}*j{self.id}"

    def __eq__(self, other):
        return isinstance(other, NestedInt) and (other.id, other.coeff) == (self.id, self.coeff)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(("NestedInt", self.id, self.coeff))

    def __mul__(self, k):
        if isinstance(k, int) and not isinstance(k, bool):
            return NestedInt(self.id, self.coeff * k)
        return NotImplemented

    __rmul__ = __mul__


def _nested_int(offsets) -> NestedInt:
    n = _nested_ints.get(offsets)
    if n is None:
        n = _nested_ints[offsets] = NestedInt()
    return n


# ------------------------------------------------------------------------------------------------
# construction


def _make(values=None, offsets=None, lengths=None, ragged_idx=1, comps=None,
          min_seqlen=None, max_seqlen=None):
    """A NestedTensor around ``values``/``offsets`` (jagged) or ``comps`` (strided)."""
    nt = object.__new__(NestedTensor)
    nt._rg = False
    nt._grad_fn = None
    nt._base = None
    nt._vc = None
    if comps is not None:
        nt._comps = list(comps)
        nt._values = nt._offsets = nt._lengths = None
        nt._ragged_idx = 1
        nt._data = (comps[0]._data if comps else None)
    else:
        nt._comps = None
        nt._values = values
        nt._offsets = offsets
        nt._lengths = lengths
        nt._ragged_idx = ragged_idx
        nt._data = values._data
    nt._min_seqlen_cache = min_seqlen
    nt._max_seqlen_cache = max_seqlen
    return nt


def from_components(comps, layout, keep_graph=True):
    """A nested tensor of ``comps`` in ``layout``; without ``keep_graph`` the values are a
    fresh leaf (``nested_tensor`` copies, ``as_nested_tensor`` keeps the graph)."""
    import ember

    if layout is _strided:
        if not keep_graph:
            comps = [c.detach().clone().contiguous() for c in comps]
        return _make(comps=comps)
    if not comps:
        raise RuntimeError("Cannot construct a nested tensor from an empty tensor list")
    dims = {c.dim() for c in comps}
    if len(dims) != 1:
        raise RuntimeError("When constructing a nested tensor, all tensors in list must have "
                           "the same dim")
    (d,) = dims
    if d == 0:
        raise RuntimeError("Cannot construct a jagged nested tensor from 0-dim components: "
                           "each component needs a ragged dimension")
    shapes = [tuple(c.shape) for c in comps]
    if any(s[1:] != shapes[0][1:] for s in shapes):
        raise RuntimeError(
            "Cannot represent given tensor list as a nested tensor with the jagged layout. "
            "Note that the jagged layout only allows for a single ragged dimension. For "
            "example: (B, *, D_0, D_1, ..., D_N), with ragged * dim.")
    lens = [s[0] for s in shapes]
    values = ember.cat(list(comps), 0) if len(comps) > 1 else comps[0].reshape(comps[0].shape)
    if not keep_graph:
        values = values.detach().clone()
    offsets = _offsets_of(lens, values.device)
    return _make(values, offsets, min_seqlen=min(lens), max_seqlen=max(lens))


def _offsets_of(lens, device=None):
    import ember

    off = [0]
    for n in lens:
        off.append(off[-1] + int(n))
    return ember.tensor(off, dtype=ember.int64, device=device)


# ------------------------------------------------------------------------------------------------
# the class


def _dim_of(nt, d, name):
    n = nt.dim()
    if not isinstance(d, int) or isinstance(d, bool):
        raise TypeError(f"{name}(): dim must be an int, got {type(d).__name__}")
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {d})")
    return d % n


class NestedTensor(Tensor):
    """A batch of tensors of different lengths held as one tensor (``ember.nested``).

    Made by :func:`ember.nested.nested_tensor`, :func:`~ember.nested.as_nested_tensor`,
    :func:`~ember.nested.nested_tensor_from_jagged`, :func:`~ember.nested.narrow` and
    :func:`~ember.nested.masked_select`; see NOTE [ Nested tensors ] for how it is kept and
    how ops run on it.

    Args:
        (none): the class is not called directly; the constructors above make instances.

    Example:
        >>> import ember
        >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(4, 3)],
        ...                                 layout=ember.jagged)
        >>> nt.shape, nt.is_nested
        (ember.Size([2, j..., 3]), True)
        >>> ember.nn.functional.linear(nt, ember.ones(5, 3)).to_padded_tensor(0.0).shape
        ember.Size([2, 4, 5])
    """

    # -- the parts ---------------------------------------------------------------------------

    def values(self):
        """The components concatenated along the ragged dimension (jagged layout).

        Returns:
            Tensor: a tensor sharing memory (and autograd history) with this nested tensor.

        Example:
            >>> import ember
            >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(4, 3)],
            ...                                 layout=ember.jagged)
            >>> nt.values().shape
            ember.Size([6, 3])
        """
        if self._values is None:
            raise RuntimeError("values(): only the jagged layout keeps its components as one "
                               "values tensor; use unbind() for a strided nested tensor")
        return self._values

    def offsets(self):
        """The ``B + 1`` int64 boundaries of the components in ``values()`` (jagged layout).

        Returns:
            Tensor: the offsets tensor.

        Example:
            >>> import ember
            >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(4, 3)],
            ...                                 layout=ember.jagged)
            >>> nt.offsets()
            tensor([0, 2, 6])
        """
        if self._values is None:
            raise RuntimeError("offsets(): only the jagged layout has offsets")
        return self._offsets

    def lengths(self):
        """The components' lengths when they do not fill ``values()`` (``narrow``), else None.

        Returns:
            Tensor or None.

        Example:
            >>> import ember
            >>> nt = ember.nested.nested_tensor([ember.ones(2, 3)], layout=ember.jagged)
            >>> nt.lengths() is None
            True
        """
        return self._lengths

    def _lens(self):
        if self._lengths is not None:
            return [int(v) for v in self._lengths.tolist()]
        off = self._offsets.tolist()
        return [int(off[i + 1]) - int(off[i]) for i in range(len(off) - 1)]

    @property
    def _max_seqlen(self):
        if self._max_seqlen_cache is None:
            lens = self._lens()
            self._max_seqlen_cache = max(lens) if lens else 0
        return self._max_seqlen_cache

    @property
    def _min_seqlen(self):
        if self._min_seqlen_cache is None:
            lens = self._lens()
            self._min_seqlen_cache = min(lens) if lens else 0
        return self._min_seqlen_cache

    def unbind(self, dim=0):
        """The components, as a tuple of tensors (views of the values for the jagged layout).

        Args:
            dim (int): must be 0, the batch dimension. Default: 0.

        Returns:
            tuple of Tensors.

        Example:
            >>> import ember
            >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(4, 3)],
            ...                                 layout=ember.jagged)
            >>> [c.shape for c in nt.unbind()]
            [ember.Size([2, 3]), ember.Size([4, 3])]
        """
        if dim != 0:
            raise RuntimeError("unbind(): nested tensor can only be unbound along dim 0")
        if self._comps is not None:
            return tuple(self._comps)
        r = self._ragged_idx - 1
        off = self._offsets.tolist()
        lens = self._lens()
        v = self._values
        return tuple(v.narrow(r, int(off[i]), lens[i]) for i in range(len(lens)))

    def __len__(self):
        if self._comps is not None:
            return len(self._comps)
        return int(self._offsets.shape[0]) - 1

    def __iter__(self):
        return iter(self.unbind())

    # -- metadata ----------------------------------------------------------------------------

    @property
    def is_nested(self):
        return True

    @property
    def layout(self):
        return _strided if self._comps is not None else _jagged

    @property
    def dtype(self):
        src = self._values if self._comps is None else (self._comps[0] if self._comps else None)
        return src.dtype if src is not None else _dt.float32

    @property
    def device(self):
        src = self._values if self._comps is None else (self._comps[0] if self._comps else None)
        import ember

        return src.device if src is not None else ember.device("cpu")

    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def dim(self):
        if self._comps is not None:
            return (self._comps[0].dim() + 1) if self._comps else 1
        return self._values.dim() + 1

    ndimension = dim

    @property
    def ndim(self):
        return self.dim()

    def _jagged_shape(self):
        v = list(self._values.shape)
        v[self._ragged_idx - 1] = _nested_int(self._offsets)
        return tuple.__new__(Size, [len(self)] + v)

    @property
    def shape(self):
        if self._comps is not None:
            raise RuntimeError("Internal error: NestedTensorImpl doesn't support sizes. A "
                               "strided nested tensor has no shape: use size(dim) on a "
                               "regular dimension, or the jagged layout")
        return self._jagged_shape()

    def size(self, dim=None):
        if self._comps is None:
            s = self._jagged_shape()
            return s if dim is None else s[_dim_of(self, dim, "size")]
        if dim is None:
            raise RuntimeError("Internal error: NestedTensorImpl doesn't support sizes. A "
                               "strided nested tensor has no shape: use size(dim) on a "
                               "regular dimension, or the jagged layout")
        d = _dim_of(self, dim, "size")
        if d == 0:
            return len(self._comps)
        sizes = {int(c.shape[d - 1]) for c in self._comps}
        if len(sizes) != 1:
            raise RuntimeError(f"Given dimension {d} is irregular and does not have a size.")
        return sizes.pop()

    def numel(self):
        return sum(c.numel() for c in self.unbind())

    def stride(self, dim=None):
        if self._comps is not None:
            raise RuntimeError("stride(): a strided nested tensor's components have strides "
                               "of their own; call stride() on them (unbind())")
        v = self._values
        r = self._ragged_idx - 1
        st = list(v.stride())
        j = _nested_int(self._offsets)
        # the batch step is one component's whole extent: the ragged size times its stride
        batch = j * st[r] if st[r] else 0
        out = tuple([batch] + st)
        return out if dim is None else out[_dim_of(self, dim, "stride")]

    def is_contiguous(self, memory_format=None):
        if self._comps is not None:
            return all(c.is_contiguous() for c in self._comps)
        return self._lengths is None and self._values.is_contiguous()

    # -- autograd ----------------------------------------------------------------------------

    def _leaves(self):
        return [self._values] if self._comps is None else list(self._comps)

    @property
    def requires_grad(self):
        return any(t.requires_grad for t in self._leaves())

    @requires_grad.setter
    def requires_grad(self, flag):
        for t in self._leaves():
            t.requires_grad = flag

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        return self._leaves()[0].grad_fn if self._leaves() else None

    @property
    def is_leaf(self):
        return all(t.is_leaf for t in self._leaves())

    @property
    def grad(self):
        if self._comps is not None:
            gs = [c.grad for c in self._comps]
            return None if all(g is None for g in gs) else _make(comps=gs)
        g = self._values.grad
        return None if g is None else _like(self, g)

    @grad.setter
    def grad(self, value):
        if value is None:
            for t in self._leaves():
                t.grad = None
            return
        for t, g in zip(self._leaves(), _parts(value, self)):
            t.grad = g

    def retain_grad(self):
        for t in self._leaves():
            t.retain_grad()

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        import ember

        if gradient is None:
            raise RuntimeError("grad can be implicitly created only for scalar outputs: pass "
                               "a nested gradient to backward() of a nested tensor")
        outs, grads = self._leaves(), _parts(gradient, self)
        ember.autograd.backward(outs, grads, retain_graph=retain_graph,
                                create_graph=create_graph, inputs=_flat_inputs(inputs))

    # -- copies and conversions ---------------------------------------------------------------

    def detach(self):
        return _map_parts(self, lambda t: t.detach())

    def detach_(self):
        for t in self._leaves():
            t.detach_()
        return self

    def clone(self, *, memory_format=None):
        if self._comps is not None:
            return _make(comps=[c.clone() for c in self._comps])
        if self._lengths is not None:
            return from_components([c.clone() for c in self.unbind()], _jagged)
        return _like(self, self._values.clone())

    def contiguous(self, memory_format=None):
        if self.is_contiguous():
            return self
        if self._comps is not None:
            return _make(comps=[c.contiguous() for c in self._comps])
        if self._lengths is not None:
            return from_components(list(self.unbind()), _jagged)
        return _like(self, self._values.contiguous())

    def to_padded_tensor(self, padding, output_size=None):
        """A dense tensor of the components, each padded with ``padding`` to the largest size.

        Args:
            padding (float): the fill value.
            output_size (tuple of ints, optional): the result's shape, at least the largest
                component's. Default: the largest component's.

        Returns:
            Tensor of shape ``(B, *max_sizes)`` (or ``output_size``).

        Example:
            >>> import ember
            >>> nt = ember.nested.nested_tensor([ember.ones(1), ember.ones(3)])
            >>> nt.to_padded_tensor(0.0)
            tensor([[1., 0., 0.],
                    [1., 1., 1.]])
        """
        return to_padded_tensor(self, padding, output_size)

    def __deepcopy__(self, memo):
        if self._comps is not None:
            out = _make(comps=[copy.deepcopy(c, memo) for c in self._comps])
        else:
            out = _make(copy.deepcopy(self._values, memo), self._offsets.clone(),
                        None if self._lengths is None else self._lengths.clone(),
                        self._ragged_idx, min_seqlen=self._min_seqlen_cache,
                        max_seqlen=self._max_seqlen_cache)
        memo[id(self)] = out
        return out

    def numpy(self, *, force=False):
        raise RuntimeError(".numpy() is not supported for nested tensors: convert the "
                           "components (unbind()) or to_padded_tensor() first")

    def tolist(self):
        if self._comps is not None:
            return [c.tolist() for c in self._comps]
        raise RuntimeError(".tolist() is not supported for tensor subclasses, got NestedTensor")

    def item(self):
        raise RuntimeError("item() is not supported for nested tensors")

    # -- printing ----------------------------------------------------------------------------

    def __repr__(self):
        if self._comps is not None:
            if not self._comps:
                return "nested_tensor([\n\n])"
            body = ",\n".join("  " + repr(c).replace("\n", "\n  ") for c in self._comps)
            return f"nested_tensor([\n{body}\n])"
        size = "(" + ", ".join(str(s) for s in self._jagged_shape()) + ")"
        parts = [f"size={size}", f"offsets={self._offsets!r}"]
        if self.grad_fn is not None:
            parts.append(f"grad_fn={self.grad_fn!r}")
        elif self.requires_grad:
            parts.append("requires_grad=True")
        parts.append(f"contiguous={self.is_contiguous()}")
        return f"NestedTensor({', '.join(parts)})"

    __str__ = __repr__

    def __format__(self, spec):
        return repr(self) if not spec else format(repr(self), spec)

    def __bool__(self):
        raise RuntimeError("Boolean value of a nested tensor is ambiguous")

    def __reduce_ex__(self, proto):
        if self._comps is not None:
            return (_rebuild, ("strided", [c.detach() for c in self._comps]))
        return (_rebuild, ("jagged", (self._values.detach(), self._offsets, self._lengths,
                                      self._ragged_idx)))

    # -- the protocol --------------------------------------------------------------------------

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from ._ops import run

        return run(func, args, kwargs or {})


def _rebuild(kind, parts):
    if kind == "strided":
        return _make(comps=parts)
    values, offsets, lengths, r = parts
    return _make(values, offsets, lengths, r)


def _like(nt, values, ragged_idx=None):
    """A jagged nested tensor with ``nt``'s structure around new ``values``."""
    return _make(values, nt._offsets, nt._lengths,
                 nt._ragged_idx if ragged_idx is None else ragged_idx,
                 min_seqlen=nt._min_seqlen_cache, max_seqlen=nt._max_seqlen_cache)


def _map_parts(nt, fn):
    if nt._comps is not None:
        return _make(comps=[fn(c) for c in nt._comps])
    return _like(nt, fn(nt._values))


def _parts(value, like):
    """The leaves of ``value`` matching ``like``'s (values, or components)."""
    if isinstance(value, NestedTensor):
        return value._leaves()
    if like._comps is not None:
        return [value[i] for i in range(len(like._comps))]
    raise RuntimeError("expected a nested tensor with the same structure")


def _flat_inputs(inputs):
    if inputs is None:
        return None
    if isinstance(inputs, Tensor):
        inputs = [inputs]
    out = []
    for t in inputs:
        out.extend(t._leaves() if isinstance(t, NestedTensor) else [t])
    return out


def to_padded_tensor(input, padding, output_size=None):
    """See :meth:`NestedTensor.to_padded_tensor`."""
    import ember

    if not isinstance(input, NestedTensor):
        raise RuntimeError("to_padded_tensor(): expected a nested tensor")
    comps = input.unbind()
    if not comps:
        return ember.empty(0 if output_size is None else output_size, dtype=input.dtype)
    nd = comps[0].dim()
    sizes = [max(int(c.shape[d]) for c in comps) for d in range(nd)]
    if output_size is not None:
        output_size = tuple(int(s) for s in output_size)
        if len(output_size) != nd + 1 or output_size[0] != len(comps) or any(
                o < s for o, s in zip(output_size[1:], sizes)):
            raise RuntimeError(
                f"to_padded_tensor(): output_size {list(output_size)} is smaller than the "
                f"nested tensor's padded size {[len(comps)] + sizes} or of another rank")
        sizes = list(output_size[1:])
    rows = []
    for c in comps:
        pad = []
        for d in reversed(range(nd)):
            pad += [0, sizes[d] - int(c.shape[d])]
        rows.append(ember.nn.functional.pad(c, pad, value=padding) if any(pad) else c)
    return ember.stack(rows)
