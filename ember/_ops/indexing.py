"""Indexing: ``t[idx]``, ``t[idx] = v`` and index_put.

The rest of the family: gather/scatter and the ``index_*`` ops in ``scatter.py``; masked
ops, take/put and nonzero in ``masked.py``. The helpers they share are at the top of this
file (argument checks, the in-place runner, the forward-mode rule of linear ops).

NOTE [ How t[idx] is split ]
PyTorch applies the basic parts of an index (ints, slices, None, Ellipsis, 0-dim integer
tensors) first, as a view, and only then the advanced parts (integer and bool tensors,
lists, NumPy arrays, Python bools) on that view. NumPy treats an int next to an advanced
index as advanced too, which moves the result dims around (``x[0, :, [1, 2]]`` is (3, 2) in
PyTorch and (2, 3) in NumPy). So ``_parse_index`` splits the index in two:

- ``basic``: a tuple for NumPy basic indexing -- every advanced slot replaced by ``:`` --
  always ending in an Ellipsis so a full integer index gives a 0-dim *array* view, never a
  NumPy scalar. This is the view op ``_getitem``.
- ``spec`` + ``tensors``: the advanced step over the view's dims -- ``:`` where a basic
  index was (ints vanished), and the placeholder ``_T`` where the next index tensor goes.
  NumPy's rule for where advanced result dims land (together in place if adjacent, else
  first) is PyTorch's rule once the ints are gone. This is the copy op ``_index``.

Gradients: ``_getitem``'s vjp is ``_getitem_backward`` (scatter into zeros), whose own vjp
is ``_getitem`` again, so double backward works; ``_index``'s vjp is ``_index_put`` with
accumulate into zeros, whose vjp w.r.t. the values is ``_index`` again.
"""

from __future__ import annotations

import operator
import re

import numpy as np

from .. import _dispatch, _overrides
from .._dispatch import slow as _slow
from .._overrides import _active as _tf_active
from .._core import dtype as _dt
from .._core.checks import holds_values
from .._core.tensor import Tensor, _address, wrap
from ._registry import Op, public
from ._xp_compat import ufunc_at

_new = object.__new__
_FULL = slice(None)
_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))
_UNSIGNED = {np.dtype(np.int64): np.uint64, np.dtype(np.int32): np.uint32,
             np.dtype(np.int16): np.uint16, np.dtype(np.int8): np.uint8,
             np.dtype(np.uint8): np.uint8}


class _Placeholder:
    """Marks the slot of an index tensor inside a spec (see NOTE [ How t[idx] is split ])."""

    __slots__ = ()

    def __repr__(self):
        return "<index tensor>"


_T = _Placeholder()


# ------------------------------------------------------------------------------------------------
# helpers shared with scatter.py


def type_name(d) -> str:
    """PyTorch's C++ scalar type name ('Float', 'Long') of a NumPy dtype, for messages."""
    return _dt.from_np[d].scalar_name


def check_tensor(op_name, x, arg):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op_name}(): argument '{arg}' must be Tensor, not {type(x).__name__}")


def same_device(op_name, first, *others):
    """The arrays of ``others`` on ``first``'s device (zero-dim CPU tensors move, as scalars
    do; anything else on another device is an error)."""
    at = type(first._data)
    out = []
    for t in others:
        if t is not None and type(t._data) is not at:
            if t._data.ndim == 0 or type(t._data) is not np.ndarray:
                t = t.to(first.device)
            else:
                raise _dispatch.device_mismatch(op_name, first._data, t._data)
        out.append(t)
    return out


def check_index_dtype(op_name, index, message=None):
    """Index tensors of gather-like ops must be int64 or int32."""
    check_tensor(op_name, index, "index")
    if index._data.dtype not in _INDEX_DTYPES:
        raise RuntimeError(message or f"{op_name}(): Expected dtype int32/int64 for index, "
                                      f"but got {type_name(index._data.dtype)}")


def check_bounds(op_name, idx, size, dim, *, exc=RuntimeError, negative=False, named=False):
    """Every entry of the index array ``idx`` lies in [0, size) ([-size, size) when
    ``negative``); else raise PyTorch's out-of-bounds error naming the first bad entry
    ("index 5 is out of bounds for dimension 0 with size 3", after ``op_name: `` only when
    ``named``, as PyTorch writes it for a few ops)."""
    if idx.size == 0:
        return
    lo = -size if negative else 0
    if idx.size <= 32 and type(idx) is np.ndarray:
        # a few entries: Python's min/max beat NumPy reductions' fixed cost several times
        flat = idx.ravel().tolist()
        bad = min(flat) < lo or max(flat) >= size
    elif not holds_values(idx):
        return  # meta: no values to check
    elif negative:
        bad = int(idx.min()) < lo or int(idx.max()) >= size
    else:
        # one pass: read as unsigned, negative entries become huge
        bad = int(idx.view(_UNSIGNED[idx.dtype]).max()) >= size
    if bad:
        flat = idx.reshape(-1)
        bad = int(flat[((flat < lo) | (flat >= size)).argmax()])
        where = f"{op_name}: " if named else ""
        raise exc(f"{where}index {bad} is out of bounds for dimension {dim} with size {size}")


def check_no_overlap(op_name, dst, src, *, allow_full=False):
    """PyTorch refuses in-place writes whose source overlaps the destination's memory (a
    source that *is* the destination is fine for plain copies: ``allow_full``)."""
    if src is None:
        return
    d = dst._data if isinstance(dst, Tensor) else dst
    s = src._data if isinstance(src, Tensor) else src
    if d.size == 0 or s.size == 0 or not _dispatch.xp_of(d).may_share_memory(d, s):
        return
    if allow_full and d.shape == s.shape and d.strides == s.strides and \
            _address(d) == _address(s):
        return
    raise RuntimeError(
        f"{op_name}: unsupported operation: some elements of the input tensor and the "
        "written-to tensor refer to a single memory location. Please clone() the tensor "
        "before performing the operation.")


_inplace_handles: dict = {}


def _inplace_handle(op, name, mutate):
    """The OpOverload of the in-place op ``name`` running ``op`` (and its mutation): one
    per op, since one name may stand for several (``scatter_reduce_``'s reductions), and
    the modes read ``handle.op`` (vmap, forward AD). The packet's ``default`` stays the
    first one made."""
    h = _inplace_handles.get((name, op))
    if h is None:
        def run(*inputs, **params):
            return inplace_or_not(op, name, inputs[0], inputs, params, mutate)

        if not any(k[0] == name for k in _inplace_handles):
            h = _dispatch.overload("aten", name, "default", run, op, is_inplace=True)
        else:
            p = _dispatch.packet("aten", name, op)
            first = p._overloads.get("default")
            h = _dispatch.OpOverload(p, "default", run, op, is_inplace=True)
            if first is not None:
                p._add(first)
        _inplace_handles[(name, op)] = h
    return h


def inplace_or_not(op, name, self, inputs, params, mutate):
    """Run in-place ``name`` on ``self`` (= ``inputs[0]``).

    When autograd must record, the op runs out of place and its result is committed into
    ``self`` (``commit_inplace_result``: autograd's checks first, then history rewriting);
    otherwise ``mutate(xp, self_array, *other_arrays, **params)`` writes straight into self.
    """
    if _dispatch.intercept and _dispatch.state.modes:
        return _dispatch.through_modes(_inplace_handle(op, name, mutate), tuple(inputs), params)
    if _dispatch.record is not None and _dispatch.needs_grad(inputs):
        return _dispatch.commit_inplace_result(
            name, self, lambda: _dispatch.apply(op, inputs, params))
    if self._rg and _dispatch.check_inplace is not None:
        _dispatch.check_inplace(self, name)
    _dispatch.check_overlap(name, self)
    sd = self._data
    xp = _dispatch.backends_by_type[type(sd)].xp
    mutate(xp, sd, *[None if t is None else t._data for t in inputs[1:]], **params)
    self._bump()
    return self


def linear_jvp(op, data, zero_params=()):
    """The forward-mode rule of an op that is linear in its data inputs (positions ``data``)
    once the number params named in ``zero_params`` are zeroed (an affine fill value):
    the op applied to the tangents, zeros standing in for missing ones."""

    def jvp(x_dots, *inputs, out=None, **params):
        if all(x_dots[k] is None for k in data):
            return None
        args = list(inputs)
        for k in data:
            if inputs[k] is not None:
                t = x_dots[k]
                args[k] = t if t is not None else zeros_of(inputs[k]._data.shape, inputs[k])
        for name in zero_params:
            if params.get(name) is not None:
                params[name] = 0
        return _dispatch.apply(op, tuple(args), params)

    op.defjvp(jvp)
    return jvp


def _input_link_kernel(xp, gx, _x):
    return gx.copy()


def _input_link_vjp(g, _gx, x):
    return g, x.new_zeros(tuple(x.shape))


input_link_op = Op("_input_link", _input_link_kernel, vjp=_input_link_vjp)
input_link_op.shape_only = (1,)  # the zero derivative reads only the input's shape
linear_jvp(input_link_op, (0,))


def grad_linked_to(gx, x):
    """``gx`` (a gradient a derivative formula computed without reading ``x``'s values),
    recorded as a function of the forward input ``x`` with a zero derivative when the
    formula builds a graph (``create_graph``) and ``x`` takes part in autograd.

    PyTorch's backward kernels of pooling, reflect/replicate padding and ``nll_loss`` take
    the forward input, so a second derivative through them is a tensor of zeros for that
    input (a gradient penalty through a max-pooling network runs), never absent.

    Args:
        gx: the computed gradient.
        x: the forward input (as saved), or None.

    Returns:
        ``gx`` itself, or its copy recorded as depending on ``x``.

    Example::

        >>> x = ember.randn(1, 1, 4, requires_grad=True)
        >>> g, = ember.autograd.grad(ember.nn.functional.max_pool1d(x, 2).sum(), x,
        ...                          create_graph=True)
        >>> g.requires_grad
        True
    """
    if x is None or not x._rg or not _dispatch.state.grad_enabled:
        return gx
    return _dispatch.apply(input_link_op, (gx, x), {})


def multilinear_jvp(op, factors, additive=()):
    """The forward-mode rule of an op linear in each input at ``factors`` separately (a
    product: matmul, convolution, outer) plus a term linear in the inputs at ``additive``
    (a bias): ``sum_i op(.., x_dot_i, ..)`` with the additive inputs zeroed, plus the op with
    the factors zeroed and the additive inputs replaced by their tangents. ``factors`` None:
    every input is a factor (einsum's operands)."""

    def jvp(x_dots, *inputs, out=None, **params):
        total = None
        for k in range(len(inputs)) if factors is None else factors:
            if x_dots[k] is None:
                continue
            args = list(inputs)
            args[k] = x_dots[k]
            for a in additive:
                if args[a] is not None:
                    args[a] = zeros_of(inputs[a]._data.shape, inputs[a])
            t = _dispatch.apply(op, tuple(args), dict(params))
            total = t if total is None else total + t
        if any(x_dots[a] is not None for a in additive):
            args = list(inputs)
            for k in factors:
                args[k] = zeros_of(inputs[k]._data.shape, inputs[k])
            for a in additive:
                if args[a] is not None:
                    d = x_dots[a]
                    args[a] = d if d is not None else zeros_of(inputs[a]._data.shape, inputs[a])
            t = _dispatch.apply(op, tuple(args), dict(params))
            total = t if total is None else total + t
        return total

    op.defjvp(jvp)
    return jvp


def zeros_of(shape, like):
    """A constant zero tensor of ``shape`` with ``like``'s dtype and device (for formulas)."""
    a = like._data
    return wrap(_dispatch.backends_by_type[type(a)].xp.zeros(shape, a.dtype))


# ------------------------------------------------------------------------------------------------
# basic getitem: a view (and its backward, a scatter into zeros)


def _getitem_kernel(xp, a, *, idx, shape):
    return a[idx]


def _getitem_vjp(g, _a, *, idx, shape):
    return _dispatch.apply(getitem_backward_op, (g,), {"idx": idx, "shape": shape})


def _getitem_backward_kernel(xp, g, *, idx, shape):
    z = xp.zeros(shape, g.dtype)
    z[idx] = g
    return z


def _getitem_backward_vjp(gg, _g, *, idx, shape):
    return _dispatch.apply(getitem_op, (gg,), {"idx": idx, "shape": shape})


getitem_op = Op("_getitem", _getitem_kernel, vjp=_getitem_vjp, linear=True, view_of=0)
getitem_backward_op = Op("_getitem_backward", _getitem_backward_kernel,
                         vjp=_getitem_backward_vjp, linear=True)


_NUMPY_BOUNDS = re.compile(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)")
_NUMPY_INDEX_BROADCAST = re.compile(
    r"shape mismatch: indexing arrays could not be broadcast together with shapes (.*)")


def _index_broadcast_message(numpy_shapes):
    """torch's words for index tensors whose shapes do not broadcast (NumPy lists the shapes
    as tuples, ``(2,) (3,)``; torch as lists, ``[2], [3]``)."""
    shapes = re.findall(r"\(([^)]*)\)", numpy_shapes)
    listed = ", ".join("[" + ", ".join(p.strip() for p in sh.split(",") if p.strip()) + "]"
                       for sh in shapes)
    return f"shape mismatch: indexing tensors could not be broadcast together with shapes {listed}"


def _advanced_index_error(e, spec, ndim):
    """PyTorch's error for NumPy's out-of-bounds ``e`` in an advanced-indexing step.

    PyTorch moves the indexed dimensions to the front before it reads, so its message counts
    the dimension among the tensor indices (``x[:, t]`` with a bad entry in ``t`` reports
    dimension 0), where NumPy names the axis of the tensor."""
    m = _NUMPY_BOUNDS.fullmatch(str(e))
    if m is None:
        b = _NUMPY_INDEX_BROADCAST.match(str(e))
        if b is not None:
            return IndexError(_index_broadcast_message(b.group(1)))
        return IndexError(str(e).replace("axis", "dimension"))
    dim = axis = int(m.group(2))
    if spec is not None and ndim is not None:
        # the spec's entries in the tensor's dims (an ellipsis spans the dims it stands for)
        per_dim = []
        for s in spec:
            per_dim.extend([_FULL] * (ndim - len(spec) + 1) if s is Ellipsis else [s])
        dim = sum(1 for s in per_dim[:axis] if not isinstance(s, slice))
    return IndexError(f"index {m.group(1)} is out of bounds for dimension {dim} with size "
                      f"{m.group(3)}")


def _view(self, r):
    """Wrap ``r``, a NumPy view of ``self._data``, as a view tensor of ``self``."""
    t = _new(Tensor)
    t._data = r
    t._rg = False
    t._grad_fn = None
    base = self._base
    if base is None:
        base = self
    vc = base._vc
    if vc is None:
        vc = base._vc = [0]
    t._base = base
    t._vc = vc
    if self._ng_view or (base._rg or self._rg) and not _dispatch.state.grad_enabled:
        _dispatch.mark_no_grad_view(self, t)
    return t


def _int_error(a, i, dim=0):
    # (torch words index 0 of a 0-dim tensor on its own; any other int as out of bounds
    # of a dim of size 0)
    if a.ndim == 0 and i == 0:
        return IndexError(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
            "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    return IndexError(f"index {i} is out of bounds for dimension {dim} with size "
                      f"{a.shape[dim] if a.ndim else 0}")


_ZERO_DIM_SLICE = "slice() cannot be applied to a 0-dim tensor."


def _getitem(self, idx):
    """``self[idx]``. See NOTE [ How t[idx] is split ]."""
    a = self._data
    if _slow[0]:  # a mode, __torch_function__ or a replaced CPU kernel: one test for all
        if _tf_active[0]:  # NOTE [ __torch_function__ ]: made here, it saves a frame
            r = _overrides.handle(_getitem, (self, idx), {})
            if r is not _overrides.NOT_HANDLED:
                return r
        if _dispatch.intercept and _dispatch.state.modes:
            return _dispatch.through_modes(_GETITEM, (self, idx), {})
        if not getitem_op.builtin_cpu and type(a) is np.ndarray:
            return _getitem_through_kernels(self, idx)
    tp = type(idx)
    # Fast path: one int or slice is a NumPy basic index plus one wrap (NOTE [ Hot path ]).
    if tp is int:
        try:
            r = a[idx, ...]
        except IndexError:
            raise _int_error(a, idx) from None
        t = _view(self, r)
        if self._rg and _dispatch.record is not None and _dispatch.state.grad_enabled:
            _dispatch.record(getitem_op, (self,), {"idx": (idx, ...), "shape": a.shape}, t)
        return t
    if tp is slice:
        step = idx.step
        if step is not None and step <= 0:
            _bad_step(step)
        if a.ndim == 0:
            raise IndexError(_ZERO_DIM_SLICE)
        r = a[idx]
        if not r.size:
            r = _empty_basic(a, idx, r)
        t = _view(self, r)
        if self._rg and _dispatch.record is not None and _dispatch.state.grad_enabled:
            # ``(idx,)``, not ``(idx, ...)`` as a tuple key records: a bare slice is PyTorch's
            # ``slice`` even over a whole dim (``is_bare_slice`` in _node_names.py)
            _dispatch.record(getitem_op, (self,), {"idx": (idx,), "shape": a.shape}, t)
        return t
    if tp is Tensor:
        d = idx._data
        if d.dtype in _INDEX_DTYPES and d.ndim and type(d) is type(a) and a.ndim:
            # one integer index tensor: a gather along dim 0 (the advanced step alone)
            try:
                return _dispatch.apply(index_op, (self, idx),
                                       {"spec": (_T,), "shape": a.shape})
            except IndexError as e:
                raise IndexError(str(e).replace("axis", "dimension")) from None
    if idx is None or idx is Ellipsis or tp is tuple and _all_basic(idx):
        key = idx if tp is not tuple else idx if Ellipsis in idx else idx + (...,)
        try:
            r = a[key]
        except IndexError:  # out of bounds or too many indices: the general path says which
            r = None
        if r is not None:
            if not r.size:
                r = _empty_basic(a, key, r)
            elif idx is None or tp is tuple and None in idx:
                r = _new_axes_strides(a, key, r)
            t = _view(self, r)
            if self._rg and _dispatch.record is not None and _dispatch.state.grad_enabled:
                _dispatch.record(getitem_op, (self,), {"idx": key, "shape": a.shape}, t)
            return t
    if _tf_active[0] and not _slow[0]:
        # a subclass index (NOTE [ Subclasses found by their type ] in ember/_overrides.py)
        r = _overrides.handle(_getitem, (self, idx), {})
        if r is not _overrides.NOT_HANDLED:
            return r
    basic, is_trivial, spec, tensors = _parse_index(self, idx)
    if is_trivial and spec is not None:
        t = self  # nothing to view: the advanced step reads self directly
    else:  # (x[...] and x[:] are new views, never self)
        r = a[basic]
        if not r.size:
            r = _empty_basic(a, basic, r)
        elif type(basic) is tuple and None in basic:
            r = _new_axes_strides(a, basic, r)
        t = _view(self, r)
        if self._rg and _dispatch.record is not None and _dispatch.state.grad_enabled:
            _dispatch.record(getitem_op, (self,), {"idx": _recorded_key(idx, basic),
                                                   "shape": a.shape}, t)
    if spec is None:
        return t
    try:
        return _dispatch.apply(index_op, (t,) + tensors, {"spec": spec, "shape": t._data.shape})
    except IndexError as e:
        raise _advanced_index_error(e, spec, t._data.ndim) from None


def _empty_basic(a, key, r):
    """``a[key]`` for an empty result ``r``, with the strides torch derives from ``a``'s
    (NOTE [ Strides of empty views ] in ember/_dispatch.py): NumPy zeroes them, and keeps a
    zero-size dim's stride through a stepped slice."""
    if type(a) is not np.ndarray or not r.ndim:
        return r
    return _torch_strided(a, key, r)


def _new_axes_strides(a, key, r):
    """``r = a[key]`` with each dim a ``None`` in ``key`` adds given torch's stride where
    NumPy gives 0."""
    if type(a) is not np.ndarray:
        return r
    return _torch_strided(a, key, r)


def _torch_strided(a, key, r):
    """``r = a[key]`` (a basic key) restrided as torch's indexing lays it out. torch reads
    the key left to right: a ``None`` unsqueezes at the current dim (stride: that dim's size
    times its stride, 1 past the last dim) before later ints select and slices narrow (a
    slice's step multiplies the stride even of an empty dim), so the key is replayed on
    ``a``'s sizes and strides (``Tensor.stride``'s, for an empty ``a`` too)."""
    if type(key) is not tuple:
        key = (key,)
    if Ellipsis not in key:
        key = key + (Ellipsis,)
    fill = a.ndim - sum(1 for k in key if k is not None and k is not Ellipsis)
    item = a.itemsize
    sizes = list(a.shape)
    strides = [st // item for st in a.strides]
    if not a.size and not any(strides):
        from .._core.tensor import _empty_strides

        strides = list(_empty_strides(a.shape))
    pos = offset = 0
    for k in key:
        if k is None:
            st = sizes[pos] * strides[pos] if pos < len(sizes) else 1
            sizes.insert(pos, 1)
            strides.insert(pos, st)
            pos += 1
        elif k is Ellipsis:
            pos += fill
        elif type(k) is int:
            offset += (k + sizes[pos] if k < 0 else k) * strides[pos]
            del sizes[pos], strides[pos]
        else:
            rng = range(sizes[pos])[k]
            offset += rng.start * strides[pos]
            sizes[pos] = len(rng)
            strides[pos] *= k.step or 1
            pos += 1
    if tuple(sizes) != r.shape:  # (a key the fast path would not have taken)
        return r
    from .shape import _StridedInterface, _restride

    if r.size:
        return _restride(np, r, r.shape, strides)
    # an empty result: NumPy also leaves its data pointer at ``a``'s first element, where
    # torch's storage offset moves past the elements the key skips
    iface = a.__array_interface__
    iface["data"] = (iface["data"][0] + offset * item, iface["data"][1])
    iface["shape"] = r.shape
    iface["strides"] = tuple(st * item for st in strides)
    holder = _StridedInterface()
    holder.__array_interface__ = iface
    holder.base = a
    out = np.asarray(holder)
    return out if out.dtype == a.dtype else out.view(a.dtype)


def _recorded_key(idx, basic):
    """The basic key a graph records for ``idx``: ``(slice,)`` for a bare slice, which
    PyTorch always slices (``is_bare_slice`` in _node_names.py), else ``basic``."""
    return (idx,) if type(idx) is slice else basic


_overrides.operator(_getitem)
Tensor.__getitem__ = _getitem
_GETITEM = _dispatch.overload("aten", "index", "Tensor", _getitem)


def _getitem_through_kernels(self, idx):
    """``self[idx]`` with every step through ``apply``: taken while someone registered a CPU
    kernel of their own for the basic-index view (``_getitem``), so that it runs."""
    basic, is_trivial, spec, tensors = _parse_index(self, idx)
    t = self
    if not (is_trivial and spec is not None):
        t = _dispatch.apply(getitem_op, (self,), {"idx": _recorded_key(idx, basic),
                                                  "shape": self._data.shape})
    if spec is None:
        return t
    return _dispatch.apply(index_op, (t,) + tensors, {"spec": spec, "shape": t._data.shape})


def _all_basic(idx):
    """True for a tuple of plain ints, positive-step slices, None and at most one Ellipsis
    (the fast path's case)."""
    n_ell = 0
    for x in idx:
        tx = type(x)
        if tx is slice:
            step = x.step
            if step is not None and (type(step) is not int or step <= 0):
                return False
        elif x is Ellipsis:
            n_ell += 1
        elif tx is not int and x is not None:
            return False
    return n_ell <= 1


def _bad_step(step):
    if step == 0:
        raise ValueError("slice step cannot be zero")
    raise ValueError("step must be greater than zero")


def _seq_as_tuple(seq):
    """PyTorch still reads ``x[[0, [1, 2]]]``-like lists (holding sequences, slices, None,
    Ellipsis or tensors) as a tuple of indices, with a deprecation warning."""
    if len(seq) >= 32:
        return False
    for x in seq:
        if x is None or x is Ellipsis or isinstance(x, (list, tuple, slice, Tensor, np.ndarray)):
            return True
    return False


def _as_index_tensor(x):
    """A list / tuple / NumPy array used as an index, as an int64 or bool tensor."""
    arr = np.asarray(x)
    if arr.dtype.kind == "b" or arr.dtype.kind in "iu" and arr.dtype != np.uint8:
        return wrap(arr if arr.dtype.kind == "b" else arr.astype(np.int64, copy=False))
    if arr.dtype == np.uint8:
        return wrap(arr)  # a mask, after the uint8 deprecation (see _classify)
    if arr.size == 0:
        return wrap(arr.astype(np.int64))
    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def _classify(x):
    """(kind, value) for one index item: kind is 'int', 'slice', 'none', 'ell', 'adv' (an
    integer tensor), 'mask' (a bool tensor of >= 1 dims), 'bool0' (a 0-dim bool tensor) or
    'pybool' (a Python bool)."""
    if x is None:
        return "none", None
    if x is Ellipsis:
        return "ell", None
    tp = type(x)
    if tp is int:
        return "int", x
    if tp is slice:
        if x.step is not None and operator.index(x.step) <= 0:
            _bad_step(x.step)
        return "slice", x
    if tp is bool or tp is np.bool_:
        return "pybool", bool(x)
    if not isinstance(x, Tensor):
        if isinstance(x, (list, tuple, np.ndarray, range)):
            x = _as_index_tensor(x)
        elif isinstance(x, np.integer) or hasattr(x, "__index__") and not isinstance(
                x, (float, complex)):
            return "int", operator.index(x)
        elif isinstance(x, (float, complex, np.floating, np.complexfloating)):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                f"Variables are valid indices (got {type(x).__name__})")
        else:
            raise TypeError(f"ember: invalid index of type {type(x).__name__}: expected an "
                            "int, slice, None, Ellipsis, bool, sequence or Tensor")
    d = x._data
    k = d.dtype.kind
    if k == "b":
        return ("bool0" if d.ndim == 0 else "mask"), x
    if d.dtype == np.uint8:
        from .._settings import warn_at_caller

        m = _dt.printed_module[0]
        warn_at_caller(f"indexing with dtype {m}.uint8 is now deprecated, please use a dtype "
                       f"{m}.bool instead.", UserWarning)
        return ("bool0" if d.ndim == 0 else "mask"), wrap(d.astype(np.bool_))
    if k in "iu":
        if d.ndim == 0:  # a 0-dim integer tensor indexes like an int (a view)
            return "int", int(d)
        if d.dtype == np.int64 or d.dtype == np.int32:  # torch's index kernels: long, int
            return "adv", x
    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def _extra_ellipses(items, ndim):
    """PyTorch tolerates several Ellipses: each skips the dims no other item consumes, so a
    later one is harmless when there is nothing left to skip or nothing after it (it is then
    dropped here), and anything after a later one that skips dims is out of range."""
    specified = sum(v._data.ndim if kind == "mask" else 1 for kind, v in items
                    if kind in ("int", "slice", "adv", "mask"))
    first = next(k for k, (kind, _) in enumerate(items) if kind == "ell")
    rest = items[first + 1:]
    if ndim > specified:
        second = next(k for k, (kind, _) in enumerate(rest) if kind == "ell")
        if any(kind != "ell" for kind, _ in rest[second + 1:]):
            raise IndexError(f"too many indices for tensor of dimension {ndim}")
    return items[:first + 1] + [it for it in rest if it[0] != "ell"]


def _parse_index(self, idx):
    """Split ``idx`` for ``self`` into (basic, is_trivial, spec, tensors).

    See NOTE [ How t[idx] is split ]. ``is_trivial`` says the basic step selects everything
    (only ``:`` and ``...``); ``spec`` is None when there is no advanced step.
    """
    a = self._data
    lone = idx
    if type(idx) is not tuple:
        if type(idx) is list and _seq_as_tuple(idx):
            from .._settings import warn_at_caller

            warn_at_caller(
                "Using a non-tuple sequence for multidimensional indexing is deprecated; use "
                "x[tuple(seq)] instead of x[seq].", UserWarning)
            idx = tuple(idx)
        else:
            idx = (idx,)
    items = [_classify(x) for x in idx]
    if sum(1 for kind, _ in items if kind == "ell") > 1:
        items = _extra_ellipses(items, a.ndim)
    consumed = 0
    n_ell = 0
    for kind, v in items:
        if kind == "int" or kind == "slice" or kind == "adv":
            consumed += 1
        elif kind == "mask":
            consumed += v._data.ndim
        elif kind == "ell":
            n_ell += 1
    ndim = a.ndim
    if consumed > ndim:
        # (on a 0-dim tensor torch words a lone int or slice on its own, anything else as
        # too many indices)
        if ndim == 0 and type(lone) is int:
            raise _int_error(a, lone)
        if ndim == 0 and type(lone) is slice:
            raise IndexError(_ZERO_DIM_SLICE)
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    basic, spec, tensors = [], [], []
    is_trivial = True
    dim = 0  # the dim of ``a`` the next item applies to
    at = type(a)
    for kind, v in items:
        if kind == "int":
            n = a.shape[dim]
            if v < -n or v >= n:
                raise _int_error(a, v, dim)
            basic.append(v)
            is_trivial = False
            dim += 1
        elif kind == "slice":
            basic.append(v)
            spec.append(_FULL)
            if v != _FULL:
                is_trivial = False
            dim += 1
        elif kind == "none":
            basic.append(None)
            spec.append(_FULL)
            is_trivial = False
        elif kind == "ell":
            basic.append(Ellipsis)
            spec.append(Ellipsis)
            dim += ndim - consumed
        elif kind == "pybool":
            # as PyTorch: a new dim of size 1, indexed by [0] (True) or [] (False) -- no
            # value to read, so it works on every device
            basic.append(None)
            spec.append(_T)
            tensors.append(wrap(np.zeros(int(v), np.int64)).to(self.device))
            is_trivial = False
        else:
            if type(v._data) is not at:
                v = v.to(self.device)
            if kind == "mask":
                m = v._data.shape
                if m != a.shape[dim:dim + len(m)]:
                    for j, s in enumerate(m):
                        if s != a.shape[dim + j]:
                            break
                    raise IndexError(
                        f"The shape of the mask {list(m)} at index {j} does not match the "
                        f"shape of the indexed tensor {list(a.shape)} at index {dim + j}")
                basic.extend([_FULL] * len(m))
                dim += len(m)
            elif kind == "adv":
                basic.append(_FULL)
                dim += 1
            spec.append(_T)
            tensors.append(v)
    if not n_ell:
        basic.append(Ellipsis)
    return tuple(basic), is_trivial, (tuple(spec) if tensors else None), tuple(tensors)


# ------------------------------------------------------------------------------------------------
# advanced getitem and index_put (the spec-driven pair)


def _key(spec, idx):
    it = iter(idx)
    return tuple(next(it) if s is _T else s for s in spec)


def _reads_nothing(xp, a, key):
    """For ``a[key]`` that raised IndexError on an empty ``a``: the (empty) region ``key``
    addresses when it addresses no element, else None. torch checks the indices while it
    reads, so an empty region passes whatever they hold; zeros stand in for them here (they
    are in bounds wherever the dim is not itself empty)."""
    safe = tuple(xp.zeros_like(k) if getattr(k, "dtype", None) is not None and k.dtype.kind
                 in "iu" else k for k in key)
    try:
        r = a[safe]
    except IndexError:
        return None
    return r if r.size == 0 else None


def _index_kernel(xp, a, *idx, spec, shape):
    key = _key(spec, idx)
    try:
        # NumPy lays a result out after its index arrays (``x[:, i]`` of a contiguous x
        # comes back with the indexed dim outermost); torch's result of a contiguous
        # input is contiguous, and programs ``view`` it. (Of other layouts NumPy's is
        # kept: torch keeps a channels-last input's, for one.)
        r = a[key]
        if getattr(getattr(a, "flags", None), "c_contiguous", False) and r.ndim \
                and not r.flags.c_contiguous:
            r = xp.ascontiguousarray(r)  # (never of a 0-d result: it would come back 1-d)
        return r
    except IndexError:
        r = _reads_nothing(xp, a, key) if a.size == 0 else None
        if r is None:
            raise
        return r


def _index_vjp(g, _a, *idx, spec, shape):
    z = zeros_of(shape, g)
    gx = _dispatch.apply(index_put_op, (z, g) + idx, {"spec": spec, "accumulate": True})
    return (gx,) + (None,) * len(idx)


index_op = Op("_index", _index_kernel, vjp=_index_vjp)
linear_jvp(index_op, (0,))


def _index_put_into(xp, out, v, *idx, spec, accumulate):
    key = _key(spec, idx)
    if v.dtype != out.dtype:
        v = v.astype(out.dtype)
    try:
        if accumulate:
            ufunc_at(xp, "add", out, key, v)
        else:
            out[key] = v
    except (ValueError, TypeError, IndexError) as e:
        # NOTE [ The order of setitem's checks ]: the value's shape before the bounds
        if isinstance(e, TypeError) and "boolean array indexing" not in str(e):
            raise
        err = _put_error(out, key, v.shape)
        if err is not None:
            raise err from None
        if not isinstance(e, IndexError):
            raise
        if out.size == 0 and _reads_nothing(xp, out, key) is not None:
            return  # an empty region: torch writes nothing and checks nothing
        raise _advanced_index_error(e, spec, out.ndim) from None


def _index_put_kernel(xp, a, v, *idx, spec, accumulate):
    out = a.copy()
    _index_put_into(xp, out, v, *idx, spec=spec, accumulate=accumulate)
    return out


def _index_put_vjp(g, _a, _v, *idx, spec, accumulate):
    if accumulate:
        ga = g
    else:
        ga = _dispatch.apply(index_put_op, (g, zeros_of((), g)) + idx,
                             {"spec": spec, "accumulate": False})
    gv = _dispatch.apply(index_op, (g,) + idx, {"spec": spec, "shape": g._data.shape})
    return (ga, gv) + (None,) * len(idx)


index_put_op = Op("index_put", _index_put_kernel, vjp=_index_put_vjp)
linear_jvp(index_put_op, (0, 1))


def _index_put_args(op_name, self, indices, values, accumulate=False):
    """Validate index_put's arguments; returns (spec, index tensors, values)."""
    check_tensor(op_name, self, "input")
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op_name}(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    check_tensor(op_name, values, "values")
    if values._data.dtype != self._data.dtype and not accumulate and len(indices) == 1 \
            and isinstance(indices[0], Tensor) and indices[0]._data.dtype.kind in "bu" \
            and indices[0]._data.dtype.itemsize == 1 and values._data.size == 1:
        # torch writes one value under one mask with masked_fill (the value as a number)
        from .creation import check_value_fits

        if indices[0]._data.dtype.kind == "u":
            raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with "
                               "dtype unsigned char")
        check_value_fits(values.item(), self.dtype, op_name)
        values = values.to(self.dtype).reshape(())
    # torch looks at the indices before the values' dtype: any index into a dimension of
    # size 0 is out of bounds
    dim = 0
    for x in indices:
        if not isinstance(x, Tensor):
            break
        if x._data.dtype.kind in "iu" and x._data.dtype != np.uint8:
            if dim < self._data.ndim and self._data.shape[dim] == 0 and x._data.size:
                raise IndexError("index is out of bounds for dimension with size 0")
            dim += 1
        else:
            dim += max(x._data.ndim, 1)
    if values._data.dtype != self._data.dtype:
        if all(isinstance(x, Tensor) for x in indices):
            # NOTE [ The order of setitem's checks ]: index and value shapes come first
            key = tuple(x._data.astype(np.bool_) if x._data.dtype == np.uint8 else x._data
                        for x in indices)
            err = _put_error(self._data, key, values._data.shape)
            if err is not None:
                raise err
        raise RuntimeError(
            f"Index put requires the source and destination dtypes match, got "
            f"{type_name(self._data.dtype)} for the destination and "
            f"{type_name(values._data.dtype)} for the source.")
    spec, tensors, consumed = [], [], 0
    for k, x in enumerate(indices):
        if x is None:  # PyTorch's binding takes tensors only (no full-slice None)
            raise TypeError(f"expected Tensor as element {k} in argument "
                            f"{0 if op_name.endswith('_') else 1}, but got NoneType")
        check_tensor(op_name, x, "indices")
        d = x._data
        if d.dtype == np.uint8:
            x = wrap(d.astype(np.bool_))
        elif d.dtype.kind not in "b" and d.dtype not in (np.int64, np.int32):
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        consumed += x._data.ndim if x._data.dtype.kind == "b" else 1
        spec.append(_T)
        tensors.append(x)
    if consumed > self._data.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self._data.ndim} "
                         f"(got {consumed})")
    tensors = same_device(op_name, self, *tensors)
    (values,) = same_device(op_name, self, values)
    return tuple(spec), tuple(tensors), values


@public
def index_put(input, indices, values, accumulate=False):
    """Out-of-place ``input[indices] = values`` (or ``+=`` with ``accumulate``).

    ``indices`` is a tuple of index tensors (int64, int32, uint8 or bool), one per leading
    dim; None entries raise TypeError and other integer dtypes IndexError, as in PyTorch.
    """
    spec, tensors, values = _index_put_args("index_put", input, indices, values, accumulate)
    return _dispatch.apply(index_put_op, (input, values) + tensors,
                           {"spec": spec, "accumulate": bool(accumulate)})


@public(method=True)
def index_put_(input, indices, values, accumulate=False):
    """In-place ``input[indices] = values`` (or ``+=`` with ``accumulate``); returns input."""
    spec, tensors, values = _index_put_args("index_put_", input, indices, values, accumulate)
    check_no_overlap("index_put_", input, values)
    return inplace_or_not(index_put_op, "index_put_", input, (input, values) + tensors,
                          {"spec": spec, "accumulate": bool(accumulate)}, _index_put_into)


# ------------------------------------------------------------------------------------------------
# setitem


def _setitem_value(self, value):
    """``value`` as a tensor of self's dtype and device, or as a plain scalar (None, v)."""
    if isinstance(value, Tensor):
        if type(value._data) is not type(self._data):
            value = value.to(self.device)
        return value
    if isinstance(value, (int, float, bool, complex, np.number, np.bool_)):
        return None
    legacy = {np.dtype(np.float32): "FloatTensor", np.dtype(np.float64): "DoubleTensor",
              np.dtype(np.int64): "LongTensor"}.get(self._data.dtype, "Tensor")
    raise TypeError(f"can't assign a {type(value).__name__} to a ember.{legacy}")


def _scalar_for(a, value):
    """A Python scalar checked for writing into array ``a``: a complex number goes into a
    real array only when its imaginary part is zero (PyTorch's overflow check)."""
    if isinstance(value, (complex, np.complexfloating)) and a.dtype.kind != "c":
        if value.imag != 0:
            raise RuntimeError(f"value cannot be converted to type "
                               f"{type_name(a.dtype).lower()} without overflow")
        value = value.real
    if a.dtype in _dt._OPAQUE_NP:  # NOTE [ Opaque dtypes ]
        raise NotImplementedError(f'"fill_out" not implemented for '
                                  f"'{_dt._OPAQUE_NP[a.dtype].scalar_name}'")
    if a.dtype in _dt._FLOAT8_NP:  # PyTorch's saturation (NOTE [ Float8 dtypes ])
        return _dt.to_float8(np.array(value, np.float64), a.dtype)[()]
    return value


# NOTE [ Numbers written by __setitem__ ]
# torch turns the number of ``x[idx] = number`` into a one-element tensor of x's dtype before
# it looks at the index: a Python int must fit int64 ("Overflow when unpacking long long",
# a ValueError, for any dtype), then the conversion refuses what overflows the dtype as
# ``full`` does (check_value_fits: an unsigned dtype takes a negative int and wraps it,
# ``x_uint8[m] = -1`` writes 255), except that float16 and bfloat16 take any real number
# (past their range it is stored as inf) and refuse a nonzero imaginary part in double's
# words. The value then goes in as that dtype's element, so NumPy never sees an int out of
# its range.
_HALF_NP = frozenset({_dt.float16.np, _dt.bfloat16.np})


def _setitem_scalar(a, value):
    """The number ``value`` for writing into array ``a`` by ``__setitem__`` (NOTE [ Numbers
    written by __setitem__ ]): checked as torch converts it, then as ``a``'s element."""
    from .creation import check_value_fits

    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) \
            and not -2 ** 63 <= int(value) < 2 ** 63:
        raise ValueError("Overflow when unpacking long long")
    if isinstance(value, (complex, np.complexfloating)) and a.dtype.kind != "c":
        if a.dtype.kind == "b":
            return np.bool_(value != 0)
        if value.imag != 0 and a.dtype in _HALF_NP:
            raise RuntimeError("value cannot be converted to type double without overflow")
        if value.imag == 0:
            value = float(value.real)  # checked as a float: never negative into unsigned
    if a.dtype not in _HALF_NP and a.dtype in _dt.from_np \
            and a.dtype not in _dt._OPAQUE_NP and a.dtype not in _dt._FLOAT8_NP:
        check_value_fits(value, _dt.from_np[a.dtype], "__setitem__")
    value = _scalar_for(a, value)
    if a.dtype.kind in "iub" and isinstance(value, (int, np.integer)):
        return np.array(value).astype(a.dtype)[()]  # an unsigned dtype wraps negative ints
    return value


def _is_uint8_mask(idx):
    """Whether the only tensor in a ``__setitem__`` index is a uint8 mask of one or more
    dims (torch reads a list holding a tensor as a tuple; a 0-dim uint8 tensor indexes as a
    Python bool does)."""
    parts = idx if isinstance(idx, (tuple, list)) else (idx,)
    masks = [x for x in parts if isinstance(x, Tensor)]
    return len(masks) == 1 and masks[0]._data.dtype == np.uint8 and masks[0]._data.ndim > 0


def _check_setitem_dtype(a, vt, value, spec, tensors, idx=None, basic=None):
    """PyTorch casts numbers, and tensors written through basic indexing (``copy_``), to
    self's dtype; a tensor written through an advanced index must already have self's dtype,
    except a one-element one under a single bool mask (that is ``masked_fill``). Returns
    whether the write is that ``masked_fill`` (the value then goes in as a 0-dim one)."""
    if vt is None:
        _setitem_scalar(a, value)
        if spec is not None and (len(tensors) == 1 and tensors[0]._data.dtype == np.uint8
                                 and tensors[0]._data.ndim or _is_uint8_mask(idx)):
            # a number under one mask is torch's masked_fill too (after the number's
            # conversion), which takes no uint8 mask
            raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with "
                               "dtype unsigned char")
        return False
    if spec is None:
        return False
    if len(tensors) == 1 and tensors[0]._data.dtype in (np.bool_, np.uint8) \
            and vt._data.size == 1:
        # one mask and one value of any shape and dtype: torch writes it with masked_fill,
        # the value as a number (checked for overflow), and refuses a uint8 mask there
        if tensors[0]._data.dtype == np.uint8 or _is_uint8_mask(idx):
            raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with "
                               "dtype unsigned char")
        if holds_values(vt._data) and not _dispatch.intercept:  # (none on meta, or vmap's)
            from .creation import check_value_fits

            check_value_fits(vt.item(), _dt.from_np[a.dtype], "__setitem__")
        return True
    if vt._data.dtype == a.dtype:
        return False
    if basic is not None:  # NOTE [ The order of setitem's checks ]
        region = a[basic]
        key = _key(spec, [t._data.astype(np.bool_) if t._data.dtype == np.uint8 else t._data
                          for t in tensors])
        err = _put_error(region, key, vt._data.shape)
        if err is not None:
            raise err
    raise RuntimeError(
        f"Index put requires the source and destination dtypes match, got "
        f"{type_name(a.dtype)} for the destination and {type_name(vt._data.dtype)} for the "
        "source.")


# NOTE [ The order of setitem's checks ]
# PyTorch's index_put (``x[mask] = v``, ``x[:, idx] = v``) first broadcasts the index tensors
# together (IndexError), then checks that the value broadcasts to the indexed region's shape
# (RuntimeError "shape mismatch"), then that the dtypes agree, and only while it writes that
# each index lies in bounds. NumPy checks bounds before the value's shape (and says TypeError
# for a value of too many dims under an empty mask), so a call wrong in two ways raised the
# wrong one. ``_indexed_shape`` tells the region's shape without reading the indices' values,
# which is all the shape check needs; it runs on error paths only.
def _indexed_shape(a, key, index_error=False):
    """The shape of ``a[key]`` whatever its integer index arrays hold (they stand at zero,
    in bounds wherever the dim is not empty), or None where that can't be told;
    ``index_error``: index arrays that do not broadcast together raise torch's IndexError."""
    def host(k):
        if getattr(k, "dtype", None) is None:
            return k  # a slice, None, Ellipsis or a Python number
        if k.dtype.kind in "iu":
            return np.zeros(tuple(k.shape), np.intp)
        return k if type(k) is np.ndarray else np.asarray(k.get())  # (a device mask)

    dummy = np.lib.stride_tricks.as_strided(np.zeros(1, np.bool_), tuple(a.shape),
                                            (0,) * a.ndim)
    try:
        safe = tuple(host(k) for k in (key if isinstance(key, tuple) else (key,)))
        return dummy[safe].shape
    except IndexError as e:
        b = _NUMPY_INDEX_BROADCAST.match(str(e))
        if index_error and b is not None:
            raise IndexError(_index_broadcast_message(b.group(1))) from None
        return None
    except (TypeError, ValueError, AttributeError):
        return None


def _shape_mismatch(vshape, shape, basic=False):
    """torch's RuntimeError when a value of ``vshape`` does not broadcast to an indexed
    region of ``shape`` (its leading size-1 dims dropped first, as torch's copy does), or
    None when it does. A ``basic`` key (ints, slices, None, Ellipsis: a view copied into)
    fails in the words of ``expand``, an advanced one in index_put's."""
    vshape = tuple(vshape)
    while vshape and vshape[0] == 1:  # (torch strips them all, and names the rest)
        vshape = vshape[1:]
    try:
        ok = np.broadcast_shapes(vshape, tuple(shape)) == tuple(shape)
    except ValueError:
        ok = False
    if ok:
        return None
    if basic and len(vshape) <= len(shape):
        for i in range(1, len(vshape) + 1):  # expand's scan, from the last dim
            if vshape[-i] != 1 and vshape[-i] != shape[-i]:
                return RuntimeError(
                    f"The expanded size of the tensor ({shape[-i]}) must match the existing "
                    f"size ({vshape[-i]}) at non-singleton dimension {len(shape) - i}.  "
                    f"Target sizes: {list(shape)}.  Tensor sizes: {list(vshape)}")
    return RuntimeError(f"shape mismatch: value tensor of shape {list(vshape)} cannot be "
                        f"broadcast to indexing result of shape {list(shape)}")


def _into_empty_dim(shape, key):
    """Whether ``key`` puts a non-empty integer index array on a dim of size 0 of an array of
    ``shape`` (torch's IndexError "index is out of bounds for dimension with size 0", which
    it raises whatever the indices hold)."""
    parts = key if isinstance(key, tuple) else (key,)
    # (torch reads nothing when the index arrays broadcast to an empty set of positions)
    shapes = [(int(k.sum()),) if k.dtype.kind == "b" else tuple(k.shape) for k in parts
              if getattr(k, "dtype", None) is not None and k.ndim]
    try:
        if shapes and 0 in np.broadcast_shapes(*shapes):
            return False
    except ValueError:
        return False

    def width(k):
        if k is None or k is Ellipsis:
            return 0
        dt = getattr(k, "dtype", None)
        return k.ndim if dt is not None and dt.kind == "b" else 1

    dim = 0
    for k in parts:
        if k is Ellipsis:
            dim += len(shape) - sum(width(q) for q in parts)
            continue
        dt = getattr(k, "dtype", None)
        if dt is not None and dt.kind in "iu" and k.size and dim < len(shape) \
                and shape[dim] == 0:
            return True
        dim += width(k)
    return False


def _put_error(a, key, vshape):
    """The error torch's index_put raises before it looks at dtypes or index values (NOTE
    [ The order of setitem's checks ]) for writing a value of ``vshape`` to ``a[key]``, or
    None: index arrays that do not broadcast together, a non-empty index on an empty dim, a
    value that does not broadcast to the region."""
    shape = _indexed_shape(a, key, index_error=True)
    if _into_empty_dim(tuple(a.shape), key):
        return IndexError("index is out of bounds for dimension with size 0")
    if shape is None:
        return None
    parts = key if isinstance(key, tuple) else (key,)
    basic = not any(getattr(k, "dtype", None) is not None and (k.ndim or k.dtype.kind == "b")
                    for k in parts)
    return _shape_mismatch(vshape, shape, basic)


def _assign(a, key, v, spec=None):
    """``a[key] = v`` with PyTorch's error for a value that does not broadcast (and for an
    index out of bounds, counted as ``_advanced_index_error`` does for an advanced ``spec``;
    NOTE [ The order of setitem's checks ])."""
    try:
        a[key] = v
    except (ValueError, TypeError, IndexError) as e:
        if isinstance(e, TypeError) and "boolean array indexing" not in str(e):
            raise
        err = _put_error(a, key, np.shape(v))
        if err is not None:
            raise err from None
        if not isinstance(e, IndexError):
            raise
        raise _advanced_index_error(e, spec, np.ndim(a)) from None


@_dispatch.entrance("setitem_", inplace=True)
def _setitem(self, idx, value):
    """``self[idx] = value``: a tensor (any dtype, broadcast) or a number.

    Without autograd this writes straight through NumPy. With autograd it goes through ops
    autograd sees -- the basic part is a view (``_getitem``) and the write is ``copy_`` or
    ``index_put_`` on it -- so in-place-on-view history rewriting gives correct gradients.
    """
    vt = _setitem_value(self, value)
    a = self._data
    tp = type(idx)
    if tp is bool:
        # a lone Python bool is no index tensor to torch: ``x[True] = v`` writes as
        # ``x[...] = v`` does (casting v), and ``x[False] = v`` writes nothing and checks
        # nothing past the value's conversion
        if not idx:
            if vt is None:
                _setitem_scalar(a, value)
            return
        idx, tp = Ellipsis, type(Ellipsis)
    if not self._rg and (vt is None or not vt._rg):
        if tp is int or tp is slice:
            if tp is slice and idx.step is not None and idx.step <= 0:
                _bad_step(idx.step)
            if a.ndim == 0:
                raise _int_error(a, idx) if tp is int else IndexError(_ZERO_DIM_SLICE)
            if tp is int and not -a.shape[0] <= idx < a.shape[0]:
                raise _int_error(a, idx)
            key = (idx, ...)
            spec = None
        elif tp is Tensor and idx._data.dtype in _INDEX_DTYPES and idx._data.ndim \
                and a.ndim and type(idx._data) is type(a):
            # one integer index tensor: write the rows it names
            key = Ellipsis
            spec = (_T,)
            tensors = (idx,)
        else:
            basic, is_trivial, spec, tensors = _parse_index(self, idx)
            key = basic
        if _check_setitem_dtype(a, vt, value, spec, None if spec is None else tensors, idx,
                                key):
            vt = vt.reshape(())
        _dispatch.check_overlap("index_put_", self)
        if vt is not None:
            check_no_overlap("__setitem__", a[key], vt, allow_full=spec is None)
        if vt is None:
            v = _setitem_scalar(a, value)
        else:
            v = vt._data
            if v.dtype != a.dtype and a.dtype in _dt._FLOAT8_NP:
                v = _dt.to_float8(v, a.dtype)
            elif v.dtype != a.dtype:
                if v.dtype.kind == "c" and a.dtype.kind != "c":  # to bool: either part nonzero
                    v = v != 0 if a.dtype.kind == "b" else v.real
                v = v.astype(a.dtype)
        if spec is None:
            _assign(a, key, v)
        else:
            _assign(a[key], _key(spec, [t._data for t in tensors]), v, spec)
        self._bump()
        return
    # autograd path
    basic, is_trivial, spec, tensors = _parse_index(self, idx)
    if _check_setitem_dtype(a, vt, value, spec, tensors, idx, basic):
        vt = vt.reshape(())
    if vt is not None:
        check_no_overlap("__setitem__", a[basic], vt, allow_full=spec is None)
    if vt is None:
        xp = _dispatch.backends_by_type[type(a)].xp
        vt = wrap(xp.asarray(_setitem_scalar(a, value)).astype(a.dtype))
    elif vt._data.dtype != a.dtype:
        vt = vt.to(self.dtype)
    if vt.dim() and vt.shape[0] == 1:
        # torch drops a value's leading size-1 dims before broadcasting it (``y[1, 2] =
        # tensor([5.])``, ``y[0] = ones(1, 3)``), as the no-grad path's assignment does
        lead = next((i for i, n in enumerate(vt.shape) if n != 1), vt.dim())
        vt = vt.reshape(tuple(vt.shape[lead:]))
    target = self if is_trivial else _getitem(self, basic)
    if spec is None:
        target.copy_(vt)
        return
    inplace_or_not(index_put_op, "index_put_", target, (target, vt) + tensors,
                   {"spec": spec, "accumulate": False}, _index_put_into)


Tensor.__setitem__ = _setitem


# ------------------------------------------------------------------------------------------------
# unravel_index


@public(method=False)
def unravel_index(indices, shape):
    """The coordinates of flat (C-order) ``indices`` in a tensor of ``shape``: one int64
    tensor per dim, each of ``indices``' shape. Indices are taken modulo the number of
    elements (so -1 is the last element), as PyTorch does.

    Args:
        indices (Tensor): integer flat indices.
        shape (int or sequence of int): the shape indexed.

    Returns:
        tuple of Tensor

    Example::

        >>> ember.unravel_index(ember.tensor([5, 7]), (3, 4))
        (tensor([1, 1]), tensor([1, 3]))
    """
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be a Tensor, but got {type(indices).__name__}")
    if indices.dtype.category != _dt.INT:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    shape = tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    idx = indices.to(_dt.int64)
    coords = []
    for s in reversed(shape):
        coords.append(idx.remainder(s))
        idx = idx.div(s, rounding_mode="floor")
    return tuple(reversed(coords))
