"""Graph recording: node classes and names, edges, saved values, node hooks."""

import gc
import weakref

import numpy as np
import pytest

import ember
from ember.autograd.graph import Node
from tests.conftest import HAS_TORCH


def leaf(*shape, dtype=ember.float32):
    return ember.ones(*shape, dtype=dtype).requires_grad_(True)


def test_node_names_follow_pytorch():
    a, b = leaf(3), leaf(3)
    assert (a + b).grad_fn.name() == "AddBackward0"
    assert (a * b).grad_fn.name() == "MulBackward0"
    assert (a - b).grad_fn.name() == "SubBackward0"
    assert (a / b).grad_fn.name() == "DivBackward0"
    assert a.clone().grad_fn.name() == "CloneBackward0"
    assert a.to(ember.float64).grad_fn.name() == "ToCopyBackward0"
    assert type((a * b).grad_fn).__name__ == "MulBackward0"
    assert isinstance((a * b).grad_fn, Node)


def test_op_node_name_override():
    from ember._ops.arithmetic import mul_op

    old = mul_op.node_name
    from ember.autograd import _nodes

    _nodes._node_classes.pop(mul_op, None)
    _nodes._op_info.pop(mul_op, None)
    mul_op.node_name = "CustomMulBackward0"
    try:
        assert (leaf(2) * 2).grad_fn.name() == "CustomMulBackward0"
    finally:
        mul_op.node_name = old
        _nodes._node_classes.pop(mul_op, None)
        _nodes._op_info.pop(mul_op, None)
    assert (leaf(2) * 2).grad_fn.name() == "MulBackward0"


def test_next_functions_point_to_accumulate_grad_per_leaf():
    a, b = leaf(3), ember.ones(3)
    y = a * b
    (n0, i0), (n1, i1) = y.grad_fn.next_functions
    assert n0.name() == "torch::autograd::AccumulateGrad" and n0.variable is a and i0 == 0
    assert n1 is None and i1 == 0
    # one AccumulateGrad per leaf, shared by the nodes that use it
    z = a + a
    assert z.grad_fn.next_functions[0][0] is z.grad_fn.next_functions[1][0]
    assert z.grad_fn.next_functions[0][0] is y.grad_fn.next_functions[0][0]


def test_accumulate_grad_held_weakly():
    a = leaf(3)
    y = a * 2
    acc = weakref.ref(y.grad_fn.next_functions[0][0])
    del y
    gc.collect()
    assert acc() is None


def test_next_functions_chain():
    a = leaf(3)
    y = a * 2
    z = y + 1
    assert z.grad_fn.next_functions[0] == (y.grad_fn, 0)


def test_outputs_fields():
    a = leaf(3)
    y = a * 2
    assert y.requires_grad and not y.is_leaf and y.output_nr == 0
    assert a.is_leaf and a.grad_fn is None
    # comparison results are not differentiable
    assert not (a > 0).requires_grad
    with ember.no_grad():
        assert (a * 2).grad_fn is None


def test_saved_values_visible():
    a, b = leaf(3), leaf(3)
    y = a * b
    names = [n for n in dir(y.grad_fn) if n.startswith("_saved_")]
    assert len(names) == 2
    for n in names:
        t = getattr(y.grad_fn, n)
        assert isinstance(t, ember.Tensor)
    raw = [n for n in dir(y.grad_fn) if n.startswith("_raw_saved_")]
    assert len(raw) == 2
    q = a.exp()
    assert np.allclose(q.grad_fn._saved_result.detach().numpy(), q.detach().numpy())


def test_saved_result_does_not_keep_output_alive():
    a = leaf(3)
    y = a.exp()
    node = y.grad_fn
    r = weakref.ref(y)
    del y
    gc.collect()
    assert r() is None
    assert node._saved_result.grad_fn is node


def test_saved_param_visible():
    if "sum" not in ember.autograd._nodes.__dict__ and not hasattr(ember, "sum"):
        pytest.skip("sum not available")
    a = leaf(2, 3)
    s = a.sum(1)
    assert s.grad_fn.name() == "SumBackward1" or s.grad_fn.name().startswith("Sum")


def test_metadata_dict():
    y = leaf(2) * 2
    y.grad_fn.metadata["k"] = 1
    assert y.grad_fn.metadata == {"k": 1}


def test_node_hooks_and_prehooks():
    a = leaf(3)
    y = a * 2
    seen = []

    def pre(grad_outputs):
        seen.append(("pre", grad_outputs[0].tolist()))
        return (grad_outputs[0] * 10,)

    def post(grad_inputs, grad_outputs):
        seen.append(("post", grad_inputs[0].tolist()))

    y.grad_fn.register_prehook(pre)
    h = y.grad_fn.register_hook(post)
    y.backward(ember.ones(3))
    assert seen == [("pre", [1, 1, 1]), ("post", [20, 20, 20])]
    assert a.grad.tolist() == [20, 20, 20]
    h.remove()
    seen.clear()
    a.grad = None
    y = a * 2
    y.backward(ember.ones(3))
    assert seen == []


def test_post_hook_may_replace_grad_inputs():
    a = leaf(2)
    y = a * 3
    y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1,))
    y.backward(ember.ones(2))
    assert a.grad.tolist() == [4, 4]


def test_sequence_nr_increases():
    a = leaf(2)
    y = a * 2
    z = y * 2
    assert z.grad_fn._sequence_nr() > y.grad_fn._sequence_nr()


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_names_match_torch():
    import torch

    for fn in (lambda m, x, y: x + y, lambda m, x, y: x * y, lambda m, x, y: x - y,
               lambda m, x, y: x / y, lambda m, x, y: x.clone(),
               lambda m, x, y: x.to(m.float64)):
        e = fn(ember, leaf(2), leaf(2)).grad_fn.name()
        t = fn(torch, torch.ones(2, requires_grad=True),
               torch.ones(2, requires_grad=True)).grad_fn.name()
        assert e == t


def test_accumulate_grad_node_hooks():
    a = leaf(2)
    y = a * 2
    acc = y.grad_fn.next_functions[0][0]
    log = []
    acc.register_prehook(lambda go: log.append("pre"))
    acc.register_hook(lambda gi, go: log.append(("post", go[0].tolist())))
    y.backward(ember.ones(2))
    assert log == ["pre", ("post", [2.0, 2.0])]
