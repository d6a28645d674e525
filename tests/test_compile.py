"""ember.compile (eager), ember._dynamo and ember.compiler, vs PyTorch."""


import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")


def test_compile_function_runs_eagerly():
    f = ember.compile(lambda x: x * 2 + 1)
    assert f(ember.ones(2)).tolist() == [3.0, 3.0]


def test_compile_decorator_without_arguments_keeps_name():
    @ember.compile
    def step(x):
        """doc"""
        return x + 1

    assert step(1) == 2 and step.__name__ == "step" and step.__doc__ == "doc"


def test_compile_decorator_with_arguments():
    @ember.compile(mode="reduce-overhead", fullgraph=True, dynamic=False, backend="eager")
    def step(x):
        return x * 3

    assert step(2) == 6


@needs_torch
def test_compile_module_state_dict_keys_match_torch():
    ours = ember.compile(ember.nn.Linear(2, 3))
    theirs = torch.compile(torch.nn.Linear(2, 3))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert type(ours).__name__ == type(theirs).__name__
    assert repr(ours).splitlines()[0] == repr(theirs).splitlines()[0]


def test_compile_module_forwards_attributes_and_gradients():
    net = ember.nn.Linear(2, 1)
    cnet = ember.compile(net)
    assert cnet._orig_mod is net and cnet.in_features == 2
    cnet.extra = 5
    assert net.extra == 5
    cnet.eval()
    assert net.training is False and cnet.training is False
    cnet(ember.ones(3, 2)).sum().backward()
    assert net.weight.grad is not None


def test_compile_disable_returns_model():
    net = ember.nn.Linear(1, 1)
    assert ember.compile(net, disable=True) is net


@needs_torch
@pytest.mark.parametrize("kwargs", [{"mode": "foo"}, {"mode": "max-autotune", "options": {}},
                                    {"backend": "nonexistent"}])
def test_compile_bad_arguments_raise_as_torch(kwargs):
    with pytest.raises(Exception) as theirs:  # noqa: PT011
        torch.compile(torch.nn.Linear(1, 1), **kwargs)
    with pytest.raises(Exception) as ours:  # noqa: PT011
        ember.compile(ember.nn.Linear(1, 1), **kwargs)
    assert isinstance(ours.value, RuntimeError) and isinstance(theirs.value, RuntimeError)
    assert type(ours.value).__name__ == type(theirs.value).__name__


def test_compile_non_callable_raises_assertion_error():
    with pytest.raises(AssertionError, match="callable"):
        ember.compile(1)


def test_compile_custom_backend_receives_fx_graph_and_example_inputs():
    seen = []

    def backend(gm, example_inputs):
        seen.append(([n.op for n in gm.graph.nodes], [tuple(t.shape) for t in example_inputs]))
        return gm.forward

    f = ember.compile(lambda x, y: ember.sin(x) + y, backend=backend)
    x, y = ember.randn(3), ember.randn(3)
    assert ember.allclose(f(x, y), ember.sin(x) + y)
    f(x, y)  # same signature: compiled once
    f(ember.randn(4), ember.randn(4))  # new shapes: compiled again
    assert seen[0] == (["placeholder", "placeholder", "call_function", "call_function",
                        "output"], [(3,), (3,)])
    assert len(seen) == 2


def test_compile_custom_backend_result_runs_the_call():
    calls = []

    def backend(gm, example_inputs):
        def run(*args):
            calls.append(len(args))
            return gm(*args)
        return run

    net = ember.nn.Linear(4, 2)
    opt = ember.compile(net, backend=backend)
    x = ember.randn(3, 4)
    assert ember.allclose(opt(x), net(x))
    assert calls == [1]


def test_compile_custom_backend_falls_back_on_data_dependent_control_flow():
    def f(a, b):
        if b.sum() < 0:
            b = -b
        return a * b

    opt = ember.compile(f, backend=lambda gm, inputs: gm.forward)
    a, b = ember.ones(3), -ember.ones(3)
    assert ember.equal(opt(a, b), f(a, b))
    with pytest.raises(ember._dynamo.exc.Unsupported):
        ember.compile(f, backend=lambda gm, inputs: gm.forward, fullgraph=True)(a, b)


def test_compile_custom_backend_failure_raises_backend_compiler_failed():
    def broken(gm, example_inputs):
        raise ValueError("nope")

    with pytest.raises(ember._dynamo.exc.BackendCompilerFailed, match="nope"):
        ember.compile(lambda x: x + 1, backend=broken)(ember.ones(1))


@needs_torch
def test_dynamo_config_defaults_match_torch():
    for name in ("suppress_errors", "cache_size_limit", "verbose", "automatic_dynamic_shapes",
                 "capture_scalar_outputs", "optimize_ddp"):
        assert getattr(ember._dynamo.config, name) == getattr(torch._dynamo.config, name)


def test_dynamo_config_unknown_name_raises_attribute_error():
    with pytest.raises(AttributeError, match="does not exist"):
        ember._dynamo.config.no_such_setting = 1


def test_dynamo_config_patch_restores():
    with ember._dynamo.config.patch(cache_size_limit=64):
        assert ember._dynamo.config.cache_size_limit == 64
    assert ember._dynamo.config.cache_size_limit == 8


def test_inductor_config_nested_setting_reads_back():
    cfg = ember._inductor.config
    cfg.triton.cudagraphs = True
    try:
        assert cfg.triton.cudagraphs is True
    finally:
        cfg.triton.cudagraphs = False


def test_dynamo_helpers_return_function_unchanged():
    def f(x):
        return x

    assert ember._dynamo.disable(f) is f
    assert ember._dynamo.disable(recursive=False)(f) is f
    assert ember._dynamo.allow_in_graph(f) is f
    assert ember.compiler.disable(f) is f
    ember._dynamo.mark_dynamic(ember.ones(3, 2), 0)
    ember._dynamo.reset()
    ember.compiler.reset()
    assert ember._dynamo.is_compiling() is False and ember.compiler.is_compiling() is False


def test_mark_dynamic_out_of_range_raises_index_error():
    with pytest.raises(IndexError):
        ember._dynamo.mark_dynamic(ember.ones(3), 2)


@needs_torch
def test_list_backends_matches_torch_defaults():
    assert set(ember._dynamo.list_backends()) >= {"inductor"}
    assert "eager" in ember._dynamo.list_backends(exclude_tags=())
    assert "eager" not in torch._dynamo.list_backends()
    assert "eager" not in ember._dynamo.list_backends()


def test_set_stance_unknown_raises_runtime_error():
    with pytest.raises(RuntimeError, match="stance"):
        ember.compiler.set_stance("bogus")
    with ember.compiler.set_stance("force_eager"):
        pass
