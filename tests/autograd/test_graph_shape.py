"""The backward graph as code walking ``grad_fn.next_functions`` sees it, against PyTorch's:
node names, the edges each node shows (none for indices, masks, targets and Python numbers)
and the stand-in nodes where ember computes several of torch's steps in one node
(NOTE [ Shown edges ] in ember/_ops/_node_names.py)."""

import pytest

import ember

torch = pytest.importorskip("torch")


def _walk(fn, depth=0, limit=6):
    if fn is None:
        return ["  " * depth + "None"]
    lines = ["  " * depth + f"{type(fn).__name__} {fn.name()}"]
    if depth < limit:
        for nxt, _ in fn.next_functions:
            lines += _walk(nxt, depth + 1, limit)
    return lines


def _graphs(expr):
    out = []
    for T in (torch, ember):
        T.manual_seed(0)
        x = T.randn(3, 4, dtype=T.float64, requires_grad=True)  # noqa: F841 (used by eval)
        w = T.randn(5, 4, dtype=T.float64, requires_grad=True)  # noqa: F841
        b = T.randn(5, dtype=T.float64, requires_grad=True)  # noqa: F841
        F = T.nn.functional  # noqa: F841
        y = eval(expr)
        ys = y if isinstance(y, (tuple, list)) else (y,)
        out.append([_walk(t.grad_fn) for t in ys if getattr(t, "grad_fn", None) is not None])
    return out


EXPRS = [
    # torch's linear: addmm(bias, input, weight.t()), mm without a bias, views for other ranks
    "F.linear(x, w, b)", "F.linear(x, w)", "F.linear(x.unsqueeze(0), w, b)",
    "F.linear(x.unsqueeze(0), w)", "F.linear(x[0], w, b)", "F.linear(x[0], w)",
    "F.linear(x.detach(), w, b)", "F.linear(x, w.detach(), b)",
    "F.linear(x.view(3, 2, 2).transpose(1, 2).reshape(3, 4).unsqueeze(0).transpose(0, 1), w, b)",
    # cross_entropy: nll_loss of log_softmax
    "F.cross_entropy(x, T.tensor([0, 1, 3]))", "F.cross_entropy(x, T.tensor([0, 1, 3]), "
    "weight=T.ones(4, dtype=T.float64))", "F.nll_loss(x, T.tensor([0, 1, 3]))",
    # no edge for Python numbers, indices, masks, targets
    "x ** 2", "2 ** x", "2 - x", "x.clamp(0)", "x.clamp(-1, 1)", "x.clamp(min=0.1)",
    "T.remainder(x, 2)", "T.remainder(x, x + 1)", "T.fmod(x, 2)", "T.fmod(x, x + 1)",
    "T.copysign(x, 2.0)", "T.copysign(x, x)", "T.xlogy(x, 2.0)", "T.xlogy(2.0, x)",
    "x.gather(1, T.tensor([[0, 1]] * 3))", "x.index_select(0, T.tensor([2, 0]))",
    "x.masked_fill(x > 0, 1.0)", "T.where(x > 0, x, x * 2)", "x.masked_select(x > 0)",
    "x.scatter(1, T.tensor([[0], [1], [2]]), x[:, :1])",
    "x.scatter_add(1, T.tensor([[0]] * 3), x[:, :1])",
    "x.index_add(0, T.tensor([0, 0, 1]), x)", "x.index_put((T.tensor([0, 1]),), x[:2] * 2)",
    "x.take(T.tensor([0, 5]))", "x[T.tensor([0, 2])]", "x[x > 0]",
    "F.embedding(T.tensor([0, 2]), x)",
    "x.max(0)", "x.min(1)", "x.sort(1)", "x.topk(2)", "x.kthvalue(1)", "x.cummax(0)", "x.median(0)",
    "x.mode(1)", "F.binary_cross_entropy(x.sigmoid(), x.detach().sigmoid())",
    "F.binary_cross_entropy_with_logits(x, x.detach().sigmoid())",
    "F.batch_norm(x, None, None, x[0], x[1], training=True)",
    "F.batch_norm(x, T.zeros(4, dtype=T.float64), T.ones(4, dtype=T.float64), training=True)",
    # indexing: torch's chain of selects and slices
    "x[:2, :2]", "x[0, 1:3]", "x[None, 0]", "x[..., 1]", "x[1:, None, ::2]", "x[:, 0]", "x[:]",
    "x[0][1]", "x[0, [0, 1]]",
]


@pytest.mark.parametrize("expr", EXPRS)
def test_graph_shape_matches_torch(expr):
    want, got = _graphs(expr)
    assert got == want


def test_tutorial_walk_prints_as_torch():
    # the 60-minute blitz walks loss.grad_fn.next_functions[0][0] twice
    seen = []
    for T in (torch, ember):
        T.manual_seed(0)
        net = T.nn.Sequential(T.nn.Linear(4, 5), T.nn.ReLU(), T.nn.Linear(5, 3))
        loss = T.nn.functional.mse_loss(net(T.randn(2, 4)), T.randn(2, 3))
        g = loss.grad_fn
        steps = [g, g.next_functions[0][0], g.next_functions[0][0].next_functions[0][0]]
        seen.append([repr(s).split(" object")[0] for s in steps])
    assert seen[0] == seen[1] == ["<MseLossBackward0", "<AddmmBackward0", "<AccumulateGrad"]


def test_shown_nodes_are_stable_and_gradients_unchanged():
    x = ember.randn(3, 4, requires_grad=True)
    lin = ember.nn.Linear(4, 2)
    y = lin(x)
    first = y.grad_fn.next_functions
    assert first is y.grad_fn.next_functions  # built once: the same node objects
    t = first[2][0]
    assert t.name() == "TBackward0" and t.next_functions[0][0].variable is lin.weight
    with pytest.raises(RuntimeError, match="TBackward0"):
        t(ember.ones(2, 4))
    y.sum().backward()  # the engine still runs on the real edges
    assert lin.weight.grad.shape == (2, 4) and x.grad.shape == (3, 4)
    assert ember.allclose(lin.bias.grad, ember.full((2,), 3.0))


def test_accumulate_grad_name_and_repr():
    x = ember.ones(2, requires_grad=True)
    acc = (x * 2).grad_fn.next_functions[0][0]
    ref = torch.ones(2, requires_grad=True).mul(2).grad_fn.next_functions[0][0]
    assert acc.name() == ref.name()
    assert repr(acc).startswith("<AccumulateGrad object at ")


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_saved_reduction_is_torch_number(reduction):
    got = []
    for T in (torch, ember):
        x = T.randn(3, requires_grad=True)
        got.append(T.nn.functional.mse_loss(x, T.zeros(3), reduction=reduction).grad_fn
                   ._saved_reduction)
    assert got[0] == got[1]


@pytest.mark.parametrize("expr", ["x.max(1)", "x.sort(1)", "x.topk(2)", "x.cummax(0)",
                                  "x.median(0)", "x.kthvalue(2, 1)", "x.min(0)"])
def test_saved_indices_as_torch(expr):
    got = []
    for T in (torch, ember):
        T.manual_seed(0)
        x = T.randn(3, 4, requires_grad=True)  # noqa: F841 (used by eval)
        fn = eval(expr)[0].grad_fn
        got.append((fn.name(), fn._saved_indices.tolist()))
    assert got[0] == got[1]
