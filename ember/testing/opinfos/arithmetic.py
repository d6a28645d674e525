"""OpInfo entries for ember/_ops/arithmetic.py."""

import numpy as np

from .._opinfo import (
    ALL, ALL_BUT_BOOL, BOOL, FLOAT_AND_COMPLEX, FLOATS, INTS, REAL, REAL_NO_BOOL, ErrorInput,
    OpInfo, SampleInput, sample_binary, sample_unary,
)


def _t(shape, dtype, rng, **kw):
    from .. import make_tensor

    return make_tensor(shape, dtype=dtype, rng=rng, **kw)


def _errors_sub(rng):
    import ember

    b = ember.tensor([True, False])
    yield ErrorInput(SampleInput(b, b), RuntimeError, "two bool tensors")


def _errors_broadcast(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2, 3), ember.ones(4)), RuntimeError, "")


def _sample_tensors_only(dtype, rng):
    # PyTorch's logical ops take no Python number operand (a TypeError)
    yield from sample_binary(dtype, rng, scalars=False)


def _sample_pow(dtype, rng):
    yield from sample_binary(dtype, rng, low=0 if dtype.category == 1 else 0.5, high=3,
                             scalars=False)
    if dtype.category >= 2:
        yield SampleInput(_t((4,), dtype, rng, low=0.5, high=2), 2, name="square")
        yield SampleInput(_t((4,), dtype, rng, low=0.5, high=2), 0.5, name="sqrt")


def _errors_pow(rng):
    import ember

    yield ErrorInput(SampleInput(ember.tensor([1, 2]), -1), RuntimeError,
                     "negative integer powers")


def _sample_div_mode(mode):
    def gen(dtype, rng):
        for s in sample_binary(dtype, rng, rhs_exclude_zero=True, scalars=False):
            s.kwargs["rounding_mode"] = mode
            yield s

    return gen


def _sample_shift(dtype, rng):
    yield SampleInput(_t((6,), dtype, rng, low=0, high=50), _t((6,), dtype, rng, low=0, high=5))
    yield SampleInput(_t((3, 2), dtype, rng, low=0, high=50), 2, name="scalar")


op_db = [
    OpInfo("add", ref=np.add, sample_inputs=sample_binary, dtypes=ALL, inplace=True,
           supports_out=True, error_inputs=_errors_broadcast),
    OpInfo("add", variant="alpha", ref=lambda a, b, alpha: a + alpha * b,
           sample_inputs=lambda d, r: sample_binary(d, r, scalars=False, alpha=2),
           dtypes=ALL_BUT_BOOL, inplace=True, supports_out=True),
    OpInfo("sub", ref=np.subtract, sample_inputs=sample_binary, dtypes=ALL_BUT_BOOL,
           inplace=True, supports_out=True, error_inputs=_errors_sub),
    OpInfo("mul", ref=np.multiply, sample_inputs=sample_binary, dtypes=ALL, inplace=True,
           supports_out=True),
    OpInfo("div", ref=np.true_divide,
           sample_inputs=lambda d, r: sample_binary(d, r, rhs_exclude_zero=True),
           dtypes=REAL_NO_BOOL + FLOAT_AND_COMPLEX[4:], inplace=True, supports_out=True),
    OpInfo("div", variant="trunc", ref=lambda a, b, rounding_mode: np.trunc(a / b),
           sample_inputs=_sample_div_mode("trunc"), dtypes=INTS[1:] + FLOATS[2:],
           inplace=True, differentiable=False, supports_out=True),
    OpInfo("div", variant="floor", ref=lambda a, b, rounding_mode: np.floor_divide(a, b),
           sample_inputs=_sample_div_mode("floor"), dtypes=INTS[1:] + FLOATS[2:],
           inplace=True, differentiable=False, supports_out=True),
    OpInfo("floor_divide", ref=np.floor_divide,
           sample_inputs=lambda d, r: sample_binary(d, r, rhs_exclude_zero=True),
           dtypes=INTS[1:] + FLOATS[2:], inplace=True, supports_out=True,
           differentiable=False),
    OpInfo("remainder", ref=np.remainder,
           sample_inputs=lambda d, r: sample_binary(d, r, rhs_exclude_zero=True),
           dtypes=INTS[1:] + FLOATS[2:], inplace=True, supports_out=True,
           skips={"gradients": "discontinuous at the sample points' multiples"}),
    OpInfo("fmod", ref=np.fmod,
           sample_inputs=lambda d, r: sample_binary(d, r, rhs_exclude_zero=True),
           dtypes=INTS[1:] + FLOATS[2:], inplace=True, supports_out=True,
           skips={"gradients": "discontinuous at the sample points' multiples"}),
    OpInfo("pow", ref=np.power, sample_inputs=_sample_pow, dtypes=INTS[1:] + FLOATS[2:],
           inplace=True, supports_out=True, error_inputs=_errors_pow),
    OpInfo("neg", ref=np.negative, sample_inputs=sample_unary, dtypes=ALL_BUT_BOOL,
           inplace=True, supports_out=True),
    OpInfo("abs", ref=np.abs, sample_inputs=sample_unary, dtypes=ALL_BUT_BOOL, inplace=True,
           supports_out=True, skips={"gradients": "not differentiable at 0"}),
    OpInfo("eq", ref=np.equal, sample_inputs=sample_binary, dtypes=ALL, supports_out=True,
           differentiable=False, inplace=True),
    OpInfo("ne", ref=np.not_equal, sample_inputs=sample_binary, dtypes=ALL, supports_out=True,
           differentiable=False, inplace=True),
    OpInfo("lt", ref=np.less, sample_inputs=sample_binary, dtypes=REAL, supports_out=True,
           differentiable=False, inplace=True),
    OpInfo("le", ref=np.less_equal, sample_inputs=sample_binary, dtypes=REAL,
           supports_out=True, differentiable=False, inplace=True),
    OpInfo("gt", ref=np.greater, sample_inputs=sample_binary, dtypes=REAL, supports_out=True,
           differentiable=False, inplace=True),
    OpInfo("ge", ref=np.greater_equal, sample_inputs=sample_binary, dtypes=REAL,
           supports_out=True, differentiable=False, inplace=True),
    OpInfo("bitwise_and", ref=np.bitwise_and, sample_inputs=sample_binary, dtypes=BOOL + INTS,
           inplace=True, supports_out=True, differentiable=False),
    OpInfo("bitwise_or", ref=np.bitwise_or, sample_inputs=sample_binary, dtypes=BOOL + INTS,
           inplace=True, supports_out=True, differentiable=False),
    OpInfo("bitwise_xor", ref=np.bitwise_xor, sample_inputs=sample_binary, dtypes=BOOL + INTS,
           inplace=True, supports_out=True, differentiable=False),
    OpInfo("bitwise_not", ref=np.invert, sample_inputs=sample_unary, dtypes=BOOL + INTS,
           inplace=True, supports_out=True, differentiable=False),
    OpInfo("bitwise_left_shift", ref=np.left_shift, sample_inputs=_sample_shift,
           dtypes=INTS[1:], inplace=True, supports_out=True, differentiable=False),
    OpInfo("bitwise_right_shift", ref=np.right_shift, sample_inputs=_sample_shift,
           dtypes=INTS[1:], inplace=True, supports_out=True, differentiable=False),
    OpInfo("logical_and", ref=np.logical_and, sample_inputs=_sample_tensors_only, dtypes=ALL,
           supports_out=True, differentiable=False, inplace=True),
    OpInfo("logical_or", ref=np.logical_or, sample_inputs=_sample_tensors_only, dtypes=ALL,
           supports_out=True, differentiable=False, inplace=True),
    OpInfo("logical_xor", ref=np.logical_xor, sample_inputs=_sample_tensors_only, dtypes=ALL,
           supports_out=True, differentiable=False, inplace=True),
    OpInfo("logical_not", ref=np.logical_not, sample_inputs=sample_unary, dtypes=ALL,
           supports_out=True, differentiable=False, inplace=True),
]
