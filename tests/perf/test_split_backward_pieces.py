"""Split's backward copies non-overlapping pieces into place (NOTE [ Split backward writes
its pieces ] in ember/_ops/join.py): the same values as summing them into zeros, a -0.0
kept as PyTorch keeps it, and overlapping tensor_split pieces still summed."""

import numpy as np
import pytest

import ember
from ember._ops import join

_RNG = np.random.default_rng(3)


def _summed(gs, dim, bounds, in_shape):
    """The plain formula: every piece added into zeros."""
    z = np.zeros(in_shape, gs[0].dtype)
    pre = (slice(None),) * dim
    for g, (s, e) in zip(gs, bounds):
        z[pre + (slice(s, e),)] += g
    return z


@pytest.mark.parametrize("bounds", [((0, 2), (2, 5), (5, 7)),     # split
                                    ((2, 5), (0, 2), (5, 7)),     # out of order
                                    ((0, 2), (4, 7)),             # a gap, zeroed
                                    ((1, 3), (3, 3), (3, 6)),     # an empty piece, gaps
                                    ((0, 4), (2, 7))])            # overlapping: summed
def test_pieces_as_the_summed_formula(bounds):
    in_shape = (3, 7, 4)
    gs = [_RNG.standard_normal((3, e - s, 4)).astype(np.float32) for s, e in bounds]
    got = join._split_backward_kernel(np, *gs, dim=1, bounds=bounds, in_shape=in_shape)
    want = _summed(gs, 1, bounds, in_shape)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_gpt_qkv_gradient_through_split():
    x = ember.randn(2, 5, 12, requires_grad=True)
    q, k, v = x.split(4, dim=2)
    gq, gk, gv = (ember.randn(2, 5, 4) for _ in range(3))
    ember.autograd.backward([q, k, v], [gq, gk, gv])
    np.testing.assert_array_equal(x.grad.numpy(),
                                  np.concatenate([gq.numpy(), gk.numpy(), gv.numpy()], 2))


def test_negative_zero_kept_as_torch():
    torch = pytest.importorskip("torch")
    results = []
    for fw in (ember, torch):
        x = fw.tensor([1.0, 2.0, 3.0], requires_grad=True)
        a, b = x.split([1, 2])
        b.backward(fw.tensor([-0.0, 5.0]))
        results.append(np.signbit(x.grad.detach().numpy()).tolist())
    assert results[0] == results[1] == [False, True, False]


def test_tensor_split_backwards_indices_as_torch():
    torch = pytest.importorskip("torch")
    base = _RNG.standard_normal(6).astype(np.float32)
    grads = []
    for fw in (ember, torch):
        x = fw.tensor(base, requires_grad=True)
        parts = fw.tensor_split(x, [4, 1])   # x[:4], x[4:1] (empty), x[1:]: overlapping
        sum(((i + 1) * p).sum() for i, p in enumerate(parts)).backward()
        grads.append(x.grad.detach().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
