"""The per-node shortcuts of backward are taken where they apply (their results are checked
against PyTorch and the general paths in tests/autograd/test_hot_paths.py)."""

import numpy as np
import pytest

import ember
from ember._ops import _elementwise, linalg


def _data_ptr(t):
    return t._data.__array_interface__["data"][0]


def test_input_buffer_adds_second_gradient_in_place():
    # NOTE [ Input buffers ]: the sum lands in the first gradient's memory
    import weakref

    x = ember.ones(64, requires_grad=True)
    y = x * 2
    a = y * 3  # recorded first: runs second
    b = y * 4
    first = {}

    def post(gi, go):  # no strong reference: the engine stays the only owner
        first["ref"] = weakref.ref(gi[0])
        first["ptr"] = _data_ptr(gi[0])

    b.grad_fn.register_hook(post)
    summed = {}

    def hook(g):  # (returns None: the gradient stays)
        summed["ptr"] = _data_ptr(g)

    y.register_hook(hook)
    (a.sum() + b.sum()).backward()
    assert summed["ptr"] == first["ptr"]
    assert x.grad.tolist() == [14.0] * 64


def test_input_buffer_out_of_place_under_create_graph():
    x = ember.ones(8, requires_grad=True)
    y = x * 2
    a = y * 3
    b = y * 4
    first, summed = {}, {}

    def post(gi, go):
        first["ptr"] = _data_ptr(gi[0])

    def hook(g):
        summed["ptr"] = _data_ptr(g)

    b.grad_fn.register_hook(post)
    y.register_hook(hook)
    (g,) = ember.autograd.grad(a.sum() + b.sum(), x, create_graph=True)
    assert summed["ptr"] != first["ptr"]
    assert g.tolist() == [14.0] * 8


def test_matmul_backward_skips_the_formula_when_nothing_records(monkeypatch):
    from ember import _dispatch

    # a __torch_function__ subclass defined by an earlier test turns the slow flag on for
    # the whole process (the shortcut then stands aside); these plain tensors need neither
    monkeypatch.setattr(_dispatch, "slow", [_dispatch.intercept])
    a = ember.ones(4, 3, requires_grad=True)
    b = ember.ones(3, 5, requires_grad=True)
    y = (a @ b).sum()

    def refuse(x):
        raise AssertionError("the formula's transposes ran")

    monkeypatch.setattr(linalg, "_ht", refuse)
    y.backward()
    assert a.grad.tolist() == [[5.0] * 3] * 4
    with pytest.raises(AssertionError, match="formula"):
        ember.autograd.grad((a @ b).sum(), a, create_graph=True)


def test_zero_dim_operand_skips_promotion(monkeypatch):
    x = ember.from_numpy(np.arange(5, dtype=np.float32))
    c = ember.tensor(2.0, dtype=ember.float64)

    def refuse(op, args):
        raise AssertionError("promotion ran")

    monkeypatch.setattr(_elementwise, "promote", refuse)
    r = x * c
    assert r.dtype == ember.float32 and r.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    r = c - x
    assert r.dtype == ember.float32 and r.tolist() == [2.0, 1.0, 0.0, -1.0, -2.0]
