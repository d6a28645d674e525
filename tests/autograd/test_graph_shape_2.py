"""The backward graph of calls ember composes from several ops, as code walking
``grad_fn.next_functions`` sees it, against PyTorch's: one node with torch's name, edges
(types, order, None slots, input_nr) and saved values where torch records one op
(NOTE [ One node for a composite ] in ember/autograd/_composite_node.py), torch's steps where
its CPU kernels compose (LSTM and GRU cells), and layers built from those (attention,
transformer layers, losses with each reduction)."""

import pytest

import ember

torch = pytest.importorskip("torch")


def _walk(fn, depth=0, limit=9):
    """The graph below ``fn`` as lines: node class, then each edge's input_nr and node."""
    if fn is None:
        return ["  " * depth + "None"]
    lines = ["  " * depth + type(fn).__name__]
    if depth < limit:
        for nxt, nr in fn.next_functions:
            lines.append("  " * depth + f" [{nr}]")
            lines += _walk(nxt, depth + 1, limit)
    return lines


def _graphs(expr):
    out = []
    for T in (torch, ember):
        T.manual_seed(0)
        x = T.randn(3, 4, dtype=T.float64).add(0.1).requires_grad_(True)
        y = eval(expr, {"T": T, "F": T.nn.functional, "nn": T.nn, "x": x})
        ys = y if isinstance(y, (tuple, list)) else (y,)
        out.append([_walk(t.grad_fn) for t in ys if getattr(t, "grad_fn", None) is not None])
    return out


EXPRS = [
    # one node with two outputs
    "T.var_mean(x)", "T.var_mean(x, 0)", "T.var_mean(x, 1, keepdim=True)", "T.std_mean(x)",
    "T.std_mean(x, 1)", "T.aminmax(x)", "T.aminmax(x, dim=0)", "T.aminmax(x, dim=1, keepdim=True)",
    # resampling, normalisation, shuffles, transposed convolution
    "F.interpolate(x.view(1, 1, 3, 4), scale_factor=2)",
    "F.interpolate(x.view(1, 1, 3, 4), size=(5, 6), mode='bilinear')",
    "F.interpolate(x.view(1, 1, 3, 4), scale_factor=2, mode='bicubic', align_corners=True)",
    "F.interpolate(x.view(1, 1, 3, 4), size=(5, 6), mode='nearest-exact')",
    "F.interpolate(x.view(1, 1, 3, 4), size=(2, 2), mode='bilinear', antialias=True)",
    "F.interpolate(x.unsqueeze(0), scale_factor=2, mode='linear')",
    "F.interpolate(x.unsqueeze(0), size=5)",
    "F.interpolate(x.view(1, 1, 1, 3, 4), scale_factor=2, mode='trilinear')",
    "F.grid_sample(x.view(1, 1, 3, 4), x[:2, :2].reshape(1, 1, 2, 2).expand(1, 2, 2, 2).tanh(),"
    " align_corners=False)",
    "F.grid_sample(x.view(1, 1, 3, 4), x.detach()[:2, :2].reshape(1, 1, 2, 2).expand(1, 2, 2, 2),"
    " mode='nearest', align_corners=True)",
    "F.group_norm(x.unsqueeze(-1), 2, x[0], x[1])", "F.group_norm(x.unsqueeze(-1), 2)",
    "nn.GroupNorm(2, 4).double()(x)",
    "F.pixel_shuffle(x.view(1, 4, 3, 1), 2)",
    "F.pixel_unshuffle(x.view(1, 1, 3, 4)[..., :2, :], 2)",
    "F.conv_transpose2d(x.view(1, 1, 3, 4), x[:2, :2].reshape(1, 1, 2, 2))",
    "F.conv_transpose2d(x.view(1, 1, 3, 4), x[:2, :2].reshape(1, 1, 2, 2).expand(1, 2, 2, 2),"
    " x[0, :2])",
    "nn.ConvTranspose2d(1, 2, 2).double()(x.view(1, 1, 3, 4))",
    "nn.ConvTranspose2d(1, 2, 2).double()(x.view(1, 3, 4))",
    "nn.ConvTranspose1d(3, 2, 2).double()(x.unsqueeze(0))",
    "F.scaled_dot_product_attention(x.view(1, 1, 3, 4), x.view(1, 1, 3, 4), x.view(1, 1, 3, 4))",
    # recurrent cells, as torch's CPU cells compose them
    "nn.LSTMCell(4, 3).double()(x)", "nn.LSTMCell(4, 3).double()(x, (x[:, :3], x[:, 1:]))",
    "nn.LSTMCell(4, 3, bias=False).double()(x)",
    "nn.GRUCell(4, 3).double()(x)", "nn.RNNCell(4, 3).double()(x)",
    "nn.RNNCell(4, 3, nonlinearity='relu').double()(x)",
    # attention layers: the heads' output viewed, not copied, into the output projection
    "nn.MultiheadAttention(4, 2).double()(x.unsqueeze(1), x.unsqueeze(1), x.unsqueeze(1))",
    "nn.MultiheadAttention(4, 2, batch_first=True).double()(x.unsqueeze(0), x.unsqueeze(0),"
    " x.unsqueeze(0), need_weights=False)[0]",
    "nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0).double()(x.unsqueeze(1))",
    "nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True, norm_first=True,"
    " activation='gelu').double()(x.unsqueeze(0))",
    "nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0).double()(x.unsqueeze(1), x.unsqueeze(1))",
    # losses whose target or Scalar operand has no edge; nll over images viewed to 4 dims
    "nn.MarginRankingLoss()(x[0], x[1], T.ones(4, dtype=T.float64))",
    "nn.SoftMarginLoss(reduction='sum')(x, x.detach().sign())",
    "F.pairwise_distance(x, x.flip(0))", "F.rms_norm(x, (4,), x[0])",
    "nn.CrossEntropyLoss(label_smoothing=0.1)(x, T.tensor([0, 1, 3]))",
    "nn.CrossEntropyLoss(label_smoothing=0.1, reduction='sum')(x, T.tensor([0, 1, 3]))",
    "F.cross_entropy(x[0], x[1].detach().softmax(0))",
]
for _red in ("mean", "sum", "none"):
    EXPRS += [
        f"nn.CosineEmbeddingLoss(reduction='{_red}')(x, x.flip(0), T.tensor([1.0, -1.0, 1.0],"
        " dtype=T.float64))",
        f"nn.TripletMarginLoss(reduction='{_red}')(x, x.flip(0), x * 2)",
        f"nn.CrossEntropyLoss(reduction='{_red}')(x, x.detach().softmax(1))",
    ]
for _red in ("mean", "sum", "none"):
    EXPRS += [
        f"nn.CrossEntropyLoss(reduction='{_red}')(x.view(1, 3, 4), T.tensor([[0, 1, 2, 0]]))",
        f"nn.NLLLoss(reduction='{_red}')(x.view(1, 3, 4), T.tensor([[0, 1, 2, 0]]))",
        f"nn.CrossEntropyLoss(reduction='{_red}')(x.view(1, 3, 2, 2), T.zeros(1, 2, 2,"
        " dtype=T.long))",
        f"nn.CrossEntropyLoss(reduction='{_red}')(x.view(1, 3, 1, 2, 2), T.zeros(1, 1, 2, 2,"
        " dtype=T.long))",
        f"nn.CrossEntropyLoss(reduction='{_red}')(x, T.tensor([0, 1, 3]))",
    ]


@pytest.mark.parametrize("expr", EXPRS)
def test_graph_shape_matches_torch(expr):
    want, got = _graphs(expr)
    assert got == want


def _saved(fn):
    out = {}
    for name in dir(fn):
        if name.startswith("_saved_"):
            v = getattr(fn, name)
            out[name] = tuple(v.shape) if hasattr(v, "shape") else v
    return out


@pytest.mark.parametrize("expr", [
    "T.var_mean(x, 0)", "T.var_mean(x)", "T.std_mean(x, 1, keepdim=True)",
    "T.aminmax(x)", "T.aminmax(x, dim=1)",
    "F.interpolate(x.view(1, 1, 3, 4), scale_factor=(2, 3), mode='bilinear', align_corners=True)",
    "F.interpolate(x.view(1, 1, 3, 4), size=(5, 7))",
    "F.interpolate(x.unsqueeze(0), scale_factor=2, mode='linear')",
    "F.interpolate(x.view(1, 1, 1, 3, 4), scale_factor=2)",
    "F.grid_sample(x.view(1, 1, 3, 4), x[:2, :2].reshape(1, 1, 2, 2).expand(1, 2, 2, 2).tanh(),"
    " mode='bicubic', padding_mode='border', align_corners=False)",
    "F.pixel_shuffle(x.view(1, 4, 3, 1), 2)",
    "F.conv_transpose2d(x.view(1, 1, 3, 4), x[:2, :2].reshape(1, 1, 2, 2), stride=2)",
    "F.conv_transpose2d(x.view(1, 1, 3, 4), x[:2, :2].reshape(1, 1, 2, 2).expand(1, 2, 2, 2),"
    " x[0, :2])",
])
def test_saved_values_as_torch(expr):
    fns = [
        eval(expr, {"T": T, "F": T.nn.functional,
                    "x": T.randn(3, 4, dtype=T.float64, requires_grad=True)})
        for T in (torch, ember)]
    fns = [(r[0] if isinstance(r, tuple) else r).grad_fn for r in fns]
    assert _saved(fns[1]) == _saved(fns[0])


def test_group_norm_saved_values_as_torch():
    # (its mean and rstd, ``_saved_result1``/``_saved_result2``, are not shown)
    want, got = (_saved(T.nn.functional.group_norm(
        T.randn(2, 4, 3, dtype=T.float64, requires_grad=True), 2,
        T.ones(4, dtype=T.float64)).grad_fn) for T in (torch, ember))
    for k in ("_saved_result1", "_saved_result2"):
        want.pop(k)
    assert got == want


def test_outputs_of_one_node_share_it():
    x = ember.randn(3, 4, requires_grad=True)
    for v, m in (ember.var_mean(x, 1), ember.std_mean(x), ember.aminmax(x, dim=0)):
        assert v.grad_fn is m.grad_fn
        assert (v.output_nr, m.output_nr) == (0, 1)


@pytest.mark.parametrize("make", [
    lambda T, x: T.var_mean(x, 1), lambda T, x: T.std_mean(x),
    lambda T, x: T.aminmax(x, dim=0),
    lambda T, x: T.nn.functional.interpolate(x.view(1, 1, 3, 4), scale_factor=2,
                                             mode="bicubic"),
    lambda T, x: T.nn.functional.group_norm(x.view(1, 4, 3), 2, x[0], x[1, :4] * 2),
    lambda T, x: T.nn.functional.conv_transpose2d(x.view(1, 1, 3, 4), x[:1, :4].view(
        1, 1, 2, 2), x[2, :1]),
    lambda T, x: T.nn.functional.pixel_shuffle(x.view(1, 4, 3, 1), 2),
    lambda T, x: T.nn.functional.grid_sample(
        x.view(1, 1, 3, 4), x[:2, :2].reshape(1, 1, 2, 2).expand(1, 2, 2, 2).tanh(),
        align_corners=True),
])
def test_gradients_through_one_node_match_torch(make):
    # the pass-through node hands each output's gradient on: first and second derivatives
    # as torch's
    res = []
    for T in (torch, ember):
        x = T.tensor([[0.3, -1.2, 2.0, 0.7], [1.1, 0.4, -0.6, 0.9], [-0.8, 1.5, 0.2, -0.3]],
                     dtype=T.float64, requires_grad=True)
        out = make(T, x)
        outs = out if isinstance(out, tuple) else (out,)
        loss = sum((o * (i + 2)).pow(2).sum() for i, o in enumerate(outs))
        g, = T.autograd.grad(loss, x, create_graph=True)
        gg, = T.autograd.grad(g.sin().sum(), x)
        res.append((g.detach().numpy(), gg.numpy()))
    for a, b in zip(res[0], res[1]):
        assert abs(a - b).max() < 1e-8


def test_lstm_cell_gradients_match_torch():
    res = []
    for T in (torch, ember):
        T.manual_seed(0)
        x = T.randn(3, 4, dtype=T.float64, requires_grad=True)
        cell = T.nn.LSTMCell(4, 3).double()
        with T.no_grad():
            for p in cell.parameters():
                p.copy_(T.linspace(-1, 1, p.numel(), dtype=T.float64).view(p.shape))
        h, c = cell(x, (x[:, :3] * 0.5, x[:, 1:] * 0.25))
        (h.pow(2).sum() + 3 * c.sum()).backward()
        res.append((x.grad.numpy(), cell.weight_hh.grad.numpy()))
    for a, b in zip(res[0], res[1]):
        assert abs(a - b).max() < 1e-10


def test_one_node_saved_tensor_freed_after_backward():
    x = ember.randn(3, 4, requires_grad=True)
    v, m = ember.var_mean(x, 1)
    fn = v.grad_fn
    assert fn._saved_self is x
    (v.sum() + m.sum()).backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        fn._saved_self  # noqa: B018 (the access raises)


def test_one_node_hooks_run():
    x = ember.randn(1, 1, 3, 4, requires_grad=True)
    y = ember.nn.functional.interpolate(x, scale_factor=2)
    seen = []
    y.grad_fn.register_prehook(lambda grads: seen.append(tuple(grads[0].shape)))
    y.sum().backward()
    assert seen == [(1, 1, 6, 8)]
    assert x.grad.eq(4).all()


def test_lstm_cell_shown_split_is_shared():
    # torch's h' and c' graphs meet in one UnsafeSplitBackward0 (and h' reads c' itself)
    x = ember.randn(2, 4, requires_grad=True)
    h, c = ember.nn.LSTMCell(4, 3)(x)
    sig_o, tanh_c = (n for n, _ in h.grad_fn.next_functions)
    assert tanh_c.next_functions[0][0] is c.grad_fn
    f_split = c.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0]
    o_split = sig_o.next_functions[0]
    assert f_split[0] is o_split[0] and (f_split[1], o_split[1]) == (1, 3)


@pytest.mark.parametrize("expr", ["x ** 2", "x.pow(2)", "x ** 1", "x ** 0", "2 ** x",
                                  "x ** 3", "x.pow(x.detach())"])
def test_higher_derivatives_need_grad_as_torch(expr):
    # torch's pow formula leaves a zero exponent's gradient outside the graph: ``x ** 2``'s
    # third derivative needs no grad
    res = []
    for T in (torch, ember):
        x = T.tensor([1.5, 2.0, 0.5], dtype=T.float64, requires_grad=True)
        g = eval(expr, {"x": x}).sum()
        row = []
        for _ in range(3):
            g, = T.autograd.grad(g.sum(), x, create_graph=True, allow_unused=True)
            if g is None or not g.requires_grad:
                row.append((None if g is None else [round(v, 6) for v in g.tolist()], False))
                break
            # (values to 6 places: torch takes ``2 ** x``'s log(2) in single precision)
            row.append(([round(v, 6) for v in g.tolist()], type(g.grad_fn).__name__))
        res.append(row)
    assert res[1] == res[0]
