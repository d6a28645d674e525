"""The profiler as PyTorch's profiler recipe uses it: experimental settings and stacks."""

import ember
from ember.profiler import ProfilerActivity, profile


def test_experimental_config_accepted_by_profile():
    cfg = ember._C._profiler._ExperimentalConfig(verbose=True)
    net = ember.nn.Linear(3, 2)
    with profile(activities=[ProfilerActivity.CPU], with_stack=True,
                 experimental_config=cfg) as prof:
        net(ember.randn(4, 3))
    assert cfg.verbose is True
    assert any(e.key == "aten::linear" for e in prof.key_averages())


def test_experimental_config_importable_like_torch():
    import importlib

    ember._C._profiler  # noqa: B018 - made on first use
    mod = importlib.import_module("ember._C._profiler")
    assert mod._ExperimentalConfig is ember._C._profiler._ExperimentalConfig
    assert mod.ProfilerActivity is ProfilerActivity


def test_with_stack_frames_skip_ember_wrappers():
    net = ember.nn.Linear(3, 2)
    cfg = ember._C._profiler._ExperimentalConfig(verbose=True)
    with profile(activities=[ProfilerActivity.CPU], with_stack=True,
                 experimental_config=cfg) as prof:
        net(ember.randn(4, 3))
    stacks = [e.stack for e in prof.events() if e.name == "aten::linear"]
    assert stacks and stacks[0]
    assert stacks[0][0] == "nn.Module: Linear_0"
    assert all("<ember wrapper" not in frame and "ember/" not in frame
               for frame in stacks[0])
    here = "test_with_stack_frames_skip_ember_wrappers"
    assert any(frame.endswith(": " + here) for frame in stacks[0])


def test_pooling_events_named_by_dimension_as_torch():
    x = ember.randn(1, 2, 4, 4)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        ember.nn.functional.max_pool2d(x, 2)
        ember.nn.functional.avg_pool1d(x[0], 2)
        ember.nn.functional.adaptive_avg_pool2d(x, 1)
    names = {e.key for e in prof.key_averages()}
    assert {"aten::max_pool2d", "aten::avg_pool1d", "aten::adaptive_avg_pool2d"} <= names
