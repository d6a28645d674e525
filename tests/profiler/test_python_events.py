"""``with_stack=True`` records the user's Python calls as events around the ops they run
(NOTE [ Python function events ] in ember/profiler/_python_tracer.py)."""

import json
import re

import pytest

import ember

torch = pytest.importorskip("torch")


def _double(lib, x):
    return x * 2


def _step(lib, x):
    return _double(lib, x) + 1


def _tree(lib, fn, **kw):
    """The events under this file's Python calls, as (depth, name), with this file's
    functions and the ops only."""
    with lib.profiler.profile(**kw) as prof:
        fn(lib)
    out = []

    def walk(e, d):
        # (other Python calls -- pytest's, the libraries' -- are passed through)
        if not getattr(e, "is_python_function", False) or "test_python_events.py" in e.name:
            out.append((d, e.name.rsplit("/", 1)[-1]))
            d += 1
        for c in e.cpu_children:
            walk(c, d)

    for e in prof.events():
        if e.cpu_parent is None:
            walk(e, 0)
    return out


def _run(lib):
    _step(lib, lib.ones(2))


def test_python_calls_nest_ops_as_torch():
    # the frame running when recording starts is named by its current line: these differ
    def running(name):
        return re.sub(r"\(\d+\): test_", "(): test_", name)
    mine = [(d, running(n)) for d, n in _tree(ember, _run, with_stack=True)]
    theirs = [(d, running(n)) for d, n in _tree(torch, _run, with_stack=True)
              if not n.startswith(("aten::to", "aten::_to_copy", "aten::empty",
                                   "aten::copy_", "aten::fill_"))]
    assert mine == theirs
    k = [n for _, n in mine].index("aten::mul")
    assert mine[k - 1][1].endswith(": _double") and mine[k - 1][0] == mine[k][0] - 1


def test_python_events_need_with_stack():
    assert all(not x[1].startswith("test_python_events.py") for x in _tree(ember, _run))


class _Net(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x).relu()


def test_module_forward_called_back_from_ember_is_recorded():
    net = _Net()
    with ember.profiler.profile(with_stack=True) as prof:
        net(ember.ones(1, 3))
    fwd = [e for e in prof.events() if e.name.endswith(": forward")
           and "test_python_events.py" in e.name]
    # (the method call as PyTorch's C call around the op: NOTE [ Calls into the API as
    # PyTorch's C calls ] in ember/profiler/_python_tracer.py)
    call = [c for c in fwd[0].cpu_children if c.name.startswith("<built-in method relu")]
    assert call and [c.name for c in call[0].cpu_children] == ["aten::relu"]
    # ember's own machinery (the dispatcher, Module.__call__) is not recorded
    assert not any("ember/" in e.name for e in prof.events()
                   if getattr(e, "is_python_function", False))


def test_builtin_calls_from_user_code_named_by_repr():
    with ember.profiler.profile(with_stack=True) as prof:
        len([1, 2])
    assert "<built-in function len>" in [e.name for e in prof.events()]


def test_python_events_in_trace_as_python_function(tmp_path):
    with ember.profiler.profile(with_stack=True) as prof:
        _step(ember, ember.ones(2))
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    py = {e["name"].rsplit("/", 1)[-1]: e for e in events if e.get("cat") == "python_function"}
    step = next(v for k, v in py.items() if k.endswith(": _step"))
    double = next(v for k, v in py.items() if k.endswith(": _double"))
    assert double["args"]["Python parent id"] == step["args"]["Python id"]


def test_tracer_removed_after_profile():
    import sys

    before = sys.getprofile()
    with ember.profiler.profile(with_stack=True):
        pass
    assert sys.getprofile() is before


def test_module_events_under_with_stack_as_torch():
    def modules(lib):
        m = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.ReLU())
        with lib.profiler.profile(with_stack=True) as prof:
            m(lib.ones(1, 3))
        out = []
        for e in prof.events():
            if e.name.startswith("nn.Module") or e.name in ("aten::linear", "aten::relu"):
                p = e.cpu_parent
                while p is not None and not p.name.startswith("nn.Module"):
                    p = p.cpu_parent
                out.append((e.name, p.name if p is not None else None))
        return out
    assert modules(ember) == modules(torch)
