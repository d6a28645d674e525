"""``.code`` and ``.graph`` of traced modules (NOTE [ Trace graphs ] in
ember/jit/_trace_graph.py), compared with torch's where ember prints the same text."""

import io
import warnings

import pytest

import ember


def _cell(T):
    class MyDecisionGate(T.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x

    class MyCell(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.dg = MyDecisionGate()
            self.linear = T.nn.Linear(4, 4)

        def forward(self, x, h):
            new_h = T.tanh(self.dg(self.linear(x)) + h)
            return new_h, new_h

    cell = MyCell()
    with T.no_grad():  # (the gate's branch must be the same in both frameworks)
        cell.linear.weight.fill_(0.1)
        cell.linear.bias.fill_(0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return T.jit.trace(cell, (T.ones(3, 4), T.ones(3, 4)))


def _code(T, make, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return T.jit.trace(make(T), args).code


@pytest.mark.parametrize("name", ["cell", "linear", "sequential_mlp"])
def test_traced_code_matches_torch(name):
    torch = pytest.importorskip("torch")
    if name == "cell":
        assert _cell(ember).code == _cell(torch).code
        return
    makers = {"linear": lambda T: T.nn.Linear(3, 2),
              "sequential_mlp": lambda T: T.nn.Sequential(T.nn.Linear(3, 4), T.nn.ReLU(),
                                                          T.nn.Linear(4, 2))}
    assert _code(ember, makers[name], ember.ones(2, 3)) == \
        _code(torch, makers[name], torch.ones(2, 3))


def test_traced_graph_lists_attributes_calls_and_ops():
    text = str(_cell(ember).graph)
    assert text.startswith("graph(%self : __torch__.")
    assert "%x : Float(3, 4, strides=[4, 1], requires_grad=0, device=cpu)" in text
    assert 'prim::GetAttr[name="dg"](%self)' in text
    assert 'prim::CallMethod[name="forward"](%linear, %x)' in text
    assert "requires_grad=1, device=cpu) = aten::tanh(" in text
    assert "prim::TupleConstruct(" in text and text.rstrip().endswith(")")


def test_submodule_code_and_parameters_as_attributes():
    net = _cell(ember)
    assert net.linear.code == ("def forward(self,\n    input: Tensor) -> Tensor:\n"
                               "  bias = self.bias\n  weight = self.weight\n"
                               "  return torch.linear(input, weight, bias)\n")


def test_size_varargs_are_written_as_lists_and_constants_by_name():
    class Net(ember.nn.Module):
        def forward(self, x):
            return x.view(2, -1) * 2

    code = ember.jit.trace(Net(), ember.ones(2, 3)).code
    assert "torch.mul(torch.view(x, [2, -1]), 2)" in code


class _Gate(ember.nn.Module):
    def forward(self, x):
        return -x


class _Cell(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.dg = _Gate()
        self.linear = ember.nn.Linear(4, 4)

    def forward(self, x, h):
        return ember.tanh(self.dg(self.linear(x)) + h)


def test_code_survives_save_and_load():
    traced = ember.jit.trace(_Cell(), (ember.ones(3, 4), ember.ones(3, 4)))
    buf = io.BytesIO()
    ember.jit.save(traced, buf)
    buf.seek(0)
    assert ember.jit.load(buf).code == traced.code


def test_scripted_module_has_no_compiled_form():
    scripted = ember.jit.script(ember.nn.Linear(2, 2))
    with pytest.raises(NotImplementedError, match="TorchScript"):
        _ = scripted.code


def test_module_attribute_named_graph_still_wins():
    class GNN(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.graph = "edges"

        def forward(self, x):
            return x + 1

    assert ember.jit.trace(GNN(), ember.ones(2)).graph == "edges"
