"""Behaviours that new tutorial-style programs run through ``python -m ember.compat.run``
found different from PyTorch; one behaviour each, compared with torch where it is installed."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("make", [
    lambda: np.float64(1.5), lambda: np.float32(2.0), lambda: np.int32(3), lambda: np.bool_(True),
    lambda: np.complex64(1j), lambda: 1.5, lambda: 7, lambda: True])
@pytest.mark.parametrize("fn", ["as_tensor", "asarray"])
def test_as_tensor_of_a_number_is_zero_dim(fn, make):
    got = getattr(ember, fn)(make())
    want = getattr(torch, fn)(make())
    assert tuple(got.shape) == tuple(want.shape) == ()
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    assert got.item() == want.item()


def test_default_convert_of_numpy_scalar_is_zero_dim():
    from ember.utils.data import default_convert

    got = default_convert({"a": np.float64(1.5)})["a"]
    want = torch.utils.data.default_convert({"a": np.float64(1.5)})["a"]
    assert tuple(got.shape) == tuple(want.shape) == ()


def test_from_numpy_of_numpy_scalar_names_its_type():
    with pytest.raises(TypeError) as want:
        torch.from_numpy(np.float64(2))
    with pytest.raises(TypeError) as got:
        ember.from_numpy(np.float64(2))
    assert str(got.value) == str(want.value)


def test_broadcast_tensors_returns_a_tensor_of_the_common_shape_itself():
    a = ember.zeros(2, requires_grad=True)
    x, y = ember.broadcast_tensors(a, ember.ones(2))
    ta = torch.zeros(2, requires_grad=True)
    tx, _ = torch.broadcast_tensors(ta, torch.ones(2))
    assert (x is a) == (tx is ta) == True  # noqa: E712
    assert x.is_leaf and x.grad_fn is None


def test_broadcast_tensors_still_expands_the_others():
    a = ember.zeros(2, requires_grad=True)
    x, _ = ember.broadcast_tensors(a, ember.ones(3, 1))
    assert x.shape == (3, 2) and type(x.grad_fn).__name__ == "ExpandBackward0"


def test_normal_keeps_its_parameters_as_given():
    loc = ember.tensor([0.0, 1.0], requires_grad=True)
    d = ember.distributions.Normal(loc, ember.ones(2))
    tloc = torch.tensor([0.0, 1.0], requires_grad=True)
    td = torch.distributions.Normal(tloc, torch.ones(2))
    assert (d.loc is loc) == (td.loc is tloc) == True  # noqa: E712
    assert repr(d.loc) == repr(td.loc)


def _run(tmp_path, source, under_ember=True):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(source))
    runner = ["-m", "ember.compat.run"] if under_ember else []
    env = dict(os.environ, PYTHONWARNINGS="error::ImportWarning")
    return subprocess.run([sys.executable, *runner, str(script)], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env=env)


def test_relative_imports_inside_aliased_modules_do_not_warn(tmp_path):
    # ember's modules keep their own __spec__ under their torch names: a relative import run
    # later inside one of their functions must not see __package__ != __spec__.parent
    r = _run(tmp_path, """
        import torch, torch.nn as nn
        import torch.utils.checkpoint as cp
        print(cp.__spec__.name.split('.')[-1], cp.__package__.split('.')[-1])
        x = torch.ones(2, requires_grad=True)
        print(cp.checkpoint(nn.Linear(2, 2), x, use_reentrant=True).shape)
    """)
    assert r.returncode == 0, r.stderr
    assert "ImportWarning" not in r.stderr
    assert r.stdout.split() == ["checkpoint", "utils", "torch.Size([2])"]


SPAWN = """
    import collections, sys
    import torch
    from torch.utils.data import DataLoader, Dataset
    P = collections.namedtuple('P', 'a b')
    class D(Dataset):
        def __len__(self): return 2
        def __getitem__(self, i): return P(i, float(i))
    if __name__ == '__main__':
        dl = DataLoader(D(), batch_size=2, num_workers=1, multiprocessing_context='spawn')
        print(next(iter(dl)))
        print(sys.modules['__main__'] is sys.modules['__mp_main__'], __spec__, __package__)
"""


def test_spawn_worker_returns_the_scripts_own_classes(tmp_path):
    # a spawn child pickles the script's namedtuple as __mp_main__.P: the parent must find it
    want = _run(tmp_path, SPAWN, under_ember=False)
    got = _run(tmp_path, SPAWN)
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout == want.stdout


@pytest.mark.parametrize("build", [
    lambda nn: nn.ZeroPad1d(2), lambda nn: nn.ZeroPad2d((1, 1, 2, 0)), lambda nn: nn.ZeroPad3d(1),
    lambda nn: nn.ConstantPad2d(1, 0.5),
    lambda nn: nn.RNN(3, 4, nonlinearity="relu"), lambda nn: nn.RNNCell(3, 4, nonlinearity="relu"),
    lambda nn: nn.LayerNorm([4, 4], elementwise_affine=False),
    lambda nn: nn.LayerNorm(3, bias=False), lambda nn: nn.LayerNorm(3)])
def test_module_prints_as_pytorchs(build):
    assert repr(build(ember.nn)) == repr(build(torch.nn))


def test_full_backward_hook_output_prints_pytorchs_node_name():
    def run(lib):
        net = lib.nn.Linear(2, 2)
        net.register_full_backward_hook(lambda m, gi, go: None)
        return type(net(lib.ones(1, 2, requires_grad=True)).grad_fn).__name__

    assert run(ember) == run(torch) == "BackwardHookFunctionBackward"
