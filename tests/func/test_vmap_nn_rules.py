"""Batching rules of ember/func/_batch_rules_nn.py (selections and their values' gradient,
embedding, layer and batch norm's backward ops, attention, mode padding): no per-example
fallback, and values, per-sample gradients and ``in_dims``/``out_dims`` variations equal to
``torch.func``'s and to a loop of single calls."""

import warnings

import numpy as np
import pytest

import ember
import ember.func as EF
from tests.conftest import HAS_TORCH

if HAS_TORCH:
    import torch
    import torch.func as TF

pytestmark = [pytest.mark.skipif(not HAS_TORCH, reason="needs torch"),
              # torch's own fallback warnings (put, take); ember's are caught by _no_fallback
              pytest.mark.filterwarnings("ignore:There is a performance drop")]

_rng = np.random.default_rng(1818)
X = _rng.standard_normal((3, 4, 5))
XT = np.round(_rng.standard_normal((3, 4, 6)))  # ties, for mode
IDX = _rng.integers(0, 7, (3, 4))
TABLE = _rng.standard_normal((7, 5))
TABLES = _rng.standard_normal((3, 7, 5))
IMG = _rng.standard_normal((3, 2, 4, 5, 5))  # 3 examples of (N=2, C=4, 5, 5)
CH = _rng.standard_normal(4) + 1.5
CHS = _rng.standard_normal((3, 4)) + 1.5
Q = _rng.standard_normal((3, 2, 5, 4))  # 3 examples of (heads=2, L=5, E=4)
KV = _rng.standard_normal((3, 2, 6, 4))


def _no_fallback(fn):
    """``fn()``, failing if any op ran once per example."""
    from ember.func import _batch_rules

    _batch_rules._warned.clear()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
    slow = [str(x.message) for x in w if "performance drop" in str(x.message)]
    assert not slow, slow
    return r


def _np(a):
    if isinstance(a, dict):
        return {k: _np(v) for k, v in a.items()}
    if isinstance(a, (tuple, list)):
        return [_np(v) for v in a]
    return a.detach().numpy()


def _close(a, b, tol=1e-9):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _close(a[k], b[k], tol)
        return
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, tol)
        return
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _both(fn, *arrays, tol=1e-9):
    """``fn(T, F, *tensors)`` in ember (no fallback) and in torch, compared."""
    got = _no_fallback(lambda: fn(ember, EF, *(ember.tensor(a) for a in arrays)))
    _close(_np(got), _np(fn(torch, TF, *(torch.tensor(a) for a in arrays))), tol)
    return got


def _loop(f, *tensors):
    """The per-example loop ``vmap`` must equal (every input mapped over dim 0)."""
    outs = [f(*(t[i] for t in tensors)) for i in range(tensors[0].shape[0])]
    if isinstance(outs[0], (tuple, list)):
        return [ember.stack([o[j] for o in outs]) for j in range(len(outs[0]))]
    return ember.stack(outs)


# -- selections


SELECT = {
    "kthvalue": lambda T, x: x.kthvalue(2, dim=-1).values,
    "kthvalue_keepdim": lambda T, x: x.kthvalue(3, dim=0, keepdim=True).values,
    "median_dim": lambda T, x: x.median(dim=1).values,
    "median_all": lambda T, x: x.median(),
    "nanmedian_dim": lambda T, x: x.nanmedian(dim=-1).values,
    "mode": lambda T, x: T.round(x).mode(dim=-1).values,
    "max_dim": lambda T, x: x.max(dim=-1).values,
    "sort": lambda T, x: x.sort(dim=0).values,
    "topk": lambda T, x: x.topk(2, dim=-1).values,
}


@pytest.mark.parametrize("in_dim", [0, 2])
@pytest.mark.parametrize("name", sorted(SELECT))
def test_vmap_selection_matches_torch(name, in_dim):
    f = SELECT[name]
    _both(lambda T, F, x: F.vmap(lambda a: f(T, a), in_dims=in_dim)(x),
          np.moveaxis(X, 0, in_dim))


@pytest.mark.parametrize("name", sorted(SELECT))
def test_vmap_grad_selection_matches_torch(name):
    f = SELECT[name]
    _both(lambda T, F, x: F.vmap(F.grad(lambda a: (f(T, a) * 1.5).sin().sum()))(x), X)


def test_vmap_selection_indices_equal_loop():
    x = ember.tensor(XT)
    got = _no_fallback(lambda: EF.vmap(lambda a: a.mode(dim=-1))(x))
    want = _loop(lambda a: tuple(a.mode(dim=-1)), x)
    assert ember.equal(got.values, want[0]) and ember.equal(got.indices, want[1])


def test_vmap_selection_of_zero_dim_examples():
    got = _both(lambda T, F, x: F.vmap(lambda a: T.stack(
        [a.kthvalue(1, 0).values, a.median(0).values, a.mode(0).values]))(x), X[:, 0, 0])
    assert tuple(got.shape) == (3, 3)


def test_vmap_selection_out_dims():
    _both(lambda T, F, x: F.vmap(lambda a: tuple(a.kthvalue(2, dim=0)), out_dims=(1, 0))(x),
          X)


def test_vmap_selection_named_tuple_out_dims_raises():
    # a named tuple is not the plain tuple that out_dims describes (as torch)
    with pytest.raises(ValueError, match="out_dims is not compatible"):
        EF.vmap(lambda a: a.kthvalue(2, dim=0), out_dims=(1, 0))(ember.tensor(X))


# -- embedding


def test_vmap_embedding_batched_indices():
    _both(lambda T, F, i, w: F.vmap(lambda a: T.nn.functional.embedding(a, w))(i), IDX, TABLE)


@pytest.mark.parametrize("in_dims", [(0, 0), (None, 0), (0, None)])
def test_vmap_embedding_batched_table(in_dims):
    idx = IDX if in_dims[0] == 0 else IDX[0]
    table = TABLES if in_dims[1] == 0 else TABLE
    _both(lambda T, F, i, w: F.vmap(T.nn.functional.embedding, in_dims=in_dims)(i, w),
          idx, table)


@pytest.mark.parametrize("padding_idx", [None, 3])
def test_vmap_grad_embedding_per_sample(padding_idx):
    def run(T, F, i, w, g):
        def loss(w, i, g):
            return (T.nn.functional.embedding(i, w, padding_idx=padding_idx) * g).sum()
        return F.vmap(F.grad(loss), in_dims=(None, 0, 0))(w, i, g)

    _both(run, IDX, TABLE, X)


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_vmap_grad_embedding_batched_table(padding_idx):
    # ensembling: a table per model, the gradient of each model's table
    def run(T, F, i, w):
        def loss(w, i):
            return T.nn.functional.embedding(i, w, padding_idx=padding_idx).square().sum()
        return F.vmap(F.grad(loss))(w, i)

    _both(run, IDX, TABLES)


def test_vmap_embedding_grad_equals_loop():
    i, w, g = ember.tensor(IDX), ember.tensor(TABLE), ember.tensor(X)

    def loss(w, i, g):
        return (ember.nn.functional.embedding(i, w, padding_idx=0) * g).sum()

    got = _no_fallback(lambda: EF.vmap(EF.grad(loss), in_dims=(None, 0, 0))(w, i, g))
    want = _loop(lambda i, g: EF.grad(loss)(w, i, g), i, g)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_jacrev_embedding_table():
    _both(lambda T, F, i, w: F.jacrev(lambda w: T.nn.functional.embedding(i, w).sum(0))(w),
          IDX[0], TABLE)


# -- layer norm's backward


@pytest.mark.parametrize("affine", [True, False])
def test_vmap_grad_layer_norm_per_sample(affine):
    def run(T, F, x, w, b):
        def loss(p, x):
            y = T.nn.functional.layer_norm(x, (5,), *(p if affine else (None, None)))
            return (y * T.arange(5.0, dtype=y.dtype)).sin().sum()
        return F.vmap(F.grad(loss, argnums=(0, 1)), in_dims=(None, 0))((w, b), x)

    _both(run, X, X[0, 0] + 1, X[1, 1])


def test_vmap_grad_layer_norm_batched_weight():
    def run(T, F, x, w, b):
        def loss(w, b, x):
            return T.nn.functional.layer_norm(x, (4, 5), w, b).pow(3).sum()
        return F.vmap(F.grad(loss, argnums=(0, 1, 2)))(w, b, x)

    _both(run, X, X + 1, X * 0.5)


def test_vmap_grad_layer_norm_single_row_examples():
    # examples of the normalised shape only: no leading rows to sum the weight's grad over
    def run(T, F, x, w):
        def loss(w, x):
            return T.nn.functional.layer_norm(x, (5,), w).pow(3).sum()
        return F.vmap(F.grad(loss, argnums=(0, 1)), in_dims=(None, 0))(w, x)

    _both(run, X[:, 0], CH[:1].repeat(5))


# -- batch norm


def test_vmap_batch_norm_training_matches_torch():
    _both(lambda T, F, x, w, b: F.vmap(lambda x: T.nn.functional.batch_norm(
        x, None, None, w, b, training=True))(x), IMG, CH, CH - 2)


@pytest.mark.parametrize("in_dims", [(0, 0, 0), (0, None, None), (None, 0, 0)])
def test_vmap_batch_norm_eval_running_stats(in_dims):
    def run(T, F, x, m, v):
        return F.vmap(lambda x, m, v: T.nn.functional.batch_norm(x, m, v, training=False),
                      in_dims=in_dims)(x, m, v)

    x = IMG if in_dims[0] == 0 else IMG[0]
    m = CHS if in_dims[1] == 0 else CH
    v = CHS if in_dims[2] == 0 else CH
    _both(run, x, m, v)


def test_vmap_grad_batch_norm_per_sample():
    def run(T, F, x, w, b):
        def loss(p, x):
            y = T.nn.functional.batch_norm(x, None, None, p[0], p[1], training=True)
            return (y * T.arange(5.0, dtype=y.dtype)).sin().sum()
        return F.vmap(F.grad(loss, argnums=(0, 1)), in_dims=(None, 0))((w, b), x)

    _both(run, IMG, CH, CH - 2)


def test_vmap_grad_batch_norm_batched_weight_2d_input():
    def run(T, F, x, w):
        def loss(w, x):
            return T.nn.functional.batch_norm(x, None, None, w, training=True).pow(3).sum()
        return F.vmap(F.grad(loss, argnums=(0, 1)))(w, x)

    _both(run, X, X[:, 0] + 2)


def test_vmap_grad_batch_norm_module_per_sample():
    # the per-sample-gradient recipe for a network with batch norm
    def run(T, F, x):
        T.manual_seed(0)
        m = T.nn.Sequential(T.nn.Conv2d(4, 3, 3), T.nn.BatchNorm2d(3), T.nn.ReLU()).double()
        F.replace_all_batch_norm_modules_(m)
        params = {k: v.detach() for k, v in m.named_parameters()}

        def loss(p, x):
            return F.functional_call(m, p, (x,)).square().mean()
        return F.vmap(F.grad(loss), in_dims=(None, 0))(params, x)

    got = _no_fallback(lambda: run(ember, EF, ember.tensor(IMG)))
    want = run(torch, TF, torch.tensor(IMG))
    assert sorted(got) == sorted(want)
    for k in got:
        assert tuple(got[k].shape) == tuple(want[k].shape) == (3,) + tuple(want[k].shape[1:])


# -- attention


@pytest.mark.parametrize("in_dims", [(0, 0, 0), (0, None, None), (None, 0, 0)])
def test_vmap_attention_matches_torch(in_dims):
    def run(T, F, q, k, v):
        return F.vmap(T.nn.functional.scaled_dot_product_attention, in_dims=in_dims)(q, k, v)

    q = Q if in_dims[0] == 0 else Q[0]
    k = KV if in_dims[1] == 0 else KV[0]
    v = KV * 0.5 if in_dims[2] == 0 else KV[0] * 0.5
    _both(run, q, k, v)


def test_vmap_attention_with_mask_and_broadcast():
    def run(T, F, q, k, m):
        return F.vmap(lambda q, k, m: T.nn.functional.scaled_dot_product_attention(
            q, k[0], k[0], attn_mask=m))(q, k, m)

    _both(run, Q, KV, _rng.standard_normal((3, 5, 6)))


def test_vmap_attention_causal_out_dims():
    _both(lambda T, F, q: F.vmap(lambda q: T.nn.functional.scaled_dot_product_attention(
        q, q, q, is_causal=True), out_dims=2)(q), Q)


def test_vmap_grad_attention_per_sample():
    def run(T, F, q, k, w):
        def loss(w, q, k):
            o = T.nn.functional.scaled_dot_product_attention(q @ w, k, k)
            return o.square().sum()
        return F.vmap(F.grad(loss, argnums=(0, 1, 2)), in_dims=(None, 0, 0))(w, q, k)

    _both(run, Q, KV, _rng.standard_normal((4, 4)))


def test_vmap_grad_attention_float_mask():
    def run(T, F, q, m):
        def loss(m, q):
            return T.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=m).sum()
        return F.vmap(F.grad(loss), in_dims=(None, 0))(m, q)

    _both(run, Q, _rng.standard_normal((5, 5)))


# -- mode padding


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_vmap_pad_matches_torch(mode):
    _both(lambda T, F, x: F.vmap(lambda a: T.nn.functional.pad(a, (2, 1), mode=mode),
                                 in_dims=1)(x), X)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_vmap_grad_pad_matches_torch(mode):
    _both(lambda T, F, x: F.vmap(F.grad(lambda a: T.nn.functional.pad(
        a[None], (1, 2, 2, 1), mode=mode).pow(3).sum()))(x), X)


# -- randomness with the rules above


def test_vmap_dropout_before_embedding_randomness_error():
    i, w = ember.tensor(IDX), ember.tensor(TABLE)
    f = EF.vmap(lambda i: ember.nn.functional.dropout(ember.nn.functional.embedding(i, w)))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        f(i)


@pytest.mark.parametrize("randomness", ["same", "different"])
def test_vmap_grad_dropout_layer_norm_randomness(randomness):
    # "same": every example draws the one mask; "different": one mask each (as torch)
    x = ember.tensor(np.ones((3, 4, 5)))
    w = ember.ones(5, dtype=ember.float64)

    def loss(w, x):
        y = ember.nn.functional.layer_norm(x * ember.arange(5.0, dtype=x.dtype), (5,), w)
        return ember.nn.functional.dropout(y, 0.5).sum()

    g = _no_fallback(lambda: EF.vmap(EF.grad(loss), in_dims=(None, 0),
                                     randomness=randomness)(w, x))
    same = all(ember.equal(g[0], g[i]) for i in range(1, 3))
    assert same == (randomness == "same")


def test_rule_names_cover_the_tutorials_ops():
    from ember.func._batch_rules import fallback_names

    slow = set(fallback_names())
    for n in ("kthvalue", "median", "mode", "_take_along", "_put_along", "embedding",
              "embedding_backward", "native_layer_norm_backward", "native_batch_norm",
              "native_batch_norm_backward", "scaled_dot_product_attention",
              "scaled_dot_product_attention_backward", "pad", "_index", "index_put",
              "take", "put", "_view_scatter", "_repeat_backward", "_unfold_backward",
              "im2col", "col2im", "trace", "linalg_solve", "cdist"):
        assert n not in slow, n


# -- gathers, index ops and linear algebra

M3 = _rng.standard_normal((3, 4, 4)) + 4 * np.eye(4)
V34 = _rng.standard_normal((3, 4))
ALG = {
    "trace": (lambda T, a, b: T.trace(a), ("m",)),
    "vdot": (lambda T, a, b: T.vdot(a[0], b), ("m", "v")),
    "kron": (lambda T, a, b: T.kron(a[:2, :3], b[:2]), ("m", "v")),
    "kron_ranks": (lambda T, a, b: T.kron(a, b), ("m", "v")),
    "tensordot": (lambda T, a, b: T.tensordot(a, b, dims=([1], [0])), ("m", "v")),
    "tensordot_int": (lambda T, a, b: T.tensordot(a, a.T, dims=2), ("m",)),
    "addr": (lambda T, a, b: T.addr(a, b, a[1], beta=0.5, alpha=2), ("m", "v")),
    "addr_beta0": (lambda T, a, b: T.addr(a, b, b, beta=0), ("m", "v")),
    "solve_vec": (lambda T, a, b: T.linalg.solve(a, b), ("m", "v")),
    "solve_mat": (lambda T, a, b: T.linalg.solve(a, a[:, :2] * b[0]), ("m", "v")),
    "solve_right": (lambda T, a, b: T.linalg.solve(a, a[:2] + b, left=False), ("m", "v")),
    "cdist": (lambda T, a, b: T.cdist(a, a[:3] * b[0]), ("m", "v")),
    "take_along_dim": (lambda T, a, b: T.take_along_dim(a, a.argsort(dim=-1), dim=-1),
                       ("m",)),
    "take_along_flat": (lambda T, a, b: T.take_along_dim(a, T.tensor([3, 0, 5])), ("m",)),
    "index_add": (lambda T, a, b: a.index_add(1, T.tensor([0, 2, 0]), a[:, :3] * b[0],
                                              alpha=2), ("m", "v")),
    "index_copy": (lambda T, a, b: a.index_copy(0, T.tensor([3, 1]), a[:2] * b[1]),
                   ("m", "v")),
    "index_fill": (lambda T, a, b: a.index_fill(1, T.tensor([0, 3]), -1.5) * b, ("m", "v")),
    "put": (lambda T, a, b: a.put(T.tensor([-1, 3, 3]), b[:3] * 2, accumulate=True),
            ("m", "v")),
    "take": (lambda T, a, b: T.take(a, T.tensor([[-2, 5], [0, 0]])) * b[:2], ("m", "v")),
    "fill": (lambda T, a, b: a.clone().fill_(b[1]) * a, ("m", "v")),
    "ldexp": (lambda T, a, b: T.ldexp(a * b, T.tensor([1, 2, 0, 3])), ("m", "v")),
    "repeat": (lambda T, a, b: a.repeat(2, 1, 3) * b.repeat(3), ("m", "v")),
    "tensor_unfold": (lambda T, a, b: a.unfold(1, 2, 1) * b[:3, None], ("m", "v")),
    "diff": (lambda T, a, b: T.diff(a * b, dim=0), ("m", "v")),
    "cumprod": (lambda T, a, b: T.cumprod(a * b * (a > -0.5), dim=1), ("m", "v")),
    "nn_unfold_fold": (lambda T, a, b: T.nn.functional.fold(
        T.nn.functional.unfold((a * b)[None, None], 2), (4, 4), 2), ("m", "v")),
    "narrow_select": (lambda T, a, b: a.narrow(1, 1, 2).sum(-1) * a.select(0, 2) * b,
                      ("m", "v")),
}


def test_vmap_fill_batched_value_into_unbatched_self_raises():
    for T, F in ((ember, EF), (torch, TF)):
        with pytest.raises(RuntimeError, match="more elements than `self`"):
            F.vmap(lambda a, b: a.clone().fill_(b[1]), in_dims=(None, 0))(
                T.zeros(4, 4), T.ones(3, 4))


def _alg_args(in_dims):
    return (M3 if in_dims[0] == 0 else M3[0]), (V34 if in_dims[1] == 0 else V34[0])


@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)])
@pytest.mark.parametrize("name", sorted(ALG))
def test_vmap_linalg_and_index_ops_match_torch(name, in_dims):
    f = ALG[name][0]
    if in_dims == (None, 0) and (ALG[name][1] == ("m",) or name == "fill"):
        pytest.skip("the only tensor would be unbatched (fill_: an error, tested below)")
    _both(lambda T, F, a, b: F.vmap(lambda a, b: f(T, a, b), in_dims=in_dims)(a, b),
          *_alg_args(in_dims))


@pytest.mark.parametrize("name", sorted(ALG))
def test_vmap_grad_linalg_and_index_ops_match_torch(name):
    f = ALG[name][0]
    _both(lambda T, F, a, b: F.vmap(F.grad(lambda a, b: f(T, a, b).sin().sum(),
                                           argnums=(0, 1)))(a, b), M3, V34)


# -- per-example weight gradients of conv2d and of a linear on one row


@pytest.mark.parametrize("conv", [dict(), dict(stride=2, padding=1, dilation=2),
                                  dict(padding=(2, 0), stride=(1, 2))])
def test_vmap_grad_conv2d_weight_per_sample(conv):
    # two images per example: the columns of both meet in one product per example
    def run(T, F, x, w):
        def loss(w, x):
            return T.nn.functional.conv2d(x, w, **conv).sin().sum()
        return F.vmap(F.grad(loss), in_dims=(None, 0))(w, x)

    _both(run, IMG[:, :, :, :5, :5], _rng.standard_normal((3, 4, 3, 3)))


def test_vmap_grad_linear_on_one_row_float32():
    # the weight gradient of a linear on a (1, d) row is a batch of outer products
    x = _rng.standard_normal((4, 1, 300)).astype(np.float32)
    w = _rng.standard_normal((64, 300)).astype(np.float32)

    def run(T, F, x, w):
        return F.vmap(F.grad(lambda w, x: T.nn.functional.linear(x, w).tanh().sum()),
                      in_dims=(None, 0))(w, x)

    _both(run, x, w, tol=1e-5)


@pytest.mark.parametrize("in_dims", [(None, 0, None), (None, 0, 0), (None, None, 0),
                                     (0, 0, None), (0, None, 0)])
def test_vmap_linear_in_dims_match_torch(in_dims):
    # an unbatched input against per-example weights is one GEMM on the stacked weights
    x = X[0] if in_dims[0] is None else X
    w = _rng.standard_normal((6, 5)) if in_dims[1] is None else _rng.standard_normal((3, 6, 5))
    b = _rng.standard_normal(6) if in_dims[2] is None else _rng.standard_normal((3, 6))
    _both(lambda T, F, x, w, b: F.vmap(T.nn.functional.linear, in_dims=in_dims)(x, w, b),
          x, w, b)


# -- forward mode under vmap (jacfwd batches the basis tangents)

JACFWD = {
    "layer_norm": lambda T, x: T.nn.functional.layer_norm(x, (5,), x[0] + 1, x[1]),
    "batch_norm": lambda T, x: T.nn.functional.batch_norm(x, None, None, x[0], training=True),
    "embedding": lambda T, x: T.nn.functional.embedding(T.tensor([[1, 0], [3, 1]]), x),
    "attention": lambda T, x: T.nn.functional.scaled_dot_product_attention(
        x[None], x[None], x[None, :, :2]),
    "median": lambda T, x: x.median(dim=0).values * x.kthvalue(2, dim=1).values[:, None],
    "reflect_pad": lambda T, x: T.nn.functional.pad(x[None], (2, 1), mode="reflect"),
    "kron_trace": lambda T, x: T.kron(x[:2, :2], x[2:, 3:]) * T.trace(x[:, :4]),
}


@pytest.mark.parametrize("name", sorted(JACFWD))
def test_jacfwd_matches_torch(name):
    f = JACFWD[name]
    _both(lambda T, F, x: F.jacfwd(lambda x: f(T, x))(x), X[0])


# -- advanced indexing (NOTE [ Batched advanced indices ])

IB = _rng.integers(-4, 4, (3, 2))  # per-example indices into a dim of size 4 or 5
INDEXING = {
    "first": lambda T, a, j: a[j],
    "after_slice": lambda T, a, j: a[:, j],
    "two_adjacent": lambda T, a, j: a[j, j + 1],
    "separated": lambda T, a, j: a[j, None, j],
    "range_and_batched": lambda T, a, j: a[T.arange(2), j],
    "ellipsis": lambda T, a, j: a[..., j],
    "none_then_index": lambda T, a, j: a[None, :, j.view(2, 1)],
    "constant_index": lambda T, a, j: a[:, T.tensor([[0, -1], [2, 2]])] * j.sum(),
    "int_and_index": lambda T, a, j: a[1, j],
}


@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)])
@pytest.mark.parametrize("name", sorted(INDEXING))
def test_vmap_advanced_indexing_matches_torch(name, in_dims):
    f = INDEXING[name]
    a = X[:, :4] if in_dims[0] == 0 else X[0, :4]
    j = IB if in_dims[1] == 0 else IB[0]
    _both(lambda T, F, a, j: F.vmap(lambda a, j: f(T, a, j), in_dims=in_dims)(a, j), a, j)


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_vmap_grad_advanced_indexing_matches_torch(name):
    # the gradient is an index_put with accumulation: repeated indices add up
    f = INDEXING[name]
    _both(lambda T, F, a, j: F.vmap(F.grad(lambda a, j: f(T, a, j).sin().sum()))(a, j),
          X[:, :4], IB)


def test_vmap_hand_written_nll_matches_torch():
    def run(T, F, x, y):
        def loss(w, x, y):
            logp = (x @ w).log_softmax(-1)
            return -logp[T.arange(x.shape[0]), y].mean()
        return F.vmap(F.grad(loss), in_dims=(None, 0, 0))(T.ones(5, 3, dtype=x.dtype) / 4,
                                                         x, y)

    _both(run, X, _rng.integers(0, 3, (3, 4)))


@pytest.mark.parametrize("name", ["first", "after_slice", "separated", "constant_index"])
def test_vmap_grad_advanced_indexing_unbatched_input(name):
    # one input, per-example indices: each example's gradient of the shared input
    f = INDEXING[name]
    _both(lambda T, F, a, j: F.vmap(F.grad(lambda a, j: f(T, a, j).sin().sum()),
                                    in_dims=(None, 0))(a, j), X[0, :4], IB)


def test_jacrev_advanced_indexing():
    _both(lambda T, F, a, j: F.jacrev(lambda a: INDEXING["after_slice"](T, a, j))(a),
          X[0, :4], IB[0])


def test_vmap_grad_lstm_cell_per_sample_equals_loop():
    # an LSTMCell unrolled over 3 steps: the examples' rows are more rows of each step
    # (torch 2.13's own vmap of this program raises inside its LSTMCell: compared with the
    # loop of single-example gradients instead)
    cell = ember.nn.LSTMCell(5, 3).double()
    params = {k: v.detach() for k, v in cell.named_parameters()}

    def loss(p, x):
        h = c = ember.zeros(1, 3, dtype=x.dtype)
        for t in range(x.shape[0]):
            h, c = EF.functional_call(cell, p, (x[t:t + 1], (h, c)))
        return h.square().sum() + c.sum()

    x = ember.tensor(X[:, :3])
    got = _no_fallback(lambda: EF.vmap(EF.grad(loss), in_dims=(None, 0))(params, x))
    each = [EF.grad(loss)(params, x[i]) for i in range(3)]
    for k in params:
        want = ember.stack([g[k] for g in each])
        np.testing.assert_allclose(got[k].numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_vmap_lstm_cell_matches_loop():
    cell = ember.nn.LSTMCell(5, 3).double()
    x, h = ember.tensor(X[:, :2]), ember.tensor(X[:, :2, :3])

    def step(x, h):
        return tuple(cell(x, (h, h * 0.5)))

    got = _no_fallback(lambda: EF.vmap(step)(x, h))
    want = _loop(step, x, h)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12,
                                   atol=1e-12)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_vmap_grad_lstm_module_per_sample(bidirectional):
    # nn.LSTM's fused layer runs as its steps under vmap (torch falls back per example, and
    # only in float32: its float64 fallback raises)
    def run(T, F, x, state):
        m = T.nn.LSTM(5, 3, batch_first=True, bidirectional=bidirectional)
        m.load_state_dict({k: T.tensor(v) for k, v in state.items()})
        params = {k: v.detach() for k, v in m.named_parameters()}

        def loss(p, x):
            out, (h, c) = F.functional_call(m, p, (x.unsqueeze(0),))
            return out.sin().sum() + h.sum() + c.square().sum()
        return F.vmap(F.grad(loss), in_dims=(None, 0))(params, x)

    torch.manual_seed(0)
    ref = torch.nn.LSTM(5, 3, batch_first=True, bidirectional=bidirectional)
    state = {k: v.detach().numpy() for k, v in ref.state_dict().items()}
    x = X.astype(np.float32)
    got = _no_fallback(lambda: run(ember, EF, ember.tensor(x), state))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = run(torch, TF, torch.tensor(x), state)
    _close(_np(got), _np(want), tol=1e-5)
