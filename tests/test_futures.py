"""ember.futures against torch.futures: completion, callbacks, errors, collect_all."""

import threading

import pytest

import ember
from ember.futures import Future

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
FRAMEWORKS = ["ember", "torch"] if HAS_TORCH else ["ember"]


def _mod(fw):
    return ember if fw == "ember" else torch


def _raises(fn):
    try:
        fn()
    except BaseException as e:  # noqa: BLE001
        return type(e), str(e)
    return None, None


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_future_then_chain_value(fw):
    F = _mod(fw).futures.Future
    a = F()
    b = a.then(lambda f: f.value() * 2).then(lambda f: f.value() + 1)
    assert not b.done()
    a.set_result(3)
    assert b.done() and b.wait() == 7


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_future_callbacks_run_in_order_added(fw):
    F = _mod(fw).futures.Future
    a, order = F(), []
    a.add_done_callback(lambda f: order.append(1))
    a.then(lambda f: order.append(2))
    a.add_done_callback(lambda f: order.append(3))
    a.set_result(0)
    a.add_done_callback(lambda f: order.append(4))
    assert order == [1, 2, 3, 4]


@needs_torch
def test_future_completed_twice_raises_as_torch():
    for op in ("set_result", "set_exception"):
        results = []
        for F in (torch.futures.Future, Future):
            f = F()
            f.set_result(1)
            arg = 2 if op == "set_result" else ValueError("x")
            results.append(_raises(lambda: getattr(f, op)(arg)))
        assert results[0] == results[1]


@needs_torch
def test_future_set_exception_non_exception_raises_assertion_error():
    theirs = _raises(lambda: torch.futures.Future().set_exception("boom"))
    ours = _raises(lambda: Future().set_exception("boom"))
    assert ours[0] is theirs[0] is AssertionError
    assert ours[1] == theirs[1]


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_future_wait_reraises_stored_exception(fw):
    f = _mod(fw).futures.Future()
    f.set_exception(ValueError("bad"))
    assert f.done()
    assert _raises(f.wait) == (ValueError, "bad")
    assert _raises(f.value) == (ValueError, "bad")


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_future_then_callback_error_becomes_runtime_error(fw):
    a = _mod(fw).futures.Future()
    c = a.then(lambda f: {}["k"])
    a.set_result(1)
    kind, msg = _raises(c.wait)
    assert kind is RuntimeError
    assert msg.startswith("Got the following error when running the callback: KeyError: 'k'")


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_future_then_on_failed_parent_runs_callback(fw):
    a = _mod(fw).futures.Future()
    a.set_exception(ValueError("bad"))
    assert a.then(lambda f: 1).wait() == 1
    assert _raises(a.then(lambda f: f.value()).wait)[0] is RuntimeError


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_future_add_done_callback_error_is_swallowed(fw):
    a = _mod(fw).futures.Future()

    def bad(f):
        raise ValueError("callback fails")

    a.add_done_callback(bad)
    a.set_result(1)
    assert a.wait() == 1


def test_future_value_before_done_raises_runtime_error():
    with pytest.raises(RuntimeError, match="not complete"):
        Future().value()


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_future_wait_blocks_until_other_thread_sets(fw):
    f = _mod(fw).futures.Future()
    t = threading.Timer(0.05, lambda: f.set_result(7))
    t.start()
    assert f.wait() == 7
    t.join()


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_future_callback_runs_in_completing_thread(fw):
    f, ids = _mod(fw).futures.Future(), []
    f.add_done_callback(lambda _: ids.append(threading.get_ident()))
    t = threading.Thread(target=lambda: f.set_result(1))
    t.start()
    t.join()
    assert ids == [t.ident]


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_future_then_returning_future_is_not_unwrapped(fw):
    F = _mod(fw).futures.Future
    a, inner = F(), F()
    b = a.then(lambda f: inner)
    a.set_result(1)
    assert b.wait() is inner


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_future_non_callable_callback_raises_type_error(fw):
    f = _mod(fw).futures.Future()
    assert _raises(lambda: f.then(3))[0] is TypeError
    assert _raises(lambda: f.add_done_callback(3))[0] is TypeError


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_future_pickle_raises_runtime_error(fw):
    import pickle

    f = _mod(fw).futures.Future()
    assert _raises(lambda: pickle.dumps(f))[0] is RuntimeError


@needs_torch
def test_future_cpu_device_without_index_raises_as_torch():
    theirs = _raises(lambda: torch.futures.Future(devices=["cpu"]))
    ours = _raises(lambda: Future(devices=["cpu"]))
    assert ours == theirs


def test_future_is_generic():
    assert Future[int] is not None


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_collect_all_completes_after_all(fw):
    fm = _mod(fw).futures
    fs = [fm.Future(), fm.Future()]
    cf = fm.collect_all(fs)
    fs[1].set_result(2)
    assert not cf.done()
    fs[0].set_result(1)
    assert [f.wait() for f in cf.wait()] == [1, 2]


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_collect_all_failure_waits_for_all_and_keeps_list_order(fw):
    fm = _mod(fw).futures
    fs = [fm.Future(), fm.Future()]
    cf = fm.collect_all(fs)
    fs[1].set_exception(KeyError("second"))
    assert not cf.done()
    fs[0].set_exception(ValueError("first"))
    assert _raises(cf.wait) == (ValueError, "first")


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_collect_all_empty_list_completes(fw):
    fm = _mod(fw).futures
    assert fm.collect_all([]).wait() == [] and fm.wait_all([]) == []


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_collect_all_non_future_raises_type_error(fw):
    fm = _mod(fw).futures
    assert _raises(lambda: fm.collect_all([1]))[0] is TypeError
    assert _raises(lambda: fm.wait_all([1]))[0] is TypeError


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_wait_all_values_and_error(fw):
    m = _mod(fw)
    fs = [m.futures.Future(), m.futures.Future()]
    fs[0].set_result(1)
    fs[1].set_result(m.ones(2))
    values = m.futures.wait_all(fs)
    assert values[0] == 1 and values[1].tolist() == [1.0, 1.0]
    bad = m.futures.Future()
    bad.set_exception(TypeError("t"))
    assert _raises(lambda: m.futures.wait_all([fs[0], bad])) == (TypeError, "t")


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_fork_wait_top_level_and_jit(fw):
    m = _mod(fw)
    assert m.jit.fork(lambda a, b=1: a + b, 1, b=5).wait() == 6
    assert m.wait(m.fork(lambda: 4)) == 4
    assert isinstance(m.jit.fork(lambda: 0), m.Future)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_fork_error_propagates_eagerly(fw):
    with pytest.raises(ZeroDivisionError):
        _mod(fw).jit.fork(lambda: 1 / 0)


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_jit_wait_non_future_raises_type_error(fw):
    assert _raises(lambda: _mod(fw).jit.wait(3))[0] is TypeError


def test_futures_classes_are_one():
    assert ember.Future is ember.futures.Future is ember.jit.Future


def test_futures_docstring_examples_pass():
    import doctest

    import ember.futures as mod

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failed = []
    for t in doctest.DocTestFinder().find(mod):
        t.globs.setdefault("ember", ember)
        if t.examples and runner.run(t, out=lambda s: None).failed:
            failed.append(t.name)
    assert not failed


def test_collect_all_accepts_collective_futures():
    import ember.distributed as dist

    a, b = dist.Future(), Future()
    both = ember.futures.collect_all([a, b])
    a.set_result(1)
    b.set_result(2)
    assert ember.futures.wait_all([a, b]) == [1, 2] and both.done()
    assert ember.jit.wait(a) == 1
