"""What programs print under the torch alias (issue 17, session 13): ember's classes carry
PyTorch's names while it runs as ``torch`` (NOTE [ Class names under the alias ]), whole
models pickled there load back in ember and in PyTorch, and the messages of everyday
mistakes (shapes that do not multiply, indices out of range, wrong index dtypes, in-place on
a leaf) read as PyTorch's (NOTE [ Matmul's errors name the kernel it reaches ]). Checks
compare with torch when it is installed; the rest run without it."""

import pickle
import subprocess
import sys
import textwrap
from collections import OrderedDict

import pytest

import ember
from ember.autograd._base import RemovableHandle
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _run(code, *args, compat, tmp_path, name="prog.py"):
    """Run ``code`` as a script: under ``python -m ember.compat.run`` or plain ``python``."""
    script = tmp_path / name
    script.write_text(textwrap.dedent(code))
    cmd = [sys.executable] + (["-m", "ember.compat.run"] if compat else []) + [str(script)]
    run = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=300,
                         cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


# -- class names under the alias --------------------------------------------------------------

_NAMES = """
    import pickle, torch, torch.nn as nn
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.MultiheadAttention(4, 2),
                      nn.LazyLinear(3), nn.Upsample(scale_factor=2), nn.Linear(2, 2))
    opt = torch.optim.AdamW(m.parameters())
    print(type(torch.ones(1)), type(nn.Parameter(torch.ones(1))))
    for layer in m:
        print(type(layer), type(layer).__module__)
    print(type(opt), type(torch.optim.lr_scheduler.StepLR(opt, 2)))
    print(torch.Size, torch.dtype, torch.device, torch.Generator, torch.finfo)
    print(torch.utils.data.DataLoader, torch.utils.data.TensorDataset)
    print(torch.distributions.Normal, torch.autograd.Function)
    x = torch.ones(2, requires_grad=True)
    print(type((x * 2).sum().grad_fn), type(x.add(1).grad_fn).__module__)
    print(b"torch.nn.modules.batchnorm" in pickle.dumps(m[1]))
"""

_EXPECTED_NAMES = """\
<class 'torch.Tensor'> <class 'torch.nn.parameter.Parameter'>
<class 'torch.nn.modules.conv.Conv2d'> torch.nn.modules.conv
<class 'torch.nn.modules.batchnorm.BatchNorm2d'> torch.nn.modules.batchnorm
<class 'torch.nn.modules.activation.MultiheadAttention'> torch.nn.modules.activation
<class 'torch.nn.modules.linear.LazyLinear'> torch.nn.modules.linear
<class 'torch.nn.modules.upsampling.Upsample'> torch.nn.modules.upsampling
<class 'torch.nn.modules.linear.Linear'> torch.nn.modules.linear
<class 'torch.optim.adamw.AdamW'> <class 'torch.optim.lr_scheduler.StepLR'>
<class 'torch.Size'> <class 'torch.dtype'> <class 'torch.device'> <class 'torch._C.Generator'> \
<class 'torch.finfo'>
<class 'torch.utils.data.dataloader.DataLoader'> <class 'torch.utils.data.dataset.TensorDataset'>
<class 'torch.distributions.normal.Normal'> <class 'torch.autograd.function.Function'>
<class 'SumBackward0'> builtins
True""".splitlines()


def test_classes_print_their_torch_names_under_the_alias(tmp_path):
    assert _run(_NAMES, compat=True, tmp_path=tmp_path) == _EXPECTED_NAMES


@needs_torch
def test_class_names_match_torch(tmp_path):
    assert _run(_NAMES, compat=False, tmp_path=tmp_path) == _EXPECTED_NAMES


def test_uninstall_gives_the_names_back(tmp_path):
    code = """
        import ember, ember.compat
        ember.compat.install()
        import torch, torch.nn as nn
        import torch.distributions.kl  # a module first imported under the alias
        print(nn.BatchNorm2d.__module__, torch.Tensor.__module__,
              torch.distributions.kl.kl_divergence.__module__)
        x = torch.ones(1, requires_grad=True)
        print(type((x * 2).grad_fn).__module__)
        ember.compat.uninstall()
        print(ember.nn.BatchNorm2d.__module__, ember.Tensor.__module__, type(ember.ones(1)))
        print(type((ember.ones(1, requires_grad=True) * 2).grad_fn).__module__)
        import sys
        print(sorted(n for n in sys.modules if n == "torch" or n.startswith("torch.")))
    """
    assert _run(code, compat=False, tmp_path=tmp_path) == [
        "torch.nn.modules.batchnorm torch ember.distributions.kl",
        "builtins",
        "ember.nn.modules.normalization ember <class 'ember.Tensor'>",
        "ember.autograd._nodes",
        "[]"]


def test_classes_of_modules_loaded_later_are_renamed(tmp_path):
    # ember imports some modules only on first use; those classes take torch's names too
    code = """
        import sys, torch
        assert "ember.optim.swa_utils" not in sys.modules or True
        import torch.optim.swa_utils as swa
        import torch.utils.checkpoint as ck
        print(swa.AveragedModel.__module__, sys.modules[swa.AveragedModel.__module__] is swa)
        import inspect
        print(inspect.getmodule(torch.nn.Linear).__name__)
    """
    assert _run(code, compat=True, tmp_path=tmp_path) == [
        "torch.optim.swa_utils True", "ember.nn.modules.linear"]


# -- whole models saved under the alias ---------------------------------------------------------

_SAVE = """
    import sys, torch, torch.nn as nn
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(),
                      nn.LazyLinear(3))
    m.eval()
    out = m(torch.ones(1, 1, 5, 5))
    torch.save({"model": m, "opt": torch.optim.AdamW(m.parameters())}, sys.argv[1])
    print(out.detach().numpy().round(5).tolist())
"""

_LOAD = """
    import sys
    T = __import__(sys.argv[2])
    d = T.load(sys.argv[1], weights_only=False)
    print(type(d["model"][1]).__name__, type(d["opt"]).__name__)
    print(d["model"](T.ones(1, 1, 5, 5)).detach().numpy().round(5).tolist())
"""


def test_whole_model_saved_under_the_alias_loads_everywhere(tmp_path):
    path = str(tmp_path / "whole.pt")
    saved = _run(_SAVE, path, compat=True, tmp_path=tmp_path, name="save.py")
    with open(path, "rb") as f:
        raw = f.read()
    assert b"torch.nn.modules.batchnorm" in raw and b"ember.nn" not in raw
    back = ["BatchNorm2d AdamW"] + saved
    assert _run(_LOAD, path, "ember", compat=False, tmp_path=tmp_path, name="l1.py") == back
    assert _run(_LOAD, path, "torch", compat=True, tmp_path=tmp_path, name="l2.py") == back
    if HAS_TORCH:
        assert _run(_LOAD, path, "torch", compat=False, tmp_path=tmp_path,
                    name="l3.py") == back


def test_removable_handle_pickles_in_torch_layout():
    d = OrderedDict()
    h = RemovableHandle(d, OrderedDict())
    state = h.__getstate__()
    assert state[0] is d and state[1] == h.id and len(state[2]) == 1
    h2 = pickle.loads(pickle.dumps((d, h)))[1]
    assert h2.id == h.id
    old = RemovableHandle.__new__(RemovableHandle)
    old.__setstate__(((d, None), 7))  # ember's earlier layout
    assert old.id == 7 and old.hooks_dict_ref() is d and old.extra_dict_ref == ()


@needs_torch
def test_removable_handle_state_loads_in_torch():
    import torch.utils.hooks

    d = OrderedDict()
    state = RemovableHandle(d).__getstate__()
    h = torch.utils.hooks.RemovableHandle.__new__(torch.utils.hooks.RemovableHandle)
    h.__setstate__(state)
    assert h.hooks_dict_ref() is d


# -- messages of everyday mistakes --------------------------------------------------------------

def _message(T, f):
    try:
        f(T)
    except Exception as e:  # noqa: BLE001 -- the type is part of what is compared
        return type(e).__name__, str(e)
    return None


_MISTAKES = {
    "mm": lambda T: T.ones(2, 3) @ T.ones(4, 5),
    "mv": lambda T: T.ones(2, 3) @ T.ones(4),
    "vm": lambda T: T.ones(3) @ T.ones(4, 5),
    "vv": lambda T: T.ones(3) @ T.ones(4),
    "bmm": lambda T: T.ones(2, 2, 3) @ T.ones(2, 4, 5),
    "stack_mm": lambda T: T.ones(2, 2, 3) @ T.ones(4, 5),
    "stack_mv": lambda T: T.ones(2, 2, 3) @ T.ones(4),
    "vec_bmm": lambda T: T.ones(3) @ T.ones(2, 4, 5),
    "batch4": lambda T: T.ones(2, 3, 2, 3) @ T.ones(2, 3, 4, 5),
    "batch_bcast": lambda T: T.ones(2, 2, 3) @ T.ones(3, 3, 5),
    "zero_dim": lambda T: T.matmul(T.tensor(1.0), T.ones(2)),
    "torch_mm": lambda T: T.mm(T.ones(2, 3), T.ones(4, 5)),
    "torch_mv": lambda T: T.mv(T.ones(2, 3), T.ones(4)),
    "torch_bmm": lambda T: T.bmm(T.ones(2, 2, 3), T.ones(2, 4, 5)),
    "addmm": lambda T: T.addmm(T.ones(2, 5), T.ones(2, 3), T.ones(4, 5)),
    "dot": lambda T: T.dot(T.ones(3), T.ones(4)),
    "linear": lambda T: T.nn.Linear(10, 5)(T.ones(3, 7)),
    "gather": lambda T: T.zeros(3, 4).gather(1, T.tensor([[5]])),
    "scatter": lambda T: T.zeros(3, 4).scatter(1, T.tensor([[5]]), 1.0),
    "scatter_add": lambda T: T.zeros(3, 4).scatter_add(0, T.tensor([[5]]), T.ones(1, 1)),
    "index_add": lambda T: T.zeros(3, 4).index_add(0, T.tensor([5]), T.ones(1, 4)),
    "index_add_mid": lambda T: T.zeros(2, 3, 4).index_add(1, T.tensor([5]), T.ones(2, 1, 4)),
    "index_copy": lambda T: T.zeros(3, 4).index_copy(0, T.tensor([5]), T.ones(1, 4)),
    "index_fill": lambda T: T.zeros(3, 4).index_fill(1, T.tensor([7]), 2.0),
    "index_select": lambda T: T.zeros(3, 4).index_select(0, T.tensor([3])),
    "take_along_dim": lambda T: T.take_along_dim(T.zeros(3, 4), T.tensor([20])),
    "embedding_range": lambda T: T.nn.Embedding(5, 2)(T.tensor([1, 7])),
    "adv_second": lambda T: T.zeros(2, 3, 4)[:, T.tensor([0, 7])],
    "adv_split": lambda T: T.zeros(2, 3, 4)[T.tensor([0]), :, T.tensor([9])],
    "adv_pair": lambda T: T.zeros(2, 3, 4)[:, T.tensor([0]), T.tensor([9])],
    "adv_ellipsis": lambda T: T.zeros(2, 3, 4)[..., T.tensor([4])],
    "adv_none": lambda T: T.zeros(2, 3, 4)[None, :, T.tensor([[3]])],
    "adv_sliced": lambda T: T.zeros(2, 3, 4)[1:, T.tensor([5]), 0],
    "set_second": lambda T: T.zeros(2, 3, 4).__setitem__((slice(None), T.tensor([7])), 1.0),
    "set_split": lambda T: T.zeros(2, 3, 4).__setitem__(
        (T.tensor([0]), slice(None), T.tensor([9])), 1.0),
    "index_put_acc": lambda T: T.zeros(2, 3, 4).index_put_(
        (T.tensor([0]), T.tensor([5])), T.tensor(1.0), accumulate=True),
    "emb_float": lambda T: T.nn.Embedding(10, 3)(T.tensor([1.0, 2.0])),
    "emb_half": lambda T: T.nn.functional.embedding(T.ones(2, dtype=T.half), T.ones(4, 2)),
    "emb_bool": lambda T: T.nn.functional.embedding(T.ones(2, dtype=T.bool), T.ones(4, 2)),
    "emb_bf16": lambda T: T.nn.functional.embedding(T.ones(2, dtype=T.bfloat16), T.ones(4, 2)),
    "bag_float": lambda T: T.nn.functional.embedding_bag(T.ones(2), T.ones(4, 2),
                                                         T.tensor([0])),
    "bag_weight": lambda T: T.nn.functional.embedding_bag(
        T.tensor([1]), T.ones(4, 2, dtype=T.int64), T.tensor([0])),
    "int_grad": lambda T: T.tensor([1, 2], requires_grad=True),
}

# PyTorch 2.13's text, for the checks that run without it
_TORCH_SAYS = {
    "mm": ("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    "mv": ("RuntimeError", "size mismatch, got input (2), mat (2x3), vec (4)"),
    "stack_mm": ("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (4x3 and 4x5)"),
    "batch4": ("RuntimeError", "Expected size for first two dimensions of batch2 tensor to "
               "be: [6, 3] but got: [6, 4]."),
    "linear": ("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (3x7 and 10x5)"),
    "gather": ("RuntimeError", "index 5 is out of bounds for dimension 1 with size 4"),
    "index_select": ("IndexError", "index out of range in self"),
    "index_copy": ("IndexError",
                   "index_copy_(): index 5 is out of bounds for dimension 0 with size 3"),
    "adv_second": ("IndexError", "index 7 is out of bounds for dimension 0 with size 3"),
    "adv_ellipsis": ("IndexError", "index 4 is out of bounds for dimension 0 with size 4"),
    "emb_float": ("RuntimeError", "Expected tensor for argument #1 'indices' to have one of "
                  "the following scalar types: Long, Int; but got torch.FloatTensor instead "
                  "(while checking arguments for embedding)"),
    "emb_bool": ("RuntimeError", "Expected tensor for argument #1 'indices' to have one of "
                 "the following scalar types: Long, Int; but got CPUBoolType instead "
                 "(while checking arguments for embedding)"),
    "int_grad": ("RuntimeError",
                 "Only Tensors of floating point and complex dtype can require gradients"),
}


@pytest.mark.parametrize("case", sorted(_TORCH_SAYS))
def test_mistake_reads_as_torch_says(case):
    assert _message(ember, _MISTAKES[case]) == _TORCH_SAYS[case]


@needs_torch
@pytest.mark.parametrize("case", sorted(_MISTAKES))
def test_mistake_reads_as_torch(case):
    import torch

    expected = _message(torch, _MISTAKES[case])
    assert expected is not None
    assert _message(ember, _MISTAKES[case]) == expected


_SINGULAR = {
    "zeros": lambda T: T.linalg.inv(T.zeros(2, 2)),
    "rank_one": lambda T: T.inverse(T.tensor([[1.0, 2.0], [2.0, 4.0]])),
    "second_pivot": lambda T: T.linalg.inv(T.tensor([[0.0, 1.0], [0.0, 1.0]])),
    "batch": lambda T: T.linalg.inv(T.stack([T.eye(2), T.zeros(2, 2)])),
    "float64": lambda T: T.linalg.inv(T.zeros(3, 3, dtype=T.float64)),
}


def test_singular_inverse_names_the_zero_pivot():
    # PyTorch's class is torch._C._LinAlgError, and ember's is named so too
    assert _message(ember, _SINGULAR["batch"]) == (
        "_LinAlgError", "linalg.inv: (Batch element 1): The diagonal element 1 is zero, the "
        "inversion could not be completed because the input matrix is singular.")


@needs_torch
@pytest.mark.parametrize("case", sorted(_SINGULAR))
def test_singular_inverse_message_as_torch(case):
    import torch

    assert _message(ember, _SINGULAR[case])[1] == _message(torch, _SINGULAR[case])[1]


def test_bad_index_changes_nothing():
    x = ember.zeros(2, 3, 4)
    with pytest.raises(IndexError, match="dimension 0 with size 3"):
        x[:, ember.tensor([0, 7])] = 1.0
    assert float(x.abs().sum()) == 0.0


def test_modified_in_place_hint_names_the_printed_module(tmp_path):
    code = """
        import torch
        a = torch.randn(3, requires_grad=True)
        b = a.sigmoid()
        b.mul_(2)
        try:
            b.sum().backward()
        except RuntimeError as e:
            print(str(e).split("Hint: ")[1])
    """
    hint = ("enable anomaly detection to find the operation that failed to compute its "
            "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
    assert _run(code, compat=True, tmp_path=tmp_path) == [hint]
    if HAS_TORCH:
        assert _run(code, compat=False, tmp_path=tmp_path) == [hint]


# -- tutorial-style programs print what PyTorch prints ------------------------------------------

_TUTORIAL = """
    import torch, torch.nn as nn
    torch.manual_seed(0)
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.fc = nn.Linear(64, 10)
        def forward(self, x):
            return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))
    model = Net()
    print(model)
    print(type(model.fc), isinstance(model.fc, nn.Linear), type(model.fc.weight))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    print(opt)
    print(type(torch.optim.lr_scheduler.CosineAnnealingLR(opt, 5)))
    print(torch.finfo(torch.float32))
    print(torch.Size([2, 3]), type(torch.Size([2])), torch.device("cpu"))
    def show(f):
        try:
            f()
        except Exception as e:
            print(type(e).__name__, "|", e)
    w = torch.randn(3, requires_grad=True)
    def inplace_leaf():
        w.add_(1)
    def twice():
        y = (w * w).sum()
        y.backward()
        y.backward()
    show(inplace_leaf)
    show(twice)
    show(lambda: model(torch.randn(1, 1, 3, 3)))
    show(lambda: nn.Linear(2, 2).load_state_dict({"weight": torch.zeros(3, 3)}))
"""


def test_tutorial_program_prints_torch_names(tmp_path):
    out = _run(_TUTORIAL, compat=True, tmp_path=tmp_path)
    assert "<class 'torch.nn.modules.linear.Linear'> True <class " \
           "'torch.nn.parameter.Parameter'>" in out
    assert "<class 'torch.optim.lr_scheduler.CosineAnnealingLR'>" in out
    assert "RuntimeError | mat1 and mat2 shapes cannot be multiplied (1x36 and 64x10)" in out
    if HAS_TORCH:
        assert out == _run(_TUTORIAL, compat=False, tmp_path=tmp_path)


# -- ranges as PyTorch computes them (NOTE [ Ranges as PyTorch's CPU kernels compute them ]) ----

def _range_cases(seed, count):
    import numpy as np

    rng = np.random.default_rng(seed)
    for _ in range(count):
        start = float(np.round(rng.uniform(-50, 50), 2))
        step = float(np.round(rng.uniform(0.001, 3), 4)) * (1 if rng.random() < 0.8 else -1)
        yield start, start + step * int(rng.integers(1, 700)), step


@needs_torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_arange_bits_match_torch(dtype):
    import numpy as np
    import torch

    cases = list(_range_cases(13, 60)) + [(0, 1, 1e-5), (0.1, 7e4, 1.1), (-3, 3, 1e-4)]
    for start, end, step in cases:  # the last ones are split among threads as torch's
        t = torch.arange(start, end, step, dtype=getattr(torch, dtype)).double().numpy()
        e = ember.arange(start, end, step, dtype=getattr(ember, dtype)).double().numpy()
        assert e.shape == t.shape and np.array_equal(e, t, equal_nan=True), (start, end, step)


def test_half_arange_is_made_in_float32():
    import math

    import numpy as np

    from ember.backends.cpu import get_cpu_capability

    cap = get_cpu_capability()
    if cap == "DEFAULT":
        pytest.skip("the reference below is the fused (FMA) kernel")
    lanes = 16  # PyTorch's AVX2 build runs on AVX-512 CPUs too (ember/_ops/ranges.py)
    f32 = np.float32

    def fused(a, b, c):  # a * b + c rounded once to float32 (exact product in double)
        return f32(np.float64(f32(a)) * np.float64(f32(b)) + np.float64(f32(c)))

    start, end, step = 0.1, 9.7, 0.1
    n = math.ceil((end - start) / step)
    want, i = [], 0
    while n - i >= 2 * lanes:  # two vectors a turn: a rounded base, then base + j * step
        for base_at in (i, i + lanes):
            base = np.float16(fused(step, base_at, start))
            want += [np.float16(fused(j, step, base)) for j in range(lanes)]
        i += 2 * lanes
    want += [np.float16(fused(step, k, start)) for k in range(i, n)]
    got = ember.arange(start, end, step, dtype=ember.float16).numpy()
    assert got.dtype == np.float16 and np.array_equal(got, np.array(want, np.float16))


@needs_torch
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_linspace_bits_match_torch(dtype):
    import numpy as np
    import torch

    rng = np.random.default_rng(17)
    for _ in range(60):
        start, end = (complex(*np.round(rng.uniform(-5, 5, 2), 3)) for _ in range(2))
        steps = int(rng.integers(0, 300))
        t = torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).numpy()
        e = ember.linspace(start, end, steps, dtype=getattr(ember, dtype)).numpy()
        assert e.dtype == t.dtype and np.array_equal(e, t), (start, end, steps)


def test_complex_linspace_is_two_real_ones():
    import numpy as np

    got = ember.linspace(1 - 2j, 3 + 0.7j, 37, dtype=ember.complex64).numpy()
    re = ember.linspace(1.0, 3.0, 37, dtype=ember.float32).numpy()
    im = ember.linspace(-2.0, 0.7, 37, dtype=ember.float32).numpy()
    assert np.array_equal(got.real, re) and np.array_equal(got.imag, im)
    assert got[0] == np.complex64(1 - 2j) and got[-1] == np.complex64(3 + 0.7j)
