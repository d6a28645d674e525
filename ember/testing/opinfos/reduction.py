"""OpInfo entries for ember/_ops/reduction.py."""

import numpy as np

from .._opinfo import (
    ALL,
    BOOL,
    COMPLEX,
    FLOAT_AND_COMPLEX,
    FLOATS,
    INTS,
    REAL,
    REAL_NO_BOOL,
    ErrorInput,
    OpInfo,
    SampleInput,
)


def _t(shape, dtype, rng, **kw):
    from .. import make_tensor

    return make_tensor(shape, dtype=dtype, rng=rng, **kw)


def _axis(a, dim):
    if dim is None or dim == () or dim == []:
        return None
    if a.ndim == 0:
        return None
    return tuple(d % a.ndim for d in dim) if isinstance(dim, (tuple, list)) else dim % a.ndim


# ------------------------------------------------------------------------------------------------
# sample generators


def sample_reduce(dtype, rng, *, tuples=True, empty=True, low=None, high=None, full=True,
                  **kwargs):
    """Full reductions, one dim, negative dims with keepdim, dim tuples, 0-dim and empty."""
    def t(shape):
        return _t(shape, dtype, rng, low=low, high=high)

    if full:
        yield SampleInput(t((3, 4)), name="all", **kwargs)
        yield SampleInput(t(()), name="scalar", **kwargs)
    yield SampleInput(t((2, 3, 4)), 1, name="dim1", **kwargs)
    yield SampleInput(t((2, 3, 4)), -1, keepdim=True, name="neg_keepdim", **kwargs)
    yield SampleInput(t((5,)), 0, name="vector", **kwargs)
    yield SampleInput(t(()), 0, name="scalar_dim", **kwargs)
    if tuples:
        yield SampleInput(t((2, 3, 4)), (0, 2), name="tuple", **kwargs)
        yield SampleInput(t((2, 3, 4)), (-1, 0), keepdim=True, name="tuple_keepdim", **kwargs)
    if empty:
        yield SampleInput(t((0, 3)), 1, name="empty", **kwargs)
        if full:
            yield SampleInput(t((0, 3)), 0, name="empty_reduced", **kwargs)


def _sample_one_dim(dtype, rng, **kw):
    yield from sample_reduce(dtype, rng, tuples=False, **kw)


def _sample_selective(dtype, rng):
    """Max-like reductions: no reduction over an empty dim (it has no identity)."""
    for s in sample_reduce(dtype, rng, tuples=True):
        if s.name != "empty_reduced":
            yield s


def _sample_max_dim(dtype, rng):
    yield from sample_reduce(dtype, rng, tuples=False, full=False)


def _sample_scan(dtype, rng, **kw):
    yield SampleInput(_t((5,), dtype, rng, **kw), 0, name="vector")
    yield SampleInput(_t((3, 4), dtype, rng, **kw), 1, name="rows")
    yield SampleInput(_t((3, 4), dtype, rng, **kw), -2, name="cols")
    yield SampleInput(_t((), dtype, rng, **kw), 0, name="scalar")
    yield SampleInput(_t((0, 3), dtype, rng, **kw), 0, name="empty")


def _sample_var(dtype, rng):
    yield from sample_reduce(dtype, rng, empty=False)
    x = _t((3, 4), dtype, rng)
    yield SampleInput(x, 1, correction=0, name="correction0")
    yield SampleInput(x, (0, 1), correction=2, keepdim=True, name="correction2")
    yield SampleInput(x, 0, False, name="unbiased_false")


def _sample_logsumexp(dtype, rng):
    yield from (s for s in sample_reduce(dtype, rng) if s.args)
    yield SampleInput(_t((2, 3), dtype, rng, low=80, high=90), 1, name="large")


def _sample_diff(dtype, rng):
    yield SampleInput(_t((6,), dtype, rng), name="vector")
    yield SampleInput(_t((3, 4), dtype, rng), 2, 0, name="second_order_dim0")
    yield SampleInput(_t((3, 4), dtype, rng), 1, -1, name="rows")
    yield SampleInput(_t((0, 4), dtype, rng), name="empty")


# ------------------------------------------------------------------------------------------------
# NumPy references


def _up(a):
    """Half-precision references accumulate in float64 (ember accumulates in float32)."""
    return a.astype(np.float64) if a.dtype.kind == "f" and a.itemsize < 4 else a


def _ref(fn, dtype=None):
    def ref(a, dim=None, keepdim=False, **kw):
        kw.pop("dtype", None)
        a = _up(a)
        r = fn(a if dtype is None else a.astype(dtype), axis=_axis(a, dim), keepdims=keepdim)
        return np.asarray(r)

    return ref


def _ref_mean(a, dim=None, keepdim=False):
    with np.errstate(all="ignore"):
        ax = _axis(a, dim)
        s = np.sum(a, axis=ax, keepdims=keepdim, dtype=np.float64 if a.dtype.kind == "f"
                   else None)
        n = a.size if ax is None else np.prod([a.shape[d] for d in np.atleast_1d(ax)])
        return np.asarray(s / n if n else s * np.nan)


def _ref_var(take_sqrt):
    def ref(a, dim=None, unbiased=None, keepdim=False, correction=None):
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        c = correction if correction is not None else (0 if unbiased is False else 1)
        with np.errstate(all="ignore"):
            r = np.var(a.astype(np.float64), axis=_axis(a, dim), keepdims=keepdim, ddof=c)
        return np.sqrt(r) if take_sqrt else r

    return ref


def _ref_max_dim(largest):
    def ref(a, dim, keepdim=False):
        if a.ndim == 0:
            return a, np.int64(0)
        f = np.argmax if largest else np.argmin
        i = np.expand_dims(f(a, axis=dim), dim)
        v = np.take_along_axis(a, i, dim)
        return (v, i) if keepdim else (v.squeeze(dim), i.squeeze(dim))

    return ref


def _ref_arg(largest):
    def ref(a, dim=None, keepdim=False):
        f = np.argmax if largest else np.argmin
        if dim is None or a.ndim == 0:
            r = np.asarray(f(a))
            return r.reshape((1,) * a.ndim) if keepdim else r
        return f(a, axis=dim, keepdims=keepdim)

    return ref


def _ref_logsumexp(a, dim, keepdim=False):
    from scipy.special import logsumexp

    return np.asarray(logsumexp(a.astype(np.float64), axis=_axis(a, dim), keepdims=keepdim))


def _ref_scan(fn, acc=None):
    def ref(a, dim, dtype=None):
        if a.ndim == 0:
            return a
        return fn(a.astype(acc) if acc and a.dtype.kind in "biu" else _up(a), axis=dim)

    return ref


def _ref_cumext(largest):
    def ref(a, dim):
        if a.ndim == 0:
            return a, np.int64(0)
        x = np.moveaxis(a, dim, -1)
        vals, idx = np.empty_like(x), np.zeros(x.shape, np.int64)
        for j in range(x.shape[-1]):
            win = x[..., :j + 1]
            k = j - (np.argmax(win[..., ::-1], -1) if largest else np.argmin(win[..., ::-1], -1))
            idx[..., j] = k
            vals[..., j] = np.take_along_axis(x, k[..., None], -1)[..., 0]
        return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)

    return ref


def _sample_trapezoid(dtype, rng):
    import ember

    yield SampleInput(_t((3, 4), dtype, rng), name="unit_dx")
    yield SampleInput(_t((3, 4), dtype, rng), dx=2.0, dim=0, name="dx")
    xs = ember.tensor(np.cumsum(rng.uniform(0.1, 1, 4)), dtype=dtype)
    yield SampleInput(_t((3, 4), dtype, rng), xs, name="x_1d")
    yield SampleInput(_t((2, 5), dtype, rng), _t((2, 5), dtype, rng), dim=1, name="x_full")
    yield SampleInput(_t((0,), dtype, rng), name="empty")


def _ref_trapezoid(y, x=None, dx=None, dim=-1):
    return np.asarray(np.trapezoid(y, x, 1.0 if dx is None else dx, axis=dim))


def _ref_cumulative_trapezoid(y, x=None, dx=None, dim=-1):
    from scipy.integrate import cumulative_trapezoid

    return cumulative_trapezoid(y, x, 1.0 if dx is None else dx, axis=dim)


def _ref_diff(a, n=1, dim=-1):
    return np.diff(a, n=n, axis=dim)


# ------------------------------------------------------------------------------------------------
# error inputs


def _errors_dim(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2, 3), 2), IndexError, "out of range")
    yield ErrorInput(SampleInput(ember.ones(2, 3), (0, 0)), RuntimeError, "multiple times")


def _errors_mean(rng):
    import ember

    yield from _errors_dim(rng)
    yield ErrorInput(SampleInput(ember.tensor([1, 2])), RuntimeError, "dtype")


def _errors_max(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(0, 3)), RuntimeError, "numel")
    yield ErrorInput(SampleInput(ember.ones(0, 3), 0), IndexError, "non-zero size")
    yield ErrorInput(SampleInput(ember.ones(2, 3), 2), IndexError, "out of range")


def _errors_amax(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(0, 3)), RuntimeError, "numel")
    yield ErrorInput(SampleInput(ember.ones(0, 3), 0), IndexError, "non-zero size")


def _errors_argmax(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(0, 3)), IndexError, "numel")
    yield ErrorInput(SampleInput(ember.ones(2, 3), -3), IndexError, "out of range")
    yield ErrorInput(SampleInput(ember.tensor([True, False])), RuntimeError, "bool")


def _errors_var(rng):
    import ember

    yield ErrorInput(SampleInput(ember.tensor([1, 2])), RuntimeError, "floating point")
    yield ErrorInput(SampleInput(ember.ones(2), 3), IndexError, "out of range")


def _errors_scan(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2, 3), 2), IndexError, "out of range")


def _errors_aminmax(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(0, 3)), RuntimeError, "empty")


def _sample_sum_dtype(dtype, rng):
    import ember

    for s in sample_reduce(dtype, rng):
        s.kwargs["dtype"] = ember.float64
        yield s

op_db = [
    OpInfo("sum", ref=_ref(np.sum), sample_inputs=sample_reduce, dtypes=ALL, supports_out=True,
           error_inputs=_errors_dim),
    OpInfo("sum", variant="dtype", ref=_ref(np.sum, np.float64),
           sample_inputs=_sample_sum_dtype,
           dtypes=REAL, supports_out=True, differentiable=False),
    # torch's half-precision nansum accumulates in half precision (its sum does not); ember
    # accumulates both in float32, so only full-precision dtypes are compared
    OpInfo("nansum", ref=_ref(np.nansum), sample_inputs=sample_reduce,
           dtypes=BOOL + INTS + FLOATS[2:], supports_out=True),
    OpInfo("mean", ref=_ref_mean, sample_inputs=sample_reduce, dtypes=FLOAT_AND_COMPLEX,
           supports_out=True, error_inputs=_errors_mean),
    OpInfo("nanmean", ref=_ref(np.nanmean), sample_inputs=lambda d, r: sample_reduce(
        d, r, empty=False), dtypes=FLOATS, supports_out=True),
    OpInfo("prod", ref=_ref(np.prod),
           sample_inputs=lambda d, r: _sample_one_dim(d, r, low=-2, high=2),
           dtypes=REAL, supports_out=True, rtol=1e-2, atol=1e-3),
    OpInfo("var", ref=_ref_var(False), sample_inputs=_sample_var, dtypes=FLOATS,
           supports_out=True, error_inputs=_errors_var),
    OpInfo("std", ref=_ref_var(True), sample_inputs=_sample_var, dtypes=FLOATS,
           supports_out=True, error_inputs=_errors_var),
    OpInfo("var_mean", ref=lambda *a, **k: (_ref_var(False)(*a, **k), _ref_mean(
        *a[:1], *[x for x in a[1:2] if not isinstance(x, bool)], keepdim=k.get("keepdim",
                                                                                  False))),
           sample_inputs=lambda d, r: (s for s in _sample_var(d, r) if "correction" not in
                                      s.name and "unbiased" not in s.name and "scalar" not in
                                      s.name),
           dtypes=FLOATS, method=False),
    OpInfo("std_mean", ref=None,
           sample_inputs=lambda d, r: (s for s in _sample_var(d, r) if "scalar" not in s.name),
           dtypes=FLOATS,
           method=False),
    OpInfo("amax", ref=_ref(np.max), sample_inputs=_sample_selective, dtypes=REAL,
           supports_out=True, error_inputs=_errors_amax),
    OpInfo("amin", ref=_ref(np.min), sample_inputs=_sample_selective, dtypes=REAL,
           supports_out=True, error_inputs=_errors_amax),
    OpInfo("max", variant="full", ref=lambda a: np.max(a),
           sample_inputs=lambda d, r: (s for s in _sample_selective(d, r) if not s.args),
           dtypes=REAL, supports_out=True, error_inputs=_errors_max),
    OpInfo("max", variant="dim", ref=_ref_max_dim(True), sample_inputs=_sample_max_dim,
           dtypes=REAL, supports_out=True),
    OpInfo("min", variant="full", ref=lambda a: np.min(a),
           sample_inputs=lambda d, r: (s for s in _sample_selective(d, r) if not s.args),
           dtypes=REAL, supports_out=True, error_inputs=_errors_max),
    OpInfo("min", variant="dim", ref=_ref_max_dim(False), sample_inputs=_sample_max_dim,
           dtypes=REAL, supports_out=True),
    OpInfo("aminmax", ref=None, dtypes=REAL, error_inputs=_errors_aminmax,
           sample_inputs=lambda d, r: (SampleInput(s.input, dim=s.args[0],
                                                   keepdim=s.kwargs.get("keepdim", False))
                                       for s in _sample_max_dim(d, r)),
           differentiable=False, supports_out=True),
    OpInfo("argmax", ref=_ref_arg(True), sample_inputs=_sample_max_dim, dtypes=REAL_NO_BOOL,
           supports_out=True, differentiable=False, error_inputs=_errors_argmax),
    OpInfo("argmin", ref=_ref_arg(False), sample_inputs=_sample_max_dim, dtypes=REAL_NO_BOOL,
           supports_out=True, differentiable=False, error_inputs=_errors_argmax),
    OpInfo("logsumexp", ref=_ref_logsumexp, sample_inputs=_sample_logsumexp, dtypes=FLOATS,
           supports_out=True, error_inputs=_errors_dim),
    OpInfo("all", ref=_ref(np.all), sample_inputs=sample_reduce, dtypes=ALL,
           supports_out=True, differentiable=False),
    OpInfo("any", ref=_ref(np.any), sample_inputs=sample_reduce, dtypes=ALL,
           supports_out=True, differentiable=False),
    OpInfo("count_nonzero",
           ref=lambda a, dim=None: np.asarray(np.count_nonzero(a, axis=_axis(a, dim))),
           sample_inputs=lambda d, r: (s for s in sample_reduce(d, r) if not s.kwargs),
           dtypes=ALL, differentiable=False),
    OpInfo("cumsum", ref=_ref_scan(np.cumsum, np.int64), sample_inputs=_sample_scan,
           dtypes=ALL, supports_out=True, error_inputs=_errors_scan, inplace=True),
    OpInfo("cumprod", ref=_ref_scan(np.cumprod, np.int64),
           sample_inputs=lambda d, r: _sample_scan(d, r, low=-2, high=2), dtypes=REAL,
           supports_out=True, error_inputs=_errors_scan, inplace=True),
    OpInfo("cummax", ref=_ref_cumext(True), sample_inputs=_sample_scan, dtypes=REAL,
           error_inputs=_errors_scan, supports_out=True),
    OpInfo("cummin", ref=_ref_cumext(False), sample_inputs=_sample_scan, dtypes=REAL,
           error_inputs=_errors_scan, supports_out=True),
    OpInfo("logcumsumexp", ref=_ref_scan(np.logaddexp.accumulate),
           sample_inputs=_sample_scan, dtypes=FLOATS, supports_out=True,
           error_inputs=_errors_scan),
    OpInfo("diff", ref=_ref_diff, sample_inputs=_sample_diff, dtypes=INTS + FLOATS + COMPLEX,
           supports_out=True),
    OpInfo("diff", variant="bool", ref=lambda a, n=1, dim=-1: a[1:] ^ a[:-1],
           sample_inputs=lambda d, r: [SampleInput(_t((6,), d, r))], dtypes=BOOL,
           supports_out=True, differentiable=False),
    OpInfo("dist", ref=lambda a, b, p=2: np.asarray(np.linalg.norm(
        (a - b).reshape(-1).astype(np.float64), p)),
           sample_inputs=lambda d, r: [SampleInput(_t((3, 4), d, r), _t((4,), d, r)),
                                       SampleInput(_t((5,), d, r), _t((5,), d, r), 3),
                                       SampleInput(_t((5,), d, r), _t((5,), d, r), 1)],
           dtypes=FLOATS),
    OpInfo("trapezoid", ref=_ref_trapezoid, sample_inputs=_sample_trapezoid,
           dtypes=INTS[1:] + FLOATS[2:], method=False),
    OpInfo("trapz", ref=_ref_trapezoid, sample_inputs=_sample_trapezoid, dtypes=FLOATS[2:],
           method=False),
    OpInfo("cumulative_trapezoid", ref=_ref_cumulative_trapezoid, dtypes=INTS[1:] + FLOATS[2:],
           sample_inputs=lambda d, r: (s for s in _sample_trapezoid(d, r) if s.name != "empty"),
           method=False),
    OpInfo("renorm", ref=None, dtypes=FLOATS,
           sample_inputs=lambda d, r: [SampleInput(_t((3, 4), d, r), 2, 0, 5.0),
                                       SampleInput(_t((2, 3, 2), d, r), 1, 1, 4.0)],
           inplace=True, supports_out=True),
]
