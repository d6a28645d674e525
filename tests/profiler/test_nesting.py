"""Ops written in Python record the ops their bodies call as children, and a profile that
is not recording leaves nothing on the mode stack (NOTE [ Profiler recording ])."""

import pytest

import ember
from ember import _dispatch


@_dispatch.entrance("_profiler_test_sin_twice")
def _sin_twice(x):
    return (x.sin() * 2).clone()


def _children(event):
    return [c.name for c in event.cpu_children]


def test_python_op_body_nests_under_it():
    x = ember.randn(3)
    with ember.profiler.profile() as prof:
        y = _sin_twice(x)
    top = [e for e in prof.events() if e.cpu_parent is None]
    assert [e.name for e in top] == ["aten::_profiler_test_sin_twice"]
    assert _children(top[0]) == ["aten::sin", "aten::mul", "aten::clone"]
    assert ember.allclose(y, x.sin() * 2)


def test_python_op_children_as_torch_custom_op():
    torch = pytest.importorskip("torch")

    @torch.library.custom_op("emberprof::sin_twice", mutates_args=())
    def sin_twice(x: torch.Tensor) -> torch.Tensor:
        return (x.sin() * 2).clone()

    with torch.profiler.profile() as tprof:
        sin_twice(torch.randn(3))
    with ember.profiler.profile() as prof:
        _sin_twice(ember.randn(3))
    theirs = next(e for e in tprof.events() if e.name == "emberprof::sin_twice")
    mine = next(e for e in prof.events() if e.name == "aten::_profiler_test_sin_twice")
    assert _children(mine) == _children(theirs)


def test_python_op_child_times_inside_parent():
    with ember.profiler.profile() as prof:
        _sin_twice(ember.randn(3))
    top = next(e for e in prof.events() if e.cpu_parent is None)
    for c in top.cpu_children:
        assert top.time_range.start <= c.time_range.start <= c.time_range.end \
            <= top.time_range.end


def test_python_op_under_a_lower_mode_still_runs_through_it():
    x = ember.randn(3)
    with ember.inference_mode(), ember.profiler.profile() as prof:
        y = _sin_twice(x)
    assert y.is_inference() and ember.allclose(y, x.sin() * 2)
    assert "aten::_profiler_test_sin_twice" in [e.name for e in prof.events()]


def test_python_op_leaves_stack_as_found():
    with ember.profiler.profile():
        before = _dispatch.state.modes
        _sin_twice(ember.randn(3))
        assert _dispatch.state.modes == before
    assert _dispatch.state.modes == ()


def test_schedule_idle_steps_push_no_mode():
    sched = ember.profiler.schedule(wait=1, warmup=1, active=1)
    seen = []
    with ember.profiler.profile(schedule=sched) as prof:
        for _ in range(3):
            seen.append((len(_dispatch.state.modes), _dispatch.intercept))
            prof.step()
    # wait and warm-up steps cost nothing: no mode, and the door's test stays off
    assert seen == [(0, False), (0, False), (1, True)]
