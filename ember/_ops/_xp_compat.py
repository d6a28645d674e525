"""Portable array code: the few NumPy features kernels use that other array libraries lack.

NOTE [ Portable array code ]
A kernel is written once against the array namespace ``xp`` (NumPy on the CPU, CuPy on
``cuda``, a test device's namespace in the device-generic tests). CuPy follows NumPy's API
closely but not wholly, and the gaps are where a kernel that passes every CPU test breaks on
a GPU. The gaps ember's kernels met, and the portable form each takes here:

- ``ufunc.at`` (scatter-accumulate): CuPy has it for add, subtract, maximum and minimum
  only, and only for some dtypes (no float16 for maximum/minimum, no bfloat16, int8/int16,
  bool or complex at all). ``ufunc_at`` keeps ``ufunc.at`` where the namespace has it,
  widens half floats to float32 and small integers to int64 where that gives the same
  result, and otherwise applies the updates in rounds: each round takes the first remaining
  update of every distinct position, so no round writes a position twice and each position
  sees its updates in NumPy's order.
- ``ufunc.reduce`` / ``ufunc.accumulate``: CuPy has them for add and multiply only.
  ``ufunc_reduce`` maps the others to ``xp.max``/``min``/``any``/``all`` (NaN semantics as
  NumPy's ``maximum``/``minimum``); ``ufunc_accumulate`` runs a doubling (Hillis-Steele)
  scan of the binary ufunc, exact for maximum/minimum and correct to rounding for
  logaddexp.
- ``xp.indices(shape, sparse=True)``: CuPy has no ``sparse=``; see ``sparse_indices``.
- dtypes CuPy cannot sort or select: bfloat16 has no sort (the sorting family's
  ``_sortable`` widens it to float32, which is exact) and no ``where`` loop (CuPy's
  ``where`` returns float32 for two bfloat16 operands; ``where`` here keeps their dtype).
- Implicit conversion: ``np.asarray(device_array)`` raises on CuPy; a kernel builds arrays
  with its own ``xp``, reads a host value with ``.item()`` or ``int()``, and a kernel that
  must run on the host copies explicitly (``to_host``) and returns ``xp.asarray(result)``.
- Batched linear algebra CuPy lacks: ``cupyx.scipy.linalg.expm`` takes one 2-d matrix;
  ``batched_expm`` is a batched scaling-and-squaring Pade in ``matmul`` and ``solve``.
  ``cupy.linalg.solve`` does not broadcast batch dims (NumPy's does): ``solve`` here
  broadcasts them first.

On NumPy every helper is the NumPy call it replaces, so CPU results are unchanged. The
CuPy-specific knowledge is the table ``_AT_DTYPES``; a namespace other than NumPy is treated
as having only what CuPy has, so the fallbacks also serve any stricter array library.
"""

from __future__ import annotations

import numpy as np

__all__ = ["batched_expm", "solve", "sparse_indices", "to_host", "ufunc_accumulate", "ufunc_at",
           "ufunc_reduce", "where"]

# ufunc name -> dtype names whose ``ufunc.at`` CuPy 14 implements (its error messages list
# them); a pair outside the table takes a fallback on namespaces other than NumPy
_INTS = frozenset({"int32", "int64", "uint32", "uint64"})
_AT_DTYPES = {
    "add": _INTS | {"float16", "float32", "float64"},
    "subtract": _INTS | {"float16", "float32", "float64"},
    # (float64 maximum/minimum are left out: CuPy 14.2's float64 ``maximum.at`` does not
    # keep the members' exact values -- on an H200 its results differed from NumPy's past
    # the fourth decimal, and scatter_reduce amax's gradient, which finds the members equal
    # to the result, came out zero -- so they take the exact rounds)
    "maximum": _INTS | {"float32"},
    "minimum": _INTS | {"float32"},
}
# the portable whole-array reductions standing in for ``ufunc.reduce``
_REDUCERS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
             "logical_or": "any", "logical_and": "all"}


def _is_half_float(dtype):
    return dtype.itemsize == 2 and dtype.kind in "fV"  # float16, bfloat16 (ml_dtypes: "V")


#: the names of NumPy-backed array namespaces: the meta device's and the test device's
_NUMPY_BACKED = ("ember.meta", "npdev.")


def _native_at(xp, name, dtype):
    if xp is np:
        return True
    if getattr(xp, "__name__", "").startswith(_NUMPY_BACKED):
        # NumPy-backed namespaces (the meta device, the test device) have every ufunc.at;
        # the limits below are CuPy's
        return hasattr(getattr(xp, name, None), "at")
    return dtype.name in _AT_DTYPES.get(name, ()) and hasattr(getattr(xp, name, None), "at")


def ufunc_at(xp, name, a, key, values):
    """Apply ``a[key] = ufunc(a[key], values)`` in place with every repeated index applied,
    as NumPy's ``ufunc.at`` (``np.add.at`` and friends), on any array namespace.

    Args:
        xp: the array namespace of ``a``.
        name: the binary ufunc's name, e.g. ``"add"``, ``"multiply"``, ``"maximum"``.
        a: the array updated in place (a view writes through to its base).
        key: any index of ``a`` (integer arrays, tuples of them, slices, masks).
        values: broadcast to the shape of ``a[key]``.

    Returns:
        None; ``a`` holds the result. See NOTE [ Portable array code ].

    Example:
        >>> a = np.zeros(3)
        >>> ufunc_at(np, "add", a, np.array([0, 0, 2]), 1.0)
        >>> a
        array([2., 0., 1.])
    """
    dt = a.dtype
    if _native_at(xp, name, dt):
        getattr(xp, name).at(a, key, values)
        return
    wide = None
    if name in ("add", "subtract", "maximum", "minimum"):
        if _is_half_float(dt):
            wide = np.float32  # max/min exact; sums round once, as torch's float accumulation
        elif dt.kind in "iub" and dt.itemsize <= 2:
            wide = np.int64  # exact: the narrow result is the wide one modulo 2**bits
    if wide is not None and _native_at(xp, name, np.dtype(wide)):
        work = a.astype(wide)
        vals = xp.asarray(values)
        getattr(xp, name).at(work, key, vals.astype(wide) if vals.dtype != wide else vals)
        a[...] = (work != 0) if dt.kind == "b" else work.astype(dt)
        return
    _at_in_rounds(xp, getattr(xp, name), a, key, values)


def _at_in_rounds(xp, ufunc, a, key, values):
    """``ufunc.at`` by fancy assignment: positions are sorted (stably) and ranked within
    their group of repeats; round r applies every update of rank r, positions distinct."""
    pos = xp.arange(a.size, dtype=np.int64).reshape(a.shape)[key]
    vals = xp.broadcast_to(xp.asarray(values), pos.shape).reshape(-1)
    pos = pos.reshape(-1)
    if pos.size == 0:
        return
    contiguous = a.flags.c_contiguous
    flat = a.reshape(-1) if contiguous else xp.ascontiguousarray(a).reshape(-1)
    order = xp.argsort(pos, kind="stable")
    pos, vals = pos[order], vals[order]
    head = xp.ones(pos.shape, dtype=np.bool_)
    head[1:] = pos[1:] != pos[:-1]
    group = xp.cumsum(head) - 1
    rank = xp.arange(pos.size, dtype=np.int64) - xp.flatnonzero(head)[group]
    for r in range(int(rank.max()) + 1):
        sel = rank == r if r else head
        p = pos[sel]
        flat[p] = ufunc(flat[p], vals[sel])
    if not contiguous:
        a[...] = flat.reshape(a.shape)


def _reduced_shape(shape, axis, keepdims):
    return np.add.reduce(np.empty(shape, np.bool_), axis=axis, keepdims=keepdims).shape


def ufunc_reduce(xp, name, a, axis=0, keepdims=False, initial=None):
    """``ufunc.reduce`` on any array namespace (NumPy's own on NumPy).

    Args:
        xp: the array namespace of ``a``.
        name: ``"add"``, ``"multiply"``, ``"maximum"``, ``"minimum"``, ``"logical_or"``,
            ``"logical_and"``, or another associative binary ufunc (reduced pairwise).
        a: the array to reduce.
        axis: an int, a tuple of ints, or None for all axes (NumPy's default 0).
        keepdims: keep the reduced axes with size 1.
        initial: the start value; needed to reduce an empty array by maximum/minimum.

    Returns:
        The reduced array (0-d arrays stay arrays on namespaces other than NumPy, where
        NumPy returns scalars).

    Example:
        >>> ufunc_reduce(np, "maximum", np.array([[1, 5], [3, 2]]), axis=1)
        array([5, 3])
    """
    f = getattr(xp, name)
    if xp is np:
        kw = {} if initial is None else {"initial": initial}
        return f.reduce(a, axis=axis, keepdims=keepdims, **kw)
    if a.size == 0 and initial is not None:
        return xp.full(_reduced_shape(a.shape, axis, keepdims), initial,
                       dtype=a.dtype if name not in ("logical_or", "logical_and") else np.bool_)
    if name in _REDUCERS:
        r = getattr(xp, _REDUCERS[name])(a, axis=axis, keepdims=keepdims)
    else:
        r = _pairwise_reduce(xp, f, a, axis, keepdims)
    if initial is not None:
        r = f(r, initial)
    return r


def _pairwise_reduce(xp, f, a, axis, keepdims):
    nd = a.ndim
    axes = tuple(range(nd)) if axis is None else \
        tuple(sorted(d % nd for d in (axis if isinstance(axis, tuple) else (axis,))))
    if any(a.shape[d] == 0 for d in axes):
        raise ValueError(f"zero-size array to reduction operation {f.__name__} which has no "
                         f"identity")
    rest = [d for d in range(nd) if d not in axes]
    x = xp.transpose(a, rest + list(axes)).reshape(tuple(a.shape[d] for d in rest) + (-1,))
    while x.shape[-1] > 1:
        n = x.shape[-1]
        half = f(x[..., : n // 2], x[..., n // 2: 2 * (n // 2)])
        x = half if n % 2 == 0 else xp.concatenate([half, x[..., n - 1:]], axis=-1)
    r = x[..., 0]
    if keepdims:
        r = r.reshape(_reduced_shape(a.shape, axes, True))
    return r


def ufunc_accumulate(xp, name, a, axis=0):
    """``ufunc.accumulate`` (running ``ufunc`` along ``axis``) on any array namespace.

    Args:
        xp: the array namespace of ``a``.
        name: an associative binary ufunc's name: ``"maximum"``, ``"minimum"``,
            ``"logaddexp"``, ``"add"``, ``"multiply"`` ...
        a: the array (at least 1-d).
        axis: the axis to run along.

    Returns:
        An array shaped and typed like ``a``: NumPy's own result on NumPy; elsewhere a
        doubling scan (exact for maximum/minimum, equal to rounding for sums and logaddexp).

    Example:
        >>> ufunc_accumulate(np, "maximum", np.array([1, 3, 2, 5]))
        array([1, 3, 3, 5])
    """
    f = getattr(xp, name)
    if xp is np:
        return f.accumulate(a, axis=axis)
    r = xp.moveaxis(a, axis, -1).copy()
    n, step = r.shape[-1], 1
    while step < n:
        r[..., step:] = f(r[..., :-step], r[..., step:])
        step *= 2
    return xp.moveaxis(r, -1, axis)


def to_host(xp, a):
    """``a`` as a NumPy array: itself on NumPy, an explicit device-to-host copy elsewhere
    (CuPy refuses the implicit ``np.asarray``).

    Args:
        xp: the array namespace of ``a``.
        a: an array.

    Returns:
        A NumPy array with ``a``'s values.

    Example:
        >>> to_host(np, np.arange(3))
        array([0, 1, 2])
    """
    if xp is np:
        return a
    if hasattr(xp, "asnumpy"):
        return xp.asnumpy(a)
    return a.get() if hasattr(a, "get") else np.asarray(a)


def sparse_indices(xp, shape):
    """``xp.indices(shape, sparse=True)``: one int64 ``arange`` per axis, shaped to broadcast.

    Args:
        xp: an array namespace.
        shape: the grid's shape.

    Returns:
        A tuple of ``len(shape)`` arrays; the i-th has shape ``shape[i]`` on axis i, 1
        elsewhere.

    Example:
        >>> [g.shape for g in sparse_indices(np, (2, 3))]
        [(2, 1), (1, 3)]
    """
    nd = len(shape)
    return tuple(xp.arange(n, dtype=np.int64).reshape((1,) * i + (n,) + (1,) * (nd - i - 1))
                 for i, n in enumerate(shape))


def where(xp, condition, x, y):
    """``xp.where(condition, x, y)`` whose result keeps the dtype NumPy gives for arrays
    ``x`` and ``y`` (CuPy computes bfloat16 operands in float32 and returns float32).

    Args:
        xp: the array namespace.
        condition: a boolean array.
        x, y: arrays (0-d allowed) or Python scalars, chosen where ``condition`` is True /
            False.

    Returns:
        The selected array.

    Example:
        >>> where(np, np.array([True, False]), np.array([1.0, 2.0]), np.array(0.0))
        array([1., 0.])
    """
    r = xp.where(condition, x, y)
    if xp is not np and any(_is_bfloat16(v) for v in (x, y)):
        # NumPy's own answer on 0-d stand-ins (Python scalars stay scalars: they promote
        # differently from arrays)
        dt = np.where(True, *(np.zeros((), v.dtype) if hasattr(v, "dtype") else v
                              for v in (x, y))).dtype
        if r.dtype != dt:
            r = r.astype(dt)
    return r


def _is_bfloat16(v):
    dt = getattr(v, "dtype", None)
    return dt is not None and dt.kind == "V" and dt.itemsize == 2


# Pade(13) coefficients of exp (Higham, "The scaling and squaring method for the matrix
# exponential revisited", 2005) and the 1-norm below which degree 13 needs no scaling
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
           1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
           33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def batched_expm(xp, a):
    """The matrix exponential of a batch of square matrices, by scaling and squaring with a
    degree-13 Pade approximant, in batched ``matmul`` and ``linalg.solve`` only (CuPy's
    ``cupyx.scipy.linalg.expm`` takes one 2-d matrix).

    Args:
        xp: the array namespace of ``a``.
        a: an array of shape (..., n, n), floating or complex (computed in float64 /
            complex128).

    Returns:
        ``exp(a)`` per matrix, shaped and typed like ``a``.

    Example:
        >>> batched_expm(np, np.zeros((2, 2)))
        array([[1., 0.],
               [0., 1.]])
    """
    if a.size == 0:
        return a.copy()
    # computed in double precision (single-precision Pade 13 loses digits as norms grow)
    x = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    n = x.shape[-1]
    norm = xp.abs(x).sum(axis=-2).max(axis=-1)
    # per-matrix squarings s with ||x / 2**s||_1 <= theta13 (0 for non-finite norms)
    s = xp.ceil(xp.log2(xp.where(xp.isfinite(norm), norm, 0) / _THETA13 + 1e-300))
    s = xp.clip(xp.nan_to_num(s), 0, 1024).astype(np.int64)
    x = x * (2.0 ** -s.astype(x.real.dtype))[..., None, None].astype(x.dtype)
    eye = xp.broadcast_to(xp.eye(n, dtype=x.dtype), x.shape)
    b = _PADE13
    x2 = xp.matmul(x, x)
    x4 = xp.matmul(x2, x2)
    x6 = xp.matmul(x4, x2)
    u = xp.matmul(x, xp.matmul(x6, b[13] * x6 + b[11] * x4 + b[9] * x2) +
                  b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * eye)
    v = xp.matmul(x6, b[12] * x6 + b[10] * x4 + b[8] * x2) + \
        b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * eye
    r = xp.linalg.solve(v - u, v + u)
    for k in range(int(s.max())):
        r = xp.where((s > k)[..., None, None], xp.matmul(r, r), r)
    return r.astype(a.dtype) if r.dtype != a.dtype else r


def solve(xp, a, b):
    """``xp.linalg.solve(a, b)`` with NumPy's broadcasting of the batch dims of the
    coefficient matrices ``a`` (..., M, M) and the right-hand sides ``b`` (..., M, K), on
    any array namespace (CuPy's ``solve`` wants equal batch dims).

    Args:
        xp: the array namespace of ``a`` and ``b``.
        a: square matrices, (..., M, M).
        b: right-hand sides, (..., M, K), or one vector (M,).

    Returns:
        The solutions, as NumPy's ``solve`` shapes them. See NOTE [ Portable array code ].

    Example:
        >>> solve(np, np.eye(2)[None].repeat(3, 0), np.ones((2, 1))).shape
        (3, 2, 1)
    """
    if xp is not np and b.ndim >= 2 and a.shape[:-2] != b.shape[:-2]:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = xp.broadcast_to(a, batch + a.shape[-2:])
        b = xp.broadcast_to(b, batch + b.shape[-2:])
    return xp.linalg.solve(a, b)
