"""Regressions found by the lead's random sweeps of session 21 (vmap, modules, optimizers),
each against PyTorch."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("T", [ember, torch], ids=["ember", "torch"])
def test_one_hot_under_vmap_with_explicit_num_classes(T):
    F = T.nn.functional
    out = T.func.vmap(lambda x: F.one_hot(x, 3))(T.tensor([[1], [2], [5]]))
    # one example has no values to check: an out-of-range class is a row of zeros
    np.testing.assert_array_equal(out.numpy(), [[[0, 1, 0]], [[0, 0, 1]], [[0, 0, 0]]])
    x = T.tensor([[0.5, -1.0, 2.0], [3.0, 0.0, 1.0]])
    got = T.func.vmap(lambda r: F.one_hot(r.argmax(-1), 3).to(r.dtype) * r)(x)
    np.testing.assert_array_equal(got.numpy(), [[0, 0, 2.0], [3.0, 0, 0]])
    with pytest.raises(RuntimeError, match="explicit positive num_classes"):
        T.func.vmap(lambda x: F.one_hot(x))(T.tensor([[1], [2]]))
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(T.tensor([5]), 3)  # outside vmap the values are still checked


def test_jacrev_of_cdist_is_the_true_jacobian():
    # PyTorch 2.13's jacrev of cdist repeats the first column's rows (its batched cdist
    # backward is wrong); ember's agrees with torch's row-by-row autograd.grad instead
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 2)), rng.standard_normal((4, 2))
    ours = ember.func.jacrev(lambda a: ember.cdist(a, ember.tensor(y)))(ember.tensor(x))
    xx = torch.tensor(x, requires_grad=True)
    out = torch.cdist(xx, torch.tensor(y))
    rows = [torch.autograd.grad(out[i, j], xx, retain_graph=True)[0].numpy()
            for i in range(3) for j in range(4)]
    np.testing.assert_allclose(ours.numpy(), np.array(rows).reshape(3, 4, 3, 2), rtol=1e-12)


def test_sdpa_gradients_inside_vmap_with_an_unbatched_value():
    # q batched on dim 1, k on dim 0, v shared: the attention backward meets a batched
    # output and an unbatched gradient and value (once a broadcasting error)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s) for s in ((2, 1, 6, 4), (1, 2, 6, 4), (2, 6, 4)))
    got = []
    for T in (ember, torch):
        F = T.nn.functional
        mask = T.ones(6, 6, dtype=T.bool).tril()
        res = []
        for kw in (dict(is_causal=True), dict(attn_mask=mask), {}):
            def f(a, b, c, kw=kw, F=F):
                return (F.scaled_dot_product_attention(a, b, c, **kw) ** 2).sum()
            for argnums in (0, 1, 2):
                g = T.func.vmap(T.func.grad(f, argnums=argnums), in_dims=(1, 0, None))
                res.append(g(T.tensor(q), T.tensor(k), T.tensor(v)).numpy())
        got.append(res)
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


_MAKE_TENSOR_CASES = [
    ((3, 4), dict(dtype="float32")), ((3, 4), dict(dtype="float16", low=-2, high=3)),
    ((3, 4), dict(dtype="bfloat16")), ((3, 4), dict(dtype="complex64")),
    ((2, 3), dict(dtype="complex128", noncontiguous=True)), ((3, 4), dict(dtype="int64")),
    ((5,), dict(dtype="uint8")), ((5,), dict(dtype="int8", low=-1000, high=1000)),
    ((5,), dict(dtype="bool")), ((3, 4), dict(dtype="float32", noncontiguous=True)),
    ((), dict(dtype="float32", noncontiguous=True)), ((8,), dict(dtype="int64", low=2.5, high=7.2)),
    ((8,), dict(dtype="int64", low=-3.5, high=-0.5)),
    ((6,), dict(dtype="int64", low=0, high=1, exclude_zero=True)),
    ((6,), dict(dtype="float16", low=0, high=0, exclude_zero=True)),
    ((2, 3, 4, 5), dict(dtype="float32", memory_format="channels_last")),
    ((5,), dict(dtype="uint8", low=-5, high=3)), ((3,), dict(dtype="int64", requires_grad=True)),
    ((3,), dict(dtype="float32", low=4, high=3)), ((3,), dict(dtype="float32", low=float("nan"))),
    ((3,), dict(dtype="float64", requires_grad=True)),
]


@pytest.mark.filterwarnings("ignore:Passing `low==high`")
@pytest.mark.parametrize("shape,kw", _MAKE_TENSOR_CASES, ids=str)
def test_make_tensor_draws_from_the_default_generator_as_torch(shape, kw):
    # once a fixed NumPy stream: every call returned the same values, unlike torch's
    got = []
    for T in (ember, torch):
        k = dict(kw, dtype=getattr(T, kw["dtype"]))
        if "memory_format" in k:
            k["memory_format"] = getattr(T, k["memory_format"])
        T.manual_seed(3)
        try:
            a = T.testing.make_tensor(shape, device="cpu", **k)
        except ValueError as e:
            got.append(("ValueError", str(e).replace("torch.", "").replace("ember.", "")))
            continue
        b = T.testing.make_tensor(shape, device="cpu", **k)
        got.append((a.detach().float().numpy().tolist() if a.dtype == T.bfloat16
                    else a.detach().numpy().tolist(), tuple(a.stride()), a.requires_grad,
                    bool(T.equal(a, b)) if a.numel() > 2 else None, float(T.rand(1))))
    assert got[0] == got[1]


def test_gradgradcheck_draws_its_grad_outputs_as_torch():
    got = []
    for T in (ember, torch):
        T.manual_seed(0)
        x = T.randn(3, 2, dtype=T.float64, requires_grad=True)
        assert T.autograd.gradgradcheck(lambda t: (t ** 3).sum(0), (x,))
        got.append(float(T.rand(1)))  # the generator moved on by the same draws
    assert got[0] == got[1]
