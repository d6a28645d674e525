"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode; thread-locality."""

import threading

import pytest

import ember


def test_no_grad_context_and_decorator():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        y = x * 2
    assert ember.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad

    @ember.no_grad()
    def f():
        return x * 2

    assert not f().requires_grad


def test_no_grad_on_generator():
    @ember.no_grad()
    def gen():
        yield ember.is_grad_enabled()
        yield ember.is_grad_enabled()

    assert list(gen()) == [False, False]
    assert ember.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        with ember.enable_grad():
            y = x * 2
    assert y.requires_grad


def test_set_grad_enabled_function_and_context():
    with ember.set_grad_enabled(False):
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()
    ember.set_grad_enabled(False)
    try:
        assert not ember.is_grad_enabled()
    finally:
        ember.set_grad_enabled(True)
    with pytest.raises(TypeError):
        ember.set_grad_enabled("yes")


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with ember.no_grad():
            raise ValueError
    assert ember.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = []

    def worker():
        seen.append(ember.is_grad_enabled())

    with ember.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen == [True]


def test_inplace_on_leaf_allowed_under_no_grad():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        x.mul_(2)
    assert x.tolist() == [2.0, 2.0] and x.requires_grad


def test_inference_mode_tensors():
    x = ember.ones(2, requires_grad=True)
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not ember.is_grad_enabled()
        t = ember.ones(2)
        u = t * 2
        y = x * 2
        assert t.is_inference() and u.is_inference()
        assert not y.requires_grad
        t.add_(1)  # allowed inside
    assert not ember.is_inference_mode_enabled()
    assert not ember.ones(1).is_inference()
    assert not (x * 2).is_inference()


def test_inference_tensor_restrictions():
    with ember.inference_mode():
        t = ember.ones(2)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside "
                                           "InferenceMode is not allowed"):
        t.add_(1)
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor"):
        t.requires_grad_()
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        x * t
    assert (x + t).requires_grad  # add saves nothing: allowed, as in torch


def test_inference_mode_false_and_decorator():
    with ember.inference_mode(False):
        assert not ember.is_inference_mode_enabled()

    @ember.inference_mode()
    def f():
        return ember.is_inference_mode_enabled()

    @ember.inference_mode
    def g():
        return ember.ones(1).is_inference()

    assert f() and g()


def test_inference_mode_thread_local_marking():
    res = []
    ev, ev2 = threading.Event(), threading.Event()

    def worker():
        ev.wait()
        res.append(ember.ones(1).is_inference())
        ev2.set()

    th = threading.Thread(target=worker)
    th.start()
    with ember.inference_mode():
        ev.set()
        ev2.wait()
    th.join()
    assert res == [False]


def test_set_multithreading_enabled_context_restores():
    assert ember.autograd.is_multithreading_enabled()
    with ember.autograd.set_multithreading_enabled(False):
        assert not ember.autograd.is_multithreading_enabled()
    assert ember.autograd.is_multithreading_enabled()


def test_enforce_grad_layout_policy_backward_unchanged():
    p = ember.ones(2, 3, requires_grad=True)
    with ember.autograd.enforce_grad_layout_policy(False):
        (p * 2).sum().backward()
    assert p.grad.tolist() == [[2.0] * 3] * 2


def test_autograd_reexports_overrides_helpers():
    assert ember.autograd.is_tensor_like(ember.ones(1))
    assert not ember.autograd.has_torch_function((ember.ones(1),))
    assert ember.autograd.variable(ember.ones(1), requires_grad=True).requires_grad
    assert not ember.autograd.is_view_replay_enabled()
