"""``.code`` and ``.graph`` of scripted functions and modules (NOTE [ Script IR ] in
ember/jit/_script_ir.py): the code text is torch's, character for character. Each case is
built by a factory taking the framework, so the same source runs through ember and, when it
is installed, through torch; the expected texts are also written out, so the tests run
without torch."""

import io
import warnings

import pytest

import ember


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


# -- the tutorial's modules (Introduction to TorchScript) ------------------------------------

def _tutorial(T):
    class MyDecisionGate(T.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            else:
                return -x

    class MyCell(T.nn.Module):
        def __init__(self, dg):
            super().__init__()
            self.dg = dg
            self.linear = T.nn.Linear(4, 4)

        def forward(self, x, h):
            new_h = T.tanh(self.dg(self.linear(x)) + h)
            return new_h, new_h

    x, h = T.ones(3, 4), T.ones(3, 4)
    gate = T.jit.script(MyDecisionGate())
    cell = T.jit.script(MyCell(gate))

    class MyRNNLoop(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = T.jit.trace(MyCell(gate), (x, h))

        def forward(self, xs):
            h, y = T.zeros(3, 4), T.zeros(3, 4)
            for i in range(xs.size(0)):
                y, h = self.cell(xs[i], h)
            return y, h

    return gate, cell, T.jit.script(MyRNNLoop())


GATE = """\
def forward(self,
    x: Tensor) -> Tensor:
  if bool(torch.gt(torch.sum(x), 0)):
    _0 = x
  else:
    _0 = torch.neg(x)
  return _0
"""
CELL = """\
def forward(self,
    x: Tensor,
    h: Tensor) -> Tuple[Tensor, Tensor]:
  dg = self.dg
  linear = self.linear
  _0 = torch.add((dg).forward((linear).forward(x, ), ), h)
  new_h = torch.tanh(_0)
  return (new_h, new_h)
"""
LOOP = """\
def forward(self,
    xs: Tensor) -> Tuple[Tensor, Tensor]:
  h = torch.zeros([3, 4])
  y = torch.zeros([3, 4])
  y0 = y
  h0 = h
  for i in range(torch.size(xs, 0)):
    cell = self.cell
    _0 = (cell).forward(torch.select(xs, 0, i), h0, )
    y1, h1, = _0
    y0, h0 = y1, h1
  return (y0, h0)
"""


def test_tutorial_code_is_torch_text():
    gate, cell, loop = _tutorial(ember)
    assert gate.code == GATE
    assert cell.code == CELL
    assert loop.code == LOOP
    torch = _torch()
    if torch is not None:
        expected = [m.code for m in _tutorial(torch)]
        assert [gate.code, cell.code, loop.code] == expected


def test_tutorial_graph_structure():
    gate, cell, loop = _tutorial(ember)
    text = str(gate.graph)
    assert text.startswith("graph(%self : __torch__.")
    assert "%x.1 : Tensor):" in text
    for piece in ("aten::sum(%x.1)", "= aten::gt(", "bool = aten::Bool(",
                  "Tensor = prim::If(", "block0():\n      -> (%x.1)",
                  "block1():\n      %", "Tensor = aten::neg(%x.1)"):
        assert piece in text
    text = str(loop.graph)
    for piece in ("int[] = prim::ListConstruct(", "Tensor = aten::zeros(",
                  "int = aten::size(%xs.1, ", "Tensor = prim::Loop(",
                  "block0(%i.1 : int, ", '= prim::GetAttr[name="cell"](%self)',
                  "aten::select(%xs.1, ", 'prim::CallMethod[name="forward"](%cell, ',
                  "Tensor = prim::TupleUnpack(", "(Tensor, Tensor) = prim::TupleConstruct("):
        assert piece in text
    # every line a node names its place in the source
    assert "test_script_code.py:" in text


class SavedGate(ember.nn.Module):  # (at module level: a saved module's class is imported)
    def forward(self, x):
        if x.sum() > 0:
            return x
        else:
            return -x


class SavedLoop(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = ember.jit.script(SavedGate())

    def forward(self, xs):
        h, y = ember.zeros(3, 4), ember.zeros(3, 4)
        for i in range(xs.size(0)):
            y, h = self.gate(xs[i]), h
        return y, h


def test_code_survives_save_and_load():
    loop = ember.jit.script(SavedLoop())
    buf = io.BytesIO()
    ember.jit.save(loop, buf)
    buf.seek(0)
    loaded = ember.jit.load(buf)
    assert loaded.code == loop.code
    assert loaded.gate.code == GATE
    assert "for i in range(torch.size(xs, 0)):" in loaded.code
    torch = _torch()
    if torch is not None:
        class Gate(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x
                else:
                    return -x

        class Loop(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.gate = torch.jit.script(Gate())

            def forward(self, xs):
                h, y = torch.zeros(3, 4), torch.zeros(3, 4)
                for i in range(xs.size(0)):
                    y, h = self.gate(xs[i]), h
                return y, h

        assert loaded.code == torch.jit.script(Loop()).code


def test_scripted_module_still_runs_eagerly():
    gate, cell, loop = _tutorial(ember)
    x = ember.ones(3, 4)
    assert ember.equal(gate(x), x) and ember.equal(gate(-x), x)
    y, h = loop(ember.ones(5, 3, 4))
    assert y.shape == (3, 4) and ember.equal(y, h)


# -- functions -----------------------------------------------------------------------------

def _functions(T):
    from typing import Optional

    F = T.nn.functional
    Tensor = T.Tensor

    def reassign(x, y):
        z = x + y
        z = z * 2
        return z.relu()

    def for_range(x, n: int):
        for i in range(n):
            x = x + i
        return x

    def while_loop(x):
        i = 0
        while i < 3:
            x = x * 2.0
            i += 1
        return x

    def optional_arg(x, y: Optional[Tensor] = None):  # noqa: UP045
        if y is None:
            return x
        return x + y

    def lists_and_tuples(x):
        a = [x, x]
        b = (x, 1)
        return T.cat(a, 0), b[1]

    def branches(x, k: int):
        if k > 2:
            y = x + 1
        else:
            y = x - 1
        return y.sum(), y.mean(dim=0)

    def indexing(x):
        return x[0] + x[1, 2] - x.size(0) * 3

    def functional(x):
        return F.relu(x).view(-1, 2).t()

    def ints(a: int, b: int) -> int:
        c = a + b * 2
        if c > 3 and a < b:
            c = c - 1
        return c

    return [reassign, for_range, while_loop, optional_arg, lists_and_tuples, branches,
            indexing, functional, ints]


FUNCTIONS = [
    """def reassign(x: Tensor,
    y: Tensor) -> Tensor:
  z = torch.add(x, y)
  z0 = torch.mul(z, 2)
  return torch.relu(z0)
""",
    """def for_range(x: Tensor,
    n: int) -> Tensor:
  x0 = x
  for i in range(n):
    x0 = torch.add(x0, i)
  return x0
""",
    """def while_loop(x: Tensor) -> Tensor:
  x0 = x
  i = 0
  _0 = True
  while _0:
    x1 = torch.mul(x0, 2.)
    i0 = torch.add(i, 1)
    _0, x0, i = torch.lt(i0, 3), x1, i0
  return x0
""",
    """def optional_arg(x: Tensor,
    y: Optional[Tensor]=None) -> Tensor:
  if torch.__is__(y, None):
    _0 = x
  else:
    y0 = unchecked_cast(Tensor, y)
    _0 = torch.add(x, y0)
  return _0
""",
    """def lists_and_tuples(x: Tensor) -> Tuple[Tensor, int]:
  a = [x, x]
  return (torch.cat(a), 1)
""",
    """def branches(x: Tensor,
    k: int) -> Tuple[Tensor, Tensor]:
  if torch.gt(k, 2):
    y = torch.add(x, 1)
  else:
    y = torch.sub(x, 1)
  return (torch.sum(y), torch.mean(y, [0]))
""",
    """def indexing(x: Tensor) -> Tensor:
  _0 = torch.select(x, 0, 0)
  _1 = torch.select(torch.select(x, 0, 1), 0, 2)
  _2 = torch.sub(torch.add(_0, _1), torch.mul(torch.size(x, 0), 3))
  return _2
""",
    """def functional(x: Tensor) -> Tensor:
  _0 = __torch__.torch.nn.functional.relu(x, False, )
  return torch.t(torch.view(_0, [-1, 2]))
""",
    """def ints(a: int,
    b: int) -> int:
  c = torch.add(a, torch.mul(b, 2))
  if torch.gt(c, 3):
    _0 = torch.lt(a, b)
  else:
    _0 = False
  if _0:
    c0 = torch.sub(c, 1)
  else:
    c0 = c
  return c0
""",
]


@pytest.mark.parametrize("i", range(len(FUNCTIONS)))
def test_function_code_is_torch_text(i):
    fn = _functions(ember)[i]
    assert ember.jit.script(fn).code == FUNCTIONS[i]
    torch = _torch()
    if torch is not None:
        assert ember.jit.script(fn).code == torch.jit.script(_functions(torch)[i]).code


def test_function_graph_has_blocks_and_types():
    fns = _functions(ember)
    text = str(ember.jit.script(fns[1]).graph)  # for_range
    assert text.startswith("graph(%x.1 : Tensor,\n      %n.1 : int):")
    assert "Tensor = prim::Loop(%n.1, " in text
    assert "block0(%i.1 : int, %x." in text
    text = str(ember.jit.script(fns[3]).graph)  # optional_arg
    assert "%y.1 : Tensor?" in text and "bool = aten::__is__(%y.1, " in text
    assert "Tensor = prim::unchecked_cast(%y.1)" in text
    assert ember.jit.script(fns[3]).inlined_graph == ember.jit.script(fns[3]).graph


def test_scripted_functions_still_run():
    fns = _functions(ember)
    x = ember.ones(2, 2)
    assert ember.jit.script(fns[1])(x, 3).tolist() == [[4.0, 4.0], [4.0, 4.0]]
    assert ember.jit.script(fns[8])(1, 3) == 6


# -- modules --------------------------------------------------------------------------------

def _modules(T):
    from typing import Optional

    Tensor = T.Tensor

    class Attrs(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = T.nn.Linear(3, 3)
            self.scale = 2.0

        def forward(self, x, h: Optional[Tensor] = None):  # noqa: UP045
            y = self.linear(x) * self.scale
            if h is not None:
                y = y + h
            return T.sigmoid(y), y.shape[0]

    class Layers(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = T.nn.ModuleList([T.nn.Linear(2, 2), T.nn.Tanh()])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.layers[0](x)

    return [Attrs(), Layers(), T.nn.Sequential(T.nn.Linear(2, 2), T.nn.ReLU()),
            T.nn.Linear(2, 3)]


MODULES = [
    """def forward(self,
    x: Tensor,
    h: Optional[Tensor]=None) -> Tuple[Tensor, int]:
  linear = self.linear
  _0 = (linear).forward(x, )
  scale = self.scale
  y = torch.mul(_0, scale)
  if torch.__isnot__(h, None):
    h0 = unchecked_cast(Tensor, h)
    y0 = torch.add(y, h0)
  else:
    y0 = y
  _1 = (torch.sigmoid(y0), (torch.size(y0))[0])
  return _1
""",
    """def forward(self,
    x: Tensor) -> Tensor:
  layers = self.layers
  _0 = getattr(layers, "0")
  _1 = getattr(layers, "1")
  x0 = (_0).forward(x, )
  x1 = (_1).forward(x0, )
  layers0 = self.layers
  _00 = getattr(layers0, "0")
  return (_00).forward(x1, )
""",
    """def forward(self,
    input: Tensor) -> Tensor:
  _0 = getattr(self, "0")
  _1 = getattr(self, "1")
  input0 = (_0).forward(input, )
  return (_1).forward(input0, )
""",
    """def forward(self,
    input: Tensor) -> Tensor:
  weight = self.weight
  bias = self.bias
  return torch.linear(input, weight, bias)
""",
]


@pytest.mark.parametrize("i", range(len(MODULES)))
def test_module_code_is_torch_text(i):
    module = ember.jit.script(_modules(ember)[i])
    assert module.code == MODULES[i]
    torch = _torch()
    if torch is not None:
        assert module.code == torch.jit.script(_modules(torch)[i]).code


def test_module_graph_and_inlined_graph():
    module = ember.jit.script(_modules(ember)[0])
    text = str(module.graph)
    assert '%linear : __torch__.torch.nn.modules.linear.Linear = prim::GetAttr[name="linear"]' \
        "(%self)" in text
    assert 'prim::CallMethod[name="forward"](%linear, %x.1)' in text
    assert '%scale : float = prim::GetAttr[name="scale"](%self)' in text
    inlined = str(module.inlined_graph)
    assert "prim::CallMethod" not in inlined
    assert '%weight : Tensor = prim::GetAttr[name="weight"](%linear)' in inlined
    assert "aten::linear(%x.1, %weight, %bias)" in inlined


def test_unknown_source_raises_not_implemented():
    class Slicer(ember.nn.Module):
        def forward(self, x):
            return [v for v in x[1:]]

    scripted = ember.jit.script(Slicer())
    with pytest.raises(NotImplementedError, match="TorchScript"):
        _ = scripted.code
    with pytest.raises(NotImplementedError, match="TorchScript"):
        _ = scripted.graph
    assert scripted(ember.ones(3, 2))[0].tolist() == [1.0, 1.0]  # still runs
