"""A retained gradient is kept as a contiguous copy whatever the layout of the gradient
that reached the tensor, as in PyTorch."""

import pytest

import ember

torch = pytest.importorskip("torch")


def _retained(fw):
    x = fw.ones(3, 4, requires_grad=True)
    y = x * 1
    y.retain_grad()
    (y.t() * fw.arange(12.0).reshape(4, 3)).sum().backward()  # a transposed gradient
    return y.grad


def test_retain_grad_of_a_transposed_gradient_is_contiguous():
    e, t = _retained(ember), _retained(torch)
    assert e.is_contiguous() and t.is_contiguous()
    assert e.stride() == t.stride()
    assert e.tolist() == t.tolist()
