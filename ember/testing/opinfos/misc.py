"""OpInfo entries for the everyday extras: frexp/ldexp/rsub (ember/_ops/misc.py), isin
(sorting.py), nonzero_static (masked.py), fill (creation.py), sum_to_size (shape.py) and
the unsafe splits (join.py)."""

import numpy as np

from .._opinfo import ALL, FLOATS, INTS, REAL_NO_BOOL, ErrorInput, OpInfo, SampleInput
from ..._core import dtype as _dt


def _t(shape, dtype, rng, **kw):
    from .. import make_tensor

    return make_tensor(shape, dtype=dtype, rng=rng, **kw)


def _meth(name):
    def call(x, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)

    call.__name__ = name
    return call


def _samples(*specs):
    def gen(dtype, rng):
        for shape, args, kwargs in specs:
            yield SampleInput(_t(shape, dtype, rng), *args, name=f"{shape}{args}{kwargs or ''}",
                              **kwargs)

    return gen


def _sample_frexp(dtype, rng):
    from ... import tensor

    yield SampleInput(_t((3, 4), dtype, rng), name="random")
    if dtype is _dt.float64:
        return  # the gradient dtype: the mantissa jumps at powers of two, so no specials
    yield SampleInput(tensor([0.0, -0.0, 1.0, -3.0, 0.125, float("inf"), float("nan")],
                             dtype=dtype), name="specials")
    yield SampleInput(_t((), dtype, rng), name="0-d")


def _ref_frexp(a):
    m, e = np.frexp(a.astype(np.float64))
    return m.astype(a.dtype), e.astype(np.int32)


def _sample_ldexp(dtype, rng):
    from ... import tensor

    yield SampleInput(_t((3, 4), dtype, rng), tensor([[-2], [0], [3]]), name="int exponents")
    yield SampleInput(_t((4,), dtype, rng), _t((4,), dtype, rng, low=-3, high=3),
                      name="float exponents")


def _sample_rsub(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng), _t((3, 4), dtype, rng), name="tensor")
    yield SampleInput(_t((3, 4), dtype, rng), _t((4,), dtype, rng), alpha=2, name="alpha")
    yield SampleInput(_t((3,), dtype, rng), 3, name="scalar")


def _sample_isin(dtype, rng):
    a = _t((3, 4), dtype, rng, low=0, high=5)
    yield SampleInput(a, _t((5,), dtype, rng, low=0, high=5), name="tensors")
    yield SampleInput(a, _t((2, 2), dtype, rng, low=0, high=5), invert=True, name="invert")
    yield SampleInput(a, 2, name="scalar test")


def _ref_isin(a, b, invert=False, assume_unique=False):
    return np.isin(a, b, invert=invert)


def _ref_nonzero_static(a, size, fill_value=-1):
    idx = np.argwhere(a)
    pad = np.full((max(size - idx.shape[0], 0), a.ndim), fill_value, np.int64)
    return np.concatenate([idx[:size], pad]).astype(np.int64)


def _sample_fill(dtype, rng):
    from ... import tensor

    yield SampleInput(_t((3, 4), dtype, rng), 1, name="number")
    yield SampleInput(_t((2,), dtype, rng), tensor(1, dtype=dtype), name="0-d tensor")


def _ref_fill(a, v):
    return np.full(a.shape, v, a.dtype)


def _ref_sum_to_size(a, *size):
    size = size[0] if len(size) == 1 and isinstance(size[0], tuple) else size
    lead = a.ndim - len(size)
    r = a.sum(tuple(range(lead))) if lead else a
    dims = tuple(i for i, s in enumerate(size) if s == 1 and r.shape[i] != 1)
    return r.sum(dims, keepdims=True) if dims else r


def _ref_split(a, size, dim=0):
    idx = list(range(size, a.shape[dim], size))
    return tuple(np.split(a, idx, axis=dim))


op_db = [
    OpInfo("frexp", dtypes=FLOATS, ref=_ref_frexp, sample_inputs=_sample_frexp,
           error_inputs=lambda rng: [ErrorInput(SampleInput(_t((2,), _dt.int64, rng)),
                                                RuntimeError, "floating-point")]),
    OpInfo("ldexp", dtypes=FLOATS, ref=lambda a, e: a * np.exp2(e).astype(a.dtype),
           sample_inputs=_sample_ldexp, inplace=True,
           skips={"torch_gradients": "PyTorch 2.13 gives a zero gradient for negative integer "
                                     "exponents (2 ** -2 in integers); gradcheck verifies "
                                     "ember's"}),
    OpInfo("rsub", dtypes=REAL_NO_BOOL, method=False,
           ref=lambda a, b, alpha=1: (np.asarray(b) - alpha * a).astype(a.dtype),
           sample_inputs=_sample_rsub),
    OpInfo("isin", dtypes=REAL_NO_BOOL, method=False, ref=_ref_isin, differentiable=False,
           sample_inputs=_sample_isin),
    OpInfo("nonzero_static", dtypes=ALL, ref=_ref_nonzero_static, differentiable=False,
           sample_inputs=_samples(((3, 4), (), dict(size=20)), ((3, 4), (), dict(size=2)),
                                  ((5,), (), dict(size=7, fill_value=9)))),
    OpInfo("fill", dtypes=ALL, method=False, ref=_ref_fill, sample_inputs=_sample_fill,
           skips={"inplace": "Tensor.fill_ is the in-place form; tested in test_creation"}),
    OpInfo("sum_to_size", op=_meth("sum_to_size"), torch_op=lambda torch: _meth("sum_to_size"),
           dtypes=FLOATS + INTS, method=False, ref=_ref_sum_to_size,
           sample_inputs=_samples(((2, 3), (1, 3), {}), ((2, 3), ((3,),), {}),
                                  ((2, 3, 4), (3, 1), {}), ((2, 3), (2, 3), {})),
           error_inputs=lambda rng: [ErrorInput(SampleInput(_t((2, 3), _dt.float32, rng), 2, 1,
                                                            3), RuntimeError, "expandable")]),
    OpInfo("unsafe_split", dtypes=ALL, ref=_ref_split,
           sample_inputs=_samples(((5, 3), (2,), {}), ((3, 6), (4, 1), {}))),
    OpInfo("unsafe_chunk", dtypes=ALL, ref=lambda a, n, dim=0: _ref_split(
        a, -(-a.shape[dim] // n), dim), sample_inputs=_samples(((5, 3), (2,), {}),
                                                                ((3, 6), (3, 1), {}))),
    OpInfo("unsafe_split_with_sizes", dtypes=ALL,
           ref=lambda a, sizes, dim=0: tuple(np.split(a, list(np.cumsum(sizes)[:-1]), axis=dim)),
           sample_inputs=_samples(((5, 3), ([1, 4],), {}), ((3, 6), ([2, 0, 4], 1), {}))),
]
