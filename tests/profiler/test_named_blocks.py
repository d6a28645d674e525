"""Events PyTorch's profiler opens around Python-level blocks: an optimizer's zero_grad and
an autograd.Function's forward (named after the class), with the ops they run inside."""

import pytest

import ember

torch = pytest.importorskip("torch")


def _keys_and_children(fw):
    m = fw.nn.Linear(4, 2)
    opt = fw.optim.SGD(m.parameters(), lr=0.1)

    class Double(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    m(fw.ones(1, 4)).sum().backward()
    with fw.profiler.profile() as prof:
        opt.zero_grad()
        Double.apply(m(fw.ones(3, 4))).sum().backward()
        opt.step()
    events = prof.events()
    keys = {e.key for e in prof.key_averages()}
    double = [e for e in events if e.name == "Double"]
    children = sorted(c.name for c in double[0].cpu_children) if double else None
    return keys, children


def test_zero_grad_and_function_events_as_torch():
    ek, echildren = _keys_and_children(ember)
    tk, tchildren = _keys_and_children(torch)
    for key in ("Optimizer.zero_grad#SGD.zero_grad", "Double", "Optimizer.step#SGD.step"):
        assert key in tk
        assert key in ek
    assert echildren == tchildren == ["aten::mul"]


def test_zero_grad_without_profiler_still_resets():
    w = ember.nn.Parameter(ember.zeros(2))
    w.grad = ember.ones(2)
    ember.optim.SGD([w], lr=0.1).zero_grad()
    assert w.grad is None
