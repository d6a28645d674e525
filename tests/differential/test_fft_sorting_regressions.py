"""Regressions for the FFT and sorting classes the differential runner found (issue 16).

FFT: which outputs of a transform of NaN / infinite input come out NaN and which infinite
(NOTE [ FFT of non-finite input ] in ember/_ops/fft.py). Sorting: the median of an empty
tensor (value per dtype, a node when it requires grad), an infinite median's value and
gradient, kthvalue of a 1-D row with ties under autograd, bincount of an empty input with
weights. Each case runs with ember and with torch on the same input.
"""

import warnings

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH, skip_unless_intel_avx512

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

INF, NAN = np.inf, np.nan


def _components(t):
    a = t.detach().resolve_conj().numpy() if hasattr(t, "resolve_conj") else t.numpy()
    return (a.real, a.imag) if np.iscomplexobj(a) else (a,)


def _same_values(e, t, rtol=1e-6):
    """Equal shapes and dtypes, NaN where torch has NaN, the same infinities, close values."""
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    for a, b in zip(_components(e), _components(t)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True)


def _both(fn, x):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(ember, ember.tensor(x)), fn(torch, torch.tensor(x))


def _cplx(re, im, dt=np.complex128):
    r = np.empty(np.shape(re), dt)
    r.real, r.imag = re, im
    return r


def _nonfinite(shape, seed, complex_=True, dt=np.float64):
    """Values in [-2, 2] with about one component in six NaN, +inf or -inf."""
    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(2 if complex_ else 1):
        v = rng.uniform(-2, 2, shape)
        m = rng.random(shape) < 0.17
        v[m] = rng.choice([INF, -INF, NAN], m.sum())
        parts.append(v)
    if not complex_:
        return parts[0].astype(dt)
    return _cplx(*parts, np.complex64 if dt == np.float32 else np.complex128)


# ------------------------------------------------------------------------------------------------
# FFT


def test_fft_single_infinity_keeps_exact_zero_components():
    # x[1] = inf reaches X[0] and X[2] through twiddles 1 and -1 only: imaginary parts stay 0
    e, t = _both(lambda T, x: T.fft.fft(x), _cplx([1.0, INF, 2.0, 3.0], [0.0, 0.0, 0.0, 0.0]))
    _same_values(e, t)
    assert e.numpy()[0].imag == 0


def test_fft_real_input_nyquist_imaginary_part_zero():
    # a real 1-D input goes through torch's real-to-complex path: DC and Nyquist stay real
    e, t = _both(lambda T, x: T.fft.fft(x, norm="forward"),
                 np.array([0.47, INF, 0.73, -INF, -0.0, 0.0]))
    _same_values(e, t)


@pytest.mark.parametrize("n", [3, 4, 6, 7, 8, 10, 17])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_fft_nonfinite_complex_lengths(n, dt):
    if dt == np.float64:
        skip_unless_intel_avx512("the double FFT codelets' inf/NaN order")
    for seed in range(6):
        x = _nonfinite((3, n), seed * 31 + n, dt=dt)
        for name, norm in (("fft", "backward"), ("ifft", "ortho")):
            e, t = _both(lambda T, x: getattr(T.fft, name)(x, norm=norm), x)
            _same_values(e, t, 1e-4 if dt == np.float32 else 1e-6)


def test_fft_length8_double_full_complex_twiddles():
    # the double-precision length-8 codelet multiplies by 1 + 0j in full: inf * 0 is NaN
    skip_unless_intel_avx512("the double FFT codelets' inf/NaN order")
    x = _cplx([2.0, -INF, -1.0, -1.0, 2.0, -1.0, -1.0, 1.0],
              [2.0, 1.0, 0.0, 0.0, 2.0, 1.0, 1.0, -2.0])
    e, t = _both(lambda T, x: T.fft.fft(x), x)
    _same_values(e, t)
    assert np.isnan(e.numpy()[0].imag)


@pytest.mark.parametrize("n", [3, 6, 8, 11, 16])
@pytest.mark.parametrize("name", ["rfft", "ihfft"])
def test_fft_nonfinite_real_to_complex(n, name):
    for seed in range(6):
        x = _nonfinite((2, n), seed * 7 + n, complex_=False)
        e, t = _both(lambda T, x: getattr(T.fft, name)(x), x)
        _same_values(e, t)


@pytest.mark.parametrize("n", [2, 6, 8, 12, 13])
@pytest.mark.parametrize("name", ["irfft", "hfft"])
def test_fft_nonfinite_complex_to_real(n, name):
    for seed in range(6):
        x = _nonfinite((2, n // 2 + 1), seed * 5 + n)
        e, t = _both(lambda T, x: getattr(T.fft, name)(x, n=n), x)
        _same_values(e, t)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "hfftn", "ihfftn"])
def test_fft_nonfinite_multi_dim(name):
    real = name in ("rfft2", "ihfftn")
    for seed in range(5):
        x = _nonfinite((3, 5, 4), seed, complex_=not real)
        e, t = _both(lambda T, x: getattr(T.fft, name)(x, norm="ortho"), x)
        _same_values(e, t)


@pytest.mark.parametrize("expr", [
    "T.fft.irfft(T.empty(0, 4, dtype=T.complex64), n=7, out=T.empty(0, dtype=T.complex64))",
    "T.fft.rfft(T.ones(2, 4), out=T.empty(0))",
    "T.fft.fft(T.ones(4), out=T.empty(0))",
])
def test_fft_out_of_the_wrong_kind_raises(expr):
    import torch

    for T in (ember, torch):
        with pytest.raises(RuntimeError, match="output tensor"):
            eval(expr, {"T": T})


# ------------------------------------------------------------------------------------------------
# sorting


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_of_empty_float_requires_grad(name):
    import torch

    outs = []
    for T in (ember, torch):
        x = T.empty(2, 0, requires_grad=True)
        v = getattr(T, name)(x)
        v.backward()
        outs.append((v.requires_grad, type(v.grad_fn).__name__, tuple(x.grad.shape)))
        assert v.isnan()
    assert outs[0] == outs[1]


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "int64", "bool", "complex64"])
def test_median_of_empty_integer_is_nan_cast(dt):
    import torch

    e = ember.median(ember.empty(0, 3, dtype=getattr(ember, dt)))
    t = torch.median(torch.empty(0, 3, dtype=getattr(torch, dt)))
    _same_values(e, t)


@pytest.mark.parametrize("vals", [[-INF], [INF, 1.0, INF], [1.0, 2.0, -INF, -INF, 5.0]])
@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_infinite_value_and_gradient(vals, name):
    import torch

    res = []
    for T in (ember, torch):
        x = T.tensor(vals, dtype=T.float64, requires_grad=True)
        v = getattr(T, name)(x)
        v.backward()
        res.append((v.item(), x.grad.tolist()))
    assert res[0] == res[1]


def test_kthvalue_vector_with_ties_under_autograd():
    import torch

    res = []
    for T in (ember, torch):
        x = T.tensor([2.0, 4.0, 1.0, 3.0, 1.0, -1.5], dtype=T.float64, requires_grad=True)
        v, i = x.kthvalue(3)
        v.backward()
        res.append((v.item(), i.item(), x.grad.tolist()))
    assert res[0] == res[1]


def test_bincount_empty_with_weights_is_int64():
    e, t = _both(lambda T, x: T.empty(0, dtype=T.int8).bincount(x, minlength=2),
                 np.zeros(0, np.float64))
    _same_values(e, t)


@pytest.mark.parametrize("expr", [
    # a range wider than the dtype: torch's linspace edges are NaN, nothing is counted
    "T.histc(T.tensor([0.86, -5.5, -3.4028234663852886e+38, 3.4028234663852886e+38]), 7)",
    "T.histc(T.tensor([1., 2.], dtype=T.float16), 3, min=-60000, max=60000)",
    # half types round after every operation: (1 + 30000) * 3 overflows float16
    "T.histc(T.tensor([1., 2.], dtype=T.float16), 3, min=-30000, max=30000)",
    "T.histc(T.tensor([6356.4, -5075.0, 7197.9], dtype=T.float16), 9)",
    "T.histc(T.tensor([3.17, -1.77, 7.89, 7.2, 0.68, -2.45], dtype=T.bfloat16), 11)",
])
def test_histc_bins_in_the_input_dtype(expr):
    import torch

    e, t = (eval(expr, {"T": T}) for T in (ember, torch))
    _same_values(e.float(), t.float())


@pytest.mark.parametrize("expr", [
    "T.nanquantile(T.tensor([[NAN, 1.0, -INF, 1.0, NAN]], dtype=T.float64), 0.3, 1)",
    "T.quantile(T.tensor([-INF, 1.0, INF]), T.tensor([0.2, 0.5, 0.75]), "
    "interpolation='midpoint')",
])
def test_quantile_interpolates_with_torchs_lerp(expr):
    import torch

    e, t = (eval(expr, {"T": T, "NAN": NAN, "INF": INF}) for T in (ember, torch))
    _same_values(e, t)


@pytest.mark.parametrize("row", [
    [0.0, -65504.0, -0.0, NAN, -0.0, NAN],
    [NAN, NAN, INF, 0.0, 0.0, NAN, 0.0, -INF, NAN, 3.0, 1.0, NAN, -INF, 1.0],
    [1.0, NAN, 1.0, 2.0, NAN, 2.0, 2.0],
])
@pytest.mark.parametrize("dt", ["float16", "float64"])
def test_mode_of_rows_with_nan_names_torchs_index(row, dt):
    import torch

    e, t = (T.mode(T.tensor(row, dtype=getattr(T, dt))) for T in (ember, torch))
    assert e.indices.item() == t.indices.item()
    _same_values(e.values, t.values)


@pytest.mark.parametrize("expr", [
    "T.topk(T.tensor([[5, 11, 13, 10, 5, 10]], dtype=T.uint8), 2, largest=False)",
    "T.topk(T.tensor([127, -128, 0, 4, 0, -1], dtype=T.int8), 3)",
    "T.topk(T.tensor([1.0, NAN, 2.0, NAN, 2.0, 1.0, 0.0, 2.0]), 5)",
    "T.topk(T.tensor([[0.0, 1.0, 1.0, 3.0, 0.0, 1.0, 3.0, 0.0, 1.0]]), 4, largest=False)",
])
def test_topk_ties_in_torchs_selection_order(expr):
    import torch

    e, t = (eval(expr, {"T": T, "NAN": NAN}) for T in (ember, torch))
    assert e.indices.tolist() == t.indices.tolist()
    _same_values(e.values, t.values)


@pytest.mark.parametrize("expr", [
    "T.quantile(T.ones(3), T.tensor([0.1, NAN]))",
    "T.quantile(T.ones(3), NAN)",
    "T.bincount(T.tensor([9223372036854775807, 3]), minlength=9)",
])
def test_out_of_range_sorting_arguments_raise(expr):
    import torch

    msgs = []
    for T in (ember, torch):
        with pytest.raises(RuntimeError) as info:
            eval(expr, {"T": T, "NAN": NAN})
        msgs.append(str(info.value).split("\n")[0])
    assert msgs[0] == msgs[1]
