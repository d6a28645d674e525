"""The batching rules of ``vmap`` (ember/func/_batch_rules.py): each op class against
PyTorch's ``torch.func.vmap`` or a loop of single calls, the per-example fallback, errors,
randomness, autograd composition and custom ``autograd.Function``s."""

import warnings

import numpy as np
import pytest

import ember
import ember.func as EF
import ember.nn.functional as EFN
from tests.conftest import HAS_TORCH
from tests.func.test_eager_transforms import assert_same, t

if HAS_TORCH:
    import torch
    import torch.func as TF
    import torch.nn.functional as TFN

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

_rng = np.random.default_rng(5)
A = _rng.standard_normal((4, 3, 5))
W = _rng.standard_normal((4, 6, 5))
M = _rng.standard_normal((5, 6))
V5 = _rng.standard_normal(5)
Z = _rng.standard_normal(4)
V43 = _rng.standard_normal((4, 3))


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert a.shape == b.shape
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def check(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fn(ember, EF, EFN)
    assert_same(got, fn(torch, TF, TFN))


def _no_fallback(fn):
    """Run ``fn`` and fail if any op took the per-example fallback."""
    from ember.func import _batch_rules

    _batch_rules._warned.clear()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
    slow = [str(x.message) for x in w if "performance drop" in str(x.message)]
    assert not slow, slow
    return r


# -- element-wise


@needs_torch
def test_elementwise_broadcast_unbatched_operand():
    check(lambda T, F, N: F.vmap(lambda a, m: a * m.t()[:3, :] + 1, in_dims=(0, None))(
        t(T, A), t(T, M)))


@needs_torch
def test_elementwise_in_dims_mixed():
    check(lambda T, F, N: F.vmap(lambda a, z: T.where(a > 0, a, z), in_dims=(1, 0))(
        t(T, A[:, :, :4].transpose(0, 2, 1).copy()), t(T, Z)))


@needs_torch
def test_elementwise_zero_dim_batched_keeps_logical_promotion():
    check(lambda T, F, N: F.vmap(lambda z, a: z * a)(
        t(T, Z), T.tensor(A, dtype=T.float32)))


def test_elementwise_runs_one_batched_call():
    x = ember.tensor(A)
    r = _no_fallback(lambda: EF.vmap(lambda a: (a.sin() * 2 - a).exp().sum(-1))(x))
    np.testing.assert_allclose(r.numpy(), np.exp(np.sin(A) * 2 - A).sum(-1))


@needs_torch
def test_inplace_on_batched_tensor():
    check(lambda T, F, N: F.vmap(lambda a, v: a.clone().mul_(v), in_dims=(0, None))(
        t(T, A), t(T, V5)))


def test_inplace_on_unbatched_with_batched_other_raises():
    with pytest.raises(RuntimeError, match="inplace arithmetic"):
        EF.vmap(lambda z, m: m.clone().add_(z), in_dims=(0, None))(
            ember.tensor(Z), ember.tensor(M))


# -- reductions and dim-wise ops


@needs_torch
def test_reductions_shift_dims():
    check(lambda T, F, N: F.vmap(lambda a: (a.sum(), a.mean(0), a.amax(-1, keepdim=True),
                                            a.var(1), a.argmax(), a.logsumexp(0)))(t(T, A)))


@needs_torch
def test_softmax_and_sort_along_dim():
    check(lambda T, F, N: F.vmap(lambda a: (a.softmax(-1), a.log_softmax(0),
                                            a.sort(1).values, a.cumsum(0)))(t(T, A)))


# -- views and shape ops


@needs_torch
def test_views_and_reshapes():
    check(lambda T, F, N: F.vmap(lambda a: (a.reshape(15), a.t(), a.permute(1, 0),
                                            a.unsqueeze(0).expand(2, 3, 5), a[1:, ::2],
                                            a[None, 0], a.select(1, 2), a.narrow(0, 1, 2),
                                            a.flatten(), a.unbind(1)[0]))(t(T, A)))


def test_views_share_the_physical_storage():
    x = ember.tensor(A)
    out = EF.vmap(lambda a: a.t())(x)
    assert np.shares_memory(out.numpy(), x.numpy())


@needs_torch
def test_advanced_indexing():
    check(lambda T, F, N: F.vmap(lambda a: a[:, T.tensor([4, 0])] + a[T.tensor([2, 1])][0, 0])(
        t(T, A)))


@needs_torch
def test_cat_and_stack_with_unbatched_operand():
    check(lambda T, F, N: F.vmap(lambda a, m: (T.cat([a, m.t()[:3]], 0), T.stack([a, a], 1)),
                                 in_dims=(0, None))(t(T, A), t(T, M)))


# -- matmul family and nn


@needs_torch
def test_matmul_variants():
    check(lambda T, F, N: F.vmap(lambda a, w, v: (a @ v, T.mm(a, w.t()), v @ w.t(),
                                                  T.dot(v, v), T.outer(v, v[:3]),
                                                  T.addmm(a[:, :3], a, w.t()[:, :3])),
                                 in_dims=(0, 0, None))(t(T, A), t(T, W), t(T, V5)))


def test_linear_with_unbatched_weight_is_one_call():
    x, w = ember.tensor(A), ember.tensor(M.T.copy())
    r = _no_fallback(lambda: EF.vmap(lambda a: EFN.linear(a, w))(x))
    np.testing.assert_allclose(r.numpy(), A @ M, rtol=1e-12)


@needs_torch
def test_linear_with_batched_weight_and_bias():
    check(lambda T, F, N: F.vmap(N.linear)(t(T, A), t(T, W), t(T, A[:, 0, :].repeat(2, 1)[:,
                                                                                        :6])))


@needs_torch
def test_conv2d_batched_input_unbatched_weight():
    x = _rng.standard_normal((3, 2, 4, 6, 6))
    w = _rng.standard_normal((5, 4, 3, 3))
    check(lambda T, F, N: F.vmap(lambda a: N.conv2d(a, t(T, w), padding=1))(t(T, x)))


@needs_torch
def test_conv2d_batched_weight_folds_into_groups():
    x = _rng.standard_normal((3, 2, 4, 6, 6))
    w = _rng.standard_normal((3, 6, 2, 3, 3))
    b = _rng.standard_normal((3, 6))
    check(lambda T, F, N: F.vmap(lambda a, k, c: N.conv2d(a, k, c, stride=2, groups=2))(
        t(T, x), t(T, w), t(T, b)))


@needs_torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_per_example(reduction):
    logits = _rng.standard_normal((4, 3, 5))
    target = np.array([[1, 0, 4], [2, -100, 3], [0, 0, 0], [4, 4, 1]])
    check(lambda T, F, N: F.vmap(lambda x, y: N.cross_entropy(x, y, reduction=reduction))(
        t(T, logits), T.tensor(target)))


@needs_torch
def test_cross_entropy_per_example_gradients():
    logits = _rng.standard_normal((4, 3, 5))
    target = np.array([[1, 0, 4], [2, 1, 3], [0, 0, 0], [4, 4, 1]])
    check(lambda T, F, N: F.vmap(F.grad(lambda x, y: N.cross_entropy(x, y)))(
        t(T, logits), T.tensor(target)))


# -- fallback, errors, randomness


def test_fallback_warns_once_and_matches_loop():
    from ember.func import _batch_rules

    _batch_rules._warned.clear()
    x = ember.tensor(A)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = EF.vmap(lambda a: ember.block_diag(a[:, :3], a[:2]))(x)
        EF.vmap(lambda a: ember.block_diag(a[:, :3], a[:2]))(x)
    slow = [x for x in w if "performance drop" in str(x.message)]
    assert len(slow) == 1 and "aten::block_diag" in str(slow[0].message)
    want = np.zeros((4, 5, 8))
    want[:, :3, :3], want[:, 3:, 3:] = A[:, :, :3], A[:, :2]
    np.testing.assert_allclose(r.numpy(), want)


@needs_torch
def test_linalg_on_last_two_dims():
    sq = _rng.standard_normal((3, 4, 4)) + 4 * np.eye(4)
    check(lambda T, F, N: F.vmap(lambda m: (T.linalg.inv(m), T.linalg.det(m),
                                            T.linalg.eigvalsh(m + m.mT)))(t(T, sq)))


def test_item_raises_torch_error():
    with pytest.raises(RuntimeError, match="calling .item"):
        EF.vmap(lambda a: a.sum().item())(ember.tensor(A))


def test_data_dependent_control_flow_raises():
    def f(a):
        return a if a.sum() > 0 else -a

    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        EF.vmap(f)(ember.tensor(A))


def test_randomness_error_raises():
    with pytest.raises(RuntimeError, match="randomness error mode"):
        EF.vmap(lambda a: a + ember.rand(5))(ember.tensor(A))


def test_randomness_same_shares_draws():
    r = EF.vmap(lambda a: ember.randn(3, 5) + a * 0, randomness="same")(ember.tensor(A))
    assert r.shape == (4, 3, 5)
    assert bool((r[0] == r[1]).all()) and bool((r[0] == r[3]).all())


def test_randomness_different_draws_per_example():
    r = EF.vmap(lambda a: ember.rand_like(a), randomness="different")(ember.tensor(A))
    assert r.shape == (4, 3, 5) and not bool((r[0] == r[1]).all())
    d = EF.vmap(lambda a: EFN.dropout(a, 0.5), randomness="different")(ember.ones(4, 100))
    assert not bool((d[0] == d[1]).all())


# -- nesting, chunks, out_dims


@needs_torch
def test_nested_vmap_with_unbatched_middle_operand():
    check(lambda T, F, N: F.vmap(F.vmap(lambda a, v: a * v + a.sum(), in_dims=(1, None)),
                                 in_dims=(0, 0))(t(T, A), t(T, V43)))


def test_chunk_size_gives_the_same_result():
    x = ember.tensor(A)
    f = lambda a: a.softmax(-1) @ a.t()  # noqa: E731
    _same(EF.vmap(f, chunk_size=3)(x), EF.vmap(f)(x))


@needs_torch
def test_out_dims_nonzero():
    check(lambda T, F, N: F.vmap(lambda a: (a.sum(0), a), out_dims=(1, 2))(t(T, A)))


# -- autograd


@needs_torch
def test_per_sample_gradients_match_torch():
    x = _rng.standard_normal((6, 5))
    y = np.array([0, 2, 1, 1, 0, 2])
    w1, w2 = _rng.standard_normal((8, 5)), _rng.standard_normal((3, 8))

    def run(T, F, N):
        def loss(p, xi, yi):
            h = N.relu(N.linear(xi, p[0]))
            return N.cross_entropy(N.linear(h, p[1]).unsqueeze(0), yi.unsqueeze(0))

        return F.vmap(F.grad(loss), in_dims=(None, 0, 0))((t(T, w1), t(T, w2)), t(T, x),
                                                         T.tensor(y))

    check(run)


def test_per_sample_gradients_take_no_fallback():
    x, y = ember.tensor(A[:, 0]), ember.tensor([0, 1, 2, 1])
    w = ember.tensor(M.T.copy())

    def loss(w, xi, yi):
        return EFN.cross_entropy(EFN.linear(xi, w).unsqueeze(0), yi.unsqueeze(0))

    g = _no_fallback(lambda: EF.vmap(EF.grad(loss), in_dims=(None, 0, 0))(w, x, y))
    loop = ember.stack([EF.grad(loss)(w, x[i], y[i]) for i in range(4)])
    _same(g, loop)


@needs_torch
def test_jacrev_matches_torch():
    w = _rng.standard_normal((4, 5))
    check(lambda T, F, N: F.jacrev(lambda v: (t(T, w) @ v).tanh() * v[:4])(t(T, V5)))


@needs_torch
def test_grad_through_vmap():
    def run(T, F, N):
        x = t(T, A).requires_grad_()
        F.vmap(lambda a: (a.sin() @ a.t()).sum())(x).sum().backward()
        return x.grad

    check(run)


@needs_torch
def test_vmap_of_jacrev_of_jacrev():
    check(lambda T, F, N: F.vmap(F.jacrev(F.jacrev(lambda v: (v.sin() * v.prod()).sum())))(
        t(T, A[:, 0])))


# -- custom autograd.Function


class _Double(ember.autograd.Function):
    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g * 2


class _DoubleRule(_Double):
    calls = []

    @staticmethod
    def vmap(info, in_dims, x):
        _DoubleRule.calls.append((info.batch_size, in_dims))
        return x * 2, in_dims[0]


class _DoubleGenerated(_Double):
    generate_vmap_rule = True


def test_function_vmap_staticmethod_is_used():
    _DoubleRule.calls.clear()
    r = EF.vmap(_DoubleRule.apply)(ember.tensor(A))
    assert _DoubleRule.calls == [(4, (0,))]
    np.testing.assert_allclose(r.numpy(), 2 * A)


@pytest.mark.parametrize("cls", [_DoubleRule, _DoubleGenerated])
def test_function_under_vmap_of_grad(cls):
    x = ember.tensor(A)
    g = EF.vmap(EF.grad(lambda v: cls.apply(v).sin().sum()))(x)
    np.testing.assert_allclose(g.numpy(), 2 * np.cos(2 * A), rtol=1e-12)


def test_function_without_vmap_support_raises():
    with pytest.raises(RuntimeError, match="does not have vmap support"):
        EF.vmap(_Double.apply)(ember.tensor(A))


@needs_torch
def test_pooling_and_layer_norm_fold_batch_into_n():
    x = _rng.standard_normal((3, 2, 4, 6, 6))
    check(lambda T, F, N: F.vmap(lambda a: (N.max_pool2d(a, 2), N.avg_pool2d(a[0], 3),
                                            N.adaptive_avg_pool2d(a, 2),
                                            N.layer_norm(a, (6,))))(t(T, x)))


@needs_torch
def test_pooling_per_example_gradients():
    x = _rng.standard_normal((3, 2, 4, 6, 6))
    check(lambda T, F, N: F.vmap(F.grad(lambda a: (N.max_pool2d(a, 2).sum() +
                                                   N.avg_pool2d(a, 2).mean(dim=(1, 2)).sum() +
                                                   N.adaptive_avg_pool2d(a, 3).sum())))(
        t(T, x)))


@needs_torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_per_example_and_its_gradient(reduction):
    logits = _rng.standard_normal((4, 3, 5))
    target = np.array([[1, 0, 4], [2, -100, 3], [0, 0, 0], [4, 4, 1]])

    def run(T, F, N):
        def loss(x, y):
            return N.nll_loss(x.log_softmax(-1), y, reduction=reduction).sum()

        return F.vmap(loss)(t(T, logits), T.tensor(target)), \
            F.vmap(F.grad(loss))(t(T, logits), T.tensor(target))

    check(run)


@needs_torch
def test_gather_and_scatter_shift_dims():
    idx = np.array([[0, 2], [1, 1], [4, 0]])
    check(lambda T, F, N: F.vmap(lambda a: (a.gather(1, T.tensor(idx)),
                                            T.zeros(3, 5, dtype=T.float64).scatter(
                                                1, T.tensor(idx), a[:, :2]),
                                            a.scatter_add(1, T.tensor(idx), a[:, 1:3])))(
        t(T, A)))


@needs_torch
@pytest.mark.parametrize("argnums", [0, 1])
def test_conv2d_per_example_gradients(argnums):
    x = _rng.standard_normal((3, 2, 4, 6, 6))
    w = _rng.standard_normal((3, 5, 4, 3, 3))

    def run(T, F, N):
        def loss(k, a):
            return (N.conv2d(a, k, padding=1).tanh() ** 2).sum()

        return F.vmap(F.grad(loss, argnums=argnums))(t(T, w), t(T, x)), \
            F.vmap(F.grad(loss, argnums=argnums), in_dims=(None, 0))(t(T, w[0]), t(T, x))

    check(run)


@needs_torch
def test_einsum_index_select_and_getitem_gradient():
    check(lambda T, F, N: F.vmap(lambda a, m: (T.einsum("ij,jk->ik", a, m),
                                               T.einsum("ij,ij->i", a, a),
                                               a.index_select(1, T.tensor([4, 0, 4]))),
                                 in_dims=(0, None))(t(T, A), t(T, M)))
    check(lambda T, F, N: F.vmap(F.grad(lambda a: (a[1:, 2] * a[0, :2]).sum()))(t(T, A)))


@needs_torch
def test_addmm_with_batched_input_only():
    inp = _rng.standard_normal((3, 4, 4))
    check(lambda T, F, N: F.vmap(lambda i, m: T.addmm(i, m, m.t(), beta=2, alpha=0.5),
                                 in_dims=(0, None))(t(T, inp),
                                                    t(T, M[:, :4].T.copy()[:, :4])))


def _no_fallback(fn):
    """``fn()`` with the per-example fallback's warning made an error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="There is a performance drop")
        return fn()


_TRI = _rng.standard_normal((4, 3, 3)) + 3 * np.eye(3)
_RHS = _rng.standard_normal((4, 3, 2))


@needs_torch
@pytest.mark.parametrize("in_dims", [(0, 0), (None, 0), (0, None)])
@pytest.mark.parametrize("left", [True, False])
def test_solve_triangular_batched_matches_torch(left, in_dims):
    rhs = _RHS if left else _RHS.transpose(0, 2, 1)
    a = _TRI[0] if in_dims[0] is None else _TRI
    b = rhs[0] if in_dims[1] is None else rhs

    def run(T, F):
        return F.vmap(lambda x, y: T.linalg.solve_triangular(x, y, upper=True, left=left),
                      in_dims=in_dims)(T.tensor(a), T.tensor(b))

    _same(_no_fallback(lambda: run(ember, EF)), run(torch, TF))


@needs_torch
def test_linalg_cross_batched_matches_torch():
    a, b = _rng.standard_normal((4, 3, 5)), _rng.standard_normal((3, 1))

    def run(T, F):
        return F.vmap(lambda x, y: T.linalg.cross(x, y, dim=0), in_dims=(0, None))(
            T.tensor(a), T.tensor(b))

    _same(_no_fallback(lambda: run(ember, EF)), run(torch, TF))


@needs_torch
@pytest.mark.parametrize("kind", ["weighted_mean", "spatial_none"])
def test_cross_entropy_backward_batched_cotangent_matches_torch(kind):
    # jacrev: the cotangent is batched while the saved probabilities and targets are not
    x = _rng.standard_normal((4, 5)) if kind == "weighted_mean" else \
        _rng.standard_normal((3, 5, 2))

    def run(T, F):
        if kind == "weighted_mean":
            tgt, w = T.tensor(np.array([1, 4, 0, 4])), T.tensor(np.linspace(0.5, 2, 5))
            f = lambda v: T.nn.functional.cross_entropy(v, tgt, weight=w,  # noqa: E731
                                                        ignore_index=0)
        else:
            tgt = T.tensor(np.array([[1, 4], [0, 3], [2, 2]]))
            f = lambda v: T.nn.functional.cross_entropy(v, tgt, reduction="none")  # noqa: E731
        return F.jacrev(f)(T.tensor(x))

    _same(run(ember, EF), run(torch, TF))
