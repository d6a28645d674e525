"""Sparse gradients (issue 17): ``Embedding(sparse=True)`` / ``embedding_bag(sparse=True)``
give COO gradients in PyTorch's form, autograd sums and keeps them as PyTorch does, and the
optimizers take or refuse them as PyTorch's do.

Each scenario is written once against a framework module ``T`` (ember, or torch when it is
installed) so the two runs can be compared; a few facts are also checked without torch.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.filterwarnings("ignore:Sparse")


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


def _parts(g):
    """(indices, values, nnz, coalesced, shape) of a COO tensor, as plain Python/NumPy."""
    return (g._indices().numpy().tolist(), _np(g._values()), g._nnz(), g.is_coalesced(),
            tuple(g.shape))


def _same_parts(a, b, exact=True):
    pa, pb = _parts(a), _parts(b)
    assert pa[0] == pb[0] and pa[2:] == pb[2:]
    if exact:
        np.testing.assert_array_equal(pa[1], pb[1])
    else:
        np.testing.assert_allclose(pa[1], pb[1], rtol=1e-6, atol=1e-7)


def _table(T, rows=6, cols=2, **kw):
    e = T.nn.Embedding(rows, cols, sparse=True, **kw)
    with T.no_grad():
        e.weight.copy_(T.arange(rows * cols, dtype=T.float32).reshape(rows, cols).sin())
    return e


# -- the gradient an embedding gives ----------------------------------------------------------


def test_embedding_sparse_grad_without_torch():
    e = _table(ember, 10, 3, padding_idx=2)
    e(ember.tensor([[1, 2, 1], [5, 2, 0]])).sum().backward()
    g = e.weight.grad
    assert g.is_sparse and g.layout is ember.sparse_coo and not g.is_coalesced()
    assert g._indices().tolist() == [[1, 1, 5, 0]] and g._nnz() == 4
    c = g.coalesce()
    assert c.indices().tolist() == [[0, 1, 5]]
    assert c.values().tolist() == [[1.0] * 3, [2.0] * 3, [1.0] * 3]
    np.testing.assert_array_equal(g.to_dense().numpy()[1], [2.0, 2.0, 2.0])


def test_dense_embedding_grad_stays_dense():
    e = ember.nn.Embedding(5, 2)
    e(ember.tensor([1, 1])).sum().backward()
    assert type(e.weight.grad) is ember.Tensor and not e.weight.grad.is_sparse


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("idx_dtype", ["int64", "int32"])
def test_embedding_sparse_grad_matches_torch(torch, padding_idx, idx_dtype):
    def run(T):
        e = _table(T, 6, 3, padding_idx=padding_idx)
        idx = T.tensor([[1, 2, 5], [5, 2, 0]], dtype=getattr(T, idx_dtype))
        (e(idx) * T.arange(18.0).reshape(2, 3, 3)).sum().backward()
        return e.weight.grad

    _same_parts(run(ember), run(torch))


def test_embedding_grad_of_padding_only_and_one_lookup(torch):
    for ids, pad in (([2, 2], 2), ([4], None)):
        grads = []
        for T in (ember, torch):
            w = T.nn.Parameter(T.ones(5, 2, dtype=T.float64))
            T.nn.functional.embedding(T.tensor(ids), w, padding_idx=pad, sparse=True).sum() \
                .backward()
            grads.append(w.grad)
        _same_parts(*grads)
        assert repr(grads[0]).replace("ember.", "torch.") == repr(grads[1])


def test_printed_gradient_matches_torch(torch):
    out = []
    for T in (ember, torch):
        e = _table(T, 5, 2)
        e(T.tensor([[0, 3], [3, 1]])).sum().backward()
        out.append((repr(e.weight.grad), repr(e.weight.grad.coalesce()),
                    repr(e.weight.grad.to_dense()), str(e.weight.grad.layout)))
    assert [s.replace("ember.", "torch.") for s in out[0]] == list(out[1])


def test_scale_grad_by_freq(torch):
    def dense(T):
        e = T.nn.Embedding(5, 2, scale_grad_by_freq=True, padding_idx=3)
        (e(T.tensor([1, 1, 3, 3, 0])) * T.arange(10.0).reshape(5, 2)).sum().backward()
        return _np(e.weight.grad)

    np.testing.assert_allclose(dense(ember), dense(torch), rtol=1e-6)
    e = ember.nn.Embedding(5, 2, scale_grad_by_freq=True, sparse=True)
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
        e(ember.tensor([1, 1])).sum().backward()


# -- autograd: sums, .grad, hooks, autograd.grad ----------------------------------------------


def _accumulations(T):
    F = T.nn.functional
    out = {}
    e = _table(T, 10, 3)
    e(T.tensor([1, 2, 1])).sum().backward()
    e(T.tensor([1, 2, 1])).sum().backward()       # broadcast values: concatenated
    e(T.tensor([4])).sum().backward()
    out["concat"] = e.weight.grad
    m = _table(T, 10, 3)
    m(T.tensor([1, 2, 1])).mul(2).sum().backward()
    m(T.tensor([2, 1, 7])).mul(3).sum().backward()  # contiguous values: merged
    out["merge"] = m.weight.grad
    w = T.nn.Parameter(T.ones(4, 2))
    (F.embedding(T.tensor([1, 1]), w, sparse=True).sum()
     + F.embedding(T.tensor([0, 2]), w, sparse=True).mul(3).sum()).backward()
    out["one graph"] = w.grad
    w.grad = None
    (F.embedding(T.tensor([0, 2]), w, sparse=True).mul(3).sum()
     + F.embedding(T.tensor([3, 1]), w, sparse=True).mul(2).sum()).backward()
    out["one graph merged"] = w.grad
    w.grad = None
    loss = F.embedding(T.tensor([3, 1]), w, sparse=True).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    out["retain_graph"] = w.grad
    return out


def test_sparse_gradients_sum_as_torch(torch):
    a, b = _accumulations(ember), _accumulations(torch)
    for key in a:
        _same_parts(a[key], b[key])


def test_sparse_and_dense_gradients_mix(torch):
    def run(T):
        F = T.nn.functional
        res = []
        w = T.nn.Parameter(T.ones(4, 2))
        (w * 2).sum().backward()
        F.embedding(T.tensor([1, 1]), w, sparse=True).sum().backward()
        res.append(w.grad)
        w.grad = None
        F.embedding(T.tensor([1, 1]), w, sparse=True).sum().backward()
        (w * 2).sum().backward()
        res.append(w.grad)
        w.grad = None
        (F.embedding(T.tensor([1, 1]), w, sparse=True).sum() + (w * 2).sum()).backward()
        res.append(w.grad)
        return res

    for x, y in zip(run(ember), run(torch)):
        assert not x.is_sparse and not y.is_sparse
        np.testing.assert_array_equal(_np(x), _np(y))


def test_autograd_grad_hooks_and_custom_function(torch):
    def run(T):
        F = T.nn.functional
        seen = []
        w = T.nn.Parameter(T.ones(4, 2))
        (g,) = T.autograd.grad(F.embedding(T.tensor([3, 1]), w, sparse=True).sum(), w)
        w.register_hook(lambda grad: seen.append((grad.is_sparse, grad._nnz())))
        F.embedding(T.tensor([3, 1, 3]), w, sparse=True).sum().backward()

        class Scatter(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return T.sparse_coo_tensor(T.tensor([[0, 2]]), T.tensor([5.0, 6.0]), (4,))

        x = T.ones(4, requires_grad=True)
        Scatter.apply(x).sum().backward()
        Scatter.apply(x).sum().backward()
        return g, seen, x.grad

    (ga, sa, xa), (gb, sb, xb) = run(ember), run(torch)
    _same_parts(ga, gb)
    assert sa == sb == [(True, 3)]
    _same_parts(xa, xb)


def test_create_graph_keeps_a_sparse_grad(torch):
    def run(T):
        w = T.nn.Parameter(T.ones(4, 2, dtype=T.float64))
        T.nn.functional.embedding(T.tensor([3, 1]), w, sparse=True).sum().backward(
            create_graph=True)
        return w.grad

    _same_parts(run(ember), run(torch))


@pytest.mark.parametrize("owner", ["module", "optimizer"])
def test_zero_grad_of_a_sparse_gradient(torch, owner):
    def run(T):
        e = _table(T)
        opt = T.optim.SGD(e.parameters(), lr=0.1)
        zero = e.zero_grad if owner == "module" else opt.zero_grad
        e(T.tensor([1, 3, 1])).sum().backward()
        zero(set_to_none=False)
        kept = e.weight.grad
        zeroed = (kept._nnz(), kept.is_coalesced(), tuple(kept._indices().shape))
        e(T.tensor([1, 3, 1])).sum().backward()
        after = (e.weight.grad is kept, e.weight.grad._nnz(), e.weight.grad.is_coalesced())
        zero()
        return zeroed, after, e.weight.grad is None

    assert run(ember) == run(torch)


def test_sparse_sums_follow_torch(torch):
    def run(T):
        a = T.sparse_coo_tensor(T.tensor([[0, 2]]), T.ones(2, 2) * 3, (4, 2))
        b = T.sparse_coo_tensor(T.tensor([[1, 1]]), T.ones(1, 2).expand(2, 2), (4, 2))
        c = T.sparse_coo_tensor(T.tensor([[3, 1]]), T.ones(2, 2), (4, 2))
        x = T.sparse_coo_tensor(T.tensor([[1, 1, 1]]), T.ones(1, 2).expand(3, 2), (2, 2))
        z = T.sparse_coo_tensor(T.zeros(1, 0, dtype=T.int64), T.zeros(0, 2), (4, 2))
        return [a + b, b + a, a + c, c + a, x + x, a.coalesce() + c.coalesce(), z + a, a + z]

    for x, y in zip(run(ember), run(torch)):
        _same_parts(x, y)


# -- embedding_bag ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_sparse_grad_matches_torch(torch, mode, padding_idx):
    def run(T):
        bag = T.nn.EmbeddingBag(6, 2, mode=mode, sparse=True, padding_idx=padding_idx)
        with T.no_grad():
            bag.weight.copy_(T.arange(12.0).reshape(6, 2))
        out = bag(T.tensor([1, 2, 4, 4, 3, 1]), T.tensor([0, 2, 2, 5]))
        (out * T.arange(8.0).reshape(4, 2)).sum().backward()
        return bag.weight.grad

    _same_parts(run(ember), run(torch), exact=False)


def test_embedding_bag_per_sample_weights_2d_and_max(torch):
    def run(T):
        bag = T.nn.EmbeddingBag(6, 2, mode="sum", sparse=True)
        bag(T.tensor([1, 2, 4, 4]), T.tensor([0, 2]),
            per_sample_weights=T.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
        mean = T.nn.EmbeddingBag(6, 2, mode="mean", sparse=True)
        mean(T.tensor([[1, 2], [4, 4]])).sum().backward()
        w = T.nn.Parameter(T.ones(5, 2))
        T.embedding_bag(w, T.tensor([1, 2, 1]), T.tensor([0, 1]), False, 2, True)[0] \
            .sum().backward()
        return bag.weight.grad, mean.weight.grad, w.grad

    a, b = run(ember), run(torch)
    _same_parts(a[0], b[0])
    _same_parts(a[1], b[1])
    # aten's max mode: one entry per lookup as well (torch's values there are the bag's
    # gradient for every lookup, not only the maximum's; ember's are the maximum's)
    assert a[2]._indices().tolist() == b[2]._indices().tolist() == [[1, 2, 1]]
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        ember.nn.EmbeddingBag(6, 2, mode="max", sparse=True)(ember.tensor([1]),
                                                             ember.tensor([0]))


# -- optimizers -------------------------------------------------------------------------------


_OPTIMIZERS = [
    ("SGD", {}), ("SGD", {"momentum": 0.9}), ("SGD", {"momentum": 0.9, "nesterov": True}),
    ("SGD", {"momentum": 0.9, "dampening": 0.5}), ("SGD", {"momentum": 0.9, "maximize": True}),
    ("SGD", {"foreach": True}), ("Adagrad", {}), ("Adagrad", {"lr_decay": 0.1}),
    ("Adagrad", {"maximize": True}), ("SparseAdam", {}), ("SparseAdam", {"maximize": True}),
]


def _steps(T, name, kw, n=4):
    e = _table(T)
    opt = getattr(T.optim, name)(e.parameters(), lr=0.1, **kw)
    for k in range(n):
        opt.zero_grad()
        (e(T.tensor([1, 3, 1, k % 6])) ** 2).sum().backward()
        opt.step()
    state = {key: (value if isinstance(value, (int, float)) else value.layout)
             for key, value in opt.state[e.weight].items()}
    return _np(e.weight), state


@pytest.mark.parametrize("name,kw", _OPTIMIZERS)
def test_optimizer_steps_with_sparse_grads_match_torch(torch, name, kw):
    (wa, sa), (wb, sb) = _steps(ember, name, kw), _steps(torch, name, kw)
    np.testing.assert_allclose(wa, wb, rtol=1e-5, atol=1e-6)
    assert {k: str(v) for k, v in sa.items()} == {k: str(v).replace("torch.", "ember.")
                                                  for k, v in sb.items()}


def test_optimizer_untouched_rows_stay_put():
    e = _table(ember)
    before = e.weight.detach().clone()
    opt = ember.optim.SparseAdam(e.parameters(), lr=0.1)
    e(ember.tensor([1, 3])).sum().backward()
    opt.step()
    changed = (e.weight.detach() != before).any(1).tolist()
    assert changed == [False, True, False, True, False, False]


@pytest.mark.parametrize("name,kw", [
    ("Adam", {}), ("AdamW", {}), ("RMSprop", {}), ("Adamax", {}), ("NAdam", {}),
    ("RAdam", {}), ("Adadelta", {}), ("ASGD", {}), ("Rprop", {}), ("Adafactor", {}),
    ("SGD", {"weight_decay": 0.1}), ("SGD", {"fused": True}),
    ("Adagrad", {"weight_decay": 0.1}), ("Adagrad", {"fused": True}),
])
def test_optimizers_refusing_sparse_grads(torch, name, kw):
    def message(T):
        e = _table(T)
        e(T.tensor([1, 3])).sum().backward()
        with pytest.raises(RuntimeError) as info:
            getattr(T.optim, name)(e.parameters(), lr=0.1, **kw).step()
        return str(info.value)

    assert message(ember) == message(torch)


def test_sparse_adam_refuses_dense_grads():
    w = ember.nn.Parameter(ember.ones(3))
    (w * w).sum().backward()
    opt = ember.optim.SparseAdam([w])
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        opt.step()
    assert not opt.state[w] and w.tolist() == [1.0, 1.0, 1.0]


def test_lbfgs_reads_sparse_grads_dense(torch):
    def run(T):
        e = _table(T)
        opt = T.optim.LBFGS(e.parameters(), max_iter=3)

        def closure():
            opt.zero_grad()
            loss = e(T.tensor([1, 3, 1])).pow(2).sum()
            loss.backward()
            return loss

        opt.step(closure)
        return _np(e.weight)

    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("clip", ["norm", "value"])
def test_clipping_sparse_grads_raises_as_torch(torch, clip):
    def kind(T):
        e = _table(T)
        e(T.tensor([1, 3])).sum().backward()
        with pytest.raises(Exception) as info:
            if clip == "norm":
                T.nn.utils.clip_grad_norm_(e.parameters(), 1.0)
            else:
                T.nn.utils.clip_grad_value_(e.parameters(), 0.1, foreach=False)
        return type(info.value), str(info.value).split("'")[1]

    assert kind(ember) == kind(torch)


# -- whole programs ---------------------------------------------------------------------------


def _skip_gram(T, steps=50):
    """The core of a word2vec program: skip-gram, negative sampling, SparseAdam."""
    F = T.nn.functional
    rng = random.Random(0)
    text = ("the quick brown fox jumps over the lazy dog while the cat sleeps on the warm "
            "mat and the dog dreams of the fox that jumps over the moon").split()
    vocab = sorted(set(text))
    ids = [vocab.index(w) for w in text]
    pairs = [(ids[i], ids[j]) for i in range(len(ids))
             for j in range(max(0, i - 2), min(len(ids), i + 3)) if i != j]
    V, D, K, B = len(vocab), 8, 3, 16
    center = T.nn.Embedding(V, D, sparse=True)
    context = T.nn.Embedding(V, D, sparse=True)
    with T.no_grad():
        for table in (center, context):
            table.weight.copy_(T.tensor([[rng.uniform(-0.5, 0.5) / D for _ in range(D)]
                                         for _ in range(V)]))
    opt = T.optim.SparseAdam(list(center.parameters()) + list(context.parameters()), lr=0.05)
    losses, shapes = [], []
    for _ in range(steps):
        batch = [pairs[rng.randrange(len(pairs))] for _ in range(B)]
        c = T.tensor([p[0] for p in batch])
        o = T.tensor([p[1] for p in batch])
        neg = T.tensor([[rng.randrange(V) for _ in range(K)] for _ in range(B)])
        opt.zero_grad()
        u = center(c)
        pos = F.logsigmoid((u * context(o)).sum(1))
        negs = F.logsigmoid(-T.bmm(context(neg), u.unsqueeze(2)).squeeze(2)).sum(1)
        loss = -(pos + negs).mean()
        loss.backward()
        g = context.weight.grad
        shapes.append((g._nnz(), g.is_coalesced(), g._indices()[0].tolist()))
        losses.append(loss.item())
        opt.step()
    return losses, shapes, _np(center.weight), _np(context.weight)


def test_word2vec_program_matches_torch(torch):
    la, sa, ca, xa = _skip_gram(ember)
    lb, sb, cb, xb = _skip_gram(torch)
    assert sa == sb  # the same sparse gradients, entry for entry, at every step
    np.testing.assert_allclose(la, lb, rtol=1e-5)
    np.testing.assert_allclose(ca, cb, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(xa, xb, rtol=1e-4, atol=1e-6)


def _factorise(T, steps=40, mode="mean"):
    """The core of a recommender: users as bags of items (EmbeddingBag(sparse=True)), items
    through sparse embeddings, SGD with momentum."""
    rng = random.Random(1)
    n_items, D = 15, 4
    history = [[rng.randrange(n_items) for _ in range(rng.randint(1, 4))] for _ in range(12)]
    ratings = [(u, i, float(rng.randint(1, 5))) for u in range(12)
               for i in rng.sample(range(n_items), 3)]

    def init(rows, cols):
        return T.tensor([[rng.gauss(0.0, 0.1) for _ in range(cols)] for _ in range(rows)])

    user_bag = T.nn.EmbeddingBag(n_items, D, mode=mode, sparse=True)
    item = T.nn.Embedding(n_items, D, sparse=True)
    with T.no_grad():
        user_bag.weight.copy_(init(n_items, D))
        item.weight.copy_(init(n_items, D))
    params = list(user_bag.parameters()) + list(item.parameters())
    opt = T.optim.SGD(params, lr=0.05, momentum=0.9)
    losses, shapes = [], []
    for _ in range(steps):
        batch = [ratings[rng.randrange(len(ratings))] for _ in range(8)]
        flat, offsets = [], []
        for u, _, _ in batch:
            offsets.append(len(flat))
            flat.extend(history[u])
        opt.zero_grad()
        pred = (user_bag(T.tensor(flat), T.tensor(offsets))
                * item(T.tensor([b[1] for b in batch]))).sum(1) + 3.0
        loss = T.nn.functional.mse_loss(pred, T.tensor([b[2] for b in batch]))
        loss.backward()
        g = user_bag.weight.grad
        shapes.append((g._nnz(), g.is_coalesced(), g._indices()[0].tolist()))
        losses.append(loss.item())
        opt.step()
    buf = opt.state[user_bag.weight]["momentum_buffer"]
    return losses, shapes, _np(user_bag.weight), _np(item.weight), buf._nnz()


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_recommender_program_matches_torch(torch, mode):
    la, sa, ua, ia, na = _factorise(ember, mode=mode)
    lb, sb, ub, ib, nb = _factorise(torch, mode=mode)
    assert sa == sb and na == nb
    np.testing.assert_allclose(la, lb, rtol=1e-5)
    np.testing.assert_allclose(ua, ub, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ia, ib, rtol=1e-4, atol=1e-6)
