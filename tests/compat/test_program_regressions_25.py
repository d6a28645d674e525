"""Regressions found by running public research programs (tests/compat/test_research_repos_4.py)
unchanged under ``python -m ember.compat.run``: each test is a minimal program of our own that
reproduces one failure, checked against torch where torch is installed."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ember

try:
    import torch
    HAS_TORCH = True
except ImportError:  # pragma: no cover
    torch = None
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
ROOT = Path(__file__).resolve().parents[2]


def _printed(script, under_ember):
    """What ``script`` prints (stdout, then stderr's warning lines) run on its own."""
    prefix = ["-m", "ember.compat.run"] if under_ember else []
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"regression_25_{os.getpid()}.py"
    path.write_text(textwrap.dedent(script))
    try:
        proc = subprocess.run([sys.executable, *prefix, str(path)], capture_output=True,
                              text=True, timeout=120, cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    finally:
        path.unlink()
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


# -- legacy sparse constructors (tkipf/pygcn's torch.sparse.FloatTensor(indices, values, size)) --

@pytest.mark.parametrize("make, values_dtype", [
    ("FloatTensor", ember.float64), ("DoubleTensor", ember.float32),
    ("LongTensor", ember.float32), ("FloatTensor", ember.int64)])
def test_legacy_sparse_constructor_keeps_values_dtype(make, values_dtype):
    i = ember.tensor([[0, 1], [2, 0]])
    v = ember.tensor([1, 2], dtype=values_dtype)
    s = getattr(ember.sparse, make)(i, v, ember.Size([2, 3]))
    assert s.dtype == values_dtype and s.shape == (2, 3)


def test_legacy_sparse_constructor_empty_forms_take_the_type_dtype():
    assert ember.sparse.DoubleTensor(2, 3).dtype == ember.float64
    assert ember.sparse.LongTensor(ember.Size([4])).shape == (4,)
    assert ember.sparse.LongTensor().shape == (0,)


@pytest.mark.parametrize("args", [((2, 3),), ([2, 3],)])
def test_legacy_sparse_constructor_rejects_a_plain_sequence(args):
    with pytest.raises(TypeError, match=r"SparseTensor\(sequence\) only accepts sizes"):
        ember.sparse.FloatTensor(*args)


def test_legacy_sparse_constructor_rejects_indices_alone():
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        ember.sparse.FloatTensor(ember.tensor([[0], [1]]))


@needs_torch
def test_legacy_sparse_constructor_warnings_match_torch():
    # one deprecation warning per form and process; no word about unchecked invariants
    script = """
        import warnings
        import torch
        i, v = torch.tensor([[0], [5]]), torch.tensor([1.0])
        for _ in range(2):
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                torch.sparse.FloatTensor(i, v, torch.Size([2, 2]))
                torch.sparse.DoubleTensor(i, v, torch.Size([2, 2]))
                torch.sparse.FloatTensor(i, v)
                torch.sparse.FloatTensor(2, 3)
                torch.sparse.FloatTensor(torch.Size([2, 3]))
                torch.sparse.FloatTensor()
            for w in seen:
                print(str(w.message).split(" (Triggered internally")[0])
            print("--")
    """
    assert _printed(script, True) == _printed(script, False)


# -- removed linear-algebra functions (ikostrikov's ACKTR calls torch.symeig) ----------------------

@needs_torch
@pytest.mark.parametrize("name, nargs", [("symeig", 1), ("eig", 1), ("lstsq", 2), ("solve", 2),
                                         ("matrix_rank", 1)])
def test_removed_linalg_function_raises_torchs_error(name, nargs):
    with pytest.raises(RuntimeError) as expected:
        getattr(torch, name)(*[torch.eye(3)] * nargs)
    with pytest.raises(RuntimeError) as got:
        getattr(ember, name)(*[ember.eye(3)] * nargs)
    assert str(got.value) == str(expected.value).split(" (Triggered internally")[0]


@needs_torch
@pytest.mark.parametrize("name, nargs", [("symeig", 0), ("eig", 0), ("lstsq", 1), ("solve", 1)])
def test_removed_linalg_method_raises_torchs_error(name, nargs):
    with pytest.raises(RuntimeError) as expected:
        getattr(torch.eye(3), name)(*[torch.eye(3)] * nargs)
    with pytest.raises(RuntimeError) as got:
        getattr(ember.eye(3), name)(*[ember.eye(3)] * nargs)
    assert str(got.value) == str(expected.value)


# -- legacy module backward hooks (KFAC's register_backward_hook) ----------------------------------

def _legacy_hook_run(T, make, x_requires_grad=True):
    """What a register_backward_hook hook sees, and the input gradient after it zeroes the
    weight's gradient."""
    T.manual_seed(0)
    module = make(T)
    seen = []

    def hook(m, grad_input, grad_output):
        seen.append(([None if g is None else tuple(g.shape) for g in grad_input],
                     [tuple(g.shape) for g in grad_output],
                     [g.detach().numpy().copy() for g in grad_output]))

    module.register_backward_hook(hook)
    x = T.randn(4, 3, requires_grad=x_requires_grad)
    module(x).square().sum().backward()
    return seen


@needs_torch
@pytest.mark.parametrize("make", [
    lambda T: T.nn.Linear(3, 2),
    lambda T: T.nn.Linear(3, 2, bias=False),
    lambda T: T.nn.Sequential(T.nn.Linear(3, 2), T.nn.Tanh()),
    lambda T: T.nn.ReLU()])
def test_legacy_backward_hook_sees_the_last_nodes_gradients(make):
    import numpy as np

    got, expected = _legacy_hook_run(ember, make), _legacy_hook_run(torch, make)
    assert len(got) == len(expected) == 1
    assert got[0][:2] == expected[0][:2]
    np.testing.assert_allclose(got[0][2][0], expected[0][2][0], rtol=1e-6)


@needs_torch
def test_legacy_backward_hook_can_replace_grad_input():
    def run(T):
        T.manual_seed(0)
        lin = T.nn.Linear(3, 2)
        # (bias, input, weight.t()) as PyTorch's addmm node has them: keep only the input's
        lin.register_backward_hook(lambda m, gi, go: (None, gi[1], T.zeros_like(gi[2])))
        x = T.randn(4, 3, requires_grad=True)
        lin(x).sum().backward()
        return x.grad.numpy(), lin.weight.grad.numpy(), lin.bias.grad

    (gx, gw, gb), (tx, tw, tb) = run(ember), run(torch)
    import numpy as np

    np.testing.assert_allclose(gx, tx, rtol=1e-6)
    np.testing.assert_array_equal(gw, tw)
    assert gb is None and tb is None


@needs_torch
def test_legacy_backward_hook_warns_as_torch():
    script = """
        import warnings
        import torch
        warnings.simplefilter("always")
        for make in (lambda: torch.nn.Linear(3, 2), lambda: torch.nn.Tanh()):
            m = make()
            m.register_backward_hook(lambda *a: None)
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                m(torch.randn(2, 3, requires_grad=True))
            print([(w.category.__name__, str(w.message)) for w in seen])
    """
    assert _printed(script, True) == _printed(script, False)


@needs_torch
def test_node_hook_of_linear_sees_addmm_inputs():
    def run(T):
        T.manual_seed(0)
        lin = T.nn.Linear(3, 2)
        y = lin(T.randn(4, 3, requires_grad=True))
        shapes = []
        y.grad_fn.register_hook(lambda gi, go: shapes.append(
            [None if g is None else tuple(g.shape) for g in gi]))
        y.sum().backward()
        return type(y.grad_fn).__name__, shapes

    assert run(ember) == run(torch)


# -- GroupNorm's construction error (openai/guided-diffusion at a small width) --------------------

@needs_torch
def test_group_norm_indivisible_channels_message_matches_torch():
    with pytest.raises(ValueError) as expected:
        torch.nn.GroupNorm(32, 16)
    with pytest.raises(ValueError) as got:
        ember.nn.GroupNorm(32, 16)
    assert str(got.value) == str(expected.value)


@needs_torch
def test_global_legacy_backward_hook_runs_on_each_modules_last_node():
    # (in a subprocess: a global hook fixes the process-wide kind, legacy or full)
    script = """
        import warnings
        import torch
        from torch.nn.modules.module import register_module_backward_hook
        warnings.simplefilter("ignore")
        seen = []
        register_module_backward_hook(lambda m, gi, go: seen.append((
            type(m).__name__, [None if g is None else tuple(g.shape) for g in gi],
            [tuple(g.shape) for g in go])))
        net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
        net(torch.randn(5, 3, requires_grad=True)).sum().backward()
        print(seen)
    """
    assert _printed(script, True) == _printed(script, False)
