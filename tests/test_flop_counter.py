"""ember.utils.flop_counter.FlopCounterMode against torch's counts and tables."""

import pytest

import ember
from ember.utils.flop_counter import FlopCounterMode, register_flop_formula

torch = pytest.importorskip("torch")
from torch.utils.flop_counter import FlopCounterMode as TorchFlopCounterMode  # noqa: E402


def _programs(m):
    """name -> program(module m) written against the namespace m (ember or torch)."""

    def mlp():
        net = m.nn.Sequential(m.nn.Linear(100, 200),
                              m.nn.Sequential(m.nn.ReLU(), m.nn.Linear(200, 50)))
        net(m.randn(16, 100, requires_grad=True)).sum().backward()

    def products():
        m.randn(30, 40) @ m.randn(40, 50)
        m.bmm(m.randn(2, 3, 4), m.randn(2, 4, 5))
        m.randn(2, 3, 4) @ m.randn(4, 5)
        m.randn(5, 2, 3, 4) @ m.randn(5, 2, 4, 6)
        m.randn(4) @ m.randn(4)

    def convs():
        m.nn.ConvTranspose2d(3, 4, 3)(m.randn(2, 3, 8, 8))
        m.nn.Conv1d(3, 4, 3)(m.randn(2, 3, 8))
        x = m.randn(2, 4, 9, 9, requires_grad=True)
        m.nn.Conv2d(4, 4, 3, groups=2, stride=2)(x).sum().backward()

    class Net(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.c = m.nn.Conv2d(3, 8, 3, padding=1)
            self.fc = m.nn.Linear(8 * 8 * 8, 10)

        def forward(self, x):
            return self.fc(m.relu(self.c(x)).flatten(1))

    def cnn():
        net = Net()
        y = net(m.randn(4, 3, 8, 8))
        m.nn.functional.cross_entropy(y, m.tensor([1, 2, 3, 4])).backward()

    return {"mlp": mlp, "products": products, "convs": convs, "cnn": cnn}


try:
    import tabulate  # noqa: F401  (torch's FlopCounterMode needs it for its table)
    HAS_TABULATE = True
except ImportError:
    HAS_TABULATE = False


def _run(counter_cls, program, depth):
    fc = counter_cls(display=False, depth=depth)
    with fc:
        program()
    counts = {mod: {str(k): v for k, v in d.items()} for mod, d in fc.get_flop_counts().items()}
    return fc.get_total_flops(), counts, fc.get_table(depth) if HAS_TABULATE else None


@pytest.mark.parametrize("depth", [1, 3])
@pytest.mark.parametrize("name", ["mlp", "products", "convs", "cnn"])
def test_flop_counts_and_table_match_torch(name, depth):
    got = _run(FlopCounterMode, _programs(ember)[name], depth)
    want = _run(TorchFlopCounterMode, _programs(torch)[name], depth)
    assert got[0] == want[0]
    assert got[1] == want[1]
    assert got[2] == want[2]


def test_flop_counts_keyed_by_ops_packets():
    with FlopCounterMode(display=False) as fc:
        ember.randn(3, 4) @ ember.randn(4, 5)
    assert fc.get_flop_counts()["Global"][ember.ops.aten.mm] == 120


def test_flop_counter_display_prints_table(capsys):
    with FlopCounterMode(display=True):
        ember.randn(3, 4) @ ember.randn(4, 5)
    assert "aten.mm" in capsys.readouterr().out


def test_flop_counter_custom_mapping():
    def mm_flops(a_shape, b_shape, out_shape=None, **kw):
        return 7

    with FlopCounterMode(display=False, custom_mapping={ember.ops.aten.mm: mm_flops}) as fc:
        ember.randn(3, 4) @ ember.randn(4, 5)
    assert fc.get_total_flops() == 7


def test_register_flop_formula_counts_a_new_op():
    @register_flop_formula("addbmm")
    def _(self_shape, a_shape, b_shape, out_shape=None, **kw):
        return 2 * a_shape[0] * a_shape[1] * a_shape[2] * b_shape[2]

    with FlopCounterMode(display=False) as fc:
        ember.addbmm(ember.zeros(3, 5), ember.randn(2, 3, 4), ember.randn(2, 4, 5))
    assert fc.get_total_flops() == 240
