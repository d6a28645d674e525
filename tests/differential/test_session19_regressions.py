"""Regressions for session 19's audit of issue 16's repros: complex to bool conversions (a
nonzero imaginary part is True), transposed convolutions with ``output_padding`` at stride 1
(a dilated kernel), the bool / float32 / same-dtype rule for SDPA's float masks, and the
``_saved_alpha`` of add/sub nodes. Each repro runs with ``T = ember`` and ``T = torch`` where
torch is installed; the expectations are torch 2.13's."""

import itertools

import numpy as np
import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    return np.asarray(t.detach().float().tolist() if t.dtype.is_floating_point
                      else t.detach().tolist())


# ------------------------------------------------------------------------------------------------
# complex -> bool


def _complex_to_bool(T):
    x = T.tensor([0j, 1j, 1 + 0j, -2j, 0j], dtype=T.complex128)
    y = T.zeros(5, dtype=T.bool)
    y.copy_(x)
    z = T.zeros(5, dtype=T.bool)
    z[:] = x.to(T.complex64)
    return [x.bool(), x.to(T.bool), x.to(dtype=T.bool), x.type(T.bool), y, z]


def test_complex_to_bool_reads_the_imaginary_part():
    torch = _torch()
    got = [r.tolist() for r in _complex_to_bool(ember)]
    want = [r.tolist() for r in _complex_to_bool(torch)]
    assert got == want
    assert got[0] == [False, True, True, True, False]


# ------------------------------------------------------------------------------------------------
# conv_transpose with output_padding where only the dilation allows it


def _convt(T, nd, stride, dilation, padding, output_padding, groups):
    gen = np.random.default_rng(5)
    shape = (2, 4) + (3, 4, 3)[:nd]
    x = T.tensor(gen.standard_normal(shape), requires_grad=True)
    w = T.tensor(gen.standard_normal((4, 6 // groups) + (2, 3, 2)[:nd]),
                 requires_grad=True)
    f = getattr(T.nn.functional, f"conv_transpose{nd}d")
    y = f(x, w, stride=stride, padding=padding, output_padding=output_padding,
          groups=groups, dilation=dilation)
    r = T.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)))
    gx, gw = T.autograd.grad((y * r).sum(), (x, w), create_graph=True)
    (gx.pow(2).sum() + gw.pow(2).sum()).backward()
    return [y, gx, gw, x.grad, w.grad]


@pytest.mark.parametrize("nd,stride,dilation,padding,output_padding,groups", [
    (1, 1, 2, 0, 1, 1),
    (1, 1, 2, 1, 1, 1),
    (1, 1, 3, 2, 2, 2),
    (2, (1, 2), (2, 1), (1, 0), (1, 1), 2),
    (2, 1, 2, 0, 1, 1),
    (3, 1, (2, 1, 2), 0, (1, 0, 1), 1),
])
def test_conv_transpose_output_padding_from_dilation(nd, stride, dilation, padding,
                                                      output_padding, groups):
    torch = _torch()
    got = _convt(ember, nd, stride, dilation, padding, output_padding, groups)
    want = _convt(torch, nd, stride, dilation, padding, output_padding, groups)
    for a, b in zip(got, want):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-9, atol=1e-9)


def test_conv_transpose_output_padding_stride1_shape():
    y = ember.nn.functional.conv_transpose1d(ember.ones(1, 1, 3), ember.ones(1, 1, 2),
                                             dilation=2, output_padding=1)
    assert y.tolist() == [[[1.0, 1.0, 2.0, 1.0, 1.0, 0.0]]]


# ------------------------------------------------------------------------------------------------
# scaled_dot_product_attention float masks


def _sdpa(T, qd, md):
    q = T.tensor([[[0.5, -1.0, 2.0, 0.25], [1.0, 0.0, -0.5, 0.75]]]).to(getattr(T, qd))
    m = T.tensor([[0.0, -1.5], [0.25, 0.0]]).to(getattr(T, md))
    try:
        return _np(T.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=m))
    except RuntimeError:
        return "RuntimeError"


@pytest.mark.parametrize("qd,md", list(itertools.product(
    ["float32", "bfloat16", "float16", "float64"], ["bfloat16", "float16", "float32",
                                                    "float64", "int64"])))
def test_sdpa_mask_dtype_rule(qd, md):
    torch = _torch()
    got, want = _sdpa(ember, qd, md), _sdpa(torch, qd, md)
    if isinstance(want, str):
        assert got == want
    else:
        assert not isinstance(got, str)
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=1e-2)


# ------------------------------------------------------------------------------------------------
# saved alpha


def test_saved_alpha_of_add_and_sub():
    torch = _torch()

    def alphas(T):
        a = T.ones(2, requires_grad=True)
        b = T.ones(2, requires_grad=True)
        nodes = [(a + b).grad_fn, (a - b).grad_fn, T.add(a, b, alpha=3).grad_fn,
                 T.sub(a, b, alpha=2).grad_fn, T.rsub(a, b).grad_fn]
        return [(type(n).__name__, n._saved_alpha) for n in nodes]

    assert alphas(ember) == alphas(torch)


# ------------------------------------------------------------------------------------------------
# special functions at non-finite points and signed zeros

_SPECIAL_POINTS = [float("inf"), float("-inf"), float("nan"), 0.0, -0.0, -1.0, -2.0, 0.5, 1.0,
                   3.0, -0.5]


def _special_values(T, dtype):
    x = T.tensor(_SPECIAL_POINTS, dtype=getattr(T, dtype))
    q = x.flip(0)
    return {
        "erfinv": T.erfinv(x.clamp(-1, 1)),
        "zeta": T.special.zeta(x, q),
        "zeta_q_inf": T.special.zeta(T.tensor([2.0, 3.0, float("inf"), 1.0, 0.5]),
                                     float("inf")),
        "mvlgamma": T.mvlgamma(T.tensor([float("-inf"), float("inf")]), 2),
        "lgamma": T.lgamma(x),
    }


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_functions_at_nonfinite_points(dtype):
    torch = _torch()
    got, want = _special_values(ember, dtype), _special_values(torch, dtype)
    for k in want:
        a, b = _np(got[k]), _np(want[k])
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=0, equal_nan=True, err_msg=k)
        zero = b == 0
        assert (np.signbit(a[zero]) == np.signbit(b[zero])).all(), k


# ------------------------------------------------------------------------------------------------
# view_as_complex: strides of size-1 dims do not matter, a contiguous empty tensor is accepted


def _vac(T):
    a = T.tensor([[-3.0], [-5.0]]).transpose(-1, -2)  # (1, 2) with strides (1, 1)
    b = T.arange(8.0).reshape(2, 1, 2, 2)[:, :, 1]   # a size-1 dim with an odd stride
    c = T.zeros(0, 2)
    d = T.zeros(3, 0, 2)
    return [T.view_as_complex(x) for x in (a, b, c, d)]


def test_view_as_complex_size_one_and_empty():
    torch = _torch()
    got, want = _vac(ember), _vac(torch)
    for a, b in zip(got, want):
        assert tuple(a.shape) == tuple(b.shape)
        assert a.tolist() == b.tolist()


def test_view_as_complex_still_refuses_odd_strides():
    torch = _torch()
    for T in (ember, torch):
        with pytest.raises(RuntimeError, match="stride divisible by 2"):
            T.view_as_complex(T.zeros(3, 3)[:, :2])


# ------------------------------------------------------------------------------------------------
# histogram's edges are torch's symmetric linspace in the input's dtype


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histogram_edges_as_torch_linspace(dtype):
    torch = _torch()
    gen = np.random.default_rng(3)
    cases = [(np.array([0.0, 1.0]), 3), (np.array([]), 3), (np.array([0.0, 1.0]), 7)]
    cases += [(gen.standard_normal(int(gen.integers(1, 9))) * 100, int(gen.integers(1, 40)))
              for _ in range(40)]
    for x, bins in cases:
        got = ember.histogram(ember.tensor(x, dtype=getattr(ember, dtype)), bins=bins)
        want = torch.histogram(torch.tensor(x, dtype=getattr(torch, dtype)), bins=bins)
        assert got[1].tolist() == want[1].tolist()
        assert got[0].tolist() == want[0].tolist()
