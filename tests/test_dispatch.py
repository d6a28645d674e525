"""The one door (NOTE [ Dispatch ] in ember/_dispatch.py): every op form reaches the mode
stack, modes nest and stay on their thread, and registered kernels are the ones that run."""

from __future__ import annotations

import threading
import zlib

import numpy as np
import pytest

import ember
from ember import _dispatch
from ember.testing._opinfo import load_op_db
from ember.utils._python_dispatch import (
    TorchDispatchMode, _get_current_dispatch_mode, _get_current_dispatch_mode_stack,
)
from tests.conftest import HAS_TORCH

op_db = load_op_db()


class Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls.append(str(func))
        return func(*args, **(kwargs or {}))


def _samples(info):
    dtype = info.dtypes[0]
    rng = np.random.default_rng(zlib.crc32(info.id.encode()))
    return dtype, list(info.sample_inputs(dtype, rng))


def _forms(info):
    yield "function", info.get_op()
    if info.method:
        yield "method", info.get_method()


@pytest.mark.parametrize("info", op_db, ids=[i.id for i in op_db])
def test_mode_sees_every_form_of_every_op(info):
    """A recording mode sees a call for each function, method, in-place and out= call of
    the whole OpInfo sample set, and the op's result is unchanged by it."""
    dtype, samples = _samples(info)
    for s in samples:
        for form, fn in _forms(info):
            try:
                want = fn(s.input, *s.args, **s.kwargs)
            except Exception:  # noqa: BLE001 -- a sample the form does not take
                continue
            with Recorder() as rec:
                got = fn(s.input, *s.args, **s.kwargs)
            if got is s.input or (isinstance(got, (tuple, list)) and any(
                    g is s.input for g in got)):
                continue  # handed its input back (conj of a real tensor): no op ran, as in torch
            assert rec.calls, f"{info.id} {form} {s}: no op reached the mode"
            if isinstance(want, ember.Tensor) and not info.nondeterministic:
                assert got.shape == want.shape and got.dtype == want.dtype
        inplace = info.get_inplace() if info.inplace else None
        if inplace is not None:
            target = s.input.clone()
            try:
                inplace(target, *s.args, **s.kwargs)
            except Exception:  # noqa: BLE001
                continue
            target = s.input.clone()
            with Recorder() as rec:
                inplace(target, *s.args, **s.kwargs)
            assert rec.calls, f"{info.id} in-place {s}: no op reached the mode"
            assert any(c.split(".")[1].endswith("_") for c in rec.calls), rec.calls
        if info.supports_out:
            try:
                want = info.get_op()(s.input, *s.args, **s.kwargs)
            except Exception:  # noqa: BLE001
                continue
            if not isinstance(want, ember.Tensor):
                continue
            out = ember.empty(0, dtype=want.dtype)
            with Recorder() as rec:
                try:
                    info.get_op()(s.input, *s.args, out=out, **s.kwargs)
                except TypeError:  # an overload without out=, refused as torch refuses it
                    continue
            assert rec.calls, f"{info.id} out= {s}: no op reached the mode"


def test_logging_mode_sees_decomposed_ops():
    a, b = ember.randn(3, 4), ember.randn(4, 5)
    with Recorder() as rec:
        (a @ b + 1).sum()
    assert rec.calls == ["aten.mm.default", "aten.add.Tensor", "aten.sum.default"]  # torch's


#: programs whose ops ember runs as PyTorch does: a dispatch mode sees the same names
#: (without PyTorch's ``detach`` of a backward's set-up, which ember's engine does not
#: dispatch; the implicit seed's ``ones_like`` both dispatch)
_SAME_NAMES = {
    "t": lambda lib, x: x.detach().t(),
    "transpose": lambda lib, x: (x.detach().transpose(0, 1), x.detach().mT),
    "compare_number": lambda lib, x: (x.detach() > 0, x.detach() <= x.detach()),
    "pow_forms": lambda lib, x: (x.detach() ** 2, x.detach() ** x.detach(), 2 ** x.detach(),
                                 x.detach() % 2),
    "mean_backward": lambda lib, x: x.mean().backward(),
    "sum_backward": lambda lib, x: (x * 2).sum().backward(),
    "mm_backward": lambda lib, x: (x @ x.detach().t()).sum().backward(),
}


@pytest.mark.skipif(not HAS_TORCH, reason="compares with PyTorch")
@pytest.mark.parametrize("name", sorted(_SAME_NAMES))
def test_mode_sees_torchs_names(name):
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode as TorchMode

    class TorchRecorder(TorchMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.__name__ != "detach.default":
                self.calls.append(str(func))
            return func(*args, **(kwargs or {}))

    logs = []
    for lib, mode in ((ember, Recorder), (torch, TorchRecorder)):
        x = lib.rand(3, 4).requires_grad_()
        with mode() as rec:
            _SAME_NAMES[name](lib, x)
        logs.append(rec.calls)
    assert logs[0] == logs[1]


def test_mode_sees_indexing_inplace_and_backward():
    x = ember.randn(4, 3, requires_grad=True)
    y = x * 2
    with Recorder() as rec:
        z = y[1]
        y[0] = 5.0
        y.add_(1)
        z.sum().backward()
    names = [c.split(".")[1] for c in rec.calls]
    assert names[:4] == ["select", "setitem_", "add_", "sum"]  # y[1] is torch's select.int
    assert len(names) > 4  # the backward's ops
    assert x.grad is not None


def test_mode_is_popped_inside_its_handler_and_modes_nest():
    order = []

    class Tag(TorchDispatchMode):
        def __init__(self, tag):
            super().__init__()
            self.tag = tag

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            order.append((self.tag, _get_current_dispatch_mode().tag
                          if _get_current_dispatch_mode() else None))
            return func(*args, **(kwargs or {}))

    x = ember.ones(2)
    with Tag("outer"), Tag("inner"):
        assert [m.tag for m in _get_current_dispatch_mode_stack()] == ["outer", "inner"]
        x.neg()
    assert order == [("inner", "outer"), ("outer", None)]
    assert not _dispatch.state.modes and not _dispatch.intercept


def test_mode_may_replace_the_result():
    class Zeros(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            return ember.zeros_like(out) if func.overloadpacket.__name__ == "exp" else out

    with Zeros():
        r = ember.ones(3).exp()
    assert r.tolist() == [0.0, 0.0, 0.0]


def test_types_name_tensor_subclasses():
    seen = []

    class Sub(ember.Tensor):
        pass

    class Types(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(types)
            return func(*args, **(kwargs or {}))

    p = ember.nn.Parameter(ember.ones(2))
    with Types():
        p + 1
    assert seen == [(ember.nn.Parameter,)]


def test_modes_are_thread_local():
    rec = Recorder()
    done = threading.Event()
    other = []

    def work():
        other.append(ember.ones(2) + 1)
        done.set()

    with rec:
        t = threading.Thread(target=work)
        t.start()
        t.join()
    assert done.is_set() and rec.calls == []
    assert other[0].tolist() == [2.0, 2.0]


def test_gradients_unchanged_under_a_mode():
    x = ember.randn(5, 3, dtype=ember.float64, requires_grad=True)
    w = ember.randn(3, 2, dtype=ember.float64, requires_grad=True)
    ((x @ w).tanh() * 2).sum().backward()
    gx, gw = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    with Recorder():
        ((x @ w).tanh() * 2).sum().backward()
    assert ember.equal(x.grad, gx) and ember.equal(w.grad, gw)


def test_inference_mode_marks_every_result():
    x = ember.randn(10)
    with ember.inference_mode():
        y = ember.ones(4)
        outs = [x.sum(), x + 1, x.exp(), x[[1, 2]], ember.randn(2, 2) @ ember.randn(2, 2),
                y, y[1], y[1:3], ember.tensor([1.0])]
        views = [x[3], x[2:5]]  # views of a normal tensor stay normal, as in PyTorch
        x.add_(1)
    assert [o.is_inference() for o in outs] == [True] * len(outs)
    assert not any(v.is_inference() for v in views)
    assert not x.is_inference() and not (x + 1).is_inference()


def test_op_handles_are_callable():
    a = ember.ones(2)
    assert ember.ops.aten.add(a, 2).tolist() == [3.0, 3.0]
    assert ember.ops.aten.add.default(a, a).tolist() == [2.0, 2.0]
    assert str(ember.ops.aten.add.Tensor) == "aten.add.Tensor"
    assert ember.ops.aten.add.Tensor.name() == "aten::add.Tensor"
    assert ember.ops.aten.add.Scalar is ember.ops.aten.add.Tensor  # one form per op
    assert str(ember.ops.aten.exp.default) == "aten.exp.default"
    with pytest.raises(AttributeError):
        ember.ops.aten.no_such_op_here  # noqa: B018 - the lookup itself must fail


# ------------------------------------------------------------------------------------------------
# kernels registered through ember.library are the ones that run, for every op class

_CASES = [
    # (op name, call, op class)
    ("add", lambda a, b: a + b, "elementwise"),
    ("exp", lambda a, b: a.exp(), "elementwise unary"),
    ("sum", lambda a, b: a.sum(), "reduction"),
    ("amax", lambda a, b: a.max(), "reduction"),
    ("matmul", lambda a, b: a @ b, "matmul"),
    ("_getitem", lambda a, b: a[1], "indexing"),
    ("transpose", lambda a, b: a.t(), "view"),
    ("add", lambda a, b: a.clone().add_(b), "in-place"),
]


@pytest.mark.parametrize("name,call,kind", _CASES, ids=[c[2] for c in _CASES])
def test_registered_cpu_kernel_runs(name, call, kind):
    op = ember._ops._registry.ops[name]
    saved = dict(op.overrides), op.builtin_cpu
    hits = []
    base = op.resolve(np.ndarray)

    def mine(*arrays, **params):
        hits.append(name)
        return base(*arrays, **params)

    try:
        ember.library.impl(name, "cpu")(mine)
        a, b = ember.randn(3, 3), ember.randn(3, 3)
        call(a, b)
    finally:
        op.overrides.clear()
        op.overrides.update(saved[0])
        op.builtin_cpu = saved[1]
        op.impl.clear()
    assert hits, f"the registered {kind} kernel for {name} did not run"


def test_failed_inplace_op_leaves_nothing_pending():
    from ember.autograd import _nodes

    x = ember.randn(3, requires_grad=True).clone()
    with pytest.raises(RuntimeError):
        x.add_(ember.randn(4))  # shapes do not broadcast into x
    assert _nodes._pending == 0
    assert getattr(_dispatch.state, "pending_inplace", None) is None
    y = x * 1
    y.mul_(2)  # a successful one clears it too
    assert _nodes._pending == 0


def test_nothing_slows_the_hot_path_after_import():
    """Importing ember (its own CPU kernels, custom-op machinery, the meta backend) leaves
    the one-cell switch of the operators off: a + b takes the fast path."""
    import subprocess
    import sys

    code = ("import ember; from ember import _dispatch; "
            "assert _dispatch.slow == [False] and not _dispatch.intercept; "
            "assert ember._overrides._active == [False]")
    subprocess.run([sys.executable, "-c", code], check=True)
