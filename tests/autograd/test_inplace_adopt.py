"""NOTE [ Adopting an in-place result ]: a recorded in-place op takes its result's array when
nothing else can see the old one, and writes into it when something can."""

import numpy as np

import ember


def test_recorded_inplace_relu_adopts_the_result_and_keeps_gradients():
    x = ember.randn(4, 5, requires_grad=True)
    y = x * 2
    old = id(y._data)  # (holding the array itself would make it visible: no adoption)
    v0 = y._version
    ember.relu_(y)
    assert id(y._data) != old and y._version > v0
    np.testing.assert_array_equal(y.detach().numpy(), np.maximum(x.detach().numpy() * 2, 0))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * (x.detach().numpy() > 0))


def test_a_view_of_the_tensor_sees_the_inplace_result():
    x = ember.randn(4, 5, requires_grad=True)
    y = x * 1
    row = y[1]  # a view: y's array must be written, not replaced
    old = y._data
    ember.relu_(y)
    assert y._data is old
    np.testing.assert_array_equal(row.detach().numpy(), np.maximum(x.detach().numpy()[1], 0))


def test_an_inplace_op_on_a_view_writes_through_to_its_base():
    x = ember.randn(4, 5, requires_grad=True)
    y = x * 1
    ember.relu_(y[2])
    np.testing.assert_array_equal(y.detach().numpy()[2], np.maximum(x.detach().numpy()[2], 0))
    np.testing.assert_array_equal(y.detach().numpy()[0], x.detach().numpy()[0])
