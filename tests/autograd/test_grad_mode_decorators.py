"""Grad modes used as bare decorators (``@ember.no_grad``) and on generator functions."""

import warnings

import pytest

import ember


def test_no_grad_bare_decorator_disables_grad():
    @ember.no_grad
    def f(x):
        return x * 2

    assert not f(ember.ones(2, requires_grad=True)).requires_grad


def test_no_grad_bare_decorator_keeps_name():
    @ember.no_grad
    def my_function():
        return 1

    assert my_function.__name__ == "my_function"


def test_enable_grad_bare_decorator_inside_no_grad():
    @ember.enable_grad
    def f(x):
        return x * 2

    with ember.no_grad():
        assert f(ember.ones(2, requires_grad=True)).requires_grad


def test_inference_mode_bare_decorator():
    @ember.inference_mode
    def f():
        return ember.is_inference_mode_enabled()

    assert f() and not ember.is_inference_mode_enabled()


def test_no_grad_bare_decorator_on_generator():
    @ember.no_grad
    def gen():
        yield ember.is_grad_enabled()
        yield ember.is_grad_enabled()

    assert list(gen()) == [False, False]
    assert ember.is_grad_enabled()


def test_no_grad_generator_restores_mode_between_items():
    @ember.no_grad()
    def gen():
        yield 1
        yield 2

    seen = []
    for _ in gen():
        seen.append(ember.is_grad_enabled())
    assert seen == [True, True]


def test_inference_mode_bare_decorator_on_generator():
    @ember.inference_mode
    def gen():
        yield ember.is_inference_mode_enabled()

    assert list(gen()) == [True]


def test_set_grad_enabled_as_decorator():
    @ember.set_grad_enabled(False)
    def f(x):
        return x * 2

    assert ember.is_grad_enabled()  # making the decorator leaves the mode as it was
    assert not f(ember.ones(2, requires_grad=True)).requires_grad


def test_set_grad_enabled_as_function():
    ember.set_grad_enabled(False)
    try:
        assert not ember.is_grad_enabled()
    finally:
        ember.set_grad_enabled(True)
    assert ember.is_grad_enabled()


def test_set_grad_enabled_non_bool_raises_type_error():
    with pytest.raises(TypeError, match="argument 'enabled'"):
        ember.set_grad_enabled(1)


def test_no_grad_class_decoration_warns_and_wraps_construction():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")

        @ember.no_grad
        class A:
            def __init__(self):
                self.grad = ember.is_grad_enabled()

    assert any(issubclass(x.category, FutureWarning) for x in w)
    assert A().grad is False


def test_no_grad_generator_close_runs_body_in_mode():
    seen = []

    @ember.no_grad
    def gen():
        try:
            yield 1
        finally:
            seen.append(ember.is_grad_enabled())

    g = gen()
    next(g)
    g.close()
    assert seen == [False]


def test_no_grad_generator_throw_reaches_body():
    @ember.no_grad
    def gen():
        try:
            yield 1
        except ValueError:
            yield ember.is_grad_enabled()

    g = gen()
    next(g)
    assert g.throw(ValueError("x")) is False
