"""A backward pass split into an input step and a weight step (``ember.autograd._split``,
NOTE [ Split backward walks ]): the gradients equal one full backward's, each op's
products run once (the input step skips the parameters', the weight step the inputs'),
parameter hooks fire in the weight step, and the graph is freed once both have run."""

import gc
import weakref

import numpy as np
import pytest

import ember
from ember._ops import nn_ops
from ember.autograd._split import split_input_backward, split_weight_backward


class Net(ember.nn.Module):
    """Linear layers, a layer norm, and a parameter used by several ops (one of them reached
    from the parameter only)."""

    def __init__(self):
        super().__init__()
        self.a = ember.nn.Linear(5, 6)
        self.ln = ember.nn.LayerNorm(6)
        self.b = ember.nn.Linear(6, 5)
        self.p = ember.nn.Parameter(ember.randn(5))

    def forward(self, x):
        h = self.ln(ember.tanh(self.a(x)))
        return self.b(h) * self.p + (self.p.unsqueeze(0) * self.p).sum()


def _full(net, x, g):
    xi = x.clone().requires_grad_(True)
    net.zero_grad()
    ember.autograd.backward([net(xi)], [g])
    return xi.grad, {n: p.grad.clone() for n, p in net.named_parameters()}


@pytest.fixture
def case():
    ember.manual_seed(0)
    net, x = Net(), ember.randn(3, 5)
    return net, x, ember.randn(3, 5)


def test_split_backward_equals_full_backward(case):
    net, x, g = case
    want_x, want = _full(net, x, g)
    net.zero_grad()
    xi = x.clone().requires_grad_(True)
    (gx,), plan = split_input_backward([net(xi)], [g], [xi], list(net.parameters()))
    assert all(p.grad is None for p in net.parameters())  # the input step leaves them
    assert xi.grad is None
    np.testing.assert_allclose(gx.numpy(), want_x.numpy(), rtol=1e-6)
    split_weight_backward(plan)
    for n, p in net.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), want[n].numpy(), rtol=1e-5, atol=1e-7,
                                   err_msg=n)


def test_split_backward_without_input_gradients_runs_all_in_weight_step(case):
    net, x, g = case
    _, want = _full(net, x, g)
    net.zero_grad()
    grads, plan = split_input_backward([net(x)], [g], [], list(net.parameters()))
    assert grads == [] and all(p.grad is None for p in net.parameters())
    split_weight_backward(plan)
    for n, p in net.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), want[n].numpy(), rtol=1e-5, atol=1e-7)


def test_split_backward_scalar_root(case):
    net, x, _ = case
    xi = x.clone().requires_grad_(True)
    (net(xi) ** 2).mean().backward()
    want_x, want = xi.grad, {n: p.grad.clone() for n, p in net.named_parameters()}
    net.zero_grad()
    xj = x.clone().requires_grad_(True)
    (gx,), plan = split_input_backward([(net(xj) ** 2).mean()], None, [xj],
                                       list(net.parameters()))
    split_weight_backward(plan)
    np.testing.assert_allclose(gx.numpy(), want_x.numpy(), rtol=1e-6)
    for n, p in net.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), want[n].numpy(), rtol=1e-5, atol=1e-7)


def test_split_backward_runs_each_linear_product_once(case, monkeypatch):
    net, x, g = case
    calls = []
    vjp = nn_ops.linear_op.vjp

    def counting(*args, needs_input_grad, **kw):
        calls.append(needs_input_grad)
        return vjp(*args, needs_input_grad=needs_input_grad, **kw)

    monkeypatch.setattr(nn_ops.linear_op, "vjp", counting)
    xi = x.clone().requires_grad_(True)
    _, plan = split_input_backward([net(xi)], [g], [xi], list(net.parameters()))
    # the input step: each layer's input gradient, no weight or bias product
    assert calls == [(True, False, False), (True, False, False)]
    calls.clear()
    split_weight_backward(plan)
    assert sorted(calls) == [(False, True, True)] * 2


def test_split_backward_hooks_fire_in_weight_step(case):
    net, x, g = case
    seen = []
    net.b.weight.register_post_accumulate_grad_hook(lambda p: seen.append("acc"))
    xi = x.clone().requires_grad_(True)
    _, plan = split_input_backward([net(xi)], [g], [xi], list(net.parameters()))
    assert seen == []
    split_weight_backward(plan)
    assert seen == ["acc"]


def test_split_backward_frees_graph_after_weight_step(case):
    net, x, g = case
    xi = x.clone().requires_grad_(True)
    out = net(xi)
    node = weakref.ref(out.grad_fn)
    _, plan = split_input_backward([out], [g], [xi], list(net.parameters()))
    del out
    gc.collect()
    assert node() is not None  # the kept buffers hold the ops that lead to parameters
    split_weight_backward(plan)
    assert plan.kept == {}
    gc.collect()
    assert node() is None


# -- the split walks as the profiler and anomaly mode see them (NOTE [ Split walks under the
# profiler and anomaly mode ]) --------------------------------------------------------------

def _engine_rows(prof):
    from collections import Counter

    return Counter(e.name for e in prof.events()
                   if e.name.startswith("autograd::engine::evaluate_function: "))


def test_profiler_records_split_walks_as_the_engines_backward():
    ember.manual_seed(0)
    net = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.Tanh(), ember.nn.Linear(8, 3))
    x = ember.randn(5, 4)
    with ember.profiler.profile() as full:
        ember.autograd.grad(net(x.requires_grad_()).sum(), [x] + list(net.parameters()))
    xs = x.detach().requires_grad_()
    with ember.profiler.profile() as split:
        _, plan = split_input_backward([net(xs).sum()], None, [xs], list(net.parameters()))
        split_weight_backward(plan)
    want, got = _engine_rows(full), _engine_rows(split)
    assert set(got) == set(want)
    # the two addmm nodes run in both steps (I with their input edge, W with the rest);
    # every other node runs once, in one step
    kept = "autograd::engine::evaluate_function: AddmmBackward0"
    assert got[kept] == 2 * want[kept]
    assert {k: v for k, v in got.items() if k != kept} == \
        {k: v for k, v in want.items() if k != kept}
    # the products under the nodes' rows: each once, as in the full backward
    mm = [e for e in split.events() if e.name == "aten::mm"]
    assert len(mm) == sum(e.name == "aten::mm" for e in full.events()) == 4


def _anomaly_net():
    ember.manual_seed(0)
    net = ember.nn.Linear(4, 3)
    net.p = ember.nn.Parameter(ember.full((3,), -1.0))
    return net


@pytest.mark.parametrize("where", ["input", "weight"])
def test_anomaly_mode_reports_the_forward_trace_in_either_step(where):
    net = _anomaly_net()
    x = ember.randn(2, 4, requires_grad=True)
    with ember.autograd.detect_anomaly():
        h = net(x)
        # sqrt of negative values: nan gradients, on the input's path or the parameter's only
        y = (ember.sqrt(h - 100.0) if where == "input" else h + ember.sqrt(net.p)).sum()
        with pytest.warns(UserWarning, match="Error detected in SqrtBackward0") as rec:
            with pytest.raises(RuntimeError, match="'SqrtBackward0' returned nan values"):
                _, plan = split_input_backward([y], None, [x], list(net.parameters()))
                split_weight_backward(plan)
    assert any("test_split_backward.py" in str(w.message) for w in rec)
