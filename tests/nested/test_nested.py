"""ember.nested against torch.nested: the same programs, the same numbers.

Each case builds the same components in both frameworks, runs one function written against
``T`` (ember or torch) and compares every component of the result and the gradients.
"""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
LENS = (2, 5, 3)


def _arrays(trailing=(4,), lens=LENS, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n,) + trailing).astype(np.float32) for n in lens]


def _nt(T, arrays, layout="jagged", requires_grad=False):
    return T.nested.nested_tensor([T.tensor(a) for a in arrays],
                                  layout=getattr(T, layout), requires_grad=requires_grad)


def _parts(x):
    """A result as a list of NumPy arrays (components of a nested tensor, or the dense one)."""
    if isinstance(x, (tuple, list)):
        out = []
        for y in x:
            out += _parts(y)
        return out
    if not hasattr(x, "is_nested"):
        return [np.asarray(x)]
    if x.is_nested:
        return [c.detach().numpy() for c in x.unbind()]
    return [x.detach().numpy()]


def _same(a, b, atol=1e-5):
    pa, pb = _parts(a), _parts(b)
    assert len(pa) == len(pb)
    for x, y in zip(pa, pb):
        assert x.shape == y.shape
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=atol)


def _linear(T, d_in, d_out, seed=1):
    rng = np.random.default_rng(seed)
    w = T.tensor(rng.standard_normal((d_out, d_in)).astype(np.float32), requires_grad=True)
    b = T.tensor(rng.standard_normal(d_out).astype(np.float32), requires_grad=True)
    return w, b


def _weighted(T, p):
    """A loss whose gradient is not trivially constant: the values times 1, 2, 3, ..."""
    v = p.values() if p.is_nested else p
    return (v * T.arange(1.0, v.numel() + 1).reshape(v.shape) / v.numel()).sum()


CASES = {
    "relu_mul": lambda T, nt: (nt * 2 - 1).relu(),
    "exp_add_scalar_left": lambda T, nt: 1.5 + nt.exp() / 3,
    "add_dense_last": lambda T, nt: nt + T.arange(4.0),
    "add_dense_batch": lambda T, nt: nt * T.arange(3.0).reshape(3, 1, 1),
    "add_dense_one": lambda T, nt: nt - T.ones(1, 1, 4),
    "where": lambda T, nt: T.where(nt > 0, nt, T.zeros(()) - 1),
    "masked_fill": lambda T, nt: nt.masked_fill(nt < 0, 0.5),
    "gelu_silu": lambda T, nt: T.nn.functional.gelu(nt) + T.nn.functional.silu(nt),
    "linear": lambda T, nt: T.nn.functional.linear(nt, *_linear(T, 4, 6)),
    "matmul_dense": lambda T, nt: nt @ T.ones(4, 2),
    "layer_norm": lambda T, nt: T.nn.functional.layer_norm(nt, (4,)),
    "softmax_last": lambda T, nt: nt.softmax(-1),
    "log_softmax_last": lambda T, nt: T.log_softmax(nt, 2),
    "sum_last": lambda T, nt: nt.sum(-1),
    "sum_last_keepdim": lambda T, nt: nt.sum(-1, keepdim=True),
    "sum_ragged": lambda T, nt: nt.sum(1),
    "mean_ragged": lambda T, nt: nt.mean(dim=1),
    "amax_last": lambda T, nt: nt.amax(-1),
    "max_last": lambda T, nt: nt.max(-1),
    "sum_all": lambda T, nt: nt.sum(),
    "batch_and_ragged": lambda T, nt: nt.sum((0, 1)),
    "transpose_back": lambda T, nt: nt.unsqueeze(-1).transpose(1, 2).transpose(1, 2).squeeze(-1),
    "view_heads": lambda T, nt: nt.view(3, -1, 2, 2).transpose(1, 2).sum(-1),
    "reshape_j": lambda T, nt: nt.reshape(nt.size(0), nt.size(1), 2, 2)[..., 0],
    "unflatten_flatten": lambda T, nt: nt.unflatten(-1, (2, 2)).flatten(-2, -1) * 2,
    "chunk": lambda T, nt: nt.chunk(2, -1)[1] + 0,
    "cat_last": lambda T, nt: T.cat([nt, nt * 2], -1),
    "unbind_index": lambda T, nt: nt[1] * 3,
    "getitem_ellipsis": lambda T, nt: nt[..., 1:3],
    "dropout_eval": lambda T, nt: T.nn.functional.dropout(nt, 0.5, training=False),
    "ones_like": lambda T, nt: T.ones_like(nt) + nt,
    "padded": lambda T, nt: T.nested.to_padded_tensor(nt * 1, -1.0),
    "padded_size": lambda T, nt: T.nested.to_padded_tensor(nt * 1, 0.0, (3, 6, 4)),
    "clone_detach": lambda T, nt: nt.clone().detach() + nt,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_jagged_matches_torch(name):
    fn = CASES[name]
    arrays = _arrays()
    outs, grads = [], []
    for T in (ember, torch):
        nt = _nt(T, arrays, requires_grad=True)
        out = fn(T, nt)
        outs.append(out)
        parts = out if isinstance(out, tuple) else (out,)
        loss = sum(_weighted(T, p) for p in parts if p.requires_grad)
        if isinstance(loss, int):
            grads.append(None)
            continue
        try:
            loss.backward()
        except (NotImplementedError, RuntimeError, ValueError):  # torch lacks some backwards
            assert T is torch
            grads = []
            break
        grads.append(nt.grad)
    _same(outs[0], outs[1])
    if len(grads) < 2:
        return
    if grads[1] is None:
        assert grads[0] is None
    else:
        _same(grads[0], grads[1])


def test_softmax_over_the_ragged_dim():
    """Softmax along the ragged dimension is each sequence's own softmax; its gradient is
    checked against the per-sequence computation (torch 2.13's own gradient of this op
    differs from the per-sequence one, so torch is not the oracle for it)."""
    arrays = _arrays()
    e = _nt(ember, arrays, requires_grad=True)
    t = _nt(torch, arrays)
    _same(ember.nn.functional.softmax(e, dim=1), torch.nn.functional.softmax(t, dim=1))
    _weighted(ember, e.softmax(1)).backward()
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    _weighted(torch, torch.cat([x.softmax(0) for x in xs])).backward()
    for g, x in zip(e.grad.unbind(), xs):
        np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_shape_and_nested_int():
    arrays = _arrays()
    e, t = _nt(ember, arrays), _nt(torch, arrays)
    assert len(e.shape) == len(t.shape) == 3
    assert (e.shape[0], e.shape[2]) == (t.shape[0], t.shape[2])
    assert str(e.shape[1]).startswith("j")
    assert e.shape[1] == e.shape[1] and e.shape[1] != 5
    assert e.dim() == t.dim() and len(e) == len(t) and e.numel() == t.numel()
    assert e.offsets().tolist() == t.offsets().tolist()
    assert e.values().shape == tuple(t.values().shape)
    assert e.layout is ember.jagged and e.is_nested and not ember.ones(1).is_nested
    # the same offsets: the same symbol; new offsets: a new one
    assert (e * 2).shape[1] == e.shape[1]
    other = _nt(ember, arrays)
    assert other.shape[1] != e.shape[1]
    with pytest.raises(RuntimeError, match="binary pointwise"):
        e + other
    with pytest.raises(RuntimeError):
        t + _nt(torch, arrays)


def _torch_per_sequence(comps, fn):
    """torch's reference for ops its CPU nested tensors lack: ``fn`` on each sequence."""
    xs = [torch.tensor(c, requires_grad=True) for c in comps]
    return xs, [fn(x) for x in xs]


def test_attention_per_sequence():
    """SDPA on nested (B, H, j, D) is attention within each sequence (torch 2.13 has no CPU
    kernel for nested SDPA, so the reference is torch's dense SDPA per sequence)."""
    rng = np.random.default_rng(3)
    comps = [rng.standard_normal((n, 2, 8)).astype(np.float32) for n in (3, 6)]
    q = ember.nested.nested_tensor([ember.tensor(c) for c in comps], layout=ember.jagged,
                                   requires_grad=True)
    x = q.transpose(1, 2)
    assert x.dim() == 4 and x._ragged_idx == 2
    o = ember.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True)
    o = o.transpose(1, 2)
    assert o.values().shape == (9, 2, 8)
    _weighted(ember, o).backward()

    def ref(c):
        h = c.transpose(0, 1)
        return torch.nn.functional.scaled_dot_product_attention(h, h, h,
                                                                is_causal=True).transpose(0, 1)
    xs, outs = _torch_per_sequence(comps, ref)
    _weighted(torch, torch.cat(outs)).backward()
    for a, b in zip(o.unbind(), outs):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    for g, xt in zip(q.grad.unbind(), xs):
        np.testing.assert_allclose(g.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_transformer_block_on_variable_lengths():
    """A pre-norm self-attention block on a nested batch equals the same block run on each
    sequence alone as a dense batch of one, in ember and in torch."""
    rng = np.random.default_rng(4)
    comps = [rng.standard_normal((n, 8)).astype(np.float32) for n in (4, 1, 7)]
    results = {}
    for T in (ember, torch):
        ln = T.nn.LayerNorm(8)
        qkv = T.nn.Linear(8, 24)
        proj = T.nn.Linear(8, 8)
        with T.no_grad():
            for p, seed in zip(list(ln.parameters()) + list(qkv.parameters()) +
                               list(proj.parameters()), range(10, 20)):
                p.copy_(T.tensor(np.random.default_rng(seed).standard_normal(
                    tuple(p.shape)).astype(np.float32)))

        def block(x, T=T, ln=ln, qkv=qkv, proj=proj):
            h = qkv(ln(x))
            q, k, v = h.chunk(3, -1)
            split = [t.unflatten(-1, (2, 4)).transpose(1, 2) for t in (q, k, v)]
            a = T.nn.functional.scaled_dot_product_attention(*split).transpose(1, 2)
            return x + proj(a.flatten(-2, -1))

        if T is ember:
            nt = T.nested.nested_tensor([T.tensor(c) for c in comps], layout=T.jagged)
            results[T] = [c.detach().numpy() for c in block(nt).unbind()]
        else:
            results[T] = [block(T.tensor(c)[None])[0].detach().numpy() for c in comps]
    for a, b in zip(results[ember], results[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_strided_layout():
    rng = np.random.default_rng(5)
    comps = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3), (4, 5))]
    e = ember.nested.nested_tensor([ember.tensor(c) for c in comps])
    t = torch.nested.nested_tensor([torch.tensor(c) for c in comps])
    assert e.layout is ember.strided and e.is_nested
    assert e.size(0) == t.size(0) == 2 and e.dim() == t.dim() == 3
    for x in (e, t):
        with pytest.raises(RuntimeError):
            _ = x.shape
        with pytest.raises(RuntimeError, match="irregular"):
            x.size(1)
    _same(ember.nested.to_padded_tensor(e, -1.0), torch.nested.to_padded_tensor(t, -1.0))
    _same(e.relu() * 2, t.relu() * 2)
    _same(e.softmax(-1), t.softmax(-1))
    _same(e.transpose(1, 2), t.transpose(1, 2))
    assert repr(e).startswith("nested_tensor([\n  tensor(")
    with pytest.raises(NotImplementedError):
        e.sum()
    with pytest.raises(NotImplementedError):
        t.sum()


def test_constructors_match_torch():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    for T in (ember, torch):
        v = T.tensor(x)
        a = T.nested.nested_tensor_from_jagged(v, T.tensor([0, 2, 5]))
        assert [c.shape[0] for c in a.unbind()] == [2, 3]
        b = T.nested.nested_tensor_from_jagged(v, lengths=T.tensor([1, 4]))
        assert b.offsets().tolist() == [0, 1, 5]
    d = np.arange(40, dtype=np.float32).reshape(2, 5, 4)
    res = []
    for T in (ember, torch):
        n = T.nested.narrow(T.tensor(d), 1, T.tensor([0, 1]), T.tensor([2, 3]),
                            layout=T.jagged)
        assert not n.is_contiguous()
        res.append((n, n.offsets().tolist(), n.lengths().tolist()))
        with pytest.raises(RuntimeError):
            T.nested.narrow(T.tensor(d), 1, 1, 3)
    assert res[0][1:] == res[1][1:]
    _same(res[0][0], res[1][0])
    _same(res[0][0] * 2, res[1][0] * 2)
    md = np.array([[1., 2., 3.], [4., 5., 6.]], np.float32)
    _same(ember.nested.masked_select(ember.tensor(md), ember.tensor(md) > 2.5),
          torch.nested.masked_select(torch.tensor(md), torch.tensor(md) > 2.5))
    for T in (ember, torch):
        with pytest.raises(RuntimeError, match="single ragged"):
            T.nested.nested_tensor([T.ones(2, 3), T.ones(4, 5)], layout=T.jagged)
        with pytest.raises(RuntimeError, match="same dim"):
            T.nested.nested_tensor([T.ones(2, 3), T.ones(4, 3, 1)], layout=T.jagged)
        assert T.nested.nested_tensor([[1, 2], [3]], layout=T.jagged).dtype == T.int64


def test_as_nested_tensor_keeps_graph():
    grads = []
    for T in (ember, torch):
        x = T.ones(2, 3, requires_grad=True)
        nt = T.nested.as_nested_tensor([x, T.zeros(1, 3)], layout=T.jagged)
        assert nt.requires_grad and not nt.is_leaf
        (nt * T.arange(3.0)).values().sum().backward()
        grads.append(x.grad.numpy())
        leaf = T.nested.nested_tensor([x, T.zeros(1, 3)], layout=T.jagged)
        assert not leaf.requires_grad and leaf.is_leaf
    np.testing.assert_array_equal(grads[0], grads[1])


def test_autograd_grad_and_backward_with_nested():
    arrays = _arrays()
    res = []
    for T in (ember, torch):
        nt = _nt(T, arrays, requires_grad=True)
        y = (nt * nt).relu()
        g, = T.autograd.grad(y.values().sum(), nt)
        assert g.is_nested
        z = nt.exp()
        z.backward(T.ones_like(z))
        res.append((g, nt.grad))
    _same(res[0][0], res[1][0])
    _same(res[0][1], res[1][1])


def test_unsupported_op_raises_like_torch():
    arrays = _arrays()
    for T in (ember, torch):
        nt = _nt(T, arrays)
        with pytest.raises(NotImplementedError):
            nt.det()
        with pytest.raises(RuntimeError):
            nt[1:]
        with pytest.raises(RuntimeError):
            nt.flatten(1, 2)
        with pytest.raises(RuntimeError):
            nt.sum((1, 2))


def test_module_training_step_on_nested_batch():
    """An MLP trained on a nested batch with an optimizer: same parameters as torch."""
    arrays = _arrays(trailing=(6,), lens=(3, 1, 4), seed=7)
    finals = []
    for T in (ember, torch):
        net = T.nn.Sequential(T.nn.Linear(6, 5), T.nn.GELU(), T.nn.LayerNorm(5),
                              T.nn.Linear(5, 1))
        with T.no_grad():
            for i, p in enumerate(net.parameters()):
                p.copy_(T.tensor(np.random.default_rng(i).standard_normal(
                    tuple(p.shape)).astype(np.float32) * 0.3))
        opt = T.optim.Adam(net.parameters(), lr=0.01)
        nt = _nt(T, arrays)
        for _ in range(3):
            opt.zero_grad()
            loss = (net(nt).values() - 1).pow(2).mean()
            loss.backward()
            opt.step()
        finals.append([p.detach().numpy().copy() for p in net.parameters()])
    for a, b in zip(*finals):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_deepcopy_and_pickle_round_trip():
    import copy
    import pickle

    nt = _nt(ember, _arrays())
    for c in (copy.deepcopy(nt), pickle.loads(pickle.dumps(nt))):
        _same(c, nt)
        assert c.offsets().tolist() == nt.offsets().tolist()


def test_docstrings():
    for name in ember.nested.__all__:
        obj = getattr(ember.nested, name)
        assert obj.__doc__ and "Example" in obj.__doc__, name


def test_strided_multihead_attention_as_the_tutorial_writes_it():
    """The nested-tensor tutorial's multi-head attention (strided layout, reshape with an
    inherited -1, matmul of two nested tensors, softmax) gives torch's numbers."""
    import math

    rng = np.random.default_rng(9)
    W = [rng.standard_normal((8, 8)).astype(np.float32) for _ in range(4)]
    b = [rng.standard_normal(8).astype(np.float32) for _ in range(4)]
    seqs = [rng.standard_normal((n, 8)).astype(np.float32) for n in (3, 1, 5)]
    outs = []
    for T in (ember, torch):
        F = T.nn.functional
        Wt, bt = [T.tensor(w) for w in W], [T.tensor(x) for x in b]
        x = T.nested.nested_tensor([T.tensor(s) for s in seqs])
        N, heads, E = x.size(0), 2, 8
        q, k, v = (F.linear(x, Wt[i], bt[i]).reshape(N, -1, heads, E // heads).transpose(1, 2)
                   for i in range(3))
        attn = F.softmax(T.matmul(q, k.transpose(-1, -2)) / math.sqrt(E // heads), dim=-1)
        o = T.matmul(attn, v).transpose(1, 2).reshape(N, -1, E)
        outs.append(F.linear(o, Wt[3], bt[3]))
        with pytest.raises(RuntimeError):
            x.reshape(-1, -1, heads, E // heads)
    _same(outs[0], outs[1], atol=1e-4)
