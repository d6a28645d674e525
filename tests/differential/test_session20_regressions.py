"""Regressions for session 20's differential run: the gradients of asin, acos and acosh in
torch's order (complex arguments whose square overflows, acosh below -1), complex ``sub``'s
signed zero, ``addr``'s element-wise order (alpha scales the first vector; complex factors
are complex products), and the warning for a tensor built from a list of NumPy arrays. Each
repro runs with ``T = ember`` and ``T = torch`` where torch is installed; the expectations
are torch 2.13's."""

import itertools
import warnings

import numpy as np
import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _same(a, b):
    """Equal element by element, NaN equal to NaN, in both parts of complex values."""
    a = np.asarray(a, dtype=np.complex128)
    b = np.asarray(b, dtype=np.complex128)
    assert a.shape == b.shape
    for pa, pb in ((a.real, b.real), (a.imag, b.imag)):
        ok = (pa == pb) | (np.isnan(pa) & np.isnan(pb)) | np.isclose(pa, pb, rtol=1e-6, atol=0)
        assert ok.all(), (a[~ok], b[~ok])


def _np(t):
    return t.detach().resolve_conj().numpy() if hasattr(t, "resolve_conj") else t.numpy()


# ------------------------------------------------------------------------------------------------
# inverse trigonometric gradients

_EXTREMES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.88, 1e155, -1e160, 1.7976931348623157e308,
             float("inf"), float("nan")]


def _inverse_trig_grads(T, op, dtype):
    if dtype.startswith("complex"):
        data = [complex(a, b) for a, b in itertools.product(_EXTREMES, _EXTREMES)]
        w = complex(0.5, -1.5)
    else:
        data, w = _EXTREMES, -1.5
    x = T.tensor(np.array(data, dtype=dtype), requires_grad=True)
    g, = T.autograd.grad(getattr(T, op)(x), x, T.full_like(x, w))
    return _np(g)


@pytest.mark.parametrize("op", ["asin", "acos", "acosh"])
@pytest.mark.parametrize("dtype", ["complex128", "complex64", "float64", "float32"])
def test_inverse_trig_gradient_at_extremes(op, dtype):
    torch = _torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float32 of 1e155 is inf, as intended
        _same(_inverse_trig_grads(ember, op, dtype), _inverse_trig_grads(torch, op, dtype))


def test_asin_gradient_of_huge_complex_is_zero():
    x = ember.tensor([complex(-1.7976931348623157e308, 0.0), complex(0, 1e160)],
                     dtype=ember.complex128, requires_grad=True)
    g, = ember.autograd.grad(ember.asin(x).sum().abs(), x)
    assert g.tolist() == [0j, 0j]


def test_acosh_gradient_below_minus_one_is_finite():
    x = ember.tensor([-2.88], dtype=ember.float64, requires_grad=True)
    ember.acosh(x).backward()
    assert np.isclose(x.grad.item(), 1 / np.sqrt(2.88 ** 2 - 1))


# ------------------------------------------------------------------------------------------------
# complex sub: a + (-alpha) * b


def _complex_sub(T):
    a = T.tensor([complex(1, 1), complex(0, -0.0), complex(-0.0, 0), complex(float("nan"), -0.0)])
    b = T.tensor([complex(float("inf"), 0), complex(1, 0), complex(-1, 0),
                  complex(-0.0, float("inf"))])
    return [a - b, a - 1, T.sub(a, b, alpha=2), 1 - a, T.sub(a, b, alpha=2j),
            T.rsub(a, b, alpha=2j)]


def test_complex_sub_signed_zero_as_torch():
    torch = _torch()
    for e, t in zip(_complex_sub(ember), _complex_sub(torch)):
        e, t = _np(e), _np(t)
        _same(e, t)
        assert (np.signbit(e.imag) == np.signbit(t.imag)).all()
    assert not np.signbit((ember.tensor([complex(0, -0.0)]) - 1).imag.item())


# ------------------------------------------------------------------------------------------------
# addr: beta * self + (alpha * vec1) * vec2, element by element


def _addr_cases(T):
    c64 = T.complex64
    inf = float("inf")
    v = T.tensor([complex(0.5, 0.0)], dtype=c64)
    w = T.tensor([complex(inf, 0.0)], dtype=c64)
    one = T.tensor([complex(1, 0.0)], dtype=c64)
    return [
        T.tensor([[complex(1e-38, 0)]], dtype=c64).addr(v, w, beta=0.5, alpha=-2.0),
        T.tensor([[complex(float("nan"), 0)]], dtype=c64).addr(v, w, beta=0, alpha=-2.0),
        T.tensor([[complex(1, 0)]], dtype=c64).addr(v, w, alpha=2),
        T.tensor([[complex(inf, 0)]], dtype=c64).addr(v, one),
        T.tensor([[complex(1, 0)]], dtype=c64).addr(w, one),
        T.tensor([[complex(inf, 0)]], dtype=c64).addr(v, one, beta=1j, alpha=1j),
        T.tensor([[3e38]]).addr(T.tensor([3e38]), T.tensor([1e-38]), alpha=2),
        T.tensor([[1, 2]]).addr(T.tensor([3]), T.tensor([4, 5]), alpha=3, beta=2),
        T.tensor([[1.0, 2.0]], dtype=T.float16).addr(
            T.tensor([3.0], dtype=T.float16), T.tensor([4.0, 5.0], dtype=T.float16),
            alpha=3, beta=2),
        # float16 rounds alpha * vec1 to float16 first: -2 * -65504 is inf, times 0 NaN
        T.tensor([[0.48]], dtype=T.float16).addr(T.tensor([-65504.0], dtype=T.float16),
                                                  T.tensor([-0.0], dtype=T.float16),
                                                  beta=0.5, alpha=-2.0),
    ]


def test_addr_elementwise_order_as_torch():
    torch = _torch()
    for e, t in zip(_addr_cases(ember), _addr_cases(torch)):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        _same(_np(e.float() if e.dtype == ember.float16 else e),
              _np(t.float() if t.dtype == torch.float16 else t))


def test_addr_alpha_scales_first_vector():
    # 2 * 3e38 overflows float32 before the product with 1e-38, as in torch
    r = ember.tensor([[3e38]]).addr(ember.tensor([3e38]), ember.tensor([1e-38]), alpha=2)
    assert r.item() == float("inf")


# ------------------------------------------------------------------------------------------------
# tensor(list of ndarrays) warns once per process, as torch


_LIST_OF_ARRAYS = [
    # (name, constructor, warnings under set_warn_always(True): one per array met)
    ("tensor", lambda T: T.tensor([np.ones(2), np.ones(2)]), 2),
    ("nested", lambda T: T.tensor([[np.ones(2)], [np.ones(2)]]), 2),
    ("tuple", lambda T: T.tensor((np.ones(2), np.ones(2))), 2),
    ("rows_of_2d", lambda T: T.tensor([np.ones((2, 3)), np.ones((2, 3))]), 6),
    ("rows_of_3d", lambda T: T.tensor([np.ones((2, 3, 2))]), 9),
    ("ragged_levels", lambda T: T.tensor([[np.ones(2), [1, 2]], [np.ones(2), np.ones(2)]]), 3),
    ("mixed", lambda T: T.tensor([[1.0, 2.0], np.ones(2)]), 1),
    ("zero_dim", lambda T: T.tensor([1.0, np.ones(())]), 1),
    ("as_tensor", lambda T: T.as_tensor([np.ones(2), np.ones(2)]), 2),
    ("legacy", lambda T: T.Tensor([np.ones(2), np.ones(2)]), 2),
    ("new_tensor", lambda T: T.ones(1).new_tensor([np.ones(2)]), 1),
    ("empty", lambda T: T.tensor([np.ones(0)]), 0),
    ("numpy_scalars", lambda T: T.tensor([np.float64(1.0), np.float64(2.0)]), 0),
    ("one_array", lambda T: T.tensor(np.ones(2)), 0),
]


def _slow_list_warnings(T, fn):
    T.set_warn_always(True)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn(T)
    finally:
        T.set_warn_always(False)
    return [str(x.message) for x in w if "list of numpy.ndarrays" in str(x.message)]


@pytest.mark.parametrize("name,fn,warns", _LIST_OF_ARRAYS, ids=[c[0] for c in _LIST_OF_ARRAYS])
def test_tensor_from_list_of_ndarrays_warns(name, fn, warns):
    got = _slow_list_warnings(ember, fn)
    assert len(got) == warns
    if warns:
        assert got[0].startswith("Creating a tensor from a list of numpy.ndarrays is extremely "
                                 "slow.")
    torch = pytest.importorskip("torch")
    assert len(_slow_list_warnings(torch, fn)) == len(got)


def test_tensor_from_list_of_ndarrays_warns_once_per_process():
    from ember import _settings

    # an earlier test of this process may have warned already: forget that here
    for text in [m for m in _settings._warned_once if "list of numpy.ndarrays" in m]:
        _settings._warned_once.discard(text)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ember.tensor([np.ones(2), np.ones(2)])
        ember.tensor([np.ones(3)])
    assert sum("list of numpy.ndarrays" in str(x.message) for x in w) == 1


def test_tensor_from_list_of_ndarrays_warning_points_at_caller():
    ember.set_warn_always(True)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            ember.tensor([np.ones(2), np.ones(2)])
    finally:
        ember.set_warn_always(False)
    assert [x.filename for x in w] == [__file__] * 2


# ------------------------------------------------------------------------------------------------
# lstsq's gelsy with no right-hand sides


@pytest.mark.parametrize("a_shape,b_shape", [((2, 1), (2, 0)), ((3, 2), (3, 0)),
                                             ((2, 2, 2), (2, 2, 0)), ((2, 2), (2,))])
def test_lstsq_gelsy_rank_without_right_hand_sides(a_shape, b_shape):
    torch = _torch()
    gen = np.random.default_rng(3)
    a, b = gen.standard_normal(a_shape), gen.standard_normal(b_shape)
    got = ember.linalg.lstsq(ember.tensor(a), ember.tensor(b)).rank.tolist()
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b)).rank.tolist()
    assert got == want


# ------------------------------------------------------------------------------------------------
# svd of negative zeros: MKL's singular vectors (+1), not the reference LAPACK's (-1)


@pytest.mark.parametrize("rows", [[[-0.0]], [[-0.0], [-0.0]], [[-0.0, 0.0, -0.0]]])
def test_svd_of_negative_zero_keeps_positive_vectors(rows):
    torch = _torch()
    for full in (True, False):
        got = ember.linalg.svd(ember.tensor(rows, dtype=ember.float64), full_matrices=full)
        want = torch.linalg.svd(torch.tensor(rows, dtype=torch.float64), full_matrices=full)
        assert got.U.tolist() == want.U.tolist()
        assert got.Vh.tolist() == want.Vh.tolist()


def test_svd_gradient_at_negative_zero():
    torch = _torch()
    grads = []
    for T in (ember, torch):
        a = T.tensor([[-0.0]], dtype=T.float64, requires_grad=True)
        U, S, Vh = T.linalg.svd(a)
        grads.append(T.autograd.grad(U.sum() * 0.5 - S.sum() - 1.5 * Vh.sum(), a)[0].item())
    assert grads[0] == grads[1]


# ------------------------------------------------------------------------------------------------
# vector_norm of one value per result with out=: |x| itself, no overflowing square


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
@pytest.mark.parametrize("ord", [2, 3, 0.5])
def test_vector_norm_single_value_with_out(dtype, ord):
    torch = _torch()
    res = []
    for T in (ember, torch):
        x = T.tensor(np.array([-3.4028234663852886e38], dtype=dtype))
        out = T.tensor(0.0, dtype=T.float32)
        r = T.linalg.vector_norm(x, ord=ord, out=out)
        assert r is out
        res.append(out.item())
    assert res[0] == res[1] == 3.4028234663852886e38


# ------------------------------------------------------------------------------------------------
# native_group_norm checks dtypes before the element count, as torch


@pytest.mark.parametrize("dtype,weight", [("int32", None), ("float32", "float64")])
def test_native_group_norm_dtype_checked_before_size(dtype, weight):
    torch = _torch()
    kinds = []
    for T in (ember, torch):
        x = T.ones(4, 4, 1, dtype=getattr(T, dtype))
        w = None if weight is None else T.ones(4, dtype=getattr(T, weight))
        with pytest.raises((NotImplementedError, RuntimeError)) as info:
            T.native_group_norm(x, w, None, 2, 4, 3, 2, 1e-5)
        kinds.append((type(info.value) is NotImplementedError, "mixed dtype" in str(info.value)))
    assert kinds[0] == kinds[1]
