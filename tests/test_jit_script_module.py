"""``jit.script``/``jit.trace`` of a module: views of it as PyTorch's script modules are
(NOTE [ Script modules as views ]) -- type names, printed forms, shared parameters, own
training flag, ``save``/``load``, and the module's own Python code running inside."""

import copy
import io
import warnings

import pytest

import ember
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")


def _net_class(mod):
    class Net(mod.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = mod.nn.Linear(2, 2)
            self.bn = mod.nn.BatchNorm1d(2)
            self.seq = mod.nn.Sequential(mod.nn.ReLU(), mod.nn.Linear(2, 1))

        def forward(self, x):
            return self.seq(self.bn(self.fc(x)))

    return Net


Net = _net_class(ember)  # at module level, so that pickling finds it
Net.__qualname__ = "Net"


def _net(mod):
    return Net() if mod is ember else _net_class(mod)()


def _both(fn):
    import torch

    return fn(ember), fn(torch)


@needs_torch
def test_script_prints_and_names_as_torch():
    got, want = _both(lambda m: (repr(s := m.jit.script(_net(m))), type(s).__name__,
                                 type(s.seq).__name__, s.original_name, s.fc.original_name))
    assert got == want


@needs_torch
def test_trace_prints_and_names_as_torch():
    def traced(m):
        t = m.jit.trace(_net(m), m.ones(4, 2))
        return repr(t), type(t).__name__, type(t.fc).__name__, type(t.seq).__name__

    got, want = _both(traced)
    assert got == want


@needs_torch
@pytest.mark.parametrize("how", ["script", "trace"])
def test_view_shares_parameters_but_not_training_flag(how):
    def facts(m):
        net = _net(m)
        view = m.jit.script(net) if how == "script" else m.jit.trace(net, m.ones(4, 2))
        view.eval()
        return (view.fc.weight is net.fc.weight, view.bn.running_mean is net.bn.running_mean,
                net.training, view.training, view.fc.training, sorted(view.state_dict()))

    got, want = _both(facts)
    assert got == want


@needs_torch
def test_loaded_script_module_prints_as_torch(tmp_path):
    def loaded(m):
        net = _net(m)
        x = m.ones(4, 2)
        m.jit.trace(net, x).save(str(tmp_path / f"{m.__name__}.pt"))
        back = m.jit.load(str(tmp_path / f"{m.__name__}.pt"))
        return type(back).__name__, repr(back), m.allclose(back(x), net(x))

    got, want = _both(loaded)
    assert got == want


def test_view_runs_helpers_and_super_of_the_module_class():
    class Scaled(ember.nn.Linear):
        def scale(self, y):
            return y * 2

        def forward(self, x):
            return self.scale(super().forward(x))

    net = Scaled(2, 2)
    x = ember.ones(1, 2)
    assert ember.equal(ember.jit.script(net)(x), net(x))
    assert ember.equal(ember.jit.trace(net, x)(x), net(x))


def test_script_view_iterates_and_indexes_a_sequential():
    seq = ember.jit.script(ember.nn.Sequential(ember.nn.ReLU(), ember.nn.Tanh()))
    assert len(seq) == 2 and [type(m).__name__ for m in seq] == ["RecursiveScriptModule"] * 2
    assert seq[1].original_name == "Tanh"


def test_shared_submodule_gets_one_view():
    lin = ember.nn.Linear(2, 2)
    view = ember.jit.script(ember.nn.Sequential(lin, lin))
    assert view[0] is view[1]


def test_script_of_a_script_module_returns_it():
    view = ember.jit.script(ember.nn.Linear(2, 2))
    assert ember.jit.script(view) is view


def test_view_deepcopies_independently():
    view = ember.jit.script(_net(ember))
    twin = copy.deepcopy(view)
    assert type(twin).__name__ == "RecursiveScriptModule"
    assert twin.fc.weight is not view.fc.weight
    assert ember.equal(twin.fc.weight, view.fc.weight)


def test_view_pickles_through_save_and_load():
    view = ember.jit.trace(_net(ember), ember.ones(4, 2))
    buf = io.BytesIO()
    ember.save(view, buf)
    buf.seek(0)
    back = ember.load(buf, weights_only=False)
    assert type(back).__name__ == "TopLevelTracedModule"
    assert repr(back) == repr(view)


def test_view_code_is_the_lowered_forward():
    # (more, against torch's text, in tests/jit/test_script_code.py)
    view = ember.jit.script(ember.nn.Linear(2, 2))
    assert view.code.startswith("def forward(self,\n    input: Tensor) -> Tensor:\n")


def test_modules_own_graph_attribute_wins_on_its_view():
    class GraphNet(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.graph = "adjacency"

        def forward(self, x):
            return x

    assert ember.jit.script(GraphNet()).graph == "adjacency"


def test_trace_of_a_function_returns_script_function_as_torch():
    torch = pytest.importorskip("torch")

    def f(x, y):
        return x + y, x - y

    def traced(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = lib.jit.trace(f, (lib.ones(1), lib.ones(1)))
        return type(g).__name__.rsplit(".", 1)[-1], g.qualified_name, str(g.schema)

    assert traced(ember) == traced(torch)
