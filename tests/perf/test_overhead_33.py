"""Session 33 (issue 22): per-op and per-node Python cost in training steps. Each shortcut
against the plain path it stands in for (the same node, the same bits), and against PyTorch
where installed.

- NOTE [ Recording a layer call ] in ember/autograd/_nodes.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
from ember._ops import nn_ops
from ember.autograd import _nodes


def _rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------------------------------------
# recording a linear layer's call


def _node_fields(node):
    """What the engine and the accessors read off an op node, comparable across two nodes
    made from the same tensors."""
    saved = []
    for s in node._saved:
        if s is None or _nodes._is_layout_stand_in(s):
            saved.append(None if s is None else ("stand-in", s.shape, s.dtype,
                                                 s._layout_of_unsaved))
        else:
            saved.append(id(s))
    return (type(node).__name__, node._op, dict(node._params), node._next,
            list(node._meta_in), saved, list(node._vers), node._edge_order)


def _linear_inputs(needs, has_bias, dtype, x_view):
    x = ember.tensor(_rand(3, 5, dtype=dtype), requires_grad=needs[0])
    if x_view:  # a view of a tensor with history (a flatten's output)
        x = (ember.tensor(_rand(3, 1, 5, dtype=dtype), requires_grad=needs[0]) * 2).view(3, 5) \
            if needs[0] else ember.tensor(_rand(3, 1, 5, dtype=dtype)).view(3, 5)
    w = ember.tensor(_rand(4, 5, seed=1, dtype=dtype), requires_grad=needs[1])
    b = ember.tensor(_rand(4, seed=2, dtype=dtype), requires_grad=needs[2]) if has_bias else None
    return x, w, b


# (which of input, weight, bias require grad; whether there is a bias): some input does
_NEEDS = [(n, has_bias) for n in itertools.product([True, False], repeat=3)
          for has_bias in (True, False) if n[0] or n[1] or has_bias and n[2]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("needs,has_bias", _NEEDS, ids=str)
@pytest.mark.parametrize("x_view", [False, True])
def test_record_affine_makes_records_node(dtype, has_bias, needs, x_view):
    x, w, b = _linear_inputs(needs, has_bias, dtype, x_view)
    y = ember.nn.functional.linear(x, w, b)  # linear's direct path: record_affine
    fast = y.grad_fn
    plain_out = ember.tensor(y.detach().numpy())
    _nodes.record(nn_ops.linear_op, (x, w, b), {}, plain_out)
    plain = plain_out.grad_fn
    assert _node_fields(fast) == _node_fields(plain)
    assert [type(n).__name__ for n, _ in fast.next_functions] == \
        [type(n).__name__ for n, _ in plain.next_functions]


@pytest.mark.parametrize("has_bias", [True, False])
@pytest.mark.parametrize("needs", [(True, True, True), (False, True, True),
                                   (True, False, False)], ids=str)
def test_record_affine_backward_matches_torch(has_bias, needs):
    torch = pytest.importorskip("torch")
    grads = []
    for T in (ember, torch):
        x = T.tensor(_rand(3, 5), requires_grad=needs[0])
        w = T.tensor(_rand(4, 5, seed=1), requires_grad=needs[1])
        b = T.tensor(_rand(4, seed=2), requires_grad=needs[2]) if has_bias else None
        if not (needs[0] or needs[1] or has_bias and needs[2]):
            continue
        y = T.nn.functional.linear(x, w, b)
        y.pow(2).sum().backward()
        grads.append([None if t is None or t.grad is None else t.grad.numpy()
                      for t in (x, w, b)])
    for a, c in zip(*grads):
        assert (a is None) == (c is None)
        if a is not None:
            np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)


def test_record_affine_keeps_the_version_errors():
    torch = pytest.importorskip("torch")
    msgs = []
    for T in (ember, torch):
        x = T.tensor(_rand(3, 5), requires_grad=True)
        w = T.tensor(_rand(4, 5, seed=1), requires_grad=True)
        y = T.nn.functional.linear(x * 1, w)
        with T.no_grad():
            w.add_(1)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        msgs.append(str(e.value).split("Hint")[0].replace("torch.", "").replace("ember.", ""))
    assert msgs[0] == msgs[1]


def test_record_affine_leaves_saved_tensor_hooks_to_record():
    packed = []
    x = ember.tensor(_rand(3, 5), requires_grad=True)
    w = ember.tensor(_rand(4, 5, seed=1), requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t,
                                                  lambda t: t):
        y = ember.nn.functional.linear(x, w)
    assert len(packed) == 2
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.tile(_rand(3, 5).sum(0), (4, 1)), rtol=1e-6)


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_record_affine_under_anomaly_mode_keeps_the_trace():
    x = ember.tensor(_rand(3, 5), requires_grad=True)
    w = ember.tensor(_rand(4, 5, seed=1), requires_grad=True)
    with ember.autograd.detect_anomaly(check_nan=False):
        y = ember.nn.functional.linear(x, w)
    assert getattr(y.grad_fn, "_trace", None) is not None

