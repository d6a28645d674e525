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


def test_scripted_module_code_is_its_lowered_source():
    scripted = ember.jit.script(ember.nn.Linear(2, 2))  # (more in test_script_code.py)
    assert scripted.code.endswith("  return torch.linear(input, weight, bias)\n")


def test_module_attribute_named_graph_still_wins():
    class GNN(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.graph = "edges"

        def forward(self, x):
            return x + 1

    assert ember.jit.trace(GNN(), ember.ones(2)).graph == "edges"


def test_inlined_graph_of_a_trace_replaces_submodule_calls():
    class Cell(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = ember.nn.Linear(4, 4)

        def forward(self, x, h):
            new_h = ember.tanh(self.linear(x) + h)
            return new_h, new_h

    class Outer(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = Cell()

        def forward(self, x, h):
            a, _ = self.cell(x, h)
            return ember.relu(a)

    x, h = ember.ones(3, 4), ember.zeros(3, 4)
    traced = ember.jit.trace(Outer(), (x, h))
    assert "prim::CallMethod" in traced.graph and "prim::TupleUnpack" in traced.graph
    inlined = traced.inlined_graph
    assert "prim::CallMethod" not in inlined and "prim::TupleUnpack" not in inlined
    lines = inlined.splitlines()
    kinds = [line.split(" = ")[1].split("(")[0].split("[")[0] for line in lines[3:-1]]
    assert kinds == ["prim::GetAttr", "prim::GetAttr", "prim::GetAttr", "prim::GetAttr",
                     "aten::linear", "aten::add", "aten::tanh", "aten::relu"]
    assert '%bias : Tensor = prim::GetAttr[name="bias"](%linear)' in inlined
    assert lines[-1].startswith("  return (%")
    # the tuple the cell returns is unpacked; its one tensor, twice, is known by the last
    # part (torch prints ``_0, y, = (cell).forward(x, h, )`` and ``torch.relu(y)``)
    assert "_0, _1, = (cell).forward(x, h, )" in traced.code
    assert traced.code.endswith("  return torch.relu(_1)\n")
