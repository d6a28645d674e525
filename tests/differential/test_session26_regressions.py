"""Regressions for session 26's differential run against PyTorch 2.13 and the leftovers of
earlier ones: reparameterised gamma / Dirichlet / Beta gradients (torch's approximations),
and what the long run found. Each case runs with ``T = ember`` and ``T = torch`` from the same
values where torch is installed."""

import copy
import itertools

import numpy as np
import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _both():
    return ember, _torch()


# ---- reparameterised gamma-family gradients (NOTE [ Approximate gamma and Dirichlet
# gradients, PyTorch's values ])

_CONC = np.exp(np.random.default_rng(7).uniform(-3.0, 3.5, (40, 4)))


def _rsample_grads(T, name, dtype):
    T.manual_seed(3)
    a = T.tensor(_CONC, dtype=getattr(T, dtype), requires_grad=True)
    if name == "Gamma":
        d = T.distributions.Gamma(a, T.tensor(1.5, dtype=a.dtype))
    elif name == "Dirichlet":
        d = T.distributions.Dirichlet(a)
    else:
        d = T.distributions.Beta(a, a.detach() * 0.5 + 1.0)
    s = d.rsample((3,))
    weights = T.arange(s.numel(), dtype=s.dtype).reshape(s.shape).sin()
    (s * weights).sum().backward()
    return s.detach().double().numpy(), a.grad.double().numpy()


@pytest.mark.parametrize("name", ["Gamma", "Dirichlet", "Beta"])
def test_rsample_gradient_is_torchs_float64(name):
    (s_e, g_e), (s_t, g_t) = (_rsample_grads(T, name, "float64") for T in _both())
    np.testing.assert_array_equal(s_e, s_t)
    # Dirichlet and Beta differed by up to 150% (the normalised gammas' gradient)
    np.testing.assert_allclose(g_e, g_t, rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize("name", ["Gamma", "Dirichlet", "Beta"])
def test_rsample_gradient_is_torchs_float32(name):
    (s_e, g_e), (s_t, g_t) = (_rsample_grads(T, name, "float32") for T in _both())
    np.testing.assert_allclose(s_e, s_t, rtol=1e-5)  # float32 draws round apart
    # torch sums the Dirichlet end series in float32, ember in float64
    np.testing.assert_allclose(g_e, g_t, rtol=2e-3, atol=1e-6 * np.abs(g_t).max())


def test_standard_gamma_grad_values():
    E, T = _both()
    rng = np.random.default_rng(11)
    alpha = np.exp(rng.uniform(-4.0, 6.0, 4000))
    x = rng.standard_gamma(alpha) + 1e-300  # every regime: x < 0.8, alpha > 8 near/far, fit
    for dtype in ("float64", "float32"):
        got = E._standard_gamma_grad(E.tensor(alpha, dtype=getattr(E, dtype)),
                                     E.tensor(x, dtype=getattr(E, dtype)))
        want = T._standard_gamma_grad(T.tensor(alpha, dtype=getattr(T, dtype)),
                                      T.tensor(x, dtype=getattr(T, dtype)))
        assert got.dtype == getattr(E, dtype) and got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(),
                                   rtol=1e-12 if dtype == "float64" else 1e-6, atol=0)


def test_dirichlet_grad_values():
    E, T = _both()
    conc = np.exp(np.random.default_rng(5).uniform(-3.0, 4.0, (3000, 3)))
    T.manual_seed(0)
    x = T._sample_dirichlet(T.tensor(conc)).numpy()
    total = np.broadcast_to(conc.sum(-1, keepdims=True), conc.shape)
    got = E._dirichlet_grad(*(E.tensor(v) for v in (x, conc, total)))
    want = T._dirichlet_grad(*(T.tensor(v) for v in (x, conc, total)))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=0)


@pytest.mark.parametrize("args", [
    ("float32", "float64"), ("int64", "int64"), ("float16", "float16"),
])
def test_standard_gamma_grad_rejects_what_torch_rejects(args):
    E, T = _both()
    errors = []
    for L in (E, T):
        a, x = (L.tensor([2.0, 3.0]).to(getattr(L, d)) for d in args)
        with pytest.raises((RuntimeError, NotImplementedError)) as info:
            L._standard_gamma_grad(a, x)
        errors.append((info.type, str(info.value)))
    assert errors[0] == errors[1]


def _gamma_underflow(T):
    T.manual_seed(0)
    a = T.full((500,), 0.01, requires_grad=True)
    r = T.full((500,), 4.0, requires_grad=True)
    s = T.distributions.Gamma(a, r).rsample()
    s.sum().backward()
    return s.detach().numpy(), a.grad.numpy(), r.grad.numpy()


def test_gamma_rsample_underflow_keeps_its_gradient():
    # draws below float32's tiny are clamped to it, but torch clamps behind autograd's back:
    # their gradients stay (ember's clamp gave them 0)
    got, want = _gamma_underflow(ember), _gamma_underflow(_torch())
    assert (want[0] <= np.finfo(np.float32).tiny).any()
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=0)  # float32 draws: 1 ulp
    for g, w in zip(got[1:], want[1:]):
        assert ((g != 0) == (w != 0)).all()
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=0)


# ---- lazy modules before their first call


def _lazy_to_then_call(T, cls, x_shape):
    m = getattr(T.nn, cls)().to(T.float64) if cls.startswith("LazyBatch") else \
        getattr(T.nn, cls)(3).to(T.float64)
    placeholders = sorted((n, type(t).__name__, str(t.dtype).split(".")[-1])
                          for n, t in itertools.chain(m.named_parameters(), m.named_buffers()))
    T.manual_seed(0)
    out = m(T.ones(*x_shape, dtype=T.float64))
    return placeholders, str(out.dtype).split(".")[-1], sorted(
        (n, str(t.dtype).split(".")[-1], tuple(t.shape)) for n, t in m.state_dict().items())


@pytest.mark.parametrize("cls, x_shape", [
    ("LazyLinear", (2, 4)), ("LazyBatchNorm1d", (3, 5)), ("LazyInstanceNorm1d", (2, 3, 4)),
])
def test_lazy_module_to_dtype_before_first_call(cls, x_shape):
    # the buffers of LazyBatchNorm became plain tensors and the first call failed
    E, T = _both()
    assert _lazy_to_then_call(E, cls, x_shape) == _lazy_to_then_call(T, cls, x_shape)


def _lazy_deepcopy(T):
    m = T.nn.Sequential(T.nn.LazyLinear(3, dtype=T.float64), T.nn.ReLU())
    c = copy.deepcopy(m)
    before = (type(c[0]).__name__, type(c[0].weight).__name__, str(c[0].weight.dtype),
              c[0].weight.requires_grad)
    c(T.ones(2, 5, dtype=T.float64))
    return before, type(c[0]).__name__, tuple(c[0].weight.shape), type(m[0]).__name__, \
        type(m[0].weight).__name__


def test_lazy_module_deepcopy_before_first_call():
    # copying an UninitializedParameter raised TypeError; the copy must stay lazy on its own
    E, T = _both()
    got, want = _lazy_deepcopy(E), _lazy_deepcopy(T)
    assert got[0][:2] == want[0][:2] and got[0][2].split(".")[-1] == want[0][2].split(".")[-1]
    assert got[1:] == want[1:]


def test_lazy_buffer_deepcopy_refuses_as_torch():
    E, T = _both()
    for L in (E, T):
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
            copy.deepcopy(L.nn.LazyBatchNorm1d())


# ---- the long run's findings


def _convolution_other_bias(T, x_dtype, b_dtype, transposed):
    rng = np.random.default_rng(4)
    x = T.tensor(rng.standard_normal((1, 2, 4, 5)), dtype=getattr(T, x_dtype))
    w = T.tensor(rng.standard_normal((3, 2, 2, 2)), dtype=getattr(T, x_dtype))
    if transposed:
        w = w.transpose(0, 1).contiguous()
    b = T.tensor([1.3, 0.1, -1.7]).to(getattr(T, b_dtype))
    if b.is_floating_point():
        b.requires_grad_()
    out = T.convolution(x, w, b, [1, 1], [1, 0], [1, 1], transposed, [0, 0], 1)
    grad = None
    if b.requires_grad:
        out.sum().backward()
        grad = (str(b.grad.dtype).split(".")[-1], b.grad.double().numpy())
    return str(out.dtype).split(".")[-1], out.detach().double().numpy(), grad


@pytest.mark.parametrize("x_dtype", ["float64"])
@pytest.mark.parametrize("b_dtype", ["int32", "int8", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_bias_of_another_dtype(x_dtype, b_dtype, transposed):
    # torch.convolution adds a bias of any real dtype to a float64 input, in float64; ember
    # refused it (float32 inputs depend on whether torch picks oneDNN, which refuses)
    E, T = _both()
    got = _convolution_other_bias(E, x_dtype, b_dtype, transposed)
    want = _convolution_other_bias(T, x_dtype, b_dtype, transposed)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-6)
    assert (got[2] is None) == (want[2] is None)
    if want[2] is not None:
        assert got[2][0] == want[2][0]
        np.testing.assert_allclose(got[2][1], want[2][1], rtol=1e-6)


def test_conv2d_still_refuses_a_bias_of_another_dtype():
    E, T = _both()
    for L in (E, T):
        with pytest.raises(RuntimeError, match="bias type"):
            L.nn.functional.conv2d(L.ones(1, 2, 4, 5, dtype=L.float64),
                                   L.ones(3, 2, 2, 2, dtype=L.float64),
                                   L.tensor([1, 0, -1], dtype=L.int32))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("a, b", [
    ((0, 4), (5, 4)), ((3, 4), (0, 4)), ((3, 0), (5, 0)), ((2, 0, 4), (2, 5, 4)),
    ((3, 4), (5, 4)),
])
def test_cdist_half_answers_what_needs_no_kernel(dtype, a, b):
    # torch's half cdist has no kernel for p=2 without the matrix product, but an empty
    # result or zero features never reach one; ember refused them all
    E, T = _both()
    got = []
    for L in (E, T):
        x1 = L.ones(*a, dtype=getattr(L, dtype), requires_grad=True)
        x2 = L.ones(*b, dtype=getattr(L, dtype))
        try:
            r = L.cdist(x1, x2)
        except NotImplementedError as e:
            got.append(str(e))
            continue
        r.sum().backward()
        got.append((tuple(r.shape), str(r.dtype).split(".")[-1], r.float().sum().item(),
                    tuple(x1.grad.shape)))
    assert got[0] == got[1]


def _bag_with_inf_padding(T, mode, psw):
    w = np.array([[0.0, 0.5, 0.5], [1.07, 1.0, 1.41], [-np.inf, -0.36, 0.029],
                  [np.inf, -1.75, 1.106], [-1.26, np.inf, -3.4e38], [0.73, 0.289, 1.237]],
                 np.float32)
    W = T.tensor(w, requires_grad=True)
    out = T.nn.functional.embedding_bag(
        T.tensor([0, 2, 4, 3, 4, 1]), W, T.tensor([0, 2, 2, 5]), mode=mode, padding_idx=4,
        per_sample_weights=T.tensor([1.0, 2, 3, 4, 5, 6]) if psw else None)
    (out * T.arange(out.numel()).reshape(out.shape).float()).nan_to_num().sum().backward()
    return out.detach().numpy(), W.grad.numpy()


@pytest.mark.parametrize("mode, psw", [("sum", False), ("sum", True), ("mean", False)])
def test_embedding_bag_padding_row_with_inf_stays_out(mode, psw):
    # the padding rows were multiplied by 0, so an inf in one made its bag NaN
    got, want = _bag_with_inf_padding(ember, mode, psw), _bag_with_inf_padding(_torch(), mode,
                                                                                psw)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def _remainder_divisor_grad(T, dtype):
    a = T.tensor([float("inf"), 3.0, 5.0, 1.0, -7.3, 1.0], dtype=getattr(T, dtype),
                 requires_grad=True)
    b = T.tensor([4.02, float("inf"), -float("inf"), 0.1, 0.7, 0.1], dtype=getattr(T, dtype),
                 requires_grad=True)
    return T.autograd.grad(a.remainder(b).sum(), [b])[0].double().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_remainder_divisor_gradient_uses_floor_division(dtype):
    # -g * floor(a / b) was 10 for 1 % 0.1 (torch's floor division gives 9) and inf for
    # inf % 4.02 (NaN)
    np.testing.assert_array_equal(_remainder_divisor_grad(ember, dtype),
                                  _remainder_divisor_grad(_torch(), dtype))
