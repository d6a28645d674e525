"""Transforms through in-place ops and the transforms' argument checks, against torch.func:
Hessians (``jacfwd(jacrev)``, a vmap over ``jvp(grad)``) through in-place ops, ``vmap(jvp)``
through in-place ops written in Python (``cumsum_``, ``fill_``, ``addmm_``), ``as_strided``
under ``vmap``, and torch's refusals of non-tensor aux outputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _r(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


_W = _r(4, seed=9)

#: in-place ops on an intermediate ``y = 2 x``: name -> f(y) writing into y
_INPLACE = {
    "pow_": lambda y: y.pow_(3),
    "sin_": lambda y: y.sin_(),
    "exp_": lambda y: y.exp_(),
    "mul_slice": lambda y: y[1:3].mul_(y[0:2].clone()),
    "setitem": lambda y: y.__setitem__(slice(0, 2), y[2:4].exp()),
}


def _loss(T, write):
    def f(x):
        y = x * 2
        write(y)
        return (y * T.tensor(_W)).sum()

    return f


def _both(fn):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(ember), fn(torch)


def _close(got, want):
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("name", sorted(_INPLACE))
def test_hessian_through_inplace_matches_torch(name):
    got, want = _both(lambda T: T.func.hessian(_loss(T, _INPLACE[name]))(T.tensor(_r(4))))
    _close(got, want)


@pytest.mark.parametrize("name", sorted(_INPLACE))
def test_vmap_of_hvp_through_inplace_matches_torch(name):
    # per-example Hessian-vector products: the primal is batched as well as the tangent
    def hvps(T):
        f = _loss(T, _INPLACE[name])
        return T.func.vmap(lambda x, v: T.func.jvp(T.func.grad(f), (x,), (v,))[1])(
            T.tensor(_r(3, 4)), T.tensor(_r(3, 4, seed=1)))

    got, want = _both(hvps)
    _close(got, want)


def test_jvp_of_grad_without_create_graph_through_fused_backward():
    # gelu's backward is one fused kernel unless a dual level needs its formula
    def hvp(T):
        f = lambda x: T.nn.functional.gelu(x).sum()  # noqa: E731
        return T.func.jvp(T.func.grad(f), (T.tensor(_r(5)),), (T.tensor(_r(5, seed=1)),))[1]

    got, want = _both(hvp)
    _close(got, want)


def test_forward_over_reverse_autograd_grad_without_create_graph():
    def run(T):
        fw = T.autograd.forward_ad
        x = T.tensor(_r(4), requires_grad=True)
        with fw.dual_level():
            d = fw.make_dual(x, T.tensor(_r(4, seed=1)))
            g, = T.autograd.grad(T.nn.functional.gelu(d).sum(), d)
            return fw.unpack_dual(g).tangent

    got, want = _both(run)
    _close(got, want)


#: in-place ops written in Python (decomposed by the dual level) on a batched tensor
_PY_INPLACE = {
    "cumsum_": lambda T, y: y.cumsum_(0),
    "cumprod_": lambda T, y: y.cumprod_(0),
    "fill_": lambda T, y: y[1:].fill_(2.0),
    "addmm_": lambda T, y: y.addmm_(T.tensor(_r(3, 2)), T.tensor(_r(2, 3))),
    "tril_": lambda T, y: y.tril_(),
}


@pytest.mark.parametrize("name", sorted(_PY_INPLACE))
def test_vmap_of_jvp_through_python_inplace_matches_torch(name):
    def run(T):
        def f(x):
            y = x * 2
            _PY_INPLACE[name](T, y)
            return y

        return T.func.vmap(lambda x, v: T.func.jvp(f, (x,), (v,))[1])(
            T.tensor(_r(2, 3, 3)), T.tensor(_r(2, 3, 3, seed=1)))

    got, want = _both(run)
    _close(got, want)


@pytest.mark.parametrize("in_dims", [0, 1])
def test_vmap_as_strided_offsets_count_per_example(in_dims):
    got, want = _both(lambda T: T.func.vmap(
        lambda y: (y * 2).as_strided((2,), (2,), 1), in_dims=in_dims)(T.tensor(_r(3, 4))))
    _close(got, want)


def test_vmap_grad_as_strided_matches_torch():
    got, want = _both(lambda T: T.func.vmap(T.func.grad(
        lambda x: (x.as_strided((2,), (2,), 1) ** 2).sum()))(T.tensor(_r(3, 4))))
    _close(got, want)


@pytest.mark.parametrize("transform", ["grad", "vjp", "jacrev", "jacfwd", "jvp"])
def test_non_tensor_aux_raises_runtime_error(transform):
    x = ember.tensor(_r(3))

    def f(x):
        return x.sin().sum(), (x.cos(), 3)

    calls = {
        "grad": lambda: ember.func.grad(f, has_aux=True)(x),
        "vjp": lambda: ember.func.vjp(f, x, has_aux=True),
        "jacrev": lambda: ember.func.jacrev(f, has_aux=True)(x),
        "jacfwd": lambda: ember.func.jacfwd(f, has_aux=True)(x),
        "jvp": lambda: ember.func.jvp(f, (x,), (x,), has_aux=True),
    }
    with pytest.raises(RuntimeError, match="Expected tensors, got unsupported type"):
        calls[transform]()


def test_linearize_keeps_non_tensor_outputs():
    def run(T):
        out, fn = T.func.linearize(lambda x: (x.sin(), 3), T.tensor(_r(3)))
        return out[1], fn(T.tensor(_r(3, seed=1)))

    (e_int, (e_t, e_k)), (t_int, (t_t, t_k)) = _both(run)
    assert e_int == t_int == 3 and e_k == t_k == 3
    _close(e_t, t_t)


@pytest.mark.parametrize("f", [lambda x: None, lambda x: ()], ids=["none", "empty"])
def test_vjp_of_empty_output_raises_torch_message(f):
    import torch

    with pytest.raises(RuntimeError) as want:
        torch.func.vjp(f, torch.ones(2))
    with pytest.raises(RuntimeError) as got:
        ember.func.vjp(f, ember.ones(2))
    assert str(got.value) == str(want.value)


def test_repeated_argnums_message_matches_torch():
    with pytest.raises(RuntimeError, match=r"argnums elements must be unique, got \(0, 0\)"):
        ember.func.grad(lambda x: x.sum(), argnums=(0, 0))(ember.ones(2))


_SR_IDX = np.array([0, 1, 0, 2, 1, 0])
#: (self, src): no zero, a zero in self, one zero in a group of src, zeros in both
_SR_CASES = {
    "no_zero": (_r(3, seed=3), _r(6, seed=4)),
    "zero_in_self": (np.array([0.7, 0.0, -1.2]), _r(6, seed=5)),
    "zero_in_src": (_r(3, seed=6), np.array([0.5, -1.1, 0.0, 0.8, 1.3, -0.4])),
    "zeros_in_both": (np.array([0.0, 0.9, -0.3]), np.array([1.2, 0.0, -0.6, 0.4, -0.9, 0.7])),
}


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("case", sorted(_SR_CASES))
def test_scatter_reduce_prod_hvp_matches_torch_reverse_over_reverse(case, include_self):
    # torch's own forward-over-reverse of scatter_reduce prod disagrees with its Hessian
    # (reverse-over-reverse, which central differences confirm): the oracle is the latter
    import torch

    a, s = _SR_CASES[case]
    w, va, vs = _r(3, seed=7), _r(3, seed=8), _r(6, seed=9)

    def loss(T):
        return lambda a, s: (a.scatter_reduce(0, T.tensor(_SR_IDX), s, "prod",
                                              include_self=include_self) * T.tensor(w)).sum()

    h = torch.autograd.functional.hessian(loss(torch), (torch.tensor(a), torch.tensor(s)))
    hm = np.block([[h[0][0].numpy(), h[0][1].numpy()], [h[1][0].numpy(), h[1][1].numpy()]])
    want = hm @ np.concatenate([va, vs])
    _, got = ember.func.jvp(ember.func.grad(loss(ember), (0, 1)),
                            (ember.tensor(a), ember.tensor(s)),
                            (ember.tensor(va), ember.tensor(vs)))
    np.testing.assert_allclose(np.concatenate([g.numpy() for g in got]), want, rtol=1e-9,
                               atol=1e-12)


@pytest.mark.parametrize("name", ["t_", "transpose_", "squeeze_unsqueeze_"])
def test_vmap_grad_through_inplace_view_ops_matches_torch(name):
    w = _r(4, 2, seed=3)

    def run(T):
        def loss(x):
            y = x * 2
            if name == "t_":
                y.t_()
            elif name == "transpose_":
                y.transpose_(0, 1)
            else:
                y.unsqueeze_(1).squeeze_(1).t_()
            return (y * T.tensor(w)).sum()

        return T.func.vmap(T.func.grad(loss))(T.tensor(_r(3, 2, 4)))

    got, want = _both(run)
    _close(got, want)


def test_vmap_grad_scatter_reduce_inplace_each_reduction_in_turn():
    # one in-place name, several ops: each call must run its own reduction's op
    idx = np.array([0, 1, 0, 2])
    for reduce in ("mean", "sum", "amax", "mean"):
        def run(T):
            def loss(x, s):
                y = x * 2
                y.scatter_reduce_(0, T.tensor(idx), s, reduce)
                return (y * T.tensor(_r(3, seed=4))).sum()

            return T.func.vmap(T.func.grad(loss, (0, 1)))(T.tensor(_r(3, 3)),
                                                          T.tensor(_r(3, 4, seed=1)))

        got, want = _both(run)
        for g, w in zip(got, want):
            _close(g, w)


@pytest.mark.parametrize("name", ["cumprod_", "renorm_"])
def test_vmap_of_hvp_through_python_inplace_saving_its_input(name):
    # autograd saves the batched input the write destroys: every example's value
    def run(T):
        def loss(x):
            y = x * 2
            if name == "cumprod_":
                y.cumprod_(0)
            else:
                y.renorm_(2, 0, 1.0)
            return (y * T.tensor(_r(3, 2, seed=5))).sum()

        g = T.func.grad(loss)
        return T.func.vmap(lambda x, v: T.func.jvp(g, (x,), (v,))[1])(
            T.tensor(_r(4, 3, 2)), T.tensor(_r(4, 3, 2, seed=1)))

    got, want = _both(run)
    _close(got, want)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax"])
def test_vmap_of_hvp_through_scatter_reduce_inplace_matches_loop(reduce):
    # no batching rule: the write runs out of place at the logical level, where the dual
    # level's tangents are (per-example copies would carry none). PyTorch has no forward
    # rule for index_reduce_; the per-example loop is the oracle (itself checked against
    # torch in test_jvp_grad_opinfo.py)
    idx = ember.tensor(np.array([0, 2, 0]))

    def loss(x, s):
        y = x * 2
        y.index_reduce_(0, idx, s, reduce)
        return (y ** 2).sum()

    g = ember.func.grad(loss, (0, 1))
    xs, ss = ember.tensor(_r(3, 4, 2)), ember.tensor(_r(3, 3, 2, seed=1))
    vx, vs = ember.tensor(_r(3, 4, 2, seed=2)), ember.tensor(_r(3, 3, 2, seed=3))
    got = ember.func.vmap(lambda *a: ember.func.jvp(g, a[:2], a[2:])[1])(xs, ss, vx, vs)
    for k in range(2):
        want = np.stack([ember.func.jvp(g, (xs[i], ss[i]), (vx[i], vs[i]))[1][k].numpy()
                         for i in range(3)])
        np.testing.assert_allclose(got[k].numpy(), want, rtol=1e-9, atol=1e-12)
