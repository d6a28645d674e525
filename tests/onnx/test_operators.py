"""``ember.onnx.operators``: shapes as tensors, against PyTorch 2.13."""

import numpy as np
import pytest

import ember
from ember.onnx.operators import reshape_from_tensor_shape, shape_as_tensor


def test_shape_as_tensor_matches_torch():
    torch = pytest.importorskip("torch")
    import torch.onnx.operators as T

    for shape in ((2, 3), (), (0, 4, 1)):
        e, t = shape_as_tensor(ember.zeros(shape)), T.shape_as_tensor(torch.zeros(shape))
        assert str(e.dtype)[6:] == str(t.dtype)[6:]
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_reshape_from_tensor_shape_is_a_differentiable_view():
    x = ember.arange(6.0, requires_grad=True)
    y = reshape_from_tensor_shape(x, ember.tensor([-1, 3]))
    assert y.shape == (2, 3)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(6))


@pytest.mark.parametrize("shape", [[4, 2], [[3, 2]], [3.0, 2.0]])
def test_reshape_from_tensor_shape_bad_shape_raises_as_torch(shape):
    with pytest.raises(RuntimeError) as got:
        reshape_from_tensor_shape(ember.zeros(2, 3), ember.tensor(shape))
    torch = pytest.importorskip("torch")
    import torch.onnx.operators as T

    with pytest.raises(RuntimeError) as want:
        T.reshape_from_tensor_shape(torch.zeros(2, 3), torch.tensor(shape))
    assert str(want.value).startswith(str(got.value))
