"""The shortcuts of the per-sample-gradient path under ``vmap``: the compiled batched outer
product (NOTE [ Batched outer products ]), rules run without a physical record for stand-ins
private to the level (NOTE [ Stand-ins private to a level ]) and cross entropy's steps on
arrays (NOTE [ Plain physical steps ]). Each is checked for taking the shortcut and for
giving what the general path (or PyTorch) gives."""

import numpy as np
import pytest

import ember
import ember.func as EF
import ember.nn.functional as EFN
from ember import _kernels, _parallel
from ember.func import _batch_kernels
from ember.func._batch_tensor import batch_info
from tests.conftest import HAS_TORCH

if HAS_TORCH:
    import torch
    import torch.func as TF
    import torch.nn.functional as TFN

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
needs_numba = pytest.mark.skipif(_kernels.backend() != "numba", reason="needs numba")

_rng = np.random.default_rng(81)


def _close(a, b, tol=1e-6):
    if isinstance(a, (tuple, list)):
        for x, y in zip(a, b):
            _close(x, y, tol)
        return
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


# -- the batched outer product


@needs_numba
def test_outer_rows_bit_for_bit_einsum_with_non_finite_values():
    a = _rng.standard_normal((5, 7)).astype(np.float32)
    b = _rng.standard_normal((5, 9)).astype(np.float32)
    a[1, 2], b[3, 4], b[0, 0] = np.nan, np.inf, -0.0
    r = _batch_kernels.outer_rows(ember.tensor(a), ember.tensor(b))
    np.testing.assert_array_equal(r, np.einsum("bi,bj->bij", a, b))


@needs_numba
def test_outer_rows_reads_strided_operands():
    a = _rng.standard_normal((9, 6)).astype(np.float32)
    b = _rng.standard_normal((6, 9)).astype(np.float32)
    r = _batch_kernels.outer_rows(ember.tensor(a)[::3], ember.tensor(b).t()[::3])
    np.testing.assert_array_equal(r, np.einsum("bi,bj->bij", a[::3], b.T[::3]))


@needs_numba
def test_outer_rows_split_between_threads_matches(monkeypatch):
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    monkeypatch.setattr(_parallel, "_threads", lambda: 2)
    monkeypatch.setattr(_parallel, "MIN_ELEMENTS", 8)
    a = _rng.standard_normal((7, 5)).astype(np.float32)
    b = _rng.standard_normal((7, 3)).astype(np.float32)
    r = _batch_kernels.outer_rows(ember.tensor(a), ember.tensor(b))
    np.testing.assert_array_equal(r, np.einsum("bi,bj->bij", a, b))


@needs_numba
@pytest.mark.parametrize("m", [1, 7, 8, 9, 33])
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_outer_rows_stream_bit_for_bit_at_any_alignment(m, offset):
    from ember.func import _batch_numba

    a = _rng.standard_normal((3, 5)).astype(np.float32)
    b = _rng.standard_normal((3, m)).astype(np.float32)
    a[0, 1], b[2, 0] = np.nan, -np.inf
    # an output starting `offset` elements past a fresh buffer's start: rows begin at every
    # alignment, with ordinary stores at both ends of a row and streaming ones between
    buf = np.full(offset + a.size * m + 5, 7.0, np.float32)
    out = buf[offset:offset + a.size * m].reshape(3, 5, m)
    _batch_numba.outer_rows_stream(a, b, out)
    np.testing.assert_array_equal(out, np.einsum("bi,bj->bij", a, b))
    assert (buf[:offset] == 7).all() and (buf[offset + a.size * m:] == 7).all()


@needs_numba
def test_outer_rows_large_result_takes_streaming_stores(monkeypatch):
    from ember.func import _batch_numba

    calls = []
    real = _batch_numba.outer_rows_stream
    monkeypatch.setattr(_batch_numba, "outer_rows_stream",
                        lambda *args: calls.append(1) or real(*args))
    monkeypatch.setattr(_batch_numba, "STREAM_MIN_BYTES", 1024)
    a = _rng.standard_normal((4, 20)).astype(np.float32)
    b = _rng.standard_normal((4, 30)).astype(np.float32)
    r = _batch_kernels.outer_rows(ember.tensor(a), ember.tensor(b))
    np.testing.assert_array_equal(r, np.einsum("bi,bj->bij", a, b))
    assert calls == ([1] if _batch_numba.HAS_STREAM else [])


def test_outer_rows_declines_what_it_does_not_cover():
    f64 = ember.ones(4, 3, dtype=ember.float64)
    assert _batch_kernels.outer_rows(f64, f64) is None
    req = ember.ones(4, 3, requires_grad=True)
    assert _batch_kernels.outer_rows(req, ember.ones(4, 2)) is None


@needs_torch
def test_per_sample_linear_weight_grads_match_torch_large():
    # large enough for the compiled outer product (>= 2**16 products)
    x, w = _rng.standard_normal((8, 300)), _rng.standard_normal((40, 300))

    def run(T, F, N):
        xs = T.tensor(x, dtype=T.float32)
        wt = T.tensor(w, dtype=T.float32)
        return F.vmap(F.grad(lambda w, xi: N.linear(xi, w).tanh().sum()),
                      in_dims=(None, 0))(wt, xs)

    _close(run(ember, EF, EFN), run(torch, TF, TFN), tol=1e-5)


# -- rules without a physical record


def _mlp_loss(seen):
    def loss(w, xi, yi):
        h = EFN.linear(xi, w)
        seen.append(batch_info(h)[0].requires_grad)
        return EFN.cross_entropy(h.unsqueeze(0), yi.unsqueeze(0))

    return loss


def test_private_stand_ins_leave_physical_steps_unrecorded():
    seen = []
    w = ember.tensor(_rng.standard_normal((3, 5)))
    EF.vmap(EF.grad(_mlp_loss(seen)), in_dims=(None, 0, 0))(
        w, ember.tensor(_rng.standard_normal((4, 5))), ember.tensor([0, 1, 2, 1]))
    assert seen == [False]


def test_outer_grad_keeps_the_physical_record():
    # vmap inside grad: the weight requires grad from outside, so the physical steps record
    seen = []
    w = ember.tensor(_rng.standard_normal((3, 5)), requires_grad=True)

    def inner(xi):
        h = EFN.linear(xi, w)
        seen.append(batch_info(h)[0].requires_grad)
        return h.sum()

    EF.vmap(inner)(ember.tensor(_rng.standard_normal((4, 5))))
    assert seen == [True]


@needs_torch
def test_grad_of_vmap_with_closed_over_weight_matches_torch():
    x, w0 = _rng.standard_normal((4, 5)), _rng.standard_normal((3, 5))

    def run(T, F, N):
        xs = T.tensor(x)

        def outer(w):
            return F.vmap(lambda xi: N.linear(xi, w).sigmoid().sum())(xs).square().sum()

        return F.grad(outer)(T.tensor(w0))

    _close(run(ember, EF, EFN), run(torch, TF, TFN), tol=1e-10)


@needs_torch
def test_hessian_vector_product_of_per_sample_loss_matches_torch():
    # forward-over-reverse inside vmap: a dual level on the stack turns the shortcut off
    x, w0, v = (_rng.standard_normal((3, 5)), _rng.standard_normal((2, 5)),
                _rng.standard_normal((2, 5)))

    def run(T, F, N):
        def loss(w, xi):
            return N.linear(xi, w).tanh().square().sum()

        def hvp(w, xi):
            return F.jvp(lambda w: F.grad(loss)(w, xi), (w,), (T.tensor(v),))[1]

        return F.vmap(hvp, in_dims=(None, 0))(T.tensor(w0), T.tensor(x))

    _close(run(ember, EF, EFN), run(torch, TF, TFN), tol=1e-10)


# -- cross entropy on arrays


@needs_torch
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_per_sample_cross_entropy_grads_match_torch(reduction, weighted):
    x = _rng.standard_normal((5, 3, 4))
    y = np.array([[0, 1, -100], [3, 3, 2], [-100, -100, -100], [1, 0, 2], [2, 2, 2]])
    wt = _rng.random(4) + 0.5

    def run(T, F, N):
        weight = T.tensor(wt) if weighted else None

        def loss(xi, yi):
            return N.cross_entropy(xi.tanh(), yi, weight=weight, reduction=reduction)

        return F.vmap(F.grad_and_value(loss))(T.tensor(x), T.tensor(y))

    _close(run(ember, EF, EFN), run(torch, TF, TFN), tol=1e-10)


@needs_torch
def test_cross_entropy_jacrev_batched_cotangent_matches_torch():
    # the backward's gradient alone is batched: its plain path spreads it over the rows
    x, y = _rng.standard_normal((3, 4)), np.array([1, 0, 3])

    def run(T, F, N):
        yt = T.tensor(y)
        return F.jacrev(lambda a: N.cross_entropy(a, yt, reduction="none"))(T.tensor(x))

    _close(run(ember, EF, EFN), run(torch, TF, TFN), tol=1e-10)


@needs_torch
def test_nll_loss_mean_of_all_ignored_example_is_nan_as_torch():
    x, y = _rng.standard_normal((2, 3, 4)), np.array([[-100, -100, -100], [0, 1, 2]])

    def run(T, F, N):
        return F.vmap(lambda a, b: N.nll_loss(a, b))(T.tensor(x), T.tensor(y))

    got = run(ember, EF, EFN)
    assert np.isnan(got[0].item())
    _close(got, run(torch, TF, TFN), tol=1e-12)
