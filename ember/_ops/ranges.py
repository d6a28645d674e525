"""Ranges and grids: ``eye``, ``arange``, ``range`` (deprecated), ``linspace``, ``logspace``,
``tril_indices`` / ``triu_indices`` and ``meshgrid``.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from . import _fma as _fused
from .._core.tensor import Tensor
from ._registry import Op, public
from .creation import _out, cast, finish, int_arg, resolve_dtype, scalar_value


# ------------------------------------------------------------------------------------------------
# eye, ranges, index helpers


@public(method=False)
@_dispatch.entrance("eye")
def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
        pin_memory=False) -> Tensor:
    """A 2-D tensor with ones on the diagonal: ``n`` rows and ``m`` (default ``n``) columns.

    Example::

        >>> ember.eye(2)
        tensor([[1., 0.],
                [0., 1.]])
    """
    n = int_arg(n, "eye", "n")
    m = n if m is None else int_arg(m, "eye", "m")
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    d = resolve_dtype(dtype, _dt.get_default_dtype(), out=out)
    t = finish(np.eye(n, m, dtype=d.np), requires_grad, device)
    return _out("eye", t, out)


def _range_args(op_name, start, end, step):
    vals = [scalar_value(v, op_name, k) for v, k in ((start, "start"), (end, "end"),
                                                       (step, "step"))]
    for v in vals:
        if isinstance(v, builtins.complex):
            raise RuntimeError("value cannot be converted to type double without overflow")
    is_float = builtins.any(isinstance(v, builtins.float) for v in vals)
    return vals, is_float


def _check_range(start, end, step):
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")


# NOTE [ Ranges as PyTorch's CPU kernels compute them ]
# A float range's values are not "start + step * i rounded once" in PyTorch: they are what its
# vectorised CPU kernels compute, and a program that builds inputs from arange/linspace sees
# every difference downstream. Measured against torch 2.13 on x86 (AVX2) for float32 and
# float64, and reproduced here bit for bit:
# - linspace: each value is ``start + step * i`` (first half) or ``end - step * (steps-1-i)``
#   (second half) rounded once: the compiler fuses the product and the sum (FMA). A complex
#   linspace is two real ones: its step and values are computed part by part.
# - arange (values and step in double, PyTorch's CPU accumulation type): the output is made
#   in vectors of W = 32 bytes (64 on AVX-512), two vectors per loop turn; each vector's first
#   value ``base = start + step * i`` is fused in double and rounded to the dtype, and its
#   lanes are ``base + j * step`` (j < W/itemsize), fused for float64 and, for float32,
#   computed in double from the float32 base and rounded again. The last values (fewer than
#   two vectors) come from the scalar loop, ``start + step * i`` rounded once to the dtype.
#   Past 32768 values PyTorch splits the range into one piece per thread (its OpenMP split,
#   ``ceil(n / threads)`` values each) and each piece restarts this pattern, so the values
#   depend on the thread count, ``get_num_threads()``, as PyTorch's do.
# - float16/bfloat16 arange works the same way in float32 (their CPU accumulation type):
#   start and step rounded to float32, each vector's base fused in float32 and rounded to the
#   dtype, its W/2 lanes ``base + j * step`` fused in float32 from that rounded base and
#   rounded to the dtype again; the scalar tail fused in float32, then rounded.
# Without FMA (capability "DEFAULT") the products and sums round separately. NumPy has no
# FMA: ``_fma`` is ember's own (``ember/_ops/_fma.py``: numba's true FMA, or error-free
# transformations correctly rounded except in cases far rarer than one in a billion).
# Half and bfloat16 linspace, integer ranges and complex logspace keep the plain
# formulas, which already give PyTorch's linspace values for half and integers; so do
# logspace's exponents (its float64 values match PyTorch's that way; float32 ones differ in
# the last bit, from PyTorch's vectorised power).
_ARANGE_GRAIN = 32768


_VECTOR = []  # (vector bytes, fused multiply-add) of this CPU, found on first use


def _vector_bytes_and_fma():
    if not _VECTOR:
        from ..backends.cpu import get_cpu_capability

        cap = get_cpu_capability()  # fixed for the process, as PyTorch's dispatch level
        # PyTorch runs its AVX2 build of these kernels on AVX-512 CPUs too (only the
        # kernels it marks for AVX-512 take 64-byte vectors): measured, arange and add
        # with alpha give the same bits under ATEN_CPU_CAPABILITY=avx2 on an AVX-512 CPU
        _VECTOR.append((32, cap != "DEFAULT"))
    return _VECTOR[0]


def _fma(a, b, c):
    """``a * b + c`` in float64 with one rounding, for a scalar ``a`` and arrays ``b``, ``c``
    (NOTE [ Ranges as PyTorch's CPU kernels compute them ]): ember's fused multiply-add
    (NOTE [ Fused multiply-add as PyTorch's kernels ]); where a step overflows, the plain
    formula's inf/NaN."""
    return _fused.fma(np.float64(a), np.asarray(b, np.float64), np.asarray(c, np.float64),
                      np.float64)


def _fma_to_f32(a, b, c):
    """``a * b + c`` rounded once to float32, for float32 scalars ``a``, ``c`` and an array
    of integers ``b`` below 2**29 (the product is then exact in double)."""
    a, c = float(a), float(c)
    p = a * np.asarray(b, np.float64)
    h = p + c
    t = h - c
    low = (c - (h - t)) + (p - t)  # h + low == p + c exactly
    r = h.astype(np.float32)
    # h halfway between two float32 values: NumPy rounds it to even, while the exact sum
    # lies off the midpoint on the side of ``low``
    gap = h - r
    tie = (gap != 0) & (np.abs(gap) * 2 == np.spacing(r)) & (low * gap > 0)
    if tie.any():
        r[tie] = np.nextafter(r[tie], np.where(gap[tie] > 0, np.inf, -np.inf).astype(np.float32))
    return r


def _exact_grid(start, step, n, np_dtype):
    """Whether every ``start + step * i`` (``0 <= i < n``) is exact in ``np_dtype``, as on a
    grid of integers or halves: then fused, unfused and vectorised sums all agree, and the
    plain formula is PyTorch's value."""
    start, step = float(start), float(step)
    if not (math.isfinite(start) and math.isfinite(step)):
        return False
    scale = builtins.max(start.as_integer_ratio()[1], step.as_integer_ratio()[1])
    span = builtins.max(abs(start), abs(start + step * builtins.max(n - 1, 0)))
    return scale <= 2**30 and span * scale < 2.0 ** (24 if np_dtype == np.float32 else 53)


def _float_linspace(s, e, step, steps, work):
    """linspace's float32/float64 values (NOTE [ Ranges as PyTorch's CPU kernels compute
    them ])."""
    idx = np.arange(steps)
    half = steps // 2
    up, down = idx[:half], steps - 1 - idx[half:]
    if not _vector_bytes_and_fma()[1] or _exact_grid(s, step, steps, work):
        return np.concatenate([(s + step * up.astype(work)).astype(work),
                               (e - step * down.astype(work)).astype(work)])
    fused = _fma_to_f32 if work == np.float32 else _fma
    return np.concatenate([fused(step, up, s), fused(-step, down, e)]).astype(work)


def _float_arange(start, step, n, np_dtype):
    """arange's float32/float64 values (NOTE [ Ranges as PyTorch's CPU kernels compute
    them ])."""
    from .._settings import get_num_threads

    vbytes, has_fma = _vector_bytes_and_fma()
    width = vbytes // np_dtype.itemsize

    if not has_fma or _exact_grid(start, step, n, np_dtype):  # rounded separately, or exact
        return (np.arange(n, dtype=np.float64) * step + start).astype(np_dtype)

    out = np.empty(n, np_dtype)
    tasks = 1 if n <= _ARANGE_GRAIN else builtins.min(get_num_threads(), -(-n // _ARANGE_GRAIN))
    chunk = -(-n // builtins.max(tasks, 1)) if n else 1
    lanes = np.arange(width, dtype=np.float64)
    lanes_step = lanes * step
    for lo in builtins.range(0, n, chunk):
        hi = builtins.min(n, lo + chunk)
        vec_end = lo + (hi - lo) // (2 * width) * (2 * width)
        if vec_end > lo:
            bases = _fma(step, np.arange(lo, vec_end, width), start).astype(np_dtype)
            if np_dtype == np.float64:
                out[lo:vec_end] = _fma(step, lanes[None, :], bases[:, None]).reshape(-1)
            else:  # the float32 base widened to double, plus j * step in double, written
                # straight into the float32 result
                np.add(bases[:, None], lanes_step[None, :], casting="unsafe",
                       out=out[lo:vec_end].reshape(-1, width))
        if vec_end < hi:
            out[vec_end:hi] = _fma(step, np.arange(vec_end, hi), start).astype(np_dtype)
    return out


def _half_arange(start, step, n, np_dtype):
    """arange's float16/bfloat16 values, made in float32 (NOTE [ Ranges as PyTorch's CPU
    kernels compute them ])."""
    from .._settings import get_num_threads

    vbytes, has_fma = _vector_bytes_and_fma()
    width = vbytes // 2
    s32, st32 = np.float32(start), np.float32(step)

    def fused(idx, base):  # step * idx + base, fused (or not) and rounded to float32
        i32 = idx.astype(np.float32)  # the index as PyTorch's float
        if has_fma:
            return _fused.fma(st32, i32, base, np.float32)
        return (st32 * i32 + np.asarray(base, np.float32)).astype(np.float32)

    out = np.empty(n, np_dtype)
    tasks = 1 if n <= _ARANGE_GRAIN else builtins.min(get_num_threads(), -(-n // _ARANGE_GRAIN))
    chunk = -(-n // builtins.max(tasks, 1)) if n else 1
    lanes = np.arange(width)
    for lo in builtins.range(0, n, chunk):
        hi = builtins.min(n, lo + chunk)
        vec_end = lo + (hi - lo) // (2 * width) * (2 * width)
        if vec_end > lo:
            bases = fused(np.arange(lo, vec_end, width), float(s32)).astype(np_dtype)
            b = bases.astype(np.float64)[:, None]
            out[lo:vec_end] = fused(lanes[None, :], b).reshape(-1).astype(np_dtype)
        if vec_end < hi:
            out[vec_end:hi] = fused(np.arange(vec_end, hi), float(s32)).astype(np_dtype)
    return out


def _check_range_dtype(op_name, d):
    if d is _dt.bool_ or d.category == 3 or d.np in _dt._NO_MATH_NP:
        raise NotImplementedError(f'"{op_name}_cpu" not implemented for \'{d.scalar_name}\'')


@public(method=False)
@_dispatch.entrance("arange")
def arange(start=None, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False, pin_memory=False) -> Tensor:
    """Values from ``start`` (default 0) up to, not including, ``end``, ``step`` apart.

    The dtype is int64 when all arguments are integers, else the default float dtype.

    Example::

        >>> ember.arange(5)
        tensor([0, 1, 2, 3, 4])
        >>> ember.arange(1, 2, 0.25)
        tensor([1.0000, 1.2500, 1.5000, 1.7500])
    """
    if end is None:
        if start is None:
            raise TypeError('arange() missing 1 required positional argument: "end"')
        start, end = 0, start
    elif start is None:
        start = 0
    if type(start) is int and type(end) is int and type(step) is int and dtype is None and \
            out is None and step != 0 and (end - start) * step >= 0:
        # the common all-int case, straight to NumPy (same values and checks as below)
        return finish(np.arange(start, end, step, dtype=np.int64), requires_grad, device)
    (start, end, step), is_float = _range_args("arange", start, end, step)
    d = resolve_dtype(dtype, _dt.get_default_dtype() if is_float else _dt.int64, out=out)
    _check_range_dtype("arange", d)
    if d.category == 1:
        # integer results: the bounds are converted to integers first, as PyTorch does
        start, end, step = (math.trunc(v) if math.isfinite(v) else v
                            for v in (start, end, step))
    _check_range(start, end, step)
    if d.category == 1:
        n = builtins.max(0, -((start - end) // step))
        arr = (np.arange(n, dtype=np.int64) * step + start).astype(d.np, copy=False)
    else:
        n = builtins.max(0, math.ceil((end - start) / step))
        if d.np == np.float32 or d.np == np.float64:
            arr = _float_arange(start, step, n, d.np)
        elif d is _dt.float16 or d is _dt.bfloat16:
            arr = _half_arange(start, step, n, d.np)
        else:
            arr = (np.arange(n, dtype=np.float64) * step + start).astype(d.np, copy=False)
    return _out("arange", finish(arr, requires_grad, device), out)


@public(method=False)
def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False) -> Tensor:
    """Deprecated: values from ``start`` to ``end`` *inclusive*; use ``arange``."""
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    from .._settings import warn_at_caller

    m = _dt.printed_module[0]  # (torch.range under the alias)
    warn_at_caller(
        f"{m}.range is deprecated and will be removed in a future release because its "
        f"behavior is inconsistent with Python's range builtin. Instead, use {m}.arange, "
        "which produces values in [start, end).", UserWarning)
    (start, end, step), _ = _range_args("range", start, end, step)
    d = resolve_dtype(dtype, _dt.get_default_dtype(), out=out)
    _check_range_dtype("range", d)
    _check_range(start, end, step)
    n = math.floor((end - start) / step) + 1
    arr = (np.arange(n, dtype=np.float64) * step + start).astype(d.np)
    return _out("range", finish(arr, requires_grad, device), out)


_C_INT = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
          "int64": "int64_t"}


def _int_endpoint(v, d):
    """An end point of an integer linspace in ``d``, as torch converts it first: integers
    must fit (an unsigned type also takes -max..-1, which wrap around), floats must fit
    before truncation."""
    info = np.iinfo(d.np)
    if isinstance(v, (bool, int, np.integer)):
        v = int(v)
        lo = -info.max if info.min == 0 else info.min
        if lo <= v <= info.max:
            return int(np.array(v).astype(np.int64).astype(d.np))
    else:
        v = v.real if isinstance(v, complex) else v
        if math.isfinite(v) and info.min <= v <= info.max:
            return math.trunc(v)
    raise RuntimeError(f"value cannot be converted to type {_C_INT.get(d.name, d.name)} "
                       "without overflow")


def _linspace_array(op_name, start, end, steps, dtype, fused=True):
    """PyTorch's symmetric linspace: the first half counts up from ``start``, the second half
    down from ``end``, so both end points are exact. Floating results are computed in their
    own dtype (as PyTorch does, which matters for float16/bfloat16), integer results in double
    precision and truncated; float32/float64 ones with the product and sum fused when ``fused``
    (NOTE [ Ranges as PyTorch's CPU kernels compute them ]). Returns (values, result dtype)."""
    steps = int_arg(steps, op_name, "steps")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    start = scalar_value(start, op_name, "start")
    end = scalar_value(end, op_name, "end")
    d = resolve_dtype(dtype)
    if d is None:
        is_complex = isinstance(start, complex) or isinstance(end, complex)
        d = _dt.default_complex() if is_complex else _dt.get_default_dtype()
    if d.np in _dt._NO_MATH_NP:
        raise NotImplementedError(f'"linspace_cpu" not implemented for \'{d.scalar_name}\'')
    if d is _dt.bool_ and steps > 1:  # one point (or none) needs no kernel
        raise NotImplementedError(f'"{op_name}_cpu" not implemented for \'Bool\'')
    if d.category >= 2 and steps > 1:  # end points past the dtype's largest raise (inf, NaN
        # pass; one point or none is written without converting them)
        from .creation import check_value_fits

        check_value_fits(start, d)
        check_value_fits(end, d)
    work = d.np if d.category >= 2 else np.dtype(np.float64)
    T = work.type
    if d.category == 1:
        start, end = _int_endpoint(start, d), _int_endpoint(end, d)
    if steps <= 1:
        return np.array([start] * steps).astype(work), d
    if fused and (work == np.complex64 or work == np.complex128):
        # PyTorch's complex step and values are taken part by part (a complex divided by, and
        # times, a real count): each part is a real linspace
        part = np.float32 if work == np.complex64 else np.float64
        start, end = complex(start), complex(end)
        out = np.empty(steps, work)
        for name, a, b in (("real", start.real, end.real), ("imag", start.imag, end.imag)):
            a, b = part(a), part(b)
            getattr(out, name)[:] = _float_linspace(a, b, part((b - a) / part(steps - 1)),
                                                    steps, part)
        return out, d
    s, e = T(start), T(end)
    step = T((e - s) / T(steps - 1))
    if fused and (work == np.float32 or work == np.float64):
        return _float_linspace(s, e, step, steps, work), d
    idx = np.arange(steps)
    up = (s + step * idx.astype(work)).astype(work)
    down = (e - step * (steps - idx - 1).astype(work)).astype(work)
    return np.where(idx < steps // 2, up, down), d


@public(method=False)
@_dispatch.entrance("linspace")
def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included.

    Example::

        >>> ember.linspace(0, 1, 5)
        tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    """
    vals, d = _linspace_array("linspace", start, end, steps, resolve_dtype(dtype, None, out))
    if d.category == 1:
        vals = np.trunc(vals)
    return _out("linspace", finish(cast(vals, d.np), requires_grad, device), out)


@public(method=False)
@_dispatch.entrance("logspace")
def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False) -> Tensor:
    """``base ** linspace(start, end, steps)``.

    Example::

        >>> ember.logspace(0, 2, 3)
        tensor([  1.,  10., 100.])
    """
    # logspace's exponents are not fused (NOTE [ Ranges as PyTorch's CPU kernels compute them ])
    vals, d = _linspace_array("logspace", start, end, steps, resolve_dtype(dtype, None, out),
                              fused=False)
    base = scalar_value(base, "logspace", "base")
    # PyTorch raises a double base to each (already rounded) exponent in double precision
    wide = np.complex128 if vals.dtype.kind == "c" else np.float64
    vals = np.power(np.asarray(base, wide), vals.astype(wide))
    if d.category == 1:
        vals = np.trunc(vals)
    return _out("logspace", finish(cast(vals, d.np), requires_grad, device), out)


def _tri_indices(op_name, row, col, offset, dtype, device, upper):
    row = int_arg(row, op_name, "row")
    col = int_arg(col, op_name, "col")
    offset = int_arg(offset, op_name, "offset")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    d = resolve_dtype(dtype, _dt.int64)
    if d not in (_dt.int32, _dt.int64):  # torch's kernel has these two only
        raise NotImplementedError(f'"{op_name}" not implemented for \'{d.scalar_name}\'')
    f = np.triu_indices if upper else np.tril_indices
    r, c = f(row, offset, col)
    return finish(np.stack([r, c]).astype(d.np).reshape(2, -1), False, device)


@public(method=False)
@_dispatch.entrance("tril_indices")
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) row/column indices of the lower triangle of a ``row`` x ``col`` matrix,
    including diagonals up to ``offset`` above the main one; row-major order.

    Example::

        >>> ember.tril_indices(2, 2)
        tensor([[0, 1, 1],
                [0, 0, 1]])
    """
    return _tri_indices("tril_indices", row, col, offset, dtype, device, False)


@public(method=False)
@_dispatch.entrance("triu_indices")
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (2, N) indices of the upper triangle (diagonals from ``offset`` up)."""
    return _tri_indices("triu_indices", row, col, offset, dtype, device, True)


# -- meshgrid -------------------------------------------------------------------------------------


def _grid_kernel(xp, a, *, view_shape, shape, in_shape):
    return xp.broadcast_to(a.reshape(view_shape), shape)


def _grid_vjp(g, _a, *, view_shape, shape, in_shape):
    dims = [i for i, n in enumerate(view_shape) if n == 1 and shape[i] != 1]
    s = g.sum(dims, keepdim=True) if dims else g
    return s.reshape(in_shape)


grid_op = Op("_meshgrid_view", _grid_kernel, vjp=_grid_vjp, view_of=0, linear=True)


@public(method=False)
def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D (or 0-D) tensors: output ``i`` varies along dimension ``i``
    (``indexing='ij'``) or with the first two dimensions swapped (``'xy'``, as NumPy's
    default). The outputs are expanded views of the inputs.

    Example::

        >>> x, y = ember.meshgrid(ember.arange(2), ember.arange(3), indexing='ij')
        >>> x.shape
        ember.Size([2, 3])
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        from .._settings import warn_at_caller

        warn_at_caller(
            f"{_dt.printed_module[0]}.meshgrid: in an upcoming release, it will be required to "
            "pass the indexing argument.", UserWarning)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError('ember.meshgrid: indexing must be one of "xy" or "ij", but '
                           f"received: {indexing}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"meshgrid(): expected Tensors, got {type(t).__name__}")
        if t.dim() > 1:
            raise RuntimeError("ember.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got a tensor of shape {list(t.shape)}")
    if builtins.any(t.dtype is not tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    if builtins.any(t.device != tensors[0].device for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same device")
    sizes = [t.numel() for t in tensors]
    swap = indexing == "xy" and len(tensors) >= 2
    order = list(builtins.range(len(tensors)))
    if swap:
        order[0], order[1] = 1, 0
    shape = tuple(sizes[i] for i in order)
    outs = []
    for i, t in enumerate(tensors):
        axis = order.index(i)
        view_shape = tuple(-1 if k == axis else 1 for k in builtins.range(len(shape)))
        view_shape = tuple(sizes[i] if v == -1 else 1 for v in view_shape)
        outs.append(_dispatch.apply(grid_op, (t,), {"view_shape": view_shape, "shape": shape,
                                                    "in_shape": tuple(t.shape)}))
    return tuple(outs)
