"""OpInfo entries for ember/_ops/sorting.py.

Samples draw floats from a continuous range, so they hold no ties: which of several equal
elements an index points at is unspecified in PyTorch (tests/_ops/test_sorting.py checks the
tie rules ember does promise).
"""

import numpy as np

from .._opinfo import FLOATS, INTS, REAL, REAL_NO_BOOL, ErrorInput, OpInfo, SampleInput


def _t(shape, dtype, rng, **kw):
    from .. import make_tensor

    return make_tensor(shape, dtype=dtype, rng=rng, **kw)


def _distinct(shape, dtype, rng):
    """Distinct values (a permutation), so sorting indices are unique in every dtype."""
    import ember

    n = int(np.prod(shape))
    if dtype == ember.bool:
        return _t(shape, dtype, rng)
    vals = rng.permutation(n).reshape(shape)
    if dtype in (ember.int8, ember.uint8):
        vals = vals % 100
    return ember.tensor(vals.astype(np.float64)).to(dtype)


# ------------------------------------------------------------------------------------------------
# samples


def _sample_sort(dtype, rng):
    def t(shape):
        return _distinct(shape, dtype, rng)

    yield SampleInput(t((6,)), name="vector")
    yield SampleInput(t((3, 5)), 0, name="dim0")
    yield SampleInput(t((3, 5)), -1, True, name="descending")
    yield SampleInput(t((2, 3, 4)), 1, descending=True, name="3d")
    yield SampleInput(t(()), name="scalar")
    yield SampleInput(t((0, 3)), 0, name="empty")


def _sample_topk(dtype, rng):
    yield SampleInput(_distinct((6,), dtype, rng), 3, name="vector")
    yield SampleInput(_distinct((3, 5), dtype, rng), 2, 0, name="dim0")
    yield SampleInput(_distinct((3, 5), dtype, rng), 2, largest=False, name="smallest")
    yield SampleInput(_distinct((3, 5), dtype, rng), 0, name="k0")
    yield SampleInput(_distinct((), dtype, rng), 1, name="scalar")


def _sample_kth(dtype, rng):
    yield SampleInput(_distinct((6,), dtype, rng), 3, name="vector")
    yield SampleInput(_distinct((3, 5), dtype, rng), 2, 0, name="dim0")
    yield SampleInput(_distinct((3, 5), dtype, rng), 5, -1, True, name="keepdim")
    yield SampleInput(_distinct((), dtype, rng), 1, name="scalar")


def _sample_median_full(dtype, rng):
    yield SampleInput(_distinct((7,), dtype, rng), name="odd")
    yield SampleInput(_distinct((2, 4), dtype, rng), name="even")
    yield SampleInput(_distinct((), dtype, rng), name="scalar")


def _sample_median_dim(dtype, rng):
    yield SampleInput(_distinct((3, 5), dtype, rng), 1, name="rows")
    yield SampleInput(_distinct((4, 3), dtype, rng), 0, keepdim=True, name="cols_keepdim")
    yield SampleInput(_distinct((2, 3, 4), dtype, rng), -1, name="3d")
    yield SampleInput(_distinct((), dtype, rng), 0, name="scalar")
    yield SampleInput(_distinct((0, 3), dtype, rng), 1, name="empty")


def _sample_mode(dtype, rng):
    yield SampleInput(_t((3, 6), dtype, rng, low=0, high=3), name="rows")
    yield SampleInput(_t((6, 2), dtype, rng, low=0, high=3), 0, name="cols")
    yield SampleInput(_t((), dtype, rng), name="scalar")


def _sample_quantile(dtype, rng):
    import ember

    x = _t((3, 5), dtype, rng)
    yield SampleInput(x, 0.3, name="all")
    yield SampleInput(x, 0.75, 1, name="rows")
    yield SampleInput(x, 0.5, 0, True, name="keepdim")
    yield SampleInput(x, ember.tensor([0.1, 0.3, 0.9], dtype=dtype), 1, name="q_tensor")
    yield SampleInput(x, ember.tensor([0.1, 0.9], dtype=dtype), keepdim=True, name="q_all")
    for mode in ("lower", "higher", "midpoint", "nearest"):
        yield SampleInput(x, 0.4, 1, interpolation=mode, name=mode)


def _sample_nanquantile(dtype, rng):
    x = _t((3, 5), dtype, rng)
    x.numpy()[0, 1] = np.nan
    x.numpy()[2, :] = np.nan
    yield SampleInput(x, 0.3, 1, name="rows_with_nan")
    yield SampleInput(x, 0.5, name="all_with_nan")


def _sample_unique(dtype, rng):
    yield SampleInput(_t((8,), dtype, rng, low=0, high=4), name="vector")
    yield SampleInput(_t((3, 4), dtype, rng, low=0, high=3), return_inverse=True,
                      return_counts=True, name="inverse_counts")
    x = _t((4, 2), dtype, rng, low=0, high=2)
    yield SampleInput(x, dim=0, return_inverse=True, return_counts=True, name="dim0")
    yield SampleInput(_t((0,), dtype, rng), name="empty")


def _sample_unique_consecutive(dtype, rng):
    yield SampleInput(_t((10,), dtype, rng, low=0, high=3), return_inverse=True,
                      return_counts=True, name="vector")
    yield SampleInput(_t((5, 2), dtype, rng, low=0, high=2), dim=0, return_counts=True,
                      name="dim0")


def _sample_searchsorted(dtype, rng):
    import ember

    seq = ember.tensor(np.sort(_t((8,), dtype, rng).numpy()))
    yield SampleInput(seq, _t((3, 4), dtype, rng), name="1d")
    yield SampleInput(seq, _t((5,), dtype, rng), right=True, name="right")
    yield SampleInput(seq, _t((5,), dtype, rng), side="right", out_int32=True, name="int32")
    rows = ember.tensor(np.sort(_t((2, 6), dtype, rng).numpy(), axis=-1))
    yield SampleInput(rows, _t((2, 3), dtype, rng), name="batched")
    yield SampleInput(seq, seq, name="exact_hits")


def _sample_bucketize(dtype, rng):
    import ember

    b = ember.tensor(np.unique(_t((6,), dtype, rng).numpy()))
    yield SampleInput(_t((3, 4), dtype, rng), b, name="matrix")
    yield SampleInput(b, b, right=True, name="right_on_edges")


def _sample_bincount(dtype, rng):
    import ember

    x = _t((10,), dtype, rng, low=0, high=6)
    yield SampleInput(x, name="plain")
    yield SampleInput(x, minlength=9, name="minlength")
    yield SampleInput(x, ember.tensor(rng.uniform(0, 1, 10)), name="weights")
    yield SampleInput(_t((0,), dtype, rng), name="empty")


def _sample_histc(dtype, rng):
    x = _t((20,), dtype, rng)
    yield SampleInput(x, name="default")
    yield SampleInput(x, 5, -3, 3, name="range")
    yield SampleInput(_t((3, 4), dtype, rng), bins=7, name="matrix")


def _sample_histogram(dtype, rng):
    import ember

    x = _t((20,), dtype, rng)
    yield SampleInput(x, 5, name="bins")
    yield SampleInput(x, 4, range=(-2.0, 2.0), density=True, name="range_density")
    edges = ember.tensor([-9.0, -1.0, 0.0, 3.0, 9.0], dtype=dtype)
    yield SampleInput(x, edges, weight=_t((20,), dtype, rng, low=0, high=1), name="edges")


# ------------------------------------------------------------------------------------------------
# references


def _np_sort(a, dim=-1, descending=False, stable=False):
    if a.ndim == 0:
        return a, np.int64(0)
    key = -a.astype(np.float64) if descending else a
    i = np.argsort(key, axis=dim, kind="stable")
    return np.take_along_axis(a, i, dim), i


def _np_topk(a, k, dim=-1, largest=True, sorted=True):
    if a.ndim == 0:
        return a, np.int64(0)
    v, i = _np_sort(a, dim, largest)
    return np.take(v, range(k), axis=dim), np.take(i, range(k), axis=dim)


def _np_kth(a, k, dim=-1, keepdim=False):
    if a.ndim == 0:
        return a, np.int64(0)
    v, i = _np_sort(a, dim)
    v, i = np.take(v, [k - 1], axis=dim), np.take(i, [k - 1], axis=dim)
    return (v, i) if keepdim else (v.squeeze(dim), i.squeeze(dim))


def _np_median_full(a):
    f = np.sort(a.reshape(-1))
    return f[(f.size - 1) // 2]


def _np_median_dim(a, dim, keepdim=False):
    if a.ndim == 0:
        return a, np.int64(0)
    return _np_kth(a, (a.shape[dim] + 1) // 2, dim, keepdim) if a.shape[dim] else (
        np.take(a, [], axis=dim).squeeze(dim) if not keepdim else np.take(a, [], axis=dim),
        np.zeros(0, np.int64).reshape(a.shape[:dim] + a.shape[dim + 1:]))


def _np_quantile(a, q, dim=None, keepdim=False, interpolation="linear"):
    return np.quantile(a, q, axis=dim, keepdims=keepdim, method=interpolation)


def _np_nanquantile(a, q, dim=None, keepdim=False, interpolation="linear"):
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.nanquantile(a, q, axis=dim, keepdims=keepdim, method=interpolation)


def _np_unique(a, sorted=True, return_inverse=False, return_counts=False, dim=None):
    v, inv, c = np.unique(a, return_inverse=True, return_counts=True, axis=dim)
    inv = inv.reshape(a.shape) if dim is None else inv.reshape(-1)
    out = [v] + ([inv] if return_inverse else []) + ([c] if return_counts else [])
    return out[0] if len(out) == 1 else tuple(out)


def _np_searchsorted(seq, x, *, right=False, side=None, out_int32=False, sorter=None):
    side = side or ("right" if right else "left")
    if seq.ndim == 1:
        return np.searchsorted(seq, x, side=side)
    return np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq, x)])


def _np_histc(a, bins=100, min=0, max=0):
    lo, hi = (float(a.min()), float(a.max())) if min == max else (min, max)
    return np.histogram(a, bins=bins, range=(lo, hi))[0]


# ------------------------------------------------------------------------------------------------
# errors


def _errors_sort(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2, 3), 2), IndexError, "out of range")


def _errors_topk(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2, 3), 4), RuntimeError, "k out of range")
    yield ErrorInput(SampleInput(ember.ones(2, 3), 1, 2), IndexError, "out of range")


def _errors_kth(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2, 3), 4), RuntimeError, "out of range")
    yield ErrorInput(SampleInput(ember.ones(2, 3), 0), RuntimeError, "out of range")


def _errors_median_dim(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2, 0), 1), IndexError, "non-zero size")
    yield ErrorInput(SampleInput(ember.ones(2, 3), 2), IndexError, "out of range")
    yield ErrorInput(SampleInput(ember.tensor([True, False]), 0), RuntimeError, "Bool")


def _errors_quantile(rng):
    import ember

    x = ember.ones(3)
    yield ErrorInput(SampleInput(x, 1.5), RuntimeError, "range")
    yield ErrorInput(SampleInput(ember.tensor([1, 2]), 0.5), RuntimeError, "float or double")
    yield ErrorInput(SampleInput(ember.ones(0), 0.5), RuntimeError, "non-empty")
    yield ErrorInput(SampleInput(x, ember.ones(1, 1) * 0.5), RuntimeError, "1D")
    yield ErrorInput(SampleInput(x, 0.5, interpolation="cubic"), RuntimeError, "interpolation")


def _errors_bincount(rng):
    import ember

    yield ErrorInput(SampleInput(ember.tensor([-1, 2])), RuntimeError, "non-negative")
    yield ErrorInput(SampleInput(ember.tensor([[1, 2]])), RuntimeError, "1-d")
    yield ErrorInput(SampleInput(ember.tensor([1.0, 2.0])), RuntimeError, "integral")
    yield ErrorInput(SampleInput(ember.tensor([True])), RuntimeError, "Bool")


def _errors_searchsorted(rng):
    import ember

    s = ember.tensor([1, 2, 3])
    yield ErrorInput(SampleInput(s, s, right=True, side="left"), RuntimeError, "opposites")
    yield ErrorInput(SampleInput(ember.ones(2, 3), ember.ones(3, 3)), RuntimeError,
                     "boundaries")


def _errors_histc(rng):
    import ember

    yield ErrorInput(SampleInput(ember.tensor([1, 2])), RuntimeError, "Long")
    yield ErrorInput(SampleInput(ember.ones(3), 4, 2, 1), RuntimeError, "max must be larger")


op_db = [
    OpInfo("sort", ref=_np_sort, sample_inputs=_sample_sort, dtypes=REAL, supports_out=True,
           error_inputs=_errors_sort),
    OpInfo("argsort", ref=lambda *a, **k: _np_sort(*a, **k)[1], sample_inputs=_sample_sort,
           dtypes=REAL, differentiable=False, error_inputs=_errors_sort),
    OpInfo("msort", ref=lambda a: np.sort(a, axis=0),
           sample_inputs=lambda d, r: (s for s in _sample_sort(d, r) if not s.args and
                                       not s.kwargs and s.input.dim()),
           dtypes=REAL, supports_out=True),
    OpInfo("topk", ref=_np_topk, sample_inputs=_sample_topk, dtypes=REAL_NO_BOOL,
           error_inputs=_errors_topk, supports_out=True),
    OpInfo("kthvalue", ref=_np_kth, sample_inputs=_sample_kth, dtypes=REAL_NO_BOOL,
           error_inputs=_errors_kth, supports_out=True),
    OpInfo("median", variant="full", ref=_np_median_full, sample_inputs=_sample_median_full,
           dtypes=REAL_NO_BOOL),
    OpInfo("median", variant="dim", ref=_np_median_dim, sample_inputs=_sample_median_dim,
           dtypes=REAL_NO_BOOL, error_inputs=_errors_median_dim, supports_out=True),
    OpInfo("nanmedian", variant="full", ref=_np_median_full,
           sample_inputs=_sample_median_full, dtypes=REAL_NO_BOOL),
    OpInfo("nanmedian", variant="dim", ref=_np_median_dim, sample_inputs=_sample_median_dim,
           dtypes=REAL_NO_BOOL, error_inputs=_errors_median_dim, supports_out=True),
    OpInfo("mode", ref=None, sample_inputs=_sample_mode, dtypes=REAL_NO_BOOL,
           supports_out=True,
           skips={"gradients": "integer-valued samples are chosen to make ties"}),
    OpInfo("quantile", ref=_np_quantile, sample_inputs=_sample_quantile, dtypes=FLOATS[2:],
           supports_out=True, error_inputs=_errors_quantile),
    OpInfo("nanquantile", ref=_np_nanquantile, sample_inputs=_sample_nanquantile,
           dtypes=FLOATS[2:], supports_out=True,
           skips={"gradients": "NaN samples have no finite differences"}),
    OpInfo("unique", ref=_np_unique, sample_inputs=_sample_unique, dtypes=REAL,
           differentiable=False),
    OpInfo("unique_consecutive", ref=None, sample_inputs=_sample_unique_consecutive,
           dtypes=REAL, differentiable=False),
    OpInfo("searchsorted", ref=_np_searchsorted, sample_inputs=_sample_searchsorted,
           dtypes=REAL_NO_BOOL, method=False, supports_out=True, differentiable=False,
           error_inputs=_errors_searchsorted),
    OpInfo("bucketize", ref=lambda x, b, right=False: np.searchsorted(
        b, x, side="right" if right else "left"), sample_inputs=_sample_bucketize,
           dtypes=REAL_NO_BOOL, method=False, supports_out=True, differentiable=False),
    OpInfo("bincount", ref=lambda x, weights=None, minlength=0: np.bincount(
        x, weights, minlength), sample_inputs=_sample_bincount, dtypes=INTS,
           differentiable=False, error_inputs=_errors_bincount),
    OpInfo("histc", ref=_np_histc, sample_inputs=_sample_histc, dtypes=FLOATS[2:],
           supports_out=True, differentiable=False, error_inputs=_errors_histc),
    OpInfo("histogram", ref=None, sample_inputs=_sample_histogram, dtypes=FLOATS[2:],
           differentiable=False, supports_out=True),
]
