"""Saved-tensor hooks and graph utilities."""

import pytest

import ember
from ember.autograd import graph


def leaf(data, dtype=ember.float64):
    return ember.tensor(data, dtype=dtype, requires_grad=True)


def ones(*n):
    return ember.ones(*n, dtype=ember.float64)


def test_saved_tensors_hooks_pack_unpack():
    packed, unpacked = [], []

    def pack(t):
        packed.append(t.shape)
        return ("box", t * 1)

    def unpack(p):
        unpacked.append(p[0])
        return p[1]

    x = leaf([1.0, 2.0])
    with graph.saved_tensors_hooks(pack, unpack):
        y = x * x
    assert len(packed) == 2
    y.backward(ones(2))
    assert unpacked == ["box", "box"] and x.grad.tolist() == [2.0, 4.0]


def test_saved_tensors_hooks_innermost_wins():
    log = []
    with graph.saved_tensors_hooks(lambda t: log.append("outer") or t, lambda t: t):
        with graph.saved_tensors_hooks(lambda t: log.append("inner") or t, lambda t: t):
            leaf([1.0]) * leaf([2.0])
    assert log == ["inner", "inner"]


def test_saved_tensors_hooks_on_saved_result():
    x = leaf([1.0, 2.0])
    with graph.saved_tensors_hooks(lambda t: t.detach() * 1, lambda t: t):
        y = x / 2.0
    y.backward(ones(2))
    assert x.grad.tolist() == [0.5, 0.5]


def test_disable_saved_tensors_hooks():
    with graph.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass


def test_save_on_cpu():
    x = leaf([1.0, 2.0])
    with graph.save_on_cpu():
        y = x * x
    y.backward(ones(2))
    assert x.grad.tolist() == [2.0, 4.0]


def test_multi_grad_hook_all():
    a, b, c = leaf([1.0]), leaf([2.0]), leaf([3.0])
    got = []
    kinds = []
    graph.register_multi_grad_hook((a, b, c), lambda gs: (kinds.append(type(gs)), got.append(
        [None if g is None else g.tolist() for g in gs])))
    (a * 2 + b * 3).backward(ones(1))
    assert got == [[[2.0], [3.0], None]]
    assert kinds == [list]  # torch hands mode="all" hooks a list
    (a * 5).backward(ones(1))
    assert got[-1] == [[5.0], None, None]


def test_multi_grad_hook_any():
    a, b = leaf([1.0]), leaf([2.0])
    got = []
    h = graph.register_multi_grad_hook((a, b), lambda g: got.append(g.tolist()), mode="any")
    (a * 2 + b * 3).backward(ones(1))
    assert len(got) == 1
    h.remove()
    (a * 2).backward(ones(1))
    assert len(got) == 1
    with pytest.raises(ValueError):
        graph.register_multi_grad_hook((a,), lambda g: None, mode="some")


def test_gradient_edge():
    x = leaf([1.0])
    y = x * 2
    e = graph.get_gradient_edge(y)
    assert e.node is y.grad_fn and e.output_nr == 0
    ex = graph.get_gradient_edge(x)
    assert ex.node.name() == "torch::autograd::AccumulateGrad"
    (g,) = ember.autograd.grad(y * 3, e, ones(1))
    assert g.tolist() == [3.0]
    with pytest.raises(RuntimeError, match="not possible to get the gradient edge"):
        graph.get_gradient_edge(ember.ones(1))


def test_node_is_exposed_in_graph_module():
    assert isinstance((leaf([1.0]) * 2).grad_fn, graph.Node)
