"""Legacy tensor types (ember/_ops/_legacy_types.py): constructors, isinstance, Tensor.type."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")

NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
         "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]


def _dtype_name(d):
    return str(d).split(".")[-1]


@needs_torch
@pytest.mark.parametrize("name", NAMES)
def test_legacy_type_dtype_matches_torch(name):
    assert _dtype_name(getattr(ember, name).dtype) == _dtype_name(getattr(torch, name).dtype)


@needs_torch
@pytest.mark.parametrize("name", NAMES)
def test_legacy_type_by_sizes_matches_torch(name):
    e, t = getattr(ember, name)(2, 3), getattr(torch, name)(2, 3)
    assert tuple(e.shape) == tuple(t.shape)
    assert _dtype_name(e.dtype) == _dtype_name(t.dtype)
    assert type(e) is ember.Tensor


@needs_torch
@pytest.mark.parametrize("name", NAMES)
def test_legacy_type_by_data_matches_torch(name):
    data = [[1.7, 0.0], [-2.2, 3.0]] if name not in ("ByteTensor", "BoolTensor") else [[1, 0]]
    e, t = getattr(ember, name)(data), getattr(torch, name)(data)
    np.testing.assert_array_equal(e.float().numpy(), t.float().numpy())
    assert e.type() == t.type()


def test_legacy_type_empty_call_is_empty():
    x = ember.LongTensor()
    assert tuple(x.shape) == (0,) and x.dtype == ember.int64


def test_legacy_type_size_object_is_sizes():
    assert tuple(ember.FloatTensor(ember.Size([2, 4])).shape) == (2, 4)


def test_legacy_type_tuple_is_data():
    assert ember.FloatTensor((2, 3)).tolist() == [2.0, 3.0]


def test_legacy_type_numpy_array_is_converted():
    assert ember.LongTensor(np.array([1.5, 2.0])).tolist() == [1, 2]


def test_legacy_type_same_type_tensor_aliases():
    x = ember.zeros(2)
    y = ember.FloatTensor(x)
    y[0] = 5
    assert x.tolist() == [5.0, 0.0]


def test_legacy_type_other_dtype_tensor_raises():
    with pytest.raises(TypeError):
        ember.FloatTensor(ember.zeros(2, dtype=ember.float64))


def test_legacy_type_scalar_data_raises():
    with pytest.raises(TypeError, match="must be a sequence"):
        ember.FloatTensor(3.5)


def test_legacy_type_string_data_raises():
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        ember.LongTensor("ab")


def test_legacy_type_dtype_keyword_raises():
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        ember.FloatTensor(2, dtype=ember.float64)


def test_legacy_type_other_device_kind_raises():
    with pytest.raises(RuntimeError, match="expects device type: cpu"):
        ember.FloatTensor(2, device="meta")


def test_legacy_type_cpu_device_accepted():
    assert tuple(ember.FloatTensor(2, 3, device="cpu").shape) == (2, 3)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "uint8"])
@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "LongTensor", "BoolTensor"])
def test_isinstance_legacy_type_matches_torch(name, dtype):
    e = isinstance(ember.zeros(2, dtype=getattr(ember, dtype)), getattr(ember, name))
    t = isinstance(torch.zeros(2, dtype=getattr(torch, dtype)), getattr(torch, name))
    assert e == t


def test_isinstance_legacy_type_requires_grad_tensor():
    assert isinstance(ember.zeros(2, requires_grad=True), ember.FloatTensor)


def test_isinstance_legacy_type_parameter():
    assert isinstance(ember.nn.Parameter(ember.zeros(2)), ember.FloatTensor)


def test_isinstance_legacy_type_non_tensor_false():
    assert not isinstance(3.0, ember.FloatTensor)


def test_legacy_type_is_not_tensor_subclass():
    assert not issubclass(ember.FloatTensor, ember.Tensor)


def test_legacy_type_class_attributes():
    assert ember.FloatTensor.is_cuda is False and ember.cuda.FloatTensor.is_cuda is True
    assert ember.FloatTensor.layout is ember.strided
    assert ember.FloatTensor.add is ember.Tensor.add


def test_legacy_type_pickles_by_reference():
    assert pickle.loads(pickle.dumps(ember.DoubleTensor)) is ember.DoubleTensor


def test_cuda_legacy_type_cpu_tensor_not_instance():
    assert not isinstance(ember.zeros(2), ember.cuda.FloatTensor)


@pytest.mark.skipif(ember.cuda.is_available(), reason="needs a machine without a GPU")
def test_cuda_legacy_type_without_gpu_raises_type_error():
    with pytest.raises(TypeError, match="torch.cuda.FloatTensor not available"):
        ember.cuda.FloatTensor(2)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64",
                                   "int32", "int16", "int8", "uint8", "bool", "complex64"])
def test_type_name_matches_torch(dtype):
    e = ember.zeros(2, dtype=getattr(ember, dtype)).type()
    assert e == torch.zeros(2, dtype=getattr(torch, dtype)).type()


def test_type_legacy_class_converts():
    assert ember.zeros(2).type(ember.DoubleTensor).dtype == ember.float64


def test_type_legacy_name_converts():
    assert ember.zeros(2).type("torch.IntTensor").dtype == ember.int32


def test_type_dtype_keyword_converts():
    assert ember.zeros(2).type(dtype=ember.LongTensor).dtype == ember.int64


def test_type_same_type_returns_self():
    x = ember.zeros(2)
    assert x.type(ember.FloatTensor) is x and x.type("torch.FloatTensor") is x


def test_type_tensor_class_is_default_dtype():
    assert ember.zeros(2, dtype=ember.int64).type(ember.Tensor).dtype == ember.float32


def test_type_unknown_name_raises_value_error():
    with pytest.raises(ValueError, match="invalid type: 'foo'"):
        ember.zeros(2).type("foo")


def test_type_bad_argument_raises_type_error():
    with pytest.raises(TypeError, match="dtype must be a type, str, or dtype object"):
        ember.zeros(2).type(3)
