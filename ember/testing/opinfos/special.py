"""OpInfo entries for ember/_ops/special_bessel.py, ember/_ops/special_poly.py and the
incomplete gamma functions of ember/_ops/special_ops.py (``torch.special`` and ``igamma``).

The other ``torch.special`` names (erf, ndtr, zeta, ...) have their entries in
opinfos/pointwise.py, next to the top-level ops they share kernels with.
"""

import numpy as np
import scipy.special as sp

from .._opinfo import BOOL, FLOATS, INTS, ErrorInput, OpInfo, SampleInput, sample_unary

F32_64 = FLOATS[2:]
_NOHALF = BOOL + INTS + F32_64


def _t(shape, dtype, rng, **kw):
    from .. import make_tensor

    return make_tensor(shape, dtype=dtype, rng=rng, **kw)


def _f64(ref):
    """References computed in float64 (the tests cast them to the result dtype)."""

    def wrapped(*args, **kwargs):
        args = [np.asarray(a, dtype=np.float64) if isinstance(a, np.ndarray) else a
                for a in args]
        return ref(*args, **kwargs)

    return wrapped


def _unary(low, high):
    def gen(dtype, rng):
        if dtype.category == 0:
            yield from sample_unary(dtype, rng)
            return
        if dtype.category == 1:
            yield from sample_unary(dtype, rng, low=max(int(low), 0), high=int(high) + 1)
            return
        yield from sample_unary(dtype, rng, low=low, high=high)
        import ember

        edges = ember.tensor([0.0, -0.0, float("inf"), float("nan"), 1.0], dtype=dtype)
        yield SampleInput(edges, name="edges")

    return gen


def _errors_unary(name):
    def gen(rng):
        import ember

        for dt in (ember.float16, ember.bfloat16, ember.complex64):
            yield ErrorInput(SampleInput(ember.ones(3, dtype=dt)), NotImplementedError,
                             f"{name}_cpu")

    return gen


def B(name, ref, low=0.1, high=8.0, atol=None):
    """A non-differentiable ``torch.special`` Bessel-type entry."""
    return OpInfo("special." + name, ref=_f64(ref), sample_inputs=_unary(low, high),
                  dtypes=_NOHALF, method=False, supports_out=True, differentiable=False,
                  error_inputs=_errors_unary(name), atol=atol, rtol=None if atol is None
                  else atol)


# ------------------------------------------------------------------------------------------------
# orthogonal polynomials: references from scipy.special's eval_* (V and W from U:
# V_n = U_n - U_{n-1}, W_n = U_n + U_{n-1})


def _degree_ref(fn):
    """PyTorch truncates the degree and gives 0 for negative degrees."""

    def ref(x, n):
        x, n = np.broadcast_arrays(np.asarray(x, dtype=np.float64),
                                   np.asarray(n, dtype=np.float64))
        k = np.trunc(n).astype(np.int64)
        r = fn(x, np.maximum(k, 0))
        return np.where(k < 0, 0.0, r)

    return ref


def _u_prev(x, k):
    return np.where(k > 0, sp.eval_chebyu(np.maximum(k - 1, 0), x), 0.0)


_POLY_REFS = {
    "chebyshev_polynomial_t": lambda x, k: sp.eval_chebyt(k, x),
    "chebyshev_polynomial_u": lambda x, k: sp.eval_chebyu(k, x),
    "chebyshev_polynomial_v": lambda x, k: sp.eval_chebyu(k, x) - _u_prev(x, k),
    "chebyshev_polynomial_w": lambda x, k: sp.eval_chebyu(k, x) + _u_prev(x, k),
    "shifted_chebyshev_polynomial_t": lambda x, k: sp.eval_sh_chebyt(k, x),
    "shifted_chebyshev_polynomial_u": lambda x, k: sp.eval_sh_chebyu(k, x),
    "shifted_chebyshev_polynomial_v": lambda x, k: (sp.eval_chebyu(k, 2 * x - 1)
                                                    - _u_prev(2 * x - 1, k)),
    "shifted_chebyshev_polynomial_w": lambda x, k: (sp.eval_chebyu(k, 2 * x - 1)
                                                    + _u_prev(2 * x - 1, k)),
    "hermite_polynomial_h": lambda x, k: sp.eval_hermite(k, x),
    "hermite_polynomial_he": lambda x, k: sp.eval_hermitenorm(k, x),
    "laguerre_polynomial_l": lambda x, k: sp.eval_laguerre(k, x),
    "legendre_polynomial_p": lambda x, k: sp.eval_legendre(k, x),
}


def _sample_poly(shifted):
    lo, hi = (-0.2, 1.2) if shifted else (-1.5, 1.5)

    def gen(dtype, rng):
        import ember

        def x(shape):
            if dtype.category <= 1:
                return _t(shape, dtype, rng, low=0, high=3)
            return _t(shape, dtype, rng, low=lo, high=hi)

        degrees = ember.tensor([0, 1, 2, 3, 5, 7, 9, 12, -1, -3],
                               dtype=dtype if dtype.category == 2 else ember.int64)
        yield SampleInput(x((10,)), degrees, name="tensor_n")
        yield SampleInput(x((3, 4)), 3, name="int_n")
        yield SampleInput(x((2, 3)), 11, name="high_n")
        yield SampleInput(x(()), 0, name="zero_dim")
        yield SampleInput(x((0, 2)), 4, name="empty")
        yield SampleInput(x((4, 1)), degrees[:3], name="broadcast")
        if dtype.category == 2:
            edge = [1.0, 0.0, 0.5] if shifted else [1.0, -1.0, 0.0]
            yield SampleInput(ember.tensor(edge * 2, dtype=dtype),
                              ember.tensor([3.0, 3, 3, 10, 10, 10], dtype=dtype),
                              name="edges")
            yield SampleInput(x((4,)), 2.7, name="fractional_n")

    return gen


def _errors_poly(name):
    def gen(rng):
        import ember

        yield ErrorInput(SampleInput(ember.ones(3, dtype=ember.float16), 2), NotImplementedError,
                         f"{name}_cpu")
        yield ErrorInput(SampleInput(ember.ones(3, dtype=ember.complex64), 2),
                         NotImplementedError, f"{name}_cpu")

    return gen


def P(name):
    return OpInfo("special." + name, ref=_degree_ref(_POLY_REFS[name]),
                  sample_inputs=_sample_poly(name.startswith("shifted")), dtypes=_NOHALF,
                  method=False, supports_out=True, differentiable=False,
                  error_inputs=_errors_poly(name), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------------------------
# incomplete gamma: differentiable in ``other`` only. The float64 samples hold ``input`` in
# float32 (promoted to float64), so the gradient tests differentiate ``other`` alone;
# tests/test_special.py checks that asking for ``input``'s gradient raises.


def _sample_igamma(dtype, rng):
    import ember

    a_dtype = ember.float32 if dtype == ember.float64 else dtype

    def t(shape, dt=dtype):
        return _t(shape, dt, rng, low=0.2, high=5.0)

    yield SampleInput(t((5,), a_dtype), t((5,)), name="same")
    yield SampleInput(t((3, 4), a_dtype), t((4,)), name="broadcast")
    yield SampleInput(t((), a_dtype), t(()), name="zero_dim")
    yield SampleInput(t((0, 2), a_dtype), t((2,)), name="empty")
    if dtype == ember.float32:
        yield SampleInput(ember.tensor([0.0, -1.0, 1.0, float("inf"), 2.0], dtype=dtype),
                          ember.tensor([1.0, 1.0, 0.0, 1.0, float("inf")], dtype=dtype),
                          name="edges")


def _errors_igamma(name):
    def gen(rng):
        import ember

        yield ErrorInput(SampleInput(ember.ones(3, dtype=ember.int64),
                                     ember.ones(3, dtype=ember.int64)),
                         NotImplementedError, f"{name}_cpu")
        yield ErrorInput(SampleInput(ember.ones(3), 1.0), TypeError, "must be Tensor")

    return gen


def _igamma_entries(name, alias, ref):
    common = dict(ref=_f64(ref), sample_inputs=_sample_igamma, dtypes=FLOATS,
                  supports_out=True, error_inputs=_errors_igamma(name), atol=2e-3, rtol=2e-3)
    return [OpInfo(name, inplace=True, **common),
            OpInfo("special." + alias, method=False, **common)]


op_db = [
    B("bessel_y0", sp.y0, atol=1e-5), B("bessel_y1", sp.y1, atol=1e-5),
    B("modified_bessel_i0", sp.i0, high=5), B("modified_bessel_i1", sp.i1, high=5),
    B("modified_bessel_k0", sp.k0), B("modified_bessel_k1", sp.k1),
    B("scaled_modified_bessel_k0", sp.k0e), B("scaled_modified_bessel_k1", sp.k1e),
    B("spherical_bessel_j0", lambda x: sp.spherical_jn(0, x), low=-8.0),
    B("airy_ai", lambda x: sp.airy(x)[0], low=-5.0, high=5.0, atol=1e-5),
    *[P(name) for name in _POLY_REFS],
    *_igamma_entries("igamma", "gammainc", sp.gammainc),
    *_igamma_entries("igammac", "gammaincc", sp.gammaincc),
]
