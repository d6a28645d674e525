"""Batching rules of the single-op losses (binary cross entropy with and without logits,
Huber, smooth L1, soft margin), glu and the element-wise backward formulas
(``tanh_backward``...): no per-example fallback, and values, per-sample gradients,
jacobians and forward-mode tangents equal to ``torch.func``'s."""

import warnings

import numpy as np
import pytest

import ember
import ember.func as EF
from tests.conftest import HAS_TORCH

if HAS_TORCH:
    import torch
    import torch.func as TF

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

_rng = np.random.default_rng(18)
X = _rng.standard_normal((4, 3, 6))
Y = _rng.random((4, 3, 6))
W6 = _rng.random(6) + 0.5
WB = _rng.random((4, 6)) + 0.5
G = _rng.standard_normal(4)
GN = _rng.standard_normal((4, 3, 6))


def _no_fallback(fn):
    """``fn()`` with the per-example fallback's warning made an error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="There is a performance drop")
        return fn()


def _same(a, b, tol=1e-9):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y, tol)
        return
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


#: name -> f(T, x, y, w): x and y of one example's shape (3, 6), w a (6,) weight
LOSSES = {
    "bce_mean": lambda T, x, y, w: T.nn.functional.binary_cross_entropy(T.sigmoid(x), y),
    "bce_none_weight": lambda T, x, y, w: T.nn.functional.binary_cross_entropy(
        T.sigmoid(x), y, weight=w, reduction="none"),
    "bce_sum_weight": lambda T, x, y, w: T.nn.functional.binary_cross_entropy(
        T.sigmoid(x), y, weight=w, reduction="sum"),
    "bce_logits_mean": lambda T, x, y, w: T.nn.functional.binary_cross_entropy_with_logits(
        x, y),
    "bce_logits_pos_weight": lambda T, x, y, w:
        T.nn.functional.binary_cross_entropy_with_logits(x, y, weight=w[:1], pos_weight=w,
                                                         reduction="sum"),
    "bce_logits_none": lambda T, x, y, w: T.nn.functional.binary_cross_entropy_with_logits(
        x, y, pos_weight=w, reduction="none"),
    "huber_mean": lambda T, x, y, w: T.nn.functional.huber_loss(x, y, delta=0.4),
    "huber_none": lambda T, x, y, w: T.nn.functional.huber_loss(x, y, reduction="none"),
    "smooth_l1_sum": lambda T, x, y, w: T.nn.functional.smooth_l1_loss(x, y, reduction="sum",
                                                                      beta=0.5),
    "smooth_l1_mean": lambda T, x, y, w: T.nn.functional.smooth_l1_loss(x, y),
    "soft_margin_mean": lambda T, x, y, w: T.nn.functional.soft_margin_loss(x, 2 * y - 1),
    "soft_margin_none": lambda T, x, y, w: T.nn.functional.soft_margin_loss(
        x, 2 * y - 1, reduction="none"),
    "glu_last": lambda T, x, y, w: T.nn.functional.glu(x, -1) * y[:, :3],
    "glu_first_dim": lambda T, x, y, w: T.nn.functional.glu(x[:2], 0),
    "tanh": lambda T, x, y, w: T.tanh(x) * w,
    "sigmoid": lambda T, x, y, w: T.sigmoid(x) * y,
    "silu": lambda T, x, y, w: T.nn.functional.silu(x),
    "gelu_tanh": lambda T, x, y, w: T.nn.functional.gelu(x, approximate="tanh"),
}


def _args(T, which):
    """x, y, w as tensors; ``which`` the in_dims of (x, y, w)."""
    x = T.tensor(X if which[0] == 0 else X[0])
    y = T.tensor(Y if which[1] == 0 else Y[1])
    w = T.tensor(WB if which[2] == 0 else W6)
    return x, y, w


@pytest.mark.parametrize("in_dims", [(0, 0, None), (0, None, 0), (None, 0, 0)])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_vmap_loss_matches_torch(name, in_dims):
    f = LOSSES[name]

    def run(T, F):
        return F.vmap(lambda x, y, w: f(T, x, y, w), in_dims=in_dims)(*_args(T, in_dims))

    _same(_no_fallback(lambda: run(ember, EF)), run(torch, TF))


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_vmap_grad_loss_matches_torch(name):
    # per-sample gradients: the backward formulas run batched, with the weight unbatched
    f = LOSSES[name]
    in_dims = (0, 0, None)

    def run(T, F):
        return F.vmap(F.grad(lambda x, y, w: f(T, x, y, w).square().sum()),
                      in_dims=in_dims)(*_args(T, in_dims))

    _same(_no_fallback(lambda: run(ember, EF)), run(torch, TF))


@pytest.mark.parametrize("name", ["bce_mean", "bce_sum_weight", "soft_margin_mean",
                                  "soft_margin_none", "bce_logits_pos_weight", "glu_last",
                                  "tanh", "silu"])
def test_jacrev_loss_matches_torch(name):
    # jacrev: batched cotangents meet the unbatched saved values of one forward pass
    f = LOSSES[name]

    def run(T, F):
        x, y, w = _args(T, (None, None, None))
        return F.jacrev(lambda x: f(T, x, y, w))(x)

    _same(_no_fallback(lambda: run(ember, EF)), run(torch, TF))


@pytest.mark.parametrize("name", ["bce_mean", "huber_none", "smooth_l1_sum",
                                  "soft_margin_mean", "bce_logits_none", "glu_first_dim"])
def test_vmap_jvp_loss_matches_torch(name):
    f = LOSSES[name]

    def run(T, F):
        x, y, w = _args(T, (0, 0, None))
        return F.vmap(lambda x, y, tx: F.jvp(lambda x: f(T, x, y, w), (x,), (tx,)))(
            x, y, T.cos(3 * x))

    _same(_no_fallback(lambda: run(ember, EF)), run(torch, TF))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_backward_batched_gradient_unbatched_input(reduction):
    # the gradient alone is batched (vmap over cotangents of one recorded pass)
    x, y = X[0], Y[0]

    def run(T, F):
        xt = T.tensor(x, requires_grad=True)
        loss = T.nn.functional.binary_cross_entropy(T.sigmoid(xt), T.tensor(y),
                                                    reduction=reduction)
        gs = T.tensor(G if reduction != "none" else GN)
        return F.vmap(lambda g: T.autograd.grad(loss, xt, g, retain_graph=True)[0])(gs)

    _same(_no_fallback(lambda: run(ember, EF)), run(torch, TF))


def test_bce_out_of_range_raises_under_vmap():
    x = ember.tensor(np.stack([np.full(3, 0.5), np.full(3, 1.5)]))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        EF.vmap(lambda a: ember.nn.functional.binary_cross_entropy(a, a * 0))(x)


def test_rule_names_cover_the_single_op_losses():
    from ember.func._batch_rules import rule_names

    names = set(rule_names())
    for n in ("glu", "glu_backward", "binary_cross_entropy", "binary_cross_entropy_backward",
              "binary_cross_entropy_with_logits", "huber_loss", "smooth_l1_loss",
              "soft_margin_loss", "soft_margin_loss_backward", "tanh_backward",
              "sigmoid_backward", "silu_backward", "gelu_tanh_backward", "prelu",
              "rrelu_with_noise", "softshrink", "hardshrink", "threshold"):
        assert n in names, n
