"""Operations on DTensors: the layout of each result, and the op run on the local pieces.

NOTE [ DTensor ops ]
``DTensor.__torch_function__`` sends every call here. A handler per kind of op decides, for
each mesh dimension, the placement each DTensor argument must have (redistributing it when
it differs) and the placement of the result; the op then runs on the local pieces and the
results are wrapped with the global shapes that the same call on ``meta`` tensors of the
global shapes gives. Kinds:

- element-wise ops (with broadcasting): a dimension sharded in one input is sharded in the
  result; the other inputs are cut the same way, unless they broadcast along it. ``Partial``
  survives the linear ones (sums of Partials, products with one Partial and replicated
  factors, negation, casts); otherwise it is reduced first.
- ``matmul``/``mm``/``bmm``/``linear``: rows or batch sharded -> rows sharded; columns of
  the right factor sharded -> columns sharded; the contracted dimension sharded in both ->
  ``Partial(sum)``.
- ``sum``/``mean`` (and ``amax``/``amin``): a reduced sharded dimension gives a Partial.
- views (``view``/``reshape``/``flatten``/``transpose``/``permute``/``unsqueeze``...): the
  shard follows its dimension when the pieces stay contiguous blocks.
- ``layer_norm``/``rms_norm``/``softmax``/``embedding``: sharded along dimensions they do
  not mix.
- in-place ops write each rank's piece (random fills draw the whole tensor and keep the
  piece, so a sharded tensor gets the values a whole one would).
- anything else: every argument is made whole (``Replicate``) and the result is replicated
  -- correct for any op, at the cost of communication.

A replicated input whose result is sharded or partial along a mesh dimension receives, on
each rank, only that rank's share of its gradient; ``grad_sum`` sums those shares in
backward (NOTE [ DTensor redistribution ]). A plain tensor with dimensions mixed with
DTensors raises, as in PyTorch; 0-d tensors and numbers are scalars.
"""

from __future__ import annotations

import contextlib

from ..._core.tensor import Tensor
from .placement_types import Partial, Replicate, Shard, _StridedShard
from ._redistribute import (grad_sum, is_grad_leaf, lazy_grad_sum, local_layout, norm_dim,
                             note_use, redistribute_local)

_loss_parallel = [False]
_implicit_replication = [False]

# element-wise ops; those that keep a Partial are listed below
_UNARY_LINEAR = {"neg", "__neg__", "negative", "clone", "contiguous", "float", "double", "half",
                 "bfloat16", "to", "type_as", "positive", "__pos__", "conj", "real"}
_ADD_LIKE = {"add", "__add__", "__radd__", "sub", "__sub__", "__rsub__", "subtract"}
_MUL_LIKE = {"mul", "__mul__", "__rmul__", "multiply", "div", "__truediv__", "true_divide",
             "divide"}
_POINTWISE = _UNARY_LINEAR | _ADD_LIKE | _MUL_LIKE | set("""
abs __abs__ absolute acos acosh asin asinh atan atanh atan2 arctan2 ceil clamp clip cos cosh
deg2rad digamma erf erfc erfinv exp exp2 expm1 floor frac lgamma log log10 log1p log2 logit
reciprocal round rsqrt sigmoid sign sgn sin sinc sinh sqrt square tan tanh trunc fix nan_to_num
relu relu6 gelu silu mish elu selu celu leaky_relu hardtanh hardswish hardsigmoid softplus
softsign tanhshrink hardshrink softshrink logsigmoid threshold dropout alpha_dropout
pow __pow__ __rpow__ float_power maximum minimum fmax fmin fmod remainder __mod__ __rmod__
floor_divide __floordiv__ __rfloordiv__ __rtruediv__ __rdiv__ __div__ copysign hypot xlogy
eq ne lt le gt ge __eq__ __ne__ __lt__ __le__ __gt__ __ge__ greater less greater_equal
less_equal not_equal equal_nan isnan isinf isfinite isposinf isneginf isreal signbit
logical_not logical_and logical_or logical_xor bitwise_not bitwise_and bitwise_or bitwise_xor
__and__ __or__ __xor__ __invert__ __rand__ __ror__ __rxor__ where lerp addcmul addcdiv
masked_fill bool int long short byte char cpu detach_copy
""".split())
_RANDOM_INPLACE = {"uniform_", "normal_", "bernoulli_", "exponential_", "geometric_",
                   "log_normal_", "cauchy_", "random_"}
_LIKE = {"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
         "randint_like"}
_META = {"size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous",
         "element_size", "get_device", "is_floating_point", "is_complex", "nbytes",
         "itemsize", "is_signed", "storage_offset"}
_MATMUL = {"matmul", "__matmul__", "mm", "bmm"}
_VIEWS = {"view", "reshape", "flatten", "unflatten", "view_as", "reshape_as"}
_PERMUTES = {"transpose", "swapaxes", "swapdims", "t", "permute", "unsqueeze", "squeeze",
             "movedim", "moveaxis", "T", "mT"}
# in-place forms that act element by element (with broadcasting) besides ``_POINTWISE``'s
_INPLACE_POINTWISE = {"copy_", "zero_", "fill_", "clamp_min_", "clamp_max_", "masked_fill_",
                      "requires_grad_"}
_INPLACE_DUNDER = {"__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_",
                   "__itruediv__": "div_", "__idiv__": "div_"}


_DT = []


def _dtensor_cls():
    if not _DT:
        from ._api import DTensor

        _DT.append(DTensor)
    return _DT[0]


def _walk(obj, fn):
    """``obj`` with every DTensor inside (lists, tuples, dicts) replaced by ``fn(dtensor)``."""
    DT = _dtensor_cls()
    if isinstance(obj, DT):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        out = [_walk(x, fn) for x in obj]
        return type(obj)(out) if type(obj) in (list, tuple) else type(obj)(*out)
    if isinstance(obj, dict):
        return {k: _walk(v, fn) for k, v in obj.items()}
    return obj


def _dtensors(args, kwargs):
    DT = _dtensor_cls()
    found, stack = [], list(args) + list(kwargs.values())
    while stack:
        x = stack.pop(0)
        if isinstance(x, DT):
            found.append(x)
        elif isinstance(x, (list, tuple)):
            stack[:0] = list(x)
    return found


def _opname(name):
    if name.startswith("__") and name.endswith("__"):
        name = name[2:-2]
    return "aten." + name.lstrip("_")


def _check_plain(name, args, kwargs, mesh):
    """Raise for plain tensors with dimensions among the arguments (torch's rule); inside
    ``loss_parallel`` or ``experimental.implicit_replication`` they are taken as
    replicated."""
    DT = _dtensor_cls()
    as_replicated = _loss_parallel[0] or _implicit_replication[0]
    if not as_replicated:  # only a scan: the arguments stay as they are
        stack = list(args) + list(kwargs.values())
        while stack:
            x = stack.pop()
            if isinstance(x, (list, tuple)):
                stack.extend(x)
            elif isinstance(x, Tensor) and not isinstance(x, DT) and x.dim() > 0:
                raise RuntimeError(f"{_opname(name)} got mixed torch.Tensor and DTensor, need "
                                   "to convert all torch.Tensor to DTensor before calling "
                                   "distributed operators!")
        return args, kwargs
    bad = []

    def visit(x):
        if isinstance(x, DT):
            return x
        if isinstance(x, Tensor) and x.dim() > 0:
            bad.append(x)
            if as_replicated:
                from ._api import DTensor

                return DTensor._make(x, mesh, (Replicate(),) * mesh.ndim, tuple(x.shape))
        return x

    def rec(obj):
        if isinstance(obj, (list, tuple)):
            return type(obj)([rec(x) for x in obj]) if type(obj) in (list, tuple) else obj
        if isinstance(obj, dict):
            return {k: rec(v) for k, v in obj.items()}
        return visit(obj)

    args2, kwargs2 = rec(list(args)), rec(dict(kwargs))
    if bad and not as_replicated:
        raise RuntimeError(f"{_opname(name)} got mixed torch.Tensor and DTensor, need to "
                           "convert all torch.Tensor to DTensor before calling distributed "
                           "operators!")
    return tuple(args2), kwargs2


def _meta(x):
    from ... import empty

    if isinstance(x, _dtensor_cls()):
        return empty(x._spec.shape, dtype=x.dtype, device="meta")
    if isinstance(x, Tensor):
        return empty(tuple(x.shape), dtype=x.dtype, device="meta")
    return x


def _meta_call(func, args, kwargs):
    def rec(obj):
        if isinstance(obj, (list, tuple)) and type(obj) in (list, tuple):
            return type(obj)(rec(x) for x in obj)
        if isinstance(obj, dict):
            return {k: rec(v) for k, v in obj.items()}
        return _meta(obj)

    return func(*rec(list(args)), **rec(dict(kwargs)))


class _Shape:
    """Stands for a meta result where only the shape is known."""

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = shape


def _wrap(local, meta, mesh, placements):
    """Wrap tensor results (matching the meta results' structure) as DTensors."""
    DTensor = _DT[0] if _DT else _dtensor_cls()
    if isinstance(local, Tensor):
        shape = tuple(meta.shape) if isinstance(meta, (Tensor, _Shape)) else tuple(local.shape)
        return DTensor._make(local, mesh, tuple(placements), shape)
    if isinstance(local, (list, tuple)):
        metas = meta if isinstance(meta, (list, tuple)) else [None] * len(local)
        out = [_wrap(a, b, mesh, placements) for a, b in zip(local, metas)]
        return type(local)(out) if type(local) in (list, tuple) else type(local)(*out)
    return local


def _prepare(dt, target, out_placements):
    """``dt``'s local piece laid out as ``target``, its gradient summed where it is replicated
    and the result is not."""
    mesh = dt._spec.mesh
    leaf = dt._local_tensor
    local = redistribute_local(leaf, mesh, dt._spec.shape, dt._spec.placements, target)
    dims = [m for m, (p, q) in enumerate(zip(target, out_placements))
            if isinstance(p, Replicate) and not isinstance(q, Replicate)]
    if leaf.requires_grad and is_grad_leaf(leaf):
        # NOTE [ Partial gradients of leaves ]
        if dims and local is leaf:
            return lazy_grad_sum(leaf, mesh, dims)
        note_use(leaf)
    return grad_sum(local, mesh, dims)


def _run(func, args, kwargs, targets, out_placements, *, meta=True):
    """Run ``func`` on the pieces: ``targets`` maps id(dtensor) -> its placements."""
    dts = _dtensors(args, kwargs)
    mesh = dts[0]._spec.mesh
    shapes = _meta_call(func, args, kwargs) if meta else None
    done = {}

    def local_of(dt):
        key = id(dt)
        if key not in done:
            done[key] = _prepare(dt, targets[key], out_placements)
        return done[key]

    out = func(*_walk(list(args), local_of), **_walk(dict(kwargs), local_of))
    return _wrap(out, shapes, mesh, out_placements)


def _replicated(func, args, kwargs):
    """The fallback: every argument whole, the result replicated."""
    dts = _dtensors(args, kwargs)
    mesh = dts[0]._spec.mesh
    rep = (Replicate(),) * mesh.ndim
    return _run(func, args, kwargs, {id(d): rep for d in dts}, rep, meta=False)


# -- element-wise ------------------------------------------------------------------------------

def _broadcast(shapes):
    """The broadcast of ``shapes`` (which broadcast: the op itself checks them)."""
    if len(shapes) == 1 or all(s == shapes[0] for s in shapes):
        return tuple(shapes[0])
    nd = max(len(s) for s in shapes)
    out = [1] * nd
    for s in shapes:
        for i, n in enumerate(s, nd - len(s)):
            if n != 1:
                out[i] = n
    return tuple(out)


def _aligned(dt, out_ndim):
    return out_ndim - dt.ndim


def _pointwise(func, name, args, kwargs, dts):
    mesh = dts[0]._spec.mesh
    DT = _dtensor_cls()
    ins = [a._spec.shape if isinstance(a, DT) else tuple(a.shape)
           for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)]
    out_shape = _broadcast(ins)
    shapes = _Shape(out_shape)
    nd = len(out_shape)
    scalars = [a for a in args if not isinstance(a, Tensor)]
    targets = {id(d): list(d._spec.placements) for d in dts}
    outp = []
    for m in range(mesh.ndim):
        ps = [d._spec.placements[m] for d in dts]
        partial = [p for p in ps if isinstance(p, Partial)]
        if partial:
            op = partial[0].reduce_op
            keep = op in ("sum", "avg") and all(p == partial[0] for p in partial) and (
                (name in _UNARY_LINEAR and len(dts) == 1)
                or (name in _ADD_LIKE and len(partial) == len(dts) and not scalars
                    and len(dts) == 2)
                or (name in _MUL_LIKE and len(partial) == 1
                    and all(isinstance(p, (Partial, Replicate)) for p in ps)
                    and (name not in ("div", "__truediv__", "true_divide", "divide")
                         or isinstance(dts[0]._spec.placements[m], Partial))))
            if keep:
                outp.append(partial[0])
                continue
            for d in dts:
                if isinstance(d._spec.placements[m], Partial):
                    targets[id(d)][m] = Replicate()
            ps = [targets[id(d)][m] for d in dts]
        out_dims = set()
        for d, p in zip(dts, ps):
            if isinstance(p, Shard):
                o = p.dim + _aligned(d, nd)
                if d._spec.shape[p.dim] == out_shape[o]:
                    out_dims.add(o)
                else:  # sharded along a broadcast dimension of size 1
                    out_dims.add(None)
        if len(out_dims) == 1 and None not in out_dims:
            o = out_dims.pop()
            outp.append(Shard(o))
            for d in dts:
                i = o - _aligned(d, nd)
                if i >= 0 and d._spec.shape[i] == out_shape[o] and out_shape[o] != 1:
                    targets[id(d)][m] = Shard(i)
                else:
                    targets[id(d)][m] = Replicate()
        else:
            outp.append(Replicate())
            for d in dts:
                if isinstance(targets[id(d)][m], Shard):
                    targets[id(d)][m] = Replicate()
    done = {}

    def local_of(dt):
        if id(dt) not in done:
            done[id(dt)] = _prepare(dt, tuple(targets[id(dt)]), outp)
        return done[id(dt)]

    out = func(*_walk(list(args), local_of), **_walk(dict(kwargs), local_of))
    return _wrap(out, shapes, mesh, outp)


_NO = object()


def _same_layout(func, name, args, kwargs, dts):
    """An element-wise op (or its in-place form) whose DTensor operands all lie alike --
    same mesh, shape and placements, none ``Partial`` -- runs on the pieces and keeps the
    layout, with no rule to consult (the commonest call: an optimizer's update); ``_NO``
    for any other call."""
    inplace = name.endswith("_") and not name.startswith("__")
    if not (name in _POINTWISE or inplace and (name[:-1] in _POINTWISE
                                              or name in _INPLACE_POINTWISE)):
        return _NO
    if name in _RANDOM_INPLACE or (inplace and not (args and args[0] is dts[0])):
        return _NO
    spec = dts[0]._spec
    for p in spec.placements:
        if isinstance(p, Partial):
            return _NO
    for d in dts[1:]:
        s = d._spec
        if s is not spec and (s.placements != spec.placements or s.shape != spec.shape
                              or s.mesh is not spec.mesh):
            return _NO
    local = _walk_local
    out = func(*local(args), **({k: _local_of(v) for k, v in kwargs.items()} if kwargs
                                else {}))
    if inplace:
        return dts[0]
    return _wrap(out, _Shape(spec.shape), spec.mesh, spec.placements)


def _local_of(x):
    DT = _DT[0] if _DT else _dtensor_cls()
    if isinstance(x, DT):
        local = x._local_tensor
        if local.requires_grad and is_grad_leaf(local):
            note_use(local)
        return local
    if type(x) in (list, tuple):
        return type(x)(_local_of(y) for y in x)
    return x


def _walk_local(args):
    return [_local_of(a) for a in args]


def _inplace(func, name, args, kwargs, dts):
    DT = _dtensor_cls()
    self = args[0]
    if not isinstance(self, DT):
        return _replicated(func, args, kwargs)
    mesh, spec = self._spec.mesh, self._spec
    if name in _RANDOM_INPLACE:
        from ... import empty, no_grad

        with no_grad():
            whole = empty(spec.shape, dtype=self.dtype)
            rest = _walk(list(args[1:]), lambda d: d.full_tensor())
            func(whole, *rest, **kwargs)
            piece = redistribute_local(whole, mesh, spec.shape, (Replicate(),) * mesh.ndim,
                                       spec.placements)
            self._local_tensor.copy_(piece)
        return self
    if name in ("zero_", "fill_") and not any(isinstance(a, DT) for a in args[1:]):
        func(self._local_tensor, *args[1:], **kwargs)
        return self
    if name[:-1] not in _POINTWISE and name not in _INPLACE_POINTWISE:
        return _inplace_whole(func, name, args, kwargs, self)
    if any(isinstance(p, Partial) for p in spec.placements):
        # scaling a sum by a whole value scales each term (gradient clipping does it)
        ok = name in ("mul_", "div_") and all(
            not isinstance(a, DT) or all(isinstance(p, Replicate) for p in a._spec.placements)
            for a in args[1:])
        ok = ok or (name in ("add_", "sub_", "copy_")
                    and all(isinstance(a, DT) and a.placements == spec.placements
                            for a in args[1:2]))
        if not ok:
            raise RuntimeError(f"{_opname(name)}: an in-place op on a Partial DTensor must keep "
                               "it Partial; redistribute it first")
    targets = {}
    for d in dts:
        if d is self:
            targets[id(d)] = spec.placements
            continue
        tp = []
        for m, p in enumerate(spec.placements):
            if isinstance(p, Shard):
                i = p.dim - (self.ndim - d.ndim)
                tp.append(Shard(i) if i >= 0 and d._spec.shape[i] == spec.shape[p.dim]
                          and spec.shape[p.dim] != 1 else Replicate())
            elif isinstance(p, Partial) and isinstance(d._spec.placements[m], Partial):
                tp.append(p)
            else:
                tp.append(Replicate())
        targets[id(d)] = tuple(tp)

    def local_of(dt):
        if dt is self:
            return self._local_tensor
        return _prepare(dt, targets[id(dt)], spec.placements)

    func(*_walk(list(args), local_of), **_walk(dict(kwargs), local_of))
    return self


def _inplace_whole(func, name, args, kwargs, self):
    """An in-place op that is not element-wise (indexing, scatter...): run on the whole
    tensor, then each rank keeps its piece (differentiable)."""
    mesh, spec = self._spec.mesh, self._spec
    if any(isinstance(p, Partial) for p in spec.placements):
        raise RuntimeError(f"{_opname(name)}: an in-place op on a Partial DTensor must keep "
                           "it Partial; redistribute it first")
    rep = (Replicate(),) * mesh.ndim
    whole = redistribute_local(self._local_tensor, mesh, spec.shape, spec.placements, rep)
    if whole is self._local_tensor:  # already whole: the op runs on the piece itself
        func(whole, *_walk(list(args[1:]), lambda d: d.full_tensor()),
             **_walk(dict(kwargs), lambda d: d.full_tensor()))
        return self
    func(whole, *_walk(list(args[1:]), lambda d: d.full_tensor()),
         **_walk(dict(kwargs), lambda d: d.full_tensor()))
    piece = redistribute_local(whole, mesh, spec.shape, rep, spec.placements)
    self._local_tensor.copy_(piece)
    return self


# -- reductions --------------------------------------------------------------------------------

def _reduce_dims(dim, ndim):
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(ndim))
    dims = dim if isinstance(dim, (list, tuple)) else [dim]
    return sorted(norm_dim(int(d), ndim) for d in dims)


def _reduction(func, name, args, kwargs, x):
    mesh, spec = x._spec.mesh, x._spec
    rest = list(args[1:])
    dim = kwargs.get("dim")
    if dim is None and rest and isinstance(rest[0], (int, list, tuple)) and \
            not isinstance(rest[0], bool):
        dim = rest[0]
    keepdim = kwargs.get("keepdim", len(rest) > 1 and rest[1] is True)
    dims = _reduce_dims(dim, x.ndim)
    target, outp = list(spec.placements), []
    kind = {"sum": "sum", "mean": "sum", "amax": "max", "amin": "min", "nansum": "sum"}[name]
    for m, p in enumerate(spec.placements):
        if isinstance(p, Partial):
            if kind == "sum" and p.reduce_op in ("sum", "avg"):
                outp.append(p)
            else:
                target[m] = Replicate()
                outp.append(Replicate())
        elif isinstance(p, Shard):
            if p.dim in dims:
                outp.append(Partial(kind))
            else:
                nd = p.dim if keepdim else p.dim - sum(1 for d in dims if d < p.dim)
                outp.append(Shard(nd))
        else:
            outp.append(Replicate())
    shapes = _Shape(tuple(1 if d in dims else n for d, n in enumerate(spec.shape))
                    if keepdim else tuple(n for d, n in enumerate(spec.shape) if d not in dims))
    local = _prepare(x, tuple(target), outp)
    reduced = [m for m, p in enumerate(target) if isinstance(p, Shard) and p.dim in dims]
    even = all(spec.shape[target[m].dim] % mesh.size(m) == 0 for m in reduced)
    if name == "mean" and reduced and even:
        for m in reduced:
            outp[m] = Partial("avg")  # equal pieces: the mean of the pieces' means
    if name == "mean" and reduced and not even:
        count = 1
        for d in dims:
            count *= spec.shape[d]
        extra = {"dtype": kwargs["dtype"]} if kwargs.get("dtype") is not None else {}
        out = local.sum(dims, keepdim=bool(keepdim), **extra) / count
    else:
        out = func(local, *rest, **kwargs)
    return _wrap(out, shapes, mesh, outp)


# -- matrix products ---------------------------------------------------------------------------

def _matmul(func, name, args, kwargs, a, b):
    mesh = a._spec.mesh
    an, bn = a.ndim, b.ndim
    if an < 2 or bn < 2:
        return _replicated(func, args, kwargs)
    sa, sb = a._spec.shape, b._spec.shape
    if sa[-1] == sb[-2] and (an == bn == 2 or name in ("matmul", "__matmul__") and all(
            x == y or x == 1 or y == 1 for x, y in zip(sa[-3::-1], sb[-3::-1]))):
        # the result's shape without a meta call (a third of the call's time)
        shapes = _Shape(_broadcast([sa[:-2], sb[:-2]]) + (sa[-2], sb[-1]))
    else:  # mismatched or bmm's stricter rules: the meta call raises as the op does
        shapes = _meta_call(func, args, kwargs)
    on = len(shapes.shape)
    ta, tb, outp = [], [], []
    for m in range(mesh.ndim):
        pa, pb = a._spec.placements[m], b._spec.placements[m]
        ka, kb = an - 1, bn - 2
        if isinstance(pa, Shard) and pa.dim == ka and (pb == Shard(kb)
                                                       or isinstance(pb, Replicate)):
            ta.append(pa), tb.append(Shard(kb)), outp.append(Partial())
        elif isinstance(pb, Shard) and pb.dim == kb and isinstance(pa, Replicate):
            ta.append(Shard(ka)), tb.append(pb), outp.append(Partial())
        elif isinstance(pa, Shard) and pa.dim < an - 1 and isinstance(pb, Replicate) and \
                (bn == 2 or pa.dim == an - 2):
            ta.append(pa), tb.append(pb), outp.append(Shard(pa.dim + on - an))
        elif isinstance(pb, Shard) and pb.dim == bn - 1 and isinstance(pa, Replicate):
            ta.append(pa), tb.append(pb), outp.append(Shard(on - 1))
        elif isinstance(pa, Shard) and isinstance(pb, Shard) and pa.dim < an - 2 and \
                pa.dim + on - an == pb.dim + on - bn:
            ta.append(pa), tb.append(pb), outp.append(Shard(pa.dim + on - an))
        elif isinstance(pa, Partial) and isinstance(pb, Replicate) and pa.reduce_op == "sum":
            ta.append(pa), tb.append(pb), outp.append(pa)
        elif isinstance(pb, Partial) and isinstance(pa, Replicate) and pb.reduce_op == "sum":
            ta.append(pa), tb.append(pb), outp.append(pb)
        elif isinstance(pa, Replicate) and isinstance(pb, Replicate):
            ta.append(pa), tb.append(pb), outp.append(Replicate())
        else:
            ta.append(Replicate()), tb.append(Replicate()), outp.append(Replicate())
    la = _prepare(a, tuple(ta), outp)
    lb = la if b is a else _prepare(b, tuple(tb), outp)
    args2 = [la if x is a else lb if x is b else x for x in args]
    out = func(*args2, **kwargs)
    return _wrap(out, shapes, mesh, outp)


def _linear(func, args, kwargs):
    from ... import matmul

    x = args[0]
    weight = args[1] if len(args) > 1 else kwargs["weight"]
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    out = matmul(x, weight.t())
    return out if bias is None else out + bias


# -- views -------------------------------------------------------------------------------------

def _prefix(shape, i):
    p = 1
    for s in shape[:i]:
        p *= s
    return p


def _view_placement(p, in_shape, out_shape, k):
    """Where ``Shard(p.dim)`` goes through a reshape, or None when it cannot follow."""
    d = p.dim
    n = in_shape[d]
    if n % k:
        return None
    pre = _prefix(in_shape, d)
    for o in range(len(out_shape)):
        if _prefix(out_shape, o) == pre and out_shape[o] != 1 and out_shape[o] % k == 0 and \
                (out_shape[o] % n == 0 or n % out_shape[o] == 0):
            return Shard(o)
    return None


def _view(func, name, args, kwargs, x):
    mesh, spec = x._spec.mesh, x._spec
    if name in ("view", "reshape") and len(args) > 1 and not isinstance(args[1], (int, list,
                                                                                   tuple)):
        return _replicated(func, args, kwargs)
    shapes = _meta_call(func, args, kwargs)
    out_shape = tuple(shapes.shape)
    target, outp = list(spec.placements), []
    for m, p in enumerate(spec.placements):
        if isinstance(p, Shard):
            q = _view_placement(p, spec.shape, out_shape, mesh.size(m))
            if q is None:
                target[m] = Replicate()
                outp.append(Replicate())
            else:
                outp.append(q)
        else:
            outp.append(p)
    local = _prepare(x, tuple(target), outp)
    shape = local_layout(out_shape, mesh, outp)[0]
    out = local.view(shape) if name in ("view", "view_as") and local.is_contiguous() \
        else local.reshape(shape)
    return _wrap(out, shapes, mesh, outp)


def _permute_map(name, args, kwargs, nd):
    """``old dim -> new dim`` (None: dropped) for a dimension-moving op."""
    rest = list(args[1:])
    if name in ("t", "T") and nd <= 2:
        return {0: 1, 1: 0} if nd == 2 else {0: 0}
    if name == "T":
        return {i: nd - 1 - i for i in range(nd)}
    if name == "mT":
        mp = {i: i for i in range(nd)}
        mp[nd - 1], mp[nd - 2] = nd - 2, nd - 1
        return mp
    if name in ("transpose", "swapaxes", "swapdims"):
        a = norm_dim(rest[0] if rest else kwargs["dim0"], nd)
        b = norm_dim(rest[1] if len(rest) > 1 else kwargs["dim1"], nd)
        mp = {i: i for i in range(nd)}
        mp[a], mp[b] = b, a
        return mp
    if name == "permute":
        dims = rest[0] if len(rest) == 1 and isinstance(rest[0], (list, tuple)) else rest
        dims = [norm_dim(int(d), nd) for d in (dims or kwargs["dims"])]
        return {old: new for new, old in enumerate(dims)}
    if name in ("movedim", "moveaxis"):
        src, dst = rest[0] if rest else kwargs["source"], rest[1] if len(rest) > 1 \
            else kwargs["destination"]
        src = [src] if isinstance(src, int) else list(src)
        dst = [dst] if isinstance(dst, int) else list(dst)
        src, dst = [norm_dim(s, nd) for s in src], [norm_dim(s, nd) for s in dst]
        order = [i for i in range(nd) if i not in src]
        out = [None] * nd
        for s, t in zip(src, dst):
            out[t] = s
        it = iter(order)
        out = [o if o is not None else next(it) for o in out]
        return {old: new for new, old in enumerate(out)}
    if name == "unsqueeze":
        d = rest[0] if rest else kwargs["dim"]
        d = d + nd + 1 if d < 0 else d
        return {i: (i if i < d else i + 1) for i in range(nd)}
    return None


def _permute(func, name, args, kwargs, x):
    mesh, spec = x._spec.mesh, x._spec
    shapes = _meta_call(func, args, kwargs)
    if name == "squeeze":
        out_shape = tuple(shapes.shape)
        # a squeeze is a reshape that drops size-1 dimensions
        target, outp = list(spec.placements), []
        for m, p in enumerate(spec.placements):
            if isinstance(p, Shard):
                q = _view_placement(p, spec.shape, out_shape, mesh.size(m))
                target[m] = p if q is not None else Replicate()
                outp.append(q if q is not None else Replicate())
            else:
                outp.append(p)
        local = _prepare(x, tuple(target), outp)
        out = local.reshape(local_layout(out_shape, mesh, outp)[0])
        return _wrap(out, shapes, mesh, outp)
    mp = _permute_map(name, args, kwargs, x.ndim)
    outp = [Shard(mp[p.dim]) if isinstance(p, Shard) else p for p in spec.placements]
    local = _prepare(x, spec.placements, outp)
    out = func(local, *args[1:], **kwargs)
    return _wrap(out, shapes, mesh, outp)


def _expand(func, name, args, kwargs, x):
    """``expand``/``broadcast_to``: a shard stays on a dimension that is not expanded."""
    mesh, spec = x._spec.mesh, x._spec
    shapes = _meta_call(func, args, kwargs)
    out_shape = tuple(shapes.shape)
    lead = len(out_shape) - x.ndim
    target, outp = list(spec.placements), []
    for m, p in enumerate(spec.placements):
        if isinstance(p, Shard) and out_shape[p.dim + lead] != spec.shape[p.dim]:
            target[m] = Replicate()
            p = Replicate()
        outp.append(Shard(p.dim + lead) if isinstance(p, Shard) else p)
    local = _prepare(x, tuple(target), outp)
    size = local_layout(out_shape, mesh, outp)[0]
    out = local.expand(size)
    return _wrap(out, shapes, mesh, outp)


def _index_map(index, ndim):
    """``input dim -> output dim`` for a basic index (ints, slices, None, Ellipsis), with
    the index entry each input dim gets; None for advanced indexing."""
    items = list(index) if isinstance(index, tuple) else [index]
    if any(not (i is None or i is Ellipsis or isinstance(i, (int, slice)))
           or isinstance(i, bool) for i in items):
        return None
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items[k:k + 1] = [slice(None)] * (ndim - used)
    items += [slice(None)] * (ndim - sum(1 for i in items if i is not None))
    out, i_in, i_out = {}, 0, 0
    for it in items:
        if it is None:
            i_out += 1
        elif isinstance(it, int):
            out[i_in] = (None, it)
            i_in += 1
        else:
            out[i_in] = (i_out, it)
            i_in += 1
            i_out += 1
    return out


def _getitem(func, name, args, kwargs, x):
    """Basic indexing that leaves the sharded dimensions whole runs on the pieces."""
    mesh, spec = x._spec.mesh, x._spec
    index = args[1] if len(args) > 1 else kwargs.get("indices")
    mp = _index_map(index, x.ndim)
    if mp is None:
        return _replicated(func, args, kwargs)
    outp = []
    for p in spec.placements:
        if isinstance(p, Shard):
            o, it = mp[p.dim]
            if o is None or it != slice(None):
                return _replicated(func, args, kwargs)
            outp.append(Shard(o))
        else:
            outp.append(p)
    shapes = _meta_call(func, args, kwargs)
    local = _prepare(x, spec.placements, outp)
    return _wrap(func(local, index), shapes, mesh, outp)


# -- nn functions ------------------------------------------------------------------------------

def _norm_layer(func, name, args, kwargs, dts):
    x = args[0]
    if not isinstance(x, _dtensor_cls()):
        return _replicated(func, args, kwargs)
    mesh, spec = x._spec.mesh, x._spec
    shape_arg = args[1] if len(args) > 1 else kwargs.get("normalized_shape")
    nn_dims = len(shape_arg) if isinstance(shape_arg, (list, tuple)) else 1
    first = x.ndim - nn_dims
    if any(isinstance(p, Partial) or (isinstance(p, Shard) and p.dim >= first)
           for p in spec.placements):
        return _replicated(func, args, kwargs)
    targets = {id(d): (spec.placements if d is x else (Replicate(),) * mesh.ndim) for d in dts}
    return _run(func, args, kwargs, targets, spec.placements)


def _softmax(func, name, args, kwargs, x):
    spec = x._spec
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    if dim is None or any(isinstance(p, Partial) or (isinstance(p, Shard)
                                                     and p.dim == norm_dim(dim, x.ndim))
                          for p in spec.placements):
        return _replicated(func, args, kwargs)
    return _run(func, args, kwargs, {id(x): spec.placements}, spec.placements)


def _embedding(func, args, kwargs, dts):
    DT = _dtensor_cls()
    idx, weight = args[0], args[1] if len(args) > 1 else kwargs["weight"]
    if not (isinstance(idx, DT) and isinstance(weight, DT)):
        return _replicated(func, args, kwargs)
    mesh = weight._spec.mesh
    ti, tw, outp = [], [], []
    out_nd = idx.ndim + 1
    for m in range(mesh.ndim):
        pi, pw = idx._spec.placements[m], weight._spec.placements[m]
        if isinstance(pw, Shard) and pw.dim == 1 and isinstance(pi, Replicate):
            ti.append(pi), tw.append(pw), outp.append(Shard(out_nd - 1))
        elif isinstance(pi, Shard) and isinstance(pw, Replicate):
            ti.append(pi), tw.append(pw), outp.append(pi)
        else:
            ti.append(Shard(pi.dim) if isinstance(pi, Shard) else Replicate())
            tw.append(Replicate())
            outp.append(ti[-1])
    return _run(func, args, kwargs, {id(idx): tuple(ti), id(weight): tuple(tw)}, tuple(outp))


def _cat(func, name, args, kwargs, dts):
    """``cat``/``stack``: per mesh dimension, a dimension other than the joined one that some
    input shards (the first such) is sharded in all of them and in the result (replicated
    inputs are cut to match), as PyTorch's rule; otherwise every input is made whole."""
    tensors = args[0] if args else kwargs["tensors"]
    dim = kwargs.get("dim", args[1] if len(args) > 1 else 0)
    DT = _dtensor_cls()
    if not tensors or not all(isinstance(t, DT) for t in tensors):
        return _replicated(func, args, kwargs)
    first = tensors[0]
    nd = first.ndim
    stack = name == "stack"
    d = norm_dim(dim, nd + (1 if stack else 0))
    mesh = first._spec.mesh
    targets = {id(t): [] for t in tensors}
    outp = []
    for m in range(mesh.ndim):
        ps = [t._spec.placements[m] for t in tensors]
        keep = next((p for p in ps if isinstance(p, Shard) and (stack or p.dim != d)), None)
        if keep is not None and not all(p == keep or isinstance(p, Replicate) for p in ps):
            keep = None
        for t in tensors:
            targets[id(t)].append(keep if keep is not None else Replicate())
        outp.append(Replicate() if keep is None else
                    Shard(keep.dim + (1 if stack and keep.dim >= d else 0)))
    return _run(func, args, kwargs, {k: tuple(v) for k, v in targets.items()}, tuple(outp))


def _attention(func, args, kwargs, dts):
    """``scaled_dot_product_attention``: query, key and value (and a DTensor mask) sharded
    alike along the batch or the heads dimension run on the pieces, the output sharded so
    (PyTorch's rule for its fused attention kernels); other layouts are made whole."""
    DT = _dtensor_cls()
    q = args[0] if args else kwargs.get("query")
    k = args[1] if len(args) > 1 else kwargs.get("key")
    v = args[2] if len(args) > 2 else kwargs.get("value")
    if not all(isinstance(t, DT) for t in (q, k, v)) or q.ndim != 4 or k.ndim != 4 or \
            v.ndim != 4:
        return _replicated(func, args, kwargs)
    mesh = q._spec.mesh
    outp = []
    for m in range(mesh.ndim):
        ps = {d._spec.placements[m] for d in dts}
        p = ps.pop() if len(ps) == 1 else None
        outp.append(p if isinstance(p, (Replicate, Shard)) and (
            isinstance(p, Replicate) or p.dim in (0, 1)) else Replicate())
    if all(isinstance(p, Replicate) for p in outp) and any(
            not isinstance(p, Replicate) for d in dts for p in d._spec.placements):
        return _replicated(func, args, kwargs)
    return _run(func, args, kwargs, {id(d): tuple(outp) for d in dts}, tuple(outp))


def _like(func, name, args, kwargs, x):
    spec = x._spec
    placements = tuple(Replicate() if isinstance(p, Partial) else p for p in spec.placements)
    from ._api import DTensor

    if name in ("rand_like", "randn_like", "randint_like"):
        from ... import empty

        whole = func(empty(spec.shape, dtype=x.dtype), *args[1:], **kwargs)
        local = redistribute_local(whole, spec.mesh, spec.shape,
                                   (Replicate(),) * spec.mesh.ndim, placements)
    else:
        local = func(x._local_tensor, *args[1:], **kwargs)
        if isinstance(local, DTensor):
            local = local._local_tensor
    return DTensor._make(local, spec.mesh, placements, spec.shape)


def _meta_query(func, name, args, kwargs, x):
    if name in ("size", "stride", "dim", "ndimension", "numel", "nelement"):
        spec = x._spec
        rest = list(args[1:])
        if name in ("dim", "ndimension"):
            return len(spec.shape)
        if name in ("numel", "nelement"):
            n = 1
            for s in spec.shape:
                n *= s
            return n
        from ..._core.size import Size

        vals = spec.shape if name == "size" else spec.stride
        d = kwargs.get("dim", rest[0] if rest else None)
        if d is None:
            return Size(vals) if name == "size" else tuple(vals)
        return vals[norm_dim(d, len(vals))]
    return func(x._local_tensor, *args[1:], **kwargs)


# -- the entry ---------------------------------------------------------------------------------

def dispatch(func, args, kwargs):
    """Run ``func`` on DTensor arguments (NOTE [ DTensor ops ])."""
    name = getattr(func, "__name__", "")
    name = _INPLACE_DUNDER.get(name, name)
    if name in ("__setitem__", "_setitem"):
        name = "setitem_"
    dts = _dtensors(args, kwargs)
    if not dts:
        return func(*args, **kwargs)
    x = dts[0]
    mesh = x._spec.mesh
    for d in dts[1:]:
        if d._spec.mesh is not mesh and not _same(d._spec.mesh, mesh):
            raise RuntimeError(f"{_opname(name)}: DTensor does not support cross-mesh "
                               "operation yet!")
    if name in _META and args and args[0] is x:
        return _meta_query(func, name, args, kwargs, x)
    if name == "requires_grad_":
        x._local_tensor.requires_grad_(*args[1:], **kwargs)
        return x
    if name in ("detach", "detach_"):
        from ._api import DTensor

        if name == "detach_":
            x._local_tensor.detach_()
            return x
        return DTensor._make(x._local_tensor.detach(), mesh, x._spec.placements, x._spec.shape)
    if name in ("retain_grad", "register_hook", "register_post_accumulate_grad_hook"):
        return _hooked(func, name, args, kwargs, x)
    if name in ("data_ptr", "untyped_storage", "storage"):
        return func(x._local_tensor, *args[1:], **kwargs)
    checked, kwargs_checked = _check_plain(name, args, kwargs, mesh)
    if checked is not args or kwargs_checked is not kwargs:  # loss_parallel wrapped some
        args, kwargs = checked, kwargs_checked
        dts = _dtensors(args, kwargs)
    if name in _LIKE:
        return _like(func, name, args, kwargs, x)
    same = _same_layout(func, name, args, kwargs, dts)
    if same is not _NO:
        return same
    if any(isinstance(p, _StridedShard) for d in dts for p in d._spec.placements):
        if name.endswith("_") and not name.startswith("__") or name == "setitem_":
            return _inplace_whole(func, name, args, kwargs, x) if args and args[0] is x \
                else _replicated(func, args, kwargs)
        return _replicated(func, args, kwargs)
    if name.endswith("_") and not name.startswith("__") or name == "setitem_":
        return _inplace(func, name, args, kwargs, dts)
    if name in _POINTWISE:
        return _pointwise(func, name, args, kwargs, dts)
    if name in ("sum", "mean", "amax", "amin", "nansum") and args and args[0] is x:
        return _reduction(func, name, args, kwargs, x)
    if name in ("max", "min") and len(args) == 1 and not kwargs and args[0] is x:
        # the whole-tensor form: one value, a Partial(max/min) of the pieces' own
        return _reduction(func, "a" + name, args, kwargs, x)
    if name in _MATMUL and len(args) >= 2 and all(isinstance(a, _dtensor_cls())
                                                   for a in args[:2]):
        return _matmul(func, name, args, kwargs, args[0], args[1])
    if name == "linear":
        return _linear(func, args, kwargs)
    if name in _VIEWS and args and args[0] is x:
        return _view(func, name, args, kwargs, x)
    if name in _PERMUTES and args and args[0] is x:
        return _permute(func, name, args, kwargs, x)
    if name in ("expand", "broadcast_to") and args and args[0] is x:
        return _expand(func, name, args, kwargs, x)
    if name == "_getitem" and args and args[0] is x:
        return _getitem(func, name, args, kwargs, x)
    if name in ("numpy", "tolist"):
        raise RuntimeError(f".{name}() is not supported for tensor subclasses, got DTensor; "
                           "call full_tensor() or to_local() first")
    if name in ("layer_norm", "rms_norm"):
        return _norm_layer(func, name, args, kwargs, dts)
    if name in ("softmax", "log_softmax") and args and args[0] is x:
        return _softmax(func, name, args, kwargs, x)
    if name == "embedding":
        return _embedding(func, args, kwargs, dts)
    if name in ("cat", "concat", "concatenate", "stack"):
        return _cat(func, name, args, kwargs, dts)
    if name == "scaled_dot_product_attention":
        return _attention(func, args, kwargs, dts)
    return _replicated(func, args, kwargs)


def _hooked(func, name, args, kwargs, x):
    from ._api import DTensor

    if name == "retain_grad":
        return x._local_tensor.retain_grad()
    hook = args[1] if len(args) > 1 else kwargs["hook"]
    spec = x._spec

    if name == "register_post_accumulate_grad_hook":
        return x._local_tensor.register_post_accumulate_grad_hook(lambda _t: hook(x))

    def local_hook(g):
        out = hook(DTensor._make(g, spec.mesh, tuple(Replicate() if isinstance(p, Partial)
                                                     else p for p in spec.placements),
                                 spec.shape))
        return out._local_tensor if isinstance(out, DTensor) else out

    return x._local_tensor.register_hook(local_hook)


def _same(a, b) -> bool:
    from ._api import _same_mesh

    return _same_mesh(a, b)


@contextlib.contextmanager
def loss_parallel():
    """Within it, loss functions accept DTensor logits sharded on the class dimension with
    plain-tensor targets (taken as replicated); ember computes the loss on the gathered
    class dimension, which gives the same values and gradients.

    Returns:
        a context manager.

    Example::

        >>> with loss_parallel():  # doctest: +SKIP
        ...     loss = F.cross_entropy(logits, labels)
        ...     loss.backward()
    """
    prev = _loss_parallel[0]
    _loss_parallel[0] = True
    try:
        yield
    finally:
        _loss_parallel[0] = prev
