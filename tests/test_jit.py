"""ember.jit: eager meanings of TorchScript's Python surface (NOTE [ Eager TorchScript ])."""

import typing

import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")


def test_jit_is_scripting_and_tracing_false():
    assert ember.jit.is_scripting() is False and ember.jit.is_tracing() is False


def test_jit_script_returns_module_that_runs():
    net = ember.nn.Linear(2, 2)
    scripted = ember.jit.script(net)
    assert isinstance(scripted, ember.jit.RecursiveScriptModule)
    assert scripted.weight is net.weight
    assert ember.equal(scripted(ember.ones(1, 2)), net(ember.ones(1, 2)))


def test_jit_script_decorator_on_function():
    @ember.jit.script
    def f(x):
        return x * 2

    assert f(ember.ones(1)).tolist() == [2.0]


def test_jit_trace_runs_example_once_and_returns_script_function():
    calls = []

    def f(x):
        calls.append(1)
        return x + 1

    traced = ember.jit.trace(f, ember.ones(1))
    assert isinstance(traced, ember.jit.ScriptFunction) and calls == [1]
    assert traced(ember.ones(1)).tolist() == [2.0] and calls == [1, 1]


def test_jit_trace_bad_example_raises_at_trace():
    with pytest.raises(Exception):  # noqa: B017, PT011
        ember.jit.trace(ember.nn.Linear(2, 2), ember.ones(1, 3))


def test_jit_trace_without_inputs_raises_runtime_error():
    with pytest.raises(RuntimeError):
        ember.jit.trace(abs)


@needs_torch
def test_jit_modifiers_match_torch():
    for name in ("ignore", "unused", "export"):
        def f(x):
            return x

        def g(x):
            return x

        getattr(ember.jit, name)(f)
        getattr(torch.jit, name)(g)
        assert str(f._torchscript_modifier) == str(g._torchscript_modifier)


def test_jit_ignore_drop_true_warns_and_marks_unused():
    with pytest.warns(FutureWarning):
        deco = ember.jit.ignore(drop=True)

    @deco
    def f(x):
        return x

    assert f(3) == 3 and f._torchscript_modifier.startswith("unused")


def test_jit_final_is_typing_final():
    assert ember.jit.Final is typing.Final


def test_jit_annotate_returns_value():
    assert ember.jit.annotate(list[int], []) == []


@needs_torch
def test_jit_attribute_repr_matches_torch():
    assert repr(ember.jit.Attribute(3, int)) == repr(torch.jit.Attribute(3, int))


def test_jit_script_module_unwraps_attribute():
    class M(ember.jit.ScriptModule):
        def __init__(self):
            super().__init__()
            self.n = ember.jit.Attribute(0, int)

    assert M().n == 0 and isinstance(M(), ember.nn.Module)


def test_jit_script_function_cannot_be_constructed():
    with pytest.raises(TypeError, match="No constructor"):
        ember.jit.ScriptFunction()


def test_jit_fork_wait_returns_result():
    fut = ember.jit.fork(lambda a, b: a + b, 1, 2)
    assert fut.done() and ember.jit.wait(fut) == 3


def test_jit_future_then_chains():
    fut = ember.jit.fork(lambda: 2)
    assert fut.then(lambda f: f.wait() * 10).wait() == 20


def test_jit_save_load_round_trips_module_and_extra_files(tmp_path):
    net = ember.jit.script(ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.Tanh()))
    ember.jit.save(net, tmp_path / "m.pt", _extra_files={"config.txt": "lr=0.1"})
    extra = {"config.txt": ""}
    back = ember.jit.load(str(tmp_path / "m.pt"), _extra_files=extra)
    x = ember.randn(4, 3)
    assert ember.equal(back(x), net(x))
    assert extra == {"config.txt": b"lr=0.1"}


@needs_torch
def test_jit_load_torchscript_archive_from_torch_raises_runtime_error(tmp_path):
    path = tmp_path / "ts.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), str(path))
    with pytest.raises(RuntimeError, match="TorchScript archive written by PyTorch"):
        ember.jit.load(str(path))


@needs_torch
def test_jit_load_missing_file_raises_value_error_as_torch(tmp_path):
    path = str(tmp_path / "missing.pt")
    with pytest.raises(ValueError) as theirs:
        torch.jit.load(path)
    with pytest.raises(ValueError) as ours:
        ember.jit.load(path)
    assert str(ours.value) == str(theirs.value)


def test_jit_load_not_an_archive_raises_runtime_error(tmp_path):
    path = tmp_path / "m.pt"
    path.write_bytes(b"x")
    with pytest.raises(RuntimeError, match="zip archive"):
        ember.jit.load(str(path))


@needs_torch
def test_jit_isinstance_matches_torch():
    cases = [([1, 2], list[int]), ([1, "a"], list[int]), ({"a": 1}, dict[str, int]),
             (None, typing.Optional[int]), ((1, "a"), tuple[int, str])]  # noqa: UP045
    for value, target in cases:
        assert ember.jit.isinstance(value, target) == torch.jit.isinstance(value, target)


def test_jit_isinstance_bare_container_raises_runtime_error():
    with pytest.raises(RuntimeError, match="contained type"):
        ember.jit.isinstance([1], list)


def test_jit_interface_requires_class():
    with pytest.raises(RuntimeError):
        ember.jit.interface(abs)


def test_jit_freeze_requires_eval_mode():
    with pytest.raises(RuntimeError, match="eval mode"):
        ember.jit.freeze(ember.jit.script(ember.nn.Linear(1, 1)))
    net = ember.nn.Linear(1, 1).eval()
    frozen = ember.jit.freeze(ember.jit.script(net))
    assert type(frozen).__name__ == "RecursiveScriptModule" and frozen.weight is net.weight


def test_jit_freeze_requires_a_script_module():
    with pytest.raises(RuntimeError, match="expects a ScriptModule"):
        ember.jit.freeze(ember.nn.Linear(1, 1).eval())


@needs_torch
def test_jit_fusion_strategy_default_matches_torch():
    ours = ember.jit.set_fusion_strategy([("STATIC", 2), ("DYNAMIC", 10)])
    theirs = torch.jit.set_fusion_strategy([("STATIC", 2), ("DYNAMIC", 10)])
    assert ours == theirs


def _tracer_warnings(T, fn, *args):
    import warnings

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        T.jit.trace(fn, *args)
    # (torch's check_trace traces a function twice: each warning is then given twice)
    return list(dict.fromkeys((str(x.message).split(" might")[0], x.lineno) for x in w
                              if x.category.__name__ == "TracerWarning"))


def _python_values(x):
    if x.sum() > 0:
        x = x * 2
    n = int(x.sum()); m = x.sum().item(); v = x.tolist(); f = float(x[0])  # noqa: E702,F841
    return x * n


def test_trace_warns_when_user_code_takes_python_values_as_torch():
    torch = pytest.importorskip("torch")
    got = _tracer_warnings(ember, _python_values, ember.ones(3))
    assert [k for k, _ in got] == [
        "Converting a tensor to a Python boolean", "Converting a tensor to a Python integer",
        "Converting a tensor to a Python number", "Converting a tensor to a Python list",
        "Converting a tensor to a Python float"]
    assert got == _tracer_warnings(torch, _python_values, torch.ones(3))


def test_trace_module_warns_for_branches_on_constants_too():
    class M(ember.nn.Module):
        def forward(self, x):
            if ember.ones(2).sum() > 0:
                return x
            return -x

    assert [k for k, _ in _tracer_warnings(ember, M(), ember.ones(3))] == [
        "Converting a tensor to a Python boolean"]
