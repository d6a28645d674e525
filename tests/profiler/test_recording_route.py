"""The recording route (NOTE [ Profiler recording ]): op events as tuples, built into
``FunctionEvent``s only when read; custom ops record the ops their kernels call."""

import pytest

import ember
from ember.profiler import _inputs, _recorder


def _children(event):
    return [c.name for c in event.cpu_children]


def _custom_sin_plus(lib):
    @lib.library.custom_op("emberprofroute::sin_plus", mutates_args=())
    def sin_plus(x: lib.Tensor) -> lib.Tensor:
        return x.sin() + x

    return sin_plus


_ember_sin_plus = _custom_sin_plus(ember)


def test_custom_op_kernel_ops_nest_under_it():
    x = ember.randn(3)
    with ember.profiler.profile() as prof:
        y = _ember_sin_plus(x)
    top = [e for e in prof.events() if e.cpu_parent is None]
    assert [e.name for e in top] == ["emberprofroute::sin_plus"]
    assert _children(top[0]) == ["aten::sin", "aten::add"]
    assert ember.allclose(y, x.sin() + x)


def test_custom_op_children_as_torch():
    torch = pytest.importorskip("torch")
    theirs_op = _custom_sin_plus(torch)
    with torch.profiler.profile() as tprof:
        theirs_op(torch.randn(3))
    with ember.profiler.profile() as prof:
        _ember_sin_plus(ember.randn(3))
    theirs = next(e for e in tprof.events() if e.name == "emberprofroute::sin_plus")
    mine = next(e for e in prof.events() if e.name == "emberprofroute::sin_plus")
    assert _children(mine) == _children(theirs)


def test_custom_op_with_grad_records_children_and_backward():
    x = ember.randn(3, requires_grad=True)
    with ember.profiler.profile() as prof:
        y = _ember_sin_plus(x)
    mine = next(e for e in prof.events() if e.name == "emberprofroute::sin_plus")
    assert set(_children(mine)) >= {"aten::sin", "aten::add"}
    assert not y.requires_grad or y.grad_fn is not None


def test_custom_op_unprofiled_call_unchanged():
    x = ember.randn(4)
    with ember.profiler.profile():
        inside = _ember_sin_plus(x)
    assert ember.equal(inside, _ember_sin_plus(x))


def test_failing_op_still_recorded_and_stack_clean():
    a = ember.ones(2)
    b = ember.ones(3)
    with ember.profiler.profile() as prof:
        with pytest.raises(RuntimeError):
            a + b
        a * 2
    names = [e.name for e in prof.events()]
    assert names == ["aten::add", "aten::mul"]
    assert all(e.cpu_parent is None for e in prof.events())


def test_ops_recorded_as_tuples_while_recording():
    x = ember.ones(2)
    prof = ember.profiler.profile()
    prof.start()
    x + x
    session = prof.profiler
    assert session.raw == [] and len(session.ops) == 1
    assert type(session.ops[0]) is tuple and session.ops[0][2] == "aten::add"
    prof.stop()


def test_event_ids_follow_start_order_with_user_blocks():
    x = ember.ones(2)
    with ember.profiler.profile() as prof:
        x + x
        with ember.profiler.record_function("block"):
            x * x
        x - x
    evs = prof.events()
    assert [e.name for e in evs] == ["aten::add", "block", "aten::mul", "aten::sub"]
    assert [e.id for e in evs] == sorted(e.id for e in evs)
    assert evs[2].cpu_parent is evs[1]


def test_record_shapes_mixed_arguments_as_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        x = lib.ones(2, 3)
        with lib.profiler.profile(record_shapes=True) as prof:
            x + x
            x.add(2.5)
            x.sum()
        return [(e.name, e.input_shapes[0], e.input_dtypes[0]) for e in prof.events()
                if e.name in ("aten::add", "aten::sum")]

    assert run(ember) == run(torch)


def test_record_shapes_dtype_names_as_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        xs = [lib.ones(2, dtype=getattr(lib, d)) for d in
              ("float64", "int32", "int64", "bfloat16", "float16", "complex64", "uint8")]
        with lib.profiler.profile(record_shapes=True) as prof:
            for x in xs:
                x.neg()
            xs[0] * 3
        return [e.input_dtypes[:2] for e in prof.events()
                if e.name in ("aten::neg", "aten::mul")]

    assert run(ember) == run(torch)


def _verbose():
    return ember._C._profiler._ExperimentalConfig(verbose=True)


def test_stack_names_the_user_function():
    # a stack entry is the Python event's name: the file, the function's first line, its
    # name (NOTE [ Stacks as PyTorch records them ])
    x = ember.ones(2)

    def work():
        x + x

    with ember.profiler.profile(with_stack=True, experimental_config=_verbose()) as prof:
        work()
    ev = _op_events(prof)[0]
    entry = ev.stack[0]
    assert entry.endswith("): work")
    line = int(entry.rsplit("(", 1)[1].split(")")[0])
    with open(__file__) as f:
        assert f.read().splitlines()[line - 1].strip() == "def work():"


def test_dtype_names_of_raw_dtypes():
    x = ember.ones(1, dtype=ember.bfloat16)
    raw = _inputs.record_call((x, 2, [x]), {})
    assert _recorder.dtype_names(raw[1]) == ["c10::BFloat16", "long int", ""]
    assert _recorder.shape_lists(raw[0]) == [[1], [], [[1]]]


def _op_events(prof):
    # (with_stack also records the Python calls as events: NOTE [ Python function events ])
    return [e for e in prof.events() if not getattr(e, "is_python_function", False)]


def _funcs_of(stack):
    # the Python functions' events of a stack, by function name (not C calls' or modules')
    return [line.rsplit("): ", 1)[1] for line in stack if "): " in line]


def test_stack_of_generator_follows_its_resumer():
    x = ember.ones(2)

    def gen():
        while True:
            x + x
            yield

    g = gen()

    def first_caller():
        next(g)

    def second_caller():
        next(g)

    with ember.profiler.profile(with_stack=True, experimental_config=_verbose()) as prof:
        first_caller()
        second_caller()
    a, b = _op_events(prof)
    assert _funcs_of(a.stack)[:2] == ["gen", "first_caller"]
    assert _funcs_of(b.stack)[:2] == ["gen", "second_caller"]


def test_stack_repeated_calls_from_one_frame():
    x = ember.ones(2)

    def body():
        for _ in range(3):
            x.neg()

    def outer():
        body()

    with ember.profiler.profile(with_stack=True, experimental_config=_verbose()) as prof:
        outer()
        body()
    here = "test_stack_repeated_calls_from_one_frame"
    stacks = [_funcs_of(e.stack)[:3] for e in _op_events(prof)]
    stacks = [s[:2] if s[1] == here else s for s in stacks]
    assert stacks == [["body", "outer", here]] * 3 + [["body", here]] * 3


def test_events_built_only_when_read():
    x = ember.ones(2)
    with ember.profiler.profile() as prof:
        x + x
    assert prof._event_list is None and len(prof._unconverted) == 1
    assert [e.name for e in prof.events()] == ["aten::add"]
    assert prof._unconverted == [] and prof.events() is prof.events()


@pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")
def test_acc_events_keeps_every_cycle_as_torch():
    torch = pytest.importorskip("torch")

    def run(lib, acc):
        x = lib.ones(2)
        sched = lib.profiler.schedule(wait=0, warmup=1, active=1, repeat=2)
        with lib.profiler.profile(schedule=sched, acc_events=acc) as prof:
            for _ in range(4):
                x.neg()
                prof.step()
        return sum(e.name == "aten::neg" for e in prof.events())

    assert (run(ember, True), run(ember, False)) == (run(torch, True), run(torch, False))


def test_legacy_profile_events_built_when_read():
    x = ember.ones(2)
    with ember.autograd.profiler.profile() as prof:
        x * x
    assert prof._function_events is None
    assert [e.name for e in prof.function_events] == ["aten::mul"]
    assert "aten::mul" in prof.key_averages().table()
