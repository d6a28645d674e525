"""An LSTM layer fed by an embedding hands on its input's gradient by vocabulary entry
where nobody observes it (NOTE [ An unobserved lookup's gradient ] in
ember/_ops/nn_rnn.py): the table's and every other gradient against PyTorch's and against
the true-gradient path, and the true gradient wherever something looks at it."""

import numpy as np
import pytest

import ember
from ember._ops import nn_rnn

VOCAB, HIDDEN = 11, 32


def _model(fw, batch_first=True, sparse=False, scale=False, padding_idx=None):
    nn = fw.nn
    fw.manual_seed(0)
    emb = nn.Embedding(VOCAB, 24, sparse=sparse, scale_grad_by_freq=scale,
                       padding_idx=padding_idx)
    rnn = nn.LSTM(24, HIDDEN, num_layers=2, batch_first=batch_first)
    rng = np.random.default_rng(0)
    with fw.no_grad():
        for p in list(emb.parameters()) + list(rnn.parameters()):
            p.copy_(fw.tensor(rng.uniform(-0.4, 0.4, tuple(p.shape)).astype(np.float32)))
    return emb, rnn


def _indices(batch_first=True):
    rng = np.random.default_rng(1)
    shape = (6, 24) if batch_first else (24, 6)   # 144 tokens: the lookup is folded
    return rng.integers(0, VOCAB, shape).astype(np.int64)


def _run(fw, observe=None, **kw):
    emb, rnn = _model(fw, **kw)
    idx = fw.tensor(_indices(kw.get("batch_first", True)))
    e = emb(idx)
    seen = {}
    if observe == "retain_grad":
        e.retain_grad()
    elif observe == "hook":
        e.register_hook(lambda g: seen.update(g=g.detach().clone()))
    elif observe == "node_hook":
        e.grad_fn.register_hook(lambda gin, gout: seen.update(g=gout[0].detach().clone()))
    out, (h, c) = rnn(e)
    loss = (out * out).sum() + out.sum() + (h * c).sum()
    if observe == "grad":
        g_e, g_w = fw.autograd.grad(loss, [e, emb.weight])
        return [g_e, g_w]
    loss.backward()
    got = [emb.weight.grad] + [p.grad for p in rnn.parameters()]
    if observe == "retain_grad":
        got.append(e.grad)
    elif observe in ("hook", "node_hook"):
        got.append(seen["g"])
    return got


def _np(t):
    return t.detach().numpy().astype(np.float64)


def _taken(monkeypatch):
    taken = []
    real = nn_rnn._gx_by_vocab
    monkeypatch.setattr(nn_rnn, "_gx_by_vocab",
                        lambda *a: taken.append(1) or real(*a))
    return taken


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=False), dict(scale=True),
                                dict(padding_idx=3)])
def test_table_gradient_by_vocabulary_matches_true_path(monkeypatch, kw):
    taken = _taken(monkeypatch)
    got = [_np(t) for t in _run(ember, **kw)]
    assert taken   # the layer fed by the embedding took it
    monkeypatch.setattr(nn_rnn, "_lookup_grad_unobserved", lambda x: False)
    want = [_np(t) for t in _run(ember, **kw)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    torch = pytest.importorskip("torch")
    ref = [_np(t) for t in _run(torch, **kw)]
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("observe", ["retain_grad", "hook", "node_hook", "grad"])
def test_observed_input_gradient_is_the_true_one(monkeypatch, observe):
    taken = _taken(monkeypatch)
    got = [_np(t) for t in _run(ember, observe)]
    assert not taken
    torch = pytest.importorskip("torch")
    ref = [_np(t) for t in _run(torch, observe)]
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)


def test_sparse_embedding_keeps_the_true_gradient(monkeypatch):
    taken = _taken(monkeypatch)
    emb, rnn = _model(ember, sparse=True)
    out, _ = rnn(emb(ember.tensor(_indices())))
    out.sum().backward()
    assert not taken
    assert emb.weight.grad.is_sparse


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_vocabulary_sums_equal_the_embeddings(dtype):
    # the one-pass sums by vocabulary entry add each entry's rows in lookup order, as the
    # embedding's backward does: the same bits
    pytest.importorskip("numba")
    from ember._kernels import _numba_rnn
    from ember._ops.nn_ops import _embedding_backward_kernel

    rng = np.random.default_rng(2)
    g = rng.standard_normal((300, 40)).astype(dtype)
    idx = rng.integers(0, 17, (20, 15)).T   # a transposed (batch_first) index array
    want = _embedding_backward_kernel(np, g, idx, num_weights=19, padding_idx=None)
    got = np.zeros((19, 40), dtype)
    _numba_rnn.rows_summed_by_index(g, idx.reshape(-1), got)
    np.testing.assert_array_equal(got, want)
