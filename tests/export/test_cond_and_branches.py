"""``export`` and control flow: ``cond`` keeps both branches as graphs (the program picks at
run time, after save/load too), and branching on a tensor's value in Python raises
PyTorch's ``GuardOnDataDependentSymNode`` (NOTE [ Export trace ] in ember/export/_trace.py)."""

import io

import pytest

import ember
import ember.nn as nn
from ember.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode


class CondNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        y = x * 2
        return ember.cond(y.sum() > 0, lambda t: self.lin(t).sin(), lambda t: t.cos(), (y,)) + 1


class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x.sin()
        return x.cos()


INPUTS = [ember.ones(3), -ember.ones(3)]


@pytest.mark.parametrize("x", INPUTS, ids=["true", "false"])
def test_cond_export_runs_the_branch_the_input_picks(x):
    net = CondNet()
    ep = ember.export.export(net, (ember.ones(3),))
    assert ember.allclose(ep.module()(x), net(x))


def test_cond_export_graph_names_match_torch():
    ep = ember.export.export(CondNet(), (ember.ones(3),))
    names = [n.name for n in ep.graph.nodes if n.op != "placeholder"]
    # torch 2.13's graph for the same module (its branches take the weights as operands)
    assert names == ["mul", "sum_1", "gt", "true_graph_0", "false_graph_0", "cond", "getitem",
                     "add", "output"]
    assert sorted(n for n, _ in ep.graph_module.named_children()) == ["false_graph_0",
                                                                       "true_graph_0"]
    text = str(ep)
    assert "torch.ops.higher_order.cond(gt, true_graph_0, false_graph_0, (mul,))" in text
    assert "        class true_graph_0(torch.nn.Module):" in text


@pytest.mark.parametrize("x", INPUTS, ids=["true", "false"])
def test_cond_export_survives_save_and_load(x):
    net = CondNet()
    buf = io.BytesIO()
    ember.export.save(ember.export.export(net, (ember.ones(3),)), buf)
    buf.seek(0)
    assert ember.allclose(ember.export.load(buf).module()(x), net(x))


def test_export_python_branch_on_tensor_raises_guard_error():
    pytest.importorskip("torch")
    import torch.fx.experimental.symbolic_shapes as torch_shapes

    with pytest.raises(GuardOnDataDependentSymNode, match="data-dependent"):
        ember.export.export(Branchy(), (ember.ones(3),))
    assert issubclass(GuardOnDataDependentSymNode, RuntimeError)
    assert torch_shapes.GuardOnDataDependentSymNode.__mro__[1] is RuntimeError


def test_export_python_branch_on_a_constant_is_fine():
    class OnConstant(nn.Module):
        def forward(self, x):
            flag = ember.tensor(1.0)
            return x + 1 if flag > 0 else x - 1

    ep = ember.export.export(OnConstant(), (ember.ones(2),))
    assert ember.equal(ep.module()(ember.zeros(2)), ember.ones(2))
