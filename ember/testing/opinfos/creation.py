"""OpInfo entries for ember/_ops/creation.py and ember/_ops/random_ops.py.

Factory functions take numbers, not tensors, as their first argument; the generic tests cope
(nothing to make non-contiguous, no method form). The random ops are ``nondeterministic``:
the generic tests then check shapes and dtypes against PyTorch, the error inputs, and that
every form draws the same numbers from the same seed; tests/_ops/test_random.py checks the
distributions.
"""

import numpy as np

from .._opinfo import (
    ALL,
    FLOATS,
    INTS,
    REAL_NO_BOOL,
    ErrorInput,
    OpInfo,
    SampleInput,
)


def _t(shape, dtype, rng, **kw):
    from .. import make_tensor

    return make_tensor(shape, dtype=dtype, rng=rng, **kw)


def _np_dtype(dtype):
    return None if dtype is None else dtype.np


# ------------------------------------------------------------------------------------------------
# factories


def _sample_sizes(dtype, rng):
    yield SampleInput((2, 3), dtype=dtype, name="tuple")
    yield SampleInput([4], dtype=dtype, name="list")
    yield SampleInput((), dtype=dtype, name="scalar")
    yield SampleInput((0, 2), dtype=dtype, name="empty")


def _sample_full(dtype, rng):
    value = {0: True, 1: 7, 2: 2.5, 3: 1 - 2j}[dtype.category]
    yield SampleInput((2, 3), value, dtype=dtype, name="typed")
    yield SampleInput((3,), value, name="inferred")
    yield SampleInput((0,), value, dtype=dtype, name="empty")


def _errors_sizes(rng):
    yield ErrorInput(SampleInput((2, -1)), RuntimeError, "negative dimension")
    yield ErrorInput(SampleInput((2.5,)), TypeError, "")


def _sample_arange(dtype, rng):
    if dtype.category == 1:
        yield SampleInput(5, dtype=dtype, name="end")
        yield SampleInput(2, 11, 3, dtype=dtype, name="step")
        yield SampleInput(9, 1, -2, dtype=dtype, name="negative_step")
        yield SampleInput(3, 3, dtype=dtype, name="empty")
    else:
        yield SampleInput(0.0, 1.0, 0.1, dtype=dtype, name="tenths")
        yield SampleInput(-2.5, 2, name="inferred_float")
        yield SampleInput(4, 1, -0.5, dtype=dtype, name="negative_step")
        yield SampleInput(7, name="inferred_int")


def _ref_arange(*args, dtype=None):
    if len(args) == 1:
        args = (0, args[0])
    floats = any(isinstance(a, float) for a in args)
    if dtype is None:
        return np.arange(*args).astype(np.float32 if floats else np.int64)
    return np.arange(*args).astype(dtype.np)


def _errors_arange(rng):
    yield ErrorInput(SampleInput(0, 1, 0), RuntimeError, "step must be nonzero")
    yield ErrorInput(SampleInput(0, -1), RuntimeError, "inconsistent with step sign")
    yield ErrorInput(SampleInput(0, float("inf")), RuntimeError, "unsupported range")


def _sample_linspace(dtype, rng):
    yield SampleInput(0, 1, 5, dtype=dtype, name="unit")
    yield SampleInput(-3.5, 7.25, 12, dtype=dtype, name="wide")
    yield SampleInput(2, -2, 9, dtype=dtype, name="decreasing")
    yield SampleInput(1, 5, 1, dtype=dtype, name="one")
    yield SampleInput(1, 5, 0, dtype=dtype, name="none")
    yield SampleInput(0, 10, 6, name="inferred")


def _ref_linspace(start, end, steps, dtype=None):
    return np.linspace(start, end, steps).astype(np.float32 if dtype is None else dtype.np)


def _sample_logspace(dtype, rng):
    yield SampleInput(0, 2, 5, dtype=dtype, name="base10")
    yield SampleInput(-1, 3, 7, base=2.0, dtype=dtype, name="base2")
    yield SampleInput(0, 1, 0, dtype=dtype, name="none")


def _ref_logspace(start, end, steps, base=10.0, dtype=None):
    return np.logspace(start, end, steps, base=base).astype(
        np.float32 if dtype is None else dtype.np)


def _errors_linspace(rng):
    yield ErrorInput(SampleInput(0, 1, -1), RuntimeError, "non-negative")


def _sample_eye(dtype, rng):
    yield SampleInput(3, dtype=dtype, name="square")
    yield SampleInput(2, 4, dtype=dtype, name="wide")
    yield SampleInput(4, 2, dtype=dtype, name="tall")
    yield SampleInput(0, dtype=dtype, name="empty")


def _errors_eye(rng):
    yield ErrorInput(SampleInput(-1), RuntimeError, "n must be greater or equal to 0")
    yield ErrorInput(SampleInput(2, -3), RuntimeError, "m must be greater or equal to 0")


def _sample_tri_indices(dtype, rng):
    yield SampleInput(3, 3, dtype=dtype, name="square")
    yield SampleInput(3, 5, 1, dtype=dtype, name="offset")
    yield SampleInput(4, 3, -2, dtype=dtype, name="negative_offset")
    yield SampleInput(0, 3, dtype=dtype, name="empty")


def _ref_tri(upper):
    def ref(row, col, offset=0, dtype=None):
        f = np.triu_indices if upper else np.tril_indices
        return np.stack(f(row, offset, col)).reshape(2, -1).astype(
            np.int64 if dtype is None else dtype.np)

    return ref


def _errors_tri(rng):
    yield ErrorInput(SampleInput(-1, 3), RuntimeError, "row must be non-negative")


def _sample_tensor(dtype, rng):
    data = _t((2, 3), dtype, rng).tolist()
    yield SampleInput(data, dtype=dtype, name="nested")
    yield SampleInput(data, name="inferred")
    yield SampleInput(data[0][0], dtype=dtype, name="scalar")
    yield SampleInput([], dtype=dtype, name="empty")


def _ref_tensor(data, dtype=None):
    if dtype is not None:
        return np.array(data).astype(dtype.np) if data != [] else np.zeros(0, dtype.np)
    a = np.array(data)
    return a.astype({"f": np.float32, "c": np.complex64, "i": np.int64}.get(a.dtype.kind,
                                                                            a.dtype))


def _errors_tensor(rng):
    yield ErrorInput(SampleInput([[1, 2], [3]]), ValueError, "expected sequence of length 2")
    yield ErrorInput(SampleInput([[1], 2]), TypeError, "")
    yield ErrorInput(SampleInput([None]), RuntimeError, "Could not infer dtype of NoneType")
    yield ErrorInput(SampleInput(["a"]), ValueError, "too many dimensions 'str'")
    yield ErrorInput(SampleInput([300], dtype=_uint8()), RuntimeError, "without overflow")


def _uint8():
    from ..._core import dtype as _dt

    return _dt.uint8


# -- *_like -----------------------------------------------------------------------------------


def _sample_like(dtype, rng, *args):
    yield SampleInput(_t((2, 3), dtype, rng), *args, name="matrix")
    yield SampleInput(_t((), dtype, rng), *args, name="scalar")
    yield SampleInput(_t((0, 4), dtype, rng), *args, name="empty")
    yield SampleInput(_t((3,), dtype, rng), *args, dtype=_wide(dtype), name="dtype_override")


def _wide(dtype):
    from ..._core import dtype as _dt

    return _dt.complex128 if dtype.category == 3 else _dt.float64


def _sample_full_like(dtype, rng):
    value = {0: True, 1: 3, 2: -1.5, 3: 2 + 1j}[dtype.category]
    yield from _sample_like(dtype, rng, value)


def _ref_like(fill):
    def ref(a, *args, dtype=None):
        value = args[0] if args else fill
        return np.full(a.shape, value).astype(a.dtype if dtype is None else dtype.np)

    return ref


# -- meshgrid ---------------------------------------------------------------------------------


def _sample_meshgrid(dtype, rng):
    for indexing in ("ij", "xy"):
        yield SampleInput(_t((3,), dtype, rng), _t((4,), dtype, rng), indexing=indexing,
                          name=f"two_{indexing}")
        yield SampleInput(_t((2,), dtype, rng), _t((), dtype, rng), _t((3,), dtype, rng),
                          indexing=indexing, name=f"three_{indexing}")


def _ref_meshgrid(*arrays, indexing):
    return tuple(np.meshgrid(*[np.reshape(a, -1) for a in arrays], indexing=indexing))


def _errors_meshgrid(rng):
    import ember

    yield ErrorInput(SampleInput(ember.zeros(2, 2), indexing="ij"), RuntimeError,
                     "Expected 0D or 1D tensor")
    yield ErrorInput(SampleInput(ember.zeros(2), ember.zeros(2, dtype=ember.int64),
                                 indexing="ij"), RuntimeError, "same dtype")
    yield ErrorInput(SampleInput(ember.zeros(2), indexing="ab"), RuntimeError,
                     "indexing must be one of")


# ------------------------------------------------------------------------------------------------
# random


def _sample_random_sizes(dtype, rng):
    yield SampleInput((2, 3), dtype=dtype, name="tuple")
    yield SampleInput(5, dtype=dtype, name="int")
    yield SampleInput((0,), dtype=dtype, name="empty")
    yield SampleInput((), name="default_dtype")


def _errors_rand(rng):
    import ember

    yield ErrorInput(SampleInput((2,), dtype=ember.int64), NotImplementedError,
                     "check_uniform_bounds")
    yield ErrorInput(SampleInput((-1,)), RuntimeError, "negative dimension")


def _errors_randn(rng):
    import ember

    yield ErrorInput(SampleInput((2,), dtype=ember.int64), NotImplementedError,
                     "normal_kernel_cpu")


def _sample_randint(dtype, rng):
    hi = 2 if dtype.category == 0 else 10
    yield SampleInput(hi, (2, 3), dtype=dtype, name="high")
    yield SampleInput(hi // 2, hi, (4,), dtype=dtype, name="low_high")
    yield SampleInput(hi, (0,), dtype=dtype, name="empty")


def _errors_randint(rng):
    import ember

    yield ErrorInput(SampleInput(3, 3, (2,)), RuntimeError, "from=3 >= to=3")
    yield ErrorInput(SampleInput(0, 300, (2,), dtype=ember.uint8), RuntimeError,
                     "out of bounds")
    yield ErrorInput(SampleInput(5), TypeError, "")


def _sample_randperm(dtype, rng):
    yield SampleInput(6, dtype=dtype, name="six")
    yield SampleInput(0, dtype=dtype, name="empty")
    yield SampleInput(1, name="default_dtype")


def _errors_randperm(rng):
    yield ErrorInput(SampleInput(-1), RuntimeError, "negative dimension")


def _sample_like_random(dtype, rng):
    yield SampleInput(_t((2, 3), dtype, rng), name="matrix")
    yield SampleInput(_t((0,), dtype, rng), name="empty")


def _sample_randint_like(dtype, rng):
    yield SampleInput(_t((2, 3), dtype, rng), 5, name="high")
    yield SampleInput(_t((4,), dtype, rng), 1, 5, name="low_high")


def _sample_normal(dtype, rng):
    yield SampleInput(_t((2, 3), dtype, rng), _t((2, 3), dtype, rng, low=0.1, high=2),
                      name="tensor_tensor")
    yield SampleInput(_t((2, 1), dtype, rng), _t((3,), dtype, rng, low=0.1, high=2),
                      name="broadcast")
    yield SampleInput(_t((4,), dtype, rng), 2.0, name="tensor_float")
    yield SampleInput(1.5, _t((4,), dtype, rng, low=0.1, high=2), name="float_tensor")
    yield SampleInput(1.5, 0.5, (2, 2), dtype=dtype, name="float_float")


def _errors_normal(rng):
    import ember

    yield ErrorInput(SampleInput(0.0, -1.0, (2,)), RuntimeError, "std >= 0.0")
    yield ErrorInput(SampleInput(ember.zeros(2), -ember.ones(2)), RuntimeError, "std >= 0.0")
    yield ErrorInput(SampleInput(ember.zeros(2, dtype=ember.int64), 1.0),
                     NotImplementedError, "normal_kernel_cpu")


def _sample_bernoulli(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng, low=0, high=1), name="probabilities")
    yield SampleInput(_t((5,), dtype, rng), 0.3, name="p")
    yield SampleInput(_t((0,), dtype, rng, low=0, high=1), name="empty")


def _errors_bernoulli(rng):
    import ember

    yield ErrorInput(SampleInput(ember.full((2,), 1.5)), RuntimeError, "p_in >= 0")
    yield ErrorInput(SampleInput(ember.ones(2, dtype=ember.int64)), NotImplementedError,
                     "bernoulli")


def _sample_multinomial(dtype, rng):
    yield SampleInput(_t((5,), dtype, rng, low=0.1, high=1), 3, name="no_replacement")
    yield SampleInput(_t((2, 4), dtype, rng, low=0.1, high=1), 6, True, name="replacement")
    yield SampleInput(_t((0, 4), dtype, rng, low=0.1, high=1), 2, name="no_rows")


def _errors_multinomial(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(3), 4), RuntimeError,
                     "cannot sample n_sample > prob_dist.size")
    yield ErrorInput(SampleInput(ember.ones(3), 0), RuntimeError, "n_sample <= 0")
    yield ErrorInput(SampleInput(ember.ones(2, 2, 2), 1), RuntimeError, "1 or 2 dim")
    yield ErrorInput(SampleInput(ember.tensor([1.0, -1.0]), 1), RuntimeError, "element < 0")
    yield ErrorInput(SampleInput(ember.zeros(2), 1), RuntimeError, "sum of probabilities")
    yield ErrorInput(SampleInput(ember.tensor([1, 1]), 1), RuntimeError, "floating-point")


def _sample_poisson(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng, low=0, high=5), name="rates")
    yield SampleInput(_t((0,), dtype, rng, low=0, high=5), name="empty")


def _errors_poisson(rng):
    import ember

    yield ErrorInput(SampleInput(ember.tensor([-1.0])), RuntimeError, "non-negative")
    yield ErrorInput(SampleInput(ember.tensor([1])), NotImplementedError, "poisson_cpu")


_FACTORY = dict(method=False, differentiable=False, supports_out=True)
_LIKE = dict(method=False, differentiable=False)
_RANDOM = dict(method=False, differentiable=False, nondeterministic=True)

op_db = [
    OpInfo("zeros", sample_inputs=_sample_sizes, dtypes=ALL, error_inputs=_errors_sizes,
           ref=lambda size, dtype=None: np.zeros(size, _np_dtype(dtype)), **_FACTORY),
    OpInfo("ones", sample_inputs=_sample_sizes, dtypes=ALL, error_inputs=_errors_sizes,
           ref=lambda size, dtype=None: np.ones(size, _np_dtype(dtype)), **_FACTORY),
    OpInfo("full", sample_inputs=_sample_full, dtypes=ALL,
           ref=lambda size, v, dtype=None: np.full(size, v), **_FACTORY),
    OpInfo("arange", sample_inputs=_sample_arange, ref=_ref_arange, dtypes=REAL_NO_BOOL,
           error_inputs=_errors_arange, **_FACTORY),
    OpInfo("linspace", sample_inputs=_sample_linspace, ref=_ref_linspace,
           dtypes=FLOATS, error_inputs=_errors_linspace, atol=2e-3, **_FACTORY),
    OpInfo("logspace", sample_inputs=_sample_logspace, ref=_ref_logspace, dtypes=FLOATS,
           **_FACTORY),
    OpInfo("eye", sample_inputs=_sample_eye, dtypes=ALL, error_inputs=_errors_eye,
           ref=lambda n, m=None, dtype=None: np.eye(n, m, dtype=_np_dtype(dtype)), **_FACTORY),
    OpInfo("tril_indices", sample_inputs=_sample_tri_indices, ref=_ref_tri(False),
           dtypes=INTS[3:], error_inputs=_errors_tri, method=False, differentiable=False),
    OpInfo("triu_indices", sample_inputs=_sample_tri_indices, ref=_ref_tri(True),
           dtypes=INTS[3:], error_inputs=_errors_tri, method=False, differentiable=False),
    OpInfo("tensor", sample_inputs=_sample_tensor, ref=_ref_tensor, dtypes=ALL,
           error_inputs=_errors_tensor, method=False, differentiable=False),
    OpInfo("zeros_like", sample_inputs=_sample_like, ref=_ref_like(0), dtypes=ALL, **_LIKE),
    OpInfo("ones_like", sample_inputs=_sample_like, ref=_ref_like(1), dtypes=ALL, **_LIKE),
    OpInfo("full_like", sample_inputs=_sample_full_like, ref=_ref_like(None), dtypes=ALL,
           **_LIKE),
    OpInfo("meshgrid", sample_inputs=_sample_meshgrid, ref=_ref_meshgrid, dtypes=ALL,
           error_inputs=_errors_meshgrid, method=False, grad_dtypes=FLOATS[3:]),
    # random: shapes and dtypes against PyTorch; distributions in tests/_ops/test_random.py
    OpInfo("rand", sample_inputs=_sample_random_sizes, dtypes=FLOATS + ALL[-2:],
           error_inputs=_errors_rand, **_RANDOM, supports_out=True),
    OpInfo("randn", sample_inputs=_sample_random_sizes, dtypes=FLOATS + ALL[-2:],
           error_inputs=_errors_randn, **_RANDOM, supports_out=True),
    OpInfo("randint", sample_inputs=_sample_randint, dtypes=ALL[:-2],
           error_inputs=_errors_randint, **_RANDOM, supports_out=True),
    OpInfo("randperm", sample_inputs=_sample_randperm, dtypes=INTS[1:] + FLOATS,
           error_inputs=_errors_randperm, **_RANDOM, supports_out=True),
    OpInfo("rand_like", sample_inputs=_sample_like_random, dtypes=FLOATS, **_RANDOM),
    OpInfo("randn_like", sample_inputs=_sample_like_random, dtypes=FLOATS, **_RANDOM),
    OpInfo("randint_like", sample_inputs=_sample_randint_like, dtypes=REAL_NO_BOOL, **_RANDOM),
    OpInfo("normal", sample_inputs=_sample_normal, dtypes=FLOATS, error_inputs=_errors_normal,
           **_RANDOM, supports_out=True),
    OpInfo("bernoulli", sample_inputs=_sample_bernoulli, dtypes=FLOATS,
           error_inputs=_errors_bernoulli, nondeterministic=True, differentiable=False,
           supports_out=True,
           skips={"inplace": "Tensor.bernoulli_(p) fills self with draws of probability p; "
                             "it does not read self as probabilities like bernoulli(input)"}),
    OpInfo("multinomial", sample_inputs=_sample_multinomial, dtypes=FLOATS[2:],
           error_inputs=_errors_multinomial, nondeterministic=True, differentiable=False,
           supports_out=True),
    OpInfo("poisson", sample_inputs=_sample_poisson, dtypes=FLOATS[2:],
           error_inputs=_errors_poisson, **_RANDOM),
]
