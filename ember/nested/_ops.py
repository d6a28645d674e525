"""How each public function runs on nested tensors (NOTE [ Nested tensors ] in _tensor.py).

``run(func, args, kwargs)`` is ``NestedTensor.__torch_function__``: it looks the function up
by name in ``_HANDLERS`` (ops with dimensions, views, attention, autograd) or in the
elementwise set, which runs the function once on the values. Anything else raises
``NotImplementedError`` naming the op, as PyTorch's nested tensors do.
"""

from __future__ import annotations

from .._core.tensor import Tensor
from ._tensor import NestedInt, NestedTensor, _like, _make, _offsets_of

# ------------------------------------------------------------------------------------------------
# elementwise: run once on the values

_ELEMENTWISE_NAMES = """
abs absolute neg negative positive exp exp2 expm1 log log2 log10 log1p sqrt rsqrt square sin cos
tan asin acos atan sinh cosh tanh asinh acosh atanh arcsin arccos arctan arcsinh arccosh arctanh
sigmoid logit erf erfc erfinv lgamma digamma reciprocal sign sgn signbit floor ceil round trunc
frac fix nan_to_num isnan isinf isfinite isposinf isneginf isreal real imag conj angle deg2rad
rad2deg
add sub subtract mul multiply div divide true_divide floor_divide remainder fmod pow
float_power atan2 arctan2 hypot maximum minimum fmax fmin copysign nextafter logaddexp
logaddexp2 xlogy eq ne lt le gt ge greater less greater_equal less_equal not_equal equal
logical_and logical_or logical_xor logical_not bitwise_and bitwise_or bitwise_xor bitwise_not
bitwise_left_shift bitwise_right_shift clamp clip clamp_min clamp_max where masked_fill lerp
addcmul addcdiv
relu relu6 gelu silu mish elu selu celu leaky_relu hardtanh hardswish hardsigmoid softplus
softsign tanhshrink logsigmoid threshold rrelu prelu hardshrink softshrink dropout alpha_dropout
ones_like zeros_like empty_like full_like rand_like randn_like randint_like
to type type_as float double half bfloat16 int long short char byte bool cpu cuda
copy_ fill_ zero_ normal_ uniform_ bernoulli_ exponential_ requires_grad_
""".split()

_DUNDERS = """
__add__ __radd__ __iadd__ __sub__ __rsub__ __isub__ __mul__ __rmul__ __imul__ __truediv__
__rtruediv__ __itruediv__ __floordiv__ __rfloordiv__ __ifloordiv__ __mod__ __rmod__ __imod__
__pow__ __rpow__ __ipow__ __neg__ __pos__ __abs__ __invert__ __and__ __rand__ __iand__ __or__
__ror__ __ior__ __xor__ __rxor__ __ixor__ __lshift__ __rlshift__ __ilshift__ __rshift__
__rrshift__ __irshift__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__
""".split()

_ELEMENTWISE = set(_ELEMENTWISE_NAMES) | set(_DUNDERS) | {
    n + "_" for n in _ELEMENTWISE_NAMES if not n.endswith("_")}
#: ones whose result is a plain value, not a tensor of the values' shape
_METADATA = {"is_floating_point", "is_complex", "is_signed", "element_size", "get_device",
             "is_inference", "is_pinned", "is_shared", "data_ptr", "untyped_storage",
             "nbytes", "itemsize"}


def _is_inplace(name):
    return (name.endswith("_") and not name.endswith("__")) or (
        name.startswith("__i") and name not in ("__invert__",))


def _first_nt(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, NestedTensor):
            return a
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, NestedTensor):
                    return b
    return None


def _shape_str(t):
    if isinstance(t, NestedTensor):
        if t._comps is not None:
            return "(nested strided)"
        return "(" + ", ".join(str(s) for s in t._jagged_shape()) + ")"
    return str(tuple(t.shape))


def _same_structure(a, prim):
    return (a._comps is None and prim._comps is None and a._offsets is prim._offsets
            and a._lengths is prim._lengths and a._ragged_idx == prim._ragged_idx)


def _values_arg(a, prim, name):
    """``a`` as it combines with ``prim``'s values, or ``_PER_COMPONENT`` when it cannot."""
    if isinstance(a, NestedTensor):
        if a is prim or _same_structure(a, prim):
            return a._values
        if a._comps is None and prim._comps is None and a._ragged_idx == prim._ragged_idx \
                and a._lengths is None and prim._lengths is None and \
                _nested_int_of(a) == _nested_int_of(prim):
            return a._values
        raise RuntimeError(f"cannot call binary pointwise function {name} with inputs of "
                           f"shapes {_shape_str(prim)} and {_shape_str(a)}")
    if not isinstance(a, Tensor):
        return a
    nd = prim.dim()
    r = prim._ragged_idx - 1  # the ragged dimension among the components' dims
    if a.dim() < nd:
        pos = r - (nd - 1 - a.dim())
        if pos >= 0 and a.shape[pos] != 1:
            raise RuntimeError(f"cannot call binary pointwise function {name} with inputs of "
                               f"shapes {_shape_str(prim)} and {tuple(a.shape)}: a dense "
                               "tensor cannot have a size along the ragged dimension")
        return a
    if a.dim() == nd:
        if a.shape[r + 1] != 1:
            raise RuntimeError(f"cannot call binary pointwise function {name} with inputs of "
                               f"shapes {_shape_str(prim)} and {tuple(a.shape)}: a dense "
                               "tensor cannot have a size along the ragged dimension")
        if a.shape[0] == 1:
            return a[0]
        if a.shape[0] != len(prim) or prim._lengths is not None:
            raise RuntimeError(f"cannot call binary pointwise function {name} with inputs of "
                               f"shapes {_shape_str(prim)} and {tuple(a.shape)}")
        return _per_row(a, prim)
    raise RuntimeError(f"cannot call binary pointwise function {name} with inputs of shapes "
                       f"{_shape_str(prim)} and {tuple(a.shape)}")


def _nested_int_of(nt):
    from ._tensor import _nested_int

    return _nested_int(nt._offsets)


def _per_row(a, prim):
    """A dense ``(B, ..., 1, ...)`` tensor repeated along the ragged dimension so that it
    lines up with ``prim``'s values, row by row."""
    import ember

    r = prim._ragged_idx - 1
    lens = ember.tensor(prim._lens(), dtype=ember.int64, device=a.device)
    rows = ember.repeat_interleave(ember.arange(len(prim), device=a.device), lens)
    per_batch = a.select(r + 1, 0)  # (B, the other dims)
    return per_batch.index_select(0, rows).movedim(0, r)


def _elementwise(func, name, args, kwargs, prim):
    if prim._comps is not None:
        return _per_component(func, args, kwargs, prim)
    new_args = [_values_arg(a, prim, name) for a in args]
    new_kwargs = {k: _values_arg(v, prim, name) for k, v in kwargs.items()}
    out = func(*new_args, **new_kwargs)
    if _is_inplace(name) or out is prim._values:
        first = args[0] if args else None
        return first if isinstance(first, NestedTensor) else out
    return _wrap_values(out, prim)


def _wrap_values(out, prim, ragged_idx=None):
    if isinstance(out, Tensor):
        if out.dim() == 0:
            return out
        return _like(prim, out, ragged_idx)
    if isinstance(out, tuple) and out and all(isinstance(o, Tensor) for o in out):
        items = [_wrap_values(o, prim, ragged_idx) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)
    return out


# ------------------------------------------------------------------------------------------------
# once per component


def _component_args(args, i, comps_of, batch):
    out = []
    for a in args:
        if isinstance(a, NestedTensor):
            out.append(comps_of(a)[i])
        elif isinstance(a, (list, tuple)) and any(isinstance(b, NestedTensor) for b in a):
            out.append(type(a)(comps_of(b)[i] if isinstance(b, NestedTensor) else b for b in a))
        elif isinstance(a, Tensor) and a.dim() == batch[1] and a.dim() > 0 and \
                a.shape[0] in (1, batch[0]) and batch[0] > 1:
            out.append(a[i if a.shape[0] > 1 else 0])
        else:
            out.append(a)
    return out


def _per_component(func, args, kwargs, prim, repack=True):
    cache = {}

    def comps_of(nt):
        key = id(nt)
        if key not in cache:
            cache[key] = nt.unbind()
        return cache[key]

    batch = (len(prim), prim.dim())
    results = []
    keys = list(kwargs)
    for i in range(len(prim)):
        a = _component_args(args, i, comps_of, batch)
        kv = _component_args([kwargs[k] for k in keys], i, comps_of, batch)
        results.append(func(*a, **dict(zip(keys, kv))))
    return _repack(results, prim) if repack else results


def _repack(results, prim):
    """Per-component results back into a nested tensor shaped as ``prim`` (or a dense stack
    when the ragged dimension is gone)."""
    import ember

    if results and isinstance(results[0], tuple):
        fields = [_repack([r[k] for r in results], prim) for k in range(len(results[0]))]
        r0 = results[0]
        return type(r0)(*fields) if hasattr(r0, "_fields") else type(r0)(fields)
    if prim._comps is not None:
        return _make(comps=list(results))
    r = prim._ragged_idx - 1
    lens = prim._lens()
    nd = prim.dim() - 1
    shapes = [tuple(t.shape) for t in results]
    if all(len(s) == nd for s in shapes) and all(s[r] == n for s, n in zip(shapes, lens)) and \
            all(s[:r] + s[r + 1:] == shapes[0][:r] + shapes[0][r + 1:] for s in shapes):
        values = ember.cat(results, r) if len(results) > 1 else results[0]
        if prim._lengths is None:
            return _like(prim, values)
        return _make(values, _offsets_of(lens, values.device), None, prim._ragged_idx)
    if all(s == shapes[0] for s in shapes):
        return ember.stack(results)
    raise RuntimeError("the op's per-component results do not form a jagged nested tensor "
                       "(more than one ragged dimension)")


# ------------------------------------------------------------------------------------------------
# ops with dimensions


def _norm_dim(prim, d, ndim=None):
    n = prim.dim() if ndim is None else ndim
    if isinstance(d, NestedInt) or not isinstance(d, int):
        raise TypeError(f"dim must be an int, got {type(d).__name__}")
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {d})")
    return d % n


def _get(args, kwargs, pos, name, default=None):
    if len(args) > pos:
        return args[pos], True
    return kwargs.get(name, default), False


def _set(args, kwargs, pos, name, value, positional):
    args = list(args)
    kwargs = dict(kwargs)
    if positional:
        args[pos] = value
    else:
        kwargs[name] = value
    return args, kwargs


def _replace_nt(args, kwargs, prim, by):
    return [by if a is prim else a for a in args], {
        k: (by if v is prim else v) for k, v in kwargs.items()}


_REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "all",
               "any", "logsumexp", "std", "var", "nansum", "nanmean", "count_nonzero", "norm",
               "std_mean", "var_mean", "median", "nanmedian"}


def _reduction(func, name, args, kwargs, prim):
    d, positional = _get(args, kwargs, 1, "dim")
    if name in ("max", "min") and isinstance(d, Tensor):
        return _elementwise(func, name, args, kwargs, prim)  # max(input, other)
    if d is None:
        if prim._comps is not None:
            raise NotImplementedError(f"aten.{name}.default: a strided nested tensor reduces "
                                      "along a dimension only")
        import ember

        flat = prim._values if prim._lengths is None else ember.cat(
            [c.reshape(-1) for c in prim.unbind()])
        a, k = _replace_nt(args, kwargs, prim, flat)
        return func(*a, **k)
    dims = tuple(d) if isinstance(d, (list, tuple)) else (d,)
    dims = tuple(sorted({_norm_dim(prim, x) for x in dims}))
    r = prim._ragged_idx
    if 0 in dims:
        if prim._comps is None and r in dims and prim._lengths is None:
            vd = tuple(x - 1 for x in dims if x != 0)
            new = vd if isinstance(d, (list, tuple)) else vd[0]
            a, k = _set(*_replace_nt(args, kwargs, prim, prim._values), 1, "dim", new,
                        positional)
            return func(*a, **k)
        raise RuntimeError(f"{name}(): reducing across the batch dimension but not the ragged "
                           "dimension is not supported for nested tensors")
    if prim._comps is None and r in dims:
        if len(dims) > 1:
            raise RuntimeError(f"{name}(): reducing along a ragged and non-batch dimension is "
                               "not supported for nested tensors")
        a, k = _set(args, kwargs, 1, "dim", r - 1, positional)
        return _per_component(func, a, k, prim)
    comp_dims = tuple(x - 1 for x in dims)
    new = comp_dims if isinstance(d, (list, tuple)) else comp_dims[0]
    if prim._comps is not None:
        a, k = _set(args, kwargs, 1, "dim", new, positional)
        return _per_component(func, a, k, prim)
    a, k = _set(*_replace_nt(args, kwargs, prim, prim._values), 1, "dim", new, positional)
    out = func(*a, **k)
    first = out[0] if isinstance(out, tuple) else out
    removed = prim._values.dim() - first.dim()
    new_r = r - sum(1 for x in dims if x < r) if removed else r
    return _wrap_values(out, prim, new_r)


def _softmax(func, name, args, kwargs, prim):
    d, positional = _get(args, kwargs, 1, "dim")
    if d is None:
        raise RuntimeError(f"{name}(): a nested tensor needs an explicit dim")
    d = _norm_dim(prim, d)
    if d == 0:
        raise RuntimeError(f"{name}(): not supported for nested tensors on dim=0")
    if prim._comps is not None or d == prim._ragged_idx:
        a, k = _set(args, kwargs, 1, "dim", d - 1, positional)
        return _per_component(func, a, k, prim)
    a, k = _set(*_replace_nt(args, kwargs, prim, prim._values), 1, "dim", d - 1, positional)
    return _wrap_values(func(*a, **k), prim)


def _cumulative(func, name, args, kwargs, prim):
    d, positional = _get(args, kwargs, 1, "dim")
    d = _norm_dim(prim, d)
    if d == 0:
        raise RuntimeError(f"{name}(): not supported for nested tensors on dim=0")
    a, k = _set(args, kwargs, 1, "dim", d - 1, positional)
    if prim._comps is not None or d == prim._ragged_idx:
        return _per_component(func, a, k, prim)
    a, k = _replace_nt(a, k, prim, prim._values)
    return _wrap_values(func(*a, **k), prim)


def _trailing_norm(func, name, args, kwargs, prim):
    shape, _ = _get(args, kwargs, 1, "normalized_shape")
    k = 1 if isinstance(shape, int) else len(shape)
    nd = prim.dim()
    if prim._comps is not None or prim._ragged_idx >= nd - k:
        if prim._comps is None:
            raise RuntimeError(f"{name}(): normalizing over the ragged dimension is not "
                               "supported for nested tensors")
        return _per_component(func, args, kwargs, prim)
    a, kw = _replace_nt(args, kwargs, prim, prim._values)
    return _wrap_values(func(*a, **kw), prim)


def _linear(func, name, args, kwargs, prim):
    if args and args[0] is prim and prim._comps is None and prim._ragged_idx != prim.dim() - 1:
        others = list(args[1:]) + list(kwargs.values())
        if not any(isinstance(o, NestedTensor) for o in others) and all(
                not isinstance(o, Tensor) or o.dim() <= 2 for o in others):
            a, kw = _replace_nt(args, kwargs, prim, prim._values)
            return _wrap_values(func(*a, **kw), prim)
    try:
        return _per_component(func, args, kwargs, prim)
    except RuntimeError as e:
        if "ragged" not in str(e):
            raise
        a = args[0] if args else prim
        b = args[1] if len(args) > 1 else None
        raise RuntimeError(f"{name}(): not supported between inputs of shapes {_shape_str(a)} "
                           f"and {_shape_str(b) if b is not None else '?'}") from None


def _attention(func, name, args, kwargs, prim):
    q = args[0] if args else kwargs.get("query")
    if not isinstance(q, NestedTensor):
        raise RuntimeError(f"{name}(): the query must be a nested tensor when any input is")
    for t in list(args[1:3]) + [kwargs.get("key"), kwargs.get("value")]:
        if t is not None and isinstance(t, Tensor) and not isinstance(t, NestedTensor):
            raise RuntimeError(f"{name}(): query, key and value must all be nested tensors")
    return _per_component(func, args, kwargs, q)


# ------------------------------------------------------------------------------------------------
# views and shape ops


def _require_regular(prim, dims, name):
    for d in dims:
        if d == 0:
            raise RuntimeError(f"{name}(): not supported for NestedTensor on dim=0")
        if prim._comps is None and d == prim._ragged_idx:
            raise RuntimeError(f"{name}(): not supported for NestedTensor on ragged dim")


def _transpose(func, name, args, kwargs, prim):
    d0, _ = _get(args, kwargs, 1, "dim0")
    d1, _ = _get(args, kwargs, 2, "dim1")
    d0, d1 = _norm_dim(prim, d0), _norm_dim(prim, d1)
    if 0 in (d0, d1) and d0 != d1:
        raise RuntimeError(f"{name}(): not supported for NestedTensor on dim=0")
    if prim._comps is not None:
        return _make(comps=[c.transpose(d0 - 1, d1 - 1) for c in prim._comps])
    r = prim._ragged_idx
    new_r = d1 if r == d0 else d0 if r == d1 else r
    return _like(prim, prim._values.transpose(d0 - 1, d1 - 1), new_r)


def _permute(func, name, args, kwargs, prim):
    dims = args[1:] if len(args) > 1 else kwargs.get("dims")
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    dims = [_norm_dim(prim, d) for d in dims]
    if len(dims) != prim.dim() or sorted(dims) != list(range(prim.dim())):
        raise RuntimeError("permute(): the number of dims does not match the nested tensor's")
    if dims[0] != 0:
        raise RuntimeError("permute(): not supported for NestedTensor on dim=0")
    inner = [d - 1 for d in dims[1:]]
    if prim._comps is not None:
        return _make(comps=[c.permute(inner) for c in prim._comps])
    return _like(prim, prim._values.permute(inner), dims.index(prim._ragged_idx))


def _unsqueeze(func, name, args, kwargs, prim):
    d, _ = _get(args, kwargs, 1, "dim")
    d = _norm_dim(prim, d, prim.dim() + 1)
    if d == 0:
        raise RuntimeError("unsqueeze(): not supported for NestedTensor on dim=0")
    if prim._comps is not None:
        return _make(comps=[c.unsqueeze(d - 1) for c in prim._comps])
    r = prim._ragged_idx
    return _like(prim, prim._values.unsqueeze(d - 1), r + 1 if d <= r else r)


def _squeeze(func, name, args, kwargs, prim):
    d, _ = _get(args, kwargs, 1, "dim")
    nd = prim.dim()
    if d is None:
        dims = [i for i in range(1, nd) if (prim._comps is not None or i != prim._ragged_idx)
                and _regular_size(prim, i) == 1]
    else:
        dims = [_norm_dim(prim, x) for x in (d if isinstance(d, (list, tuple)) else (d,))]
        _require_regular(prim, dims, name)
        dims = [x for x in dims if _regular_size(prim, x) == 1]
    if not dims:
        return prim
    inner = tuple(x - 1 for x in dims)
    if prim._comps is not None:
        return _make(comps=[c.squeeze(inner) for c in prim._comps])
    r = prim._ragged_idx
    return _like(prim, prim._values.squeeze(inner), r - sum(1 for x in dims if x < r))


def _regular_size(prim, d):
    if prim._comps is not None:
        sizes = {int(c.shape[d - 1]) for c in prim._comps}
        return sizes.pop() if len(sizes) == 1 else None
    return int(prim._values.shape[d - 1])


def _shape_arg(args, kwargs, key):
    shape = args[1:] if len(args) > 1 else kwargs.get(key, ())
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    return list(shape)


def _view(func, name, args, kwargs, prim):
    shape = _shape_arg(args, kwargs, "shape" if name == "reshape" else "size")
    if prim._comps is not None:
        if len(shape) < 1 or shape[0] != len(prim._comps):
            raise RuntimeError(f"{name}(): a strided nested tensor's shape must give its "
                               "batch size: the batch dimension can neither change nor be "
                               "inferred")
        return _make(comps=[func(c, *[int(s) for s in shape[1:]]) for c in prim._comps])
    r = prim._ragged_idx
    j = _nested_int_of(prim)
    v = prim._values
    if len(shape) <= r or shape[0] not in (-1, len(prim)) or not (
            shape[r] == -1 or shape[r] == j or isinstance(shape[r], NestedInt)) or \
            [int(s) for s in shape[1:r]] != list(v.shape[:r - 1]):
        raise RuntimeError(f"{name}(): a nested tensor's batch and ragged dimensions (and those "
                           f"before the ragged one) must stay: got {tuple(shape)} for "
                           f"{_shape_str(prim)}")
    new = list(v.shape[:r]) + [int(s) for s in shape[r + 1:]]
    return _like(prim, func(v, new))


def _unflatten(func, name, args, kwargs, prim):
    d, _ = _get(args, kwargs, 1, "dim")
    sizes, _ = _get(args, kwargs, 2, "sizes")
    d = _norm_dim(prim, d)
    _require_regular(prim, [d], name)
    if prim._comps is not None:
        return _make(comps=[c.unflatten(d - 1, sizes) for c in prim._comps])
    r = prim._ragged_idx
    return _like(prim, prim._values.unflatten(d - 1, sizes),
                 r + len(sizes) - 1 if d < r else r)


def _flatten(func, name, args, kwargs, prim):
    s, _ = _get(args, kwargs, 1, "start_dim", 0)
    e, _ = _get(args, kwargs, 2, "end_dim", -1)
    s, e = _norm_dim(prim, s), _norm_dim(prim, e)
    if s == e:
        return prim
    _require_regular(prim, range(s, e + 1), name)
    if prim._comps is not None:
        return _make(comps=[c.flatten(s - 1, e - 1) for c in prim._comps])
    r = prim._ragged_idx
    return _like(prim, prim._values.flatten(s - 1, e - 1), r - (e - s) if e < r else r)


def _split_like(func, name, args, kwargs, prim):
    d, positional = _get(args, kwargs, 2, "dim", 0)
    d = _norm_dim(prim, d)
    _require_regular(prim, [d], name)
    a, k = _set(args, kwargs, 2, "dim", d - 1, positional)
    if prim._comps is not None:
        per = _per_component(func, a, k, prim, repack=False)
        return tuple(_make(comps=list(parts)) for parts in zip(*per))
    a, k = _replace_nt(a, k, prim, prim._values)
    return tuple(_like(prim, v) for v in func(*a, **k))


def _narrow(func, name, args, kwargs, prim):
    d, positional = _get(args, kwargs, 1, "dim")
    d = _norm_dim(prim, d)
    _require_regular(prim, [d], name)
    a, k = _set(args, kwargs, 1, "dim", d - 1, positional)
    if prim._comps is not None:
        return _per_component(func, a, k, prim)
    a, k = _replace_nt(a, k, prim, prim._values)
    return _like(prim, func(*a, **k))


def _expand(func, name, args, kwargs, prim):
    shape = _shape_arg(args, kwargs, "size")
    have = prim.size() if prim._comps is None else None
    if have is not None and len(shape) == len(have) and all(
            s == -1 or s == h or (isinstance(s, int) and not isinstance(h, NestedInt) and s == h)
            for s, h in zip(shape, have)):
        return prim
    raise RuntimeError(f"expand(): a nested tensor {_shape_str(prim)} cannot be expanded to "
                       f"{tuple(shape)}")


def _cat(func, name, args, kwargs, prim):
    tensors, _ = _get(args, kwargs, 0, "tensors")
    d, _ = _get(args, kwargs, 1, "dim", 0)
    tensors = list(tensors)
    if not all(isinstance(t, NestedTensor) for t in tensors):
        raise RuntimeError("cat(): expected every input to be a nested tensor when one is")
    d = _norm_dim(prim, d)
    _require_regular(prim, [d], name)
    if prim._comps is not None:
        return _make(comps=[func(list(cs), d - 1) for cs in zip(*[t.unbind() for t in tensors])])
    for t in tensors:
        if not _same_structure(t, prim):
            raise RuntimeError("cat(): nested tensors must share their ragged structure "
                               f"(got {_shape_str(prim)} and {_shape_str(t)})")
    return _like(prim, func([t._values for t in tensors], d - 1))


def _embedding(func, name, args, kwargs, prim):
    if args and args[0] is prim and prim._comps is None:
        a, k = _replace_nt(args, kwargs, prim, prim._values)
        return _like(prim, func(*a, **k))
    return _per_component(func, args, kwargs, prim)


def _getitem(func, name, args, kwargs, prim):
    idx = args[1]
    if isinstance(idx, int) and not isinstance(idx, bool):
        n = len(prim)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of bounds for dimension 0 with size {n}")
        return prim.unbind()[idx]
    if isinstance(idx, tuple) and idx and isinstance(idx[0], int) and \
            not isinstance(idx[0], bool):
        return prim.unbind()[idx[0]][idx[1:]]
    if not isinstance(idx, tuple):
        idx = (idx,)
    if Ellipsis in idx:
        k = idx.index(Ellipsis)
        fill = prim.dim() - (len(idx) - 1)
        idx = idx[:k] + (slice(None),) * fill + idx[k + 1:]
    if prim._comps is not None or not idx or idx[0] != slice(None) or len(idx) > prim.dim() or \
            any(i is None or isinstance(i, (Tensor, list, bool)) for i in idx):
        raise RuntimeError("slice(): not supported for NestedTensor on dim=0 (index a nested "
                           "tensor by a component number, or with ':' on the batch and ragged "
                           "dimensions)")
    r = prim._ragged_idx
    if len(idx) > r and idx[r] != slice(None):
        raise RuntimeError("slice(): not supported for NestedTensor on the ragged dimension")
    inner = idx[1:]
    out = prim._values[inner]
    new_r = r - sum(1 for i in inner[:r - 1] if isinstance(i, int))
    return _like(prim, out, new_r)


def _method(attr):
    def call(func, name, args, kwargs, prim):
        return getattr(args[0], attr)(*args[1:], **kwargs)
    return call


def _metadata(func, name, args, kwargs, prim):
    src = prim._values if prim._comps is None else prim._comps[0]
    a, k = _replace_nt(args, kwargs, prim, src)
    return func(*a, **k)


def _new_dense(func, name, args, kwargs, prim):
    src = prim._values if prim._comps is None else prim._comps[0]
    a, k = _replace_nt(args, kwargs, prim, src)
    return func(*a, **k)


def _autograd_grad(func, name, args, kwargs, prim):
    import ember

    def flat(x):
        if x is None:
            return None, None
        seq = [x] if isinstance(x, Tensor) else list(x)
        out, spans = [], []
        for t in seq:
            parts = t._leaves() if isinstance(t, NestedTensor) else [t]
            spans.append((t, len(out), len(parts)))
            out.extend(parts)
        return out, spans

    names = ["outputs", "inputs", "grad_outputs"]
    vals = {n: (args[i] if len(args) > i else kwargs.get(n)) for i, n in enumerate(names)}
    rest = {k: v for k, v in kwargs.items() if k not in names}
    outs, _ = flat(vals["outputs"])
    ins, spans = flat(vals["inputs"])
    gos, _ = flat(vals["grad_outputs"])
    grads = ember.autograd.grad(outs, ins, gos, **rest)
    result = []
    for t, start, n in spans:
        g = grads[start:start + n]
        if isinstance(t, NestedTensor):
            if all(x is None for x in g):
                result.append(None)
            elif t._comps is not None:
                result.append(_make(comps=list(g)))
            else:
                result.append(_like(t, g[0]))
        else:
            result.append(g[0])
    return tuple(result)


def _autograd_backward(func, name, args, kwargs, prim):
    import ember

    tensors = args[0] if args else kwargs.pop("tensors")
    grads = args[1] if len(args) > 1 else kwargs.pop("grad_tensors", None)
    seq = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    gseq = [grads] if isinstance(grads, Tensor) or grads is None else list(grads)
    if grads is None:
        gseq = [None] * len(seq)
    outs, gouts = [], []
    for t, g in zip(seq, gseq):
        if isinstance(t, NestedTensor):
            if g is None:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            outs += t._leaves()
            gouts += g._leaves() if isinstance(g, NestedTensor) else [g]
        else:
            outs.append(t)
            gouts.append(g)
    kwargs = {k: v for k, v in kwargs.items() if k != "grad_tensors"}
    inputs = kwargs.pop("inputs", None)
    if inputs is not None:
        from ._tensor import _flat_inputs

        kwargs["inputs"] = _flat_inputs(inputs)
    return ember.autograd.backward(outs, gouts, **kwargs)


_HANDLERS = {
    "__getitem__": _getitem, "_getitem": _getitem, "_backward": _method("backward"),
    "transpose": _transpose, "swapaxes": _transpose, "swapdims": _transpose,
    "permute": _permute, "unsqueeze": _unsqueeze, "squeeze": _squeeze,
    "view": _view, "reshape": _view, "unflatten": _unflatten, "flatten": _flatten,
    "chunk": _split_like, "split": _split_like, "narrow": _narrow, "expand": _expand,
    "cat": _cat, "concat": _cat, "concatenate": _cat,
    "softmax": _softmax, "log_softmax": _softmax,
    "cumsum": _cumulative, "cumprod": _cumulative, "logcumsumexp": _cumulative,
    "layer_norm": _trailing_norm, "rms_norm": _trailing_norm,
    "linear": _linear, "matmul": _linear, "__matmul__": _linear, "__rmatmul__": _linear,
    "bmm": _linear, "mm": _linear,
    "scaled_dot_product_attention": _attention,
    "embedding": _embedding,
    "grad": _autograd_grad, "backward": _autograd_backward,
}
for _n in _REDUCTIONS:
    _HANDLERS[_n] = _reduction
for _n in ("unbind", "detach", "detach_", "clone", "contiguous", "is_contiguous", "numel",
           "dim", "ndimension", "size", "stride", "to_padded_tensor", "values", "offsets",
           "lengths", "retain_grad", "numpy", "tolist", "item", "__len__", "__iter__",
           "__repr__", "__deepcopy__", "__reduce_ex__", "__bool__", "__format__"):
    _HANDLERS[_n] = _method(_n)
for _n in _METADATA:
    _HANDLERS[_n] = _metadata
for _n in ("new_empty", "new_zeros", "new_ones", "new_full", "new_tensor"):
    _HANDLERS[_n] = _new_dense


def run(func, args, kwargs):
    """``NestedTensor.__torch_function__``: run ``func`` on nested arguments."""
    name = getattr(func, "__name__", "")
    prim = _first_nt(args, kwargs)
    handler = _HANDLERS.get(name)
    if handler is not None:
        return handler(func, name, args, kwargs, prim)
    if name in _ELEMENTWISE:
        return _elementwise(func, name, args, kwargs, prim)
    raise NotImplementedError(f"aten.{name.strip('_')}.default: {name}() is not supported for "
                              "nested tensors")


__all__ = ["run"]
