"""NOTE [ Modes that name their ops ]: under autocast, ops outside its lists skip its layers;
the listed ones, custom ops and modes that see every op are unaffected."""

import ember
from ember import _dispatch
from ember.amp import autocast_mode
from ember.utils._python_dispatch import TorchDispatchMode


def _spy(monkeypatch):
    seen = []
    orig = autocast_mode._AutocastMode.dispatch

    def dispatch(self, handle, args, kwargs):
        seen.append(handle.overloadpacket.__name__)
        return orig(self, handle, args, kwargs)

    monkeypatch.setattr(autocast_mode._AutocastMode, "dispatch", dispatch)
    return seen


def test_unlisted_ops_skip_the_autocast_layer(monkeypatch):
    seen = _spy(monkeypatch)
    a, b = ember.randn(4, 4), ember.randn(4, 4)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        c = (a + b).relu() * 2
        d = a.mm(b)
    assert "add" not in seen and "relu" not in seen and "mul" not in seen
    assert c.dtype == ember.float32 and d.dtype == ember.bfloat16


def test_a_mode_that_sees_every_op_still_sees_them_under_autocast():
    class Log(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []  # a user mode's own ``ops``: not a routing filter

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    a, b = ember.randn(3), ember.randn(3)
    with ember.autocast("cpu", dtype=ember.bfloat16), Log() as log:
        a + b
    assert "add" in log.ops


def test_routes_answers_per_stack():
    class Named(_dispatch.Mode):
        _ember_ops = frozenset({"mm"})

    from ember._ops.arithmetic import add_op
    from ember._ops.linalg import matmul_op

    mode = Named()
    _dispatch.push_mode(mode)
    try:
        assert not _dispatch.routes(add_op)
        assert _dispatch.routes(type("Custom", (), {"name": "add", "is_builtin": False})())
    finally:
        _dispatch.pop_mode(mode)
    assert matmul_op.name == "matmul"


def test_unlisted_functions_skip_the_function_layer(monkeypatch):
    calls = []
    orig = autocast_mode._AutocastFunctionMode.__torch_function__

    def tf(self, func, types, args=(), kwargs=None):
        calls.append(func.__name__)
        return orig(self, func, types, args, kwargs)

    monkeypatch.setattr(autocast_mode._AutocastFunctionMode, "__torch_function__", tf)
    x = ember.randn(2, 3)
    w = ember.randn(4, 3)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        ember.tanh(x)
        y = ember.nn.functional.linear(x, w)
    assert "tanh" not in calls and "linear" in calls
    assert y.dtype == ember.bfloat16
