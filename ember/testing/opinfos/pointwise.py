"""OpInfo entries for ember/_ops/pointwise.py and ember/_ops/special_ops.py."""

import math

import numpy as np
import scipy.special as sp

from .._opinfo import (
    BOOL,
    COMPLEX,
    FLOATS,
    INTS,
    REAL,
    REAL_NO_BOOL,
    ErrorInput,
    OpInfo,
    SampleInput,
    sample_binary,
    sample_unary,
)

F32_64 = FLOATS[2:]
ALL_FLOAT_OUT = REAL + COMPLEX  # ops promoting integers to float, complex supported


def _t(shape, dtype, rng, **kw):
    from .. import make_tensor

    return make_tensor(shape, dtype=dtype, rng=rng, **kw)


def _int_range(dtype, low, high):
    """Integer samples need an integer range that is not empty."""
    if dtype.category >= 2 or low is None:
        return low, high
    lo = math.floor(low)
    return lo, max(math.ceil(high), lo + 1)


def _unary(low=None, high=None, **kwargs):
    def gen(d, r):
        lo, hi = _int_range(d, low, high)
        return sample_unary(d, r, low=lo, high=hi, **kwargs)

    return gen


def _binary(low=None, high=None, scalars=False, **kwargs):
    def gen(d, r):
        lo, hi = _int_range(d, low, high)
        return sample_binary(d, r, low=lo, high=hi, scalars=scalars, **kwargs)

    return gen


def _upcast(ref):
    """NumPy computes ``sin(bool)`` and ``sin(float16)`` in float16; PyTorch in float32.
    Give references float64 for bool, integer and half inputs (the tests cast the reference
    to the result dtype)."""

    def f(*args, **kwargs):
        args = [a.astype(np.float64) if isinstance(a, np.ndarray) and (
            a.dtype.kind in "biu" or a.dtype == np.float16) else a for a in args]
        return ref(*args, **kwargs)

    return f


def U(name, ref, dtypes=ALL_FLOAT_OUT, low=None, high=None, inplace=True, out=True, **kw):
    """A unary entry: samples in [low, high)."""
    return OpInfo(name, ref=_upcast(ref), sample_inputs=_unary(low, high), dtypes=dtypes,
                  inplace=inplace, supports_out=out, **kw)


def B(name, ref, dtypes=FLOATS, low=None, high=None, inplace=True, scalars=False,
      upcast=True, **kw):
    """A binary entry (``other`` a tensor unless ``scalars``)."""
    return OpInfo(name, ref=_upcast(ref) if upcast else ref,
                  sample_inputs=_binary(low, high, scalars), dtypes=dtypes, inplace=inplace,
                  supports_out=True, **kw)


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


def _rsqrt(a):
    return 1 / np.sqrt(a)


def _sign(a):
    return a.copy() if a.dtype == bool else np.nan_to_num(np.sign(a))


def _sgn(a):
    if a.dtype.kind != "c":
        return _sign(a)
    m = np.abs(a)
    return np.where(m == 0, 0, a / np.where(m == 0, 1, m))


def _square(a):
    return np.square(a.astype(np.int64) if a.dtype == bool else a)


def _angle(a):
    if a.dtype.kind == "c":
        return np.angle(a)
    return np.where(np.isnan(a), a, np.where(a < 0, np.pi, 0.0))


def _logaddexp(a, b):
    if a.dtype.kind == "c":
        # PyTorch factors out the operand with the larger real part, which fixes the branch
        big = np.where(a.real >= b.real, a, b)
        small = np.where(a.real >= b.real, b, a)
        return big + np.log(1 + np.exp(small - big))
    return np.logaddexp(a, b)


def _xlogy(x, y):
    return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log(np.where(x == 0, 1, y)))


def _lerp(a, b, w):
    return a + w * (b - a)


def _logit_ref(a, eps=None):
    a = a.astype(np.float64)
    return sp.logit(a if eps is None else np.clip(a, eps, 1 - eps))


def _mvlgamma(a, p):
    return sum(sp.gammaln(a - j / 2) for j in range(p)) + p * (p - 1) / 4 * np.log(np.pi)


# ------------------------------------------------------------------------------------------------
# samples and errors for ops with parameters


def _sample_clamp(dtype, rng):
    t = lambda *s, **kw: _t(s, dtype, rng, **kw)  # noqa: E731
    lo = 1 if dtype.name == "uint8" else -3  # a negative bound would wrap around in uint8
    yield SampleInput(t(5), lo, 4, name="scalars")
    yield SampleInput(t(3, 4), min=lo, name="min_only")
    yield SampleInput(t(3, 4), max=2, name="max_only")
    yield SampleInput(t(2, 3), t(3, low=0, high=3), t(2, 1, low=5, high=9), name="tensors")
    yield SampleInput(t(), lo, 4, name="zero_dim")
    yield SampleInput(t(0, 3), lo, 4, name="empty")


def _errors_clamp(rng):
    import ember

    x = ember.ones(3)
    yield ErrorInput(SampleInput(x), RuntimeError, "At least one of 'min' or 'max'")
    yield ErrorInput(SampleInput(x, ember.ones(2)), RuntimeError, "")
    yield ErrorInput(SampleInput(ember.ones(2, dtype=ember.complex64), 0), RuntimeError,
                     "complex")


def _sample_clamp_bound(dtype, rng):
    yield SampleInput(_t((5,), dtype, rng), 1, name="scalar")
    yield SampleInput(_t((2, 3), dtype, rng), _t((3,), dtype, rng), name="tensor")


def _sample_round_decimals(dtype, rng):
    yield SampleInput(_t((6,), dtype, rng), decimals=2, name="2")
    yield SampleInput(_t((2, 3), dtype, rng, low=-900, high=900), decimals=-2, name="-2")


def _sample_logit(dtype, rng):
    yield from _unary(0.05, 0.95)(dtype, rng)
    lo, hi = _int_range(dtype, 0.05, 0.95)
    yield SampleInput(_t((5,), dtype, rng, low=lo, high=hi), eps=0.2, name="eps")


def _sample_nan_to_num(dtype, rng):
    import ember

    yield from sample_unary(dtype, rng)
    if dtype.category == 2:
        special = ember.tensor([float("nan"), float("inf"), -float("inf"), 1.5], dtype=dtype)
        yield SampleInput(special, name="special")
        yield SampleInput(special, 1.0, 2.0, -2.0, name="values")


def _sample_lerp(dtype, rng):
    t = lambda *s, **kw: _t(s, dtype, rng, **kw)  # noqa: E731
    yield SampleInput(t(5), t(5), 0.3, name="scalar_weight")
    yield SampleInput(t(5), t(5), 0.8, name="scalar_weight_high")
    yield SampleInput(t(3, 4), t(4), t(3, 1, low=0, high=1), name="tensor_weight")
    yield SampleInput(t(), t(), t(low=0, high=1), name="zero_dim")
    yield SampleInput(t(0, 3), t(3), 0.5, name="empty")


def _errors_lerp(rng):
    import ember

    f, d = ember.ones(3), ember.ones(3, dtype=ember.float64)
    yield ErrorInput(SampleInput(f, d, 0.5), RuntimeError, "expected dtype float for `end`")
    yield ErrorInput(SampleInput(f, f, d), RuntimeError, "for `weight`")


def _sample_addc(div):
    def gen(dtype, rng):
        t = lambda *s, **kw: _t(s, dtype, rng, exclude_zero=div, **kw)  # noqa: E731
        yield SampleInput(t(5), t(5), t(5), name="same")
        yield SampleInput(t(3, 4), t(4), t(3, 1), value=2, name="broadcast_value")
        yield SampleInput(t(), t(), t(), value=0.5 if dtype.category >= 2 else 3,
                          name="zero_dim")
        yield SampleInput(t(0, 2), t(2), t(2), name="empty")

    return gen


def _errors_addcdiv(rng):
    import ember

    i = ember.tensor([1, 2])
    yield ErrorInput(SampleInput(i, i, i), RuntimeError, "Integer division")


def _sample_where(dtype, rng):
    import ember

    def cond(*s):
        return ember.from_numpy(rng.integers(0, 2, size=s).astype(bool))

    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput(cond(5), t(5), t(5), name="same")
    yield SampleInput(cond(3, 1), t(4), t(3, 4), name="broadcast")
    yield SampleInput(cond(), t(2), t(), name="zero_dim")
    yield SampleInput(cond(0, 2), t(2), t(0, 2), name="empty")
    if dtype.category >= 1:
        yield SampleInput(cond(4), t(4), 2, name="int_scalar")
    if dtype.category >= 2:
        yield SampleInput(cond(4), 0.5, t(4), name="float_scalar")


def _errors_where(rng):
    import ember

    x = ember.ones(3)
    yield ErrorInput(SampleInput(x, x, x), RuntimeError, "boolean")
    yield ErrorInput(SampleInput(x > 0, x, ember.ones(2)), RuntimeError, "")


def _sample_isclose(dtype, rng):
    import ember

    a = _t((6,), dtype, rng)
    b = a.clone()
    yield SampleInput(a, b, name="equal")
    yield SampleInput(a, _t((6,), dtype, rng), name="random")
    yield SampleInput(_t((3, 1), dtype, rng), _t((4,), dtype, rng), name="broadcast")
    if dtype.category == 2:
        x = ember.tensor([float("nan"), float("inf"), 1.0, 1.0], dtype=dtype)
        y = ember.tensor([float("nan"), float("inf"), 1.0 + 1e-6, 1.1], dtype=dtype)
        yield SampleInput(x, y, name="special")
        yield SampleInput(x, y, equal_nan=True, name="equal_nan")
        yield SampleInput(x, y, rtol=0.2, atol=0.0, name="rtol")


def _errors_isclose(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2), ember.ones(2, dtype=ember.float64)),
                     RuntimeError, "did not match")
    yield ErrorInput(SampleInput(ember.ones(2), ember.ones(2), -1.0), RuntimeError, "rtol")
    yield ErrorInput(SampleInput(ember.ones(2), 1.0), TypeError, "")


def _isclose_ref(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _sample_equal(dtype, rng):
    a = _t((3, 2), dtype, rng)
    yield SampleInput(a, a.clone(), name="equal")
    yield SampleInput(a, _t((3, 2), dtype, rng, low=10, high=20), name="different")
    yield SampleInput(a, _t((2, 3), dtype, rng), name="shape")


def _sample_polygamma(dtype, rng):
    for n in (0, 1, 2):
        for s in sample_unary(dtype, rng, low=0.5, high=5):
            yield SampleInput(n, s.input, name=f"n={n}{s.name}")


def _errors_polygamma(rng):
    import ember

    yield ErrorInput(SampleInput(-1, ember.ones(2)), RuntimeError, "negative n")
    yield ErrorInput(SampleInput(1.5, ember.ones(2)), TypeError, "must be int")


def _sample_mvlgamma(dtype, rng):
    for p in (1, 3):
        for s in sample_unary(dtype, rng, low=2, high=6):
            yield SampleInput(s.input, p, name=f"p={p}{s.name}")


def _errors_mvlgamma(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2) * 3, 0), RuntimeError, "p has to be")
    yield ErrorInput(SampleInput(ember.ones(2) * 3, 1.5), TypeError, "")


def _sample_parts(dtype, rng):
    yield from sample_binary(dtype, rng, low=0.1, scalars=False)


def _errors_parts(rng):
    import ember

    f, d = ember.ones(2), ember.ones(2, dtype=ember.float64)
    yield ErrorInput(SampleInput(f, d), RuntimeError, "scalar type")
    yield ErrorInput(SampleInput(ember.ones(2, dtype=ember.int64), ember.ones(2,
                                 dtype=ember.int64)), RuntimeError, "Expected both inputs")


def _errors_tensor_other(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2), 2.0), TypeError, "must be Tensor")


def _sample_complex_input(dtype, rng):
    yield from sample_unary(dtype, rng)


def _errors_imag(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2)), RuntimeError, "non-complex")


def _sample_heaviside(dtype, rng):
    t = lambda *s, **kw: _t(s, dtype, rng, **kw)  # noqa: E731
    yield SampleInput(t(6, low=-2, high=3), t(6), name="same")
    yield SampleInput(t(3, 4, low=-1, high=2), t(), name="zero_dim_values")


def _heaviside_ref(a, v):
    return np.where(a == 0, v, a > 0).astype(a.dtype)


def _errors_heaviside(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(2), ember.ones(2, dtype=ember.int64)),
                     RuntimeError, "different dtypes")


def _sample_special_binary(dtype, rng):
    yield from sample_binary(dtype, rng, low=0.5, high=4, scalars=False)
    if dtype.category == 2:
        yield SampleInput(_t((4,), dtype, rng, low=1.5, high=4), 2.0, name="scalar_other")


# ------------------------------------------------------------------------------------------------

op_db = [
    # trigonometric and hyperbolic
    U("sin", np.sin), U("cos", np.cos), U("tan", np.tan, low=-1.2, high=1.2),
    U("asin", np.arcsin, low=-0.9, high=0.9), U("acos", np.arccos, low=-0.9, high=0.9),
    U("atan", np.arctan), U("sinh", np.sinh, low=-4, high=4), U("cosh", np.cosh, low=-4, high=4),
    U("tanh", np.tanh), U("asinh", np.arcsinh), U("acosh", np.arccosh, low=1.1, high=6),
    U("atanh", np.arctanh, low=-0.9, high=0.9),
    U("arcsin", np.arcsin, low=-0.9, high=0.9), U("arctanh", np.arctanh, low=-0.9, high=0.9),
    U("deg2rad", np.deg2rad, dtypes=REAL), U("rad2deg", np.rad2deg, dtypes=REAL),
    U("sinc", np.sinc, low=-3, high=3, atol=1e-4),
    # exponentials and logarithms
    U("exp", np.exp, low=-5, high=5), U("expm1", np.expm1, low=-5, high=5),
    U("exp2", np.exp2, low=-5, high=5), U("log", np.log, low=0.1, high=9),
    U("log1p", np.log1p, low=-0.9, high=9), U("log2", np.log2, low=0.1, high=9),
    U("log10", np.log10, low=0.1, high=9), U("sqrt", np.sqrt, low=0.1, high=9),
    U("rsqrt", _rsqrt, low=0.1, high=9), U("reciprocal", np.reciprocal, low=0.5, high=9),
    U("square", _square, dtypes=REAL + COMPLEX),
    U("sigmoid", _sigmoid),
    OpInfo("logit", ref=_logit_ref,
           sample_inputs=_sample_logit, dtypes=REAL, inplace=True, supports_out=True,
           atol=8e-3),
    # rounding and signs
    U("floor", np.floor, dtypes=REAL_NO_BOOL), U("ceil", np.ceil, dtypes=REAL_NO_BOOL),
    U("trunc", np.trunc, dtypes=REAL_NO_BOOL), U("fix", np.trunc, dtypes=REAL_NO_BOOL),
    U("round", np.rint, dtypes=REAL_NO_BOOL),
    OpInfo("round", variant="decimals", ref=lambda a, decimals: np.round(a, decimals),
           sample_inputs=_sample_round_decimals, dtypes=F32_64, inplace=True,
           supports_out=True),
    U("frac", lambda a: a - np.trunc(a), dtypes=FLOATS),
    U("sign", _sign, dtypes=REAL), U("sgn", _sgn, dtypes=REAL + COMPLEX),
    U("signbit", np.signbit, dtypes=REAL, inplace=False, differentiable=False),
    # classification
    U("isnan", np.isnan, dtypes=REAL + COMPLEX, inplace=False, out=False,
      differentiable=False),
    U("isinf", np.isinf, dtypes=REAL + COMPLEX, inplace=False, out=False,
      differentiable=False),
    U("isfinite", np.isfinite, dtypes=REAL + COMPLEX, inplace=False, out=False,
      differentiable=False),
    U("isposinf", np.isposinf, dtypes=REAL, inplace=False, differentiable=False),
    U("isneginf", np.isneginf, dtypes=REAL, inplace=False, differentiable=False),
    U("isreal", np.isreal, dtypes=REAL + COMPLEX, inplace=False, out=False,
      differentiable=False),
    OpInfo("nan_to_num", ref=lambda a, nan=0.0, posinf=None, neginf=None: np.nan_to_num(
        a, nan=nan, posinf=posinf, neginf=neginf), sample_inputs=_sample_nan_to_num,
        dtypes=REAL + F32_64 + COMPLEX, inplace=True, supports_out=True,
        grad_dtypes=(F32_64[-1],),  # torch has no complex derivative (it refuses, as ember)
        skips={"reference": "NumPy's defaults use float32's limits for half inputs"}),
    # binary math
    B("maximum", np.maximum, dtypes=REAL, inplace=False, upcast=False,
      error_inputs=_errors_tensor_other),
    B("minimum", np.minimum, dtypes=REAL, inplace=False, upcast=False),
    B("fmax", np.fmax, dtypes=REAL, inplace=False, upcast=False),
    B("fmin", np.fmin, dtypes=REAL, inplace=False, upcast=False),
    B("hypot", np.hypot, error_inputs=_errors_tensor_other),
    B("atan2", np.arctan2, dtypes=REAL), B("arctan2", np.arctan2, dtypes=F32_64),
    B("copysign", np.copysign, dtypes=REAL, scalars=True,
      skips={"gradients": "discontinuous at 0"}),
    B("nextafter", np.nextafter, dtypes=FLOATS),
    B("logaddexp", _logaddexp, dtypes=FLOATS + COMPLEX, inplace=False),
    B("logaddexp2", np.logaddexp2, inplace=False),
    B("xlogy", _xlogy, dtypes=REAL, low=0.1, high=5, scalars=True),
    B("gcd", np.gcd, dtypes=INTS, differentiable=False, upcast=False),
    B("lcm", np.lcm, dtypes=INTS[1:], low=1, high=9, differentiable=False, upcast=False),
    OpInfo("heaviside", ref=_heaviside_ref, sample_inputs=_sample_heaviside, dtypes=REAL,
           inplace=True, supports_out=True, differentiable=False,
           error_inputs=_errors_heaviside),
    # clamp
    OpInfo("clamp", ref=lambda a, min=None, max=None: np.clip(a, min, max),
           sample_inputs=_sample_clamp, dtypes=REAL_NO_BOOL, inplace=True, supports_out=True,
           error_inputs=_errors_clamp),
    OpInfo("clip", ref=lambda a, min=None, max=None: np.clip(a, min, max),
           sample_inputs=_sample_clamp, dtypes=F32_64, inplace=True, supports_out=True),
    OpInfo("clamp_min", ref=lambda a, m: np.maximum(a, m), sample_inputs=_sample_clamp_bound,
           dtypes=REAL_NO_BOOL, inplace=True, supports_out=True),
    OpInfo("clamp_max", ref=lambda a, m: np.minimum(a, m), sample_inputs=_sample_clamp_bound,
           dtypes=REAL_NO_BOOL, inplace=True, supports_out=True),
    # interpolation and fused multiply-add
    OpInfo("lerp", ref=_upcast(_lerp), sample_inputs=_sample_lerp, dtypes=FLOATS + COMPLEX,
           inplace=True, supports_out=True, error_inputs=_errors_lerp),
    OpInfo("addcmul", ref=_upcast(lambda a, b, c, value=1: a + value * b * c),
           sample_inputs=_sample_addc(False), dtypes=REAL_NO_BOOL + COMPLEX, inplace=True,
           supports_out=True),
    OpInfo("addcdiv", ref=_upcast(lambda a, b, c, value=1: a + value * b / c),
           sample_inputs=_sample_addc(True), dtypes=FLOATS + COMPLEX, inplace=True,
           supports_out=True, error_inputs=_errors_addcdiv, atol=1e-3),
    # where, closeness, equality
    OpInfo("where", ref=np.where, sample_inputs=_sample_where, dtypes=REAL + COMPLEX,
           method=False, supports_out=True, error_inputs=_errors_where),
    OpInfo("isclose", ref=_isclose_ref, sample_inputs=_sample_isclose, dtypes=REAL + COMPLEX,
           differentiable=False, error_inputs=_errors_isclose),
    OpInfo("allclose", ref=lambda *a, **k: bool(_isclose_ref(*a, **k).all()),
           sample_inputs=_sample_isclose, dtypes=REAL + COMPLEX, differentiable=False),
    OpInfo("equal", ref=lambda a, b: a.shape == b.shape and bool((a == b).all()),
           sample_inputs=_sample_equal, dtypes=REAL + COMPLEX, differentiable=False),
    # complex numbers
    OpInfo("real", ref=np.real, sample_inputs=_sample_complex_input, dtypes=COMPLEX,
           method=False, is_view=True),
    OpInfo("imag", ref=np.imag, sample_inputs=_sample_complex_input, dtypes=COMPLEX,
           method=False, is_view=True, error_inputs=_errors_imag),
    OpInfo("conj", ref=np.conj, sample_inputs=_sample_complex_input, dtypes=REAL + COMPLEX,
           torch_op=lambda torch: lambda x: torch.conj(x).resolve_conj()),
    OpInfo("conj_physical", ref=np.conj, sample_inputs=_sample_complex_input,
           dtypes=REAL + COMPLEX, inplace=True, supports_out=True),
    OpInfo("resolve_conj", ref=lambda a: a, sample_inputs=_sample_complex_input,
           dtypes=REAL + COMPLEX),
    OpInfo("resolve_neg", ref=lambda a: a, sample_inputs=_sample_complex_input,
           dtypes=REAL + COMPLEX),
    U("angle", _angle, dtypes=REAL + COMPLEX, inplace=False),
    OpInfo("complex", ref=lambda a, b: a + 1j * b, sample_inputs=_sample_parts,
           dtypes=F32_64, method=False, supports_out=True, error_inputs=_errors_parts),
    OpInfo("polar", ref=lambda a, b: a * np.exp(1j * b), sample_inputs=_sample_parts,
           dtypes=F32_64, method=False, supports_out=True, error_inputs=_errors_parts),
    # special functions
    U("erf", sp.erf, dtypes=REAL), U("erfc", sp.erfc, dtypes=REAL),
    U("erfinv", sp.erfinv, dtypes=REAL, low=-0.9, high=0.9),
    U("lgamma", sp.gammaln, dtypes=REAL, low=0.5, high=9),
    U("digamma", sp.digamma, dtypes=REAL, low=0.5, high=9, atol=1e-4),
    OpInfo("polygamma", ref=lambda n, a: sp.digamma(a) if n == 0 else sp.polygamma(n, a),
           sample_inputs=_sample_polygamma, dtypes=REAL, method=False, supports_out=True,
           error_inputs=_errors_polygamma, atol=1e-3),
    OpInfo("mvlgamma", ref=_mvlgamma, sample_inputs=_sample_mvlgamma, dtypes=INTS + FLOATS,
           inplace=True, supports_out=True, error_inputs=_errors_mvlgamma, atol=1e-3),
    U("i0", sp.i0, dtypes=REAL, low=-5, high=5, atol=1e-3),
]


def S(name, ref, dtypes=REAL, low=None, high=None, **kw):
    """A ``torch.special`` unary entry (function form only, with out=)."""
    return OpInfo("special." + name, ref=_upcast(ref), sample_inputs=_unary(low, high),
                  dtypes=dtypes, method=False, supports_out=True, **kw)


_NOHALF = BOOL + INTS + F32_64

op_db += [
    S("expit", _sigmoid, dtypes=REAL + COMPLEX), S("erf", sp.erf), S("erfc", sp.erfc),
    S("erfcx", sp.erfcx, dtypes=_NOHALF, low=-2, high=9),
    S("erfinv", sp.erfinv, low=-0.9, high=0.9),
    S("ndtr", sp.ndtr, atol=1e-3), S("ndtri", sp.ndtri, dtypes=_NOHALF, low=0.05, high=0.95),
    S("log_ndtr", sp.log_ndtr, dtypes=_NOHALF),
    S("i0", sp.i0, low=-5, high=5, atol=1e-3), S("i0e", sp.i0e, low=-5, high=5, atol=1e-3),
    S("i1", sp.i1, low=-5, high=5, atol=1e-3), S("i1e", sp.i1e, low=-5, high=5),
    S("gammaln", sp.gammaln, low=0.5, high=9), S("psi", sp.digamma, low=0.5, high=9,
                                                 atol=1e-4),
    S("digamma", sp.digamma, low=0.5, high=9, atol=1e-4),
    S("entr", sp.entr, low=0.1, high=5),
    S("sinc", np.sinc, dtypes=REAL + COMPLEX, low=-3, high=3, atol=1e-4),
    S("expm1", np.expm1, dtypes=REAL + COMPLEX, low=-3, high=3),
    S("exp2", np.exp2, dtypes=REAL + COMPLEX, low=-3, high=3),
    S("log1p", np.log1p, dtypes=REAL + COMPLEX, low=0, high=5),
    S("bessel_j0", sp.j0, dtypes=_NOHALF, differentiable=False, atol=1e-6),
    S("bessel_j1", sp.j1, dtypes=_NOHALF, differentiable=False, atol=1e-6),
    OpInfo("special.xlogy", ref=_upcast(_xlogy), sample_inputs=_sample_special_binary, dtypes=REAL,
           method=False, supports_out=True),
    OpInfo("special.xlog1py", ref=_upcast(lambda x, y: np.where((x == 0) & ~np.isnan(y), 0.0,
                                                                x * np.log1p(y))),
           sample_inputs=_sample_special_binary, dtypes=REAL, method=False,
           supports_out=True),
    OpInfo("special.zeta", ref=sp.zeta, sample_inputs=_sample_special_binary,
           dtypes=_NOHALF, method=False, supports_out=True, differentiable=False, atol=1e-4),
    OpInfo("special.polygamma",
           ref=lambda n, a: sp.digamma(a) if n == 0 else sp.polygamma(n, a),
           sample_inputs=_sample_polygamma, dtypes=REAL, method=False, supports_out=True,
           atol=1e-3),
    OpInfo("special.multigammaln", ref=_mvlgamma, sample_inputs=_sample_mvlgamma,
           dtypes=INTS + FLOATS, method=False, supports_out=True, atol=1e-3),
    OpInfo("special.logit", ref=_logit_ref,
           sample_inputs=_sample_logit, dtypes=REAL, method=False, supports_out=True,
           atol=8e-3),
    OpInfo("special.round", ref=np.rint, sample_inputs=_unary(), dtypes=FLOATS,
           method=False, supports_out=True),
]
